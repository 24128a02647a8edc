// Methods of Python's str, dict, list and tuple that templates call ("a".upper(),
// message.get('content'), text.split('\n')). Methods that would modify a value are
// not here: the sandbox forbids them (see access.cpp).
#include <algorithm>

#include "jinja/args.h"
#include "jinja/builtins.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

using Method = Expected<Value> (*)(Interpreter&, const Value&, CallArgs);

// Optional `chars` argument of strip(): None or a string.
Expected<std::optional<std::string>> optional_string(std::string_view function,
                                                     const Value& value) {
  if (value.is_none()) return std::optional<std::string>();
  PAGODA_ASSIGN_OR_RETURN(std::string text, string_arg(function, "chars", value));
  return std::optional<std::string>(std::move(text));
}

template <bool kLeft, bool kRight>
Expected<Value> str_strip(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("strip", std::move(args), {{"chars", Value(None{})}}));
  PAGODA_ASSIGN_OR_RETURN(auto chars, optional_string("strip", a[0]));
  return Value(strip(self.as_string(), chars, kLeft, kRight));
}

template <bool kReverse>
Expected<Value> str_split(Interpreter& interpreter, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("split", std::move(args),
                                            {{"sep", Value(None{})}, {"maxsplit", Value(-1)}}));
  std::optional<std::string> sep;
  if (!a[0].is_none()) {
    PAGODA_ASSIGN_OR_RETURN(sep, string_arg("split", "sep", a[0]));
  }
  if (sep && sep->empty()) return invalid_argument("empty separator");
  PAGODA_ASSIGN_OR_RETURN(const int64_t maxsplit, int_arg("split", "maxsplit", a[1]));
  std::vector<std::string> parts =
      kReverse ? rsplit(self.as_string(), sep, maxsplit) : split(self.as_string(), sep, maxsplit);
  PAGODA_TRY(interpreter.charge(static_cast<int64_t>(parts.size())));
  std::vector<Value> items(parts.begin(), parts.end());
  return Value::list(std::move(items));
}

Expected<Value> str_splitlines(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a,
                          bind_args("splitlines", std::move(args), {{"keepends", Value(false)}}));
  std::vector<std::string> lines = splitlines(self.as_string(), truthy(a[0]));
  return Value::list(std::vector<Value>(lines.begin(), lines.end()));
}

template <std::string (*kConvert)(std::string_view)>
Expected<Value> str_convert(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_TRY(bind_args("str method", std::move(args), {}).status());
  return Value(kConvert(self.as_string()));
}

// startswith / endswith: a string or a tuple of strings.
template <bool kEnd>
Expected<Value> str_affix(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args(kEnd ? "endswith" : "startswith", std::move(args),
                                            {{"affix", std::nullopt}}));
  std::vector<Value> candidates = a[0].is_tuple() ? a[0].items() : std::vector<Value>{a[0]};
  const std::string_view text = self.as_string();
  for (const Value& candidate : candidates) {
    if (!candidate.is_string()) {
      return invalid_argument(std::string(kEnd ? "endswith" : "startswith") +
                              " first arg must be str or a tuple of str, not " +
                              std::string(type_name(candidate)));
    }
    const std::string_view affix = candidate.as_string();
    if (affix.size() <= text.size() &&
        (kEnd ? text.substr(text.size() - affix.size()) : text.substr(0, affix.size())) == affix) {
      return Value(true);
    }
  }
  return Value(false);
}

Expected<Value> str_replace(Interpreter& interpreter, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(
      auto a, bind_args("replace", std::move(args),
                        {{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value(-1)}}));
  PAGODA_ASSIGN_OR_RETURN(std::string old, string_arg("replace", "old", a[0]));
  PAGODA_ASSIGN_OR_RETURN(std::string with, string_arg("replace", "new", a[1]));
  PAGODA_ASSIGN_OR_RETURN(const int64_t count, int_arg("replace", "count", a[2]));
  // Bound the result before building it: each replacement adds at most with.size().
  const int64_t n = count_occurrences(self.as_string(), old);
  const int64_t replaced = count < 0 ? n : std::min(n, count);
  PAGODA_TRY(interpreter.check_size(self.as_string().size() +
                                    static_cast<size_t>(replaced) * with.size()));
  return Value(replace(self.as_string(), old, with, count));
}

template <bool kReverse, bool kRaise>
Expected<Value> str_find(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("find", std::move(args), {{"sub", std::nullopt}}));
  PAGODA_ASSIGN_OR_RETURN(std::string sub, string_arg("find", "sub", a[0]));
  const int64_t at = jinja::find(self.as_string(), sub, kReverse);
  if (kRaise && at < 0) return invalid_argument("substring not found");
  return Value(at);
}

Expected<Value> str_count(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("count", std::move(args), {{"sub", std::nullopt}}));
  PAGODA_ASSIGN_OR_RETURN(std::string sub, string_arg("count", "sub", a[0]));
  return Value(count_occurrences(self.as_string(), sub));
}

Expected<Value> str_join(Interpreter& interpreter, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("join", std::move(args), {{"iterable", std::nullopt}}));
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(a[0]));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      return invalid_argument("sequence item " + std::to_string(i) + ": expected str instance, " +
                              std::string(type_name(items[i])) + " found");
    }
    if (i > 0) out += self.as_string();
    out += items[i].as_string();
    PAGODA_TRY(interpreter.check_size(out.size()));
  }
  return Value(std::move(out));
}

// removeprefix / removesuffix
template <bool kSuffix>
Expected<Value> str_remove_affix(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args(kSuffix ? "removesuffix" : "removeprefix",
                                            std::move(args), {{"affix", std::nullopt}}));
  PAGODA_ASSIGN_OR_RETURN(std::string affix, string_arg("removeprefix", "affix", a[0]));
  std::string_view text = self.as_string();
  if (kSuffix && text.size() >= affix.size() && text.substr(text.size() - affix.size()) == affix) {
    text.remove_suffix(affix.size());
  } else if (!kSuffix && text.substr(0, affix.size()) == affix) {
    text.remove_prefix(affix.size());
  }
  return Value(text);
}

// ljust / rjust / center / zfill: pad to `width` characters.
enum class Pad { kLeft, kRight, kCenter, kZero };
template <Pad kPad>
Expected<Value> str_pad(Interpreter& interpreter, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("pad", std::move(args),
                                            {{"width", std::nullopt}, {"fillchar", Value(" ")}}));
  PAGODA_ASSIGN_OR_RETURN(const int64_t width, int_arg("pad", "width", a[0]));
  PAGODA_ASSIGN_OR_RETURN(std::string fill, string_arg("pad", "fillchar", a[1]));
  if (codepoint_count(fill) != 1)
    return invalid_argument("the fill character must be exactly one character long");
  const std::string& text = self.as_string();
  const auto length = static_cast<int64_t>(codepoint_count(text));
  if (width <= length) return self;
  PAGODA_TRY(
      interpreter.check_size(text.size() + static_cast<size_t>(width - length) * fill.size()));
  const int64_t total = width - length;
  int64_t left = kPad == Pad::kRight    ? total
                 : kPad == Pad::kCenter ? total / 2 + (total & width & 1)
                                        : 0;
  if (kPad == Pad::kZero) fill = "0";
  std::string out;
  auto repeat = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) out += fill;
  };
  if (kPad == Pad::kZero) {
    const bool sign = !text.empty() && (text[0] == '-' || text[0] == '+');
    if (sign) out += text[0];
    repeat(total);
    out += sign ? text.substr(1) : text;
    return Value(std::move(out));
  }
  repeat(left);
  out += text;
  repeat(total - left);
  return Value(std::move(out));
}

template <bool (*kTest)(uint32_t)>
Expected<Value> str_is(Interpreter&, const Value& self, CallArgs) {
  const std::string& text = self.as_string();
  if (text.empty()) return Value(false);
  for (size_t offset = 0; offset < text.size();) {
    if (!kTest(next_codepoint(text, offset))) return Value(false);
  }
  return Value(true);
}

bool is_alnum(uint32_t cpt) {
  return is_alpha(cpt) || is_digit(cpt);
}

// islower / isupper: some cased character, and none of the other case.
template <bool kUpper>
Expected<Value> str_is_case(Interpreter&, const Value& self, CallArgs) {
  const std::string& text = self.as_string();
  bool cased = false;
  for (size_t offset = 0; offset < text.size();) {
    const uint32_t cpt = next_codepoint(text, offset);
    if (kUpper ? is_cased_lower(cpt) : is_cased_upper(cpt)) return Value(false);
    cased = cased || (kUpper ? is_cased_upper(cpt) : is_cased_lower(cpt));
  }
  return Value(cased);
}

Expected<Value> str_format_method(Interpreter& interpreter, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(
      std::string text, str_format(self.as_string(), args, interpreter.limits().max_output_bytes));
  return Value(std::move(text));
}

// partition / rpartition: (head, sep, tail).
template <bool kReverse>
Expected<Value> str_partition(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("partition", std::move(args), {{"sep", std::nullopt}}));
  PAGODA_ASSIGN_OR_RETURN(std::string sep, string_arg("partition", "sep", a[0]));
  if (sep.empty()) return invalid_argument("empty separator");
  const std::string_view text = self.as_string();
  const size_t at = kReverse ? text.rfind(sep) : text.find(sep);
  if (at == std::string_view::npos) {
    return kReverse ? Value::tuple({Value(""), Value(""), self})
                    : Value::tuple({self, Value(""), Value("")});
  }
  return Value::tuple({Value(text.substr(0, at)), Value(sep), Value(text.substr(at + sep.size()))});
}

struct NamedMethod {
  std::string_view name;
  Method fn;
};

constexpr NamedMethod kStringMethods[] = {
    {"strip", str_strip<true, true>},
    {"lstrip", str_strip<true, false>},
    {"rstrip", str_strip<false, true>},
    {"split", str_split<false>},
    {"rsplit", str_split<true>},
    {"splitlines", str_splitlines},
    {"upper", str_convert<to_upper>},
    {"lower", str_convert<to_lower>},
    {"title", str_convert<title>},
    {"capitalize", str_convert<capitalize>},
    {"swapcase", str_convert<swap_case>},
    {"startswith", str_affix<false>},
    {"endswith", str_affix<true>},
    {"replace", str_replace},
    {"find", str_find<false, false>},
    {"rfind", str_find<true, false>},
    {"index", str_find<false, true>},
    {"rindex", str_find<true, true>},
    {"count", str_count},
    {"join", str_join},
    {"removeprefix", str_remove_affix<false>},
    {"removesuffix", str_remove_affix<true>},
    {"ljust", str_pad<Pad::kLeft>},
    {"rjust", str_pad<Pad::kRight>},
    {"center", str_pad<Pad::kCenter>},
    {"zfill", str_pad<Pad::kZero>},
    {"isalpha", str_is<is_alpha>},
    {"isdigit", str_is<is_digit>},
    {"isnumeric", str_is<is_digit>},
    {"isdecimal", str_is<is_digit>},
    {"isalnum", str_is<is_alnum>},
    {"isspace", str_is<is_space>},
    {"islower", str_is_case<false>},
    {"isupper", str_is_case<true>},
    {"format", str_format_method},
    {"partition", str_partition<false>},
    {"rpartition", str_partition<true>},
};

}  // namespace

MethodFn find_dict_method(std::string_view name);
MethodFn find_list_method(std::string_view name);

MethodFn find_method(const Value& object, std::string_view name) {
  if (object.is_string()) {
    for (const NamedMethod& method : kStringMethods) {
      if (method.name == name) return method.fn;
    }
    return nullptr;
  }
  if (object.is_dict()) return find_dict_method(name);
  if (object.is_list()) return find_list_method(name);
  return nullptr;
}

}  // namespace pagoda::jinja
