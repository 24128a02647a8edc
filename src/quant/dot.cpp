// Run-time dispatch of the dot kernels: one table row per weight type, one kernel per
// ISA (nullptr where that ISA has none of its own, so the best lower one stands in).
// Only ISAs that cpu_features() vouches for are ever handed out.

#include "quant/dot.h"

#include <array>
#include <cstddef>

#include "core/cpu_features.h"
#include "quant/dot_kernels.h"
#include "quant/quantize.h"

namespace pagoda::quant {
namespace {

constexpr size_t kIsaCount = 5;

struct KernelRow {
  DType weight;
  DType activation;
  QuantizeActivationsFn quantize;
  std::array<VecDotFn, kIsaCount> by_isa;  // indexed by Isa; [0] (scalar) always set
  QuantizeActivationsFn quantize_avx2 = nullptr;  // the same bytes, for AVX2 and above
};

// clang-format off
constexpr KernelRow kRows[] = {
    {DType::F32, DType::F32, scalar::convert_row_f32,
     {scalar::dot_f32, avx2::dot_f32, nullptr, nullptr}},
    {DType::F16, DType::F16, scalar::convert_row_f16,
     {scalar::dot_f16, avx2::dot_f16, nullptr, nullptr}},
    {DType::BF16, DType::BF16, scalar::convert_row_bf16,
     {scalar::dot_bf16, avx2::dot_bf16, nullptr, nullptr}},
    {DType::Q4_0, DType::Q8_0, quantize_activations_q8_0,
     {scalar::dot_q4_0, avx2::dot_q4_0, avx512::dot_q4_0, avx512vnni::dot_q4_0}, avx2::quantize_activations_q8_0},
    {DType::Q4_1, DType::Q8_1, quantize_activations_q8_1,
     {scalar::dot_q4_1, avx2::dot_q4_1, nullptr, nullptr}, avx2::quantize_activations_q8_1},
    {DType::Q5_0, DType::Q8_0, quantize_activations_q8_0,
     {scalar::dot_q5_0, avx2::dot_q5_0, nullptr, nullptr}, avx2::quantize_activations_q8_0},
    {DType::Q5_1, DType::Q8_1, quantize_activations_q8_1,
     {scalar::dot_q5_1, avx2::dot_q5_1, nullptr, nullptr}, avx2::quantize_activations_q8_1},
    {DType::Q8_0, DType::Q8_0, quantize_activations_q8_0,
     {scalar::dot_q8_0, avx2::dot_q8_0, avx512::dot_q8_0, avx512vnni::dot_q8_0}, avx2::quantize_activations_q8_0},
    {DType::IQ4_NL, DType::Q8_0, quantize_activations_q8_0,
     {scalar::dot_iq4_nl, avx2::dot_iq4_nl, avx512::dot_iq4_nl, avx512vnni::dot_iq4_nl}, avx2::quantize_activations_q8_0},
    {DType::Q2_K, DType::Q8_K, quantize_row_q8_K,
     {scalar::dot_q2_K, avx2::dot_q2_K, nullptr, nullptr}, avx2::quantize_row_q8_K},
    {DType::Q3_K, DType::Q8_K, quantize_row_q8_K,
     {scalar::dot_q3_K, avx2::dot_q3_K, nullptr, nullptr}, avx2::quantize_row_q8_K},
    {DType::Q4_K, DType::Q8_K, quantize_row_q8_K,
     {scalar::dot_q4_K, avx2::dot_q4_K, avx512::dot_q4_K, nullptr}, avx2::quantize_row_q8_K},
    {DType::Q5_K, DType::Q8_K, quantize_row_q8_K,
     {scalar::dot_q5_K, avx2::dot_q5_K, avx512::dot_q5_K, nullptr}, avx2::quantize_row_q8_K},
    {DType::Q6_K, DType::Q8_K, quantize_row_q8_K,
     {scalar::dot_q6_K, avx2::dot_q6_K, avx512::dot_q6_K, nullptr}, avx2::quantize_row_q8_K},
    {DType::IQ4_XS, DType::Q8_K, quantize_row_q8_K,
     {scalar::dot_iq4_xs, avx2::dot_iq4_xs, avx512::dot_iq4_xs, nullptr}, avx2::quantize_row_q8_K},
};
// clang-format on
constexpr size_t kRowCount = sizeof(kRows) / sizeof(kRows[0]);

// The quantize_described of an activation format on an ISA: AVX-512's own where the
// ISA has it, else the ISA's quantizer and a scalar read-back.
QuantizeDescribedFn quantize_described_for(DType activation, Isa isa) {
  const bool avx512_form = isa >= Isa::kAvx512, avx2_quantizer = isa >= Isa::kAvx2;
  switch (activation) {
    case DType::Q8_0:
      return avx512_form ? avx512::quantize_described_q8_0
                         : (avx2_quantizer ? avx2::quantize_described_q8_0 : scalar::quantize_described_q8_0);
    case DType::Q8_1:
      return avx512_form ? avx512::quantize_described_q8_1
                         : (avx2_quantizer ? avx2::quantize_described_q8_1 : scalar::quantize_described_q8_1);
    default:
      return nullptr;
  }
}

// Every (type, ISA) pair resolved once: the ISA's own kernel or the best lower one's.
struct KernelTable {
  std::array<std::array<DotKernel, kIsaCount>, kRowCount> kernels;

  KernelTable() {
    for (size_t r = 0; r < kRowCount; ++r) {
      const KernelRow& row = kRows[r];
      size_t own = 0;
      for (size_t isa = 0; isa < kIsaCount; ++isa) {
        if (row.by_isa[isa] != nullptr) own = isa;
        const bool avx2_quantize = isa >= static_cast<size_t>(Isa::kAvx2) && row.quantize_avx2 != nullptr;
        kernels[r][isa] = DotKernel{row.weight, row.activation, avx2_quantize ? row.quantize_avx2 : row.quantize,
                                    row.by_isa[own], static_cast<Isa>(own),
                                    quantize_described_for(row.activation, static_cast<Isa>(isa))};
      }
    }
  }
};

const KernelTable& kernel_table() {
  static const KernelTable table;
  return table;
}

std::vector<Isa> detect_isas() {
  const CpuFeatures& cpu = cpu_features();
  std::vector<Isa> isas = {Isa::kScalar};
  if (!cpu.has_avx2_group()) return isas;
  isas.push_back(Isa::kAvx2);
  if (!cpu.has_avx512_group()) return isas;
  isas.push_back(Isa::kAvx512);
  if (!cpu.avx512_vnni) return isas;
  isas.push_back(Isa::kAvx512Vnni);
  if (cpu.amx_tile && cpu.amx_int8) isas.push_back(Isa::kAmx);
  return isas;
}

}  // namespace

const std::vector<Isa>& available_isas() {
  static const std::vector<Isa> isas = detect_isas();
  return isas;
}

Isa best_isa() { return available_isas().back(); }

bool isa_available(Isa isa) {
  for (Isa available : available_isas()) {
    if (available == isa) return true;
  }
  return false;
}

const DotKernel* find_dot_kernel(DType weight, Isa isa) {
  if (!isa_available(isa)) return nullptr;
  const KernelTable& table = kernel_table();
  for (size_t r = 0; r < kRowCount; ++r) {
    if (kRows[r].weight == weight) return &table.kernels[r][static_cast<size_t>(isa)];
  }
  return nullptr;
}

const DotKernel* dot_kernel(DType weight) { return find_dot_kernel(weight, best_isa()); }

}  // namespace pagoda::quant
