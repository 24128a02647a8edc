#include "gguf/parser.h"

#include <string>

#include "gguf/value.h"

namespace pagoda::gguf {
namespace {

constexpr std::string_view kMagicText = "GGUF";

}  // namespace

Status Parser::parse(Reader& reader) {
  Parser parser(reader);
  PAGODA_TRY(parser.parse_header());
  PAGODA_TRY(parser.parse_metadata());
  PAGODA_TRY(parser.resolve_alignment());
  PAGODA_TRY(parser.parse_tensor_infos());
  return parser.place_tensor_data();
}

Status Parser::error(std::string_view problem) const {
  return corrupt_file(reader_.name_ + ": " + std::string(problem));
}

Status Parser::unsupported_error(std::string_view problem) const {
  return unsupported(reader_.name_ + ": " + std::string(problem));
}

Status Parser::cut_short(std::string_view what) const {
  const uint64_t offset = cursor_.failed_offset();
  return error("cut short: " + std::string(what) + " at offset " + std::to_string(offset) +
               " needs " + std::to_string(cursor_.failed_needed()) + " bytes, only " +
               std::to_string(cursor_.size() - offset) + " remain");
}

Status Parser::parse_header() {
  std::string_view magic;
  if (!cursor_.read_bytes(kMagicText.size(), magic)) return cut_short("the magic");
  if (magic != kMagicText) {
    return error("not a GGUF file (magic " + quoted(magic) + ", expected 'GGUF')");
  }
  uint32_t version = 0;
  if (!cursor_.read(version)) return cut_short("the version");
  if (version != 2 && version != 3) {
    // A big-endian file's small version number reads as a multiple of 2^16 here.
    const bool byte_swapped = version != 0 && (version & 0xffff) == 0;
    return unsupported_error("unsupported version " + std::to_string(version) +
                             (byte_swapped ? " (a big-endian file?)" : ""));
  }
  reader_.version_ = version;
  if (!cursor_.read(n_tensors_)) return cut_short("the tensor count");
  if (!cursor_.read(n_metadata_)) return cut_short("the metadata count");
  return Status::ok_status();
}

}  // namespace pagoda::gguf
