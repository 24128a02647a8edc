#pragma once
// Byte layouts of the GGUF block formats, exactly as they lie in a file. Every value
// of a block is reconstructed as d * q (+ m) from small integers q and per-block (or
// per-sub-block) scales d and minimums m. Halves are stored as raw uint16_t bits.

#include <cstdint>

#include "core/dtype.h"

namespace pagoda::quant {

constexpr int kQK = 32;    // values per block of the 32-wide formats
constexpr int kQK_K = 256; // values per super-block of the k- and i-quants
constexpr int kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K / Q5_K

using half = uint16_t;

struct BlockQ4_0 {
  half d;               // scale
  uint8_t qs[kQK / 2];  // 4-bit quants: low nibbles are values 0..15, high nibbles 16..31
};
struct BlockQ4_1 {
  half d, m;            // scale, minimum
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  half d;
  uint8_t qh[4];        // fifth bit of each of the 32 values
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  half d, m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  half d;
  int8_t qs[kQK];
};
struct BlockQ8_1 {       // activation format paired with Q4_1 / Q5_1 weights
  half d;
  half s;               // d * sum(qs)
  int8_t qs[kQK];
};

struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // 4-bit scale (low) and min (high) of each 16-value group
  uint8_t qs[kQK_K / 4];       // 2-bit quants
  half d, dmin;                // super-block scale for scales, and for mins
};
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];  // high bit of each quant
  uint8_t qs[kQK_K / 4];     // low 2 bits
  uint8_t scales[12];        // 16 scales of 6 bits
  half d;
};
struct BlockQ4_K {
  half d, dmin;
  uint8_t scales[kKScaleBytes];  // 8 scales and 8 mins of 6 bits
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
  half d, dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // low 4 bits
  uint8_t qh[kQK_K / 4];      // high 2 bits
  int8_t scales[kQK_K / 16];  // 8-bit scale of each 16-value group
  half d;
};
struct BlockQ8_K {            // activation format paired with the k-quants
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];  // sum of each group of 16 quants
};

struct BlockIQ4_NL {
  half d;
  uint8_t qs[kQK / 2];  // 4-bit indices into a fixed non-linear table
};
struct BlockIQ4_XS {
  half d;
  uint16_t scales_h;        // high 2 bits of 8 6-bit scales
  uint8_t scales_l[kQK_K / 64];  // low 4 bits
  uint8_t qs[kQK_K / 2];
};

// The layouts above must match the sizes GGUF declares.
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);

// The non-linear 4-bit codebook of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};

}  // namespace pagoda::quant
