// The fields both completion endpoints share, read into engine terms.

#include <charconv>
#include <limits>
#include <utility>

#include "server/openai/openai_request_parts.h"

namespace pagoda::server {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// logit_bias: {"<token id>": bias in [-100, 100]}, kept in the client's order.
void read_logit_bias(FieldReader& reader, int32_t n_vocab, engine::SamplingParams& sampling) {
  const Json* bias = reader.object("logit_bias");
  if (bias == nullptr) return;
  for (const auto& [key, value] : bias->items()) {
    int64_t token = -1;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), token);
    const bool is_id = !key.empty() && key.front() != '-' && error == std::errc() &&
                       end == key.data() + key.size();
    if (!is_id || token >= n_vocab) {
      const std::string why = is_id ? "is outside the vocabulary (ids 0 to " +
                                          std::to_string(int64_t(n_vocab) - 1) + ")"
                                    : "is not a token id";
      reader.fail(
          invalid_value("logit_bias", "Invalid key in 'logit_bias': '" + key + "' " + why + "."));
      return;
    }
    if (value.is_null()) continue;
    ApiResult<double> amount = read_number(value, "logit_bias." + key, {-100.0, 100.0});
    if (!amount.ok()) return reader.fail(std::move(amount).error());
    sampling.logit_bias.emplace_back(static_cast<int32_t>(token), static_cast<float>(*amount));
  }
}

// stop: a string, or an array of at most kMaxStopStrings non-empty strings.
void read_stop(FieldReader& reader, engine::StopConditions& stop) {
  const Json* value = reader.ok() ? reader.find("stop") : nullptr;
  if (value == nullptr) return;
  if (value->is_string()) {
    if (value->get_ref<const std::string&>().empty()) return reader.fail(empty_string("stop"));
    stop.stop_strings.push_back(value->get<std::string>());
    return;
  }
  if (!value->is_array()) {
    return reader.fail(invalid_type("stop", "a string or an array of strings", *value));
  }
  if (value->size() > size_t(kMaxStopStrings)) {
    return reader.fail(
        bad_request("Invalid 'stop': array too long. Expected an array with maximum length " +
                        std::to_string(kMaxStopStrings) + ", but got an array with length " +
                        std::to_string(value->size()) + " instead.",
                    "stop", "array_above_max_length"));
  }
  for (size_t i = 0; i < value->size(); ++i) {
    const std::string param = "stop[" + std::to_string(i) + "]";
    ApiResult<std::string> text = read_string((*value)[i], param);
    if (!text.ok()) return reader.fail(std::move(text).error());
    if (text->empty()) return reader.fail(empty_string(param));
    stop.stop_strings.push_back(std::move(text).value());
  }
}

void read_stream_options(FieldReader& reader, GenerationOptions& options) {
  options.stream = reader.boolean("stream").value_or(false);
  const Json* stream_options = reader.object("stream_options");
  if (stream_options == nullptr) return;
  if (!options.stream) {
    return reader.fail(
        invalid_value("stream_options",
                      "The 'stream_options' parameter is only allowed when 'stream' is enabled."));
  }
  FieldReader inner(*stream_options, "stream_options");
  options.include_usage = inner.boolean("include_usage").value_or(false);
  if (!inner.ok()) reader.fail(inner.take_error());
}

// top_k, min_p, repetition_penalty, ignore_eos: vLLM's extensions.
void read_extensions(FieldReader& reader, GenerationOptions& options) {
  engine::SamplingParams& sampling = options.sampling;
  // -1 and 0 both mean "off" (vLLM spells it -1, the engine 0).
  if (auto top_k = reader.integer("top_k", {-1, kInt32Max})) {
    sampling.top_k = *top_k < 0 ? 0 : static_cast<int32_t>(*top_k);
  }
  if (auto min_p = reader.number("min_p", {0.0, 1.0})) sampling.min_p = static_cast<float>(*min_p);
  NumberRange positive;
  positive.min = 0.0;
  positive.min_exclusive = true;
  positive.max = std::numeric_limits<float>::max();
  if (auto penalty = reader.number("repetition_penalty", positive)) {
    sampling.repetition_penalty = static_cast<float>(*penalty);
  }
  options.stop.ignore_eog = reader.boolean("ignore_eos").value_or(false);
}

}  // namespace

void read_shared_options(FieldReader& reader, int32_t n_vocab, GenerationOptions& options,
                         std::string& model) {
  engine::SamplingParams& sampling = options.sampling;
  model = reader.string("model").value_or("");
  if (auto t = reader.number("temperature", {0.0, 2.0})) sampling.temperature = float(*t);
  NumberRange top_p{0.0, 1.0};
  top_p.min_exclusive = true;
  if (auto p = reader.number("top_p", top_p)) sampling.top_p = float(*p);
  options.n = static_cast<int32_t>(reader.integer("n", {1, kMaxChoices}).value_or(1));
  if (auto penalty = reader.number("presence_penalty", {-2.0, 2.0})) {
    sampling.presence_penalty = float(*penalty);
  }
  if (auto penalty = reader.number("frequency_penalty", {-2.0, 2.0})) {
    sampling.frequency_penalty = float(*penalty);
  }
  read_logit_bias(reader, n_vocab, sampling);
  // OpenAI takes any 64-bit signed seed; the engine's is unsigned: two's complement
  // keeps every seed distinct.
  if (auto seed = reader.integer("seed")) sampling.seed = static_cast<uint64_t>(*seed);
  read_stop(reader, options.stop);
  if (auto max_tokens = reader.integer("max_tokens", {1, kInt32Max})) {
    options.max_tokens = static_cast<int32_t>(*max_tokens);
  }
  read_stream_options(reader, options);
  options.user = reader.string("user").value_or("");
  options.priority = static_cast<int32_t>(
      reader.integer("priority", {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()})
          .value_or(0));
  options.speculative = reader.boolean("speculative").value_or(true);
  read_extensions(reader, options);
}

std::optional<ApiError> check_sampling(const GenerationOptions& options, int32_t n_vocab) {
  const Status status = options.sampling.validate(n_vocab);
  if (status.ok()) return std::nullopt;
  return bad_request(status.message());
}

}  // namespace pagoda::server
