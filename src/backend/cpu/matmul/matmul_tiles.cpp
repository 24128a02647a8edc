#include "backend/cpu/matmul/matmul_tiles.h"

#include <cstdint>
#include <limits>

namespace pagoda::backend::cpu {

const TileKernel* find_tile_kernel(DType weight, Isa isa, CpuNumerics numerics) {
  constexpr int64_t kAnyLength = std::numeric_limits<int64_t>::max();
  const bool mirror_reference = numerics == CpuNumerics::kReference;
  // The reference repacks Q4_0, IQ4_NL and Q4_K into 8-row groups on AVX2 and multiplies
  // them as the strip kernels do; Q8_0, Q5_0, Q4_1 and Q5_1 it multiplies pair by pair,
  // as the pair kernels do (faster strip kernels exist for them, with other f32 rounding);
  // the other types go through its row-by-row dot products.
  static constexpr TileKernel kQ8_0Pairs{avx2::pairs_q8_0, false, true, false}, kQ5_0Pairs{avx2::pairs_q5_0, false, true, false},
      kQ4_1Pairs{avx2::pairs_q4_1, false, true, false}, kQ5_1Pairs{avx2::pairs_q5_1, false, true, false},
      kQ8_0{avx2::tile_q8_0, false, false, false, true, true}, kQ4_0{avx2::tile_q4_0, true, true, true, true, true},
      kQ5_0{avx2::tile_q5_0, true, false, false, true, true}, kIQ4_NL{avx2::tile_iq4_nl, false, true, true, true, true},
      kQ4_1{avx2::tile_q4_1, false, false, false, true, true}, kQ5_1{avx2::tile_q5_1, false, false, false, true, true},
      kQ4_K{avx2::tile_q4_K, false, true, true, true}, kQ5_K{avx2::tile_q5_K, false, false, false, true},
      kQ6_K{avx2::tile_q6_K, false, false, false, true}, kIQ4_XS{avx2::tile_iq4_xs, false, false, false, true},
      kQ3_K{avx2::tile_q3_K, false, false, false, true}, kQ2_K{avx2::tile_q2_K, false, false, false, true};
  // 16-row VNNI strips: the AVX2 strip kernels' bits, faster. Activation sums for all
  // but the formats with a minimum: signed weights are stored with 128 added. The
  // k-quants read their Q8_K blocks' own bsums. Kept copies serve single tokens too: the
  // nibble and 5-bit formats' always (their single-token kernels read 16 rows side by
  // side, or compute more per byte than the memory delivers); Q8_0's for rows of up to
  // 1024 values, where its row-by-row single-token kernel spends much of its time
  // summing each row's lanes (a small model's output head), not for longer rows, which
  // it streams from memory faster than the strips. Q5_K's and Q6_K's single tokens
  // stream the rows as stored. Q4_K's and Q5_K's kept copies hold their packed bits,
  // taken apart once per 8 tokens as they are multiplied: they serve batched decoding
  // (tiles of up to 32 tokens), and Q4_K's single tokens where the matmul measures them
  // faster than the rows as stored (fewer instructions, 5.5% more bytes: faster on a
  // quiet machine, slower when the memory bus is the bound; Q5_K's, whose fifth bits
  // take more instructions to put in place, ran single tokens at about half the speed of
  // its rows as stored); prompts repack. Q6_K's hold a byte a value,
  // as its scratch strips do, and serve every tile. IQ4_XS's, its packed bytes in place
  // (the layout of its scratch strips too), serve every tile, single tokens included: a
  // single-token kernel on the rows as stored spends about three times their arithmetic.
  // Q2_K's and Q3_K's, their packed bits, serve batched decoding (prompts repack) and
  // Q2_K's single tokens too; Q3_K's single tokens, whose values take twice the
  // instructions to put together, ran slower on them than on the AVX2 kernel.
  constexpr auto kept_k_quant = [](void (*run)(const TileJob&), size_t (*repack)(const TileJob&, std::byte*),
                                   int64_t up_to_tokens, bool single_tokens_when_faster) {
    return TileKernel{.run = run, .block_sums = false, .mirrors_reference = false, .needs_rows_of_8 = false,
                      .repacks_rows = true, .strip_rows = 16, .repack = repack, .kept_for_tokens_up_to = up_to_tokens,
                      .kept_for_single_tokens_when_faster = single_tokens_when_faster};
  };
  static constexpr TileKernel kQ8_0Vnni{avx512vnni::tile_q8_0, true, false, false, true, true, 16, avx512vnni::repack_q8_0, nullptr, nullptr, 1024},
      kQ4_0Vnni{avx512vnni::tile_q4_0, true, false, false, true, true, 16, avx512vnni::repack_q4_0, nullptr, nullptr, kAnyLength},
      kQ5_0Vnni{avx512vnni::tile_q5_0, true, false, false, true, true, 16, avx512vnni::repack_q5_0, nullptr, nullptr, kAnyLength},
      kIQ4_NLVnni{avx512vnni::tile_iq4_nl, true, false, false, true, true, 16, avx512vnni::repack_iq4_nl, nullptr, nullptr, kAnyLength},
      kQ4_1Vnni{avx512vnni::tile_q4_1, false, false, false, true, true, 16, avx512vnni::repack_q4_1, nullptr, nullptr, kAnyLength},
      kQ5_1Vnni{avx512vnni::tile_q5_1, false, false, false, true, true, 16, avx512vnni::repack_q5_1, nullptr, nullptr, kAnyLength},
      kQ3_KVnni = kept_k_quant(avx512vnni::tile_q3_K, avx512vnni::repack_q3_K, 32, false),
      kQ2_KVnni{avx512vnni::tile_q2_K, false, false, false, true, false, 16, avx512vnni::repack_q2_K, nullptr, nullptr,
                kAnyLength, 32},
      kQ4_KVnni = kept_k_quant(avx512vnni::tile_q4_K, avx512vnni::repack_q4_K, 32, true),
      kQ5_KVnni = kept_k_quant(avx512vnni::tile_q5_K, avx512vnni::repack_q5_K, 32, false),
      kQ6_KVnni = kept_k_quant(avx512vnni::tile_q6_K, avx512vnni::repack_q6_K, kAnyLength, false),
      kIQ4_XSVnni{avx512vnni::tile_iq4_xs, false, false, false, true, false, 16, avx512vnni::repack_iq4_xs, nullptr, nullptr, kAnyLength};
  // The k-quants on the tile unit: the VNNI strips' bits, the integer products faster.
  static constexpr TileKernel kQ4_KAmx{amx::tile_q4_K, false, false, false, true, false, 16, nullptr,
                                       amx::prepare_activations_q8_K, amx::activation_tiles_q8_K},
      kQ5_KAmx{amx::tile_q5_K, false, false, false, true, false, 16, nullptr,
               amx::prepare_activations_q8_K, amx::activation_tiles_q8_K},
      kQ6_KAmx{amx::tile_q6_K, false, false, false, true, false, 16, nullptr,
               amx::prepare_activations_q8_K, amx::activation_tiles_q8_K};
  if (isa == Isa::kAmx && !mirror_reference) {
    if (weight == DType::Q4_K) return &kQ4_KAmx;
    if (weight == DType::Q5_K) return &kQ5_KAmx;
    if (weight == DType::Q6_K) return &kQ6_KAmx;
  }
  if (isa >= Isa::kAvx512Vnni && !mirror_reference) {
    switch (weight) {
      case DType::Q8_0: return &kQ8_0Vnni;
      case DType::Q4_0: return &kQ4_0Vnni;
      case DType::Q5_0: return &kQ5_0Vnni;
      case DType::IQ4_NL: return &kIQ4_NLVnni;
      case DType::Q4_1: return &kQ4_1Vnni;
      case DType::Q5_1: return &kQ5_1Vnni;
      case DType::Q4_K: return &kQ4_KVnni;
      case DType::Q5_K: return &kQ5_KVnni;
      case DType::Q6_K: return &kQ6_KVnni;
      case DType::IQ4_XS: return &kIQ4_XSVnni;
      case DType::Q3_K: return &kQ3_KVnni;
      case DType::Q2_K: return &kQ2_KVnni;
      default: break;
    }
  }
  // Every ISA above scalar runs the AVX2 kernels.
  if (isa == Isa::kScalar) return nullptr;
  switch (weight) {
    case DType::Q8_0: return mirror_reference ? &kQ8_0Pairs : &kQ8_0;
    case DType::Q4_0: return &kQ4_0;
    case DType::Q5_0: return mirror_reference ? &kQ5_0Pairs : &kQ5_0;
    case DType::IQ4_NL: return &kIQ4_NL;
    case DType::Q4_1: return mirror_reference ? &kQ4_1Pairs : &kQ4_1;
    case DType::Q5_1: return mirror_reference ? &kQ5_1Pairs : &kQ5_1;
    case DType::Q4_K: return &kQ4_K;
    case DType::Q5_K: return &kQ5_K;
    case DType::Q6_K: return &kQ6_K;
    case DType::IQ4_XS: return &kIQ4_XS;
    case DType::Q3_K: return &kQ3_K;
    case DType::Q2_K: return &kQ2_K;
    default: return nullptr;
  }
}

const TileKernel* find_timed_alternative(DType weight, Isa isa, CpuNumerics numerics) {
  const bool k_quant = weight == DType::Q4_K || weight == DType::Q5_K || weight == DType::Q6_K;
  if (isa != Isa::kAmx || numerics != CpuNumerics::kFast || !k_quant) return nullptr;
  return find_tile_kernel(weight, Isa::kAvx512Vnni, numerics);
}

}  // namespace pagoda::backend::cpu
