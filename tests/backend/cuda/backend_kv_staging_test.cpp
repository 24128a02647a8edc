// The CUDA backend's KV cache (layout, block copies) and its staging of host inputs:
// reuse of a staged input only while its contents are unchanged, a full staging arena
// as an error, and the attention batch's host checks (nothing launched on a bad batch).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "cuda_test_util.h"

namespace pagoda::backend {
namespace {

using cuda_testing::random_bytes;

// Every array of the cache (layer l's K at 2l, V at 2l + 1) as host bytes.
std::vector<std::vector<uint8_t>> read_arrays(Backend& backend, KvStorage& kv) {
  std::vector<std::vector<uint8_t>> arrays;
  for (int32_t layer = 0; layer < kv.shape().n_layers; ++layer) {
    for (const TensorView& view : {kv.keys(layer), kv.values(layer)}) {
      std::vector<uint8_t> bytes(view.row_bytes() * static_cast<size_t>(view.n_rows()), 0xCD);
      backend.copy_to_host(view, bytes.data());
      arrays.push_back(std::move(bytes));
    }
  }
  backend.synchronize();
  return arrays;
}

TEST(CudaBackendKv, BlockCopiesRunInOrderAndCheckIdsFirst) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> backend = cuda_testing::make_backend();
  ASSERT_NE(backend, nullptr);
  const KvCacheShape shape{.n_layers = 2, .n_kv_heads = 2, .head_dim = 32, .block_size = 4, .n_blocks = 5,
                           .type = DType::F16};
  Expected<std::unique_ptr<KvStorage>> kv = backend->allocate_kv(shape);
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  const TensorView keys0 = (*kv)->keys(0);
  EXPECT_EQ(keys0.ne[0], 64);
  EXPECT_EQ(keys0.ne[1], 20);
  // A new cache reads as zeros; then random bytes everywhere.
  std::vector<std::vector<uint8_t>> expected = read_arrays(*backend, **kv);
  ASSERT_EQ(expected.size(), 4u);
  for (const std::vector<uint8_t>& array : expected) {
    for (uint8_t b : array) ASSERT_EQ(b, 0);
  }
  for (size_t a = 0; a < expected.size(); ++a) {
    expected[a] = random_bytes(expected[a].size(), static_cast<uint32_t>(10 + a));
    const TensorView view = a % 2 == 0 ? (*kv)->keys(static_cast<int32_t>(a / 2)) : (*kv)->values(static_cast<int32_t>(a / 2));
    backend->copy_from_host(expected[a].data(), view);
  }
  // 2 <- 1, then 3 <- 2 (reads what the first wrote), 4 <- 4 (nothing), 1 <- 0.
  const std::vector<KvBlockCopy> copies = {{1, 2}, {2, 3}, {4, 4}, {0, 1}};
  backend->copy_kv_blocks(**kv, copies);
  const size_t block_bytes = shape.token_bytes() * static_cast<size_t>(shape.block_size);
  for (std::vector<uint8_t>& array : expected) {
    for (const KvBlockCopy& c : copies) {
      std::memmove(array.data() + static_cast<size_t>(c.dst) * block_bytes,
                   array.data() + static_cast<size_t>(c.src) * block_bytes, block_bytes);
    }
  }
  ASSERT_TRUE(backend->take_error().ok());
  EXPECT_EQ(read_arrays(*backend, **kv), expected);
  ASSERT_TRUE(backend->take_error().ok());

  // One id outside the cache: an error, and not even the valid copy before it runs.
  const std::vector<KvBlockCopy> bad = {{0, 3}, {5, 0}};
  backend->copy_kv_blocks(**kv, bad);
  const Status error = backend->take_error();
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(read_arrays(*backend, **kv), expected);
}

// An f32 table [n_rows][dim] in device memory and its host copy.
struct Table {
  std::unique_ptr<Buffer> buffer;
  TensorView view;
  std::vector<float> host;
};

Table make_table(Backend& backend, int64_t dim, int64_t n_rows) {
  Table t;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  t.host.resize(static_cast<size_t>(dim * n_rows));
  for (float& x : t.host) x = dist(rng);
  Expected<std::unique_ptr<Buffer>> buffer = backend.allocate(t.host.size() * sizeof(float));
  EXPECT_TRUE(buffer.ok());
  if (!buffer.ok()) return t;
  t.buffer = std::move(buffer).value();
  t.view = make_view(t.buffer->data(), DType::F32, dim, n_rows);
  backend.copy_from_host(t.host.data(), t.view);
  return t;
}

TEST(CudaBackendStaging, ReusesAStagedInputOnlyWhileItsContentsAreTheSame) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> backend = cuda_testing::make_backend();
  ASSERT_NE(backend, nullptr);
  const int64_t dim = 16, n_rows = 50, n_ids = 6;
  Table table = make_table(*backend, dim, n_rows);
  ASSERT_NE(table.buffer, nullptr);
  Table out = make_table(*backend, dim, 3 * n_ids);  // three outputs of n_ids rows
  ASSERT_NE(out.buffer, nullptr);
  std::vector<int32_t> ids = {3, 0, 49, 17, 3, 8};
  const std::vector<int32_t> first = ids;
  const auto rows = [&](int64_t i) {
    TensorView v = out.view;
    v.data = static_cast<float*>(out.view.data) + i * n_ids * dim;
    v.ne[1] = n_ids;
    v.nb[2] = v.nb[3] = v.nb[1] * static_cast<size_t>(n_ids);
    return v;
  };
  const int64_t allocations = cuda_allocation_count();
  backend->get_rows(table.view, ids, rows(0));
  backend->get_rows(table.view, ids, rows(1));  // same pointer and contents: the staged copy
  for (int32_t& id : ids) id = (id * 7 + 1) % static_cast<int32_t>(n_rows);
  backend->get_rows(table.view, ids, rows(2));  // same pointer, new contents: staged again
  std::vector<float> got(out.host.size(), std::numeric_limits<float>::quiet_NaN());
  backend->copy_to_host(out.view, got.data());
  backend->synchronize();
  ASSERT_TRUE(backend->take_error().ok());
  EXPECT_EQ(cuda_allocation_count(), allocations);
  const std::vector<int32_t>* used[3] = {&first, &first, &ids};
  for (int64_t o = 0; o < 3; ++o) {
    for (int64_t i = 0; i < n_ids; ++i) {
      for (int64_t c = 0; c < dim; ++c) {
        const float want = table.host[static_cast<size_t>((*used[o])[static_cast<size_t>(i)] * dim + c)];
        EXPECT_EQ(got[static_cast<size_t>((o * n_ids + i) * dim + c)], want) << o << "," << i << "," << c;
      }
    }
  }
}

TEST(CudaBackendStaging, AFullStagingAreaIsAnErrorUntilTheNextStep) {
  PAGODA_SKIP_WITHOUT_CUDA();
  CudaBackendOptions options;
  options.staging_bytes = 4096;
  std::unique_ptr<Backend> backend = cuda_testing::make_backend(options);
  ASSERT_NE(backend, nullptr);
  Table table = make_table(*backend, 4, 10);
  Table out = make_table(*backend, 4, 2000);
  ASSERT_NE(out.buffer, nullptr);
  const std::vector<int32_t> many(2000, 1);  // 8000 bytes: more than the 4096 staged
  backend->get_rows(table.view, many, out.view);
  EXPECT_EQ(backend->take_error().code(), ErrorCode::kResourceExhausted);
  backend->synchronize();
  const std::vector<int32_t> few = {9, 2};
  TensorView two = out.view;
  two.ne[1] = 2;
  two.nb[2] = two.nb[3] = two.nb[1] * 2;
  backend->get_rows(table.view, few, two);
  std::vector<float> got(8, std::numeric_limits<float>::quiet_NaN());
  backend->copy_to_host(two, got.data());
  backend->synchronize();
  ASSERT_TRUE(backend->take_error().ok());
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(got[static_cast<size_t>(c)], table.host[static_cast<size_t>(9 * 4 + c)]);
    EXPECT_EQ(got[static_cast<size_t>(4 + c)], table.host[static_cast<size_t>(2 * 4 + c)]);
  }
}

// A cache of 4 blocks of 4 tokens, one layer of 2 KV heads of 32; 3 batch rows, 4 heads.
struct AttentionSetup {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<KvStorage> kv;
  Table q, k, v, out;
  TensorView q_heads, k_heads, v_heads;
};

bool set_up(AttentionSetup& s) {
  s.backend = cuda_testing::make_backend();
  if (s.backend == nullptr) return false;
  Expected<std::unique_ptr<KvStorage>> kv = s.backend->allocate_kv(
      {.n_layers = 1, .n_kv_heads = 2, .head_dim = 32, .block_size = 4, .n_blocks = 4, .type = DType::F16});
  if (!kv.ok()) return false;
  s.kv = std::move(kv).value();
  s.q = make_table(*s.backend, 4 * 32, 3);
  s.k = make_table(*s.backend, 2 * 32, 3);
  s.v = make_table(*s.backend, 2 * 32, 3);
  s.out = make_table(*s.backend, 4 * 32, 3);
  s.q_heads = split_rows_into_heads(s.q.view, 32);
  s.k_heads = split_rows_into_heads(s.k.view, 32);
  s.v_heads = split_rows_into_heads(s.v.view, 32);
  return s.out.buffer != nullptr;
}

// Runs attention over a batch the backend must refuse: the error names `what`, and
// neither the output nor the cache was touched.
void expect_refused(AttentionSetup& s, const AttentionBatch& batch, const std::string& what) {
  const std::vector<uint8_t> cache_before = [&] {
    std::vector<uint8_t> bytes(s.kv->keys(0).row_bytes() * 16);
    s.backend->copy_to_host(s.kv->keys(0), bytes.data());
    return bytes;
  }();
  s.backend->attention(s.q_heads, s.k_heads, s.v_heads, *s.kv, 0, batch, 0.125f, s.out.view);
  const Status error = s.backend->take_error();
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << what;
  EXPECT_NE(error.message().find(what), std::string::npos) << error.message();
  std::vector<float> out(s.out.host.size());
  std::vector<uint8_t> cache(cache_before.size());
  s.backend->copy_to_host(s.out.view, out.data());
  s.backend->copy_to_host(s.kv->keys(0), cache.data());
  s.backend->synchronize();
  EXPECT_TRUE(s.backend->take_error().ok());
  EXPECT_EQ(out, s.out.host) << what;
  EXPECT_EQ(cache, cache_before) << what;
}

TEST(CudaBackendStaging, RefusesAnInvalidAttentionBatchWithoutLaunching) {
  PAGODA_SKIP_WITHOUT_CUDA();
  AttentionSetup s;
  ASSERT_TRUE(set_up(s));
  // Valid: sequence 0 has rows [0, 2) with 5 tokens of context in blocks {2, 0};
  // sequence 1 has row 2, 1 token of context in block {3}.
  const std::vector<int32_t> table0 = {2, 0}, table1 = {3};
  const std::vector<int64_t> slots = {2 * 4 + 3, 0 * 4 + 0, 3 * 4 + 0};
  std::vector<SequenceAttention> seqs = {{0, 2, 5, table0}, {2, 1, 1, table1}};
  const auto batch = [&](std::span<const int64_t> slot_mapping) {
    return AttentionBatch{seqs, slot_mapping, 4};
  };
  const std::vector<int64_t> slot_outside = {8 + 3, 0, 16};
  expect_refused(s, batch(slot_outside), "KV slot 16");
  const std::vector<int32_t> table_outside = {2, 4};
  seqs[0].block_table = table_outside;
  expect_refused(s, batch(slots), "block id 4");
  seqs[0].block_table = table1;  // 1 block for 5 tokens
  expect_refused(s, batch(slots), "block table");
  seqs[0].block_table = table0;
  seqs[1].query_start = 1;  // row 1 in both sequences, row 2 in none
  expect_refused(s, batch(slots), "batch row 1");
  seqs[1].query_start = 2;
  seqs[1].n_query = 0;  // row 2 in no sequence
  expect_refused(s, batch(slots), "batch row 2");
  seqs[1].n_query = 2;  // rows [2, 4) of a 3-row batch
  expect_refused(s, batch(slots), "outside the batch");
  seqs[1].n_query = 1;
  seqs[1].n_context = 0;  // fewer tokens of context than new ones
  expect_refused(s, batch(slots), "context");
  seqs[1].n_context = 1;
  expect_refused(s, AttentionBatch{seqs, slots, 8}, "block size");
  const std::vector<int64_t> two_slots = {11, 0};
  expect_refused(s, batch(two_slots), "one KV slot per token");
}

}  // namespace
}  // namespace pagoda::backend
