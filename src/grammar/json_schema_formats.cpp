#include "grammar/json_schema_formats.h"

namespace pagoda::grammar {
namespace {

constexpr const char* kDate =
    "[0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01])";
constexpr const char* kTime =
    "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" ([0-5] [0-9] | \"60\") (\".\" [0-9]+)? "
    "(\"Z\" | [+\\-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";
constexpr const char* kUuid =
    "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
    "[0-9a-fA-F]{12}";
// RFC 5322's dot-atom characters: none of them needs escaping in a JSON string.
constexpr const char* kEmailAtom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-]+";
constexpr const char* kDomainLabel = "[A-Za-z0-9] ([A-Za-z0-9\\-]* [A-Za-z0-9])?";

}  // namespace

std::optional<std::string> string_format_gbnf(std::string_view format) {
  if (format == "date") return std::string(kDate);
  if (format == "time") return std::string(kTime);
  if (format == "date-time") return std::string(kDate) + " \"T\" " + kTime;
  if (format == "uuid") return std::string(kUuid);
  if (format == "email") {
    const std::string atom = kEmailAtom;
    const std::string label = std::string("(") + kDomainLabel + ")";
    return atom + " (\".\" " + atom + ")* \"@\" " + label + " (\".\" " + label + ")+";
  }
  return std::nullopt;
}

}  // namespace pagoda::grammar
