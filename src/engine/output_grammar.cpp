#include "engine/output_grammar.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "grammar/compiled_grammar.h"
#include "grammar/vocab_index.h"

namespace pagoda::engine {

Expected<OutputGrammar> OutputGrammar::create(std::shared_ptr<const GrammarConstraint> constraint,
                                              int32_t n_vocab) {
  if (!constraint || !constraint->grammar) {
    return invalid_argument("grammar constraint: no compiled grammar");
  }
  const int32_t grammar_vocab = constraint->grammar->vocab().n_vocab();
  if (grammar_vocab != n_vocab) {
    return invalid_argument("grammar constraint: compiled for a vocabulary of " +
                            std::to_string(grammar_vocab) + " tokens, the model has " +
                            std::to_string(n_vocab));
  }
  return OutputGrammar(std::move(constraint), n_vocab);
}

OutputGrammar::OutputGrammar(std::shared_ptr<const GrammarConstraint> constraint, int32_t n_vocab)
    : constraint_(std::move(constraint)),
      matcher_(constraint_->grammar),
      active_(constraint_->triggers.empty()),
      mask_(grammar::bitmask_words(n_vocab)) {
  for (const std::string& trigger : constraint_->triggers) {
    longest_trigger_ = std::max(longest_trigger_, trigger.size());
  }
}

std::span<const uint32_t> OutputGrammar::next_mask() {
  if (!active_) return {};
  matcher_.fill_next_token_bitmask(mask_);
  return mask_;
}

Status OutputGrammar::accept(int32_t token) {
  if (!active_) {
    watch_for_trigger(token);
    return {};
  }
  if (!matcher_.accept_token(token)) {
    return internal_error("grammar constraint: token " + std::to_string(token) +
                          " is not allowed here");
  }
  return {};
}

void OutputGrammar::watch_for_trigger(int32_t token) {
  if (abandoned_ || constraint_->triggers.empty()) return;
  tail_ += constraint_->grammar->vocab().token_bytes(token);
  size_t start = std::string::npos;
  for (const std::string& trigger : constraint_->triggers) {
    start = std::min(start, tail_.find(trigger));
  }
  if (start == std::string::npos) {
    // Keep only the bytes a trigger could still begin in.
    const size_t keep = longest_trigger_ > 0 ? longest_trigger_ - 1 : 0;
    if (tail_.size() > keep) tail_.erase(0, tail_.size() - keep);
    return;
  }
  active_ = matcher_.accept_bytes(std::string_view(tail_).substr(start));
  abandoned_ = !active_;
  tail_.clear();
}

bool OutputGrammar::finished() const {
  return active_ && (matcher_.is_completed() || matcher_.is_terminated());
}

}  // namespace pagoda::engine
