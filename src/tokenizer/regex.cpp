#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

namespace pagoda::tokenizer {
namespace {

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(error_code, buffer, sizeof(buffer));
  return n < 0 ? "PCRE2 error " + std::to_string(error_code) : std::string(reinterpret_cast<char*>(buffer));
}

// Per-thread match state: match data for one pair of offsets and a JIT stack large
// enough for long runs of repeated groups (the default 32 KiB overflows on a few
// thousand letters for patterns like ((?=\p{L})[^a-z])*). Encoding is reentrant, so
// each thread keeps its own.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);

  MatchState() {
    if (context != nullptr && jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool utf = false;
  ~Code() { pcre2_code_free(code); }
};

Regex::Regex(std::unique_ptr<Code> code) : code_(std::move(code)) {}
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

Expected<Regex> Regex::compile(std::string_view pattern, Mode mode) {
  // ECMAScript's $ matches only at the very end of the subject.
  uint32_t options = PCRE2_DOLLAR_ENDONLY;
  if (mode == Mode::kUtf8) options |= PCRE2_UTF;
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  auto code = std::make_unique<Code>();
  code->utf = mode == Mode::kUtf8;
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                             &error_code, &error_offset, nullptr);
  if (code->code == nullptr) {
    return internal_error("pre-tokenizer regex does not compile at offset " + std::to_string(error_offset) +
                          ": " + pcre2_message(error_code));
  }
  // Without JIT (unsupported platform) pcre2_match interprets; both give the same matches.
  pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE);
  return Regex(std::move(code));
}

Status Regex::find_all(std::string_view subject, std::vector<std::pair<size_t, size_t>>& matches) const {
  MatchState& state = match_state();
  if (state.data == nullptr) return resource_exhausted("cannot allocate PCRE2 match data");
  const auto* text = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const uint32_t base_options = code_->utf ? PCRE2_NO_UTF_CHECK : 0;
  size_t start = 0;
  bool after_empty = false;  // the previous match was empty and ended at `start`
  while (start <= subject.size()) {
    uint32_t options = base_options;
    if (after_empty) options |= PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
    const int rc = pcre2_match(code_->code, text, subject.size(), start, options, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (!after_empty) break;
      // No non-empty match where the empty one was: search again one character on.
      if (start == subject.size()) break;
      ++start;
      if (code_->utf) {
        while (start < subject.size() && (static_cast<uint8_t>(subject[start]) & 0xC0) == 0x80) ++start;
      }
      after_empty = false;
      continue;
    }
    if (rc < 0) return resource_exhausted("pre-tokenizer regex failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ovector[0], end = ovector[1];
    matches.emplace_back(begin, end);
    after_empty = begin == end;
    start = end;
  }
  return Status::ok_status();
}

}  // namespace pagoda::tokenizer
