// What the vocabulary's reference derives from token texts, since files do not always
// say it: end-of-turn and fill-in-the-middle tokens, the end-of-generation set, unused
// control tokens, strip rules of a few models, and each token's decoded piece.

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <span>

#include "core/unicode.h"
#include "tokenizer/byte_alphabet.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda::tokenizer {
namespace {

using Names = std::span<const std::string_view>;

// Texts that mark a token as the end of a turn, a message, or a FIM part.
constexpr std::string_view kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                             "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>",
                             "<end_of_utterance>"};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
                                "▁<PRE>", "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
                                "▁<SUF>", "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
                                "▁<MID>", "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
// Texts of tokens that end generation.
constexpr std::string_view kEogTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
                             "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
                             "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
                             "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["};
// Chat-format tokens that are always rendered (gpt-oss).
constexpr std::string_view kAlwaysShownTexts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

bool is_one_of(std::string_view text, Names names) {
  return std::find(names.begin(), names.end(), text) != names.end();
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The byte a <0xXX> token stands for: the hex digits after "<0x", read as far as they go.
uint8_t byte_of_token_text(std::string_view text) {
  if (text.size() < 3) return 0;
  const std::string digits(text.substr(3, 2));
  return static_cast<uint8_t>(std::strtol(digits.c_str(), nullptr, 16));
}

std::string replace_all(std::string_view text, std::string_view from, char to) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, from.size()) == from) {
      out.push_back(to);
      pos += from.size();
    } else {
      out.push_back(text[pos++]);
    }
  }
  return out;
}

// A byte-level BPE token's bytes; code points outside the byte alphabet are spelled out.
std::string decode_byte_level(const std::string& text) {
  std::string bytes;
  size_t offset = 0;
  while (offset < text.size()) {
    const uint32_t cpt = decode_utf8(text, offset);
    if (const auto byte = unicode_to_byte(cpt)) {
      bytes.push_back(static_cast<char>(*byte));
      continue;
    }
    std::string utf8;
    append_utf8(utf8, cpt);
    bytes += "[UNK_BYTE_0x";
    static constexpr char kHex[] = "0123456789abcdef";
    for (char c : utf8) {
      bytes.push_back(kHex[static_cast<uint8_t>(c) >> 4]);
      bytes.push_back(kHex[static_cast<uint8_t>(c) & 15]);
    }
    bytes += text + "]";
  }
  return bytes;
}

}  // namespace

void VocabLoader::force_control(TokenId id) { vocab_.attrs_[id] |= kAttrControl; }

void VocabLoader::detect_special_by_text() {
  SpecialTokenIds& ids = vocab_.special_;
  const std::pair<TokenId*, Names> kinds[] = {{&ids.eot, kEotTexts},         {&ids.eom, kEomTexts},
                                              {&ids.fim_pre, kFimPreTexts}, {&ids.fim_suf, kFimSufTexts},
                                              {&ids.fim_mid, kFimMidTexts}, {&ids.fim_pad, kFimPadTexts},
                                              {&ids.fim_rep, kFimRepTexts}, {&ids.fim_sep, kFimSepTexts}};
  for (const auto& [id, names] : kinds) {
    if (*id != kNoToken) continue;
    // Of several candidates the lowest id wins (the reference's pick depends on hash order).
    for (TokenId t = 0; t < vocab_.size() && *id == kNoToken; ++t) {
      if (is_one_of(vocab_.texts_[t], names)) {
        *id = t;
        force_control(t);
      }
    }
  }
}

void VocabLoader::mark_unused() {
  for (TokenId t = 0; t < vocab_.size(); ++t) {
    if ((vocab_.attrs_[t] & kAttrControl) && vocab_.texts_[t].find("unused") != std::string::npos) {
      vocab_.attrs_[t] |= kAttrUnused;
    }
  }
}

void VocabLoader::build_eog_set() {
  const SpecialTokenIds& ids = vocab_.special_;
  std::vector<bool>& eog = vocab_.is_eog_;
  eog.assign(vocab_.size(), false);
  for (TokenId id : {ids.fim_pad, ids.fim_rep, ids.fim_sep}) {
    if (id != kNoToken) eog[id] = true;
  }
  for (TokenId t = 0; t < vocab_.size(); ++t) {
    const std::string& text = vocab_.texts_[t];
    if (is_one_of(text, kEogTexts)) {
      eog[t] = true;
      force_control(t);
    }
    if (is_one_of(text, kAlwaysShownTexts)) vocab_.attrs_[t] = kAttrUserDefined;
  }
  for (TokenId id : {ids.eos, ids.eot, ids.eom}) {
    if (id != kNoToken) eog[id] = true;
  }
  // gpt-oss and Solar Open end turns with <|return|>/<|call|> (or <|calls|>/<|flush|>):
  // their <|end|> only ends a message and must not stop generation.
  const TokenId end = vocab_.find("<|end|>");
  const auto eog_text = [&](std::string_view text) {
    const TokenId id = vocab_.find(text);
    return id != kNoToken && eog[id];
  };
  const bool has_call = eog_text("<|call|>") || eog_text("<|calls|>");
  if (end != kNoToken && eog[end] && has_call && (eog_text("<|return|>") || eog_text("<|flush|>"))) {
    eog[end] = false;
    vocab_.attrs_[end] = kAttrUserDefined;
  }
  // Gemma 4 and PaddleOCR: with <|tool_response>, </s> is ordinary text.
  const TokenId end_s = vocab_.find("</s>");
  if (end_s != kNoToken && eog[end_s] && eog_text("<|tool_response>")) {
    eog[end_s] = false;
    vocab_.attrs_[end_s] = kAttrNormal;
  }
  for (TokenId t = 0; t < vocab_.size(); ++t) {
    if (eog[t]) vocab_.eog_list_.push_back(t);
  }
}

void VocabLoader::build_special_order() {
  std::vector<TokenId>& order = vocab_.special_by_length_;
  for (TokenId t = 0; t < vocab_.size(); ++t) {
    if (vocab_.attrs_[t] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) order.push_back(t);
  }
  std::stable_sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
    return vocab_.texts_[a].size() > vocab_.texts_[b].size();
  });
}

void VocabLoader::build_fallback_tokens() {
  const bool hex_tokens = vocab_.type_ == VocabType::kSentencePiece || !vocab_.pre_tokenizer_->byte_encoded();
  for (int byte = 0; byte < 256; ++byte) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    const std::string single(1, static_cast<char>(byte));
    TokenId id = kNoToken;
    if (hex_tokens) id = vocab_.find(std::string("<0x") + kHex[byte >> 4] + kHex[byte & 15] + ">");
    if (id == kNoToken && (vocab_.type_ == VocabType::kSentencePiece || !hex_tokens)) id = vocab_.find(single);
    vocab_.fallback_tokens_[byte] = id;
  }
}

void VocabLoader::build_pieces() {
  const bool spm = vocab_.type_ == VocabType::kSentencePiece;
  const bool unescape = spm || vocab_.flags_.escape_whitespaces;
  vocab_.pieces_.resize(vocab_.size());
  for (TokenId t = 0; t < vocab_.size(); ++t) {
    const uint32_t attr = vocab_.attrs_[t];
    const std::string& text = vocab_.texts_[t];
    std::string& piece = vocab_.pieces_[t];
    if (attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) {
      piece = text;
    } else if (attr & kAttrNormal) {
      piece = unescape ? replace_all(text, "\xE2\x96\x81", ' ') : decode_byte_level(text);
    } else if (attr & kAttrByte) {
      piece = std::string(1, static_cast<char>(byte_of_token_text(text)));
    }
  }
}

void VocabLoader::apply_model_strip_rules() {
  const std::string name = lowercase(reader_.get_or<std::string>("general.name", ""));
  const std::string arch = reader_.get_or<std::string>("general.architecture", "");
  const std::string& pre = vocab_.pre_name_;
  const auto contains = [](std::string_view text, std::initializer_list<std::string_view> parts) {
    return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return text.find(p) != text.npos; });
  };
  const auto set = [&](std::string_view text, TokenAttr attr, bool on) {
    const TokenId id = vocab_.find(text);
    if (id == kNoToken) return;
    vocab_.attrs_[id] = on ? (vocab_.attrs_[id] | attr) : (vocab_.attrs_[id] & ~attr);
  };
  if (contains(pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) || contains(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
    set("<mask>", kAttrLstrip, true);
  } else if (contains(name, {"phi-3", "phi3"})) {
    for (TokenId id : vocab_.special_by_length_) vocab_.attrs_[id] |= kAttrRstrip;
    set("</s>", kAttrRstrip, true);
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) set(text, kAttrRstrip, false);
  } else if (contains(name, {"modern-bert"})) {
    set("[MASK]", kAttrLstrip, true);
  }
}

}  // namespace pagoda::tokenizer
