#include "tools/model_quantizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/session.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "quant/dequantize.h"
#include "test_backend.h"
#include "test_data.h"
#include "test_files.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::tools {
namespace {

using ::pagoda::testing::model_path;

using ::pagoda::testing::open_gguf_or_fail;
using ::pagoda::testing::TempFile;

// `source` converted to `type` into `out`, read back.
gguf::Reader quantize_or_fail(const gguf::Reader& source, const std::string& type,
                              const TempFile& out, int n_threads = 2) {
  Expected<QuantizationPlan> plan = plan_quantization(source, type);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  const Status status = write_quantized_model(source, *plan, out.path(), n_threads);
  EXPECT_TRUE(status.ok()) << status.message();
  return open_gguf_or_fail(out.path());
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

std::vector<float> dequantized(const gguf::TensorInfo& tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.n_elements()));
  const int64_t row = tensor.shape[0];
  const size_t bytes_per_row = static_cast<size_t>(row_bytes(tensor.type, row));
  for (int64_t r = 0; r < tensor.rows(); ++r) {
    const Status status = quant::dequantize_row(
        tensor.type, tensor.data + bytes_per_row * static_cast<size_t>(r),
        &values[static_cast<size_t>(r * row)], row);
    EXPECT_TRUE(status.ok()) << tensor.name << ": " << status.message();
  }
  return values;
}

// The largest error `type`'s rounding allows for values of a 32-value block whose largest
// magnitude is `amax`: half a quantization step, and the scale's own f16 rounding,
// rounded up generously.
float error_bound(DType type, float amax) {
  switch (type) {
    case DType::F32:
      return 0.0f;
    case DType::F16:
      return amax * 0x1p-11f + 0x1p-24f;
    case DType::Q8_0:
      return amax / 127.0f;  // a step is amax / 127: twice the rounding error
    case DType::Q5_0:
      return amax / 15.0f;
    case DType::Q4_0:
      return amax / 7.0f;
    // The K-quants round sub-block scales (and minimums) to 6 or 8 bits as well: looser.
    case DType::Q6_K:
      return amax / 16.0f;
    case DType::Q5_K:
      return amax / 8.0f;
    case DType::Q4_K:
      return amax / 4.0f;
    default:
      ADD_FAILURE() << "no bound for " << dtype_name(type);
      return 0.0f;
  }
}

// Every value of `output`'s tensor within its type's rounding of `source`'s.
void expect_within_rounding(const gguf::TensorInfo& source, const gguf::TensorInfo& output) {
  const std::vector<float> want = dequantized(source), got = dequantized(output);
  ASSERT_EQ(want.size(), got.size()) << source.name;
  constexpr size_t kBlock = 32;
  for (size_t start = 0; start < want.size(); start += kBlock) {
    const size_t end = std::min(want.size(), start + kBlock);
    float amax = 0.0f;
    for (size_t i = start; i < end; ++i) amax = std::max(amax, std::fabs(want[i]));
    const float bound = error_bound(output.type, amax);
    for (size_t i = start; i < end; ++i) {
      ASSERT_LE(std::fabs(got[i] - want[i]), bound)
          << source.name << " value " << i << " in " << dtype_name(output.type);
    }
  }
}

std::map<std::string, DType> types_of(const gguf::Reader& file) {
  std::map<std::string, DType> types;
  for (const gguf::TensorInfo& tensor : file.tensors()) types[tensor.name] = tensor.type;
  return types;
}

class QuantizeStories : public ::testing::Test {
 protected:
  void SetUp() override { source_ = open_gguf_or_fail(model_path("stories260K.gguf")); }

  // The output has the source's metadata (general.file_type and
  // general.quantization_version set), tensor names and shapes, and its values within
  // the rounding of its types.
  void expect_same_model(const gguf::Reader& output, uint32_t file_type) {
    for (const auto& [key, value] : source_.metadata()) {
      const gguf::Value* copied = output.find(key);
      ASSERT_NE(copied, nullptr) << key;
      EXPECT_TRUE(*copied == value) << key;
    }
    EXPECT_EQ(output.metadata().size(), source_.metadata().size() + 2);
    EXPECT_EQ(output.get<uint32_t>("general.file_type").value(), file_type);
    EXPECT_EQ(output.get<uint32_t>("general.quantization_version").value(), 2u);
    ASSERT_EQ(output.tensors().size(), source_.tensors().size());
    for (size_t i = 0; i < source_.tensors().size(); ++i) {
      const gguf::TensorInfo& want = source_.tensors()[i];
      const gguf::TensorInfo& got = output.tensors()[i];
      EXPECT_EQ(got.name, want.name);
      EXPECT_EQ(got.shape, want.shape) << want.name;
      if (got.type == want.type) {
        EXPECT_TRUE(std::ranges::equal(got.bytes(), want.bytes())) << want.name;
      } else {
        expect_within_rounding(want, got);
      }
    }
  }

  gguf::Reader source_;
};

TEST_F(QuantizeStories, Q8_0PicksTheTypesLlamaQuantizePicks) {
  TempFile out("q8_0.gguf");
  const gguf::Reader output = quantize_or_fail(source_, "q8_0", out);
  expect_same_model(output, 7);
  // Rows of 172 (ffn_down) fill no whole Q8_0 block: f16, as llama-quantize falls back;
  // the reference's own Q8_0 file has the same type for every tensor.
  const gguf::Reader reference = open_gguf_or_fail(model_path("stories260K-Q8_0.gguf"));
  EXPECT_EQ(types_of(output), types_of(reference));
  EXPECT_EQ(types_of(output).at("blk.2.ffn_down.weight"), DType::F16);
  EXPECT_EQ(types_of(output).at("blk.2.ffn_up.weight"), DType::Q8_0);
  EXPECT_EQ(types_of(output).at("blk.2.ffn_norm.weight"), DType::F32);
}

// Quantization is byte-exact with the reference quantizers, so the reference's Q8_0 and
// F16 files, made from the same f32 weights, are reproduced tensor by tensor.
TEST_F(QuantizeStories, Q8_0AndF16TensorsAreByteIdenticalToTheReferenceFiles) {
  for (const std::string type : {"q8_0", "f16"}) {
    TempFile out(type + ".gguf");
    const gguf::Reader output = quantize_or_fail(source_, type, out);
    const gguf::Reader reference =
        open_gguf_or_fail(model_path(type == "f16" ? "stories260K-F16.gguf" : "stories260K-Q8_0.gguf"));
    for (const gguf::TensorInfo& tensor : output.tensors()) {
      const gguf::TensorInfo* want = reference.find_tensor(tensor.name);
      ASSERT_NE(want, nullptr) << tensor.name;
      EXPECT_EQ(tensor.type, want->type) << tensor.name;
      EXPECT_TRUE(std::ranges::equal(tensor.bytes(), want->bytes())) << type << " " << tensor.name;
    }
  }
}

TEST_F(QuantizeStories, F16ConvertsEveryMatrix) {
  TempFile out("f16.gguf");
  const gguf::Reader output = quantize_or_fail(source_, "f16", out);
  expect_same_model(output, 1);
  for (const gguf::TensorInfo& tensor : output.tensors()) {
    EXPECT_EQ(tensor.type, tensor.shape.size() == 1 ? DType::F32 : DType::F16) << tensor.name;
  }
}

TEST_F(QuantizeStories, Q4_0FallsBackToF16ForRowsOf172) {
  TempFile out("q4_0.gguf");
  const gguf::Reader output = quantize_or_fail(source_, "Q4_0", out);
  expect_same_model(output, 2);
  for (const gguf::TensorInfo& tensor : output.tensors()) {
    const DType want = tensor.shape.size() == 1     ? DType::F32
                       : tensor.shape[0] % 32 != 0 ? DType::F16
                                                   : DType::Q4_0;
    EXPECT_EQ(tensor.type, want) << tensor.name;
  }
}

// q4_K_M over rows of 64 and 172, which fill no 256-value K-quant block: Q4_K falls back
// to Q5_0 and Q6_K to Q8_0 (rows of 64), both to F16 (rows of 172, not whole blocks of
// 32). Q6_K goes to output.weight, and to attn_v and ffn_down in the layers with more
// bits: of 5 layers, the last eighth (layer 4) and every third from the first (layer 2).
TEST_F(QuantizeStories, Q4_K_MFollowsTheMixAndItsFallbacks) {
  TempFile out("q4_k_m.gguf");
  const gguf::Reader output = quantize_or_fail(source_, "q4_K_M", out);
  expect_same_model(output, 15);
  const std::map<std::string, DType> types = types_of(output);
  EXPECT_EQ(types.at("token_embd.weight"), DType::Q5_0);
  EXPECT_EQ(types.at("output.weight"), DType::Q8_0);
  EXPECT_EQ(types.at("output_norm.weight"), DType::F32);
  for (int layer = 0; layer < 5; ++layer) {
    const std::string block = "blk." + std::to_string(layer) + ".";
    const bool more_bits = layer == 2 || layer == 4;
    EXPECT_EQ(types.at(block + "attn_v.weight"), more_bits ? DType::Q8_0 : DType::Q5_0) << layer;
    EXPECT_EQ(types.at(block + "attn_q.weight"), DType::Q5_0);
    EXPECT_EQ(types.at(block + "attn_k.weight"), DType::Q5_0);
    EXPECT_EQ(types.at(block + "attn_output.weight"), DType::Q5_0);
    EXPECT_EQ(types.at(block + "ffn_gate.weight"), DType::Q5_0);
    EXPECT_EQ(types.at(block + "ffn_up.weight"), DType::Q5_0);
    EXPECT_EQ(types.at(block + "ffn_down.weight"), DType::F16);
    EXPECT_EQ(types.at(block + "attn_norm.weight"), DType::F32);
  }
}

TEST_F(QuantizeStories, TheOutputIsTheSameWhateverTheThreads) {
  TempFile one("one.gguf"), three("three.gguf");
  quantize_or_fail(source_, "q4_K_M", one, 1);
  quantize_or_fail(source_, "q4_K_M", three, 3);
  EXPECT_EQ(file_bytes(one.path()), file_bytes(three.path()));
}

TEST_F(QuantizeStories, PlanCountsTheBytesBeforeAndAfter) {
  const Expected<QuantizationPlan> plan = plan_quantization(source_, "q8_0");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_FALSE(plan->requantizes);
  uint64_t source_bytes = 0;
  for (const gguf::TensorInfo& tensor : source_.tensors()) source_bytes += tensor.n_bytes;
  EXPECT_EQ(plan->source_bytes(), source_bytes);
  const gguf::Reader reference = open_gguf_or_fail(model_path("stories260K-Q8_0.gguf"));
  uint64_t reference_bytes = 0;
  for (const gguf::TensorInfo& tensor : reference.tensors()) reference_bytes += tensor.n_bytes;
  EXPECT_EQ(plan->target_bytes(), reference_bytes);
}

TEST_F(QuantizeStories, AnUnknownTypeListsTheValidOnes) {
  const Expected<QuantizationPlan> plan = plan_quantization(source_, "q3_K_XL");
  ASSERT_FALSE(plan.ok());
  const std::string& message = plan.status().message();
  EXPECT_NE(message.find("'q3_K_XL'"), std::string::npos) << message;
  for (const char* name : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_K", "q6_K", "q4_K_M"}) {
    EXPECT_NE(message.find(name), std::string::npos) << name << " in " << message;
  }
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(QuantizeModel, RequantizingAQuantizedFileWorksAndSaysSo) {
  const gguf::Reader source = open_gguf_or_fail(model_path("stories260K-Q8_0.gguf"));
  const Expected<QuantizationPlan> plan = plan_quantization(source, "q4_0");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(plan->requantizes);
  TempFile out("requantized.gguf");
  ASSERT_TRUE(write_quantized_model(source, *plan, out.path(), 2).ok());
  const gguf::Reader output = open_gguf_or_fail(out.path());
  ASSERT_EQ(output.tensors().size(), source.tensors().size());
  for (size_t i = 0; i < source.tensors().size(); ++i) {
    const gguf::TensorInfo& from = source.tensors()[i];
    const gguf::TensorInfo& to = output.tensors()[i];
    const DType want = from.shape.size() == 1 ? DType::F32
                       : from.type == DType::F16 ? DType::F16  // rows of 172: f16, copied
                                                 : DType::Q4_0;
    EXPECT_EQ(to.type, want) << from.name;
    if (to.type == from.type) {
      EXPECT_TRUE(std::ranges::equal(to.bytes(), from.bytes())) << from.name;
    } else {
      expect_within_rounding(from, to);
    }
  }
  EXPECT_EQ(output.get<uint32_t>("general.file_type").value(), 2u);
}

TEST(QuantizeModel, AFloatSourceIsNotARequantization) {
  const gguf::Reader source = open_gguf_or_fail(model_path("stories260K-F16.gguf"));
  const Expected<QuantizationPlan> to_q4 = plan_quantization(source, "q4_0");
  ASSERT_TRUE(to_q4.ok());
  EXPECT_FALSE(to_q4->requantizes);
  // A quantized file back to f16 is dequantized only: nothing more is lost.
  const gguf::Reader quantized = open_gguf_or_fail(model_path("stories260K-Q8_0.gguf"));
  const Expected<QuantizationPlan> to_f16 = plan_quantization(quantized, "f16");
  ASSERT_TRUE(to_f16.ok());
  EXPECT_FALSE(to_f16->requantizes);
}

TEST(QuantizeModel, AMatrixOfATypeWithNoDequantizerIsOneClearError) {
  gguf::Writer writer;
  ASSERT_TRUE(writer.set_string("general.architecture", "llama").ok());
  const std::vector<uint8_t> weights(64 * 32, 1);
  ASSERT_TRUE(writer.add_tensor("blk.0.attn_q.weight", DType::I8, {64, 32}, weights).ok());
  const std::vector<uint8_t> bytes = writer.serialize();
  const Expected<gguf::Reader> source = gguf::Reader::parse(bytes, "int8.gguf");
  ASSERT_TRUE(source.ok()) << source.status().message();
  const Expected<QuantizationPlan> plan = plan_quantization(*source, "q8_0");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "int8.gguf: tensor 'blk.0.attn_q.weight' has type i8, which cannot be converted (no "
            "dequantizer for it)");
}

// GPT-2's fused QKV projection and position embedding under the mix, from a Q8_0 file:
// attn_qkv gets Q5_K, the position embedding stays as it is, and of 4 layers ffn_down has
// more bits in layers 2 (every third) and 3 (the last eighth).
TEST(QuantizeModel, Gpt2FromQ8_0ToQ4_K_MFollowsTheMix) {
  const std::string path = model_path("rand-gpt2-Q8_0.gguf");
  PAGODA_SKIP_IF_MISSING(path);
  const gguf::Reader source = open_gguf_or_fail(path);
  const Expected<QuantizationPlan> plan = plan_quantization(source, "q4_K_M");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(plan->requantizes);
  TempFile out("gpt2.gguf");
  ASSERT_TRUE(write_quantized_model(source, *plan, out.path(), 2).ok());
  const gguf::Reader output = open_gguf_or_fail(out.path());
  const std::map<std::string, DType> types = types_of(output);
  EXPECT_EQ(types.at("token_embd.weight"), DType::Q4_K);
  EXPECT_EQ(types.at("output.weight"), DType::Q6_K);
  EXPECT_EQ(types.at("position_embd.weight"), DType::F32);
  for (int layer = 0; layer < 4; ++layer) {
    const std::string block = "blk." + std::to_string(layer) + ".";
    EXPECT_EQ(types.at(block + "attn_qkv.weight"), DType::Q5_K);
    EXPECT_EQ(types.at(block + "attn_qkv.bias"), DType::F32);
    EXPECT_EQ(types.at(block + "attn_output.weight"), DType::Q4_K);
    EXPECT_EQ(types.at(block + "ffn_up.weight"), DType::Q4_K);
    EXPECT_EQ(types.at(block + "ffn_down.weight"), layer >= 2 ? DType::Q6_K : DType::Q4_K)
        << layer;
  }
  for (size_t i = 0; i < source.tensors().size(); ++i) {
    const gguf::TensorInfo& from = source.tensors()[i];
    const gguf::TensorInfo& to = output.tensors()[i];
    ASSERT_EQ(to.name, from.name);
    if (to.type == from.type) {
      EXPECT_TRUE(std::ranges::equal(to.bytes(), from.bytes())) << from.name;
    } else {
      expect_within_rounding(from, to);
    }
  }
}

// The greedy tokens of a model file from BOS through the engine.
std::vector<int32_t> greedy_tokens(const std::string& path, int32_t n_tokens) {
  const gguf::Reader file = open_gguf_or_fail(path);
  const std::unique_ptr<backend::Backend> backend = pagoda::testing::make_test_backend();
  if (!backend) return {};
  model::LoadOptions load;
  load.max_batch_tokens = 64;
  load.max_logit_rows = 1;
  Expected<std::unique_ptr<model::Model>> model = model::load_model(file, *backend, load);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Expected<tokenizer::Tokenizer> tokenizer = tokenizer::Tokenizer::from_gguf(file);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  if (!model.ok() || !tokenizer.ok()) return {};
  engine::EngineConfig config;
  config.scheduler.max_batched_tokens = 64;
  config.scheduler.max_running = 1;
  config.scheduler.max_model_len = 256;
  Expected<std::unique_ptr<engine::Session>> session =
      engine::Session::create(**model, *backend, *tokenizer, config);
  EXPECT_TRUE(session.ok()) << session.status().message();
  if (!session.ok()) return {};
  engine::EngineRequest request;
  request.prompt = {tokenizer->bos()};
  request.sampling.temperature = 0.0f;
  request.stop.max_tokens = n_tokens;
  Expected<engine::GenerationResult> result = (*session)->generate(request, nullptr);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? result->tokens : std::vector<int32_t>{};
}

TEST(QuantizeModel, Q8_0OutputGeneratesWhatTheReferenceQ8_0FileGenerates) {
  const gguf::Reader source = open_gguf_or_fail(model_path("stories260K.gguf"));
  TempFile out("generate.gguf");
  quantize_or_fail(source, "q8_0", out);
  constexpr int32_t kTokens = 64;
  const std::vector<int32_t> reference = greedy_tokens(model_path("stories260K-Q8_0.gguf"), kTokens);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kTokens));
  EXPECT_EQ(greedy_tokens(out.path(), kTokens), reference);
}

// A model quantized by the mix still loads and generates a full answer.
TEST(QuantizeModel, Q4_K_MOutputLoadsAndGenerates) {
  const gguf::Reader source = open_gguf_or_fail(model_path("stories260K.gguf"));
  TempFile out("generate_mix.gguf");
  quantize_or_fail(source, "q4_K_M", out);
  EXPECT_EQ(greedy_tokens(out.path(), 32).size(), 32u);
}

}  // namespace
}  // namespace pagoda::tools
