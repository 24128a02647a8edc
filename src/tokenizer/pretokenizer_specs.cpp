// The pre-tokenizers that tokenizer.ggml.pre names: each one's regexes, in order, and
// how it adjusts the vocabulary's flags. The regexes are those of the models' own
// tokenizer.json files, with (?i:...) spelled out as character classes.

#include <initializer_list>
#include <utility>
#include <vector>

#include "tokenizer/pretokenizer.h"

namespace pagoda::tokenizer {
namespace {

// GPT-2's regex; also the second step of several others.
constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

#define PAGODA_CONTRACTIONS R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"

constexpr std::string_view kLlama3 = PAGODA_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kJais2 = PAGODA_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})";
constexpr std::string_view kQwen2 = PAGODA_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen35 = PAGODA_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kSeedCoder = PAGODA_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kExaoneMoe = PAGODA_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kMiniCpm5 = PAGODA_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kYoutuWords = R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    PAGODA_CONTRACTIONS R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    PAGODA_CONTRACTIONS R"(?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kTinyAyaWords = R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    PAGODA_CONTRACTIONS R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    PAGODA_CONTRACTIONS R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt4o = R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)"
    PAGODA_CONTRACTIONS R"(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)"
    PAGODA_CONTRACTIONS R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGraniteMulti = R"([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+)"
    PAGODA_CONTRACTIONS R"(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*)"
    PAGODA_CONTRACTIONS R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kDeepseek3Words =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kSpark25Words =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kBailingMoe =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kUfakzeka =
    R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kCjkHanKana = "[一-龥぀-ゟ゠-ヿ]+";
constexpr std::string_view kCjkHanHangul = "[一-龥ࠀ-一가-퟿]+";
constexpr std::string_view kNordic = " ?[^(\\s|.,!?…。，、।۔،)]+";
constexpr std::string_view kLines = R"([^\n]+|[\n]+)";

#undef PAGODA_CONTRACTIONS

// Letters of the cased scripts (DeepSeek LLM).
constexpr std::string_view kDeepseekLetters = "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+";
// CJK, kana, Thai, Lao, Khmer, Myanmar and Hangul blocks (AFMoE). The compatibility
// ideographs start at U+8C48, not U+F900: the reference spells the range that way.
constexpr std::string_view kAfmoeScripts = "[\u4E00-\u9FFF\u3400-\u4DBF\u8C48-\uFAFF\u3040-\u309F\u30A0-\u30FF\uFF65-\uFF9F\u2F00-\u2FDF\u0E40-\u0E7F\u0E80-\u0EFF\u1780-\u17FF\u1000-\u109F\uAA60-\uAA7F\uA9E0-\uA9FF\uAC00-\uD7AF\u1100-\u11FF]+";

struct Entry {
  std::vector<std::string_view> names;  // tokenizer.ggml.pre values selecting this spec
  PreTokenizerSpec spec;
};

PreTokenizerSpec make(std::string_view kind, std::initializer_list<std::string_view> regexes) {
  PreTokenizerSpec s;
  s.kind = kind;
  s.regexes.assign(regexes.begin(), regexes.end());
  return s;
}

// Flag adjustments, applied to a spec in place.
PreTokenizerSpec&& no_clean(PreTokenizerSpec&& s) { s.clean_spaces = false; return std::move(s); }
PreTokenizerSpec&& whole_words(PreTokenizerSpec&& s) { s.ignore_merges = true; return std::move(s); }
PreTokenizerSpec&& bos(PreTokenizerSpec&& s) { s.force_add_bos = true; return std::move(s); }
PreTokenizerSpec&& raw_bytes(PreTokenizerSpec&& s) { s.byte_encode = false; return std::move(s); }

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> t;
    const auto add = [&](std::vector<std::string_view> names, PreTokenizerSpec spec) {
      t.push_back({std::move(names), std::move(spec)});
    };
    add({"default"}, make("default", {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}));
    add({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
        bos(whole_words(make("llama3", {kLlama3}))));
    add({"dbrx"}, make("dbrx", {kLlama3}));
    add({"smaug-bpe"}, make("smaug-bpe", {kLlama3}));
    add({"jais-2"}, make("jais-2", {kJais2}));
    add({"deepseek-llm"}, no_clean(make("deepseek-llm", {"[\r\n]", kDeepseekLetters,
        "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+", R"(\s+$)", kCjkHanHangul, R"(\p{N}+)"})));
    add({"deepseek-coder"}, no_clean(make("deepseek-coder",
        {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjkHanHangul, R"(\p{N})"})));
    for (std::string_view kind : {"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"}) {
      add({kind}, no_clean(make(kind, {R"(\p{N}{1,3})", kCjkHanKana, kDeepseek3Words})));
    }
    add({"spark2_5"}, no_clean(make("spark2_5", {R"(\p{N}{1,3})", kCjkHanKana, kSpark25Words, R"(\p{N})"})));
    add({"youtu"}, whole_words(no_clean(make("youtu", {
        "[\uAC00-\uD7A3\u3131-\u318E]+|[\uFF01\u2026\u201C\u201D\u2018\u2019\u2014\uFF1A\uFF1B\uFF0C\u3001-\u303F"
        "\uFE30-\uFE4F]+|[\u3105-\u312F]+|[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+", kYoutuWords}))));
    add({"falcon"}, make("falcon", {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}));
    for (std::string_view kind : {"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"}) {
      add({kind}, make(kind, {R"(\p{N})", kGpt2}));
    }
    add({"command-r"}, no_clean(make("command-r", {R"(\p{N})", kGpt2})));
    add({"smollm"}, no_clean(make("smollm", {R"(\p{N})", kGpt2})));
    add({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
         "modern-bert", "exaone4"}, make("gpt-2", {kGpt2}));
    for (std::string_view kind : {"jina-v1-en", "jina-v2-code", "roberta-bpe"}) {
      PreTokenizerSpec s = make(kind, {kGpt2});
      s.add_sep = true;
      add({kind}, std::move(s));
    }
    for (std::string_view kind : {"mpt", "olmo", "jais"}) add({kind}, make(kind, {kGpt2}));
    for (std::string_view kind : {"trillion", "granite-docling"}) add({kind}, no_clean(make(kind, {kGpt2})));
    add({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"}, no_clean(make("qwen2", {kQwen2})));
    add({"megrez"}, make("megrez", {kQwen2}));
    add({"stablelm2"}, make("stablelm2", {kQwen2}));
    for (std::string_view kind : {"hunyuan", "solar-open", "grok-2"}) add({kind}, no_clean(make(kind, {kQwen2})));
    add({"qwen35"}, no_clean(make("qwen35", {kQwen35})));
    add({"poro-chat"}, no_clean(make("poro-chat", {kNordic})));
    for (std::string_view kind : {"bloom", "gpt3-finnish"}) add({kind}, make(kind, {kNordic}));
    add({"viking"}, no_clean(make("viking", {kNordic, R"(\p{N})"})));
    {
      PreTokenizerSpec s = make("chatglm4", {kLlama3});
      s.clear_bos = true;
      add({"glm4", "chatglm-bpe"}, std::move(s));
    }
    add({"tekken"}, bos(whole_words(no_clean(make("tekken", {kTekken})))));
    add({"chameleon"}, bos(no_clean(make("chameleon", {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
        R"(([\t\n]|    |  ))", R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2}))));
    add({"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, no_clean(make("gpt-4o", {kGpt4o})));
    add({"granite-embed-multi-97m"}, whole_words(no_clean(make("granite-embed-multi-97m", {kGraniteMulti}))));
    add({"tiny_aya", "cohere2moe"}, no_clean(make("tiny_aya", {R"(\d{1,3}(?=(?:\d{3})*\b))", kTinyAyaWords})));
    add({"kimi-k2"}, no_clean(make("kimi-k2", {R"(\p{Han}+)"})));
    add({"superbpe"}, no_clean(make("superbpe", {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"})));
    add({"bailingmoe", "bailingmoe2", "llada-moe"}, no_clean(make("bailingmoe", {kBailingMoe})));
    add({"seed-coder"}, no_clean(make("seed-coder", {kSeedCoder})));
    add({"ufakzeka"}, no_clean(make("ufakzeka", {kUfakzeka})));
    add({"afmoe"}, no_clean(make("afmoe", {R"(\p{AFMoE_digits})", kAfmoeScripts, kDeepseek3Words})));
    add({"laguna"}, no_clean(make("laguna", {kLines, kQwen2})));
    add({"exaone-moe"}, make("exaone-moe", {kExaoneMoe}));
    add({"minicpm5"}, whole_words(make("minicpm5", {R"(\p{N}{1,3})", kMiniCpm5})));
    {
      // SentencePiece-style BPE: spaces become U+2581, merges run on raw UTF-8.
      PreTokenizerSpec s = raw_bytes(make("gemma4", {kLines}));
      s.escape_whitespaces = true;
      s.newline_runs_whole = true;
      add({"gemma4", "granite-embed-multi-311m"}, std::move(s));
      PreTokenizerSpec sarvam = raw_bytes(no_clean(make("sarvam-moe", {kLines})));
      sarvam.escape_whitespaces = true;
      add({"sarvam-moe"}, std::move(sarvam));
    }
    add({"whitespace"}, raw_bytes(make("whitespace", {R"(\S+)"})));
    return t;
  }();
  return table;
}

}  // namespace

Expected<PreTokenizerSpec> find_pre_tokenizer_spec(std::string_view pre_name) {
  const std::string_view name = pre_name.empty() ? "default" : pre_name;
  for (const Entry& entry : entries()) {
    for (std::string_view candidate : entry.names) {
      if (candidate == name) return entry.spec;
    }
  }
  return unsupported("unknown pre-tokenizer '" + std::string(pre_name) + "'");
}

}  // namespace pagoda::tokenizer
