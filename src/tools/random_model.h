#pragma once
// GGUF models with random weights, of any supported architecture and shape, so that
// speed can be measured on realistic shapes without downloading anything (pagoda
// mkmodel). Every tensor the architecture needs is written: matrices and embeddings in
// the chosen weight type (quantized in parallel, deterministically from the seed),
// norms and biases in f32. Weights are normal with a small standard deviation so that
// activations stay in a sane range through any depth.

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "gguf/reader.h"

namespace pagoda::tools {

struct RandomModelSpec {
  std::string architecture = "llama";  // llama | qwen2 | qwen3 | gpt2
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;  // 0: n_head
  int32_t n_ff = 0;
  int32_t n_vocab = 0;          // 0: the tokenizer's vocabulary size
  int32_t head_dim = 0;         // 0: n_embd / n_head
  int32_t n_ctx = 4096;         // context_length (and gpt2's position table)
  bool tie_embeddings = false;  // no output.weight: the token embedding projects back
  // A tensor type name ("q4_K", "q8_0", "f16", ...): every matrix in that type; or a
  // llama-quantize mix ("q4_K_M", "q5_K_M"): more bits for the output, attn_v and
  // ffn_down of some layers. Rows whose length is no multiple of the type's block fall
  // back to a type that fits, as llama-quantize does.
  std::string weight_type = "f16";
  uint64_t seed = 1;
  int n_threads = 0;  // 0: one per physical core
  // Built-in vocabulary only: control tokens at its last ids (a family's tool-call
  // markers such as [TOOL_CALLS], to try them as a real vocabulary holds them).
  std::vector<std::string> control_tokens;
};

// Writes the model to `path`. `tokenizer` (may be null) donates its tokenizer.* keys
// and the vocabulary size; without one, a byte-fallback SentencePiece vocabulary of
// n_vocab tokens (at least 260) is made up. Fails on an inconsistent shape or an
// unknown architecture or type, naming the problem.
Status write_random_model(const RandomModelSpec& spec, const gguf::Reader* tokenizer,
                          const std::string& path);

}  // namespace pagoda::tools
