// Rotary position embedding, as the reference CPU build computes it (no YaRN
// extrapolation): for pair i of a head, theta_i = p * base^(-2i/n_dims) built by
// repeated float multiplication, divided by freq_factors[i] when given, times
// freq_scale; the pair (x0, x1) becomes (x0 cos - x1 sin, x0 sin + x1 cos).

#include <algorithm>
#include <cmath>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/ops/rope.h"
#include "backend/cpu/ops/rows.h"

namespace pagoda::backend::cpu {
namespace {

constexpr int32_t kMaxRopeDims = 1024;

// cos_sin[2i], cos_sin[2i + 1] = cos and sin of pair i's angle at position p.
void rope_angles(int32_t p, const RopeParams& params, float theta_scale, float* cos_sin) {
  float theta = static_cast<float>(p);
  for (int32_t i = 0; i < params.n_dims / 2; ++i) {
    const float factor = params.freq_factors ? params.freq_factors[i] : 1.0f;
    const float angle = params.freq_scale * (theta / factor);
    cos_sin[2 * i] = std::cos(angle);
    cos_sin[2 * i + 1] = std::sin(angle);
    theta *= theta_scale;
  }
}

}  // namespace

void rotate_head(Isa isa, float* v, const float* cos_sin, int32_t n_dims, bool neox) {
  const int32_t half = n_dims / 2;
  int32_t i = 0;
  if (isa != Isa::kScalar) {
    const int32_t n_vector = neox ? half / 8 * 8 : half / 4 * 4;
    avx2::rotate_pairs(v, cos_sin, n_vector, n_dims, neox);
    i = n_vector;
  }
  for (; i < half; ++i) {
    float* a = neox ? v + i : v + 2 * i;
    float* b = neox ? v + i + half : v + 2 * i + 1;
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float x0 = *a, x1 = *b;
    *a = std::fma(x0, c, -(x1 * s));
    *b = std::fma(x0, s, x1 * c);
  }
}

Status Rope::run(ThreadPool& pool, const TensorView& x, std::span<const int32_t> positions,
                 const RopeParams& params) {
  return run_views(pool, std::span<const TensorView>(&x, 1), positions, params);
}

Status Rope::run_pair(ThreadPool& pool, const TensorView& a, const TensorView& b, std::span<const int32_t> positions,
                      const RopeParams& params) {
  const TensorView views[] = {a, b};
  return run_views(pool, views, positions, params);
}

Status Rope::run_views(ThreadPool& pool, std::span<const TensorView> views, std::span<const int32_t> positions,
                       const RopeParams& params) {
  int64_t values_per_token = 0;
  for (const TensorView& x : views) {
    if (!is_f32_rows(x)) return invalid_argument("rope: needs an f32 head view");
    if (params.n_dims <= 0 || params.n_dims % 2 != 0 || params.n_dims > x.ne[0] ||
        params.n_dims > kMaxRopeDims) {
      return invalid_argument("rope: n_dims must be even, positive, at most the head size and 1024");
    }
    if (static_cast<int64_t>(positions.size()) != x.ne[2] * x.ne[3]) {
      return invalid_argument("rope: needs one position per token");
    }
    values_per_token += x.ne[1] * x.ne[0];
  }
  compute_angles(pool, positions, params);
  parallel_rows(pool, static_cast<int64_t>(positions.size()), values_per_token, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float* cos_sin = cos_sin_.data() + t * params.n_dims;
      for (const TensorView& x : views) {
        for (int64_t h = 0; h < x.ne[1]; ++h) {
          rotate_head(isa_, x.row<float>(h, t % x.ne[2], t / x.ne[2]), cos_sin, params.n_dims, params.neox);
        }
      }
    }
  });
  return {};
}

void Rope::compute_angles(ThreadPool& pool, std::span<const int32_t> positions, const RopeParams& params) {
  const bool same_params = params.n_dims == params_.n_dims && params.freq_base == params_.freq_base &&
                           params.freq_scale == params_.freq_scale && params.freq_factors == params_.freq_factors;
  if (valid_ && same_params && std::ranges::equal(positions, positions_)) return;
  positions_.assign(positions.begin(), positions.end());
  params_ = params;
  cos_sin_.resize(positions.size() * static_cast<size_t>(params.n_dims));
  valid_ = true;
  const float theta_scale = std::pow(params.freq_base, -2.0f / static_cast<float>(params.n_dims));
  // A pair's cosine and sine weigh as 16 elementwise values in the split over threads.
  parallel_rows(pool, static_cast<int64_t>(positions.size()), 8 * params.n_dims, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      rope_angles(positions[static_cast<size_t>(t)], params, theta_scale, cos_sin_.data() + t * params.n_dims);
    }
  });
}

}  // namespace pagoda::backend::cpu
