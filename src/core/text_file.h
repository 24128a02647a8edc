#pragma once
// A whole file read into a string, with errors that name the file.

#include <string>

#include "core/status.h"

namespace pagoda {

// The bytes of the file at `path`. Errors: "PATH: cannot open" / "PATH: cannot read".
Expected<std::string> read_text_file(const std::string& path);

}  // namespace pagoda
