#include "cli/backend_args.h"

#include <string>

namespace pagoda::cli {
namespace {

// A CLI11 validator from one of backend_options.h's parsers: the parser's message on
// failure, and the parsed value stored on success.
template <typename T, typename Parse>
void add_parsed_option(CLI::App& command, const std::string& name, T& field, Parse parse,
                       const std::string& help, const std::string& text) {
  command
      .add_option_function<std::string>(
          name,
          [&field, parse](const std::string& value) {
            auto parsed = parse(value);
            if (!parsed.ok()) throw CLI::ValidationError(parsed.status().message());
            field = *parsed;
          },
          help)
      ->option_text(text);
}

}  // namespace

void add_backend_options(CLI::App& command, backend::BackendOptions& options) {
  add_parsed_option(command, "--device", options.device, backend::parse_device,
                    "Where the model runs: auto (the GPU when there is one), cpu, cuda or cuda:N",
                    "auto|cpu|cuda[:N]=auto");
  command.get_option("--device")->envname("PAGODA_DEVICE");
  command.add_option("-t,--threads", options.cpu.n_threads, "CPU threads (0: one per physical core)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  add_parsed_option(command, "--numerics", options.cpu.numerics, backend::parse_cpu_numerics,
                    "CPU rounding: fast (the fastest kernels, the same results for a token whatever "
                    "its batch) or reference (llama.cpp's CPU rounding, reproducing its "
                    "log-probabilities; slower)",
                    "fast|reference=fast");
  command.add_flag("--mmap", options.cpu.mmap_weights,
                   "CPU: read the weights where the model file is mapped instead of copying them "
                   "onto huge pages (less memory, slower decoding)");
  command
      .add_option("--gpu-memory-utilization", options.cuda.memory_utilization,
                  "Share of the GPU's memory for weights, KV cache and scratch together")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0).description("in (0, 1]"))
      ->check([](const std::string& text) {
        return std::stod(text) > 0.0 ? std::string() : std::string("must be above 0");
      });
  command.add_flag("--batch-invariant", options.cuda.batch_invariant,
                   "GPU: the same output for a request whatever it is batched with (every matmul "
                   "through the few-token kernel; slower prompts). The CPU always is")
      ->envname("PAGODA_BATCH_INVARIANT");
}

}  // namespace pagoda::cli
