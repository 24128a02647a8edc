#pragma once
// A gguf-dump style listing of a parsed file, for `pagoda inspect`: the header
// (file, version, alignment, data offset), every metadata key with its type and value
// (arrays abbreviated), then one line per tensor (index, name, type, shape, offset
// from the data section, bytes).

#include <cstddef>
#include <string>

#include "gguf/reader.h"

namespace pagoda::gguf {

struct DumpOptions {
  size_t max_array_items = 8;     // array items shown before "..."
  size_t max_string_bytes = 120;  // string bytes shown before "... (N bytes)"
};

std::string dump(const Reader& reader, const DumpOptions& options = {});

}  // namespace pagoda::gguf
