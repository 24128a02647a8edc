#pragma once
// The default model's vocabulary for the grammar benchmarks, as the engine gives it to
// the grammar matcher (each token's text; control tokens none; the end-of-generation
// tokens as stop tokens), or nothing where the model file is absent.
// PAGODA_GRAMMAR_BENCH_MODEL names another GGUF file.

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "grammar/vocab_index.h"
#include "tokenizer/tokenizer.h"

struct ModelVocab {
  std::shared_ptr<const pagoda::grammar::VocabIndex> index;
  std::shared_ptr<const pagoda::tokenizer::Tokenizer> tokenizer;
};

inline std::optional<ModelVocab> load_model_vocab() {
  std::string path = std::string(PAGODA_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (const char* env = std::getenv("PAGODA_GRAMMAR_BENCH_MODEL")) path = env;
  auto reader = pagoda::gguf::Reader::open(path);
  if (!reader.ok()) return std::nullopt;
  auto tokenizer = pagoda::tokenizer::Tokenizer::from_gguf(*reader);
  if (!tokenizer.ok()) return std::nullopt;
  ModelVocab vocab;
  vocab.tokenizer = std::make_shared<const pagoda::tokenizer::Tokenizer>(std::move(*tokenizer));
  std::vector<std::string> bytes(static_cast<size_t>(vocab.tokenizer->n_vocab()));
  for (int32_t id = 0; id < vocab.tokenizer->n_vocab(); ++id) {
    bytes[static_cast<size_t>(id)] = std::string(vocab.tokenizer->token_to_piece(id));
  }
  vocab.index = pagoda::grammar::VocabIndex::create(std::move(bytes), vocab.tokenizer->eog_tokens());
  return vocab;
}
