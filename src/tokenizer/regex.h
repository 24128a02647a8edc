#pragma once
// A compiled PCRE2 regular expression (JIT when available) and the match iteration the
// pre-tokenizer needs: every match left to right, an empty match followed by a
// non-empty retry at the same place (as ECMAScript regex iterators step).

#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pagoda::tokenizer {

class Regex {
 public:
  enum class Mode {
    kBytes,  // one code unit per byte; \s, \d, \w are ASCII
    kUtf8,   // UTF-8 code points; \s, \d, \w still ASCII (no Unicode properties)
  };

  static Expected<Regex> compile(std::string_view pattern, Mode mode);

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // Appends each match in `subject` as [begin, end) byte offsets. Subjects in kUtf8 mode
  // must be valid UTF-8 (they are not checked again). Returns an error only when PCRE2
  // gives up (resource limits), after appending the matches found before that point.
  Status find_all(std::string_view subject, std::vector<std::pair<size_t, size_t>>& matches) const;

 private:
  struct Code;
  explicit Regex(std::unique_ptr<Code> code);
  std::unique_ptr<Code> code_;
};

}  // namespace pagoda::tokenizer
