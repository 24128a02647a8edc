#pragma once
// The filter tables, one per file, and helpers the sequence filters share. Internal to
// the filters.

#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/interpreter.h"

namespace pagoda::jinja::filters {

struct NamedFilter {
  std::string_view name;
  FilterFn fn;
};

extern const NamedFilter kStringFilters[];
extern const size_t kStringFilterCount;
extern const NamedFilter kNumberFilters[];
extern const size_t kNumberFilterCount;
extern const NamedFilter kSequenceFilters[];
extern const size_t kSequenceFilterCount;

// jinja2's make_attrgetter: "a.b.0" looks up item a, then b, then 0 (item first, then
// attribute, as obj[key] does). An empty path is the item itself.
Expected<Value> lookup_path(const Value& item, std::string_view path);

// The items a filter iterates (Undefined iterates as empty), charged to the interpreter.
Expected<std::vector<Value>> items_of(Interpreter& interpreter, const Value& value);

}  // namespace pagoda::jinja::filters
