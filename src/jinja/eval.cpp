// Expression evaluation.
#include "jinja/builtins.h"
#include "jinja/interpreter.h"

namespace pagoda::jinja {

Expected<Value> Interpreter::eval(const Expr& expr, const ScopePtr& scope) {
  PAGODA_TRY(charge());
  line_ = expr.line;
  PAGODA_ASSIGN_OR_RETURN(Value value, eval_node(expr, scope));
  if (value.depth() > kMaxValueDepth) {
    return resource_exhausted("values nest deeper than " + std::to_string(kMaxValueDepth) +
                              " levels");
  }
  if (value.size() > kMaxValueItems) {
    return resource_exhausted("a value holds more than " + std::to_string(kMaxValueItems) +
                              " items in all");
  }
  return value;
}

Expected<Value> Interpreter::eval_node(const Expr& expr, const ScopePtr& scope) {
  switch (expr.kind) {
    case ExprKind::kLiteral:
      return static_cast<const LiteralExpr&>(expr).value;
    case ExprKind::kName:
      return eval_name(static_cast<const NameExpr&>(expr), scope);
    case ExprKind::kList:
    case ExprKind::kTuple:
      return eval_sequence(static_cast<const SequenceExpr&>(expr), scope);
    case ExprKind::kDict:
      return eval_dict(static_cast<const DictExpr&>(expr), scope);
    case ExprKind::kNegate:
    case ExprKind::kPlus:
    case ExprKind::kNot: {
      const auto& unary = static_cast<const UnaryExpr&>(expr);
      PAGODA_ASSIGN_OR_RETURN(Value operand, eval(*unary.operand, scope));
      if (expr.kind == ExprKind::kNot) return Value(!truthy(operand));
      return expr.kind == ExprKind::kNegate ? negate(operand) : unary_plus(operand);
    }
    case ExprKind::kBinary: {
      const auto& binary = static_cast<const BinaryExpr&>(expr);
      PAGODA_ASSIGN_OR_RETURN(Value left, eval(*binary.left, scope));
      PAGODA_ASSIGN_OR_RETURN(Value right, eval(*binary.right, scope));
      line_ = expr.line;
      return binary_op(*this, binary.op, left, right);
    }
    case ExprKind::kAnd:
    case ExprKind::kOr: {  // Python returns the deciding operand itself
      const auto& binary = static_cast<const BinaryExpr&>(expr);
      PAGODA_ASSIGN_OR_RETURN(Value left, eval(*binary.left, scope));
      if (truthy(left) == (expr.kind == ExprKind::kOr)) return left;
      return eval(*binary.right, scope);
    }
    case ExprKind::kCompare:
      return eval_compare(static_cast<const CompareExpr&>(expr), scope);
    case ExprKind::kConditional:
      return eval_conditional(static_cast<const ConditionalExpr&>(expr), scope);
    case ExprKind::kAttribute: {
      const auto& attribute = static_cast<const AttributeExpr&>(expr);
      PAGODA_ASSIGN_OR_RETURN(Value object, eval(*attribute.object, scope));
      return get_attribute(object, attribute.name);
    }
    case ExprKind::kItem: {
      const auto& item = static_cast<const ItemExpr&>(expr);
      PAGODA_ASSIGN_OR_RETURN(Value object, eval(*item.object, scope));
      PAGODA_ASSIGN_OR_RETURN(Value key, eval(*item.index, scope));
      return get_item(object, key);
    }
    case ExprKind::kSlice:
      return eval_slice(static_cast<const SliceExpr&>(expr), scope);
    case ExprKind::kCall:
      return eval_call(static_cast<const CallExpr&>(expr), scope);
    case ExprKind::kFilter:
      return eval_filter(static_cast<const FilterExpr&>(expr), scope);
    case ExprKind::kTest:
      return eval_test(static_cast<const TestExpr&>(expr), scope);
  }
  return internal_error("unknown expression");
}

Expected<Value> Interpreter::eval_name(const NameExpr& expr, const ScopePtr& scope) {
  if (const Value* value = scope->find(expr.name)) return *value;
  return Value::undefined("'" + expr.name + "' is undefined");
}

Expected<Value> Interpreter::eval_sequence(const SequenceExpr& expr, const ScopePtr& scope) {
  std::vector<Value> items;
  items.reserve(expr.items.size());
  for (const ExprPtr& item : expr.items) {
    PAGODA_ASSIGN_OR_RETURN(Value value, eval(*item, scope));
    items.push_back(std::move(value));
  }
  return expr.kind == ExprKind::kTuple ? Value::tuple(std::move(items))
                                       : Value::list(std::move(items));
}

Expected<Value> Interpreter::eval_dict(const DictExpr& expr, const ScopePtr& scope) {
  DictData dict;
  for (const auto& [key_expr, value_expr] : expr.entries) {
    PAGODA_ASSIGN_OR_RETURN(Value key, eval(*key_expr, scope));
    PAGODA_ASSIGN_OR_RETURN(Value value, eval(*value_expr, scope));
    if ((key.is_list() && !key.is_tuple()) || key.is_dict() || key.is_undefined()) {
      return invalid_argument("unhashable type: '" + std::string(type_name(key)) + "'");
    }
    PAGODA_TRY(charge(static_cast<int64_t>(dict.entries.size())));  // insert_or_assign scans
    dict.insert_or_assign(std::move(key), std::move(value));
  }
  return Value::dict(std::move(dict));
}

Expected<Value> Interpreter::eval_compare(const CompareExpr& expr, const ScopePtr& scope) {
  PAGODA_ASSIGN_OR_RETURN(Value left, eval(*expr.first, scope));
  for (const auto& [op, right_expr] : expr.rest) {
    PAGODA_ASSIGN_OR_RETURN(Value right, eval(*right_expr, scope));
    line_ = expr.line;
    PAGODA_ASSIGN_OR_RETURN(const bool holds, compare_op(op, left, right));
    if (!holds) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Expected<Value> Interpreter::eval_conditional(const ConditionalExpr& expr, const ScopePtr& scope) {
  PAGODA_ASSIGN_OR_RETURN(Value condition, eval(*expr.condition, scope));
  if (truthy(condition)) return eval(*expr.then_value, scope);
  if (expr.else_value) return eval(*expr.else_value, scope);
  return Value::undefined("the inline if-expression on line " + std::to_string(expr.line) +
                          " evaluated to false and no else section was defined.");
}

Expected<Value> Interpreter::eval_slice(const SliceExpr& expr, const ScopePtr& scope) {
  PAGODA_ASSIGN_OR_RETURN(Value object, eval(*expr.object, scope));
  Value parts[3] = {Value(None{}), Value(None{}), Value(None{})};
  const ExprPtr* exprs[3] = {&expr.start, &expr.stop, &expr.step};
  for (int i = 0; i < 3; ++i) {
    if (*exprs[i]) {
      PAGODA_ASSIGN_OR_RETURN(parts[i], eval(**exprs[i], scope));
    }
  }
  line_ = expr.line;
  return get_slice(*this, object, parts[0], parts[1], parts[2]);
}

Expected<CallArgs> Interpreter::eval_args(const CallArgsExpr& args, const ScopePtr& scope) {
  CallArgs result;
  for (const ExprPtr& arg : args.positional) {
    PAGODA_ASSIGN_OR_RETURN(Value value, eval(*arg, scope));
    result.positional.push_back(std::move(value));
  }
  for (const auto& [name, arg] : args.keyword) {
    PAGODA_ASSIGN_OR_RETURN(Value value, eval(*arg, scope));
    result.keyword.emplace_back(name, std::move(value));
  }
  if (args.star_args) {
    PAGODA_ASSIGN_OR_RETURN(Value value, eval(*args.star_args, scope));
    PAGODA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
    for (Value& item : items) result.positional.push_back(std::move(item));
  }
  if (args.star_kwargs) {
    PAGODA_ASSIGN_OR_RETURN(Value value, eval(*args.star_kwargs, scope));
    if (!value.is_dict())
      return invalid_argument("argument after ** must be a mapping, not " +
                              std::string(type_name(value)));
    for (const auto& [key, item] : value.as_dict().entries) {
      if (!key.is_string()) return invalid_argument("keywords must be strings");
      result.keyword.emplace_back(key.as_string(), item);
    }
  }
  return result;
}

Expected<Value> Interpreter::eval_call(const CallExpr& expr, const ScopePtr& scope) {
  PAGODA_ASSIGN_OR_RETURN(Value callee, eval(*expr.callee, scope));
  PAGODA_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr.args, scope));
  line_ = expr.line;
  return call(callee, std::move(args));
}

Expected<Value> Interpreter::eval_filter(const FilterExpr& expr, const ScopePtr& scope) {
  Value input;
  if (expr.operand) {
    PAGODA_ASSIGN_OR_RETURN(input, eval(*expr.operand, scope));
  }
  PAGODA_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr.args, scope));
  line_ = expr.line;
  return expr.fn(*this, input, std::move(args));
}

Expected<Value> Interpreter::apply_filter_chain(const Expr& chain, Value input,
                                                const ScopePtr& scope) {
  const auto& filter = static_cast<const FilterExpr&>(chain);
  if (filter.operand) {
    PAGODA_ASSIGN_OR_RETURN(input, apply_filter_chain(*filter.operand, std::move(input), scope));
  }
  PAGODA_ASSIGN_OR_RETURN(CallArgs args, eval_args(filter.args, scope));
  line_ = filter.line;
  return filter.fn(*this, input, std::move(args));
}

Expected<Value> Interpreter::eval_test(const TestExpr& expr, const ScopePtr& scope) {
  PAGODA_ASSIGN_OR_RETURN(Value input, eval(*expr.operand, scope));
  PAGODA_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr.args, scope));
  line_ = expr.line;
  PAGODA_ASSIGN_OR_RETURN(const bool result, expr.fn(*this, input, std::move(args)));
  return Value(result != expr.negated);
}

}  // namespace pagoda::jinja
