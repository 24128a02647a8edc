// pagoda inspect FILE: what a GGUF file holds (header, metadata, tensors), like gguf-dump.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "gguf/dump.h"
#include "gguf/reader.h"

namespace pagoda::cli {
namespace {

struct InspectArgs {
  std::string path;
  gguf::DumpOptions dump;
};

void run_inspect(const InspectArgs& args) {
  const Expected<gguf::Reader> reader = gguf::Reader::open(args.path);
  if (!reader.ok()) {
    std::fprintf(stderr, "pagoda: %s\n", reader.status().message().c_str());
    set_exit_code(1);
    return;
  }
  const std::string text = gguf::dump(*reader, args.dump);
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "pagoda: cannot write to standard output\n");
    set_exit_code(1);
  }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* command =
      app.add_subcommand("inspect", "Show a GGUF file's header, metadata and tensors");
  command->add_option("file", args->path, "GGUF file")->required();
  command->add_option("--array-items", args->dump.max_array_items, "Array items shown per key")
      ->capture_default_str();
  command->add_option("--string-bytes", args->dump.max_string_bytes, "String bytes shown per value")
      ->capture_default_str();
  command->callback([args] { run_inspect(*args); });
}

}  // namespace pagoda::cli
