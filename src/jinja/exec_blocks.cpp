// Statements that define or wrap blocks: block set, macro, call, filter, with.
#include "jinja/interpreter.h"
#include "jinja/objects.h"

namespace pagoda::jinja {

Status Interpreter::exec_set_block(const SetBlockStmt& stmt, const ScopePtr& scope) {
  PAGODA_ASSIGN_OR_RETURN(std::string text, capture(stmt.body, std::make_shared<Scope>(scope)));
  Value value(std::move(text));
  if (stmt.filter) {
    PAGODA_ASSIGN_OR_RETURN(value, apply_filter_chain(*stmt.filter, std::move(value), scope));
  }
  return assign(stmt.target, value, scope);
}

Status Interpreter::exec_macro(const MacroStmt& stmt, const ScopePtr& scope) {
  auto macro = std::make_shared<Macro>(stmt.name, stmt.params, stmt.body, scope, stmt.uses_varargs,
                                       stmt.uses_kwargs);
  track(macro);
  scope->set(stmt.name, Value(std::shared_ptr<Object>(std::move(macro))));
  return {};
}

Status Interpreter::exec_call_block(const CallBlockStmt& stmt, const ScopePtr& scope) {
  auto caller =
      std::make_shared<Macro>("caller", stmt.caller_params, stmt.body, scope, false, false);
  track(caller);
  PAGODA_ASSIGN_OR_RETURN(Value callee, eval(*stmt.call->callee, scope));
  PAGODA_ASSIGN_OR_RETURN(CallArgs args, eval_args(stmt.call->args, scope));
  args.keyword.emplace_back("caller", Value(std::shared_ptr<Object>(std::move(caller))));
  line_ = stmt.line;
  PAGODA_ASSIGN_OR_RETURN(Value result, call(callee, std::move(args)));
  return emit(to_str(result));
}

Status Interpreter::exec_filter_block(const FilterBlockStmt& stmt, const ScopePtr& scope) {
  PAGODA_ASSIGN_OR_RETURN(std::string text, capture(stmt.body, std::make_shared<Scope>(scope)));
  PAGODA_ASSIGN_OR_RETURN(Value value,
                          apply_filter_chain(*stmt.filter, Value(std::move(text)), scope));
  return emit(to_str(value));
}

Status Interpreter::exec_with(const WithStmt& stmt, const ScopePtr& scope) {
  // The values are computed in the enclosing scope, then bound in a new one.
  auto inner = std::make_shared<Scope>(scope);
  std::vector<Value> values;
  for (const auto& [target, expr] : stmt.assignments) {
    PAGODA_ASSIGN_OR_RETURN(Value value, eval(*expr, scope));
    values.push_back(std::move(value));
  }
  for (size_t i = 0; i < values.size(); ++i)
    PAGODA_TRY(assign(stmt.assignments[i].first, values[i], inner));
  return exec_body(stmt.body, inner);
}

}  // namespace pagoda::jinja
