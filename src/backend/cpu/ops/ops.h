#pragma once
// The CPU implementations of the Backend ops other than matmul and attention (see
// backend/backend.h for shapes). Each returns an error for views it cannot handle
// instead of touching memory it should not; the backend keeps the first such error.
// Numerics follow the reference CPU build (ggml) where log-probabilities depend on
// them: double sums in the norms, iterated float theta in rope, the f16 gelu table.

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "quant/dot.h"

namespace pagoda::backend::cpu {

Status get_rows(ThreadPool& pool, const TensorView& table, std::span<const int32_t> ids,
                const TensorView& out);
Status add_bias(ThreadPool& pool, const TensorView& y, const TensorView& bias);
Status add(ThreadPool& pool, const TensorView& a, const TensorView& b, const TensorView& out);
// isa: kScalar keeps to portable code; anything higher sums squares with AVX2 (the
// same bits, see norms.h).
Status rms_norm(ThreadPool& pool, Isa isa, const TensorView& x, const TensorView& weight, float eps,
                const TensorView& y);
// x += delta, then rms_norm(x) into y, in one job over the rows (the same bits as add
// then rms_norm). y must not alias x or delta.
Status add_rms_norm(ThreadPool& pool, Isa isa, const TensorView& x, const TensorView& delta,
                    const TensorView& weight, float eps, const TensorView& y);
Status layer_norm(ThreadPool& pool, const TensorView& x, const TensorView& weight,
                  const TensorView& bias, float eps, const TensorView& y);
// Rotary position embedding. A forward pass rotates q and k in every layer at the same
// positions with the same parameters, so the cos and sin of each pair's angle are kept
// from one call to the next and computed again only when the positions or the
// parameters change, instead of 2 x n_layer times per forward pass.
class Rope {
 public:
  // isa: kScalar keeps to portable code; anything higher may use the AVX2 rotation.
  explicit Rope(Isa isa) : isa_(isa) {}
  Status run(ThreadPool& pool, const TensorView& x, std::span<const int32_t> positions, const RopeParams& params);
  // Both views (a layer's q and k: the same tokens) in one job over the tokens, each
  // head rotated as run() rotates it.
  Status run_pair(ThreadPool& pool, const TensorView& a, const TensorView& b, std::span<const int32_t> positions,
                  const RopeParams& params);

 private:
  Status run_views(ThreadPool& pool, std::span<const TensorView> views, std::span<const int32_t> positions,
                   const RopeParams& params);
  // Fills cos_sin_ for these positions and parameters unless it already holds them.
  void compute_angles(ThreadPool& pool, std::span<const int32_t> positions, const RopeParams& params);

  Isa isa_;
  std::vector<int32_t> positions_;  // the positions cos_sin_ holds
  RopeParams params_;               // and the parameters (neox aside: it does not change the angles)
  std::vector<float> cos_sin_;      // [positions][n_dims]: cos, sin of pair i at 2i, 2i + 1
  bool valid_ = false;
};
// isa: kScalar keeps to portable code; anything higher may use the AVX2 kernel.
Status silu_mul(ThreadPool& pool, Isa isa, const TensorView& gate, const TensorView& up,
                const TensorView& out);
Status gelu(ThreadPool& pool, const TensorView& x);
// ids[i] = greedy_token(row i of x): x [n][n_vocab] f32 rows, ids [n] I32.
Status argmax_rows(ThreadPool& pool, const TensorView& x, const TensorView& ids);
// ids[i] = sample_row of row i of x with rows[i] (Backend::sample_rows).
Status sample_rows(ThreadPool& pool, const TensorView& x, std::span<const RowSampling> rows,
                   std::span<const LogitAdjustment> adjustments, const TensorView& ids, const TensorView& logprobs);

// Shared checks.
bool same_shape(const TensorView& a, const TensorView& b);
// f32 with contiguous elements in each row (rows may be strided).
bool is_f32_rows(const TensorView& v);

}  // namespace pagoda::backend::cpu
