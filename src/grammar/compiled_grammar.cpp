#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <thread>

#include "grammar/compiled_grammar_internal.h"
#include "grammar/grammar_rewrite.h"
#include "grammar/position_signature.h"
#include "grammar/repetition_chain.h"
#include "grammar/token_classifier.h"

namespace pagoda::grammar {

CompiledGrammar::CompiledGrammar(std::unique_ptr<detail::CompiledData> data) : data_(std::move(data)) {}
CompiledGrammar::~CompiledGrammar() = default;
const Grammar& CompiledGrammar::grammar() const { return data_->grammar; }
const VocabIndex& CompiledGrammar::vocab() const { return *data_->vocab; }
const std::shared_ptr<const VocabIndex>& CompiledGrammar::vocab_ptr() const { return data_->vocab; }
const CompileStats& CompiledGrammar::stats() const { return data_->stats; }

namespace {

using namespace detail;

constexpr size_t kMaxPositions = size_t{1} << 24;

Status build_tables(CompiledData& d, RepetitionLevels& repetitions, const CompileOptions& options) {
  const Grammar& g = d.grammar;
  const std::vector<char> productive = productive_rules(g);
  d.root = g.root();
  // The alternatives that can complete (one needing an unproductive rule never does).
  std::vector<std::vector<Sequence>> rule_alts(g.n_rules());
  for (int32_t r = 0; r < g.n_rules(); ++r) {
    for (const Sequence& alt : g.rule(r).alternatives) {
      bool usable = true;
      for (const Element& e : alt) usable = usable && (!e.is_rule_ref() || productive[e.rule]);
      if (usable) rule_alts[r].push_back(alt);
    }
  }
  // A bounded repetition's levels stay rules: its top level inlined into the host would
  // be one more copy to classify by a walk of its own (repetition_chain.h).
  std::vector<RepetitionChain> chains = find_repetition_chains(rule_alts);
  std::vector<char> keep(rule_alts.size(), 0);
  for (const RepetitionChain& c : chains) {
    for (int32_t r : c.rules) keep[r] = 1;
  }
  inline_small_rules(rule_alts, d.root, keep);
  align_repetition_chains(rule_alts, chains);  // may add rules after the grammar's
  const auto n_rules = static_cast<int32_t>(rule_alts.size());
  d.alt_starts.assign(n_rules, {});
  struct RangesHash {
    size_t operator()(const std::vector<CharRange>& ranges) const {
      uint64_t h = ranges.size();
      for (const CharRange& x : ranges) h = mix64(h ^ ((uint64_t{x.first} << 32) | x.last));
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::vector<CharRange>, int32_t, RangesHash> class_index;  // for sharing equal classes
  std::vector<std::vector<uint32_t>> refs_to(n_rules);  // ref positions per referenced rule
  for (int32_t r = 0; r < n_rules; ++r) {
    for (const Sequence& alt : rule_alts[r]) {
      d.alt_starts[r].push_back(static_cast<uint32_t>(d.positions.size()));
      for (const Element& e : alt) {
        if (e.is_rule_ref()) {
          refs_to[e.rule].push_back(static_cast<uint32_t>(d.positions.size()));
          d.positions.push_back(Position{PosKind::kRef, e.rule, r});
        } else {
          const auto [it, added] = class_index.emplace(normalize_ranges(e), static_cast<int32_t>(d.classes.size()));
          if (added) d.classes.push_back(make_class(e));
          d.positions.push_back(Position{PosKind::kClass, it->second, r});
        }
      }
      d.positions.push_back(Position{PosKind::kEnd, 0, r});
      if (d.positions.size() > kMaxPositions) return invalid_argument("grammar too large to compile");
    }
  }

  // Rules reachable from the root.
  std::vector<char> reachable(n_rules, 0);
  std::vector<int32_t> todo{d.root};
  reachable[d.root] = 1;
  while (!todo.empty()) {
    const int32_t r = todo.back();
    todo.pop_back();
    for (uint32_t s : d.alt_starts[r]) {
      for (uint32_t p = s; d.positions[p].kind != PosKind::kEnd; ++p) {
        if (d.positions[p].kind == PosKind::kRef && !reachable[d.positions[p].arg]) {
          reachable[d.positions[p].arg] = 1;
          todo.push_back(d.positions[p].arg);
        }
      }
    }
  }

  // Follow sets: what may come after a rule's end, through tail references too.
  d.follow.assign(n_rules, {});
  d.may_end_sentence.assign(n_rules, 0);
  d.may_end_sentence[d.root] = 1;
  std::vector<std::vector<int32_t>> tail_hosts(n_rules);  // rules that reference r at an alternative's end
  for (int32_t r = 0; r < n_rules; ++r) {
    for (uint32_t q : refs_to[r]) {
      const int32_t host = d.positions[q].rule;
      if (!reachable[host]) continue;
      if (d.positions[q + 1].kind == PosKind::kEnd) {
        tail_hosts[r].push_back(host);
      } else {
        d.follow[r].push_back(q + 1);
      }
    }
  }
  for (int32_t r = 0; r < n_rules; ++r) {
    if (!reachable[r]) continue;
    std::vector<char> seen(n_rules, 0);
    std::vector<int32_t> stack{r};
    seen[r] = 1;
    std::vector<uint32_t> all;
    bool ends = false;
    while (!stack.empty()) {
      const int32_t x = stack.back();
      stack.pop_back();
      all.insert(all.end(), d.follow[x].begin(), d.follow[x].end());
      ends = ends || x == d.root;
      for (int32_t h : tail_hosts[x]) {
        if (!seen[h]) {
          seen[h] = 1;
          stack.push_back(h);
        }
      }
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    d.follow[r] = std::move(all);
    d.may_end_sentence[r] = ends;
  }
  repetitions = repetition_levels(d, chains, reachable);
  // Positions to classify: those of reachable rules; positions whose walks cannot differ
  // (see PositionSigner) share one set. A repetition's columns get theirs from
  // classify_column.
  d.token_set_of.assign(d.positions.size(), -1);
  PositionSigner signer(d, std::max(1, d.vocab->max_token_length()), repetitions);
  std::unordered_map<Signature, int32_t, SignatureHash> by_signature;
  for (uint32_t p = 0; p < d.positions.size(); ++p) {
    if (d.positions[p].kind != PosKind::kClass || !reachable[d.positions[p].rule]) continue;
    ++d.stats.n_positions;
    if (options.derive_repetitions && repetitions.column_of[p] >= 0) continue;
    if (options.share_alike_positions) {
      const auto [it, added] = by_signature.emplace(signer.position(p), static_cast<int32_t>(d.token_sets.size()));
      if (!added) {
        d.token_set_of[p] = it->second;
        continue;
      }
    }
    d.token_set_of[p] = static_cast<int32_t>(d.token_sets.size());
    d.token_sets.emplace_back();
    d.set_position.push_back(p);
  }
  return Status::ok_status();
}

// Classifies every set: the columns' into column_sets, and the sets found by
// signature, each at its first position. Jobs are independent: spread over threads when
// there is enough work, the columns (the longer jobs) first.
void classify_sets(CompiledData& d, const RepetitionLevels& repetitions,
                   std::vector<ColumnSets>& column_sets) {
  const size_t n_columns = column_sets.size();
  if (d.vocab->sorted_tokens().empty()) {
    for (size_t c = 0; c < n_columns; ++c) {
      column_sets[c].sets.emplace_back();
      column_sets[c].set_of_level.assign(repetitions.columns[c].positions.size(), 0);
    }
    return;
  }
  const size_t n_jobs = n_columns + d.set_position.size();
  const size_t work = n_jobs * d.vocab->sorted_tokens().size();
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned n_threads = work < (size_t{1} << 20) ? 1u : std::min<unsigned>(hw, 16);
  std::atomic<size_t> next{0};
  std::mutex stats_mutex;
  auto worker = [&]() {
    CompileStats counts;
    ClassifyScratch scratch(d);
    for (size_t i; (i = next.fetch_add(1)) < n_jobs;) {
      if (i < n_columns) {
        classify_column(d, repetitions, repetitions.columns[i], scratch, column_sets[i], counts);
      } else {
        classify_position(d, d.set_position[i - n_columns], scratch, d.token_sets[i - n_columns]);
        ++counts.n_walks;
      }
    }
    std::lock_guard<std::mutex> lock(stats_mutex);
    d.max_local_depth = std::max({d.max_local_depth, scratch.walker.stepper().max_depth(),
                                  scratch.escape_stepper.max_depth()});
    d.stats.n_walks += counts.n_walks;
    d.stats.n_rewalked += counts.n_rewalked;
  };
  if (n_threads == 1) {
    worker();
    return;
  }
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < n_threads; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
}

// The columns' sets join the others; their positions get them.
void add_column_sets(CompiledData& d, const RepetitionLevels& repetitions,
                     std::vector<ColumnSets>& column_sets) {
  for (size_t c = 0; c < column_sets.size(); ++c) {
    const RepetitionColumn& column = repetitions.columns[c];
    const auto base = static_cast<int32_t>(d.token_sets.size());
    for (PositionTokens& s : column_sets[c].sets) d.token_sets.push_back(std::move(s));
    d.set_position.resize(d.token_sets.size());
    for (size_t level = column.positions.size(); level-- > 0;) {
      const int32_t set = base + column_sets[c].set_of_level[level];
      d.token_set_of[column.positions[level]] = set;
      d.set_position[set] = column.positions[level];
    }
  }
}

// CompileStats' sums over the sets.
void count_sets(CompiledData& d) {
  CompileStats& st = d.stats;
  st.n_classified = static_cast<int32_t>(d.token_sets.size());
  const int64_t n_matchable = static_cast<int64_t>(d.vocab->sorted_tokens().size());
  for (const PositionTokens& s : d.token_sets) {
    int64_t acc = static_cast<int64_t>(s.accepted.size());
    if (!s.accepted_bits.empty()) {
      acc = 0;
      for (uint32_t w : s.accepted_bits) acc += __builtin_popcount(w);
    }
    st.n_accepted += acc;
    st.n_uncertain += static_cast<int64_t>(s.uncertain.size());
    st.n_rejected += n_matchable - acc - static_cast<int64_t>(s.uncertain.size());
    st.max_uncertain = std::max<int32_t>(st.max_uncertain, static_cast<int32_t>(s.uncertain.size()));
  }
  st.max_stack_growth = static_cast<int32_t>(d.max_local_depth);
}

}  // namespace

Expected<std::shared_ptr<const CompiledGrammar>> compile_grammar(const Grammar& grammar,
                                                                 std::shared_ptr<const VocabIndex> vocab) {
  return detail::compile_grammar(grammar, std::move(vocab), CompileOptions{});
}

Expected<std::shared_ptr<const CompiledGrammar>> detail::compile_grammar(const Grammar& grammar,
                                                                         std::shared_ptr<const VocabIndex> vocab,
                                                                         const CompileOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  PAGODA_TRY(grammar.validate());
  if (!vocab) vocab = VocabIndex::create({}, {});
  auto d = std::make_unique<CompiledData>();
  d->grammar = grammar;
  d->vocab = std::move(vocab);
  RepetitionLevels repetitions;
  PAGODA_TRY(build_tables(*d, repetitions, options));
  std::vector<ColumnSets> column_sets(options.derive_repetitions ? repetitions.columns.size() : 0);
  classify_sets(*d, repetitions, column_sets);
  add_column_sets(*d, repetitions, column_sets);
  count_sets(*d);
  d->stats.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::shared_ptr<const CompiledGrammar>(std::make_shared<CompiledGrammar>(std::move(d)));
}

}  // namespace pagoda::grammar
