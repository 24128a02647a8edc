#pragma once
// Test data for the block formats: the reference vectors in quant-vectors.gguf and
// small helpers to compare results bit for bit.
//
// For each type name T the file holds T.src (rows x 1024 f32 values), T.q (T.src
// quantized by the reference quantizer, type T) and T.deq (T.q dequantized by the
// reference, f32). Shapes are [1024, rows], ne[0] first.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "gguf/reader.h"
#include "test_data.h"

namespace pagoda::quant::testing {

// Every type the file holds vectors for, by its GGUF name.
inline const std::vector<std::string>& reference_type_names() {
  static const std::vector<std::string> names = {"f16",  "bf16", "q8_0", "q4_0",  "q4_1",
                                                 "q5_0", "q5_1", "q2_K", "q3_K",  "q4_K",
                                                 "q5_K", "q6_K", "iq4_nl", "iq4_xs"};
  return names;
}

struct TypeVectors {
  DType type = DType::F32;
  int64_t row_length = 0;       // values per row
  int64_t rows = 0;
  std::vector<float> src;       // rows * row_length values
  std::vector<uint8_t> q;       // rows * row_bytes(type, row_length) bytes
  std::vector<float> deq;       // rows * row_length values
};

// The file, opened once per test binary.
inline const Expected<gguf::Reader>& reference_file() {
  static const Expected<gguf::Reader> reader =
      gguf::Reader::open(::pagoda::testing::reference_path("quant/quant-vectors.gguf"));
  return reader;
}

namespace detail {

inline Expected<const gguf::TensorInfo*> find_tensor(const gguf::Reader& file, const std::string& name,
                                                     DType type) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (t == nullptr) return not_found("no tensor " + name);
  if (t->type != type) return corrupt_file(name + " has type " + std::string(dtype_name(t->type)));
  if (t->shape.size() != 2) return corrupt_file(name + " is not 2-dimensional");
  return t;
}

template <typename T>
std::vector<T> copy_data(const gguf::TensorInfo& t) {
  std::vector<T> out(t.n_bytes / sizeof(T));
  std::memcpy(out.data(), t.data, out.size() * sizeof(T));
  return out;
}

}  // namespace detail

// T.src, T.q and T.deq of one type, checked for consistent shapes.
inline Expected<TypeVectors> load_type_vectors(const std::string& type_name) {
  const Expected<gguf::Reader>& file = reference_file();
  if (!file.ok()) return file.status();
  const std::optional<DType> type = dtype_from_name(type_name);
  if (!type) return not_found("unknown type name " + type_name);
  PAGODA_ASSIGN_OR_RETURN(const gguf::TensorInfo* src, detail::find_tensor(*file, type_name + ".src", DType::F32));
  PAGODA_ASSIGN_OR_RETURN(const gguf::TensorInfo* q, detail::find_tensor(*file, type_name + ".q", *type));
  PAGODA_ASSIGN_OR_RETURN(const gguf::TensorInfo* deq, detail::find_tensor(*file, type_name + ".deq", DType::F32));
  if (q->shape != src->shape || deq->shape != src->shape) {
    return corrupt_file(type_name + ": .src, .q and .deq shapes differ");
  }
  TypeVectors v;
  v.type = *type;
  v.row_length = src->shape[0];
  v.rows = src->shape[1];
  v.src = detail::copy_data<float>(*src);
  v.q = detail::copy_data<uint8_t>(*q);
  v.deq = detail::copy_data<float>(*deq);
  if (static_cast<int64_t>(v.src.size()) != v.rows * v.row_length ||
      static_cast<int64_t>(v.deq.size()) != v.rows * v.row_length ||
      static_cast<int64_t>(v.q.size()) != v.rows * row_bytes(v.type, v.row_length)) {
    return corrupt_file(type_name + ": tensor sizes do not match their shapes");
  }
  return v;
}

// Index of the first value whose bits differ (+0 and -0 differ, so do NaN payloads).
inline std::optional<size_t> first_bit_difference(const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return i;
  }
  return std::nullopt;
}

inline std::optional<size_t> first_byte_difference(const uint8_t* a, const uint8_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return i;
  }
  return std::nullopt;
}

}  // namespace pagoda::quant::testing
