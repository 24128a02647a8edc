// The kernels that claim the reference's f32 rounding (CpuNumerics::kReference), against scalar models of the
// reference's arithmetic (bit for bit): Q8_0 and Q4_1 pairs (one 8-lane accumulator per
// row and token, lanes added ((0+4)+(2+6))+((1+5)+(3+7)); Q4_1's m * s fused into a
// scalar sum added last), Q4_0 strips (one FMA per block per
// row), Q4_K strips (one FMA per super-block per row, the reference's single-token
// kernel, for every batch size; minimums accumulated apart and subtracted at the end).

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dot_scales.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

using testing::Matrix;
using testing::random_values;

struct Case {
  std::vector<std::byte> w, a;  // weight rows, quantized activation rows
  int64_t n_in, n_out, n_tokens;
  std::vector<float> y;  // [n_tokens][n_out] from the kernel
};

Case run_case(DType type, int64_t n_in, int64_t n_out, int64_t n_tokens) {
  if (find_tile_kernel(type, quant::best_isa(), CpuNumerics::kReference) == nullptr) return {};
  Case c{std::vector<std::byte>(size_t(row_bytes(type, n_in) * n_out)), {}, n_in, n_out, n_tokens,
         std::vector<float>(size_t(n_out * n_tokens))};
  const std::vector<float> wf = random_values(size_t(n_in * n_out), 21, 0.3f);
  for (int64_t r = 0; r < n_out; ++r) {
    EXPECT_TRUE(quant::quantize_row(type, &wf[size_t(r * n_in)], c.w.data() + r * row_bytes(type, n_in), n_in).ok());
  }
  Matrix x(n_tokens, n_in, 0, 22, 2.0f);
  const quant::DotKernel* k = quant::dot_kernel(type);
  const size_t a_row = size_t(row_bytes(k->activation, n_in));
  c.a.resize(a_row * size_t(n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) k->quantize(&x.data[size_t(t * n_in)], c.a.data() + t * a_row, n_in);
  ThreadPool pool(2);
  Matmul matmul(quant::best_isa(), CpuNumerics::kReference);
  Matrix y(n_tokens, n_out);
  EXPECT_TRUE(matmul.run(pool, make_view(c.w.data(), type, n_in, n_out), x.view(), y.view(), MatmulSchedule::kTiled).ok());
  c.y = y.data;
  return c;
}

float lanes_sum(const float l[8]) { return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])); }

TEST(MatmulRounding, Q8_0PairsAreTheReferencesDotProducts) {
  const Case c = run_case(DType::Q8_0, 256, 13, 6);
  if (c.y.empty()) GTEST_SKIP() << "no Q8_0 kernel on " << isa_name(quant::best_isa());
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    const auto* a = reinterpret_cast<const quant::BlockQ8_0*>(c.a.data() + t * row_bytes(DType::Q8_0, c.n_in));
    for (int64_t r = 0; r < c.n_out; ++r) {
      const auto* w = reinterpret_cast<const quant::BlockQ8_0*>(c.w.data() + r * row_bytes(DType::Q8_0, c.n_in));
      float lanes[8] = {};
      for (int64_t b = 0; b < c.n_in / 32; ++b) {
        const float scale = fp16_to_f32(w[b].d) * fp16_to_f32(a[b].d);
        for (int l = 0; l < 8; ++l) {
          int sum = 0;
          for (int i = 4 * l; i < 4 * l + 4; ++i) sum += w[b].qs[i] * a[b].qs[i];
          lanes[l] = std::fma(scale, static_cast<float>(sum), lanes[l]);
        }
      }
      ASSERT_EQ(c.y[size_t(t * c.n_out + r)], lanes_sum(lanes)) << "token " << t << " row " << r;
    }
  }
}

TEST(MatmulRounding, Q4_1PairsAddTheMinimumsApart) {
  const Case c = run_case(DType::Q4_1, 256, 11, 5);
  if (c.y.empty()) GTEST_SKIP() << "no Q4_1 kernel on " << isa_name(quant::best_isa());
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    const auto* a = reinterpret_cast<const quant::BlockQ8_1*>(c.a.data() + t * row_bytes(DType::Q8_1, c.n_in));
    for (int64_t r = 0; r < c.n_out; ++r) {
      const auto* w = reinterpret_cast<const quant::BlockQ4_1*>(c.w.data() + r * row_bytes(DType::Q4_1, c.n_in));
      float lanes[8] = {}, mins = 0.0f;
      for (int64_t b = 0; b < c.n_in / 32; ++b) {
        const float scale = fp16_to_f32(w[b].d) * fp16_to_f32(a[b].d);
        for (int l = 0; l < 8; ++l) {
          int sum = 0;
          for (int i = 4 * l; i < 4 * l + 4; ++i) {
            const int q = i < 16 ? (w[b].qs[i] & 0x0f) : (w[b].qs[i - 16] >> 4);
            sum += q * a[b].qs[i];
          }
          lanes[l] = std::fma(scale, static_cast<float>(sum), lanes[l]);
        }
        mins = std::fma(fp16_to_f32(w[b].m), fp16_to_f32(a[b].s), mins);
      }
      ASSERT_EQ(c.y[size_t(t * c.n_out + r)], lanes_sum(lanes) + mins) << "token " << t << " row " << r;
    }
  }
}

TEST(MatmulRounding, Q4_0StripsFuseOneBlockAtATime) {
  const Case c = run_case(DType::Q4_0, 512, 21, 7);
  if (c.y.empty()) GTEST_SKIP() << "no Q4_0 kernel on " << isa_name(quant::best_isa());
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    const auto* a = reinterpret_cast<const quant::BlockQ8_0*>(c.a.data() + t * row_bytes(DType::Q8_0, c.n_in));
    for (int64_t r = 0; r < c.n_out; ++r) {
      const auto* w = reinterpret_cast<const quant::BlockQ4_0*>(c.w.data() + r * row_bytes(DType::Q4_0, c.n_in));
      float acc = 0.0f;
      for (int64_t b = 0; b < c.n_in / 32; ++b) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) {
          sum += ((w[b].qs[i] & 0x0f) - 8) * a[b].qs[i] + ((w[b].qs[i] >> 4) - 8) * a[b].qs[i + 16];
        }
        acc = std::fma(static_cast<float>(sum), fp16_to_f32(w[b].d) * fp16_to_f32(a[b].d), acc);
      }
      ASSERT_EQ(c.y[size_t(t * c.n_out + r)], acc) << "token " << t << " row " << r;
    }
  }
}

// Q4_K: the integer dot of sub-block s of a row with the activations, times its scale.
int q4_K_sub_block(const quant::BlockQ4_K& w, const quant::BlockQ8_K& a, int s, int scale) {
  int sum = 0;
  for (int l = 0; l < 32; ++l) sum += ((w.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0f) * a.qs[32 * s + l];
  return scale * sum;
}

TEST(MatmulRounding, Q4_KStripsFuseOneSuperBlockAtATime) {
  const Case c = run_case(DType::Q4_K, 512, 16, 7);  // tokens 0..3 from a repacked strip, 4..6 not
  if (c.y.empty()) GTEST_SKIP() << "no Q4_K kernel on " << isa_name(quant::best_isa());
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    const auto* a = reinterpret_cast<const quant::BlockQ8_K*>(c.a.data() + t * row_bytes(DType::Q8_K, c.n_in));
    for (int64_t r = 0; r < c.n_out; ++r) {
      const auto* w = reinterpret_cast<const quant::BlockQ4_K*>(c.w.data() + r * row_bytes(DType::Q4_K, c.n_in));
      float acc = 0.0f, acc_min = 0.0f;
      for (int64_t b = 0; b < c.n_in / 256; ++b) {
        uint32_t packed[4];
        quant::dot_scales::unpack_q4_K(w[b].scales, packed);
        const uint8_t* sm = reinterpret_cast<const uint8_t*>(packed);
        const float d = fp16_to_f32(w[b].d) * a[b].d, dmin = fp16_to_f32(w[b].dmin) * a[b].d;
        int sum = 0, mins = 0;
        for (int p = 0; p < 4; ++p) {
          for (int s = 2 * p; s < 2 * p + 2; ++s) {
            sum += q4_K_sub_block(w[b], a[b], s, sm[s]);
            mins += sm[8 + s] * (a[b].bsums[2 * s] + a[b].bsums[2 * s + 1]);
          }
          if (p == 3) {
            acc = std::fma(static_cast<float>(sum), d, acc);
            acc_min = std::fma(static_cast<float>(mins), dmin, acc_min);
            sum = mins = 0;
          }
        }
      }
      ASSERT_EQ(c.y[size_t(t * c.n_out + r)], acc - acc_min) << "token " << t << " row " << r;
    }
  }
}

}  // namespace
}  // namespace pagoda::backend::cpu
