#pragma once
// The flags that choose and tune the backend, shared by `run`, `chat` and `bench`
// (`serve` has the same settings in its config, server/serve_config.h):
//   --device auto|cpu|cuda[:N]   (env PAGODA_DEVICE)
//   -t/--threads N               CPU threads
//   --numerics fast|reference    CPU rounding
//   --gpu-memory-utilization F   share of the GPU's memory Pagoda may take
//   --batch-invariant            GPU: a request's output independent of its batch

#include <CLI/CLI.hpp>

#include "backend/backend_options.h"

namespace pagoda::cli {

void add_backend_options(CLI::App& command, backend::BackendOptions& options);

}  // namespace pagoda::cli
