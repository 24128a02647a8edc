// Python's arithmetic, comparison and membership operators over template values.
// Integers are 64-bit: a result that would need more is an error (Python would grow).
#include <cmath>
#include <limits>

#include "jinja/builtins.h"

namespace pagoda::jinja {

namespace {

constexpr std::string_view symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "**";
    case BinaryOp::kConcat:
      return "~";
  }
  return "?";
}

Status unsupported_operands(BinaryOp op, const Value& a, const Value& b) {
  return invalid_argument("unsupported operand type(s) for " + std::string(symbol(op)) + ": '" +
                          std::string(type_name(a)) + "' and '" + std::string(type_name(b)) + "'");
}

Status overflow() {
  return invalid_argument("integer overflow: the result does not fit in 64 bits");
}

Expected<Value> int_pow(int64_t base, int64_t exponent) {
  if (exponent < 0)
    return Value(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) {
      if (__builtin_mul_overflow(result, base, &result)) return overflow();
    }
    exponent >>= 1;
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) return overflow();
  }
  return Value(result);
}

// Python's divmod for floats: the floor quotient and a remainder with the divisor's sign.
std::pair<double, double> float_divmod(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0.0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  double floor_div = 0.0;
  if (div != 0.0) {
    floor_div = std::floor(div);
    if (div - floor_div > 0.5) floor_div += 1.0;
  } else {
    floor_div = std::copysign(0.0, x / y);
  }
  return {floor_div, mod};
}

Expected<Value> integer_op(BinaryOp op, int64_t x, int64_t y) {
  int64_t r = 0;
  switch (op) {
    case BinaryOp::kAdd:
      if (__builtin_add_overflow(x, y, &r)) return overflow();
      return Value(r);
    case BinaryOp::kSub:
      if (__builtin_sub_overflow(x, y, &r)) return overflow();
      return Value(r);
    case BinaryOp::kMul:
      if (__builtin_mul_overflow(x, y, &r)) return overflow();
      return Value(r);
    case BinaryOp::kDiv:
      if (y == 0) return invalid_argument("division by zero");
      return Value(static_cast<double>(x) / static_cast<double>(y));
    case BinaryOp::kFloorDiv:
    case BinaryOp::kMod: {
      if (y == 0) return invalid_argument("integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) {
        return op == BinaryOp::kMod ? Value(int64_t{0}) : Expected<Value>(overflow());
      }
      int64_t q = x / y;
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        m += y;
        q -= 1;
      }
      return Value(op == BinaryOp::kMod ? m : q);
    }
    case BinaryOp::kPow:
      return int_pow(x, y);
    case BinaryOp::kConcat:
      break;
  }
  return internal_error("not an integer operator");
}

Expected<Value> float_op(BinaryOp op, double x, double y) {
  switch (op) {
    case BinaryOp::kAdd:
      return Value(x + y);
    case BinaryOp::kSub:
      return Value(x - y);
    case BinaryOp::kMul:
      return Value(x * y);
    case BinaryOp::kDiv:
      if (y == 0.0) return invalid_argument("float division by zero");
      return Value(x / y);
    case BinaryOp::kFloorDiv:
      if (y == 0.0) return invalid_argument("float floor division by zero");
      return Value(float_divmod(x, y).first);
    case BinaryOp::kMod:
      if (y == 0.0) return invalid_argument("float modulo");
      return Value(float_divmod(x, y).second);
    case BinaryOp::kPow:
      if (x == 0.0 && y < 0.0) return invalid_argument("0.0 cannot be raised to a negative power");
      if (x < 0.0 && y != std::floor(y))
        return invalid_argument("a negative number to a fractional power is complex");
      return Value(std::pow(x, y));
    case BinaryOp::kConcat:
      break;
  }
  return internal_error("not a float operator");
}

// str * n and list * n.
Expected<Value> repeat(Interpreter& interpreter, const Value& sequence, int64_t times) {
  if (times <= 0)
    return sequence.is_string() ? Value("")
                                : (sequence.is_tuple() ? Value::tuple({}) : Value::list({}));
  const size_t unit = sequence.is_string() ? sequence.as_string().size() : sequence.items().size();
  if (unit != 0 && static_cast<uint64_t>(times) > interpreter.limits().max_output_bytes / unit) {
    return interpreter.check_size(interpreter.limits().max_output_bytes + 1);
  }
  const size_t total = unit * static_cast<size_t>(times);
  PAGODA_TRY(interpreter.check_size(total));
  PAGODA_TRY(interpreter.charge(static_cast<int64_t>(sequence.is_string() ? total / 64 : total)));
  if (sequence.is_string()) {
    std::string out;
    out.reserve(total);
    for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
    return Value(std::move(out));
  }
  std::vector<Value> items;
  items.reserve(total);
  for (int64_t i = 0; i < times; ++i)
    items.insert(items.end(), sequence.items().begin(), sequence.items().end());
  return sequence.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Expected<Value> add_sequences(Interpreter& interpreter, const Value& a, const Value& b) {
  if (a.is_string()) {
    PAGODA_TRY(interpreter.check_size(a.as_string().size() + b.as_string().size()));
    return Value(a.as_string() + b.as_string());
  }
  const size_t total = a.items().size() + b.items().size();
  PAGODA_TRY(interpreter.check_size(total));
  PAGODA_TRY(interpreter.charge(static_cast<int64_t>(total)));
  std::vector<Value> items = a.items();
  items.insert(items.end(), b.items().begin(), b.items().end());
  return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

}  // namespace

Expected<Value> binary_op(Interpreter& interpreter, BinaryOp op, const Value& a, const Value& b) {
  if (op == BinaryOp::kConcat) {  // str() of each side; Undefined is ""
    std::string text = to_str(a);
    const std::string right = to_str(b);
    PAGODA_TRY(interpreter.check_size(text.size() + right.size()));
    return Value(text + right);
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return integer_op(op, a.as_integral(), b.as_integral());
    return float_op(op, a.as_double(), b.as_double());
  }
  if (op == BinaryOp::kAdd) {
    const bool same_kind = (a.is_string() && b.is_string()) ||
                           (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple() &&
                            !a.is_generator() && !b.is_generator());
    if (same_kind) return add_sequences(interpreter, a, b);
  }
  if (op == BinaryOp::kMul) {
    auto repeatable = [](const Value& v) {
      return v.is_string() || (v.is_list() && !v.is_generator());
    };
    if (repeatable(a) && b.is_integral()) return repeat(interpreter, a, b.as_integral());
    if (a.is_integral() && repeatable(b)) return repeat(interpreter, b, a.as_integral());
  }
  if (op == BinaryOp::kMod && a.is_string()) {
    PAGODA_ASSIGN_OR_RETURN(
        std::string text, percent_format(a.as_string(), b, interpreter.limits().max_output_bytes));
    PAGODA_TRY(interpreter.check_size(text.size()));
    return Value(std::move(text));
  }
  return unsupported_operands(op, a, b);
}

Expected<Value> negate(const Value& value) {
  if (value.is_undefined()) return undefined_error(value);
  if (value.is_float()) return Value(-value.as_float());
  if (value.is_integral()) {
    if (value.as_integral() == std::numeric_limits<int64_t>::min()) return overflow();
    return Value(-value.as_integral());
  }
  return invalid_argument("bad operand type for unary -: '" + std::string(type_name(value)) + "'");
}

Expected<Value> unary_plus(const Value& value) {
  if (value.is_undefined()) return undefined_error(value);
  if (value.is_float()) return value;
  if (value.is_integral()) return Value(value.as_integral());
  return invalid_argument("bad operand type for unary +: '" + std::string(type_name(value)) + "'");
}

Expected<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        if (item.is_undefined()) return undefined_error(item);
        return invalid_argument("'in <string>' requires string as left operand, not " +
                                std::string(type_name(item)));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      if (container.as_list().deferred_error) return *container.as_list().deferred_error;
      for (const Value& element : container.items()) {
        if (equals(element, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return container.as_dict().find(item) != nullptr;
    default:
      return invalid_argument("argument of type '" + std::string(type_name(container)) +
                              "' is not iterable");
  }
}

Expected<bool> compare_op(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::kEq:
      return equals(a, b);
    case CompareOp::kNe:
      return !equals(a, b);
    case CompareOp::kIn:
      return contains(b, a);
    case CompareOp::kNotIn: {
      PAGODA_ASSIGN_OR_RETURN(const bool found, contains(b, a));
      return !found;
    }
    default:
      break;
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  const std::string_view name = op == CompareOp::kLt   ? "<"
                                : op == CompareOp::kLe ? "<="
                                : op == CompareOp::kGt ? ">"
                                                       : ">=";
  // NaN: every ordering comparison is false.
  if (a.is_number() && b.is_number() && (std::isnan(a.as_double()) || std::isnan(b.as_double())))
    return false;
  PAGODA_ASSIGN_OR_RETURN(const int c, compare(a, b, name));
  switch (op) {
    case CompareOp::kLt:
      return c < 0;
    case CompareOp::kLe:
      return c <= 0;
    case CompareOp::kGt:
      return c > 0;
    default:
      return c >= 0;
  }
}

}  // namespace pagoda::jinja
