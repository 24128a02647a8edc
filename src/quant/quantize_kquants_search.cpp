// Scale searches of the k-quant reference quantizers. Every sum is accumulated in the
// reference's order and every product grouped as it groups them ((w * x) * l, not
// w * (x * l)): a different rounding would pick a different scale now and then.

#include "quant/quantize_kquants_search.h"

#include <algorithm>
#include <cmath>

#include "quant/quantize_rounding.h"

// Each product must round on its own: no fused multiply-add.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace pagoda::quant {
namespace {

// The value of largest magnitude (the first on ties) and that magnitude.
struct AbsMax {
  float value = 0.0f;
  float magnitude = 0.0f;
};
AbsMax find_absmax(int n, const float* x) {
  AbsMax m;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > m.magnitude) m = {x[i], ax};
  }
  return m;
}

inline int clamp_int(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// Weighted sums of one candidate scale of make_qx_quants (weights x^2).
struct QxSums {
  float sumlx = 0.0f;
  float suml2 = 0.0f;
};
QxSums qx_sums(int n, int nmax, const float* x, float iscale) {
  QxSums s;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    const float w = x[i] * x[i];
    s.sumlx += w * x[i] * static_cast<float>(l);
    s.suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  return s;
}

void qx_assign(int n, int nmax, const float* x, float iscale, int8_t* L) {
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<int8_t>(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
  }
}

}  // namespace

float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  const AbsMax am = find_absmax(n, x);
  if (am.magnitude < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  const float max = am.value;
  float iscale = static_cast<float>(-nmax) / max;
  qx_assign(n, nmax, x, iscale, L);
  QxSums s = qx_sums(n, nmax, x, iscale);
  float scale = s.suml2 != 0.0f ? s.sumlx / s.suml2 : 0.0f;
  float best = scale * s.sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    s = qx_sums(n, nmax, x, iscale);
    if (s.suml2 > 0 && s.sumlx * s.sumlx > best * s.suml2) {
      qx_assign(n, nmax, x, iscale, L);
      scale = s.sumlx / s.suml2;
      best = scale * s.sumlx;
    }
  }
  return scale;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  const AbsMax am = find_absmax(n, x);
  if (am.magnitude < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / am.value;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  // Coordinate descent: re-pick each quant for the best scale of the others.
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const auto li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (!(slx > 0)) continue;
      float sl2 = suml2 - w * li * li;
      const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (new_l == L[i]) continue;
      slx += w * x[i] * static_cast<float>(new_l);
      sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

namespace {

// Weighted error of reconstructing x as scale * L + min (min <= 0 here).
float affine_error(int n, const float* x, const float* weights, const uint8_t* L, float scale,
                   float min, bool use_mad) {
  float error = 0.0f;
  for (int i = 0; i < n; ++i) {
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    error += weights[i] * diff;
  }
  return error;
}

}  // namespace

AffineFit make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                           float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    return {0.0f, -min};
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
  }
  if (nstep < 1) return {scale, -min};
  float best_error = affine_error(n, x, weights, L, scale, min, use_mad);
  uint8_t candidate[kMaxSearchGroup];
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
      candidate[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const auto lf = static_cast<float>(l);
      sum_l += w * lf;
      sum_l2 += w * lf * lf;
      sum_xl += w * lf * x[i];
    }
    // Weighted least squares for x ~ this_scale * l + this_min.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float error = affine_error(n, x, weights, candidate, this_scale, this_min, use_mad);
    if (error < best_error) {
      std::copy(candidate, candidate + n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  return {scale, -min};
}

}  // namespace pagoda::quant
