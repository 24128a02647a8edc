#pragma once
// Register-blocked matmul kernels. A kernel computes a tile of y = x W^T: `n_rows` weight
// rows against `n_cols` activation rows, every dot product over the whole n_in, several
// weight rows x several tokens at a time so that each weight block loaded from cache is
// used for several tokens and each activation block for several rows:
//  - strip kernels (matmul_strip_avx2.h): 8 rows x 4 tokens, rows in SIMD lanes;
//    AVX-512 VNNI forms (matmul_strip_avx512.h): 16 rows x 8 tokens, the same results;
//  - pair kernels (matmul_pairs_avx2.cpp): 4 rows x 2 tokens, one 8-lane accumulator
//    per (row, token), the reference's layout for Q8_0, Q5_0, Q4_1 and Q5_1.
//
// Numerics: activations come already quantized by the quant layer (one row at a time,
// exactly as for the single-token path); each kernel forms the same per-block integer
// sums and the same scale products as the reference dot kernels. The order of the f32
// additions is the reference's where TileKernel::mirrors_reference says so.

#include <cstddef>
#include <cstdint>
#include <limits>

#include "backend/cpu/attention/kv_lookahead.h"
#include "backend/cpu/cpu_backend.h"
#include "core/dtype.h"
#include "quant/dot.h"

namespace pagoda::backend::cpu {

struct TileJob {
  int64_t n_in = 0;            // values per dot product (a multiple of the block size)
  const std::byte* w = nullptr;  // first weight row of the tile
  size_t w_stride = 0;         // bytes between weight rows
  int64_t n_rows = 0;
  const std::byte* a = nullptr;  // first activation row, in the weight's activation format
  size_t a_stride = 0;         // bytes between activation rows
  int64_t n_cols = 0;
  float* y = nullptr;          // y[col * y_stride + row]: output of the first row and col
  size_t y_stride = 0;         // floats between consecutive tokens' outputs
  std::byte* scratch = nullptr;  // tile_scratch_bytes(n_in) bytes, 64-byte aligned, per thread
  const int32_t* a_sums = nullptr;  // kernels with block_sums: sum of each activation block's quants
  size_t a_sums_stride = 0;         // int32s between tokens
  // Kernels with block_scales: each Q8_0 activation block's d, or each Q8_1 block's d then
  // s, as f32 (read with one broadcast instead of a conversion per block and token).
  const float* a_scales = nullptr;
  size_t a_scales_stride = 0;       // floats between tokens
  // Kernels that repack: tokens whose activations stay in L2 while every strip of the
  // repacked rows passes over them (a multiple of 4; 0: all n_cols at once).
  int64_t cols_per_pass = 0;
  // Kernels with TileKernel::repack: the tile's rows already repacked (a copy the matmul
  // keeps, see matmul_repacked.h), strip after strip as repack lays them out; nullptr:
  // the kernel repacks them into scratch.
  const std::byte* strips = nullptr;
  // Kernels with TileKernel::prepare_activations: the matmul's tokens as it laid them
  // out, for a tile of all of them (nullptr otherwise: the kernel then reads job.a).
  const std::byte* a_tiles = nullptr;
  // This thread's share of the KV lines the next attention reads (kv_lookahead.h), which
  // kernels multiplying kept copies for few tokens ask for as they go; nullptr: none.
  LookaheadCursor* lookahead = nullptr;
};

// Tiles of fewer tokens than this run a strip kernel's single-token path: the rows as
// stored, nothing repacked.
inline constexpr int64_t kMinStripTokens = 4;

// How far ahead a single-token pass that streams weight rows asks for them (the strip
// kernels' single-token paths, matmul_strip_avx2.h and matmul_strip_avx512.h, and the
// rows schedule, matmul.cpp): into L1 kRowPrefetchBytes on, so that their loads overlap
// the arithmetic (2 KiB read fastest on the machines measured, 1 and 4 KiB less so); and
// where the kernels ask twice, into L2 kL2RowPrefetchBytes on: on an Intel Xeon, where
// one core keeps fewer misses in flight than the memory's latency asks for, that second
// request raised decoding's share of the bandwidth markedly (3, 4 or 7 KiB on, or one
// request alone, did less); on AMD's Zen 4 the AVX-512 single-token kernels ran faster
// without it, and ask once there (RowPrefetch, matmul_strip_avx512.h). A prefetch never
// faults, so the addresses (integers: they may lie past the tensor) need no check.
inline constexpr uintptr_t kRowPrefetchBytes = 2048;
inline constexpr uintptr_t kL2RowPrefetchBytes = 5120;

// Tokens per group that TileKernel::prepare_activations lays out together.
inline constexpr int64_t kActivationTileTokens = 16;

// Scratch a kernel needs per 8 weight rows of n_in values (their repacked form).
inline size_t tile_scratch_bytes(int64_t n_in) { return static_cast<size_t>(n_in / 32) * 384 + 64; }

struct TileKernel {
  void (*run)(const TileJob& job);
  bool block_sums;  // needs TileJob::a_sums (Q8_0 activations: the sum of each block's 32 quants)
  // Rounds in f32 exactly as the reference build's CPU kernel for this type does on AVX2
  // (its repacked 8-row gemm for groups of 4 tokens, gemv for the rest), so that models
  // reproduce its log-probabilities; the others share its integer math only.
  bool mirrors_reference;
  // The reference repacks this type (and so rounds this way) only for weights with a
  // multiple of 8 rows; others take its row-by-row dot products.
  bool needs_rows_of_8;
  // Repacks its rows (8 at a time) into scratch before multiplying them: give it whole
  // panels of rows with every token, and tile_scratch_bytes per 8 rows, so that each row
  // is repacked once per matmul (see run_strips in matmul_strip_avx2.h).
  bool repacks_rows = false;
  bool block_scales = false;  // wants TileJob::a_scales
  // Rows per strip of a repacking kernel: give it panels of a multiple of this many rows
  // (the scratch of tile_scratch_bytes per 8 rows then holds its strips).
  int strip_rows = 8;
  // Where set: repacks the job's n_rows rows (from job.w, job.w_stride; n_in values) into
  // `out` as `run` reads them from TileJob::strips, and returns the bytes they take
  // (with out == nullptr it only measures). Rows [r, r + n) of a weight so repacked start
  // at byte repack(rows [0, r)) for r a multiple of strip_rows.
  size_t (*repack)(const TileJob& job, std::byte* out) = nullptr;
  // Where set: lays out the quantized activations of groups [first, end) of
  // kActivationTileTokens tokens (job.a, job.a_stride, job.n_cols tokens, job.n_in) at
  // their places in `out`, the whole layout, whose size is activation_tiles_bytes(n_in,
  // n_tokens); once per matmul, for every tile to read (TileJob::a_tiles).
  void (*prepare_activations)(const TileJob& job, int64_t first, int64_t end, std::byte* out) = nullptr;
  size_t (*activation_tiles_bytes)(int64_t n_in, int64_t n_tokens) = nullptr;
  // Tiles of fewer than kMinStripTokens tokens multiply the rows' kept copy too, where
  // there is one and the rows hold at most this many values (0: never). A kept copy is
  // the size of the rows as stored, one run of bytes per strip, and a model decoding with
  // batched steps between (speculation, other requests) then keeps one form of its
  // weights in cache, not two.
  int64_t kept_for_single_tokens_up_to = 0;
  // Tiles of more tokens than this repack their rows into scratch even where a kept copy
  // exists: a kept copy whose values are taken apart as they are multiplied (the
  // k-quants') does so once per group of kStripTokens tokens, the scratch once a panel.
  int64_t kept_for_tokens_up_to = std::numeric_limits<int64_t>::max();
  // Tiles of fewer than kMinStripTokens tokens may multiply the rows' kept copy (made
  // then) instead of the rows as stored, whichever the matmul measures faster
  // (timed_choice.h): both give the same bits.
  bool kept_for_single_tokens_when_faster = false;
};

// The tiled kernel for `weight` on `isa` or a lower ISA: under kFast the fastest one,
// under kReference one that mirrors the reference's rounding where there is one; nullptr
// where none exists (the caller then uses the quant layer's row-by-row dot kernels).
// Every kernel returned for kFast is batch-invariant: a (row, token) result does not
// depend on n_rows, n_cols, nor where in the tile the row and token are.
const TileKernel* find_tile_kernel(DType weight, Isa isa, CpuNumerics numerics = CpuNumerics::kFast);

namespace avx2 {
void tile_q8_0(const TileJob& job);
void tile_q4_0(const TileJob& job);
void tile_q5_0(const TileJob& job);
void tile_iq4_nl(const TileJob& job);
void tile_q4_1(const TileJob& job);
void tile_q5_1(const TileJob& job);
void tile_q4_K(const TileJob& job);
void tile_q5_K(const TileJob& job);
void tile_q6_K(const TileJob& job);
void tile_q3_K(const TileJob& job);
void tile_q2_K(const TileJob& job);
void tile_iq4_xs(const TileJob& job);
// Per-pair accumulators (matmul_pairs_avx2.cpp): the reference's rounding for these types.
void pairs_q8_0(const TileJob& job);
void pairs_q5_0(const TileJob& job);
void pairs_q4_1(const TileJob& job);
void pairs_q5_1(const TileJob& job);
}  // namespace avx2

// 16-row strips through vpdpbusd (matmul_strips_*_avx512vnni.cpp): the same bits as the
// AVX2 strip kernels of the same type; tiles of fewer than 4 tokens run the single-token
// kernels below, or for the other types the AVX2 ones.
namespace avx512vnni {
void tile_q8_0(const TileJob& job);
void tile_q4_0(const TileJob& job);
void tile_q5_0(const TileJob& job);
void tile_iq4_nl(const TileJob& job);
void tile_q4_1(const TileJob& job);
void tile_q5_1(const TileJob& job);
void tile_q4_K(const TileJob& job);
void tile_q5_K(const TileJob& job);
void tile_q6_K(const TileJob& job);
void tile_q3_K(const TileJob& job);
void tile_q2_K(const TileJob& job);
void tile_iq4_xs(const TileJob& job);
// Single-token kernels (matmul_gemv_*_avx512vnni.cpp), for tiles of fewer than 4 tokens:
// the blocks as stored, the strip kernels' bits.
void gemv_q8_0(const TileJob& job);
void gemv_q4_K(const TileJob& job);
void gemv_q5_K(const TileJob& job);
void gemv_q6_K(const TileJob& job);
// TileKernel::repack of the tile kernels above whose kept copies are about the size of
// the weights as stored (the nibble formats: 4 bits a value; Q5_0 and Q5_1 with their
// fifth bits regrouped; Q8_0).
size_t repack_q8_0(const TileJob& job, std::byte* out);
size_t repack_q4_0(const TileJob& job, std::byte* out);
size_t repack_iq4_nl(const TileJob& job, std::byte* out);
size_t repack_q4_1(const TileJob& job, std::byte* out);
size_t repack_q5_0(const TileJob& job, std::byte* out);
size_t repack_q5_1(const TileJob& job, std::byte* out);
// The k-quants': Q4_K and Q5_K (matmul_strips_k_avx512vnni.cpp) the packed bytes moved
// into place, the scales as bytes, a few percent over the size as stored; Q6_K
// (matmul_strips_groups16_avx512vnni.cpp) a byte a value, 1.31 times the size as stored;
// Q2_K and Q3_K (the same file) their packed bytes moved into place, Q2_K at the size as
// stored, Q3_K 3.6% over it.
size_t repack_q2_K(const TileJob& job, std::byte* out);
size_t repack_q3_K(const TileJob& job, std::byte* out);
size_t repack_q4_K(const TileJob& job, std::byte* out);
size_t repack_q5_K(const TileJob& job, std::byte* out);
size_t repack_q6_K(const TileJob& job, std::byte* out);
// IQ4_XS's: the packed bytes moved into place, the scales as bytes (2240 bytes per 16 x 256
// values against 2176 as stored); one layout with its scratch strips.
size_t repack_iq4_xs(const TileJob& job, std::byte* out);
}  // namespace avx512vnni

// Tiles of kMinTimedTokens to kMaxTimedTokens - 1 tokens of a weight with a timed
// alternative (below) run whichever of the two kernels the matmul measures faster for
// their weight and count of tokens (timed_choice.h).
inline constexpr int64_t kMinTimedTokens = 2;
inline constexpr int64_t kMaxTimedTokens = 64;

// A second kernel that gives the tiles of `weight` on `isa` the same bits as
// find_tile_kernel's, and may run few tokens faster: the VNNI strips beside the AMX
// kernels of the k-quants. Where the tile unit overtakes the strips differs between
// CPUs: on one Xeon it led all three at 16 tokens; on another the strips ran 2 to 8
// tokens faster, and Q6_K's up to 16. nullptr where there is none.
const TileKernel* find_timed_alternative(DType weight, Isa isa, CpuNumerics numerics = CpuNumerics::kFast);

// Strips of 16 rows multiplied on the AMX tile unit (matmul_strips_*_amx.cpp): the VNNI
// strip kernels' bits; tiles of fewer than 4 tokens run the VNNI single-token kernels.
namespace amx {
void tile_q4_K(const TileJob& job);
void tile_q5_K(const TileJob& job);
void tile_q6_K(const TileJob& job);
// TileKernel::prepare_activations and activation_tiles_bytes of all three: Q8_K rows as
// B tiles, one layout (a Q4_K_M model's Q4_K and Q6_K products share it).
void prepare_activations_q8_K(const TileJob& job, int64_t first, int64_t end, std::byte* out);
size_t activation_tiles_q8_K(int64_t n_in, int64_t n_tokens);
}  // namespace amx

}  // namespace pagoda::backend::cpu
