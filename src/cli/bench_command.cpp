// pagoda bench -m FILE [-p 512] [-n 128] [-r 5] [--device D] [--threads N] [--json] [--profile]:
// prompt processing and generation speed, measured as llama-bench measures them, through
// the same engine as `serve` (engine/session.h). ppP runs P random tokens as one batch
// into an empty cache; tgN generates N tokens one at a time from an empty cache; with
// -d D (pp512 @ d4096) the cache first holds D tokens. Each test runs once to warm up,
// then r times; the result is the mean and standard deviation of the r speeds.
// Around the timed runs of a tgN test it measures the device's memory bandwidth (before
// the first and after each) and says what share of it decoding reached (the weight bytes
// a step reads times tokens per second): the roofline. Measured around the runs, not
// once, because on a machine shared with other tenants what the memory gives changes
// from one second to the next: a single probe taken apart from the runs judges them by
// a moment they did not see.
// With --concurrency N it runs the serving benchmark of bench_concurrency.h instead.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <utility>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/backend_args.h"
#include "cli/bench_concurrency.h"
#include "cli/bench_profile.h"
#include "cli/bench_report.h"
#include "cli/commands.h"
#include "cli/loaded_model.h"
#include "core/thread_pool.h"
#include "engine/session.h"

namespace pagoda::cli {
namespace {

struct BenchArgs {
  std::string model_path;
  std::vector<int> prompt_sizes = {512};
  std::vector<int> generation_sizes = {128};
  std::vector<int> depths = {0};
  int repetitions = 5;
  bool json = false;
  bool profile_ops = false;
  backend::BackendOptions backend;
};

// One model loaded with an engine session whose KV cache fits the longest test.
struct BenchContext {
  LoadedModel loaded;
  std::unique_ptr<engine::Session> session;
  std::mt19937 rng{1234};
};

// The engine for one sequence at a time: a step takes the largest prompt whole, the
// context fits the longest test (past the model's training context if need be, as
// llama-bench allows: the speed is the same), and nothing is reused between runs but,
// where a test has a depth, the depth's tokens (the prefix cache).
engine::EngineConfig bench_engine_config(int32_t largest_batch, int32_t longest, bool depths) {
  engine::EngineConfig config;
  config.scheduler.max_batched_tokens = largest_batch;
  config.scheduler.max_running = 1;
  config.scheduler.max_model_len = longest + 1;  // room for the token sampled last
  config.limit_to_training_context = false;
  config.enable_prefix_cache = depths;
  return config;
}

int32_t random_token(BenchContext& ctx) {
  return std::uniform_int_distribution<int32_t>(0, ctx.loaded.model->config().n_vocab - 1)(ctx.rng);
}

// ppP: P random tokens as one prompt (one forward pass, one token sampled); tgN: N tokens
// generated one at a time after a one-token prompt (N forward passes of one token); both
// after `depth`, the tokens already in the context.
engine::EngineRequest bench_request(BenchContext& ctx, const BenchTest& test, const std::vector<int32_t>& depth) {
  engine::EngineRequest request;
  request.prompt = depth;
  for (int i = 0; i < std::max(test.n_prompt, 1); ++i) request.prompt.push_back(random_token(ctx));
  request.sampling.temperature = 0.0f;
  request.stop.max_tokens = test.n_prompt > 0 ? 1 : test.n_gen;
  request.stop.ignore_eog = true;
  return request;
}

// A test's depth in the cache before a run: its tokens as a prompt of their own, whose
// whole blocks the prefix cache keeps for the timed request (the depth's last partial
// block, if any, is computed again inside it). Only the first run computes them.
Status fill_depth(BenchContext& ctx, const std::vector<int32_t>& depth) {
  if (depth.empty()) return Status::ok_status();
  engine::EngineRequest request;
  request.prompt = depth;
  request.sampling.temperature = 0.0f;
  request.stop.max_tokens = 1;
  request.stop.ignore_eog = true;
  return ctx.session->generate(std::move(request), nullptr).status();
}

// What a test's timed runs measured.
struct TestTimes {
  std::vector<double> seconds;  // [repetitions]
  // For a tgN test without a depth on a device that measures its memory bandwidth: the
  // probes before the first timed run and after each ([repetitions + 1], bytes per
  // second) and how they measure; else empty.
  std::vector<double> bandwidths;
  std::string bandwidth_method;
};

// Runs a test once to warm up, then `repetitions` times, probing the memory bandwidth
// around the timed runs where the roofline needs it. On a backend that profiles its ops
// (--profile), prints where the timed runs' time went, per token (stderr).
Expected<TestTimes> time_test(BenchContext& ctx, const BenchTest& test, int repetitions) {
  TestTimes times;
  backend::Backend& backend = *ctx.loaded.backend;
  const bool probe = test.n_gen > 0 && test.n_depth == 0;  // the roofline counts weights only
  auto probe_bandwidth = [&] {
    if (!probe) return;
    const std::optional<backend::Backend::MemoryBandwidth> bandwidth = backend.measure_memory_bandwidth();
    if (!bandwidth) return;
    times.bandwidths.push_back(bandwidth->bytes_per_second);
    times.bandwidth_method = bandwidth->method;
  };
  std::vector<int32_t> depth(static_cast<size_t>(test.n_depth));
  for (int32_t& token : depth) token = random_token(ctx);
  for (int run = -1; run < repetitions; ++run) {
    PAGODA_TRY(fill_depth(ctx, depth));
    if (run == 0) {
      probe_bandwidth();
      backend.reset_op_times();
    }
    engine::EngineRequest request = bench_request(ctx, test, depth);
    const auto start = std::chrono::steady_clock::now();
    PAGODA_TRY(ctx.session->generate(std::move(request), nullptr).status());
    if (run < 0) continue;
    times.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    probe_bandwidth();
  }
  // A device that cannot measure its bandwidth, or failed to once: no roofline.
  if (times.bandwidths.size() != times.seconds.size() + 1) times.bandwidths.clear();
  const std::vector<double>& seconds = times.seconds;
  const std::vector<backend::OpTime> ops = backend.op_times();
  if (!ops.empty()) {
    double wall = 0.0;
    for (const double s : seconds) wall += s;
    const double tokens = static_cast<double>(test.n_tokens()) * static_cast<double>(repetitions);
    std::fprintf(stderr, "%s: time per token, %d runs:\n%s", test.name().c_str(), repetitions,
                 format_op_profile(ops, tokens, wall).c_str());
  }
  return times;
}

// Bytes of weights one decoding step reads: every tensor but the token embedding, of
// which a step reads one row (unless it is also the output projection).
uint64_t decode_weight_bytes(const gguf::Reader& file) {
  const bool tied = file.find_tensor("output.weight") == nullptr;
  uint64_t bytes = 0;
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    if (tensor.name != "token_embd.weight" || tied) bytes += tensor.n_bytes;
  }
  return bytes;
}

// How close a tgN test's decoding came to the memory bandwidth probed around its runs
// (times.bandwidths, not empty), to stderr and into the report. The bandwidth it is
// judged by is each run's, the mean of the probes before and after it, averaged over the
// runs. speed: its tokens per second.
void report_bandwidth_share(const gguf::Reader& file, const BenchTest& test, double speed,
                            const TestTimes& times, BenchReport& report) {
  const std::vector<double>& probes = times.bandwidths;
  double bandwidth = 0.0;
  for (size_t run = 0; run + 1 < probes.size(); ++run) bandwidth += (probes[run] + probes[run + 1]) / 2.0;
  bandwidth /= static_cast<double>(probes.size() - 1);
  const uint64_t bytes = decode_weight_bytes(file);
  report.set_roofline(test.n_gen, {bandwidth, times.bandwidth_method, bytes, probes});
  const auto [low, high] = std::minmax_element(probes.begin(), probes.end());
  const double achieved = speed * static_cast<double>(bytes);
  std::fprintf(stderr,
               "%s: memory bandwidth around the runs %.1f GB/s (%zu probes, %.1f-%.1f GB/s; %s); a decoding "
               "step reads %.1f MB of weights\n"
               "%s: %.1f tokens/s = %.1f GB/s of weights, %.0f%% of the bandwidth\n",
               test.name().c_str(), bandwidth / 1e9, probes.size(), *low / 1e9, *high / 1e9,
               times.bandwidth_method.c_str(), static_cast<double>(bytes) / 1e6, test.name().c_str(), speed,
               achieved / 1e9, 100.0 * achieved / bandwidth);
}

// The layers' weight matrices (what a prompt multiplies by; the output head takes only
// the rows that need logits), counted by shape.
std::vector<backend::Backend::GemmShape> layer_matrix_shapes(const gguf::Reader& file) {
  std::vector<backend::Backend::GemmShape> shapes;
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    if (tensor.name.rfind("blk.", 0) != 0 || tensor.shape.size() != 2 || tensor.shape[1] <= 1) continue;
    const int64_t n_in = tensor.shape[0], n_out = tensor.shape[1];
    auto same = std::find_if(shapes.begin(), shapes.end(),
                             [&](const backend::Backend::GemmShape& s) { return s.n_in == n_in && s.n_out == n_out; });
    if (same != shapes.end()) {
      ++same->count;
    } else {
      shapes.push_back({n_out, n_in, 1});
    }
  }
  return shapes;
}

// On a device that can time its own GEMMs: how close each ppN comes to what the layers'
// matmuls alone would allow, to stderr and into the report.
void report_gemm_share(backend::Backend& backend, const gguf::Reader& file,
                       const std::vector<std::pair<BenchTest, double>>& pp_speeds, BenchReport& report) {
  const std::vector<backend::Backend::GemmShape> shapes = layer_matrix_shapes(file);
  if (shapes.empty()) return;
  for (const auto& [test, speed] : pp_speeds) {
    const std::optional<double> seconds = backend.measure_gemm_seconds(shapes, test.n_prompt);
    if (!seconds) return;
    const double bound = test.n_prompt / *seconds;
    report.set_gemm_bound(test.n_prompt, bound);
    std::fprintf(stderr, "%s: %.0f tokens/s; the layers' matmuls as the device's BF16 GEMMs alone: %.0f tokens/s (%.0f%%)\n",
                 test.name().c_str(), speed, bound, 100.0 * speed / bound);
  }
}

std::vector<BenchTest> tests_of(const BenchArgs& args) {
  std::vector<BenchTest> tests;
  for (int p : args.prompt_sizes) {
    for (int d : args.depths) {
      if (p > 0) tests.push_back({p, 0, d});
    }
  }
  for (int n : args.generation_sizes) {
    for (int d : args.depths) {
      if (n > 0) tests.push_back({0, n, d});
    }
  }
  return tests;
}

Status bench(BenchArgs args) {
  const std::vector<BenchTest> tests = tests_of(args);
  if (tests.empty()) return invalid_argument("no test to run: give -p or -n sizes above 0");
  int32_t longest = 1, largest_batch = 1, deepest = 0;
  for (const BenchTest& test : tests) {
    longest = std::max(longest, test.context());
    largest_batch = std::max(largest_batch, test.n_prompt);
    deepest = std::max(deepest, test.n_depth);
  }
  // The depth's tokens go in as a prompt of their own: a step takes them whole.
  largest_batch = std::max(largest_batch, deepest);
  log_to_stderr();
  BenchContext ctx;
  const engine::EngineConfig config = bench_engine_config(largest_batch, longest, deepest > 0);
  PAGODA_ASSIGN_OR_RETURN(ctx.loaded, load_model_file(args.model_path, args.backend,
                                                      config.load_options(), /*with_tokenizer=*/true));
  PAGODA_ASSIGN_OR_RETURN(ctx.session, engine::Session::create(*ctx.loaded.model, *ctx.loaded.backend,
                                                               *ctx.loaded.tokenizer, config));

  const ModelSummary model =
      summarize_model(*ctx.loaded.file, ctx.loaded.model->config(), args.model_path);
  const int threads = args.backend.cpu.n_threads > 0 ? args.backend.cpu.n_threads : physical_core_count();
  BenchReport report(model, ctx.loaded.backend->name(), threads, args.json);
  std::vector<std::pair<BenchTest, double>> pp_speeds;
  for (const BenchTest& test : tests) {
    PAGODA_ASSIGN_OR_RETURN(const TestTimes times, time_test(ctx, test, args.repetitions));
    report.add(test, times.seconds);
    if (test.n_depth > 0) continue;  // the roofline and the GEMM bound count weights only
    double total = 0.0;
    for (const double s : times.seconds) total += s;
    const int tokens = test.n_gen > 0 ? test.n_gen : test.n_prompt;
    const double speed = tokens * static_cast<double>(times.seconds.size()) / total;
    if (test.n_gen == 0) {
      pp_speeds.emplace_back(test, speed);
    } else if (!times.bandwidths.empty()) {
      report_bandwidth_share(*ctx.loaded.file, test, speed, times, report);
    }
  }
  if (!pp_speeds.empty()) report_gemm_share(*ctx.loaded.backend, *ctx.loaded.file, pp_speeds, report);
  const std::string steps = ctx.loaded.backend->step_summary();
  if (!steps.empty()) std::fprintf(stderr, "%s\n", steps.c_str());
  report.finish();
  return Status::ok_status();
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* command = app.add_subcommand("bench", "Measure prompt processing and generation speed");
  command->add_option("-m,--model", args->model_path, "GGUF model file")->required();
  command->add_option("-p,--n-prompt", args->prompt_sizes, "Prompt sizes (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("-n,--n-gen", args->generation_sizes, "Generation lengths (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("-d,--n-depth", args->depths,
                      "Context depths: each test runs with this many tokens already in the cache "
                      "(comma-separated)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_option("-r,--repetitions", args->repetitions, "Timed runs per test")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_flag("--json", args->json, "Print the results as JSON");
  add_backend_options(*command, args->backend);
  command->add_flag("--profile,--profile-ops", args->profile_ops,
                    "Time each op (on a GPU with CUDA events) and print, per test (with "
                    "--concurrency: per output token of the run), where the time of a token went "
                    "(stderr)");
  auto concurrency = std::make_shared<ConcurrencyBenchArgs>();
  add_concurrency_options(*command, *concurrency);
  command->callback([args, concurrency] {
    const ConcurrencyBenchArgs& c = *concurrency;
    const bool serving_only = !c.grammar.empty() || !c.prompt_files.empty() || c.speculative.ngram ||
                              !c.speculative.draft_model_path.empty();
    args->backend.cpu.profile_ops = args->backend.cuda.profile_ops = args->profile_ops;
    const Status status =
        c.concurrency > 0 ? run_concurrency_bench(args->model_path, args->backend, args->json, c)
        : serving_only
            ? invalid_argument("bench: output constraints, --prompt-file and speculative decoding "
                               "apply to the serving benchmark (--concurrency N)")
            : bench(*args);
    if (!status.ok()) report_error(status.message());
  });
}

}  // namespace pagoda::cli
