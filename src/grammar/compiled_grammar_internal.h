#pragma once
// The compiled grammar's data, shared by compiled_grammar.cpp and matcher.cpp.

#include <memory>

#include "grammar/compiled_grammar.h"

namespace pagoda::grammar::detail {

struct CompiledData {
  Grammar grammar;
  std::shared_ptr<const VocabIndex> vocab;
  CompileStats stats;
};

}  // namespace pagoda::grammar::detail
