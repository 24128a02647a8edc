// The CPU backend copies uploaded weights onto huge pages (backend/cpu/weight_copies.h)
// unless told to read them where they are mapped; a copy holds the same bytes and the
// matmuls read it.
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/weight_copies.h"
#include "test_util.h"

namespace pagoda::backend {
namespace {

using testing::Matrix;

TEST(WeightCopies, CopiesTheBytesUnlessOff) {
  const std::vector<float> weights = testing::random_values(1000, 7);
  const size_t bytes = weights.size() * sizeof(float);
  cpu::WeightCopies copies(/*enabled=*/true);
  const void* copy = copies.copy(weights.data(), bytes);
  ASSERT_NE(copy, nullptr);
  EXPECT_NE(copy, weights.data());
  EXPECT_EQ(std::memcmp(copy, weights.data(), bytes), 0);
  EXPECT_EQ(copies.bytes_copied(), bytes);
  EXPECT_EQ(copies.copy(nullptr, bytes), nullptr);

  cpu::WeightCopies off(/*enabled=*/false);
  EXPECT_EQ(off.copy(weights.data(), bytes), nullptr);
  EXPECT_EQ(off.bytes_copied(), 0u);
}

TEST(WeightCopies, TheBackendMultipliesItsCopy) {
  Matrix w(8, 32, 0, 1), x(2, 32, 0, 2), mapped_y(2, 8), copied_y(2, 8);
  const std::unique_ptr<Backend> mapped = make_cpu_backend({.n_threads = 1, .mmap_weights = true});
  const std::unique_ptr<Backend> copied = make_cpu_backend({.n_threads = 1});
  const Expected<TensorView> in_place = mapped->upload_weight(w.view());
  const Expected<TensorView> copy = copied->upload_weight(w.view());
  ASSERT_TRUE(in_place.ok() && copy.ok());
  EXPECT_EQ(in_place->data, w.view().data);
  EXPECT_NE(copy->data, w.view().data);
  mapped->matmul(*in_place, x.view(), mapped_y.view());
  copied->matmul(*copy, x.view(), copied_y.view());
  w.data.assign(w.data.size(), 0.0f);  // the copy no longer depends on the original
  copied->matmul(*copy, x.view(), copied_y.view());
  EXPECT_EQ(mapped_y.data, copied_y.data);
}

}  // namespace
}  // namespace pagoda::backend
