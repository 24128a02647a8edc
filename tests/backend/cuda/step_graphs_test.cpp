// Steps replayed as CUDA graphs (backend/cuda/step_graphs.h) against the same steps
// launched op by op: a decoding-like step (the token's embedding, a norm, q/k/v in one
// launch, rope, attention over a growing context, the SwiGLU pair, a residual add fused
// with the next norm, the head) run for many tokens on two backends, one with graphs and
// one without. The outputs must be bit for bit equal (a replay runs the same kernels with
// the same arguments), graphs must be captured and replayed, and a step of another
// shape must run op by op and still be right.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "cuda_test_util.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {
namespace {

constexpr int64_t kEmbd = 256, kHeads = 4, kKvHeads = 2, kHeadDim = 64, kFf = 512, kVocab = 300;

// One backend's model-like state: weights, scratch, a KV cache of one sequence.
struct Stepper {
  std::unique_ptr<Backend> gpu;
  std::unique_ptr<KvStorage> kv;
  TensorView embd, norm, wq, wk, wv, w_gate, w_up, w_down, head;
  DeviceTensor x, xb, q, k, v, att, gate, up, out, logits;
  std::vector<HostWeights> host;

  explicit Stepper(bool graphs) {
    CudaBackendOptions options;
    options.graphs = graphs;
    gpu = make_backend(options);
    if (gpu == nullptr) return;
    auto weights = [&](DType type, int64_t n_in, int64_t n_out, uint32_t seed) {
      host.push_back(make_weights(type, n_in, n_out, seed));
      Expected<TensorView> w = gpu->upload_weight(host.back().view());
      EXPECT_TRUE(w.ok());
      return w.ok() ? *w : TensorView{};
    };
    host.reserve(16);
    embd = weights(DType::Q8_0, kEmbd, kVocab, 1);
    norm = weights(DType::F32, kEmbd, 1, 2);
    wq = weights(DType::Q4_K, kEmbd, kHeads * kHeadDim, 3);
    wk = weights(DType::Q4_K, kEmbd, kKvHeads * kHeadDim, 4);
    wv = weights(DType::Q4_K, kEmbd, kKvHeads * kHeadDim, 5);
    w_gate = weights(DType::Q4_K, kEmbd, kFf, 6);
    w_up = weights(DType::Q4_K, kEmbd, kFf, 7);
    w_down = weights(DType::Q6_K, kFf, kEmbd, 8);
    head = weights(DType::Q8_0, kEmbd, kVocab, 9);
    x = allocate(*gpu, kEmbd, 1);
    xb = allocate(*gpu, kEmbd, 1);
    q = allocate(*gpu, kHeads * kHeadDim, 1);
    k = allocate(*gpu, kKvHeads * kHeadDim, 1);
    v = allocate(*gpu, kKvHeads * kHeadDim, 1);
    att = allocate(*gpu, kHeads * kHeadDim, 1);
    gate = allocate(*gpu, kFf, 1);
    up = allocate(*gpu, kFf, 1);
    out = allocate(*gpu, kEmbd, 1);
    logits = allocate(*gpu, kVocab, 1);
    KvCacheShape shape;
    shape.n_layers = 1;
    shape.n_kv_heads = kKvHeads;
    shape.head_dim = kHeadDim;
    shape.block_size = 16;
    shape.n_blocks = 64;
    shape.type = DType::F16;
    Expected<std::unique_ptr<KvStorage>> storage = gpu->allocate_kv(shape);
    EXPECT_TRUE(storage.ok());
    if (storage.ok()) kv = std::move(storage).value();
  }

  // Token `token` at position `pos` of the sequence; its logits.
  std::vector<float> step(int32_t token, int32_t pos) {
    const int32_t ids[] = {token};
    const int32_t positions[] = {pos};
    std::vector<int32_t> table;
    for (int32_t b = 0; b <= pos / 16; ++b) table.push_back(63 - b);  // blocks from the end: ids differ from slots
    const int64_t slots[] = {static_cast<int64_t>(table.back()) * 16 + pos % 16};
    const SequenceAttention seq{.query_start = 0, .n_query = 1, .n_context = pos + 1, .block_table = table};
    AttentionBatch batch;
    batch.block_size = 16;
    batch.sequences = std::span<const SequenceAttention>(&seq, 1);
    batch.slot_mapping = slots;
    gpu->get_rows(embd, ids, x.view);
    gpu->rms_norm(x.view, norm, 1e-5f, xb.view);
    const MatmulTarget qkv[] = {{wq, q.view}, {wk, k.view}, {wv, v.view}};
    gpu->matmuls(xb.view, qkv);
    const RopeParams rope{.n_dims = kHeadDim, .freq_base = 10000.0f};
    gpu->rope(split_rows_into_heads(q.view, kHeadDim), positions, rope);
    gpu->rope(split_rows_into_heads(k.view, kHeadDim), positions, rope);
    gpu->attention(split_rows_into_heads(q.view, kHeadDim), split_rows_into_heads(k.view, kHeadDim),
                   split_rows_into_heads(v.view, kHeadDim), *kv, 0, batch, 0.125f, att.view);
    gpu->matmul(wq, att.view, out.view);  // a square stand-in for the output projection
    gpu->add_rms_norm(x.view, out.view, norm, 1e-5f, xb.view);
    gpu->matmuls_swiglu(xb.view, w_gate, w_up, gate.view, up.view, gate.view);
    gpu->matmul(w_down, gate.view, out.view);
    gpu->add(x.view, out.view, x.view);
    gpu->matmul(head, x.view, logits.view);
    std::vector<float> result(kVocab);
    gpu->copy_to_host(logits.view, result.data());
    gpu->synchronize();
    EXPECT_TRUE(gpu->take_error().ok());
    return result;
  }
};

TEST(CudaStepGraphs, ReplayedStepsEqualStepsRunOpByOp) {
  PAGODA_SKIP_WITHOUT_CUDA();
  Stepper graphs(true), eager(false);
  ASSERT_NE(graphs.gpu, nullptr);
  ASSERT_NE(eager.gpu, nullptr);
  // 40 tokens: the block table grows past two blocks, the staged batch keeps its room.
  for (int32_t pos = 0; pos < 40; ++pos) {
    const int32_t token = (pos * 37 + 11) % kVocab;
    const std::vector<float> a = graphs.step(token, pos), b = eager.step(token, pos);
    ASSERT_EQ(a, b) << "position " << pos;
  }
  const CudaGraphCounts counts = cuda_graph_counts(*graphs.gpu);
  EXPECT_GE(counts.captured, 1u);
  EXPECT_GE(counts.replayed, 30u) << "captured " << counts.captured << ", op by op " << counts.one_by_one;
  EXPECT_EQ(cuda_graph_counts(*eager.gpu).replayed, 0u);
}

}  // namespace
}  // namespace pagoda::backend::cuda_testing
