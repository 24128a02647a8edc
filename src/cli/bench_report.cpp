#include "cli/bench_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "core/cpu_features.h"

namespace pagoda::cli {
namespace {

// llama.cpp's names for general.file_type values.
const char* file_type_name(int64_t file_type) {
  switch (file_type) {
    case 0:
      return "all F32";
    case 1:
      return "F16";
    case 2:
      return "Q4_0";
    case 3:
      return "Q4_1";
    case 7:
      return "Q8_0";
    case 8:
      return "Q5_0";
    case 9:
      return "Q5_1";
    case 10:
      return "Q2_K - Medium";
    case 11:
      return "Q3_K - Small";
    case 12:
      return "Q3_K - Medium";
    case 13:
      return "Q3_K - Large";
    case 14:
      return "Q4_K - Small";
    case 15:
      return "Q4_K - Medium";
    case 16:
      return "Q5_K - Small";
    case 17:
      return "Q5_K - Medium";
    case 18:
      return "Q6_K";
    case 25:
      return "IQ4_NL - 4.5 bpw";
    case 30:
      return "IQ4_XS - 4.25 bpw";
    case 32:
      return "BF16";
    default:
      return "?";
  }
}

// The weight format as llama.cpp names it: from general.file_type, else "all F32" or
// the type holding the most bytes.
std::string weights_name(const gguf::Reader& file) {
  const Expected<int64_t> file_type = file.get_int("general.file_type");
  if (file_type.ok()) return file_type_name(*file_type);
  std::map<DType, uint64_t> bytes_by_type;
  for (const gguf::TensorInfo& tensor : file.tensors())
    bytes_by_type[tensor.type] += tensor.n_bytes;
  if (bytes_by_type.empty()) return "?";
  if (bytes_by_type.size() == 1 && bytes_by_type.begin()->first == DType::F32) return "all F32";
  const auto most =
      std::max_element(bytes_by_type.begin(), bytes_by_type.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  std::string name(dtype_name(most->first));
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::string printf_string(const char* format, double value, const char* unit) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value, unit);
  return text;
}

// "1.2B", "15M", "260K": the model's size class, for its type name.
std::string params_label(uint64_t n) {
  const double x = static_cast<double>(n);
  if (x >= 1e9) return printf_string("%.1f%s", x / 1e9, "B");
  if (x >= 1e6) return printf_string("%.0f%s", x / 1e6, "M");
  return printf_string("%.0f%s", x / 1e3, "K");
}

std::string size_text(uint64_t bytes) {
  const double x = static_cast<double>(bytes);
  if (x >= 1024.0 * 1024 * 1024) return printf_string("%.2f %s", x / (1024.0 * 1024 * 1024), "GiB");
  return printf_string("%.2f %s", x / (1024.0 * 1024), "MiB");
}

std::string params_text(uint64_t n) {
  const double x = static_cast<double>(n);
  if (x >= 1e9) return printf_string("%.2f %s", x / 1e9, "B");
  if (x >= 1e6) return printf_string("%.2f %s", x / 1e6, "M");
  return printf_string("%.2f %s", x / 1e3, "K");
}

double mean(const std::vector<double>& xs) {
  return xs.empty() ? 0.0
                    : std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

// Sample standard deviation (n - 1), 0 for fewer than two values, as llama-bench.
double stddev(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0.0;
  const double m = mean(xs);
  double sum = 0.0;
  for (double x : xs) sum += (x - m) * (x - m);
  return std::sqrt(sum / static_cast<double>(xs.size() - 1));
}

void print_table_header() {
  std::printf("| %-30s | %10s | %10s | %-10s | %7s | %13s | %20s |\n", "model", "size", "params",
              "backend", "threads", "test", "t/s");
  std::printf("| %s | %s: | %s: | %s | %s: | %s: | %s: |\n", std::string(30, '-').c_str(),
              std::string(9, '-').c_str(), std::string(9, '-').c_str(),
              std::string(10, '-').c_str(), std::string(6, '-').c_str(),
              std::string(12, '-').c_str(), std::string(19, '-').c_str());
  std::fflush(stdout);
}

// llama-bench's name of the backend: CPU or CUDA.
const char* backend_label(const std::string& description) {
  return description.rfind("cuda", 0) == 0 ? "CUDA" : "CPU";
}

}  // namespace

std::string BenchTest::name() const {
  const std::string depth = n_depth > 0 ? " @ d" + std::to_string(n_depth) : "";
  return (n_prompt > 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen)) + depth;
}

ModelSummary summarize_model(const gguf::Reader& file, const model::ModelConfig& config,
                             const std::string& path) {
  ModelSummary summary;
  summary.filename = path;
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    summary.size_bytes += tensor.n_bytes;
    summary.n_params += static_cast<uint64_t>(tensor.n_elements());
  }
  summary.type =
      config.architecture + " " + params_label(summary.n_params) + " " + weights_name(file);
  return summary;
}

BenchReport::BenchReport(ModelSummary model, std::string backend_description, int n_threads,
                         bool json)
    : model_(std::move(model)),
      backend_description_(std::move(backend_description)),
      n_threads_(n_threads),
      json_(json) {
  if (!json_) print_table_header();
}

void BenchReport::add(const BenchTest& test, const std::vector<double>& seconds) {
  std::vector<double> speeds, nanoseconds;
  for (double s : seconds) {
    speeds.push_back(test.n_tokens() / s);
    nanoseconds.push_back(s * 1e9);
  }
  if (!json_) {
    const std::string speed =
        printf_string("%.2f", mean(speeds), "") + " ± " + printf_string("%.2f", stddev(speeds), "");
    // "±" takes two bytes and one column: one more byte of width keeps the bars aligned.
    std::printf("| %-30s | %10s | %10s | %-10s | %7d | %13s | %21s |\n", model_.type.c_str(),
                size_text(model_.size_bytes).c_str(), params_text(model_.n_params).c_str(),
                backend_label(backend_description_),
                n_threads_, test.name().c_str(), speed.c_str());
    std::fflush(stdout);
    return;
  }
  results_.push_back({{"cpu_info", cpu_features().brand},
                      {"backends", backend_label(backend_description_)},
                      {"backend_description", backend_description_},
                      {"model_filename", model_.filename},
                      {"model_type", model_.type},
                      {"model_size", model_.size_bytes},
                      {"model_n_params", model_.n_params},
                      {"n_threads", n_threads_},
                      {"n_prompt", test.n_prompt},
                      {"n_gen", test.n_gen},
                      {"n_depth", test.n_depth},
                      {"test", test.name()},
                      {"avg_ns", mean(nanoseconds)},
                      {"stddev_ns", stddev(nanoseconds)},
                      {"avg_ts", mean(speeds)},
                      {"stddev_ts", stddev(speeds)},
                      {"samples_ns", nanoseconds},
                      {"samples_ts", speeds}});
}

void BenchReport::finish() {
  for (auto& result : results_) {
    if (result["n_gen"].get<int>() == 0 || result["n_depth"].get<int>() > 0) continue;
    const auto found = rooflines_.find(result["n_gen"].get<int>());
    if (found == rooflines_.end()) continue;
    const Roofline& roofline = found->second;
    const double gbs = result["avg_ts"].get<double>() * static_cast<double>(roofline.weight_bytes_per_token) / 1e9;
    result["bandwidth_gbs"] = roofline.bandwidth / 1e9;
    nlohmann::ordered_json probes = nlohmann::ordered_json::array();
    for (const double probe : roofline.probes) probes.push_back(probe / 1e9);
    result["bandwidth_probes_gbs"] = std::move(probes);
    result["bandwidth_method"] = roofline.method;
    result["weight_bytes_per_token"] = roofline.weight_bytes_per_token;
    result["weight_gbs"] = gbs;
    result["bandwidth_share"] = gbs * 1e9 / roofline.bandwidth;
  }
  for (auto& result : results_) {
    if (result["n_gen"].get<int>() != 0 || result["n_depth"].get<int>() > 0) continue;
    const auto bound = gemm_bounds_.find(result["n_prompt"].get<int>());
    if (bound == gemm_bounds_.end()) continue;
    result["gemm_bound_ts"] = bound->second;
    result["gemm_bound_share"] = result["avg_ts"].get<double>() / bound->second;
  }
  // A path need not be UTF-8: invalid bytes become U+FFFD rather than an exception.
  if (json_) {
    std::printf(
        "%s\n",
        results_.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  }
  std::fflush(stdout);
}

}  // namespace pagoda::cli
