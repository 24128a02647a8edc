#pragma once
// What `pagoda bench` prints: llama-bench's markdown table, one row per test as soon as
// it is done, or (with --json) a JSON array of one object per test with llama-bench's
// field names.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "model/config.h"

namespace pagoda::cli {

struct BenchTest {
  int n_prompt = 0;  // ppN: a batch of N prompt tokens
  int n_gen = 0;     // tgN: N tokens one at a time
  int n_depth = 0;   // tokens already in the context when the test starts (llama-bench's -d)

  std::string name() const;  // "pp512", "tg128", "tg128 @ d4096"
  int n_tokens() const { return n_prompt + n_gen; }  // the tokens a run times
  int context() const { return n_depth + n_tokens(); }
};

struct ModelSummary {
  std::string filename;
  std::string type;         // "llama 1.2B Q4_K - Medium"
  uint64_t size_bytes = 0;  // all tensor data
  uint64_t n_params = 0;    // all tensor elements
};

ModelSummary summarize_model(const gguf::Reader& file, const model::ModelConfig& config,
                             const std::string& path);

// The memory bandwidth a tgN test's decoding is measured against
// (Backend::measure_memory_bandwidth, probed around its runs) and the weight bytes one
// decoding step reads.
struct Roofline {
  double bandwidth = 0.0;  // bytes per second: each run's (its probes' mean), averaged
  std::string method;      // how the bandwidth was measured
  uint64_t weight_bytes_per_token = 0;
  std::vector<double> probes;  // bytes per second, before the first run and after each
};

class BenchReport {
 public:
  BenchReport(ModelSummary model, std::string backend_description, int n_threads, bool json);
  // Records (and, for the table, prints) one test's timed runs.
  void add(const BenchTest& test, const std::vector<double>& seconds);
  // JSON: the tgN object of n_gen without a depth (the roofline counts weights only)
  // gains the roofline's figures (bandwidth_gbs, bandwidth_probes_gbs, bandwidth_method,
  // weight_bytes_per_token, weight_gbs, bandwidth_share).
  void set_roofline(int n_gen, Roofline roofline) { rooflines_[n_gen] = std::move(roofline); }
  // JSON: the ppN object of n_prompt without a depth gains gemm_bound_ts (the tokens per
  // second the device's own GEMMs of the model's layer shapes allow,
  // Backend::measure_gemm_seconds) and gemm_bound_share.
  void set_gemm_bound(int n_prompt, double tokens_per_second) { gemm_bounds_[n_prompt] = tokens_per_second; }
  // Prints the JSON array; nothing for the table.
  void finish();

 private:
  ModelSummary model_;
  std::string backend_description_;
  int n_threads_;
  bool json_;
  std::map<int, Roofline> rooflines_;  // by generation length
  std::map<int, double> gemm_bounds_;  // by prompt size
  nlohmann::ordered_json results_ = nlohmann::ordered_json::array();  // llama-bench's field order
};

}  // namespace pagoda::cli
