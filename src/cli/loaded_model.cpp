#include "cli/loaded_model.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "backend/registry/registry.h"
#include "cli/commands.h"
#include "tokenizer/vocabulary_match.h"

namespace pagoda::cli {

Expected<LoadedModel> load_model_file(const std::string& path,
                                      const backend::BackendOptions& backend_options,
                                      const model::LoadOptions& options, bool with_tokenizer) {
  const auto start = std::chrono::steady_clock::now();
  LoadedModel loaded;
  PAGODA_ASSIGN_OR_RETURN(gguf::Reader reader, gguf::Reader::open(path));
  loaded.file = std::make_unique<gguf::Reader>(std::move(reader));
  PAGODA_ASSIGN_OR_RETURN(loaded.backend, backend::create(backend_options));
  PAGODA_ASSIGN_OR_RETURN(loaded.model, model::load_model(*loaded.file, *loaded.backend, options));
  if (const std::string placement = loaded.backend->weight_placement(); !placement.empty()) {
    spdlog::info("{}: {}", loaded.backend->name(), placement);
  }
  // On a device: where the weights went and what is left for the KV cache.
  if (const std::optional<backend::Backend::CacheMemory> memory = loaded.backend->cache_memory()) {
    spdlog::info("{}: weights and scratch loaded; {} left for the KV cache ({})", loaded.backend->name(),
                 memory->bytes >> 20 > 0 ? std::to_string(memory->bytes >> 20) + " MiB" : std::to_string(memory->bytes) + " bytes",
                 memory->description);
  }
  if (with_tokenizer) {
    PAGODA_ASSIGN_OR_RETURN(tokenizer::Tokenizer tokenizer,
                            tokenizer::Tokenizer::from_gguf(*loaded.file));
    if (tokenizer.n_vocab() != loaded.model->config().n_vocab) {
      return corrupt_file(path + ": the tokenizer has " + std::to_string(tokenizer.n_vocab()) +
                          " tokens but the model " +
                          std::to_string(loaded.model->config().n_vocab));
    }
    loaded.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tokenizer));
  }
  loaded.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return loaded;
}

Expected<LoadedDraft> load_draft_model(const std::string& path, LoadedModel& target,
                                       const model::LoadOptions& options) {
  LoadedDraft draft;
  PAGODA_ASSIGN_OR_RETURN(gguf::Reader reader, gguf::Reader::open(path));
  draft.file = std::make_unique<gguf::Reader>(std::move(reader));
  PAGODA_ASSIGN_OR_RETURN(const tokenizer::Tokenizer tokenizer, tokenizer::Tokenizer::from_gguf(*draft.file));
  const Status same = tokenizer::check_same_vocabulary(*target.tokenizer, tokenizer);
  if (!same.ok()) return invalid_argument(path + ": " + same.message());
  PAGODA_ASSIGN_OR_RETURN(draft.model, model::load_model(*draft.file, *target.backend, options));
  spdlog::info("speculative decoding: draft model {} ({} layers, {} embedding)", path,
               draft.model->config().n_layer, draft.model->config().n_embd);
  return draft;
}

Expected<tokenizer::ChatTemplate> model_chat_template(const gguf::Reader& model_file) {
  PAGODA_ASSIGN_OR_RETURN(const tokenizer::ChatTemplateChoice choice,
                          tokenizer::chat_template_for_model(model_file));
  Expected<tokenizer::ChatTemplate> parsed = tokenizer::ChatTemplate::parse(choice.source);
  if (parsed) {
    spdlog::info("chat template: {} ({} bytes{})", choice.name, choice.source.size(),
                 choice.is_default ? ", the model has none" : ", the model's own");
    return std::move(*parsed);
  }
  spdlog::warn(
      "chat template: the model's {} does not parse ({}); using {} instead (give one "
      "with --chat-template)",
      choice.name, parsed.status().message(), tokenizer::kChatMLTemplateName);
  return tokenizer::ChatTemplate::parse(tokenizer::kChatMLTemplate);
}

void log_to_stderr() {
  if (!spdlog::get("pagoda")) spdlog::set_default_logger(spdlog::stderr_color_mt("pagoda"));
}

void report_error(const std::string& message) {
  std::fprintf(stderr, "pagoda: %s\n", message.c_str());
  set_exit_code(1);
}

}  // namespace pagoda::cli
