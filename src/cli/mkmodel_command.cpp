// pagoda mkmodel -o OUT.gguf --arch llama --embd 2048 --layers 16 ...: writes a model of
// random weights in any supported architecture, shape and weight type, so that speed
// can be measured on realistic shapes without downloading a model.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/loaded_model.h"
#include "gguf/reader.h"
#include "tools/random_model.h"

namespace pagoda::cli {
namespace {

struct MkmodelArgs {
  std::string output;
  std::string tokenizer_path;
  tools::RandomModelSpec spec;
};

Status mkmodel(const MkmodelArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<gguf::Reader> tokenizer;
  if (!args.tokenizer_path.empty()) {
    PAGODA_ASSIGN_OR_RETURN(gguf::Reader reader, gguf::Reader::open(args.tokenizer_path));
    tokenizer.emplace(std::move(reader));
  }
  PAGODA_TRY(tools::write_random_model(args.spec, tokenizer ? &*tokenizer : nullptr, args.output));
  PAGODA_ASSIGN_OR_RETURN(const gguf::Reader written, gguf::Reader::open(args.output));
  uint64_t n_params = 0, n_bytes = 0;
  for (const gguf::TensorInfo& tensor : written.tensors()) {
    n_params += static_cast<uint64_t>(tensor.n_elements());
    n_bytes += tensor.n_bytes;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(
      stderr, "wrote %s: %s, %.3f M parameters, %.2f MiB of tensors, %zu tensors, in %.1f s\n",
      args.output.c_str(), args.spec.architecture.c_str(), static_cast<double>(n_params) / 1e6,
      static_cast<double>(n_bytes) / (1024.0 * 1024.0), written.tensors().size(), seconds);
  return Status::ok_status();
}

}  // namespace

void add_mkmodel_command(CLI::App& app) {
  auto args = std::make_shared<MkmodelArgs>();
  tools::RandomModelSpec& s = args->spec;
  CLI::App* command = app.add_subcommand("mkmodel", "Write a GGUF model with random weights");
  command->add_option("-o,--output", args->output, "GGUF file to write")->required();
  command->add_option("--arch", s.architecture, "Architecture: llama, qwen2, qwen3, gpt2")
      ->capture_default_str();
  command->add_option("--embd", s.n_embd, "Embedding size")->required();
  command->add_option("--layers", s.n_layer, "Blocks")->required();
  command->add_option("--heads", s.n_head, "Attention heads")->required();
  command->add_option("--kv-heads", s.n_head_kv, "KV heads (default: --heads)");
  command->add_option("--ffn", s.n_ff, "Feed-forward size")->required();
  command->add_option("--vocab", s.n_vocab, "Vocabulary size (default: the tokenizer's)");
  command->add_option("--head-dim", s.head_dim, "Head size (default: embd / heads)");
  command->add_option("--ctx", s.n_ctx, "Training context length")->capture_default_str();
  command
      ->add_option("--type", s.weight_type, "Weight type: f16, q8_0, q4_K, ... or q4_K_M, q5_K_M")
      ->capture_default_str();
  command->add_flag("--tie-embeddings", s.tie_embeddings,
                    "No output.weight: reuse the token embedding");
  command->add_option("--tokenizer", args->tokenizer_path,
                      "Copy the tokenizer from this GGUF file");
  command->add_option("--control-token", s.control_tokens,
                      "A control token at the end of the built-in vocabulary, such as "
                      "[TOOL_CALLS] (repeat for more)");
  command->add_option("--seed", s.seed, "Seed of the weights")->capture_default_str();
  command->add_option("-t,--threads", s.n_threads, "Threads (0: one per physical core)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->callback([args] {
    const Status status = mkmodel(*args);
    if (!status.ok()) report_error(status.message());
  });
}

}  // namespace pagoda::cli
