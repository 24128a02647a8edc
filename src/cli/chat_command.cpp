// pagoda chat -m FILE: a conversation in the terminal. The whole conversation is kept
// and re-sent each turn; the engine's prefix cache holds the KV cache of what it has
// already seen, so a turn costs little more than its new tokens. Formats: ChatML when the vocabulary has
// <|im_start|>, otherwise a plain "User: ... / Assistant:" transcript (the model's own
// chat template comes with the server).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/generation_args.h"
#include "cli/generation_session.h"
#include "tokenizer/token_types.h"

namespace pagoda::cli {
namespace {

struct ChatArgs {
  GenerationArgs generation;
  std::string system;
};

// How turns are written into the conversation text.
struct ChatFormat {
  bool chatml = false;

  std::string system_turn(const std::string& text) const {
    if (text.empty()) return "";
    return chatml ? "<|im_start|>system\n" + text + "<|im_end|>\n" : text + "\n\n";
  }
  // A user message, followed by the opening of the assistant's reply.
  std::string user_turn(const std::string& text) const {
    return chatml ? "<|im_start|>user\n" + text + "<|im_end|>\n<|im_start|>assistant\n"
                  : "User: " + text + "\nAssistant:";
  }
  std::string end_of_reply() const { return chatml ? "<|im_end|>\n" : "\n"; }
  // Where a plain-transcript model starts writing the user's part itself.
  std::vector<std::string> stop_strings() const {
    return chatml ? std::vector<std::string>{} : std::vector<std::string>{"\nUser:"};
  }
};

// Runs one turn: prints the reply as it comes and appends it to the conversation.
Status reply(GenerationSession& session, const ChatArgs& args, const ChatFormat& format,
             std::string& conversation) {
  engine::EngineRequest request = generation_request(
      args.generation, session,
      session.loaded.tokenizer->encode(conversation, /*add_special=*/true, /*parse_special=*/true));
  for (const std::string& stop : format.stop_strings()) request.stop.stop_strings.push_back(stop);
  PAGODA_ASSIGN_OR_RETURN(const engine::GenerationResult result,
                          session.session->generate(std::move(request), [](std::string_view delta) {
                            std::fwrite(delta.data(), 1, delta.size(), stdout);
                            std::fflush(stdout);
                          }));
  std::fputc('\n', stdout);
  conversation += result.text + format.end_of_reply();
  return Status::ok_status();
}

Status chat(const ChatArgs& args) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GenerationSession> session,
                          open_generation_session(args.generation));
  ChatFormat format;
  format.chatml = session->loaded.tokenizer->find_token("<|im_start|>") != tokenizer::kNoToken;
  const std::string start = format.system_turn(args.system);
  std::string conversation = start;
  std::fprintf(stderr, "pagoda chat (%s format): /reset starts over, /exit or end of input quits\n",
               format.chatml ? "ChatML" : "plain");
  std::string line;
  while (true) {
    std::fputs("> ", stdout);
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line == "/reset") {
      conversation = start;
      continue;
    }
    if (line.empty()) continue;
    const size_t before = conversation.size();
    conversation += format.user_turn(line);
    const Status status = reply(*session, args, format, conversation);
    if (status.code() == ErrorCode::kInvalidArgument) {  // e.g. the context is full
      std::fprintf(stderr, "pagoda: %s (/reset starts over)\n", status.message().c_str());
      conversation.resize(before);
      continue;
    }
    PAGODA_TRY(status);
  }
  return Status::ok_status();
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto args = std::make_shared<ChatArgs>();
  CLI::App* command = app.add_subcommand("chat", "Chat with a model in the terminal");
  add_generation_options(*command, args->generation);
  command->add_option("--system", args->system, "System message");
  command->callback([args] {
    const Status status = chat(*args);
    if (!status.ok()) report_error(status.message());
  });
}

}  // namespace pagoda::cli
