// pagoda tokenize -m FILE TEXT: the token ids of TEXT under FILE's vocabulary, one per
// line with its piece ("    1 -> '<s>'"), or as a list with --ids.

#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {
namespace {

struct TokenizeOptions {
  std::string model_path;
  std::string text;
  bool ids_only = false;
  bool no_bos = false;
  bool no_parse_special = false;
};

int run_tokenize(const TokenizeOptions& options) {
  auto reader = gguf::Reader::open(options.model_path);
  if (!reader.ok()) {
    std::fprintf(stderr, "pagoda: %s\n", reader.status().message().c_str());
    return 1;
  }
  auto tokenizer = tokenizer::Tokenizer::from_gguf(*reader);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "pagoda: %s\n", tokenizer.status().message().c_str());
    return 1;
  }
  const std::vector<tokenizer::TokenId> ids =
      tokenizer->encode(options.text, /*add_special=*/!options.no_bos, /*parse_special=*/!options.no_parse_special);
  if (options.ids_only) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) line += ", ";
      line += std::to_string(ids[i]);
    }
    std::printf("%s]\n", line.c_str());
    return 0;
  }
  for (tokenizer::TokenId id : ids) {
    const std::string piece(tokenizer->token_to_piece(id, /*special=*/true));
    std::printf("%6d -> '%s'\n", id, piece.c_str());
  }
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* command = app.add_subcommand("tokenize", "Show the token ids of a text under a model's vocabulary");
  command->add_option("-m,--model", options->model_path, "GGUF model file")->required();
  command->add_option("text", options->text, "Text to tokenize")->required();
  command->add_flag("--ids", options->ids_only, "Print only the ids, as a list: [1, 15043, 3186]");
  command->add_flag("--no-bos", options->no_bos, "Do not add the BOS/EOS tokens the vocabulary asks for");
  command->add_flag("--no-parse-special", options->no_parse_special,
                    "Treat special-token text such as <|im_end|> as plain text");
  command->callback([options] { set_exit_code(run_tokenize(*options)); });
}

}  // namespace pagoda::cli
