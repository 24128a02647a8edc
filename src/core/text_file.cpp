#include "core/text_file.h"

#include <fstream>
#include <sstream>

namespace pagoda {

Expected<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return io_error(path + ": cannot read");
  return text.str();
}

}  // namespace pagoda
