// pagoda run -m FILE [-p TEXT | -f FILE] ...: generates from a prompt, streaming the
// text to stdout as it comes; load time and speeds go to stderr.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/generation_args.h"
#include "cli/generation_session.h"
#include "core/text_file.h"

namespace pagoda::cli {
namespace {

struct RunArgs {
  GenerationArgs generation;
  std::string prompt;
  std::string prompt_file;
};

Expected<std::string> read_prompt(const RunArgs& args) {
  if (args.prompt_file.empty()) return args.prompt;
  return read_text_file(args.prompt_file);
}

Status run(const RunArgs& args) {
  PAGODA_ASSIGN_OR_RETURN(const std::string prompt, read_prompt(args));
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GenerationSession> session,
                          open_generation_session(args.generation));
  const tokenizer::Tokenizer& tokenizer = *session->loaded.tokenizer;
  std::vector<int32_t> tokens =
      tokenizer.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  if (tokens.empty())
    return invalid_argument("the prompt is empty and the model adds no BOS token");

  bool write_failed = false;
  PAGODA_ASSIGN_OR_RETURN(
      const engine::GenerationResult result,
      session->session->generate(
          generation_request(args.generation, *session, std::move(tokens)),
          [&write_failed](std::string_view delta) {
        write_failed |= std::fwrite(delta.data(), 1, delta.size(), stdout) != delta.size() ||
                        std::fflush(stdout) != 0;
      }));
  if (write_failed) return io_error("cannot write to standard output");
  // On a terminal the statistics start on a line of their own.
  if (isatty(STDOUT_FILENO) && !result.text.empty() && result.text.back() != '\n')
    std::fputc('\n', stdout);
  std::fflush(stdout);
  print_timings(session->loaded.load_seconds, result.timings);
  print_speculation(session->session->stats());
  return Status::ok_status();
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* command = app.add_subcommand("run", "Generate text from a prompt");
  add_generation_options(*command, args->generation);
  CLI::Option* prompt = command->add_option("-p,--prompt", args->prompt, "Prompt text");
  command->add_option("-f,--file", args->prompt_file, "Read the prompt from a file")
      ->excludes(prompt);
  command->callback([args] {
    const Status status = run(*args);
    if (!status.ok()) report_error(status.message());
  });
}

}  // namespace pagoda::cli
