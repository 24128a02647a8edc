#pragma once
// Each subcommand registers itself on the app; its callback runs the command and
// records the process exit code (CLI11 callbacks cannot return one).

#include <CLI/CLI.hpp>

namespace pagoda::cli {

void add_inspect_command(CLI::App& app);   // pagoda inspect FILE
void add_tokenize_command(CLI::App& app);  // pagoda tokenize -m FILE TEXT
void add_run_command(CLI::App& app);       // pagoda run -m FILE -p TEXT
void add_chat_command(CLI::App& app);      // pagoda chat -m FILE
void add_bench_command(CLI::App& app);     // pagoda bench -m FILE [-p 512] [-n 128]
void add_mkmodel_command(CLI::App& app);   // pagoda mkmodel -o FILE --arch llama ...
void add_quantize_command(CLI::App& app);  // pagoda quantize IN OUT TYPE
void add_bench_serve_command(CLI::App& app);  // pagoda bench-serve --url URL [--concurrency N]
void add_serve_command(CLI::App& app);     // pagoda serve [-m FILE] [--port 8080] ...

void set_exit_code(int code);
int exit_code();

}  // namespace pagoda::cli
