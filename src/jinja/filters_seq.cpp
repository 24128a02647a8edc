// jinja2's filters over sequences and mappings: first, last, join, list, reverse,
// sort, unique, min, max, sum, map, select / reject (attr), items, dictsort, batch,
// slice, attr.
#include <algorithm>
#include <iterator>

#include "jinja/args.h"
#include "jinja/builtins.h"
#include "jinja/filters_impl.h"
#include "jinja/sort.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace filters {

Expected<Value> lookup_path(const Value& item, std::string_view path) {
  Value value = item;
  while (!path.empty()) {
    const size_t dot = path.find('.');
    const std::string_view part = path.substr(0, dot);
    const bool numeric = !part.empty() && part.size() < 18 &&
                         part.find_first_not_of("0123456789") == std::string_view::npos;
    PAGODA_ASSIGN_OR_RETURN(
        value,
        get_item(value, numeric ? Value(int64_t{std::stoll(std::string(part))}) : Value(part)));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return value;
}

Expected<std::vector<Value>> items_of(Interpreter& interpreter, const Value& value) {
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
  PAGODA_TRY(interpreter.charge(static_cast<int64_t>(items.size())));
  return items;
}

}  // namespace filters

namespace {

using filters::items_of;
using filters::lookup_path;

// The sort / unique / min / max key: the attribute, lowercased unless case-sensitive.
Expected<Value> sort_key(const Value& item, const Value& attribute, bool case_sensitive) {
  Value key = item;
  if (!attribute.is_none()) {
    PAGODA_ASSIGN_OR_RETURN(key, lookup_path(item, to_str(attribute)));
  }
  if (!case_sensitive && key.is_string()) return Value(to_lower(key.as_string()));
  return key;
}

Expected<Value> filter_first(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("first", std::move(args), {}).status());
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Expected<Value> filter_last(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("last", std::move(args), {}).status());
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Expected<Value> filter_join(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(
      auto a, bind_args("join", std::move(args), {{"d", Value("")}, {"attribute", Value(None{})}}));
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  const std::string separator = to_str(a[0]);
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (!a[1].is_none()) {
      PAGODA_ASSIGN_OR_RETURN(item, lookup_path(item, to_str(a[1])));
    }
    if (i > 0) out += separator;
    out += to_str(item);
    PAGODA_TRY(interpreter.check_size(out.size()));
  }
  return Value(std::move(out));
}

Expected<Value> filter_list(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("list", std::move(args), {}).status());
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  return Value::list(std::move(items));
}

Expected<Value> filter_reverse(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("reverse", std::move(args), {}).status());
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  std::reverse(items.begin(), items.end());
  if (!input.is_string()) return Value::generator(std::move(items));
  std::string out;
  for (const Value& c : items) out += c.as_string();
  return Value(std::move(out));
}

Expected<Value> filter_sort(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("sort", std::move(args),
                                            {{"reverse", Value(false)},
                                             {"case_sensitive", Value(false)},
                                             {"attribute", Value(None{})}}));
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  std::vector<std::pair<Value, Value>> keyed;  // (key, item)
  for (Value& item : items) {
    PAGODA_ASSIGN_OR_RETURN(Value key, sort_key(item, a[2], truthy(a[1])));
    keyed.emplace_back(std::move(key), std::move(item));
  }
  const bool reverse = truthy(a[0]);
  PAGODA_TRY(interpreter.charge(static_cast<int64_t>(keyed.size()) * 8));
  PAGODA_TRY(stable_sort(keyed, [&](const auto& x, const auto& y) -> Expected<bool> {
    PAGODA_ASSIGN_OR_RETURN(const int c, compare(x.first, y.first));
    return reverse ? c > 0 : c < 0;
  }));
  std::vector<Value> sorted;
  for (auto& [key, item] : keyed) sorted.push_back(std::move(item));
  return Value::list(std::move(sorted));
}

Expected<Value> filter_unique_eager(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(
      auto a, bind_args("unique", std::move(args),
                        {{"case_sensitive", Value(false)}, {"attribute", Value(None{})}}));
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  std::vector<Value> seen_keys;
  std::vector<Value> unique;
  for (Value& item : items) {
    PAGODA_ASSIGN_OR_RETURN(Value key, sort_key(item, a[1], truthy(a[0])));
    if ((key.is_list() && !key.is_tuple()) || key.is_dict()) {
      return invalid_argument("unhashable type: '" + std::string(type_name(key)) + "'");
    }
    PAGODA_TRY(interpreter.charge(static_cast<int64_t>(seen_keys.size())));
    const bool seen = std::any_of(seen_keys.begin(), seen_keys.end(),
                                  [&](const Value& k) { return equals(k, key); });
    if (seen) continue;
    seen_keys.push_back(std::move(key));
    unique.push_back(std::move(item));
  }
  return Value::generator(std::move(unique));
}

// jinja2's unique and items are generators: a bad input fails only when consumed.
template <Expected<Value> (*kFilter)(Interpreter&, const Value&, CallArgs)>
Expected<Value> lazy(Interpreter& interpreter, const Value& input, CallArgs args) {
  Expected<Value> result = kFilter(interpreter, input, std::move(args));
  if (result.ok() || result.status().code() == ErrorCode::kResourceExhausted) return result;
  return Value::failed_generator(std::move(result).take_status());
}

template <bool kMax>
Expected<Value> filter_extreme(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(
      auto a, bind_args(kMax ? "max" : "min", std::move(args),
                        {{"case_sensitive", Value(false)}, {"attribute", Value(None{})}}));
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  PAGODA_ASSIGN_OR_RETURN(Value best_key, sort_key(items[0], a[1], truthy(a[0])));
  for (size_t i = 1; i < items.size(); ++i) {
    PAGODA_ASSIGN_OR_RETURN(Value key, sort_key(items[i], a[1], truthy(a[0])));
    PAGODA_ASSIGN_OR_RETURN(const int c, compare(key, best_key));
    if (kMax ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Expected<Value> filter_sum(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("sum", std::move(args),
                                            {{"attribute", Value(None{})}, {"start", Value(0)}}));
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  Value total = a[1];
  for (const Value& item : items) {
    Value term = item;
    if (!a[0].is_none()) {
      PAGODA_ASSIGN_OR_RETURN(term, lookup_path(item, to_str(a[0])));
    }
    PAGODA_ASSIGN_OR_RETURN(total, binary_op(interpreter, BinaryOp::kAdd, total, term));
  }
  return total;
}

// map('filter', args...) or map(attribute='a.b', default=x).
Expected<Value> filter_map(Interpreter& interpreter, const Value& input, CallArgs args) {
  if (!truthy(input)) return Value::generator({});  // jinja2 maps only a true value
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  std::vector<Value> mapped;
  if (args.positional.empty()) {
    PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("map", std::move(args),
                                              {{"attribute", std::nullopt}, {"default", Value()}}));
    for (const Value& item : items) {
      PAGODA_ASSIGN_OR_RETURN(Value value, lookup_path(item, to_str(a[0])));
      mapped.push_back(value.is_undefined() && !a[1].is_undefined() ? a[1] : std::move(value));
    }
    return Value::generator(std::move(mapped));
  }
  const std::string name = to_str(args.positional.front());
  args.positional.erase(args.positional.begin());
  for (const Value& item : items) {
    PAGODA_ASSIGN_OR_RETURN(Value value, interpreter.apply_filter(name, item, args));
    mapped.push_back(std::move(value));
  }
  return Value::generator(std::move(mapped));
}

// select / reject / selectattr / rejectattr.
template <bool kSelect, bool kAttribute>
Expected<Value> filter_select(Interpreter& interpreter, const Value& input, CallArgs args) {
  if (!truthy(input)) return Value::generator({});  // jinja2 filters only a true value
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  std::string attribute;
  if (kAttribute) {
    if (args.positional.empty()) return invalid_argument("missing parameter for attribute name");
    attribute = to_str(args.positional.front());
    args.positional.erase(args.positional.begin());
  }
  std::optional<std::string> test;
  if (!args.positional.empty()) {
    test = to_str(args.positional.front());
    args.positional.erase(args.positional.begin());
  }
  std::vector<Value> kept;
  for (const Value& item : items) {
    Value subject = item;
    if (kAttribute) {
      PAGODA_ASSIGN_OR_RETURN(subject, lookup_path(item, attribute));
    }
    bool passes = false;
    if (test) {
      PAGODA_ASSIGN_OR_RETURN(passes, interpreter.apply_test(*test, subject, args));
    } else {
      passes = truthy(subject);
    }
    if (passes == kSelect) kept.push_back(item);
  }
  return Value::generator(std::move(kept));
}

Expected<Value> filter_items(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("items", std::move(args), {}).status());
  if (input.is_undefined()) return Value::generator({});
  if (!input.is_dict()) return invalid_argument("Can only get item pairs from a mapping.");
  PAGODA_TRY(interpreter.charge(static_cast<int64_t>(input.as_dict().entries.size())));
  std::vector<Value> pairs;
  for (const auto& [key, value] : input.as_dict().entries)
    pairs.push_back(Value::tuple({key, value}));
  return Value::generator(std::move(pairs));
}

Expected<Value> filter_dictsort(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("dictsort", std::move(args),
                                            {{"case_sensitive", Value(false)},
                                             {"by", Value("key")},
                                             {"reverse", Value(false)}}));
  if (!input.is_dict()) return invalid_argument("dictsort: can only sort a mapping");
  const std::string by = to_str(a[1]);
  if (by != "key" && by != "value")
    return invalid_argument("You can only sort by either \"key\" or \"value\"");
  const size_t index = by == "key" ? 0 : 1;
  std::vector<Value> pairs;
  for (const auto& [key, value] : input.as_dict().entries)
    pairs.push_back(Value::tuple({key, value}));
  PAGODA_TRY(interpreter.charge(static_cast<int64_t>(pairs.size()) * 8));
  const bool reverse = truthy(a[2]);
  PAGODA_TRY(stable_sort(pairs, [&](const Value& x, const Value& y) -> Expected<bool> {
    PAGODA_ASSIGN_OR_RETURN(Value kx, sort_key(x.items()[index], Value(None{}), truthy(a[0])));
    PAGODA_ASSIGN_OR_RETURN(Value ky, sort_key(y.items()[index], Value(None{}), truthy(a[0])));
    PAGODA_ASSIGN_OR_RETURN(const int c, compare(kx, ky));
    return reverse ? c > 0 : c < 0;
  }));
  return Value::list(std::move(pairs));
}

Expected<Value> filter_batch(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a,
                          bind_args("batch", std::move(args),
                                    {{"linecount", std::nullopt}, {"fill_with", Value(None{})}}));
  PAGODA_ASSIGN_OR_RETURN(const int64_t size, int_arg("batch", "linecount", a[0]));
  if (size <= 0) return invalid_argument("batch(): linecount must be positive");
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  std::vector<Value> batches;
  for (size_t start = 0; start < items.size(); start += static_cast<size_t>(size)) {
    const size_t end = std::min(items.size(), start + static_cast<size_t>(size));
    std::vector<Value> batch(items.begin() + static_cast<std::ptrdiff_t>(start),
                             items.begin() + static_cast<std::ptrdiff_t>(end));
    if (!a[1].is_none()) {
      PAGODA_TRY(interpreter.check_size(static_cast<size_t>(size)));
      while (static_cast<int64_t>(batch.size()) < size) batch.push_back(a[1]);
    }
    batches.push_back(Value::list(std::move(batch)));
  }
  return Value::generator(std::move(batches));
}

Expected<Value> filter_slice(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a,
                          bind_args("slice", std::move(args),
                                    {{"slices", std::nullopt}, {"fill_with", Value(None{})}}));
  PAGODA_ASSIGN_OR_RETURN(const int64_t slices, int_arg("slice", "slices", a[0]));
  if (slices <= 0) return invalid_argument("slice(): slices must be positive");
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, items_of(interpreter, input));
  PAGODA_TRY(interpreter.charge(slices));
  const auto length = static_cast<int64_t>(items.size());
  const int64_t per_slice = length / slices;
  const int64_t with_extra = length % slices;
  int64_t offset = 0;
  std::vector<Value> result;
  for (int64_t n = 0; n < slices; ++n) {
    const int64_t start = offset + n * per_slice;
    if (n < with_extra) ++offset;
    const int64_t end = offset + (n + 1) * per_slice;
    std::vector<Value> part(items.begin() + start, items.begin() + end);
    if (!a[1].is_none() && n >= with_extra) part.push_back(a[1]);
    result.push_back(Value::list(std::move(part)));
  }
  return Value::generator(std::move(result));
}

Expected<Value> filter_attr(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("attr", std::move(args), {{"name", std::nullopt}}));
  const std::string name = to_str(a[0]);
  if (input.is_undefined()) return undefined_error(input);
  // An attribute only: dict keys are not attributes.
  if (find_method(input, name) != nullptr) return get_attribute(input, name);
  if (input.is_object()) return input.as_object()->attribute(name);
  return Value::undefined(quote(std::string(type_name(input)) + " object") + " has no attribute " +
                          quote(name));
}

}  // namespace

namespace filters {

const NamedFilter kSequenceFilters[] = {
    {"first", filter_first},
    {"last", filter_last},
    {"join", filter_join},
    {"list", filter_list},
    {"reverse", filter_reverse},
    {"sort", filter_sort},
    {"unique", lazy<filter_unique_eager>},
    {"min", filter_extreme<false>},
    {"max", filter_extreme<true>},
    {"sum", filter_sum},
    {"map", filter_map},
    {"select", filter_select<true, false>},
    {"reject", filter_select<false, false>},
    {"selectattr", filter_select<true, true>},
    {"rejectattr", filter_select<false, true>},
    {"items", lazy<filter_items>},
    {"dictsort", filter_dictsort},
    {"batch", filter_batch},
    {"slice", filter_slice},
    {"attr", filter_attr},
};
const size_t kSequenceFilterCount = std::size(kSequenceFilters);

}  // namespace filters

}  // namespace pagoda::jinja
