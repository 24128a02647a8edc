// The QuantizeDescribedFn (quant/dot.h) of the ISAs without a form of their own: the
// ISA's Q8_0 / Q8_1 activation quantizer, then one scalar pass over the blocks it wrote.
// Reading the scales and sums back from the blocks gives them by definition, whatever
// path (SIMD or scalar, finite or not) each block took.

#include <cstdint>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dot.h"
#include "quant/dot_kernels.h"
#include "quant/quantize.h"

namespace pagoda::quant {
namespace {

template <typename Block>
int32_t sum_quants(const Block& block) {
  int32_t sum = 0;
  for (int i = 0; i < kQK; ++i) sum += block.qs[i];
  return sum;
}

template <QuantizeActivationsFn quantize>
void quantize_then_read_back_q8_0(const float* x, void* y, int64_t n, float* scales, int32_t* sums) {
  quantize(x, y, n);
  const auto* blocks = static_cast<const BlockQ8_0*>(y);
  for (int64_t b = 0; b < n / kQK; ++b) {
    if (scales != nullptr) scales[b] = fp16_to_f32(blocks[b].d);
    if (sums != nullptr) sums[b] = sum_quants(blocks[b]);
  }
}

template <QuantizeActivationsFn quantize>
void quantize_then_read_back_q8_1(const float* x, void* y, int64_t n, float* scales, int32_t* sums) {
  quantize(x, y, n);
  const auto* blocks = static_cast<const BlockQ8_1*>(y);
  for (int64_t b = 0; b < n / kQK; ++b) {
    if (scales != nullptr) {
      scales[2 * b] = fp16_to_f32(blocks[b].d);
      scales[2 * b + 1] = fp16_to_f32(blocks[b].s);
    }
    if (sums != nullptr) sums[b] = sum_quants(blocks[b]);
  }
}

}  // namespace

void scalar::quantize_described_q8_0(const float* x, void* y, int64_t n, float* scales, int32_t* sums) {
  quantize_then_read_back_q8_0<quantize_activations_q8_0>(x, y, n, scales, sums);
}
void scalar::quantize_described_q8_1(const float* x, void* y, int64_t n, float* scales, int32_t* sums) {
  quantize_then_read_back_q8_1<quantize_activations_q8_1>(x, y, n, scales, sums);
}
void avx2::quantize_described_q8_0(const float* x, void* y, int64_t n, float* scales, int32_t* sums) {
  quantize_then_read_back_q8_0<avx2::quantize_activations_q8_0>(x, y, n, scales, sums);
}
void avx2::quantize_described_q8_1(const float* x, void* y, int64_t n, float* scales, int32_t* sums) {
  quantize_then_read_back_q8_1<avx2::quantize_activations_q8_1>(x, y, n, scales, sums);
}

}  // namespace pagoda::quant
