#pragma once
// Builds GGUF files in memory for the model tests: copies of the test models with one
// thing broken, and metadata-only files for the configuration tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "test_data.h"

namespace pagoda::model::testing {

// Test files: tests/data/, or the shared folder for the large models (test_data.h).
using ::pagoda::testing::model_path;
using ::pagoda::testing::reference_path;

// Serialized bytes and the Reader over them (which points into the bytes).
struct ParsedFile {
  std::vector<uint8_t> bytes;
  std::unique_ptr<gguf::Reader> reader;
};

// Parses `writer`'s file under `name`; fails the test if the reader refuses it.
inline ParsedFile parse(const gguf::Writer& writer, const std::string& name = "model.gguf") {
  ParsedFile file;
  file.bytes = writer.serialize();
  Expected<gguf::Reader> reader = gguf::Reader::parse(file.bytes, name);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (reader.ok()) file.reader = std::make_unique<gguf::Reader>(std::move(reader).value());
  return file;
}

// How copy_model treats one tensor of the source.
struct TensorEdit {
  bool drop = false;             // leave it out
  std::vector<int64_t> shape;    // non-empty: this shape instead (data zero-filled)
  DType type = DType::F32;       // with `shape`: this type
};
using TensorEditor = std::function<TensorEdit(const gguf::TensorInfo&)>;

// A copy of `source` (every key; every tensor, edited by `edit`) plus `extra` keys set
// on top.
inline gguf::Writer copy_model(const gguf::Reader& source, const TensorEditor& edit = {}) {
  gguf::Writer writer;
  for (const auto& [key, value] : source.metadata()) {
    EXPECT_TRUE(writer.set(key, value).ok()) << key;
  }
  for (const gguf::TensorInfo& tensor : source.tensors()) {
    const TensorEdit e = edit ? edit(tensor) : TensorEdit{};
    if (e.drop) continue;
    if (e.shape.empty()) {
      EXPECT_TRUE(writer.add_tensor(tensor.name, tensor.type, tensor.shape, tensor.bytes()).ok());
      continue;
    }
    int64_t n = 1;
    for (const int64_t ne : e.shape) n *= ne;
    const std::vector<uint8_t> zeros(static_cast<size_t>(row_bytes(e.type, n)), 0);
    EXPECT_TRUE(writer.add_tensor(tensor.name, e.type, e.shape, zeros).ok()) << tensor.name;
  }
  return writer;
}

}  // namespace pagoda::model::testing
