// AVX-512 Q8_0 / Q8_1 activation quantizers that also describe their blocks (the
// QuantizeDescribedFn of quant/dot.h): byte for byte quantize_activations_q8_*, the same
// amax, id = 127 / amax, f32 product x * id rounded to nearest even and scale rounded
// to half as the scalar and AVX2 forms.
//
// The AVX2 form takes one block at a time, and its two scalar divisions per block
// (127 / amax, amax / 127) lie on the critical path. Here eight blocks go together, one
// per lane of a __m256: their maxima and quant sums reduced into one vector each, so a
// single vector division gives all eight ids and another all eight scales, and the
// halves are converted eight at a time. A row's last, partial group is padded with
// zero blocks rather than taken block by block. A group holding an infinity or a NaN, or a block
// so small that 127 / amax overflows, goes block by block to the AVX2 quantizer (which
// leaves those blocks to the scalar one, which defines what they give).

#include "quant/dot_simd_avx512.h"  // first: it includes <immintrin.h> (see there)

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/dot_kernels.h"

namespace pagoda::quant::avx512 {
namespace {

constexpr int kGroup = 8;  // blocks quantized together, one per lane of a __m256

template <typename Block>
constexpr bool kHasSumScale = requires(Block block) { block.s; };  // Q8_1
// Floats of `scales` per block: d, and for Q8_1 s.
template <typename Block>
constexpr int kScalesPerBlock = kHasSumScale<Block> ? 2 : 1;

// Lane b of the result (b < 8) is `op` folded over the 16 lanes of v[b], for an
// associative and commutative `op`. Each step halves the lanes a block spans and packs
// two blocks' vectors into one: 16 shuffles for the eight blocks, where reducing each
// vector alone takes 4 and gathering the eight results 7 more.
template <typename Op>
inline __m256i reduce_lanes(const __m512i v[kGroup], Op op) {
  // 256-bit halves: pair[p] holds block 2p in lanes 0..7, block 2p + 1 in lanes 8..15.
  __m512i pair[4];
  for (int p = 0; p < 4; ++p) {
    pair[p] = op(_mm512_shuffle_i32x4(v[2 * p], v[2 * p + 1], 0x44), _mm512_shuffle_i32x4(v[2 * p], v[2 * p + 1], 0xee));
  }
  // 128-bit quarters: the 128-bit lane k of quad[q] holds block 4q + k.
  __m512i quad[2];
  for (int q = 0; q < 2; ++q) {
    quad[q] = op(_mm512_shuffle_i32x4(pair[2 * q], pair[2 * q + 1], 0x88),
                 _mm512_shuffle_i32x4(pair[2 * q], pair[2 * q + 1], 0xdd));
  }
  // In each 128-bit lane k, blocks k and k + 4 interleaved and folded twice: lane 4k
  // holds block k, lane 4k + 1 block k + 4.
  const __m512i mixed = op(_mm512_unpacklo_epi32(quad[0], quad[1]), _mm512_unpackhi_epi32(quad[0], quad[1]));
  const __m512i folded = op(mixed, _mm512_unpackhi_epi64(mixed, mixed));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, folded));
}

// As types (not function pointers), so that reduce_lanes inlines with them.
struct MaxI32 {
  __m512i operator()(__m512i a, __m512i b) const { return _mm512_max_epi32(a, b); }
};
struct AddI32 {
  __m512i operator()(__m512i a, __m512i b) const { return _mm512_add_epi32(a, b); }
};

// The `count` (1 to 8) blocks at x into out, their scales and sums (where not null) into
// scales[0 .. count * kScalesPerBlock) and sums[0 .. count). Returns false, having
// written nothing, when a block holds an infinity or a NaN or its 127 / amax overflows.
// A group of fewer than eight (a row's last) is padded with zero blocks, never loaded,
// which quantize to zeros and never make it decline: the same code for the row's end.
template <typename Block>
bool quantize_group(const float* x, Block* out, int count, float* scales, int32_t* sums) {
  // Vector i (0 to 15) of the group's values; its first half is block i / 2.
  const auto values = [&](int i) {
    return i < 2 * count ? _mm512_loadu_ps(x + 16 * i) : _mm512_setzero_ps();
  };
  // |x| as integer bits orders as |x| does, infinities and NaNs (0x7f800000 and above)
  // after every finite value: one integer maximum gives each block's amax and shows
  // whether the block holds either.
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  __m512i block_max[kGroup];
  for (int b = 0; b < kGroup; ++b) {
    block_max[b] = _mm512_max_epi32(_mm512_and_si512(_mm512_castps_si512(values(2 * b)), magnitude),
                                    _mm512_and_si512(_mm512_castps_si512(values(2 * b + 1)), magnitude));
  }
  const __m256i amax_bits = reduce_lanes(block_max, MaxI32{});
  const __m256 amax = _mm256_castsi256_ps(amax_bits);
  const __mmask8 nonzero = _mm256_cmp_ps_mask(amax, _mm256_setzero_ps(), _CMP_NEQ_OQ);
  const __m256 id = _mm256_maskz_div_ps(nonzero, _mm256_set1_ps(127.0f), amax);
  // Both are non-negative: above the largest finite float's bits means inf or NaN.
  const __m256i largest_finite = _mm256_set1_epi32(0x7f7fffff);
  if (_mm256_cmpgt_epi32_mask(_mm256_max_epi32(amax_bits, _mm256_castps_si256(id)), largest_finite) != 0) return false;
  const __m256 d = _mm256_div_ps(amax, _mm256_set1_ps(127.0f));

  const __m512 ids = _mm512_castps256_ps512(id);  // lanes 8..15 undefined, never read
  __m512i block_sum[kGroup];
  for (int b = 0; b < kGroup; ++b) {
    if (b >= count) {  // a padding block: its quants are zeros
      block_sum[b] = _mm512_setzero_si512();
      continue;
    }
    const __m512 scale = _mm512_permutexvar_ps(_mm512_set1_epi32(b), ids);
    // Every |x * id| is within 127 * (1 + 2^-22): no saturation in the narrowing.
    const __m512i low = _mm512_cvt_roundps_epi32(_mm512_mul_ps(values(2 * b), scale),
                                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i high = _mm512_cvt_roundps_epi32(_mm512_mul_ps(values(2 * b + 1), scale),
                                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i bytes = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtsepi32_epi8(low)),
                                                  _mm512_cvtsepi32_epi8(high), 1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), bytes);
    block_sum[b] = _mm512_add_epi32(low, high);
  }

  const __mmask8 present = static_cast<__mmask8>((1u << count) - 1);
  const __m128i d_half = _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT);
  if constexpr (kHasSumScale<Block>) {
    const __m256i sum = reduce_lanes(block_sum, AddI32{});
    const __m128i s_half = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_cvtepi32_ps(sum), d), _MM_FROUND_TO_NEAREST_INT);
    // d and s of a block side by side, as they lie in the block (and in `scales`).
    const __m256i ds = _mm256_setr_m128i(_mm_unpacklo_epi16(d_half, s_half), _mm_unpackhi_epi16(d_half, s_half));
    uint32_t headers[kGroup];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(headers), ds);
    static_assert(offsetof(Block, d) == 0 && offsetof(Block, s) == 2);
    for (int b = 0; b < count; ++b) std::memcpy(&out[b], &headers[b], sizeof(headers[b]));
    if (scales != nullptr) _mm512_mask_storeu_ps(scales, static_cast<__mmask16>((1u << (2 * count)) - 1), _mm512_cvtph_ps(ds));
    if (sums != nullptr) _mm256_mask_storeu_epi32(sums, present, sum);
  } else {
    uint16_t headers[kGroup];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(headers), d_half);
    for (int b = 0; b < count; ++b) out[b].d = headers[b];
    if (scales != nullptr) _mm256_mask_storeu_ps(scales, present, _mm256_cvtph_ps(d_half));
    if (sums != nullptr) _mm256_mask_storeu_epi32(sums, present, reduce_lanes(block_sum, AddI32{}));
  }
  return true;
}

void quantize_block(const float* x, BlockQ8_0* y) { avx2::quantize_activations_q8_0(x, y, kQK); }
void quantize_block(const float* x, BlockQ8_1* y) { avx2::quantize_activations_q8_1(x, y, kQK); }

// The blocks of a group quantize_group declines, one at a time, their scales and sums
// read back.
template <typename Block>
void quantize_one_by_one(const float* x, Block* out, int count, float* scales, int32_t* sums) {
  for (int b = 0; b < count; ++b) {
    quantize_block(x + b * kQK, &out[b]);
    if (scales != nullptr) {
      scales[kScalesPerBlock<Block> * b] = kHalfToFloat.values[out[b].d];
      if constexpr (kHasSumScale<Block>) scales[2 * b + 1] = kHalfToFloat.values[out[b].s];
    }
    if (sums != nullptr) {
      int32_t sum = 0;
      for (int i = 0; i < kQK; ++i) sum += out[b].qs[i];
      sums[b] = sum;
    }
  }
}

template <typename Block>
void quantize_described(const float* x, void* y, int64_t n, float* scales, int32_t* sums) {
  auto* blocks = static_cast<Block*>(y);
  const int64_t n_blocks = n / kQK;
  for (int64_t b = 0; b < n_blocks; b += kGroup) {
    const int count = static_cast<int>(n_blocks - b < kGroup ? n_blocks - b : kGroup);
    float* group_scales = scales != nullptr ? scales + kScalesPerBlock<Block> * b : nullptr;
    int32_t* group_sums = sums != nullptr ? sums + b : nullptr;
    if (!quantize_group(x + b * kQK, blocks + b, count, group_scales, group_sums)) {
      quantize_one_by_one(x + b * kQK, blocks + b, count, group_scales, group_sums);
    }
  }
}

}  // namespace

void quantize_described_q8_0(const float* x, void* y, int64_t n, float* scales, int32_t* sums) {
  quantize_described<BlockQ8_0>(x, y, n, scales, sums);
}

void quantize_described_q8_1(const float* x, void* y, int64_t n, float* scales, int32_t* sums) {
  quantize_described<BlockQ8_1>(x, y, n, scales, sums);
}

}  // namespace pagoda::quant::avx512
