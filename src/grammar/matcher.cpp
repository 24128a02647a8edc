#include "grammar/matcher.h"

#include <algorithm>

namespace pagoda::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar) : grammar_(std::move(grammar)) {}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> bitmask) const {
  std::fill(bitmask.begin(), bitmask.end(), 0u);
}
bool GrammarMatcher::accept_token(int32_t) { return false; }
bool GrammarMatcher::accept_bytes(std::string_view) { return false; }
bool GrammarMatcher::can_terminate() const { return state_.can_terminate; }
bool GrammarMatcher::is_completed() const { return state_.can_terminate && state_.tops.empty(); }
bool GrammarMatcher::is_terminated() const { return state_.terminated; }
void GrammarMatcher::rollback(int32_t) {}
void GrammarMatcher::reset() {}

}  // namespace pagoda::grammar
