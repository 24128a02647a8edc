#pragma once
// One reference quantizer per block format, behind quantize_row's dispatch. Each reads
// n_blocks * block_size floats from `src` and writes n_blocks whole blocks to `dst`
// (any alignment: blocks are built locally and copied out).

#include <cstdint>
#include <cstring>

namespace pagoda::quant {

using QuantizeBlocksFn = void (*)(const float* src, int64_t n_blocks, uint8_t* dst);

// Writes block i of a packed row.
template <typename Block>
inline void store_block(const Block& block, uint8_t* dst, int64_t i) {
  std::memcpy(dst + i * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
}

// quantize.cpp: plain and 32-wide formats.
void quantize_f32(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_f16(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_bf16(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_q4_0(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_q4_1(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_q5_0(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_q5_1(const float* src, int64_t n_blocks, uint8_t* dst);

// quantize_kquants_minmax.cpp: k-quants with a scale and a min per sub-block.
void quantize_q2_k(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_q4_k(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_q5_k(const float* src, int64_t n_blocks, uint8_t* dst);

// quantize_kquants_symmetric.cpp: k-quants with a signed scale per sub-block.
void quantize_q3_k(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_q6_k(const float* src, int64_t n_blocks, uint8_t* dst);

// quantize_iquants.cpp: the non-linear 4-bit codebook formats.
void quantize_iq4_nl(const float* src, int64_t n_blocks, uint8_t* dst);
void quantize_iq4_xs(const float* src, int64_t n_blocks, uint8_t* dst);

}  // namespace pagoda::quant
