// pagoda: one binary, one subcommand per task (see DESIGN.md, cli/).
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Pagoda: an LLM inference server for GGUF models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "pagoda 0.1.0");
  pagoda::cli::add_inspect_command(app);
  pagoda::cli::add_tokenize_command(app);
  pagoda::cli::add_run_command(app);
  pagoda::cli::add_chat_command(app);
  pagoda::cli::add_bench_command(app);
  pagoda::cli::add_mkmodel_command(app);
  pagoda::cli::add_quantize_command(app);
  pagoda::cli::add_bench_serve_command(app);
  pagoda::cli::add_serve_command(app);
  CLI11_PARSE(app, argc, argv);
  return pagoda::cli::exit_code();
}
