#pragma once
// What `pagoda run`, `chat`, `bench` and `serve` share: a GGUF file opened, the backend
// its options choose (backend::create), the model built on it and (when asked) its tokenizer, plus how long that took.

#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/backend_options.h"
#include "core/status.h"
#include "gguf/reader.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {

struct LoadedModel {
  // Held by pointer: the model refers to the file and the backend, which must not move.
  std::unique_ptr<gguf::Reader> file;
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;  // null unless asked for
  double load_seconds = 0.0;
};

Expected<LoadedModel> load_model_file(const std::string& path,
                                      const backend::BackendOptions& backend_options,
                                      const model::LoadOptions& options, bool with_tokenizer);

// A draft model for speculative decoding: on `target`'s backend, its vocabulary checked
// token by token against the target's (a mismatch is an error naming the first
// difference). `target` must have its tokenizer and outlive the draft.
struct LoadedDraft {
  std::unique_ptr<gguf::Reader> file;
  std::unique_ptr<model::Model> model;
};
Expected<LoadedDraft> load_draft_model(const std::string& path, LoadedModel& target,
                                       const model::LoadOptions& options);

// The chat template a model renders with: its own (`tokenizer.chat_template`), ChatML
// when it has none or ours cannot parse it; the choice is logged.
Expected<tokenizer::ChatTemplate> model_chat_template(const gguf::Reader& model_file);

// Sends the log to stderr, for the commands whose results go to stdout (run, chat,
// bench): their output stays clean for pipes and for --json.
void log_to_stderr();

// Prints "pagoda: <message>" (one line) to stderr and sets the exit code to 1.
void report_error(const std::string& message);

}  // namespace pagoda::cli
