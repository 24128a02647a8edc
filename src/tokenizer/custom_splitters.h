#pragma once
// Hand-written equivalents of the most used pre-tokenizer regexes. Each one scans the
// code points of one piece, cpts[begin, end), and appends the lengths (in code points)
// of the pieces it cuts it into. Their decisions, quirks included, are the reference
// behaviour for these patterns.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace pagoda::tokenizer {

using SplitterFn = void (*)(const std::vector<uint32_t>& cpts, size_t begin, size_t end,
                            std::vector<size_t>& lengths);

// The splitter that stands for `regex`, or nullptr if it is an ordinary regex.
SplitterFn find_custom_splitter(std::string_view regex);

}  // namespace pagoda::tokenizer
