#pragma once
// Whether two tokenizers share one vocabulary: the same size and, id for id, the same
// token text. Speculative decoding needs it, since the draft model's proposals are ids
// the target model verifies.

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer {

// OK when `draft` has `target`'s vocabulary; otherwise one line naming the first
// difference (the sizes, or the first id whose text differs).
Status check_same_vocabulary(const Tokenizer& target, const Tokenizer& draft);

}  // namespace pagoda::tokenizer
