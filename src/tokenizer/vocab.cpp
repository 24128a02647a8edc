#include "tokenizer/vocab.h"

#include <algorithm>

#include "tokenizer/vocab_loader.h"

namespace pagoda::tokenizer {
namespace {

constexpr std::string_view kKeyModel = "tokenizer.ggml.model";
constexpr std::string_view kKeyPre = "tokenizer.ggml.pre";
constexpr std::string_view kKeyTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kKeyScores = "tokenizer.ggml.scores";
constexpr std::string_view kKeyTokenType = "tokenizer.ggml.token_type";
constexpr std::string_view kKeyMerges = "tokenizer.ggml.merges";

std::string quote(std::string_view text) {
  std::string quoted(1, '\'');
  quoted.append(text);
  quoted.push_back('\'');
  return quoted;
}

// A numeric array as floats (scores may be stored as float32 or int32).
Expected<std::vector<float>> read_scores(const gguf::Reader& reader) {
  const gguf::Value* value = reader.find(kKeyScores);
  if (value != nullptr && value->holds<gguf::Array>() &&
      value->as<gguf::Array>().element_type == gguf::ValueType::INT32) {
    PAGODA_ASSIGN_OR_RETURN(const std::vector<int32_t> ints, reader.get_array<int32_t>(kKeyScores));
    return std::vector<float>(ints.begin(), ints.end());
  }
  return reader.get_array<float>(kKeyScores);
}

uint32_t attributes_of_type(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::kNormal: return kAttrNormal;
    case TokenType::kUnknown: return kAttrUnknown;
    case TokenType::kControl: return kAttrControl;
    case TokenType::kUserDefined: return kAttrUserDefined;
    case TokenType::kUnused: return kAttrUnused;
    case TokenType::kByte: return kAttrByte;
    default: return kAttrUndefined;
  }
}

}  // namespace

Expected<std::unique_ptr<Vocab>> Vocab::from_gguf(const gguf::Reader& reader) {
  std::unique_ptr<Vocab> vocab(new Vocab());
  Status status = VocabLoader(reader, *vocab).load();
  if (!status.ok()) return Status(status.code(), reader.name() + ": " + status.message());
  return vocab;
}

TokenId Vocab::find(std::string_view text) const {
  const auto it = token_ids_.find(text);
  return it == token_ids_.end() ? kNoToken : it->second;
}

int Vocab::merge_rank(std::string_view left, std::string_view right) const {
  const auto it = merge_ranks_.find({left, right});
  return it == merge_ranks_.end() ? -1 : it->second;
}

Status VocabLoader::load() {
  PreTokenizerSpec spec;
  PAGODA_TRY(read_model_type(spec));
  if (vocab_.type_ == VocabType::kBytePairEncoding) {
    PAGODA_ASSIGN_OR_RETURN(vocab_.pre_tokenizer_, PreTokenizer::create(spec));
    PAGODA_TRY(read_merges());
  }
  VocabFlags& flags = vocab_.flags_;
  flags.add_space_prefix = reader_.get_or<bool>("tokenizer.ggml.add_space_prefix", flags.add_space_prefix);
  flags.remove_extra_whitespaces =
      reader_.get_or<bool>("tokenizer.ggml.remove_extra_whitespaces", flags.remove_extra_whitespaces);
  PAGODA_TRY(read_tokens());
  PAGODA_TRY(read_special_ids());
  PAGODA_TRY(read_add_flags());
  detect_special_by_text();
  mark_unused();
  build_eog_set();
  build_special_order();
  build_fallback_tokens();
  build_pieces();
  apply_model_strip_rules();
  return Status::ok_status();
}

Status VocabLoader::read_model_type(PreTokenizerSpec& spec) {
  PAGODA_ASSIGN_OR_RETURN(vocab_.model_name_, reader_.get<std::string>(kKeyModel));
  vocab_.pre_name_ = reader_.get_or<std::string>(kKeyPre, "");
  const std::string& model = vocab_.model_name_;
  SpecialTokenIds& ids = vocab_.special_;
  VocabFlags& flags = vocab_.flags_;
  if (model == "llama") {
    vocab_.type_ = VocabType::kSentencePiece;
    ids.bos = 1;
    ids.eos = 2;
    ids.unk = 0;
    flags.add_space_prefix = true;
    flags.add_bos = true;
    return Status::ok_status();
  }
  if (model == "gpt2") {
    vocab_.type_ = VocabType::kBytePairEncoding;
    ids.bos = 11;  // the reference's historical defaults (Falcon's <|endoftext|>)
    ids.eos = 11;
    PAGODA_ASSIGN_OR_RETURN(spec, find_pre_tokenizer_spec(vocab_.pre_name_));
    flags.escape_whitespaces = spec.escape_whitespaces;
    flags.clean_spaces = spec.clean_spaces;
    flags.ignore_merges = spec.ignore_merges;
    flags.add_bos = spec.force_add_bos;
    flags.add_sep = spec.add_sep;
    if (spec.clear_bos) ids.bos = kNoToken;
    return Status::ok_status();
  }
  static constexpr std::string_view kKnownUnsupported[] = {"bert", "t5", "rwkv", "plamo2", "gemma4",
                                                           "hybriddna", "whitespace", "no_vocab", "none"};
  if (std::find(std::begin(kKnownUnsupported), std::end(kKnownUnsupported), model) != std::end(kKnownUnsupported)) {
    return unsupported("tokenizer model " + quote(model) +
                       " is not supported (supported: 'llama' SentencePiece, 'gpt2' byte-level BPE)");
  }
  return unsupported("unknown tokenizer model " + quote(model));
}

Status VocabLoader::read_merges() {
  if (!reader_.has(kKeyMerges) && vocab_.pre_name_ == "kimi-k2") return Status::ok_status();  // merges are optional there
  PAGODA_ASSIGN_OR_RETURN(vocab_.merge_storage_, reader_.get_array<std::string>(kKeyMerges));
  vocab_.merge_ranks_.reserve(vocab_.merge_storage_.size());
  for (size_t rank = 0; rank < vocab_.merge_storage_.size(); ++rank) {
    const std::string_view merge = vocab_.merge_storage_[rank];
    // "left right", split at the first space after the first character; a merge without
    // one pairs two empty strings, which no word ever asks for.
    const size_t space = merge.find(' ', 1);
    std::pair<std::string_view, std::string_view> key;
    if (space != std::string_view::npos) key = {merge.substr(0, space), merge.substr(space + 1)};
    vocab_.merge_ranks_.emplace(key, static_cast<int>(rank));  // the first rank of a pair wins
  }
  return Status::ok_status();
}

Status VocabLoader::read_tokens() {
  PAGODA_ASSIGN_OR_RETURN(vocab_.texts_, reader_.get_array<std::string>(kKeyTokens));
  const size_t n = vocab_.texts_.size();
  if (n == 0) return corrupt_file("the vocabulary (" + std::string(kKeyTokens) + ") is empty");
  if (n > static_cast<size_t>(INT32_MAX)) return corrupt_file("the vocabulary has too many tokens");
  if (reader_.has(kKeyScores)) {
    PAGODA_ASSIGN_OR_RETURN(vocab_.scores_, read_scores(reader_));
    if (vocab_.scores_.size() < n) {
      return corrupt_file(std::string(kKeyScores) + " has " + std::to_string(vocab_.scores_.size()) +
                          " entries for " + std::to_string(n) + " tokens");
    }
    vocab_.scores_.resize(n);
  } else {
    vocab_.scores_.assign(n, 0.0f);
  }
  vocab_.attrs_.assign(n, kAttrNormal);
  if (reader_.has(kKeyTokenType)) {
    PAGODA_ASSIGN_OR_RETURN(const std::vector<int32_t> types, reader_.get_array<int32_t>(kKeyTokenType));
    if (types.size() < n) {
      return corrupt_file(std::string(kKeyTokenType) + " has " + std::to_string(types.size()) + " entries for " +
                          std::to_string(n) + " tokens");
    }
    for (size_t i = 0; i < n; ++i) vocab_.attrs_[i] = attributes_of_type(types[i]);
  }
  vocab_.token_ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string& text = vocab_.texts_[i];
    if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";
  }
  for (size_t i = 0; i < n; ++i) {
    const auto [it, inserted] = vocab_.token_ids_.emplace(vocab_.texts_[i], static_cast<TokenId>(i));
    if (!inserted) {
      return corrupt_file("duplicate token in vocabulary: " + quote(vocab_.texts_[i]) + " has ids " +
                          std::to_string(it->second) + " and " + std::to_string(i));
    }
  }
  return Status::ok_status();
}

Status VocabLoader::read_special_ids() {
  SpecialTokenIds& ids = vocab_.special_;
  const std::pair<std::string_view, TokenId*> keys[] = {
      {"tokenizer.ggml.bos_token_id", &ids.bos},         {"tokenizer.ggml.eos_token_id", &ids.eos},
      {"tokenizer.ggml.eot_token_id", &ids.eot},         {"tokenizer.ggml.eom_token_id", &ids.eom},
      {"tokenizer.ggml.unknown_token_id", &ids.unk},     {"tokenizer.ggml.seperator_token_id", &ids.sep},
      {"tokenizer.ggml.padding_token_id", &ids.pad},     {"tokenizer.ggml.mask_token_id", &ids.mask},
      {"tokenizer.ggml.fim_pre_token_id", &ids.fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &ids.fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &ids.fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &ids.fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &ids.fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &ids.fim_sep},
      // Older files name the fill-in-the-middle tokens so.
      {"tokenizer.ggml.prefix_token_id", &ids.fim_pre},  {"tokenizer.ggml.suffix_token_id", &ids.fim_suf},
      {"tokenizer.ggml.middle_token_id", &ids.fim_mid},
  };
  for (const auto& [key, id] : keys) {
    if (!vocab_.contains(*id)) *id = kNoToken;  // a default outside this vocabulary
    if (!reader_.has(key)) continue;
    const Expected<int64_t> value = reader_.get_int(key);
    // An id outside the vocabulary (often 0xFFFFFFFF for "none") keeps the default.
    if (value.ok() && *value >= 0 && *value < vocab_.size()) *id = static_cast<TokenId>(*value);
  }
  return Status::ok_status();
}

Status VocabLoader::read_add_flags() {
  VocabFlags& flags = vocab_.flags_;
  flags.add_bos = reader_.get_or<bool>("tokenizer.ggml.add_bos_token", flags.add_bos);
  flags.add_eos = reader_.get_or<bool>("tokenizer.ggml.add_eos_token", flags.add_eos);
  flags.add_sep = reader_.get_or<bool>("tokenizer.ggml.add_sep_token", flags.add_sep);
  const struct {
    bool enabled;
    TokenId id;
    const char* what;
  } checks[] = {{flags.add_bos, vocab_.special_.bos, "add_bos_token is true, but there is no BOS token"},
                {flags.add_eos, vocab_.special_.eos, "add_eos_token is true, but there is no EOS token"},
                {flags.add_sep, vocab_.special_.sep, "add_sep_token is true, but there is no SEP token"}};
  for (const auto& check : checks) {
    if (check.enabled && check.id == kNoToken) return corrupt_file(std::string("tokenizer: ") + check.what);
  }
  return Status::ok_status();
}

}  // namespace pagoda::tokenizer
