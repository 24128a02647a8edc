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
  // Small weights share an arena, one after another (64-byte aligned); the arena is
  // what the budget is charged.
  EXPECT_EQ(copies.bytes_copied(), cpu::WeightCopies::kArenaBytes);
  const void* second = copies.copy(weights.data(), 100);
  EXPECT_EQ(static_cast<const std::byte*>(second), static_cast<const std::byte*>(copy) + 4032);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second) % 64, 0u);
  EXPECT_EQ(copies.bytes_copied(), cpu::WeightCopies::kArenaBytes);
  // A weight larger than half an arena gets memory of its own.
  const std::vector<std::byte> large(cpu::WeightCopies::kArenaBytes / 2 + 1, std::byte{7});
  const void* own = copies.copy(large.data(), large.size());
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(std::memcmp(own, large.data(), large.size()), 0);
  EXPECT_EQ(copies.bytes_copied(), cpu::WeightCopies::kArenaBytes + large.size());
  // The next small one still fits in the first arena.
  EXPECT_EQ(static_cast<const std::byte*>(copies.copy(weights.data(), 64)),
            static_cast<const std::byte*>(second) + 128);
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
  // What the start-up log says.
  EXPECT_EQ(copied->weight_placement(), "weights copied onto huge pages (32 MiB)");
  EXPECT_EQ(mapped->weight_placement(), "weights read where the file is mapped");
  EXPECT_EQ(make_cpu_backend({.n_threads = 1})->weight_placement(), "");
}

}  // namespace
}  // namespace pagoda::backend
