#pragma once
// Each subcommand registers itself on the app; its callback runs the command and
// records the process exit code (CLI11 callbacks cannot return one).

#include <CLI/CLI.hpp>

namespace pagoda::cli {

void add_inspect_command(CLI::App& app);   // pagoda inspect FILE
void add_tokenize_command(CLI::App& app);  // pagoda tokenize -m FILE TEXT

void set_exit_code(int code);
int exit_code();

}  // namespace pagoda::cli
