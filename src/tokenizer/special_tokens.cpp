#include "tokenizer/special_tokens.h"

namespace pagoda::tokenizer {
namespace {

bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Cuts every occurrence of `token` out of the text fragment `fragment`, appending the
// pieces to `out`.
void cut_token(const Vocab& vocab, std::string_view text, TokenId token, const Fragment& fragment,
               std::vector<Fragment>& out) {
  const std::string& token_text = vocab.text(token);
  const uint32_t attr = vocab.attributes(token);
  const size_t end = fragment.offset + fragment.length;
  const std::string_view searched = text.substr(0, end);
  size_t start = fragment.offset;
  for (size_t match = searched.find(token_text, start); match != std::string_view::npos;
       match = searched.find(token_text, start)) {
    size_t left_end = match;
    if (attr & kAttrLstrip) {
      while (left_end > start && is_ascii_space(text[left_end - 1])) --left_end;
    }
    if (left_end > start) out.push_back({kNoToken, start, left_end - start});
    out.push_back({token, match, token_text.size()});
    start = match + token_text.size();
    if (attr & kAttrRstrip) {
      while (start < end && is_ascii_space(text[start])) ++start;
    }
  }
  if (start < end) out.push_back({kNoToken, start, end - start});
}

}  // namespace

std::vector<Fragment> split_special_tokens(const Vocab& vocab, std::string_view text, bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, 0, text.size()});
  std::vector<Fragment> next;
  for (TokenId token : vocab.special_tokens_by_length()) {
    if (!parse_special && (vocab.attributes(token) & (kAttrControl | kAttrUnknown))) continue;
    next.clear();
    for (const Fragment& fragment : fragments) {
      if (fragment.is_text()) {
        cut_token(vocab, text, token, fragment, next);
      } else {
        next.push_back(fragment);
      }
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace pagoda::tokenizer
