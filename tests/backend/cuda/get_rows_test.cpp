// CUDA get_rows for every weight type: each output row must equal quant::dequantize_row
// of the table row its id names bit for bit (dequantization is exact: products and sums
// of halves and small integers, computed with the host's operations in the host's order).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {
namespace {

// Ids in no order, with repeats, the first and last rows among them.
std::vector<int32_t> scrambled_ids(int64_t n_ids, int64_t n_rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(n_rows - 1));
  std::vector<int32_t> ids(static_cast<size_t>(n_ids));
  for (int32_t& id : ids) id = pick(rng);
  const size_t n = ids.size();
  if (n >= 6) {
    ids[0] = static_cast<int32_t>(n_rows - 1);
    ids[1] = 0;
    ids[2] = ids[5];                                   // a repeat
    ids[n - 1] = static_cast<int32_t>(n_rows - 1);      // the last row twice
  }
  return ids;
}

// Runs get_rows into an output poisoned with NaN ([ids][dim], rows dim + pad floats
// apart) and counts the values that differ from the host's in any bit; the padding must
// keep its NaN.
void expect_rows_equal(Backend& gpu, HostWeights& table, const std::vector<int32_t>& ids, int64_t pad) {
  const int64_t dim = table.n_in, n_ids = static_cast<int64_t>(ids.size());
  Expected<TensorView> device_table = gpu.upload_weight(table.view());
  ASSERT_TRUE(device_table.ok()) << device_table.status().message();
  DeviceTensor out = allocate(gpu, dim, n_ids, pad);
  ASSERT_NE(out.buffer, nullptr);
  gpu.get_rows(*device_table, ids, out.view);
  gpu.synchronize();
  const Status status = gpu.take_error();
  ASSERT_TRUE(status.ok()) << status.message();

  const std::vector<float> whole = download_whole(gpu, out);
  int64_t n_bad = 0;
  std::ostringstream first_bad;
  for (int64_t i = 0; i < n_ids; ++i) {
    const std::vector<float> want = table.dequantized_row(ids[static_cast<size_t>(i)]);
    for (int64_t c = 0; c < out.stride; ++c) {
      const float got = whole[static_cast<size_t>(i * out.stride + c)];
      const bool ok = c < dim ? std::memcmp(&got, &want[static_cast<size_t>(c)], sizeof(float)) == 0 : std::isnan(got);
      if (!ok && n_bad++ == 0) {
        first_bad << "out[" << i << "][" << c << "] (id " << ids[static_cast<size_t>(i)] << ") = " << got
                  << ", want " << (c < dim ? want[static_cast<size_t>(c)] : kPoison);
      }
    }
  }
  EXPECT_EQ(n_bad, 0) << dtype_name(table.type) << " [" << table.n_out << "][" << dim << "], pad " << pad
                      << ": first difference " << first_bad.str();
}

class CudaGetRowsTest : public ::testing::TestWithParam<DType> {};

// An embedding table like a 1B Llama's rows (2048 values) read by a 600-token prompt,
// and a small table read into rows padded to a stride no 16-byte store fits.
TEST_P(CudaGetRowsTest, EqualsHostDequantizationBitForBit) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  const DType type = GetParam();

  HostWeights embedding = make_weights(type, 2048, 1000, 11);
  expect_rows_equal(*gpu, embedding, scrambled_ids(600, embedding.n_out, 12), 0);

  HostWeights small = make_weights(type, 512, 37, 13);
  expect_rows_equal(*gpu, small, scrambled_ids(40, small.n_out, 14), 0);
  expect_rows_equal(*gpu, small, scrambled_ids(9, small.n_out, 15), 3);
}

// Rows whose length is no multiple of 32 (the plain types only: every block format has
// 32 or 256 values per block): the kernels' last, partial chunk.
TEST_P(CudaGetRowsTest, RowsOfAnyLengthForPlainTypes) {
  PAGODA_SKIP_WITHOUT_CUDA();
  const DType type = GetParam();
  if (!is_plain_type(type)) GTEST_SKIP() << "block formats have whole blocks of 32 or 256 values";
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  HostWeights table = make_weights(type, 100, 23, 16);
  expect_rows_equal(*gpu, table, scrambled_ids(30, table.n_out, 17), 0);
  expect_rows_equal(*gpu, table, scrambled_ids(7, table.n_out, 18), 5);
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, CudaGetRowsTest, ::testing::ValuesIn(kWeightTypes), type_test_name);

// backend.h: an index out of range is an error that take_error reports.
TEST(CudaGetRows, IdOutsideTheTableIsAnError) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  HostWeights table = make_weights(DType::Q8_0, 64, 10, 19);
  Expected<TensorView> device_table = gpu->upload_weight(table.view());
  ASSERT_TRUE(device_table.ok()) << device_table.status().message();
  DeviceTensor out = allocate(*gpu, 64, 2);
  const std::vector<int32_t> ids = {3, 10};
  gpu->get_rows(*device_table, ids, out.view);
  gpu->synchronize();
  EXPECT_FALSE(gpu->take_error().ok());
}

}  // namespace
}  // namespace pagoda::backend::cuda_testing
