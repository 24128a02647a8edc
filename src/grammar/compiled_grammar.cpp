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

Status build_tables(CompiledData& d) {
  const Grammar& g = d.grammar;
  const int32_t n_rules = g.n_rules();
  const std::vector<char> productive = productive_rules(g);
  d.root = g.root();
  d.alt_starts.assign(n_rules, {});
  // The alternatives that can complete (one needing an unproductive rule never does).
  std::vector<std::vector<Sequence>> rule_alts(n_rules);
  for (int32_t r = 0; r < n_rules; ++r) {
    for (const Sequence& alt : g.rule(r).alternatives) {
      bool usable = true;
      for (const Element& e : alt) usable = usable && (!e.is_rule_ref() || productive[e.rule]);
      if (usable) rule_alts[r].push_back(alt);
    }
  }
  inline_small_rules(rule_alts, d.root);
  std::vector<std::pair<std::vector<CharRange>, int32_t>> class_index;  // for sharing equal classes
  std::vector<std::vector<uint32_t>> refs_to(n_rules);  // ref positions per referenced rule
  for (int32_t r = 0; r < n_rules; ++r) {
    for (const Sequence& alt : rule_alts[r]) {
      d.alt_starts[r].push_back(static_cast<uint32_t>(d.positions.size()));
      for (const Element& e : alt) {
        if (e.is_rule_ref()) {
          refs_to[e.rule].push_back(static_cast<uint32_t>(d.positions.size()));
          d.positions.push_back(Position{PosKind::kRef, e.rule, r});
        } else {
          std::vector<CharRange> norm = normalize_ranges(e);
          int32_t id = -1;
          for (const auto& [ranges, cid] : class_index) {
            if (ranges == norm) {
              id = cid;
              break;
            }
          }
          if (id < 0) {
            id = static_cast<int32_t>(d.classes.size());
            d.classes.push_back(make_class(e));
            if (class_index.size() < 4096) class_index.emplace_back(std::move(norm), id);
          }
          d.positions.push_back(Position{PosKind::kClass, id, r});
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
  // Positions to classify: those of reachable rules; positions whose walks cannot differ
  // (see PositionSigner) share one set.
  d.token_set_of.assign(d.positions.size(), -1);
  PositionSigner signer(d, std::max(1, d.vocab->max_token_length()));
  std::unordered_map<Signature, int32_t, SignatureHash> by_signature;
  for (uint32_t p = 0; p < d.positions.size(); ++p) {
    if (d.positions[p].kind != PosKind::kClass || !reachable[d.positions[p].rule]) continue;
    const auto [it, added] = by_signature.emplace(signer.position(p), static_cast<int32_t>(d.token_sets.size()));
    if (added) {
      d.token_sets.emplace_back();
      d.set_position.push_back(p);
    }
    d.token_set_of[p] = it->second;
    ++d.stats.n_positions;
  }
  return Status::ok_status();
}

// Sorts every matchable token into accepted / rejected / uncertain at position p.
void classify_position(const CompiledData& d, uint32_t p, TrieWalker& walker, std::vector<Node>& nodes,
                       PositionTokens& out) {
  const VocabIndex& vocab = *d.vocab;
  StepResult start;
  start.tops.push_back(Top{p, 0, kMarker, 0});
  nodes.clear();
  std::vector<int32_t> accepted;
  std::vector<int32_t> uncertain;
  auto on_token = [&](int32_t idx, const StepResult* end) {
    if (end->overflow) {
      uncertain.push_back(idx);
      return;
    }
    bool clean = end->clean_end;
    bool escaped = end->escaped_end;
    for (const Top& t : end->tops) {
      if (t.flags & kEscaped) {
        escaped = true;
      } else {
        clean = true;
        break;
      }
    }
    if (clean) {
      accepted.push_back(vocab.sorted_tokens()[idx]);
    } else if (escaped) {
      uncertain.push_back(idx);
    }
  };
  auto on_dead = [&](int32_t begin, int32_t end, const StepResult* at) {
    if (!at->overflow) return;  // rejected
    for (int32_t i = begin; i < end; ++i) uncertain.push_back(i);
  };
  walker.walk_range(start, 0, static_cast<int32_t>(vocab.sorted_tokens().size()), on_token, on_dead);
  std::sort(accepted.begin(), accepted.end());
  const size_t words = bitmask_words(vocab.n_vocab());
  if (accepted.size() > words) {
    out.accepted_bits.assign(words, 0);
    for (int32_t id : accepted) out.accepted_bits[id / 32] |= 1u << (id % 32);
  } else {
    out.accepted = std::move(accepted);
  }
  out.uncertain = std::move(uncertain);
}

}  // namespace

Expected<std::shared_ptr<const CompiledGrammar>> compile_grammar(const Grammar& grammar,
                                                                 std::shared_ptr<const VocabIndex> vocab) {
  const auto t0 = std::chrono::steady_clock::now();
  PAGODA_TRY(grammar.validate());
  if (!vocab) vocab = VocabIndex::create({}, {});
  auto d = std::make_unique<CompiledData>();
  d->grammar = grammar;
  d->vocab = std::move(vocab);
  PAGODA_TRY(build_tables(*d));

  const std::vector<uint32_t>& todo = d->set_position;
  if (!d->vocab->sorted_tokens().empty()) {
    // Positions are independent: spread them over threads when there is enough work.
    const size_t work = todo.size() * d->vocab->sorted_tokens().size();
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const unsigned n_threads = work < (size_t{1} << 20) ? 1u : std::min<unsigned>(hw, 16);
    std::atomic<size_t> next{0};
    std::mutex depth_mutex;
    auto worker = [&]() {
      std::vector<Node> nodes;
      TrieWalker walker(*d, nodes, /*lookahead=*/true);
      for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
        classify_position(*d, todo[i], walker, nodes, d->token_sets[i]);
      }
      std::lock_guard<std::mutex> lock(depth_mutex);
      d->max_local_depth = std::max(d->max_local_depth, walker.stepper().max_depth());
    };
    if (n_threads == 1) {
      worker();
    } else {
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < n_threads; ++t) threads.emplace_back(worker);
      for (std::thread& t : threads) t.join();
    }
  }

  CompileStats& st = d->stats;
  st.n_classified = static_cast<int32_t>(todo.size());
  const int64_t n_matchable = static_cast<int64_t>(d->vocab->sorted_tokens().size());
  for (const PositionTokens& s : d->token_sets) {
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
  st.max_stack_growth = static_cast<int32_t>(d->max_local_depth);
  st.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::shared_ptr<const CompiledGrammar>(std::make_shared<CompiledGrammar>(std::move(d)));
}

}  // namespace pagoda::grammar
