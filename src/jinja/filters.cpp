// jinja2's built-in filters on strings and scalars, Hugging Face's tojson, and the
// table of every filter by name (sequence filters are in filters_seq.cpp).
#include <algorithm>
#include <iterator>

#include "jinja/args.h"
#include "jinja/builtins.h"
#include "jinja/filters_impl.h"
#include "jinja/json.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

Expected<Value> filter_trim(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("trim", std::move(args), {{"chars", Value(None{})}}));
  std::optional<std::string> chars;
  if (!a[0].is_none()) {
    PAGODA_ASSIGN_OR_RETURN(chars, string_arg("trim", "chars", a[0]));
  }
  return Value(strip(to_str(input), chars, true, true));
}

template <std::string (*kConvert)(std::string_view)>
Expected<Value> filter_convert(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("filter", std::move(args), {}).status());
  return Value(kConvert(to_str(input)));
}

// jinja2's title: words begin after '-', whitespace or an opening bracket, and each
// piece is first letter upper + rest lower (not str.title, which splits on any
// non-letter).
std::string jinja_title(std::string_view text) {
  std::string out;
  bool word_start = true;
  for (size_t offset = 0; offset < text.size();) {
    const size_t at = offset;
    const uint32_t cpt = next_codepoint(text, offset);
    const bool separator =
        is_space(cpt) || cpt == '-' || cpt == '(' || cpt == '{' || cpt == '[' || cpt == '<';
    const std::string_view original = text.substr(at, offset - at);
    out += separator ? std::string(original) : word_start ? to_upper(original) : to_lower(original);
    word_start = separator;
  }
  return out;
}

Expected<Value> filter_replace(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(
      auto a, bind_args("replace", std::move(args),
                        {{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value(None{})}}));
  CallArgs method_args;
  method_args.positional = {Value(to_str(a[0])), Value(to_str(a[1])),
                            a[2].is_none() ? Value(-1) : a[2]};
  PAGODA_ASSIGN_OR_RETURN(Value method, get_attribute(Value(to_str(input)), "replace"));
  return interpreter.call(method, std::move(method_args));
}

// indent and truncate use their input as a str without converting it, as
// jinja2's do, so other types fail as they fail in Python.
Status require_string(std::string_view filter, const Value& input) {
  if (input.is_string()) return {};
  if (input.is_undefined()) return undefined_error(input);
  return invalid_argument(std::string(filter) + ": expected a string, got '" +
                          std::string(type_name(input)) + "'");
}

Expected<Value> filter_indent(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_TRY(require_string("indent", input));
  PAGODA_ASSIGN_OR_RETURN(
      auto a, bind_args("indent", std::move(args),
                        {{"width", Value(4)}, {"first", Value(false)}, {"blank", Value(false)}}));
  std::string indentation;
  if (a[0].is_string()) {
    indentation = a[0].as_string();
  } else {
    PAGODA_ASSIGN_OR_RETURN(const int64_t width, int_arg("indent", "width", a[0]));
    PAGODA_TRY(interpreter.check_size(static_cast<size_t>(std::max<int64_t>(width, 0))));
    indentation.assign(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  }
  const std::vector<std::string> lines = splitlines(to_str(input) + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (truthy(a[2]) || !lines[i].empty())) out += indentation;
    out += lines[i];
    PAGODA_TRY(interpreter.check_size(out.size()));
  }
  if (truthy(a[1])) out = indentation + out;
  return Value(std::move(out));
}

Expected<Value> filter_center(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("center", std::move(args), {{"width", Value(80)}}));
  PAGODA_ASSIGN_OR_RETURN(Value method, get_attribute(Value(to_str(input)), "center"));
  CallArgs method_args;
  method_args.positional = {a[0]};
  return interpreter.call(method, std::move(method_args));
}

Expected<Value> filter_truncate(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(require_string("truncate", input));
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("truncate", std::move(args),
                                            {{"length", Value(255)},
                                             {"killwords", Value(false)},
                                             {"end", Value("...")},
                                             {"leeway", Value(5)}}));
  PAGODA_ASSIGN_OR_RETURN(const int64_t length, int_arg("truncate", "length", a[0]));
  const std::string end = to_str(a[2]);
  PAGODA_ASSIGN_OR_RETURN(const int64_t leeway, a[3].is_none()
                                                    ? Expected<int64_t>(int64_t{5})
                                                    : int_arg("truncate", "leeway", a[3]));
  const auto end_length = static_cast<int64_t>(codepoint_count(end));
  if (length < end_length)
    return invalid_argument("truncate(): expected length >= " + std::to_string(end_length));
  if (leeway < 0) return invalid_argument("truncate(): expected leeway >= 0");
  const std::string text = to_str(input);
  const std::vector<size_t> offsets = codepoint_offsets(text);
  if (static_cast<int64_t>(offsets.size() - 1) <= length + leeway) return Value(text);
  std::string head = text.substr(0, offsets[static_cast<size_t>(length - end_length)]);
  if (!truthy(a[1])) {
    const size_t space = head.rfind(' ');
    if (space != std::string::npos) head.resize(space);
  }
  return Value(head + end);
}

Expected<Value> filter_wordcount(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("wordcount", std::move(args), {}).status());
  const std::string text = to_str(input);
  int64_t words = 0;
  bool in_word = false;
  for (size_t offset = 0; offset < text.size();) {
    const uint32_t cpt = next_codepoint(text, offset);
    const bool word_char = cpt == '_' || is_alpha(cpt) || is_digit(cpt);
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value(words);
}

Expected<Value> filter_escape(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("escape", std::move(args), {}).status());
  std::string out;
  for (char c : to_str(input)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return Value(std::move(out));
}

Expected<Value> filter_safe(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("safe", std::move(args), {}).status());
  return input;  // no autoescaping in chat templates: nothing to mark
}

Expected<Value> filter_string(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("string", std::move(args), {}).status());
  return Value(to_str(input));
}

Expected<Value> filter_default(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a,
                          bind_args("default", std::move(args),
                                    {{"default_value", Value("")}, {"boolean", Value(false)}}));
  if (input.is_undefined() || (truthy(a[1]) && !truthy(input))) return a[0];
  return input;
}

Expected<Value> filter_length(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("length", std::move(args), {}).status());
  PAGODA_ASSIGN_OR_RETURN(const int64_t n, length(input));
  return Value(n);
}

// HF's tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False).
Expected<Value> filter_tojson(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("tojson", std::move(args),
                                            {{"ensure_ascii", Value(false)},
                                             {"indent", Value(None{})},
                                             {"separators", Value(None{})},
                                             {"sort_keys", Value(false)}}));
  JsonDumpOptions options;
  options.ensure_ascii = truthy(a[0]);
  if (a[1].is_string()) {
    options.indent = a[1].as_string();
  } else if (a[1].is_integral()) {
    options.indent =
        std::string(static_cast<size_t>(std::clamp<int64_t>(a[1].as_integral(), 0, 1024)), ' ');
  } else if (!a[1].is_none()) {
    return invalid_argument("tojson(): indent must be an integer or a string");
  }
  if (!a[2].is_none()) {
    if (!a[2].is_list() || a[2].items().size() != 2 || !a[2].items()[0].is_string() ||
        !a[2].items()[1].is_string()) {
      return invalid_argument("tojson(): separators must be a pair of strings");
    }
    options.item_separator = a[2].items()[0].as_string();
    options.key_separator = a[2].items()[1].as_string();
  }
  options.sort_keys = truthy(a[3]);
  options.max_bytes = interpreter.limits().max_output_bytes;
  PAGODA_ASSIGN_OR_RETURN(std::string json, dump_json(input, options));
  PAGODA_TRY(interpreter.check_size(json.size()));
  return Value(std::move(json));
}

Expected<Value> filter_format(Interpreter& interpreter, const Value& input, CallArgs args) {
  if (!args.positional.empty() && !args.keyword.empty()) {
    return invalid_argument("can't handle positional and keyword arguments at the same time");
  }
  Value format_args;
  if (!args.keyword.empty()) {
    DictData mapping;
    for (auto& [key, value] : args.keyword) mapping.insert_or_assign(Value(key), std::move(value));
    format_args = Value::dict(std::move(mapping));
  } else {
    format_args = Value::tuple(std::move(args.positional));
  }
  PAGODA_ASSIGN_OR_RETURN(std::string text, percent_format(to_str(input), format_args,
                                                           interpreter.limits().max_output_bytes));
  return Value(std::move(text));
}

}  // namespace

namespace filters {

const NamedFilter kStringFilters[] = {
    {"trim", filter_trim},
    {"upper", filter_convert<to_upper>},
    {"lower", filter_convert<to_lower>},
    {"capitalize", filter_convert<capitalize>},
    {"title", filter_convert<jinja_title>},
    {"replace", filter_replace},
    {"indent", filter_indent},
    {"center", filter_center},
    {"truncate", filter_truncate},
    {"wordcount", filter_wordcount},
    {"escape", filter_escape},
    {"e", filter_escape},
    {"forceescape", filter_escape},
    {"safe", filter_safe},
    {"string", filter_string},
    {"default", filter_default},
    {"d", filter_default},
    {"length", filter_length},
    {"count", filter_length},
    {"tojson", filter_tojson},
    {"format", filter_format},
};
const size_t kStringFilterCount = std::size(kStringFilters);

}  // namespace filters

FilterFn find_filter(std::string_view name) {
  const std::pair<const filters::NamedFilter*, size_t> tables[] = {
      {filters::kStringFilters, filters::kStringFilterCount},
      {filters::kNumberFilters, filters::kNumberFilterCount},
      {filters::kSequenceFilters, filters::kSequenceFilterCount},
  };
  for (const auto& [table, count] : tables) {
    for (size_t i = 0; i < count; ++i) {
      if (table[i].name == name) return table[i].fn;
    }
  }
  return nullptr;
}

}  // namespace pagoda::jinja
