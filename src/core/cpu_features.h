#pragma once
// What the CPU this process runs on can execute, found once at run time. Code compiled
// for an instruction set beyond the baseline (the *_avx2.cpp, *_avx512.cpp and
// *_avx512vnni.cpp and *_amx.cpp files) may run only when these flags say so.
//
// A flag is true only when the CPU advertises the extension (CPUID), the OS saves its
// register state (XGETBV), and, for everything newer than AVX-512 F/BW/VL/DQ, one of its
// instructions has actually been executed without a fault: some virtual machines
// advertise AMX or VNNI that then raise SIGILL.
//
// PAGODA_MAX_ISA caps what is reported, so tests and benchmarks can force lower code
// paths: scalar | avx2 | avx512 | avx512vnni | amx | native (no cap, the default).

#include <optional>
#include <string>
#include <string_view>

namespace pagoda {

// The rungs of the instruction-set ladder the kernels are written for, lowest first.
// kAmx is AVX-512 VNNI with the AMX tile unit (amx_tile and amx_int8) beside it.
enum class Isa { kScalar, kAvx2, kAvx512, kAvx512Vnni, kAmx };

std::string_view isa_name(Isa isa);                   // "scalar", "avx2", "avx512", "avx512vnni", "amx"
std::optional<Isa> parse_isa(std::string_view name);  // case-insensitive

struct CpuFeatures {
  bool sse3 = false, ssse3 = false;
  bool avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_vnni = false;  // 512-bit vpdpbusd (EVEX)
  bool avx_vnni = false;     // 256-bit vpdpbusd (VEX), Alder Lake and later
  bool avx512_bf16 = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;

  std::string vendor;  // "GenuineIntel", "AuthenticAMD"; empty off x86
  std::string brand;   // "AMD EPYC 7B13 64-Core Processor"
  std::string notes;   // why an advertised extension was refused, and the cap in force

  // The groups the kernels are built for (see cmake/PagodaLibrary.cmake for the flags).
  bool has_avx2_group() const { return avx && avx2 && fma && f16c; }
  bool has_avx512_group() const {
    return has_avx2_group() && avx512f && avx512bw && avx512vl && avx512dq;
  }

  // One line for logs: "AMD EPYC 7B13 (AuthenticAMD): sse3 ssse3 avx avx2 fma f16c".
  std::string description() const;
};

// Features of this CPU, capped by PAGODA_MAX_ISA; computed on first call (thread-safe).
const CpuFeatures& cpu_features();

// The uncapped detection and the cap, apart, so each can be tested. No max_isa (what
// PAGODA_MAX_ISA=native asks for) leaves the features as they are.
CpuFeatures detect_cpu_features();
CpuFeatures cap_cpu_features(CpuFeatures features, std::optional<Isa> max_isa);

}  // namespace pagoda
