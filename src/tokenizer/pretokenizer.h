#pragma once
// Byte-level BPE pre-tokenization: tokenizer.ggml.pre names a list of regular
// expressions; each one in turn splits every piece the previous ones left (matches
// and the text between them both become pieces). The pieces are then byte-encoded
// into the BPE alphabet and merged one by one.
//
// The regexes behave exactly as the vocabularies' reference tokenizer runs them:
//  * \p{N}, \p{L}, \p{P}, \p{M}, \p{S} (and \p{Lu}, \p{Ll}, \p{Lt}, \p{Lm}, \p{Lo}, which
//    all mean "any letter") are matched on a copy of the text in which every non-ASCII
//    code point is collapsed to one byte naming its category, so that ASCII keeps its own
//    meaning (\p{S} on ASCII is $+<=>^`| only, without '~') and \s matches White_Space;
//  * regexes without categories see the code points themselves, non-ASCII White_Space
//    turned into \v; \s, \d, \w are ASCII classes;
//  * the GPT-2, Llama-3, Kimi-K2 and AFMoE splitters are hand-written state machines.
// The regexes run on PCRE2 with its JIT, each compiled once per tokenizer.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pagoda::tokenizer {

// What a tokenizer.ggml.pre name selects: its regexes and how it adjusts the
// vocabulary's flags.
struct PreTokenizerSpec {
  std::string_view kind;                    // canonical name, e.g. "qwen2"
  std::vector<std::string_view> regexes;    // applied in order
  bool byte_encode = true;                  // map bytes to the BPE alphabet
  bool clean_spaces = true;                 // keep the BPE default of cleaning spaces on decode
  bool ignore_merges = false;
  bool force_add_bos = false;
  bool escape_whitespaces = false;          // ' ' -> U+2581 before splitting (SentencePiece-style BPE)
  bool add_sep = false;
  bool clear_bos = false;                   // no BOS token unless the file names one
  bool newline_runs_whole = false;          // a word of only '\n' that is a token stays whole
};

// The spec for a tokenizer.ggml.pre value; "" (missing) is "default". Unknown names
// give kUnsupported "unknown pre-tokenizer 'X'".
Expected<PreTokenizerSpec> find_pre_tokenizer_spec(std::string_view pre_name);

class PreTokenizer {
 public:
  // Compiles every regex of the spec once.
  static Expected<std::unique_ptr<PreTokenizer>> create(const PreTokenizerSpec& spec);
  ~PreTokenizer();

  // Splits `text` into words: UTF-8 (invalid bytes read as U+FFFD), byte-encoded into
  // the BPE alphabet when the spec says so. Never fails; no word is empty.
  std::vector<std::string> split(std::string_view text) const;

  // Whether words come out byte-encoded into the BPE alphabet.
  bool byte_encoded() const { return byte_encode_; }
  // Whether a word of only '\n' that is a token skips merging (Gemma 4).
  bool keeps_newline_runs() const { return keep_newline_runs_; }

  // The same split as lengths in code points of `cpts`, for tests and tools.
  std::vector<size_t> split_lengths(const std::vector<uint32_t>& cpts) const;

  class Step;  // one regex or hand-written splitter

 private:
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Step>> steps_;
  bool byte_encode_ = true;
  bool keep_newline_runs_ = false;
};

}  // namespace pagoda::tokenizer
