#include "gguf/dump.h"

#include <algorithm>
#include <string_view>

namespace pagoda::gguf {
namespace {

// A name as is when it is one line of printable UTF-8, quoted and escaped otherwise
// (quoted() only changes such a name by adding its two quotes).
std::string printable_name(std::string_view name) {
  std::string out = quoted(name);
  if (out.size() == name.size() + 2) return std::string(name);
  return out;
}

std::string pad_right(std::string text, size_t width) {
  if (text.size() < width) text.resize(width, ' ');
  return text;
}

std::string pad_left(const std::string& text, size_t width) {
  return text.size() < width ? std::string(width - text.size(), ' ') + text : text;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  out += ']';
  return out;
}

void append_header(std::string& out, const Reader& reader) {
  out += "file:        " + printable_name(reader.name()) + " (" +
         std::to_string(reader.bytes().size()) + " bytes)\n";
  out += "version:     " + std::to_string(reader.version()) + "\n";
  out += "alignment:   " + std::to_string(reader.alignment()) + "\n";
  out += "data offset: " + std::to_string(reader.data_offset()) + "\n";
}

void append_metadata(std::string& out, const Reader& reader, const DumpOptions& options) {
  const auto& metadata = reader.metadata();
  out += "metadata:    " + std::to_string(metadata.size()) +
         (metadata.size() == 1 ? " key\n" : " keys\n");
  std::vector<std::string> keys;
  size_t key_width = 0;
  for (const auto& [key, value] : metadata) {
    keys.push_back(printable_name(key));
    key_width = std::max(key_width, keys.back().size());
  }
  const size_t index_width = std::to_string(metadata.size()).size();
  for (size_t i = 0; i < metadata.size(); ++i) {
    const Value& value = metadata[i].second;
    out += "  " + pad_left(std::to_string(i + 1), index_width) + "  " +
           pad_right(keys[i], key_width) + "  " +
           pad_right(std::string(value_type_name(value.type())), 7) + "  " +
           to_display_string(value, options.max_array_items, options.max_string_bytes) + "\n";
  }
}

void append_tensors(std::string& out, const Reader& reader) {
  const auto& tensors = reader.tensors();
  uint64_t total_bytes = 0;
  // Each tensor lies within the file, so the sum cannot overflow.
  for (const TensorInfo& tensor : tensors) total_bytes += tensor.n_bytes;
  out += "tensors:     " + std::to_string(tensors.size()) + " (" + std::to_string(total_bytes) +
         " bytes of data)\n";
  if (tensors.empty()) return;
  // Columns: index, name, type, shape, offset (from the data section), bytes.
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"#", "name", "type", "shape", "offset", "bytes"});
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    rows.push_back({std::to_string(i), printable_name(t.name), std::string(dtype_name(t.type)),
                    shape_string(t.shape), std::to_string(t.offset), std::to_string(t.n_bytes)});
  }
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line = "  " + pad_left(row[0], widths[0]);
    for (size_t c = 1; c < row.size(); ++c) {
      const bool numeric = c >= 4;  // offset and bytes are right-aligned
      line += "  " + (numeric ? pad_left(row[c], widths[c]) : pad_right(row[c], widths[c]));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
}

}  // namespace

std::string dump(const Reader& reader, const DumpOptions& options) {
  std::string out;
  append_header(out, reader);
  append_metadata(out, reader, options);
  append_tensors(out, reader);
  return out;
}

}  // namespace pagoda::gguf
