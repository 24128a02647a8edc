// What follows a primary expression: .attr, [item], [a:b:c], calls, | filters and
// `is` tests.
#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/parser_impl.h"

namespace pagoda::jinja {

namespace {

int height_of(const ExprPtr& e) {
  return e ? e->height : 0;
}

int args_height(const CallArgsExpr& args) {
  int h = std::max(height_of(args.star_args), height_of(args.star_kwargs));
  for (const auto& e : args.positional) h = std::max(h, e->height);
  for (const auto& [name, e] : args.keyword) h = std::max(h, e->height);
  return h;
}

}  // namespace

Expected<ExprPtr> Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_operator(".") || at_operator("[")) {
      PAGODA_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
    } else if (at_operator("(")) {
      auto call = std::make_unique<CallExpr>(current().line, std::move(node));
      int h = call->callee->height;
      PAGODA_TRY(parse_call_args(call->args, h));
      PAGODA_ASSIGN_OR_RETURN(node, finish(std::move(call), h));
    } else {
      return node;
    }
  }
}

Expected<ExprPtr> Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (at_operator("|")) {
      PAGODA_ASSIGN_OR_RETURN(node, parse_filters(std::move(node), false));
    } else if (at_name("is")) {
      PAGODA_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
    } else if (at_operator("(")) {
      auto call = std::make_unique<CallExpr>(current().line, std::move(node));
      int h = call->callee->height;
      PAGODA_TRY(parse_call_args(call->args, h));
      PAGODA_ASSIGN_OR_RETURN(node, finish(std::move(call), h));
    } else {
      return node;
    }
  }
}

Expected<ExprPtr> Parser::parse_subscript(ExprPtr node) {
  const int line = current().line;
  if (skip_operator(".")) {
    if (current().kind == TokenKind::kName) {
      std::string name = current().text;
      advance();
      const int h = node->height;
      return finish(std::make_unique<AttributeExpr>(line, std::move(node), std::move(name)), h);
    }
    if (current().kind == TokenKind::kInteger) {  // x.0 is x[0]
      auto index = std::make_unique<LiteralExpr>(line, Value(current().integer));
      advance();
      const int h = node->height;
      return finish(std::make_unique<ItemExpr>(line, std::move(node), std::move(index)), h);
    }
    return fail("expected a name or a number after '.'");
  }
  PAGODA_TRY(expect_operator("["));
  // [a], [a:b], [a:b:c], [:], [::-1], ...
  ExprPtr parts[3];
  int part = 0;
  bool is_slice = false;
  while (true) {
    if (!at_operator(":") && !at_operator("]")) {
      PAGODA_ASSIGN_OR_RETURN(parts[part], parse_expression());
    }
    if (at_operator(":") && part < 2) {
      advance();
      is_slice = true;
      ++part;
      continue;
    }
    break;
  }
  PAGODA_TRY(expect_operator("]"));
  const int h =
      std::max({node->height, height_of(parts[0]), height_of(parts[1]), height_of(parts[2])});
  if (is_slice) {
    auto slice = std::make_unique<SliceExpr>(line, std::move(node));
    slice->start = std::move(parts[0]);
    slice->stop = std::move(parts[1]);
    slice->step = std::move(parts[2]);
    return finish(std::move(slice), h);
  }
  if (!parts[0]) return syntax_error(line, "expected an index in '[]'");
  return finish(std::make_unique<ItemExpr>(line, std::move(node), std::move(parts[0])), h);
}

Status Parser::parse_call_args(CallArgsExpr& args, int& height) {
  const int line = current().line;
  PAGODA_TRY(expect_operator("("));
  bool need_comma = false;
  auto invalid = [&] { return syntax_error(line, "invalid syntax for function call expression"); };
  while (!at_operator(")")) {
    if (need_comma) {
      PAGODA_TRY(expect_operator(","));
      if (at_operator(")")) break;  // trailing comma
    }
    if (skip_operator("*")) {
      if (args.star_args || args.star_kwargs) return invalid();
      PAGODA_ASSIGN_OR_RETURN(args.star_args, parse_expression());
    } else if (skip_operator("**")) {
      if (args.star_kwargs) return invalid();
      PAGODA_ASSIGN_OR_RETURN(args.star_kwargs, parse_expression());
    } else if (current().kind == TokenKind::kName && peek().kind == TokenKind::kOperator &&
               peek().text == "=") {
      if (args.star_kwargs) return invalid();
      std::string key = current().text;
      advance();
      advance();
      PAGODA_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      args.keyword.emplace_back(std::move(key), std::move(value));
    } else {
      if (args.star_args || args.star_kwargs || !args.keyword.empty()) return invalid();
      PAGODA_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      args.positional.push_back(std::move(value));
    }
    need_comma = true;
  }
  PAGODA_TRY(expect_operator(")"));
  height = std::max(height, args_height(args));
  return {};
}

Expected<ExprPtr> Parser::parse_filters(ExprPtr operand, bool start_inline) {
  while (at_operator("|") || start_inline) {
    if (!start_inline) advance();
    start_inline = false;
    const int line = current().line;
    PAGODA_ASSIGN_OR_RETURN(std::string name, expect_identifier());
    while (skip_operator(".")) {
      PAGODA_ASSIGN_OR_RETURN(std::string part, expect_identifier());
      name += "." + part;
    }
    const FilterFn fn = find_filter(name);
    if (fn == nullptr) return syntax_error(line, "no filter named '" + name + "'");
    auto filter = std::make_unique<FilterExpr>(line, std::move(operand), std::move(name), fn);
    int h = height_of(filter->operand);
    if (at_operator("(")) PAGODA_TRY(parse_call_args(filter->args, h));
    PAGODA_ASSIGN_OR_RETURN(operand, finish(std::move(filter), h));
  }
  return operand;
}

Expected<ExprPtr> Parser::parse_test(ExprPtr node) {
  const int line = current().line;
  advance();  // is
  const bool negated = skip_name("not");
  PAGODA_ASSIGN_OR_RETURN(std::string name, expect_identifier());
  while (skip_operator(".")) {
    PAGODA_ASSIGN_OR_RETURN(std::string part, expect_identifier());
    name += "." + part;
  }
  const TestFn fn = find_test(name);
  if (fn == nullptr) return syntax_error(line, "no test named '" + name + "'");
  auto test = std::make_unique<TestExpr>(line, std::move(node), std::move(name), fn, negated);
  int h = test->operand->height;
  const Token& token = current();
  if (at_operator("(")) {
    PAGODA_TRY(parse_call_args(test->args, h));
  } else if ((token.kind == TokenKind::kName || token.kind == TokenKind::kString ||
              token.kind == TokenKind::kInteger || token.kind == TokenKind::kFloat ||
              at_operator("[") || at_operator("{")) &&
             !at_name("else") && !at_name("or") && !at_name("and")) {
    // One argument without parentheses: `x is divisibleby 3`, `x is sameas none`.
    if (at_name("is")) return fail("you cannot chain multiple tests with is");
    PAGODA_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
    PAGODA_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
    h = std::max(h, arg->height);
    test->args.positional.push_back(std::move(arg));
  }
  return finish(std::move(test), h);
}

}  // namespace pagoda::jinja
