// The CUDA backend's ops: each checks its inputs on the host, stages its host inputs and
// records its launch with the key of everything the launch depends on (step_graphs.h),
// or launches it at once where the backend runs op by op.

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend_class.h"
#include "backend/cuda/kv_storage_cuda.h"
#include "backend/cuda/ops.h"
#include "backend/logprobs_view.h"

namespace pagoda::backend::cuda {

template <typename Launch, typename Name>
void CudaBackend::run_op(const LaunchKey& key, Launch&& launch, Name&& name) {
  if (!ready()) return;
  if (graphs_enabled_) {
    graphs_.record(key, std::forward<Launch>(launch));
    return;
  }
  note(staging_.upload());
  profile_.begin(stream_.stream);
  note(launch());
  if (profile_.enabled()) profile_.end(stream_.stream, name());
}

std::string CudaBackend::matmuls_name(const TensorView& x, std::span<const MatmulTarget> targets) {
  std::string name = "matmul ";
  if (targets.empty()) return name;
  name += dtype_name(targets[0].w.type);
  name += " " + std::to_string(targets[0].w.ne[0]) + "->";
  for (size_t i = 0; i < targets.size(); ++i) {
    if (i > 0) name += "+";
    name += std::to_string(targets[i].w.ne[1]);
  }
  return name + " n=" + std::to_string(x.n_rows());
}

void CudaBackend::get_rows(const TensorView& table, std::span<const int32_t> ids,
                           const TensorView& out) {
  if (!ready()) return;
  // The kernels trust the ids: an id outside the table is refused here, on the host.
  for (const int32_t id : ids) {
    if (id < 0 || id >= table.n_rows()) {
      return note(invalid_argument("get_rows: id " + std::to_string(id) +
                                   " is outside the table's " + std::to_string(table.n_rows()) +
                                   " rows"));
    }
  }
  Expected<const int32_t*> staged = staging_.stage(ids);
  if (!staged.ok()) return note(staged.status());
  const int32_t* device_ids = *staged;
  const auto n_ids = static_cast<int64_t>(ids.size());
  run_op(
      LaunchKey(kGetRows).add(table).add(device_ids).add(n_ids).add(out),
      [=, this] { return cuda::get_rows(ctx_, table, device_ids, n_ids, out); },
      [] { return std::string("get_rows"); });
}

void CudaBackend::matmul(const TensorView& w, const TensorView& x, const TensorView& y) {
  run_op(
      LaunchKey(kMatmul).add(w).add(x).add(y), [=, this] { return cuda::matmul(ctx_, w, x, y); },
      [&] {
        const MatmulTarget target{w, y};
        return matmuls_name(x, std::span<const MatmulTarget>(&target, 1));
      });
}

void CudaBackend::matmuls(const TensorView& x, std::span<const MatmulTarget> targets) {
  LaunchKey key(kMatmuls);
  key.add(x);
  for (const MatmulTarget& t : targets) key.add(t.w).add(t.y);
  run_op(
      key,
      [=, this, copies = std::vector<MatmulTarget>(targets.begin(), targets.end())] {
        return cuda::matmuls(ctx_, x, copies);
      },
      [&] { return matmuls_name(x, targets); });
}

void CudaBackend::matmuls_swiglu(const TensorView& x, const TensorView& w_gate,
                                 const TensorView& w_up, const TensorView& gate,
                                 const TensorView& up, const TensorView& out) {
  run_op(
      LaunchKey(kMatmulsSwiGlu).add(x).add(w_gate).add(w_up).add(gate).add(up).add(out),
      [=, this] { return cuda::matmuls_swiglu(ctx_, x, w_gate, w_up, gate, up, out); },
      [&] {
        const MatmulTarget pair[] = {{w_gate, gate}, {w_up, up}};
        return matmuls_name(x, pair) + " swiglu";
      });
}

void CudaBackend::add_bias(const TensorView& y, const TensorView& bias) {
  run_op(
      LaunchKey(kAddBias).add(y).add(bias), [=, this] { return cuda::add_bias(ctx_, y, bias); },
      [] { return std::string("add_bias"); });
}

void CudaBackend::add(const TensorView& a, const TensorView& b, const TensorView& out) {
  run_op(
      LaunchKey(kAdd).add(a).add(b).add(out), [=, this] { return cuda::add(ctx_, a, b, out); },
      [] { return std::string("add"); });
}

void CudaBackend::rms_norm(const TensorView& x, const TensorView& weight, float eps,
                           const TensorView& y) {
  run_op(
      LaunchKey(kRmsNorm).add(x).add(weight).add(eps).add(y),
      [=, this] { return cuda::rms_norm(ctx_, x, weight, eps, y); },
      [] { return std::string("rms_norm"); });
}

void CudaBackend::add_rms_norm(const TensorView& x, const TensorView& delta,
                               const TensorView& weight, float eps, const TensorView& y) {
  run_op(
      LaunchKey(kAddRmsNorm).add(x).add(delta).add(weight).add(eps).add(y),
      [=, this] { return cuda::add_rms_norm(ctx_, x, delta, weight, eps, y); },
      [] { return std::string("add_rms_norm"); });
}

void CudaBackend::layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias,
                             float eps, const TensorView& y) {
  run_op(
      LaunchKey(kLayerNorm).add(x).add(weight).add(bias).add(eps).add(y),
      [=, this] { return cuda::layer_norm(ctx_, x, weight, bias, eps, y); },
      [] { return std::string("layer_norm"); });
}

void CudaBackend::silu_mul(const TensorView& gate, const TensorView& up, const TensorView& out) {
  run_op(
      LaunchKey(kSiluMul).add(gate).add(up).add(out),
      [=, this] { return cuda::silu_mul(ctx_, gate, up, out); },
      [] { return std::string("silu_mul"); });
}

void CudaBackend::gelu(const TensorView& x) {
  run_op(
      LaunchKey(kGelu).add(x), [=, this] { return cuda::gelu(ctx_, x); },
      [] { return std::string("gelu"); });
}

void CudaBackend::argmax_rows(const TensorView& x, const TensorView& ids) {
  run_op(
      LaunchKey(kArgmaxRows).add(x).add(ids), [=, this] { return cuda::argmax_rows(ctx_, x, ids); },
      [] { return std::string("argmax_rows"); });
}

void CudaBackend::sample_rows(const TensorView& x, std::span<const RowSampling> rows,
                              std::span<const LogitAdjustment> adjustments, const TensorView& ids,
                              const TensorView& logprobs) {
  if (!ready()) return;
  if (static_cast<int64_t>(rows.size()) != x.n_rows()) {
    return note(invalid_argument("sample_rows: needs one sampling per row (" + std::to_string(rows.size()) + " for " +
                                 std::to_string(x.n_rows()) + " rows)"));
  }
  if (Status checked = check_row_samplings(rows, adjustments, x.ne[0]); !checked.ok()) return note(std::move(checked));
  if (Status checked = check_logprobs_view(rows, logprobs); !checked.ok()) return note(std::move(checked));
  Expected<const RowSampling*> staged_rows = staging_.stage(rows);
  if (!staged_rows.ok()) return note(staged_rows.status());
  Expected<const LogitAdjustment*> staged_adjustments = staging_.stage(adjustments);
  if (!staged_adjustments.ok()) return note(staged_adjustments.status());
  const RowSampling* device_rows = *staged_rows;
  const LogitAdjustment* device_adjustments = *staged_adjustments;
  const bool any_adjustment =
      std::any_of(rows.begin(), rows.end(), [](const RowSampling& r) { return r.n_adjustments > 0; });
  const bool any_logprobs = std::any_of(rows.begin(), rows.end(), [](const RowSampling& r) { return r.logprobs; });
  auto* reports = any_logprobs ? static_cast<RowLogprobs*>(logprobs.data) : nullptr;
  run_op(
      LaunchKey(kSampleRows).add(x).add(device_rows).add(device_adjustments).add(any_adjustment).add(ids).add(reports),
      [=, this] { return cuda::sample_rows(ctx_, x, device_rows, device_adjustments, any_adjustment, ids, reports); },
      [] { return std::string("sample_rows"); });
}

// The positions staged after the checks rope needs on the host (one per token), or
// null with the error noted.
const int32_t* CudaBackend::stage_positions(int64_t n_tokens, std::span<const int32_t> positions) {
  if (static_cast<int64_t>(positions.size()) != n_tokens) {
    note(invalid_argument("rope: needs one position per token (" + std::to_string(positions.size()) + " for " +
                          std::to_string(n_tokens) + " tokens)"));
    return nullptr;
  }
  Expected<const int32_t*> staged = staging_.stage(positions);
  if (!staged.ok()) {
    note(staged.status());
    return nullptr;
  }
  return *staged;
}

LaunchKey CudaBackend::rope_key(uint64_t op, const int32_t* positions, const RopeParams& params) {
  LaunchKey key(op);
  key.add(positions).add(params.n_dims).add(params.freq_base).add(params.freq_scale);
  key.add(params.neox).add(static_cast<const void*>(params.freq_factors));
  return key;
}

void CudaBackend::rope(const TensorView& x, std::span<const int32_t> positions, const RopeParams& params) {
  if (!ready()) return;
  const int32_t* device_positions = stage_positions(x.ne[2] * x.ne[3], positions);
  if (device_positions == nullptr) return;
  LaunchKey key = rope_key(kRope, device_positions, params);
  key.add(x);
  run_op(key, [=, this] { return cuda::rope(ctx_, x, device_positions, params); }, [] { return std::string("rope"); });
}

void CudaBackend::rope_pair(const TensorView& a, const TensorView& b, std::span<const int32_t> positions,
                            const RopeParams& params) {
  if (!ready()) return;
  const int32_t* device_positions = stage_positions(a.ne[2] * a.ne[3], positions);
  if (device_positions == nullptr) return;
  LaunchKey key = rope_key(kRopePair, device_positions, params);
  key.add(a).add(b);
  run_op(key, [=, this] { return cuda::rope_pair(ctx_, a, b, device_positions, params); },
         [] { return std::string("rope"); });
}

void CudaBackend::attention(const TensorView& q, const TensorView& k, const TensorView& v,
                            KvStorage& kv, int32_t layer, const AttentionBatch& batch, float scale,
                            const TensorView& out) {
  if (!ready()) return;
  auto* storage = dynamic_cast<CudaKvStorage*>(&kv);
  if (storage == nullptr)
    return note(invalid_argument("cuda: attention needs a KV cache of this backend"));
  const KvCacheShape& shape = storage->shape();
  if (layer < 0 || layer >= shape.n_layers) {
    return note(invalid_argument("attention: layer " + std::to_string(layer) +
                                 " outside the cache's " + std::to_string(shape.n_layers)));
  }
  if (q.ne[3] != 1 || q.ne[0] != shape.head_dim) {
    return note(invalid_argument("attention: q must be a head view [n][n_heads][" +
                                 std::to_string(shape.head_dim) + "], the cache's head size"));
  }
  Expected<DeviceAttentionBatch> staged = staging_.stage_attention(batch, shape, q.ne[2]);
  if (!staged.ok()) return note(staged.status());
  const DeviceAttentionBatch b = *staged;
  const KvLayer views{storage->keys(layer), storage->values(layer)};
  LaunchKey key(kAttention);
  key.add(q).add(k).add(v).add(views.k).add(views.v).add(scale).add(out);
  key.add(b.sequences).add(b.block_tables).add(b.slot_mapping).add(b.row_sequence);
  key.add(b.n_sequences)
      .add(b.n_tokens)
      .add(b.block_size)
      .add(b.max_n_query)
      .add(cuda::attention_splits(b));
  // The profile keeps steps with prompt rows apart: their attention is another kernel
  // shape (row groups) and another cost.
  run_op(
      key, [=, this] { return cuda::attention(ctx_, q, k, v, views, b, scale, out); },
      [prompt = b.max_n_query > 1] { return std::string(prompt ? "attention, steps with prompt rows" : "attention"); });
}

}  // namespace pagoda::backend::cuda
