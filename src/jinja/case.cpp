// Python's case mappings over UTF-8 (str.upper, lower, swapcase, capitalize, title),
// from the tables gen_case_tables.py generates.
#include <algorithm>

#include "jinja/case_tables.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

using case_data::CaseRun;
using case_data::CaseSpecial;

struct CaseTable {
  const CaseRun* runs;
  size_t run_count;
  const CaseSpecial* specials;
  size_t special_count;
};

const CaseTable kUpper{case_data::kUpperRuns, case_data::kUpperRunCount, case_data::kUpperSpecials,
                       case_data::kUpperSpecialCount};
const CaseTable kLower{case_data::kLowerRuns, case_data::kLowerRunCount, case_data::kLowerSpecials,
                       case_data::kLowerSpecialCount};
const CaseTable kTitle{case_data::kTitleRuns, case_data::kTitleRunCount, case_data::kTitleSpecials,
                       case_data::kTitleSpecialCount};

// Appends the mapping of `cpt` in `table`; returns false when the table has none.
bool append_mapped(const CaseTable& table, uint32_t cpt, std::string& out) {
  const CaseSpecial* special_end = table.specials + table.special_count;
  const CaseSpecial* special = std::lower_bound(
      table.specials, special_end, cpt, [](const CaseSpecial& s, uint32_t c) { return s.cpt < c; });
  if (special != special_end && special->cpt == cpt) {
    out += special->utf8;
    return true;
  }
  const CaseRun* run_end = table.runs + table.run_count;
  const CaseRun* run = std::upper_bound(table.runs, run_end, cpt,
                                        [](uint32_t c, const CaseRun& r) { return c < r.first; });
  if (run == table.runs) return false;
  --run;
  if (cpt > run->last || (cpt - run->first) % run->stride != 0) return false;
  append_codepoint(out, static_cast<uint32_t>(static_cast<int64_t>(cpt) + run->delta));
  return true;
}

// One character of `text` (its bytes `original`, kept as they are when unmapped, so
// invalid UTF-8 passes through unchanged).
void append_case(const CaseTable& table, uint32_t cpt, std::string_view original,
                 std::string& out) {
  if (!append_mapped(table, cpt, out)) out += original;
}

void append_title(uint32_t cpt, std::string_view original, std::string& out) {
  if (!append_mapped(kTitle, cpt, out)) append_case(kUpper, cpt, original, out);
}

// Calls f(cpt, original bytes) for each character of `text`.
template <typename F>
void for_each_char(std::string_view text, F&& f) {
  for (size_t offset = 0; offset < text.size();) {
    const size_t at = offset;
    const uint32_t cpt = next_codepoint(text, offset);
    f(cpt, text.substr(at, offset - at), at, offset);
  }
}

uint8_t cased_flags(uint32_t cpt) {
  const auto* end = case_data::kCasedRanges + case_data::kCasedRangeCount;
  const auto* range =
      std::upper_bound(case_data::kCasedRanges, end, cpt,
                       [](uint32_t c, const case_data::CasedRange& r) { return c < r.first; });
  if (range == case_data::kCasedRanges) return 0;
  --range;
  return cpt <= range->last ? range->flags : 0;
}

bool is_cased(uint32_t cpt) {
  return cased_flags(cpt) != 0;
}

constexpr uint32_t kCapitalSigma = 0x03A3;
constexpr uint32_t kFinalSigma = 0x03C2;

// Python lowers Σ to ς at the end of a word: after a cased letter and not before one.
bool is_final_sigma(std::string_view text, size_t at, size_t next) {
  if (at == 0) return false;
  size_t back = at - 1;
  while (back > 0 && (static_cast<uint8_t>(text[back]) & 0xC0) == 0x80) --back;
  size_t probe = back;
  if (!is_cased(next_codepoint(text, probe))) return false;
  if (next >= text.size()) return true;
  size_t forward = next;
  return !is_cased(next_codepoint(text, forward));
}

}  // namespace

bool is_cased_lower(uint32_t cpt) {
  return (cased_flags(cpt) & case_data::kLowercase) != 0;
}
bool is_cased_upper(uint32_t cpt) {
  return (cased_flags(cpt) & case_data::kUppercase) != 0;
}

std::string to_upper(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_char(text, [&](uint32_t cpt, std::string_view original, size_t, size_t) {
    append_case(kUpper, cpt, original, out);
  });
  return out;
}

std::string to_lower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_char(text, [&](uint32_t cpt, std::string_view original, size_t at, size_t next) {
    if (cpt == kCapitalSigma && is_final_sigma(text, at, next)) {
      append_codepoint(out, kFinalSigma);
    } else {
      append_case(kLower, cpt, original, out);
    }
  });
  return out;
}

std::string swap_case(std::string_view text) {
  std::string out;
  for_each_char(text, [&](uint32_t cpt, std::string_view original, size_t, size_t) {
    if (is_cased_upper(cpt)) {
      append_case(kLower, cpt, original, out);
    } else if (is_cased_lower(cpt)) {
      append_case(kUpper, cpt, original, out);
    } else {
      out += original;
    }
  });
  return out;
}

std::string capitalize(std::string_view text) {
  if (text.empty()) return {};
  size_t offset = 0;
  const uint32_t cpt = next_codepoint(text, offset);
  std::string out;
  append_title(cpt, text.substr(0, offset), out);
  return out + to_lower(text.substr(offset));
}

std::string title(std::string_view text) {
  std::string out;
  bool previous_is_cased = false;
  for_each_char(text, [&](uint32_t cpt, std::string_view original, size_t, size_t) {
    if (previous_is_cased) {
      append_case(kLower, cpt, original, out);
    } else {
      append_title(cpt, original, out);
    }
    previous_is_cased = is_cased(cpt);
  });
  return out;
}

}  // namespace pagoda::jinja
