// CPU feature detection: the ISA cap (PAGODA_MAX_ISA) and the consistency of what this
// machine reports. (The SIGILL probes run inside detect_cpu_features on every start.)

#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <string>

namespace pagoda {
namespace {

CpuFeatures everything() {
  CpuFeatures f;
  f.sse3 = f.ssse3 = f.avx = f.avx2 = f.fma = f.f16c = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  f.avx512_vnni = f.avx_vnni = f.avx512_bf16 = true;
  f.amx_tile = f.amx_int8 = f.amx_bf16 = true;
  f.vendor = "GenuineIntel";
  f.brand = "Test CPU";
  return f;
}

TEST(CpuFeatures, IsaNamesRoundTripCaseInsensitively) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAmx}) {
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  }
  EXPECT_EQ(parse_isa("AVX2"), Isa::kAvx2);
  EXPECT_EQ(parse_isa("Avx512VNNI"), Isa::kAvx512Vnni);
  EXPECT_EQ(parse_isa("avx"), std::nullopt);
  EXPECT_EQ(parse_isa(""), std::nullopt);
  EXPECT_EQ(parse_isa("avx2 "), std::nullopt);
  EXPECT_EQ(parse_isa("native"), std::nullopt);  // no cap, not an instruction set
}

TEST(CpuFeatures, CapAtScalarClearsEverySimdFlag) {
  const CpuFeatures f = cap_cpu_features(everything(), Isa::kScalar);
  EXPECT_FALSE(f.sse3 || f.ssse3 || f.avx || f.avx2 || f.fma || f.f16c);
  EXPECT_FALSE(f.avx512f || f.avx512bw || f.avx512vl || f.avx512dq);
  EXPECT_FALSE(f.avx512_vnni || f.avx_vnni || f.avx512_bf16);
  EXPECT_FALSE(f.amx_tile || f.amx_int8 || f.amx_bf16);
  EXPECT_FALSE(f.has_avx2_group());
  EXPECT_EQ(f.brand, "Test CPU");
  EXPECT_NE(f.notes.find("capped at scalar"), std::string::npos) << f.notes;
}

TEST(CpuFeatures, CapAtAvx2KeepsTheAvx2Group) {
  const CpuFeatures f = cap_cpu_features(everything(), Isa::kAvx2);
  EXPECT_TRUE(f.has_avx2_group());
  EXPECT_TRUE(f.sse3 && f.ssse3);
  EXPECT_FALSE(f.avx512f || f.avx512bw || f.avx512vl || f.avx512dq);
  EXPECT_FALSE(f.has_avx512_group());
  EXPECT_FALSE(f.avx512_vnni || f.avx_vnni || f.avx512_bf16 || f.amx_tile);
}

TEST(CpuFeatures, CapAtAvx512KeepsAvx512ButNotVnni) {
  const CpuFeatures f = cap_cpu_features(everything(), Isa::kAvx512);
  EXPECT_TRUE(f.has_avx512_group());
  EXPECT_FALSE(f.avx512_vnni || f.avx_vnni || f.avx512_bf16 || f.amx_tile || f.amx_int8);
}

TEST(CpuFeatures, CapAtAvx512VnniKeepsVnniButNotAmx) {
  const CpuFeatures f = cap_cpu_features(everything(), Isa::kAvx512Vnni);
  EXPECT_TRUE(f.has_avx512_group());
  EXPECT_TRUE(f.avx512_vnni && f.avx_vnni);
  EXPECT_FALSE(f.avx512_bf16 || f.amx_tile || f.amx_int8 || f.amx_bf16);
}

TEST(CpuFeatures, CapAtAmxKeepsTheTiles) {
  const CpuFeatures f = cap_cpu_features(everything(), Isa::kAmx);
  EXPECT_TRUE(f.avx512_vnni && f.amx_tile && f.amx_int8 && f.amx_bf16 && f.avx512_bf16);
  EXPECT_NE(f.notes.find("capped at amx"), std::string::npos) << f.notes;
}

TEST(CpuFeatures, NativeCapChangesNothing) {
  const CpuFeatures f = cap_cpu_features(everything(), std::nullopt);
  EXPECT_TRUE(f.amx_tile && f.amx_int8 && f.amx_bf16 && f.avx512_bf16);
  EXPECT_TRUE(f.notes.empty()) << f.notes;
}

TEST(CpuFeatures, CapNeverAddsWhatTheCpuLacks) {
  CpuFeatures none;
  const CpuFeatures f = cap_cpu_features(none, Isa::kAvx512Vnni);
  EXPECT_FALSE(f.avx2 || f.avx512f || f.avx512_vnni);
}

TEST(CpuFeatures, DescriptionListsFlagsAndNotes) {
  const std::string line = cap_cpu_features(everything(), Isa::kAvx2).description();
  EXPECT_EQ(line.rfind("Test CPU (GenuineIntel): sse3 ssse3 avx avx2 fma f16c", 0), 0u) << line;
  EXPECT_EQ(line.find("avx512"), std::string::npos) << line;
  EXPECT_NE(line.find("[capped at avx2]"), std::string::npos) << line;
  EXPECT_NE(CpuFeatures{}.description().find("no SIMD extensions"), std::string::npos);
}

TEST(CpuFeatures, DetectedFlagsAreConsistent) {
  const CpuFeatures f = detect_cpu_features();
  EXPECT_TRUE(f.avx || !(f.avx2 || f.fma || f.f16c));
  EXPECT_TRUE(f.avx512f || !(f.avx512bw || f.avx512vl || f.avx512dq || f.avx512_vnni || f.avx512_bf16));
  EXPECT_TRUE(f.amx_tile || !(f.amx_int8 || f.amx_bf16));
#if defined(__x86_64__)
  EXPECT_FALSE(f.vendor.empty());
#endif
}

TEST(CpuFeatures, ProcessWideFeaturesAreComputedOnce) {
  const CpuFeatures& first = cpu_features();
  EXPECT_EQ(&first, &cpu_features());
  EXPECT_FALSE(first.description().empty());
}

}  // namespace
}  // namespace pagoda
