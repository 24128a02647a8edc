// pagoda bench -m FILE [-p 512] [-n 128] [-r 5] [--threads N] [--json]: prompt
// processing and generation speed, measured as llama-bench measures them. ppP runs P
// random tokens as one batch into an empty cache; tgN generates N tokens one at a time
// from an empty cache. Each test runs once to warm up, then r times; the result is the
// mean and standard deviation of the r speeds.
// With --concurrency N it runs the serving benchmark of bench_concurrency.h instead.
#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/bench_concurrency.h"
#include "cli/bench_report.h"
#include "cli/commands.h"
#include "cli/generation_args.h"
#include "cli/loaded_model.h"
#include "core/thread_pool.h"
#include "engine/sequence_batch.h"

namespace pagoda::cli {
namespace {

struct BenchArgs {
  std::string model_path;
  std::vector<int> prompt_sizes = {512};
  std::vector<int> generation_sizes = {128};
  int repetitions = 5;
  int threads = 0;
  bool json = false;
  backend::CpuNumerics numerics = backend::CpuNumerics::kFast;
};

// One model loaded with a KV cache that fits the longest test.
struct BenchContext {
  LoadedModel loaded;
  std::unique_ptr<backend::KvStorage> kv;
  std::vector<float> logits;  // [n_vocab]
  std::mt19937 rng{1234};
};

// Runs `tokens` from position 0 of an empty cache, `step` tokens per forward pass.
Status run_tokens(BenchContext& ctx, const std::vector<int32_t>& tokens, size_t step) {
  engine::ContiguousSequence sequence(ctx.kv->shape());
  for (size_t start = 0; start < tokens.size(); start += step) {
    const size_t n = std::min(step, tokens.size() - start);
    const std::span<const int32_t> chunk(tokens.data() + start, n);
    PAGODA_TRY(ctx.loaded.model->forward(sequence.batch(chunk, static_cast<int32_t>(start), true),
                                         *ctx.kv, ctx.logits));
  }
  ctx.loaded.backend->synchronize();
  return Status::ok_status();
}

// Seconds of each of `repetitions` runs of a test, after one warm-up run.
Expected<std::vector<double>> time_test(BenchContext& ctx, const BenchTest& test, int repetitions) {
  const int32_t n_vocab = ctx.loaded.model->config().n_vocab;
  std::uniform_int_distribution<int32_t> random_token(0, n_vocab - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(test.n_tokens()));
  const size_t step = test.n_prompt > 0 ? tokens.size() : 1;
  std::vector<double> seconds;
  for (int run = -1; run < repetitions; ++run) {
    for (int32_t& token : tokens) token = random_token(ctx.rng);
    const auto start = std::chrono::steady_clock::now();
    PAGODA_TRY(run_tokens(ctx, tokens, step));
    if (run >= 0)
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return seconds;
}

std::vector<BenchTest> tests_of(const BenchArgs& args) {
  std::vector<BenchTest> tests;
  for (int p : args.prompt_sizes) {
    if (p > 0) tests.push_back({p, 0});
  }
  for (int n : args.generation_sizes) {
    if (n > 0) tests.push_back({0, n});
  }
  return tests;
}

Status bench(const BenchArgs& args) {
  const std::vector<BenchTest> tests = tests_of(args);
  if (tests.empty()) return invalid_argument("no test to run: give -p or -n sizes above 0");
  int32_t longest = 1, largest_batch = 1;
  for (const BenchTest& test : tests) {
    longest = std::max(longest, test.n_tokens());
    largest_batch = std::max(largest_batch, test.n_prompt);
  }
  BenchContext ctx;
  model::LoadOptions options;
  options.max_batch_tokens = largest_batch;
  options.max_logit_rows = 1;
  PAGODA_ASSIGN_OR_RETURN(ctx.loaded,
                          load_model_file(args.model_path, args.threads, options, false, args.numerics));
  const model::ModelConfig& config = ctx.loaded.model->config();
  PAGODA_ASSIGN_OR_RETURN(
      ctx.kv, ctx.loaded.backend->allocate_kv(engine::contiguous_kv_shape(config, longest)));
  ctx.logits.resize(static_cast<size_t>(config.n_vocab));

  const ModelSummary model = summarize_model(*ctx.loaded.file, config, args.model_path);
  const int threads = args.threads > 0 ? args.threads : physical_core_count();
  BenchReport report(model, ctx.loaded.backend->name(), threads, args.json);
  for (const BenchTest& test : tests) {
    PAGODA_ASSIGN_OR_RETURN(const std::vector<double> seconds,
                            time_test(ctx, test, args.repetitions));
    report.add(test, seconds);
  }
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
  command->add_option("-r,--repetitions", args->repetitions, "Timed runs per test")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("-t,--threads", args->threads, "CPU threads (0: one per physical core)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--json", args->json, "Print the results as JSON");
  add_numerics_option(*command, args->numerics);
  auto concurrency = std::make_shared<ConcurrencyBenchArgs>();
  add_concurrency_options(*command, *concurrency);
  command->callback([args, concurrency] {
    const Status status =
        concurrency->concurrency > 0
            ? run_concurrency_bench(args->model_path, args->threads, args->json, *concurrency)
            : bench(*args);
    if (!status.ok()) report_error(status.message());
  });
}

}  // namespace pagoda::cli
