// pagoda quantize IN OUT TYPE: writes IN's model with its weights in TYPE (any type with a
// quantizer, or a llama-quantize mix such as q4_K_M), e.g. a small draft model from a
// target, or an f16 target from a quantized file. One "name: from -> to" line per tensor
// on stdout, then the sizes before and after.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/loaded_model.h"
#include "gguf/reader.h"
#include "tools/model_quantizer.h"

namespace pagoda::cli {
namespace {

struct QuantizeArgs {
  std::string input;
  std::string output;
  std::string type;
  int n_threads = 0;
};

double mebibytes(uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

Status quantize(const QuantizeArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  PAGODA_ASSIGN_OR_RETURN(const gguf::Reader source, gguf::Reader::open(args.input));
  PAGODA_ASSIGN_OR_RETURN(const tools::QuantizationPlan plan,
                          tools::plan_quantization(source, args.type));
  if (plan.requantizes) {
    std::fprintf(stderr,
                 "pagoda: warning: %s holds quantized weights; converting them to %s "
                 "quantizes them twice, and quality is lost twice\n",
                 args.input.c_str(), args.type.c_str());
  }
  for (const tools::TensorConversion& tensor : plan.tensors) {
    std::printf("%s: %s -> %s%s\n", tensor.name.c_str(),
                std::string(dtype_name(tensor.source)).c_str(),
                std::string(dtype_name(tensor.target)).c_str(),
                tensor.converted() ? "" : " (copied)");
  }
  PAGODA_TRY(tools::write_quantized_model(source, plan, args.output, args.n_threads));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: %zu tensors, %.2f MiB -> %.2f MiB of tensors, in %.1f s\n",
              args.output.c_str(), plan.tensors.size(), mebibytes(plan.source_bytes()),
              mebibytes(plan.target_bytes()), seconds);
  return Status::ok_status();
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* command =
      app.add_subcommand("quantize", "Write a GGUF model with its weights in another type");
  command->add_option("input", args->input, "GGUF model to read")->required();
  command->add_option("output", args->output, "GGUF file to write")->required();
  command
      ->add_option("type", args->type,
                   "Weight type: f16, q8_0, q4_K, ... or a mix such as q4_K_M, q5_K_M")
      ->required();
  command->add_option("-t,--threads", args->n_threads, "Threads (0: one per physical core)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->callback([args] {
    const Status status = quantize(*args);
    if (!status.ok()) report_error(status.message());
  });
}

}  // namespace pagoda::cli
