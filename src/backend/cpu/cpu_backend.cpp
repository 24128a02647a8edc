#include "backend/cpu/cpu_backend.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "backend/cpu/aligned_memory.h"
#include "backend/cpu/attention/attention.h"
#include "backend/cpu/attention/kv_copy.h"
#include "backend/cpu/attention/kv_storage_cpu.h"
#include "backend/cpu/matmul/matmul.h"
#include "backend/cpu/memory_probe.h"
#include "backend/cpu/weight_copies.h"
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
        rope_(isa_),
        weight_copies_(!options.mmap_weights),
        profile_(options.profile_ops) {
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
  // The weights are copied onto huge pages while they fit (weight_copies.h), else read
  // where they are mapped; the matmuls may keep copies repacked.
  Expected<TensorView> upload_weight(const TensorView& host) override {
    if (host.data == nullptr || host.n_elements() == 0) return host;
    size_t last = static_cast<size_t>(pagoda::row_bytes(host.type, host.ne[0]));
    for (int d = 1; d < 4; ++d) last += static_cast<size_t>(host.ne[d] - 1) * host.nb[d];
    TensorView view = host;
    if (const void* copy = weight_copies_.copy(host.data, last)) {
      view.data = const_cast<void*>(copy);
    } else {
      mapped_weight_bytes_ += last;
    }
    matmul_.add_weight(view.data, last);
    return view;
  }
  std::string weight_placement() const override {
    const auto mib = [](uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; };
    const uint64_t copied = weight_copies_.bytes_copied();
    if (copied == 0) return mapped_weight_bytes_ == 0 ? std::string() : "weights read where the file is mapped";
    std::string text = "weights copied onto huge pages (" + mib(copied) + ")";
    if (mapped_weight_bytes_ > 0) {
      text += ", " + mib(mapped_weight_bytes_) + " more read where the file is mapped (past half the available memory)";
    }
    return text;
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
  std::optional<MemoryBandwidth> measure_memory_bandwidth() override {
    constexpr size_t kProbeBytes = size_t{1} << 30;
    const std::optional<double> rate = cpu::measure_read_bandwidth(pool_, kProbeBytes);
    if (!rate) return std::nullopt;
    return MemoryBandwidth{*rate, "streaming read of 1 GiB, " + std::to_string(pool_.size()) +
                                      (pool_.size() == 1 ? " thread" : " threads")};
  }
  std::vector<OpTime> op_times() const override { return times_.sorted(); }
  void reset_op_times() override { times_.clear(); }
  Status take_error() override { return std::exchange(error_, Status{}); }

  void get_rows(const TensorView& table, std::span<const int32_t> ids, const TensorView& out) override {
    timed([&] { return cpu::get_rows(pool_, table, ids, out); }, [] { return std::string("get_rows"); });
  }
  void matmul(const TensorView& w, const TensorView& x, const TensorView& y) override {
    timed([&] { return matmul_.run(pool_, w, x, y); },
          [&] { return "matmul " + weight_label(w, std::to_string(w.ne[1])); }, weight_bytes(w));
  }
  void matmuls(const TensorView& x, std::span<const MatmulTarget> targets) override {
    uint64_t bytes = 0;
    for (const MatmulTarget& t : targets) bytes += weight_bytes(t.w);
    timed([&] { return matmul_.run_many(pool_, x, targets); },
          [&] {
            std::string outs;
            for (const MatmulTarget& t : targets) outs += (outs.empty() ? "[" : ",") + std::to_string(t.w.ne[1]);
            return "matmul " + weight_label(targets.front().w, outs + "]");
          },
          bytes);
  }
  void add_bias(const TensorView& y, const TensorView& bias) override {
    timed([&] { return cpu::add_bias(pool_, y, bias); }, [] { return std::string("add_bias"); });
  }
  void add(const TensorView& a, const TensorView& b, const TensorView& out) override {
    timed([&] { return cpu::add(pool_, a, b, out); }, [] { return std::string("add"); });
  }
  void rms_norm(const TensorView& x, const TensorView& weight, float eps, const TensorView& y) override {
    timed([&] { return cpu::rms_norm(pool_, isa_, x, weight, eps, y); }, [] { return std::string("rms_norm"); });
  }
  void add_rms_norm(const TensorView& x, const TensorView& delta, const TensorView& weight, float eps,
                    const TensorView& y) override {
    timed([&] { return cpu::add_rms_norm(pool_, isa_, x, delta, weight, eps, y); },
          [] { return std::string("add_rms_norm"); });
  }
  void layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                  const TensorView& y) override {
    timed([&] { return cpu::layer_norm(pool_, x, weight, bias, eps, y); },
          [] { return std::string("layer_norm"); });
  }
  void rope(const TensorView& x, std::span<const int32_t> positions, const RopeParams& params) override {
    timed([&] { return rope_.run(pool_, x, positions, params); }, [] { return std::string("rope"); });
  }
  void rope_pair(const TensorView& a, const TensorView& b, std::span<const int32_t> positions,
                 const RopeParams& params) override {
    timed([&] { return rope_.run_pair(pool_, a, b, positions, params); }, [] { return std::string("rope"); });
  }
  void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& out) override {
    timed([&] { return cpu::silu_mul(pool_, isa_, gate, up, out); }, [] { return std::string("silu_mul"); });
  }
  void gelu(const TensorView& x) override {
    timed([&] { return cpu::gelu(pool_, x); }, [] { return std::string("gelu"); });
  }
  void argmax_rows(const TensorView& x, const TensorView& ids) override {
    timed([&] { return cpu::argmax_rows(pool_, x, ids); }, [] { return std::string("argmax_rows"); });
  }
  void sample_rows(const TensorView& x, std::span<const RowSampling> rows,
                   std::span<const LogitAdjustment> adjustments, const TensorView& ids,
                   const TensorView& logprobs) override {
    timed([&] { return cpu::sample_rows(pool_, x, rows, adjustments, ids, logprobs); },
          [] { return std::string("sample_rows"); });
  }
  void attention(const TensorView& q, const TensorView& k, const TensorView& v, KvStorage& kv,
                 int32_t layer, const AttentionBatch& batch, float scale, const TensorView& out) override {
    timed([&] { return attention_.run(pool_, q, k, v, kv, layer, batch, scale, out); },
          [] { return std::string("attention"); });
  }

 private:
  // Ops return nothing (like asynchronous device work); the first failure is kept for
  // take_error().
  void note(Status status) {
    if (!status.ok() && error_.ok()) error_ = std::move(status);
  }
  // Runs an op (run() returns its Status); when profiling, adds its time under name().
  template <typename Run, typename Name>
  void timed(Run&& run, Name&& name, uint64_t weight_bytes = 0) {
    if (!profile_) return note(run());
    const auto start = std::chrono::steady_clock::now();
    note(run());
    times_.add(name(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
               weight_bytes);
  }
  static uint64_t weight_bytes(const TensorView& w) {
    return static_cast<uint64_t>(pagoda::row_bytes(w.type, w.ne[0])) * static_cast<uint64_t>(w.n_rows());
  }
  // "q4_K 2048x8192": the weight's type, its input size and `outputs`.
  static std::string weight_label(const TensorView& w, const std::string& outputs) {
    return std::string(dtype_name(w.type)) + " " + std::to_string(w.ne[0]) + "x" + outputs;
  }

  Isa isa_;
  ThreadPool pool_;
  cpu::KvLookahead lookahead_;  // written by each attention, read by the matmuls after it
  cpu::Matmul matmul_;
  cpu::Attention attention_;
  cpu::Rope rope_;
  cpu::WeightCopies weight_copies_;
  uint64_t mapped_weight_bytes_ = 0;  // weights not copied: read where they are mapped
  bool profile_;     // time every op into times_
  OpTimes times_;
  Status error_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace pagoda::backend
