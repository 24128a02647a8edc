#pragma once
// The objects templates meet besides data: built-in functions, bound methods
// ("a b".split), macros and caller(), the `loop` variable, namespace(), cycler() and
// joiner().

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/interpreter.h"
#include "jinja/value.h"

namespace pagoda::jinja {

using FunctionFn = Expected<Value> (*)(Interpreter& interpreter, CallArgs args);
using MethodFn = Expected<Value> (*)(Interpreter& interpreter, const Value& self, CallArgs args);

class BuiltinFunction final : public Object {
 public:
  BuiltinFunction(std::string_view name, FunctionFn fn) : name_(name), fn_(fn) {}
  std::string_view type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override { return "<built-in function " + name_ + ">"; }
  bool callable() const override { return true; }
  Expected<Value> call(Interpreter& interpreter, CallArgs args) override {
    return fn_(interpreter, std::move(args));
  }

 private:
  std::string name_;
  FunctionFn fn_;
};

// A method of a str, list, dict or object, bound to its receiver.
class BoundMethod final : public Object {
 public:
  BoundMethod(Value self, std::string_view name, MethodFn fn)
      : self_(std::move(self)), name_(name), fn_(fn) {}
  std::string_view type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override;
  bool callable() const override { return true; }
  Expected<Value> call(Interpreter& interpreter, CallArgs args) override {
    return fn_(interpreter, self_, std::move(args));
  }

 private:
  static std::string_view type_name_of(const Value& value);

  Value self_;
  std::string name_;
  MethodFn fn_;
};

// A {% macro %}, or the caller() a {% call %} block passes to its macro.
class Macro final : public Object {
 public:
  Macro(std::string name, const std::vector<MacroParam>& params, const Body& body, ScopePtr scope,
        bool varargs, bool kwargs)
      : name_(std::move(name)),
        params_(params),
        body_(body),
        scope_(std::move(scope)),
        catch_varargs_(varargs),
        catch_kwargs_(kwargs) {}
  std::string_view type_name() const override { return "Macro"; }
  std::string repr() const override { return "<Macro '" + name_ + "'>"; }
  Value attribute(std::string_view name) const override;
  bool callable() const override { return true; }
  Expected<Value> call(Interpreter& interpreter, CallArgs args) override;
  void release_references() override { scope_.reset(); }

 private:
  Status bind(Interpreter& interpreter, CallArgs args, const ScopePtr& scope) const;

  std::string name_;
  const std::vector<MacroParam>& params_;
  const Body& body_;
  ScopePtr scope_;  // where the macro was defined
  bool catch_varargs_;
  bool catch_kwargs_;
};

// The `loop` variable of a {% for %}.
class LoopContext final : public Object, public std::enable_shared_from_this<LoopContext> {
 public:
  LoopContext(std::vector<Value> items, int depth, const ForStmt* recursive_loop, ScopePtr scope)
      : items_(std::move(items)), depth_(depth), loop_(recursive_loop), scope_(std::move(scope)) {}
  std::string_view type_name() const override { return "LoopContext"; }
  std::string repr() const override;
  Value attribute(std::string_view name) const override;
  // loop(items) renders the loop again for `items`, in a recursive loop.
  bool callable() const override { return loop_ != nullptr; }
  Expected<Value> call(Interpreter& interpreter, CallArgs args) override;

  const std::vector<Value>& items() const { return items_; }
  size_t index0() const { return index_; }
  void set_index(size_t index) { index_ = index; }
  // loop.changed(*values): true on the first call and whenever the values differ.
  bool changed(const Value& values);
  void release_references() override;

 private:
  std::vector<Value> items_;
  size_t index_ = 0;  // 0-based
  int depth_;
  const ForStmt* loop_;
  ScopePtr scope_;
  std::optional<Value> last_changed_;
};

// namespace(): the one mutable object, through {% set ns.attr = value %}.
class Namespace final : public Object {
 public:
  explicit Namespace(DictData attributes) : attributes_(std::move(attributes)) {}
  std::string_view type_name() const override { return "Namespace"; }
  std::string repr() const override;
  Value attribute(std::string_view name) const override;
  Status set_attribute(std::string_view name, Value value) override;
  void release_references() override { attributes_.entries.clear(); }

 private:
  DictData attributes_;
};

// cycler(a, b, ...): .next(), .current, .reset().
class Cycler final : public Object, public std::enable_shared_from_this<Cycler> {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string_view type_name() const override { return "Cycler"; }
  Value attribute(std::string_view name) const override;
  Value next();
  void reset() { position_ = 0; }
  void release_references() override { items_.clear(); }

 private:
  std::vector<Value> items_;
  size_t position_ = 0;
};

// joiner(sep): "" the first time it is called, then sep.
class Joiner final : public Object {
 public:
  explicit Joiner(std::string separator) : separator_(std::move(separator)) {}
  std::string_view type_name() const override { return "Joiner"; }
  bool callable() const override { return true; }
  Expected<Value> call(Interpreter& interpreter, CallArgs args) override;

 private:
  std::string separator_;
  bool used_ = false;
};

}  // namespace pagoda::jinja
