#include "backend/cpu/cpu_backend.h"

#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "backend/cpu/aligned_memory.h"
#include "backend/cpu/attention/attention.h"
#include "backend/cpu/attention/kv_copy.h"
#include "backend/cpu/attention/kv_storage_cpu.h"
#include "backend/cpu/matmul/matmul.h"
#include "backend/cpu/ops/ops.h"
#include "backend/cpu/ops/rows.h"
#include "core/thread_pool.h"

namespace pagoda::backend {
namespace {

Isa pick_isa(Isa max_isa) {
  Isa best = Isa::kScalar;
  for (const Isa isa : quant::available_isas()) {
    if (static_cast<int>(isa) <= static_cast<int>(max_isa)) best = isa;
  }
  return best;
}

size_t repacked_budget(const CpuBackendOptions& options) {
  if (options.repacked_weight_bytes != CpuBackendOptions::kAutoRepackedBytes) return options.repacked_weight_bytes;
  const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_bytes > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_bytes) / 8 : 0;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options)
      : isa_(pick_isa(options.max_isa)),
        pool_(options.n_threads > 0 ? options.n_threads : physical_core_count()),
        matmul_(isa_, options.numerics, repacked_budget(options)),
        attention_(isa_, options.numerics),
        rope_(isa_) {
    matmul_.set_lookahead(&lookahead_);
    attention_.set_lookahead(&lookahead_);
  }

  std::string name() const override {
    return "cpu (" + std::string(isa_name(isa_)) + ", " + std::to_string(pool_.size()) +
           (pool_.size() == 1 ? " thread)" : " threads)");
  }

  Expected<std::unique_ptr<Buffer>> allocate(size_t bytes) override { return cpu::CpuBuffer::create(bytes); }
  Expected<std::unique_ptr<KvStorage>> allocate_kv(const KvCacheShape& shape) override {
    return cpu::CpuKvStorage::create(shape);
  }
  // The weights stay in the mapped file; the matmuls may keep copies repacked.
  Expected<TensorView> upload_weight(const TensorView& host) override {
    size_t last = static_cast<size_t>(pagoda::row_bytes(host.type, host.ne[0]));
    for (int d = 1; d < 4; ++d) last += static_cast<size_t>(host.ne[d] - 1) * host.nb[d];
    if (host.data != nullptr && host.n_elements() > 0) matmul_.add_weight(host.data, last);
    return host;
  }

  void copy_to_host(const TensorView& src, void* dst) override {
    const size_t row = src.row_bytes();
    for (int64_t r = 0; r < src.n_rows(); ++r) {
      std::memcpy(static_cast<char*>(dst) + static_cast<size_t>(r) * row, cpu::row_at<const char>(src, r), row);
    }
  }
  void copy_from_host(const void* src, const TensorView& dst) override {
    const size_t row = dst.row_bytes();
    for (int64_t r = 0; r < dst.n_rows(); ++r) {
      std::memcpy(cpu::row_at<char>(dst, r), static_cast<const char*>(src) + static_cast<size_t>(r) * row, row);
    }
  }
  void copy_kv_blocks(KvStorage& kv, std::span<const KvBlockCopy> copies) override {
    note(cpu::copy_kv_blocks(pool_, kv, copies));
  }
  bool host_addressable() const override { return true; }
  void run_host_tasks(int64_t n, const std::function<void(int64_t)>& task) override {
    pool_.parallel_for(n, [&](int64_t i, int) { task(i); });
  }
  // Every op has finished when it returns. The forward pass is over: the next one plans
  // its own lookahead.
  void synchronize() override { lookahead_.clear(); }
  Status take_error() override { return std::exchange(error_, Status{}); }

  void get_rows(const TensorView& table, std::span<const int32_t> ids, const TensorView& out) override {
    note(cpu::get_rows(pool_, table, ids, out));
  }
  void matmul(const TensorView& w, const TensorView& x, const TensorView& y) override {
    note(matmul_.run(pool_, w, x, y));
  }
  void matmuls(const TensorView& x, std::span<const MatmulTarget> targets) override {
    note(matmul_.run_many(pool_, x, targets));
  }
  void add_bias(const TensorView& y, const TensorView& bias) override { note(cpu::add_bias(pool_, y, bias)); }
  void add(const TensorView& a, const TensorView& b, const TensorView& out) override {
    note(cpu::add(pool_, a, b, out));
  }
  void rms_norm(const TensorView& x, const TensorView& weight, float eps, const TensorView& y) override {
    note(cpu::rms_norm(pool_, isa_, x, weight, eps, y));
  }
  void layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                  const TensorView& y) override {
    note(cpu::layer_norm(pool_, x, weight, bias, eps, y));
  }
  void rope(const TensorView& x, std::span<const int32_t> positions, const RopeParams& params) override {
    note(rope_.run(pool_, x, positions, params));
  }
  void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& out) override {
    note(cpu::silu_mul(pool_, isa_, gate, up, out));
  }
  void gelu(const TensorView& x) override { note(cpu::gelu(pool_, x)); }
  void attention(const TensorView& q, const TensorView& k, const TensorView& v, KvStorage& kv,
                 int32_t layer, const AttentionBatch& batch, float scale, const TensorView& out) override {
    note(attention_.run(pool_, q, k, v, kv, layer, batch, scale, out));
  }

 private:
  // Ops return nothing (like asynchronous device work); the first failure is kept for
  // take_error().
  void note(Status status) {
    if (!status.ok() && error_.ok()) error_ = std::move(status);
  }

  Isa isa_;
  ThreadPool pool_;
  cpu::KvLookahead lookahead_;  // written by each attention, read by the matmuls after it
  cpu::Matmul matmul_;
  cpu::Attention attention_;
  cpu::Rope rope_;
  Status error_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace pagoda::backend
