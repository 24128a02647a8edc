#pragma once
// Questions asked of the server before a run, each a blocking call: which model it
// serves (GET /v1/models) and how many tokens texts take (POST /tokenize, which
// Pagoda, vLLM and llama.cpp's server have, with different field names: the request
// sends Pagoda's and vLLM's, then llama-server's where those are refused).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "loadgen/load_runner.h"

namespace pagoda::loadgen {

// The id of the first model GET /v1/models lists.
Expected<std::string> first_model_id(const ServerTarget& server, std::chrono::milliseconds timeout);

// The token count of each text, without special tokens, measured through POST
// /tokenize with up to `parallel` requests at once. kNotFound when the server has no
// /tokenize (404, 405 or 501), other errors as they come.
Expected<std::vector<int32_t>> tokenize_counts(const ServerTarget& server,
                                               const std::vector<std::string>& texts,
                                               std::chrono::milliseconds timeout,
                                               size_t parallel = 16);

}  // namespace pagoda::loadgen
