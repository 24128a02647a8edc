#pragma once
// Finds a model's tensors in its GGUF file by name, checks each one (present, of a type
// its op can read, of exactly the expected shape) and hands it to the backend. Weights
// stay where they are in the mapped file: the CPU backend reads them in place.
//
// Errors name the file and the tensor:
//   "model.gguf: missing tensor 'output_norm.weight'"
//   "model.gguf: tensor 'blk.3.ffn_up.weight' has shape [576, 1000], expected [576, 1536]"
//   "model.gguf: tensor 'blk.0.attn_q.weight' has type i32, which matmul cannot read"
// Shapes are written as GGUF lists them: ne[0] (the contiguous dimension, a matrix's
// input width) first.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "backend/tensor.h"
#include "core/status.h"
#include "gguf/reader.h"

namespace pagoda::model {

class WeightLoader {
 public:
  WeightLoader(const gguf::Reader& file, backend::Backend& backend)
      : file_(file), backend_(backend) {}

  // A matmul weight [n_out][n_in] (ne = {n_in, n_out}) of a type with a dot product.
  Expected<backend::TensorView> matrix(std::string_view name, int64_t n_in, int64_t n_out);
  // A lookup table [n_rows][dim] (ne = {dim, n_rows}) of a type that dequantizes
  // (token and position embeddings).
  Expected<backend::TensorView> table(std::string_view name, int64_t dim, int64_t n_rows);
  // An f32 vector of n values (norm weights, biases, rope frequency factors).
  Expected<backend::TensorView> vector(std::string_view name, int64_t n);

  bool has(std::string_view name) const { return file_.find_tensor(name) != nullptr; }

  // Fails if the file holds a tensor no call above asked for: a weight the architecture
  // would silently ignore (a bias, a norm) means the file is not what it claims to be.
  Status check_all_used(std::string_view architecture) const;

 private:
  enum class Use { kMatmul, kTable, kVector };
  Expected<backend::TensorView> load(std::string_view name, Use use,
                                     std::initializer_list<int64_t> shape);
  Status check_type(const gguf::TensorInfo& tensor, Use use) const;
  Status error(ErrorCode code, const std::string& problem) const;

  const gguf::Reader& file_;
  backend::Backend& backend_;
  // Every tensor handed out so far, by name: a tensor used twice (a tied output
  // embedding) is uploaded once.
  std::map<std::string, backend::TensorView, std::less<>> uploaded_;
};

// Per-layer tensor names: layer_tensor(3, "ffn_up.weight") == "blk.3.ffn_up.weight".
std::string layer_tensor(int32_t layer, std::string_view suffix);

}  // namespace pagoda::model
