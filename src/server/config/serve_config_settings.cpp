#include "server/config/serve_config_settings.h"

#include <algorithm>
#include <limits>

#include "server/config/serve_config_values.h"
#include "server/service/api_keys.h"
#include "server/service/cors.h"
#include "server/service/router.h"

namespace pagoda::server {
namespace {

using Values = std::vector<std::string>;

constexpr std::string_view kModel = "Model";
constexpr std::string_view kHttp = "HTTP";
constexpr std::string_view kAccess = "Access and limits";
constexpr std::string_view kLogs = "Logs";
constexpr std::string_view kEngine = "Engine";

template <typename T>
Status set_integer(T& field, const Values& values, int64_t min, int64_t max) {
  PAGODA_ASSIGN_OR_RETURN(const int64_t value, parse_integer(values.back(), min, max));
  field = static_cast<T>(value);
  return Status::ok_status();
}

Status set_share(float& field, const Values& values) {
  PAGODA_ASSIGN_OR_RETURN(const double value, parse_number(values.back()));
  if (!(value >= 0.0 && value <= 1.0)) return invalid_argument("must be in [0, 1], got " + values.back());
  field = static_cast<float>(value);
  return Status::ok_status();
}

Status set_seconds(std::chrono::seconds& field, const Values& values, int64_t min) {
  PAGODA_ASSIGN_OR_RETURN(const int64_t value, parse_integer(values.back(), min, 86400));
  field = std::chrono::seconds(value);
  return Status::ok_status();
}

Status set_text(std::string& field, const Values& values) {
  if (values.back().empty()) return invalid_argument("empty value");
  field = values.back();
  return Status::ok_status();
}

Status set_bool(bool& field, const Values& values) {
  PAGODA_ASSIGN_OR_RETURN(field, parse_bool(values.back()));
  return Status::ok_status();
}

// A file that must exist now (a typo should stop the start, not the first request).
Status set_existing_file(std::string& field, const Values& values) {
  PAGODA_TRY(set_text(field, values));
  std::error_code error;
  if (!std::filesystem::is_regular_file(field, error)) {
    return not_found("no such file: " + field);
  }
  return Status::ok_status();
}

Status one_speculative_method() {
  return invalid_argument("choose one way to speculate: speculative-ngram or speculative-model");
}

Status set_speculative_ngram(ServeConfig& c, const Values& v) {
  bool on = false;
  PAGODA_TRY(set_bool(on, v));
  engine::SpeculativeConfig& s = c.engine.speculative;
  if (on && s.method == engine::SpeculativeMethod::kDraft) return one_speculative_method();
  if (on) s.method = engine::SpeculativeMethod::kNgram;
  if (!on && s.method == engine::SpeculativeMethod::kNgram) s.method = engine::SpeculativeMethod::kNone;
  return Status::ok_status();
}

Status set_speculative_model(ServeConfig& c, const Values& v) {
  engine::SpeculativeConfig& s = c.engine.speculative;
  if (s.method == engine::SpeculativeMethod::kNgram) return one_speculative_method();
  PAGODA_TRY(set_existing_file(s.draft_model_path, v));
  s.method = engine::SpeculativeMethod::kDraft;
  return Status::ok_status();
}

Status set_max_model_len(ServeConfig& c, const Values& v) {
  PAGODA_ASSIGN_OR_RETURN(const int64_t value,
                          parse_integer(v.back(), 0, std::numeric_limits<int32_t>::max()));
  if (value == 1) return invalid_argument("must be 0 (the model's context) or at least 2 tokens");
  c.engine.scheduler.max_model_len = static_cast<int32_t>(value);
  return Status::ok_status();
}

Status set_kv_cache_memory(ServeConfig& c, const Values& v) {
  PAGODA_ASSIGN_OR_RETURN(const uint64_t bytes, parse_byte_size(v.back()));
  if (bytes == 0) c.engine.kv_memory.bytes.reset();
  else c.engine.kv_memory.bytes = bytes;
  return Status::ok_status();
}

Status set_max_body_bytes(ServeConfig& c, const Values& v) {
  PAGODA_ASSIGN_OR_RETURN(const uint64_t bytes, parse_byte_size(v.back()));
  if (bytes < 1024 || bytes > (uint64_t{1} << 32)) {
    return invalid_argument(v.back() + " is out of range 1KiB..4GiB");
  }
  c.max_body_bytes = static_cast<size_t>(bytes);
  return Status::ok_status();
}

Status set_numerics(ServeConfig& c, const Values& v) {
  PAGODA_ASSIGN_OR_RETURN(c.backend.cpu.numerics, backend::parse_cpu_numerics(v.back()));
  return Status::ok_status();
}

Status set_device(ServeConfig& c, const Values& v) {
  PAGODA_ASSIGN_OR_RETURN(c.backend.device, backend::parse_device(v.back()));
  return Status::ok_status();
}

Status set_gpu_memory_utilization(ServeConfig& c, const Values& v) {
  PAGODA_ASSIGN_OR_RETURN(const double share, parse_number(v.back()));
  PAGODA_TRY(backend::check_memory_utilization(share));
  c.backend.cuda.memory_utilization = share;
  return Status::ok_status();
}

Status set_api_keys(ServeConfig& c, const Values& v) {
  PAGODA_TRY(ApiKeys::load(v, "").status());  // shape only; says "api key N", never the key
  c.api_keys = v;
  return Status::ok_status();
}

Status set_cors_origins(ServeConfig& c, const Values& v) {
  PAGODA_TRY(CorsPolicy::create(v).status());
  c.cors_origins = v;
  return Status::ok_status();
}

const SettingSpec kSettings[] = {
    // Model.
    {"model", "-m", SettingKind::kText, "FILE", "", kModel,
     "GGUF model file (default: models/SmolLM2-135M-Instruct.Q4_1.gguf of the pagoda binary's "
     "repository, or of the working directory)",
     [](ServeConfig& c, const Values& v) { return set_existing_file(c.model_path, v); }},
    {"served-model-name", "", SettingKind::kText, "NAME", "", kModel,
     "Model id that clients use and /v1/models lists (default: the model file's name without "
     ".gguf)",
     [](ServeConfig& c, const Values& v) { return set_text(c.model_name, v); }},
    {"chat-template", "", SettingKind::kText, "FILE", "", kModel,
     "Jinja chat template file to use instead of the model's tokenizer.chat_template",
     [](ServeConfig& c, const Values& v) { return set_existing_file(c.chat_template_file, v); }},
    {"device", "", SettingKind::kText, "auto|cpu|cuda[:N]", "auto", kModel,
     "Where the model runs: auto (the GPU when this build has CUDA and the machine a GPU, "
     "else the CPU), cpu, cuda or cuda:N",
     set_device},
    {"gpu-memory-utilization", "", SettingKind::kNumber, "SHARE", "0.9", kModel,
     "Share of the GPU's memory that weights, KV cache and scratch may take together; the KV "
     "cache gets what the rest leaves",
     set_gpu_memory_utilization},
    {"batch-invariant", "", SettingKind::kBool, "", "off", kModel,
     "GPU: give a request the same output whatever it is batched with (every matmul through the "
     "few-token kernel: slower prompts); the CPU always does",
     [](ServeConfig& c, const Values& v) { return set_bool(c.backend.cuda.batch_invariant, v); }},
    {"numerics", "", SettingKind::kText, "fast|reference", "fast", kModel,
     "fast: the fastest kernels, batch-invariant; reference: llama.cpp's CPU rounding (slower)",
     set_numerics},
    {"mmap", "", SettingKind::kBool, "", "off", kModel,
     "CPU: read the weights where the model file is mapped instead of copying them onto huge "
     "pages (less memory, slower decoding)",
     [](ServeConfig& c, const Values& v) { return set_bool(c.backend.cpu.mmap_weights, v); }},
    {"threads", "-t", SettingKind::kInteger, "INT", "0", kModel,
     "CPU threads for the forward pass (0: one per physical core)",
     [](ServeConfig& c, const Values& v) { return set_integer(c.backend.cpu.n_threads, v, 0, 1024); }},
    // HTTP.
    {"host", "", SettingKind::kText, "ADDRESS", "127.0.0.1", kHttp,
     "Address to listen on (0.0.0.0: every interface)",
     [](ServeConfig& c, const Values& v) { return set_text(c.host, v); }},
    {"port", "", SettingKind::kInteger, "INT", "8080", kHttp, "Port to listen on (0: any free port)",
     [](ServeConfig& c, const Values& v) { return set_integer(c.port, v, 0, 65535); }},
    {"io-threads", "", SettingKind::kInteger, "INT", "2", kHttp,
     "Threads running the HTTP connections (apart from the engine's)",
     [](ServeConfig& c, const Values& v) { return set_integer(c.io_threads, v, 1, 256); }},
    {"max-body-bytes", "", SettingKind::kBytes, "BYTES", "8MiB", kHttp,
     "Largest request body; past it 413 (e.g. 16MiB)", set_max_body_bytes},
    {"idle-timeout", "", SettingKind::kInteger, "SECONDS", "60", kHttp,
     "Close a keep-alive connection idle this long",
     [](ServeConfig& c, const Values& v) { return set_seconds(c.idle_timeout, v, 1); }},
    {"read-timeout", "", SettingKind::kInteger, "SECONDS", "30", kHttp,
     "Close a connection whose request head and body take longer to arrive",
     [](ServeConfig& c, const Values& v) { return set_seconds(c.read_timeout, v, 1); }},
    {"max-connections", "", SettingKind::kInteger, "INT", "10000", kHttp,
     "Open connections at most; more wait to be accepted",
     [](ServeConfig& c, const Values& v) { return set_integer(c.max_connections, v, 1, 1000000); }},
    {"webui", "", SettingKind::kBool, "", "on", kHttp,
     "Serve the chat page at / for a browser (--no-webui: off; the API is unchanged)",
     [](ServeConfig& c, const Values& v) { return set_bool(c.webui, v); }},
    {"metrics", "", SettingKind::kBool, "", "on", kHttp,
     "Serve the Prometheus metrics (--no-metrics: off; /health stays)",
     [](ServeConfig& c, const Values& v) { return set_bool(c.metrics, v); }},
    {"metrics-path", "", SettingKind::kText, "PATH", "/metrics", kHttp,
     "Where the Prometheus metrics are served",
     [](ServeConfig& c, const Values& v) -> Status {
       PAGODA_TRY(check_metrics_path(v.back()));
       c.metrics_path = v.back();
       return Status::ok_status();
     }},
    // Access and limits.
    {"api-key", "", SettingKind::kList, "KEY", "", kAccess,
     "Accept requests with 'Authorization: Bearer KEY' only (repeatable; env: comma-separated)",
     set_api_keys},
    {"api-key-file", "", SettingKind::kText, "FILE", "", kAccess,
     "File of API keys, one per line ('#' comments)",
     [](ServeConfig& c, const Values& v) { return set_existing_file(c.api_key_file, v); }},
    {"cors-origin", "", SettingKind::kList, "ORIGIN", "", kAccess,
     "Browser origin allowed to call the API, or * (repeatable; env: comma-separated)",
     set_cors_origins},
    {"rate-limit-rpm", "", SettingKind::kInteger, "INT", "0", kAccess,
     "Requests per minute per API key (or client address); past it 429 (0: no limit)",
     [](ServeConfig& c, const Values& v) { return set_integer(c.rate_limit_rpm, v, 0, 1000000000); }},
    {"max-queued", "", SettingKind::kInteger, "INT", "256", kAccess,
     "Requests waiting for the engine at most; past it 503 with Retry-After (0: no bound)",
     [](ServeConfig& c, const Values& v) { return set_integer(c.max_queued, v, 0, 1000000); }},
    {"max-priority-boost", "", SettingKind::kInteger, "INT", "0", kAccess,
     "How far ahead of the default priority 0 a request may ask to run: a `priority` below "
     "-INT is refused (lower runs first; 0: none can overtake the default)",
     [](ServeConfig& c, const Values& v) {
       return set_integer(c.max_priority_boost, v, 0, 1000000000);
     }},
    {"shutdown-grace", "", SettingKind::kInteger, "SECONDS", "30", kAccess,
     "On SIGTERM/SIGINT, let running requests finish this long before aborting them",
     [](ServeConfig& c, const Values& v) { return set_seconds(c.shutdown_grace, v, 0); }},
    // Logs.
    {"log-format", "", SettingKind::kText, "text|json", "text", kLogs, "Log lines as text or as JSON objects",
     [](ServeConfig& c, const Values& v) -> Status {
       PAGODA_ASSIGN_OR_RETURN(c.log_format, parse_log_format(v.back()));
       return Status::ok_status();
     }},
    {"log-level", "", SettingKind::kText, "LEVEL", "info", kLogs,
     "trace, debug, info, warn, error, critical or off",
     [](ServeConfig& c, const Values& v) -> Status {
       PAGODA_ASSIGN_OR_RETURN(c.log_level, parse_log_level(v.back()));
       return Status::ok_status();
     }},
    {"log-prompts", "", SettingKind::kBool, "", "off", kLogs,
     "Write prompts into the access log (they are private otherwise)",
     [](ServeConfig& c, const Values& v) { return set_bool(c.log_prompts, v); }},
    // Engine.
    {"max-model-len", "", SettingKind::kInteger, "TOKENS", "0", kEngine,
     "Context of a request, prompt and output (0: the model's training context)", set_max_model_len},
    {"max-batched-tokens", "", SettingKind::kInteger, "TOKENS", "512", kEngine,
     "Tokens per engine step, all requests together",
     [](ServeConfig& c, const Values& v) {
       return set_integer(c.engine.scheduler.max_batched_tokens, v, 1, 1 << 20);
     }},
    {"max-running", "", SettingKind::kInteger, "INT", "64", kEngine,
     "Requests computed at once (holding KV cache); others wait",
     [](ServeConfig& c, const Values& v) {
       return set_integer(c.engine.scheduler.max_running, v, 1, 65536);
     }},
    {"block-size", "", SettingKind::kInteger, "TOKENS", "16", kEngine, "Tokens per KV cache block",
     [](ServeConfig& c, const Values& v) { return set_integer(c.engine.block_size, v, 1, 4096); }},
    {"kv-cache-type", "", SettingKind::kText, "f16|f32|q8_0", "f16", kEngine, "KV cache element type",
     [](ServeConfig& c, const Values& v) -> Status {
       PAGODA_ASSIGN_OR_RETURN(c.engine.kv_type, engine::parse_kv_cache_type(v.back()));
       return Status::ok_status();
     }},
    {"kv-cache-memory", "", SettingKind::kBytes, "BYTES", "0", kEngine,
     "KV cache size, e.g. 4GiB or 512MiB (0: half the available memory, at most what "
     "max-running requests of max-model-len tokens use)",
     set_kv_cache_memory},
    {"prefix-caching", "", SettingKind::kBool, "", "on", kEngine,
     "Reuse the KV cache of prompt prefixes seen before (--no-prefix-caching: off)",
     [](ServeConfig& c, const Values& v) { return set_bool(c.engine.enable_prefix_cache, v); }},
    {"prefix-cache-eviction", "", SettingKind::kText, "lru|lfu|fifo", "lru", kEngine,
     "Which cached prefix blocks are reused first when the KV cache is full: least recently "
     "used, least frequently used, or first cached",
     [](ServeConfig& c, const Values& v) -> Status {
       PAGODA_ASSIGN_OR_RETURN(c.engine.prefix_cache_eviction, kv::parse_eviction_policy(v.back()));
       return Status::ok_status();
     }},
    // Speculative decoding.
    {"speculative-ngram", "", SettingKind::kBool, "", "off", kEngine,
     "Speculative decoding by prompt lookup: propose what followed the latest earlier "
     "occurrence of a request's last tokens (the same output, fewer steps)",
     set_speculative_ngram},
    {"speculative-model", "", SettingKind::kText, "FILE", "", kEngine,
     "Speculative decoding with a draft model: a smaller GGUF with the same vocabulary "
     "proposes, the model verifies (the same output distribution)",
     set_speculative_model},
    {"num-speculative-tokens", "", SettingKind::kInteger, "INT", "0", kEngine,
     "Proposals a request verifies per step at most (0: 3 for prompt lookup, 4 for a draft model)",
     [](ServeConfig& c, const Values& v) {
       return set_integer(c.engine.speculative.num_speculative_tokens, v, 0, 16);
     }},
    {"speculative-adaptive", "", SettingKind::kBool, "", "on", kEngine,
     "Each request verifies as many proposals as are worth their rows, by its acceptance "
     "and the measured cost of a step (--no-speculative-adaptive: always all it has)",
     [](ServeConfig& c, const Values& v) { return set_bool(c.engine.speculative.adaptive, v); }},
    {"speculative-p-min", "", SettingKind::kNumber, "P", "0", kEngine,
     "A draft model stops proposing for a greedy request at the first token it gives less "
     "than this chance (0: never)",
     [](ServeConfig& c, const Values& v) { return set_share(c.engine.speculative.draft_p_min, v); }},
    {"speculative-ngram-min", "", SettingKind::kInteger, "INT", "2", kEngine,
     "Shortest suffix of a request that prompt lookup matches",
     [](ServeConfig& c, const Values& v) { return set_integer(c.engine.speculative.ngram_min, v, 1, 16); }},
    {"speculative-ngram-max", "", SettingKind::kInteger, "INT", "4", kEngine,
     "Longest suffix of a request that prompt lookup matches",
     [](ServeConfig& c, const Values& v) { return set_integer(c.engine.speculative.ngram_max, v, 1, 16); }},
};

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] == '_' ? '-' : a[i];
    const char y = b[i] == '_' ? '-' : b[i];
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::span<const SettingSpec> serve_settings() { return kSettings; }

const SettingSpec* find_setting(std::string_view name) {
  const auto it = std::find_if(std::begin(kSettings), std::end(kSettings),
                               [&](const SettingSpec& s) { return same_name(s.name, name); });
  return it == std::end(kSettings) ? nullptr : &*it;
}

std::string env_var_name(std::string_view setting_name) {
  std::string name = "PAGODA_";
  for (char c : setting_name) {
    name += c == '-' ? '_' : (c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c);
  }
  return name;
}

}  // namespace pagoda::server
