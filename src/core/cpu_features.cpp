#include "core/cpu_features.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/ascii.h"

#if defined(__x86_64__) || defined(__i386__)
#define PAGODA_X86 1
#include <cpuid.h>
#include <csetjmp>
#include <csignal>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

namespace pagoda {
namespace {

void append_note(std::string& notes, std::string_view note) {
  if (!notes.empty()) notes += "; ";
  notes += note;
}

#if PAGODA_X86

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) {
  CpuidRegs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool bit(uint32_t reg, int index) { return (reg >> index) & 1u; }

// XCR0: which register files the OS saves on a context switch. Read only when CPUID
// says OSXSAVE, else xgetbv itself faults.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  asm volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// XCR0 bits: SSE (1) and YMM upper halves (2); opmask (5), ZMM upper halves (6) and
// ZMM16-31 (7); AMX tile configuration (17) and tile data (18).
constexpr uint64_t kXcr0Ymm = (1u << 1) | (1u << 2);
constexpr uint64_t kXcr0Zmm = kXcr0Ymm | (1u << 5) | (1u << 6) | (1u << 7);
constexpr uint64_t kXcr0Amx = (1u << 17) | (1u << 18);

// ---- Probes: run one instruction of an extension under a SIGILL handler. ----------

sigjmp_buf g_probe_jump;  // used only inside detect_cpu_features, under a static's once-lock

void on_probe_sigill(int) { siglongjmp(g_probe_jump, 1); }

bool runs_without_fault(void (*probe)()) {
  struct sigaction action {}, previous{};
  action.sa_handler = on_probe_sigill;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGILL, &action, &previous) != 0) return false;
  volatile bool ran = false;
  if (sigsetjmp(g_probe_jump, 1) == 0) {
    probe();
    ran = true;
  }
  sigaction(SIGILL, &previous, nullptr);
  return ran;
}

__attribute__((target("avx512f,avx512bw"))) void probe_avx512() {
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
      "vpaddb %%zmm0, %%zmm0, %%zmm0\n\t"
      "vzeroupper" ::: "xmm0");
}

__attribute__((target("avx512f,avx512vnni"))) void probe_avx512_vnni() {
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
      "vpdpbusd %%zmm0, %%zmm0, %%zmm0\n\t"
      "vzeroupper" ::: "xmm0");
}

__attribute__((target("avxvnni"))) void probe_avx_vnni() {
  asm volatile(
      "vpxor %%ymm0, %%ymm0, %%ymm0\n\t"
      "%{vex%} vpdpbusd %%ymm0, %%ymm0, %%ymm0\n\t"
      "vzeroupper" ::: "xmm0");
}

__attribute__((target("avx512f,avx512bf16"))) void probe_avx512_bf16() {
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
      "vdpbf16ps %%zmm0, %%zmm0, %%zmm0\n\t"
      "vzeroupper" ::: "xmm0");
}

// The 64-byte operand of ldtilecfg: palette 1, tiles 0..2 of one row of 4 bytes, the
// smallest shapes with which tmm0 += tmm1 * tmm2 is legal.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {4, 4, 4};
  uint8_t rows[16] = {1, 1, 1};
};
static_assert(sizeof(TileConfig) == 64);

__attribute__((target("amx-tile"))) void probe_amx_tile() {
  static const TileConfig config;
  asm volatile(
      "ldtilecfg %0\n\t"
      "tilezero %%tmm0\n\t"
      "tilerelease" ::"m"(config));
}

__attribute__((target("amx-tile,amx-int8"))) void probe_amx_int8() {
  static const TileConfig config;
  asm volatile(
      "ldtilecfg %0\n\t"
      "tilezero %%tmm0\n\t"
      "tilezero %%tmm1\n\t"
      "tilezero %%tmm2\n\t"
      "tdpbssd %%tmm2, %%tmm1, %%tmm0\n\t"
      "tilerelease" ::"m"(config));
}

__attribute__((target("amx-tile,amx-bf16"))) void probe_amx_bf16() {
  static const TileConfig config;
  asm volatile(
      "ldtilecfg %0\n\t"
      "tilezero %%tmm0\n\t"
      "tilezero %%tmm1\n\t"
      "tilezero %%tmm2\n\t"
      "tdpbf16ps %%tmm2, %%tmm1, %%tmm0\n\t"
      "tilerelease" ::"m"(config));
}

// Linux hands out AMX tile data state only to processes that ask for it first.
bool request_amx_permission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// Keeps `flag` only if its probe runs; says so in `notes` when it does not.
void confirm(bool& flag, const char* name, void (*probe)(), std::string& notes) {
  if (!flag || runs_without_fault(probe)) return;
  flag = false;
  append_note(notes, std::string(name) + " advertised but faults: disabled");
}

std::string brand_string() {
  if (cpuid(0x80000000u, 0).eax < 0x80000004u) return {};
  char text[49] = {};
  for (uint32_t i = 0; i < 3; ++i) {
    const CpuidRegs r = cpuid(0x80000002u + i, 0);
    std::memcpy(text + 16 * i + 0, &r.eax, 4);
    std::memcpy(text + 16 * i + 4, &r.ebx, 4);
    std::memcpy(text + 16 * i + 8, &r.ecx, 4);
    std::memcpy(text + 16 * i + 12, &r.edx, 4);
  }
  std::string brand(text);
  const size_t first = brand.find_first_not_of(' ');
  const size_t last = brand.find_last_not_of(' ');
  return first == std::string::npos ? std::string() : brand.substr(first, last - first + 1);
}

// Fills the flags CPUID and XCR0 vouch for; the newer extensions are probed after.
void read_advertised(CpuFeatures& f) {
  const CpuidRegs leaf0 = cpuid(0, 0);
  char vendor[13] = {};
  std::memcpy(vendor + 0, &leaf0.ebx, 4);
  std::memcpy(vendor + 4, &leaf0.edx, 4);
  std::memcpy(vendor + 8, &leaf0.ecx, 4);
  f.vendor = vendor;
  f.brand = brand_string();
  if (leaf0.eax < 1) return;

  const CpuidRegs leaf1 = cpuid(1, 0);
  f.sse3 = bit(leaf1.ecx, 0);
  f.ssse3 = bit(leaf1.ecx, 9);
  const bool osxsave = bit(leaf1.ecx, 27);
  const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  const bool os_ymm = (xcr0 & kXcr0Ymm) == kXcr0Ymm;
  const bool os_zmm = (xcr0 & kXcr0Zmm) == kXcr0Zmm;
  const bool os_amx = (xcr0 & kXcr0Amx) == kXcr0Amx;

  f.avx = os_ymm && bit(leaf1.ecx, 28);
  f.fma = f.avx && bit(leaf1.ecx, 12);
  f.f16c = f.avx && bit(leaf1.ecx, 29);
  if (leaf0.eax < 7) return;

  const CpuidRegs leaf7 = cpuid(7, 0);
  f.avx2 = f.avx && bit(leaf7.ebx, 5);
  f.avx512f = os_zmm && bit(leaf7.ebx, 16);
  f.avx512dq = f.avx512f && bit(leaf7.ebx, 17);
  f.avx512bw = f.avx512f && bit(leaf7.ebx, 30);
  f.avx512vl = f.avx512f && bit(leaf7.ebx, 31);
  f.avx512_vnni = f.avx512f && bit(leaf7.ecx, 11);
  f.amx_bf16 = os_amx && bit(leaf7.edx, 22);
  f.amx_tile = os_amx && bit(leaf7.edx, 24);
  f.amx_int8 = os_amx && bit(leaf7.edx, 25);
  if (leaf7.eax >= 1) {
    const CpuidRegs leaf7_1 = cpuid(7, 1);
    f.avx_vnni = f.avx && bit(leaf7_1.eax, 4);
    f.avx512_bf16 = f.avx512f && bit(leaf7_1.eax, 5);
  }
}

void probe_advertised(CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && !runs_without_fault(probe_avx512)) {
    f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = false;
    f.avx512_vnni = f.avx512_bf16 = false;
    append_note(f.notes, "avx512 advertised but faults: disabled");
  }
  confirm(f.avx512_vnni, "avx512_vnni", probe_avx512_vnni, f.notes);
  confirm(f.avx_vnni, "avx_vnni", probe_avx_vnni, f.notes);
  confirm(f.avx512_bf16, "avx512_bf16", probe_avx512_bf16, f.notes);
  if (f.amx_tile && !request_amx_permission()) {
    f.amx_tile = f.amx_int8 = f.amx_bf16 = false;
    append_note(f.notes, "amx advertised but the OS refused tile data permission: disabled");
  }
  confirm(f.amx_tile, "amx_tile", probe_amx_tile, f.notes);
  if (!f.amx_tile) f.amx_int8 = f.amx_bf16 = false;
  confirm(f.amx_int8, "amx_int8", probe_amx_int8, f.notes);
  confirm(f.amx_bf16, "amx_bf16", probe_amx_bf16, f.notes);
}

#endif  // PAGODA_X86

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Vnni: return "avx512vnni";
    case Isa::kAmx: return "amx";
  }
  return "unknown";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAmx}) {
    if (ascii_iequals(isa_name(isa), name)) return isa;
  }
  return std::nullopt;
}

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#if PAGODA_X86
  read_advertised(f);
  probe_advertised(f);
#endif
  return f;
}

CpuFeatures cap_cpu_features(CpuFeatures f, std::optional<Isa> max_isa) {
  if (!max_isa) return f;
  const Isa max_level = *max_isa;
  if (max_level < Isa::kAmx) {
    f.amx_tile = f.amx_int8 = f.amx_bf16 = false;
    f.avx512_bf16 = false;
  }
  if (max_level < Isa::kAvx512Vnni) f.avx512_vnni = f.avx_vnni = false;
  if (max_level < Isa::kAvx512) f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = false;
  if (max_level < Isa::kAvx2) {
    f.sse3 = f.ssse3 = false;
    f.avx = f.avx2 = f.fma = f.f16c = false;
  }
  append_note(f.notes, "capped at " + std::string(isa_name(max_level)));
  return f;
}

std::string CpuFeatures::description() const {
  std::string line = brand.empty() ? std::string("unknown CPU") : brand;
  if (!vendor.empty()) line += " (" + vendor + ")";
  line += ":";
  const std::pair<bool, const char*> flags[] = {
      {sse3, "sse3"},         {ssse3, "ssse3"},           {avx, "avx"},
      {avx2, "avx2"},         {fma, "fma"},               {f16c, "f16c"},
      {avx512f, "avx512f"},   {avx512bw, "avx512bw"},     {avx512vl, "avx512vl"},
      {avx512dq, "avx512dq"}, {avx512_vnni, "avx512_vnni"}, {avx_vnni, "avx_vnni"},
      {avx512_bf16, "avx512_bf16"}, {amx_tile, "amx_tile"}, {amx_int8, "amx_int8"},
      {amx_bf16, "amx_bf16"},
  };
  bool any = false;
  for (const auto& [present, name] : flags) {
    if (!present) continue;
    line += ' ';
    line += name;
    any = true;
  }
  if (!any) line += " no SIMD extensions";
  if (!notes.empty()) line += " [" + notes + "]";
  return line;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f = detect_cpu_features();
    const char* cap = std::getenv("PAGODA_MAX_ISA");
    if (cap == nullptr || *cap == '\0') return f;
    const std::optional<Isa> max_isa = parse_isa(cap);
    if (max_isa || ascii_iequals(cap, "native")) {
      f = cap_cpu_features(std::move(f), max_isa);
      f.notes += " by PAGODA_MAX_ISA";
    } else {
      append_note(f.notes, "PAGODA_MAX_ISA='" + std::string(cap) +
                               "' is not one of scalar|avx2|avx512|avx512vnni|native: ignored");
    }
    return f;
  }();
  return features;
}

}  // namespace pagoda
