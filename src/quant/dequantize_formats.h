#pragma once
// One dequantizer per block format, behind dequantize_row's dispatch. Each reads
// `n_blocks` whole blocks from `src` (any alignment: blocks are copied out before use)
// and writes n_blocks * block_size floats to `dst`.

#include <cstdint>
#include <cstring>

namespace pagoda::quant {

using DequantizeBlocksFn = void (*)(const uint8_t* src, int64_t n_blocks, float* dst);

// Block i of a packed row, copied out so a file mapping needs no particular alignment.
template <typename Block>
inline Block load_block(const uint8_t* src, int64_t i) {
  Block block;
  std::memcpy(&block, src + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return block;
}

// dequantize.cpp: plain and 32-wide formats.
void dequantize_f32(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_f16(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_bf16(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q4_0(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q4_1(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q5_0(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q5_1(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q8_0(const uint8_t* src, int64_t n_blocks, float* dst);

// dequantize_kquants.cpp: 256-value super-blocks.
void dequantize_q2_k(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q3_k(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q4_k(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q5_k(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q6_k(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_q8_k(const uint8_t* src, int64_t n_blocks, float* dst);

// dequantize_iquants.cpp: the non-linear 4-bit codebook formats.
void dequantize_iq4_nl(const uint8_t* src, int64_t n_blocks, float* dst);
void dequantize_iq4_xs(const uint8_t* src, int64_t n_blocks, float* dst);

}  // namespace pagoda::quant
