// Global functions: jinja2's range, dict, namespace, cycler and joiner, and the two
// Hugging Face adds to chat templates, raise_exception and strftime_now.
#include <ctime>

#include "jinja/args.h"
#include "jinja/builtins.h"

namespace pagoda::jinja {

namespace {

Expected<Value> global_range(Interpreter& interpreter, CallArgs args) {
  if (!args.keyword.empty()) return invalid_argument("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3)
    return invalid_argument("range expected 1 to 3 arguments, got " + std::to_string(p.size()));
  int64_t bounds[3] = {0, 0, 1};
  for (size_t i = 0; i < p.size(); ++i) {
    if (!p[i].is_integral()) {
      return invalid_argument(quote(type_name(p[i])) +
                              " object cannot be interpreted as an integer");
    }
  }
  if (p.size() == 1) {
    bounds[1] = p[0].as_integral();
  } else {
    bounds[0] = p[0].as_integral();
    bounds[1] = p[1].as_integral();
    if (p.size() == 3) bounds[2] = p[2].as_integral();
  }
  const auto [start, stop, step] = bounds;
  if (step == 0) return invalid_argument("range() arg 3 must not be zero");
  // Items, computed without overflow: ceil((stop - start) / step) when positive.
  const __int128 span = static_cast<__int128>(stop) - start;
  const __int128 count =
      step > 0
          ? (span > 0 ? (span + step - 1) / step : 0)
          : (span < 0 ? (-span + (-static_cast<__int128>(step)) - 1) / -static_cast<__int128>(step)
                      : 0);
  if (count > interpreter.limits().max_range) {
    return invalid_argument("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
                            std::to_string(interpreter.limits().max_range) + ").");
  }
  PAGODA_TRY(interpreter.charge(static_cast<int64_t>(count)));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (__int128 i = 0; i < count; ++i) items.emplace_back(static_cast<int64_t>(start + i * step));
  // A list that prints as Python's range object does.
  std::string text = "range(" + std::to_string(start) + ", " + std::to_string(stop);
  if (step != 1) text += ", " + std::to_string(step);
  return Value::range(std::move(items), text + ")");
}

// dict(mapping_or_pairs, **kwargs) and namespace(...) take the same arguments.
Expected<DictData> dict_from_args(CallArgs args) {
  DictData dict;
  if (args.positional.size() > 1) return invalid_argument("expected at most 1 positional argument");
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict()) {
      dict = source.as_dict();
    } else if (source.is_list()) {
      for (const Value& pair : source.items()) {
        if (!pair.is_list() || pair.items().size() != 2)
          return invalid_argument("dictionary update sequence element has wrong length");
        dict.insert_or_assign(pair.items()[0], pair.items()[1]);
      }
    } else {
      return invalid_argument(quote(type_name(source)) + " object is not iterable");
    }
  }
  for (auto& [key, value] : args.keyword) dict.insert_or_assign(Value(key), std::move(value));
  return dict;
}

Expected<Value> global_dict(Interpreter&, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(DictData dict, dict_from_args(std::move(args)));
  return Value::dict(std::move(dict));
}

Expected<Value> global_namespace(Interpreter& interpreter, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(DictData attributes, dict_from_args(std::move(args)));
  auto ns = std::make_shared<Namespace>(std::move(attributes));
  interpreter.track(ns);
  return Value(std::shared_ptr<Object>(std::move(ns)));
}

Expected<Value> global_cycler(Interpreter& interpreter, CallArgs args) {
  if (args.positional.empty()) return invalid_argument("at least one item has to be provided");
  auto cycler = std::make_shared<Cycler>(std::move(args.positional));
  interpreter.track(cycler);
  return Value(std::shared_ptr<Object>(std::move(cycler)));
}

Expected<Value> global_joiner(Interpreter&, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("joiner", std::move(args), {{"sep", Value(", ")}}));
  return Value(std::shared_ptr<Object>(std::make_shared<Joiner>(to_str(a[0]))));
}

Expected<Value> global_raise_exception(Interpreter& interpreter, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(
      auto a, bind_args("raise_exception", std::move(args), {{"message", std::nullopt}}));
  return interpreter.raise(to_str(a[0]));
}

// strftime_now(format): the local time, formatted by the C library as Python's
// datetime.strftime does.
Expected<Value> global_strftime_now(Interpreter& interpreter, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a,
                          bind_args("strftime_now", std::move(args), {{"format", std::nullopt}}));
  PAGODA_ASSIGN_OR_RETURN(std::string format, string_arg("strftime_now", "format", a[0]));
  const std::time_t now = interpreter.now();
  std::tm local{};
  localtime_r(&now, &local);
  // strftime returns 0 both for "too small" and for an empty result: grow a few times.
  for (size_t size = 256; size <= 65536; size *= 4) {
    std::string out(size, '\0');
    const size_t n = std::strftime(out.data(), out.size(), format.c_str(), &local);
    if (n > 0 || format.empty()) {
      out.resize(n);
      return Value(std::move(out));
    }
  }
  return Value("");
}

}  // namespace

void add_globals(Scope& scope) {
  static const std::pair<std::string_view, std::shared_ptr<Object>> kGlobals[] = {
      {"range", std::make_shared<BuiltinFunction>("range", global_range)},
      {"dict", std::make_shared<BuiltinFunction>("dict", global_dict)},
      {"namespace", std::make_shared<BuiltinFunction>("namespace", global_namespace)},
      {"cycler", std::make_shared<BuiltinFunction>("cycler", global_cycler)},
      {"joiner", std::make_shared<BuiltinFunction>("joiner", global_joiner)},
      {"raise_exception",
       std::make_shared<BuiltinFunction>("raise_exception", global_raise_exception)},
      {"strftime_now", std::make_shared<BuiltinFunction>("strftime_now", global_strftime_now)},
  };
  for (const auto& [name, function] : kGlobals) scope.set(name, Value(function));
}

}  // namespace pagoda::jinja
