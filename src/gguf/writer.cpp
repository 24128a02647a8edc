#include "gguf/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "gguf/little_endian.h"
#include "gguf/reader.h"

namespace pagoda::gguf {
namespace {

uint64_t align_up(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

// Appends little-endian encodings to a byte vector.
class ByteSink {
 public:
  explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}

  template <LittleEndianScalar T>
  void put(T value) {
    append_little_endian(out_, value);
  }
  void put_string(std::string_view text) {
    put<uint64_t>(text.size());
    out_.insert(out_.end(), text.begin(), text.end());
  }
  void put_bytes(std::span<const uint8_t> bytes) {
    out_.insert(out_.end(), bytes.begin(), bytes.end());
  }
  void pad_to(uint64_t alignment) { out_.resize(align_up(out_.size(), alignment), 0); }

 private:
  std::vector<uint8_t>& out_;
};

// A value's encoding after its type id: the scalar, the string, or the array.
void put_payload(ByteSink& sink, const Value& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          sink.put_string(v);
        } else if constexpr (std::is_same_v<T, Array>) {
          sink.put(static_cast<uint32_t>(v.element_type));
          sink.put<uint64_t>(v.items.size());
          for (const Value& item : v.items) put_payload(sink, item);
        } else if constexpr (std::is_same_v<T, bool>) {
          sink.put<uint8_t>(v ? 1 : 0);
        } else {
          sink.put(v);
        }
      },
      value.storage);
}

// Arrays hold items of their element type only, nested no deeper than a reader accepts.
Status check_value(const std::string& key, const Value& value, int depth) {
  if (!value.holds<Array>()) return Status::ok_status();
  if (depth + 1 > kMaxArrayDepth) {
    return invalid_argument("gguf writer: key " + quoted(key) + " nests arrays deeper than " +
                            std::to_string(kMaxArrayDepth) + " levels");
  }
  const Array& array = value.as<Array>();
  for (size_t i = 0; i < array.items.size(); ++i) {
    if (array.items[i].type() != array.element_type) {
      return invalid_argument("gguf writer: key " + quoted(key) + " item " + std::to_string(i) +
                              " has type " + std::string(value_type_name(array.items[i].type())) +
                              ", not the array's " +
                              std::string(value_type_name(array.element_type)));
    }
    PAGODA_TRY(check_value(key, array.items[i], depth + 1));
  }
  return Status::ok_status();
}

Status write_all(int fd, const std::vector<uint8_t>& bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error(std::strerror(errno));
    written += static_cast<size_t>(n);
  }
  return Status::ok_status();
}

}  // namespace

Status Writer::set(std::string key, Value value) {
  if (key.empty()) return invalid_argument("gguf writer: empty key");
  PAGODA_TRY(check_value(key, value, 0));
  for (auto& [existing_key, existing_value] : metadata_) {
    if (existing_key == key) {
      existing_value = std::move(value);
      return Status::ok_status();
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
  return Status::ok_status();
}

Status Writer::add_tensor(std::string name, DType type, std::vector<int64_t> shape,
                          std::span<const uint8_t> data) {
  const std::string label = "gguf writer: tensor " + quoted(name);
  for (const Tensor& tensor : tensors_) {
    if (tensor.name == name) return invalid_argument(label + " is already added");
  }
  if (shape.size() > static_cast<size_t>(kMaxDims)) {
    return invalid_argument(label + " has more than 4 dimensions");
  }
  int64_t n_elements = 1;
  for (const int64_t ne : shape) {
    if (ne < 0 || __builtin_mul_overflow(n_elements, ne, &n_elements)) {
      return invalid_argument(label + " has a negative dimension or too many elements");
    }
  }
  const std::optional<DTypeTraits> known = dtype_traits(static_cast<uint32_t>(type));
  if (!known) {
    return invalid_argument(label + " has unknown type id " +
                            std::to_string(static_cast<uint32_t>(type)));
  }
  const DTypeTraits& type_traits = *known;
  const int64_t row_length = shape.empty() ? 1 : shape[0];
  if (row_length % type_traits.block_size != 0) {
    return invalid_argument(label + " rows are not whole blocks of " +
                            std::string(type_traits.name));
  }
  uint64_t n_bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(n_elements / type_traits.block_size),
                             static_cast<uint64_t>(type_traits.type_size), &n_bytes)) {
    return invalid_argument(label + " takes more than 2^64 - 1 bytes");
  }
  if (n_bytes != data.size()) {
    return invalid_argument(label + " has " + std::to_string(data.size()) +
                            " bytes of data, its type and shape take " + std::to_string(n_bytes));
  }
  tensors_.push_back({std::move(name), type, std::move(shape), {data.begin(), data.end()}});
  return Status::ok_status();
}

uint64_t Writer::alignment() const {
  for (const auto& [key, value] : metadata_) {
    if (key == "general.alignment" && value.holds<uint32_t>() &&
        std::has_single_bit(value.as<uint32_t>())) {
      return value.as<uint32_t>();
    }
  }
  return kDefaultAlignment;
}

std::vector<uint8_t> Writer::serialize() const {
  const uint64_t align = alignment();
  std::vector<uint8_t> out;
  ByteSink sink(out);
  sink.put(kMagic);
  sink.put(version_);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    sink.put_string(key);
    sink.put(static_cast<uint32_t>(value.type()));
    put_payload(sink, value);
  }
  uint64_t offset = 0;  // from the start of the data section
  for (const Tensor& tensor : tensors_) {
    sink.put_string(tensor.name);
    sink.put(static_cast<uint32_t>(tensor.shape.size()));
    for (const int64_t ne : tensor.shape) sink.put(ne);
    sink.put(static_cast<uint32_t>(tensor.type));
    sink.put(offset);
    offset += align_up(tensor.data.size(), align);
  }
  if (tensors_.empty()) return out;  // no data section, so no padding (as ggml writes it)
  for (const Tensor& tensor : tensors_) {
    sink.pad_to(align);
    sink.put_bytes(tensor.data);
  }
  sink.pad_to(align);
  return out;
}

Status Writer::write_file(const std::string& path) const {
  const std::vector<uint8_t> bytes = serialize();
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(temporary + ": cannot create: " + std::strerror(errno));
  const Status written = write_all(fd, bytes);
  const bool closed = ::close(fd) == 0;
  if (!written.ok() || !closed) {
    const std::string reason = written.ok() ? std::strerror(errno) : written.message();
    ::unlink(temporary.c_str());
    return io_error(temporary + ": cannot write: " + reason);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    return io_error(path + ": cannot rename " + temporary + " into place: " + reason);
  }
  return Status::ok_status();
}

}  // namespace pagoda::gguf
