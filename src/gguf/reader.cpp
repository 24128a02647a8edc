#include "gguf/reader.h"

#include <limits>
#include <utility>

#include "gguf/parser.h"

namespace pagoda::gguf {

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (const int64_t ne : shape) n *= ne;  // the reader checked that this cannot overflow
  return n;
}

int64_t TensorInfo::rows() const {
  int64_t n = 1;
  for (size_t d = 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

Expected<Reader> Reader::open(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  auto mapping = std::make_shared<MappedFile>(std::move(file));
  PAGODA_ASSIGN_OR_RETURN(Reader reader, parse(mapping->bytes(), path));
  reader.mapping_ = std::move(mapping);  // the tensors' data pointers point into it
  return reader;
}

Expected<Reader> Reader::parse(std::span<const uint8_t> bytes, std::string name) {
  Reader reader;
  reader.bytes_ = bytes;
  reader.name_ = std::move(name);
  PAGODA_TRY(Parser::parse(reader));
  return reader;
}

const Value* Reader::find(std::string_view key) const {
  const auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const TensorInfo* Reader::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Expected<int64_t> Reader::get_int(std::string_view key) const {
  const Value* value = find(key);
  if (value == nullptr) return key_not_found(key);
  return std::visit(
      [&](const auto& v) -> Expected<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool> || !std::is_integral_v<T>) {
          return wrong_type(key, *value, "an integer");
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return invalid_argument(name_ + ": key " + quoted(key) + " value " + std::to_string(v) +
                                    " does not fit in int64");
          }
          return static_cast<int64_t>(v);
        } else {
          return static_cast<int64_t>(v);
        }
      },
      value->storage);
}

Status Reader::key_not_found(std::string_view key) const {
  return not_found(name_ + ": key " + quoted(key) + " not found");
}

Status Reader::wrong_type(std::string_view key, const Value& found,
                          std::string_view expected) const {
  return invalid_argument(name_ + ": key " + quoted(key) + " has type " + describe_type(found) +
                          ", expected " + std::string(expected));
}

}  // namespace pagoda::gguf
