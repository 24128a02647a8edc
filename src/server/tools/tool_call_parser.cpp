#include "server/tools/tool_call_parser.h"

#include <algorithm>
#include <random>
#include <utility>

namespace pagoda::server::tools {

std::string random_tool_call_id() {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 generator{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[pick(generator)];
  return id;
}

ToolCallStreamParser::ToolCallStreamParser(ToolFamily family, bool incremental,
                                           ToolCallIdSource make_id)
    : family_(family), incremental_(incremental), make_id_(std::move(make_id)) {}

void ToolCallStreamParser::feed(std::string_view text, std::vector<StreamDelta>& out) {
  pending_.append(text);
  process(/*final=*/false, out);
}

void ToolCallStreamParser::finish(std::vector<StreamDelta>& out) {
  process(/*final=*/true, out);
}

void ToolCallStreamParser::process(bool final, std::vector<StreamDelta>& out) {
  while (in_block_ ? process_block(final, out) : process_text(final, out)) {
  }
}

bool ToolCallStreamParser::process_text(bool final, std::vector<StreamDelta>& out) {
  size_t opening = std::string::npos;
  size_t opening_size = 0;
  size_t held = 0;  // the longest end of pending_ that may start an opening
  for (const std::string_view candidate : call_openings(family_)) {
    const size_t at = pending_.find(candidate);
    if (at < opening) {
      opening = at;
      opening_size = candidate.size();
    }
    for (size_t k = std::min(candidate.size() - 1, pending_.size()); k > held; --k) {
      if (std::string_view(pending_).ends_with(candidate.substr(0, k))) {
        held = k;
        break;
      }
    }
  }
  const bool found = opening != std::string::npos;
  const size_t send = found ? opening : pending_.size() - (final ? 0 : held);
  const std::string_view text = std::string_view(pending_).substr(0, send);
  const bool separators_only = std::all_of(text.begin(), text.end(), [this](char c) {
    return is_call_separator(family_, c);
  });
  if (after_call_ && separators_only && !found && !final) {
    return false;  // between calls, or trailing: known once more text comes
  }
  if (!(after_call_ && separators_only) && !text.empty()) {
    emit_content(std::string(text), out);
    after_call_ = false;
  }
  pending_.erase(0, send);
  if (!found) return false;
  in_block_ = true;
  opening_size_ = opening_size;
  block_calls_.clear();
  block_first_index_ = calls_made_;
  return true;
}

bool ToolCallStreamParser::process_block(bool final, std::vector<StreamDelta>& out) {
  const BlockScan block = scan_call_block(family_, pending_, final);
  switch (block.state) {
    case BlockState::kPartial:
      if (incremental_) emit_calls(block, out);
      return false;
    case BlockState::kComplete:
      emit_calls(block, out);
      if (block.content) emit_content(*block.content, out);
      pending_.erase(0, block.length);
      in_block_ = false;
      after_call_ = !block.calls.empty();
      return true;
    case BlockState::kInvalid:
      break;
  }
  in_block_ = false;
  if (block_calls_.empty()) {
    // Nothing of it was sent: its opening is text, and the rest is read again.
    emit_content(pending_.substr(0, opening_size_), out);
    pending_.erase(0, opening_size_);
    after_call_ = false;
    return true;
  }
  // Calls were sent (a stream whose call broke off or went wrong): they stay, and
  // their text was sent as their arguments.
  pending_.clear();
  after_call_ = true;
  return true;
}

void ToolCallStreamParser::emit_calls(const BlockScan& block, std::vector<StreamDelta>& out) {
  for (size_t k = 0; k < block.calls.size(); ++k) {
    const PartialCall& call = block.calls[k];
    if (!call.name_done) break;
    const int index = block_first_index_ + static_cast<int>(k);
    if (k >= block_calls_.size()) {
      block_calls_.emplace_back();
      ToolCallDelta first;
      first.index = index;
      first.id = make_id_();
      first.name = call.name;
      if (out.empty()) out.emplace_back();
      out.back().calls.push_back(std::move(first));
      calls_made_ = std::max(calls_made_, index + 1);
    }
    EmittedCall& sent = block_calls_[k];
    const std::string_view arguments = call.arguments;
    // Sent text cannot be taken back: only what extends it is sent.
    if (arguments.size() <= sent.arguments.size() || !arguments.starts_with(sent.arguments)) {
      continue;
    }
    ToolCallDelta piece;
    piece.index = index;
    piece.arguments = std::string(arguments.substr(sent.arguments.size()));
    sent.arguments = arguments;
    if (out.empty()) out.emplace_back();
    out.back().calls.push_back(std::move(piece));
  }
}

void ToolCallStreamParser::emit_content(std::string text, std::vector<StreamDelta>& out) {
  if (text.empty()) return;
  if (out.empty() || !out.back().calls.empty()) out.emplace_back();
  out.back().content += text;
}

ParsedOutput parse_tool_calls(ToolFamily family, std::string_view text,
                              const ToolCallIdSource& make_id) {
  ToolCallStreamParser parser(family, /*incremental=*/false, make_id);
  std::vector<StreamDelta> deltas;
  parser.feed(text, deltas);
  parser.finish(deltas);
  ParsedOutput parsed;
  for (StreamDelta& delta : deltas) {
    parsed.content += delta.content;
    for (ToolCallDelta& piece : delta.calls) {
      if (piece.first()) {
        parsed.calls.push_back({std::move(piece.id), std::move(piece.name), {}});
      }
      parsed.calls.back().arguments += piece.arguments;
    }
  }
  return parsed;
}

}  // namespace pagoda::server::tools
