// The interpreter's bookkeeping (scopes, limits, calls) and its statements.
#include "jinja/interpreter.h"

#include "jinja/builtins.h"
#include "jinja/objects.h"

namespace pagoda::jinja {

const Value* Scope::find(std::string_view name) const {
  for (const Scope* scope = this; scope != nullptr; scope = scope->parent.get()) {
    for (const auto& [key, value] : scope->vars) {
      if (key == name) return &value;
    }
  }
  return nullptr;
}

void Scope::set(std::string_view name, Value value) {
  for (auto& [key, existing] : vars) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  vars.emplace_back(std::string(name), std::move(value));
}

Interpreter::Interpreter(const RenderLimits& limits, std::optional<std::time_t> now)
    : limits_(limits), now_(now) {}

Interpreter::~Interpreter() {
  release_tracked();
}

void Interpreter::release_tracked() {
  // Keep every object alive while their references are dropped, so that freeing a long
  // chain of them (ns.next = namespace(next=ns.next), in a loop) happens one object at
  // a time when `alive` goes, never as one deep recursion.
  std::vector<std::shared_ptr<Object>> alive;
  alive.reserve(tracked_.size());
  for (const auto& weak : tracked_) {
    if (auto object = weak.lock()) alive.push_back(std::move(object));
  }
  tracked_.clear();
  for (const auto& object : alive) object->release_references();
}

Expected<std::string> Interpreter::render(const Body& body, const ScopePtr& globals) {
  std::string output;
  out_ = &output;
  auto scope = std::make_shared<Scope>(globals);
  Status status = exec_body(body, scope);
  out_ = nullptr;
  // Before the variables go: they may hold the head of a long chain of objects.
  release_tracked();
  scope.reset();
  if (status.ok()) return output;
  if (raised_) return status;
  return Status(status.code(),
                "template error, line " + std::to_string(line_) + ": " + status.message());
}

Status Interpreter::charge(int64_t steps) {
  steps_ += steps;
  if (steps_ <= limits_.max_steps) return {};
  return resource_exhausted("template exceeded its work limit (" +
                            std::to_string(limits_.max_steps) + " steps)");
}

Status Interpreter::check_size(size_t size) const {
  if (size <= limits_.max_output_bytes) return {};
  return resource_exhausted("template built a value over the size limit (" +
                            std::to_string(limits_.max_output_bytes) + " bytes)");
}

Expected<Value> Interpreter::call(const Value& callee, CallArgs args) {
  if (callee.is_undefined()) return invalid_argument(callee.undefined_hint());
  if (!callee.is_object() || !callee.as_object()->callable()) {
    return invalid_argument(quote(type_name(callee)) + " object is not callable");
  }
  PAGODA_TRY(charge());
  return callee.as_object()->call(*this, std::move(args));
}

Expected<std::string> Interpreter::capture(const Body& body, const ScopePtr& scope) {
  std::string output;
  std::string* saved = out_;
  out_ = &output;
  Status status = exec_body(body, scope);
  out_ = saved;
  if (!status.ok()) return status;
  return output;
}

void Interpreter::track(const std::shared_ptr<Object>& object) {
  tracked_.push_back(object);
}

Status Interpreter::raise(std::string message) {
  raised_ = true;
  return invalid_argument(std::move(message));
}

std::time_t Interpreter::now() const {
  return now_ ? *now_ : std::time(nullptr);
}

Status Interpreter::enter_call() {
  if (call_depth_ >= limits_.max_call_depth) {
    return resource_exhausted("calls nest deeper than " + std::to_string(limits_.max_call_depth) +
                              " levels");
  }
  ++call_depth_;
  return {};
}

Expected<Value> Interpreter::apply_filter(std::string_view name, const Value& input,
                                          CallArgs args) {
  const FilterFn fn = find_filter(name);
  if (fn == nullptr) return invalid_argument("no filter named '" + std::string(name) + "'");
  return fn(*this, input, std::move(args));
}

Expected<bool> Interpreter::apply_test(std::string_view name, const Value& input, CallArgs args) {
  const TestFn fn = find_test(name);
  if (fn == nullptr) return invalid_argument("no test named '" + std::string(name) + "'");
  return fn(*this, input, std::move(args));
}

Status Interpreter::emit(std::string_view text) {
  PAGODA_TRY(check_size(out_->size() + text.size()));
  out_->append(text);
  return {};
}

// ---- statements ----

Status Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
  for (const StmtPtr& stmt : body) {
    PAGODA_TRY(exec(*stmt, scope));
    if (flow_ != Flow::kNormal) break;
  }
  return {};
}

Status Interpreter::exec(const Stmt& stmt, const ScopePtr& scope) {
  PAGODA_TRY(charge());
  line_ = stmt.line;
  switch (stmt.kind) {
    case StmtKind::kText:
      return emit(static_cast<const TextStmt&>(stmt).text);
    case StmtKind::kPrint: {
      PAGODA_ASSIGN_OR_RETURN(Value value, eval(*static_cast<const PrintStmt&>(stmt).expr, scope));
      return emit(to_str(value));
    }
    case StmtKind::kIf:
      return exec_if(static_cast<const IfStmt&>(stmt), scope);
    case StmtKind::kFor:
      return exec_for(static_cast<const ForStmt&>(stmt), scope);
    case StmtKind::kSet: {
      const auto& set = static_cast<const SetStmt&>(stmt);
      PAGODA_ASSIGN_OR_RETURN(Value value, eval(*set.value, scope));
      return assign(set.target, value, scope);
    }
    case StmtKind::kSetBlock:
      return exec_set_block(static_cast<const SetBlockStmt&>(stmt), scope);
    case StmtKind::kMacro:
      return exec_macro(static_cast<const MacroStmt&>(stmt), scope);
    case StmtKind::kCallBlock:
      return exec_call_block(static_cast<const CallBlockStmt&>(stmt), scope);
    case StmtKind::kFilterBlock:
      return exec_filter_block(static_cast<const FilterBlockStmt&>(stmt), scope);
    case StmtKind::kWith:
      return exec_with(static_cast<const WithStmt&>(stmt), scope);
    case StmtKind::kScope:
      return exec_body(static_cast<const ScopeStmt&>(stmt).body, scope);
    case StmtKind::kBreak:
      flow_ = Flow::kBreak;
      return {};
    case StmtKind::kContinue:
      flow_ = Flow::kContinue;
      return {};
  }
  return internal_error("unknown statement");
}

Status Interpreter::exec_if(const IfStmt& stmt, const ScopePtr& scope) {
  for (const auto& [condition, body] : stmt.branches) {
    PAGODA_ASSIGN_OR_RETURN(Value value, eval(*condition, scope));
    if (truthy(value)) return exec_body(body, scope);
  }
  return exec_body(stmt.else_body, scope);
}

Status Interpreter::exec_for(const ForStmt& stmt, const ScopePtr& scope) {
  PAGODA_ASSIGN_OR_RETURN(Value iterable, eval(*stmt.iterable, scope));
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(iterable));
  return loop_iterations(stmt, items, scope, 1);
}

Expected<std::string> Interpreter::run_loop(const ForStmt& loop, const Value& iterable,
                                            const ScopePtr& scope, int depth) {
  PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(iterable));
  std::string output;
  std::string* saved = out_;
  out_ = &output;
  Status status = loop_iterations(loop, items, scope, depth);
  out_ = saved;
  if (!status.ok()) return status;
  return output;
}

Status Interpreter::loop_iterations(const ForStmt& stmt, const std::vector<Value>& all_items,
                                    const ScopePtr& scope, int depth) {
  // `for x in items if cond` filters first: loop.length and loop.index count what is kept.
  std::vector<Value> items;
  for (const Value& item : all_items) {
    PAGODA_TRY(charge());
    if (stmt.filter) {
      auto filter_scope = std::make_shared<Scope>(scope);
      PAGODA_TRY(assign(stmt.target, item, filter_scope));
      PAGODA_ASSIGN_OR_RETURN(Value keep, eval(*stmt.filter, filter_scope));
      if (!truthy(keep)) continue;
    }
    items.push_back(item);
  }
  if (items.empty()) return exec_body(stmt.else_body, scope);
  auto loop = std::make_shared<LoopContext>(items, depth, stmt.recursive ? &stmt : nullptr, scope);
  track(loop);
  const Value loop_value(std::shared_ptr<Object>{loop});
  for (size_t i = 0; i < items.size(); ++i) {
    PAGODA_TRY(charge());
    loop->set_index(i);
    auto iteration = std::make_shared<Scope>(scope);  // each iteration starts afresh
    iteration->set("loop", loop_value);
    PAGODA_TRY(assign(stmt.target, items[i], iteration));
    PAGODA_TRY(exec_body(stmt.body, iteration));
    const Flow flow = flow_;
    flow_ = Flow::kNormal;
    if (flow == Flow::kBreak) break;
  }
  return {};
}

Status Interpreter::assign(const AssignTarget& target, const Value& value, const ScopePtr& scope) {
  switch (target.kind) {
    case AssignTarget::Kind::kName:
      scope->set(target.name, value);
      return {};
    case AssignTarget::Kind::kNamespaceAttribute: {
      const Value* object = scope->find(target.name);
      if (object == nullptr || !object->is_object()) {
        return invalid_argument("cannot assign attribute on non-namespace object '" + target.name +
                                "'");
      }
      return object->as_object()->set_attribute(target.attribute, value);
    }
    case AssignTarget::Kind::kTuple: {
      if (!value.is_list() && !value.is_string() && !value.is_dict()) {
        return invalid_argument("cannot unpack non-iterable " + std::string(type_name(value)) +
                                " object");
      }
      PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
      const size_t n = target.items.size();
      if (items.size() > n)
        return invalid_argument("too many values to unpack (expected " + std::to_string(n) + ")");
      if (items.size() < n) {
        return invalid_argument("not enough values to unpack (expected " + std::to_string(n) +
                                ", got " + std::to_string(items.size()) + ")");
      }
      for (size_t i = 0; i < n; ++i) PAGODA_TRY(assign(target.items[i], items[i], scope));
      return {};
    }
  }
  return internal_error("unknown assignment target");
}

}  // namespace pagoda::jinja
