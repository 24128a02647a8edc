#pragma once
// Renders a parsed template: a tree-walking interpreter with jinja2's semantics as
// Hugging Face's chat template environment configures it (sandboxed and immutable,
// loop controls on, undefined variables print as ""). One Interpreter renders once;
// built-in filters, tests, functions and methods call back into it to charge work,
// call values and render macro bodies.
//
// Every render is bounded (RenderLimits): total work, output size (which also bounds
// every string and list built), call depth, and range() size. Crossing a limit is an
// error, as is any Python exception jinja2 would raise; errors name the template line.

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "jinja/ast.h"
#include "jinja/value.h"

namespace pagoda::jinja {

struct RenderLimits {
  int64_t max_steps = 20'000'000;  // statements, expression nodes, loop iterations, items built
  size_t max_output_bytes = size_t{64} << 20;  // the output, and any one string or list (in items)
  int max_call_depth = 64;                     // nested macro, caller() and recursive loop calls
  int64_t max_range = 100'000;                 // items of one range(), as jinja2's sandbox allows
};

// Variables: a chain of scopes. Loop bodies, macro calls and {% with %} open a child
// scope; `set` writes to the innermost one. Shared because macros keep the scope they
// were defined in (they see its variables as they are when called, as in jinja2).
struct Scope {
  explicit Scope(std::shared_ptr<Scope> p = nullptr) : parent(std::move(p)) {}
  const Value* find(std::string_view name) const;
  void set(std::string_view name, Value value);

  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;  // few per scope: a linear search
};
using ScopePtr = std::shared_ptr<Scope>;

class Interpreter {
 public:
  Interpreter(const RenderLimits& limits, std::optional<std::time_t> now);
  ~Interpreter();  // breaks reference cycles among the objects the render made
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` in a child scope of `globals`. Errors: "template error, line N:
  // ..." or, for raise_exception(message), the message itself.
  Expected<std::string> render(const Body& body, const ScopePtr& globals);

  // ---- for built-ins ----
  const RenderLimits& limits() const { return limits_; }
  // Counts `steps` units of work against max_steps.
  Status charge(int64_t steps = 1);
  // A string or list about to be built: too big is an error.
  Status check_size(size_t size) const;
  // Calls a macro, built-in function or bound method.
  Expected<Value> call(const Value& callee, CallArgs args);
  // Renders `body` in `scope` and returns its output (macros, caller(), set blocks).
  Expected<std::string> capture(const Body& body, const ScopePtr& scope);
  // Objects that may hold references (namespace, loop, macro) are released when the
  // render ends, so cycles among them (ns.self = ns) cannot leak.
  void track(const std::shared_ptr<Object>& object);
  // raise_exception(message): the render fails with exactly this message.
  Status raise(std::string message);
  // strftime_now(): the fixed time when one was given, else the clock.
  std::time_t now() const;
  // Bookkeeping for nested calls (macros, caller(), recursive loops).
  Status enter_call();
  void leave_call() { --call_depth_; }
  // Runs a {% for %} body over `items` (recursive loops call this again).
  Expected<std::string> run_loop(const ForStmt& loop, const Value& iterable, const ScopePtr& scope,
                                 int depth);

  // Applies a filter or test by name (map('upper'), select('odd'), ...).
  Expected<Value> apply_filter(std::string_view name, const Value& input, CallArgs args);
  Expected<bool> apply_test(std::string_view name, const Value& input, CallArgs args);

 private:
  enum class Flow : uint8_t { kNormal, kBreak, kContinue };

  // Statements (interpreter.cpp, exec_blocks.cpp).
  Status exec_body(const Body& body, const ScopePtr& scope);
  Status exec(const Stmt& stmt, const ScopePtr& scope);
  Status exec_if(const IfStmt& stmt, const ScopePtr& scope);
  Status exec_for(const ForStmt& stmt, const ScopePtr& scope);
  Status loop_iterations(const ForStmt& stmt, const std::vector<Value>& items,
                         const ScopePtr& scope, int depth);
  Status assign(const AssignTarget& target, const Value& value, const ScopePtr& scope);
  Status exec_set_block(const SetBlockStmt& stmt, const ScopePtr& scope);
  Status exec_macro(const MacroStmt& stmt, const ScopePtr& scope);
  Status exec_call_block(const CallBlockStmt& stmt, const ScopePtr& scope);
  Status exec_filter_block(const FilterBlockStmt& stmt, const ScopePtr& scope);
  Status exec_with(const WithStmt& stmt, const ScopePtr& scope);
  Status emit(std::string_view text);
  // Drops the references of every tracked object (see track()).
  void release_tracked();

 public:
  // Expressions (eval.cpp).
  Expected<Value> eval(const Expr& expr, const ScopePtr& scope);
  Expected<CallArgs> eval_args(const CallArgsExpr& args, const ScopePtr& scope);
  // A filter chain whose innermost operand is null, applied to `input`.
  Expected<Value> apply_filter_chain(const Expr& chain, Value input, const ScopePtr& scope);

 private:
  Expected<Value> eval_node(const Expr& expr, const ScopePtr& scope);
  Expected<Value> eval_name(const NameExpr& expr, const ScopePtr& scope);
  Expected<Value> eval_sequence(const SequenceExpr& expr, const ScopePtr& scope);
  Expected<Value> eval_dict(const DictExpr& expr, const ScopePtr& scope);
  Expected<Value> eval_compare(const CompareExpr& expr, const ScopePtr& scope);
  Expected<Value> eval_conditional(const ConditionalExpr& expr, const ScopePtr& scope);
  Expected<Value> eval_slice(const SliceExpr& expr, const ScopePtr& scope);
  Expected<Value> eval_call(const CallExpr& expr, const ScopePtr& scope);
  Expected<Value> eval_filter(const FilterExpr& expr, const ScopePtr& scope);
  Expected<Value> eval_test(const TestExpr& expr, const ScopePtr& scope);

  RenderLimits limits_;
  std::optional<std::time_t> now_;
  std::string* out_ = nullptr;  // where output goes now (capture() swaps it)
  int64_t steps_ = 0;
  int call_depth_ = 0;
  int line_ = 1;  // line of the statement or expression being run: errors name it
  Flow flow_ = Flow::kNormal;
  bool raised_ = false;
  std::vector<std::weak_ptr<Object>> tracked_;
};

}  // namespace pagoda::jinja
