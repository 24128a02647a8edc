#include "jinja/objects.h"

#include <algorithm>

namespace pagoda::jinja {

std::string BoundMethod::repr() const {
  return "<built-in method " + name_ + " of " + std::string(type_name_of(self_)) + " object>";
}

std::string_view BoundMethod::type_name_of(const Value& value) {
  return jinja::type_name(value);
}

// ---- Macro ----

Value Macro::attribute(std::string_view name) const {
  if (name == "name") return Value(name_);
  return Object::attribute(name);
}

Status Macro::bind(Interpreter& interpreter, CallArgs args, const ScopePtr& scope) const {
  std::vector<bool> bound(params_.size(), false);
  std::vector<Value> extra_positional;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < params_.size()) {
      scope->set(params_[i].name, std::move(args.positional[i]));
      bound[i] = true;
    } else if (catch_varargs_) {
      extra_positional.push_back(std::move(args.positional[i]));
    } else {
      return invalid_argument("macro '" + name_ + "' takes not more than " +
                              std::to_string(params_.size()) + " argument(s)");
    }
  }
  DictData extra_keyword;
  for (auto& [key, value] : args.keyword) {
    size_t index = 0;
    while (index < params_.size() && params_[index].name != key) ++index;
    if (index < params_.size()) {
      if (bound[index])
        return invalid_argument("macro '" + name_ + "' got multiple values for argument '" + key +
                                "'");
      scope->set(key, std::move(value));
      bound[index] = true;
    } else if (key == "caller") {
      scope->set("caller", std::move(value));
    } else if (catch_kwargs_) {
      extra_keyword.insert_or_assign(Value(key), std::move(value));
    } else {
      return invalid_argument("macro '" + name_ + "' takes no keyword argument '" + key + "'");
    }
  }
  // Defaults are evaluated at call time, in the macro's scope (they may use earlier
  // parameters); a missing parameter without one is undefined, as in jinja2.
  for (size_t i = 0; i < params_.size(); ++i) {
    if (bound[i]) continue;
    if (params_[i].default_value) {
      PAGODA_ASSIGN_OR_RETURN(Value value, interpreter.eval(*params_[i].default_value, scope));
      scope->set(params_[i].name, std::move(value));
    } else {
      scope->set(params_[i].name,
                 Value::undefined("parameter '" + params_[i].name + "' was not provided"));
    }
  }
  if (catch_varargs_) scope->set("varargs", Value::tuple(std::move(extra_positional)));
  if (catch_kwargs_) scope->set("kwargs", Value::dict(std::move(extra_keyword)));
  return {};
}

Expected<Value> Macro::call(Interpreter& interpreter, CallArgs args) {
  if (!scope_) return invalid_argument("macro '" + name_ + "' called after its template finished");
  PAGODA_TRY(interpreter.enter_call());
  auto scope = std::make_shared<Scope>(scope_);
  Status status = bind(interpreter, std::move(args), scope);
  Expected<std::string> output =
      status.ok() ? interpreter.capture(body_, scope) : Expected<std::string>(status);
  interpreter.leave_call();
  if (!output.ok()) return std::move(output).take_status();
  return Value(std::move(output).value());
}

// ---- LoopContext ----

namespace {

Expected<Value> loop_cycle(Interpreter&, const Value& self, CallArgs args) {
  if (!args.keyword.empty()) return invalid_argument("loop.cycle() takes no keyword arguments");
  if (args.positional.empty()) return invalid_argument("no items for cycling given");
  const auto& loop = static_cast<const LoopContext&>(*self.as_object());
  return args.positional[loop.index0() % args.positional.size()];
}

Expected<Value> loop_changed(Interpreter&, const Value& self, CallArgs args) {
  auto& loop = static_cast<LoopContext&>(*self.as_object());
  return Value(loop.changed(Value::tuple(std::move(args.positional))));
}

}  // namespace

std::string LoopContext::repr() const {
  return "<LoopContext " + std::to_string(index_ + 1) + "/" + std::to_string(items_.size()) + ">";
}

Value LoopContext::attribute(std::string_view name) const {
  const auto n = static_cast<int64_t>(items_.size());
  const auto i = static_cast<int64_t>(index_);
  if (name == "index") return Value(i + 1);
  if (name == "index0") return Value(i);
  if (name == "revindex") return Value(n - i);
  if (name == "revindex0") return Value(n - i - 1);
  if (name == "first") return Value(i == 0);
  if (name == "last") return Value(i == n - 1);
  if (name == "length") return Value(n);
  if (name == "depth") return Value(int64_t{depth_});
  if (name == "depth0") return Value(int64_t{depth_ - 1});
  if (name == "previtem") {
    return i > 0 ? items_[index_ - 1] : Value::undefined("there is no previous item");
  }
  if (name == "nextitem") {
    return i + 1 < n ? items_[index_ + 1] : Value::undefined("there is no next item");
  }
  auto self = std::const_pointer_cast<LoopContext>(shared_from_this());
  if (name == "cycle")
    return Value(std::shared_ptr<Object>(
        std::make_shared<BoundMethod>(Value(std::shared_ptr<Object>(self)), "cycle", loop_cycle)));
  if (name == "changed")
    return Value(std::shared_ptr<Object>(std::make_shared<BoundMethod>(
        Value(std::shared_ptr<Object>(self)), "changed", loop_changed)));
  return Object::attribute(name);
}

Expected<Value> LoopContext::call(Interpreter& interpreter, CallArgs args) {
  if (loop_ == nullptr) return Object::call(interpreter, std::move(args));
  if (args.positional.size() != 1 || !args.keyword.empty()) {
    return invalid_argument("loop() takes exactly one argument: the items to loop over");
  }
  if (!scope_) return invalid_argument("loop() called after its loop finished");
  PAGODA_TRY(interpreter.enter_call());
  Expected<std::string> output =
      interpreter.run_loop(*loop_, args.positional[0], scope_, depth_ + 1);
  interpreter.leave_call();
  if (!output.ok()) return std::move(output).take_status();
  return Value(std::move(output).value());
}

bool LoopContext::changed(const Value& values) {
  if (last_changed_ && equals(*last_changed_, values)) return false;
  last_changed_ = values;
  return true;
}

void LoopContext::release_references() {
  items_.clear();
  scope_.reset();
  last_changed_.reset();
}

// ---- Namespace, Cycler, Joiner ----

std::string Namespace::repr() const {
  // A namespace that holds itself prints as Python prints a recursive dict: {...}.
  thread_local std::vector<const Namespace*> printing;
  if (std::find(printing.begin(), printing.end(), this) != printing.end())
    return "<Namespace {...}>";
  printing.push_back(this);
  std::string text = "<Namespace " + jinja::repr(Value::dict(attributes_)) + ">";
  printing.pop_back();
  return text;
}

Value Namespace::attribute(std::string_view name) const {
  if (const Value* value = attributes_.find(name)) return *value;
  return Object::attribute(name);
}

Status Namespace::set_attribute(std::string_view name, Value value) {
  attributes_.insert_or_assign(Value(name), std::move(value));
  return {};
}

namespace {

Expected<Value> cycler_next(Interpreter&, const Value& self, CallArgs) {
  return static_cast<Cycler&>(*self.as_object()).next();
}

Expected<Value> cycler_reset(Interpreter&, const Value& self, CallArgs) {
  static_cast<Cycler&>(*self.as_object()).reset();
  return Value(None{});
}

}  // namespace

Value Cycler::attribute(std::string_view name) const {
  if (name == "current") return items_.empty() ? Value(None{}) : items_[position_];
  auto self = Value(std::shared_ptr<Object>(std::const_pointer_cast<Cycler>(shared_from_this())));
  if (name == "next")
    return Value(std::shared_ptr<Object>(std::make_shared<BoundMethod>(self, "next", cycler_next)));
  if (name == "reset")
    return Value(
        std::shared_ptr<Object>(std::make_shared<BoundMethod>(self, "reset", cycler_reset)));
  return Object::attribute(name);
}

Value Cycler::next() {
  if (items_.empty()) return Value(None{});
  Value current = items_[position_];
  position_ = (position_ + 1) % items_.size();
  return current;
}

Expected<Value> Joiner::call(Interpreter&, CallArgs) {
  if (!used_) {
    used_ = true;
    return Value("");
  }
  return Value(separator_);
}

}  // namespace pagoda::jinja
