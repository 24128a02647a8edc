#pragma once
// Pieces of decoding shared by Tokenizer::decode and StreamingDetokenizer. Internal.

#include <string>
#include <string_view>

namespace pagoda::tokenizer {

// Hugging Face's clean_up_tokenization_spaces as the reference applies it, in place:
// " ?" " !" " ." " ," lose the space; " ' " becomes "'"; " 's" " 'm" " 're" " 've" lose the
// space (" 't" " 'd" " 'll" keep it).
void clean_up_spaces(std::string& text);

// Where a stream of decoded text may be cut so that cleaning the two parts separately
// equals cleaning the whole: the largest cut whose three preceding bytes hold no space
// and no apostrophe (0 if none).
size_t clean_cut_point(std::string_view text);

// Appends the complete UTF-8 characters at the front of `pending` to `out` and removes
// them from it; invalid bytes become U+FFFD (one per maximal invalid subpart). An
// incomplete character at the end stays in `pending`, unless `final`, when it too
// becomes U+FFFD.
void move_valid_utf8(std::string& pending, std::string& out, bool final);

}  // namespace pagoda::tokenizer
