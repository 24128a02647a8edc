// Statements that define or wrap blocks: macro, call, filter, with.
#include "jinja/parser_impl.h"

namespace pagoda::jinja {

// (a, b=1, c='x'): required parameters first, as in Python.
Expected<std::vector<MacroParam>> Parser::parse_signature() {
  std::vector<MacroParam> params;
  PAGODA_TRY(expect_operator("("));
  while (!at_operator(")")) {
    if (!params.empty()) PAGODA_TRY(expect_operator(","));
    if (at_operator(")")) break;
    MacroParam param;
    PAGODA_ASSIGN_OR_RETURN(param.name, expect_identifier());
    for (const MacroParam& other : params) {
      if (other.name == param.name) return fail("duplicate parameter '" + param.name + "'");
    }
    if (skip_operator("=")) {
      PAGODA_ASSIGN_OR_RETURN(param.default_value, parse_expression());
    } else if (!params.empty() && params.back().default_value) {
      return fail("non-default parameter '" + param.name + "' follows a default parameter");
    }
    params.push_back(std::move(param));
  }
  PAGODA_TRY(expect_operator(")"));
  return params;
}

Expected<StmtPtr> Parser::parse_macro() {
  auto stmt = std::make_unique<MacroStmt>(current().line);
  advance();
  PAGODA_ASSIGN_OR_RETURN(stmt->name, expect_identifier());
  PAGODA_ASSIGN_OR_RETURN(stmt->params, parse_signature());
  // A macro body is not inside the caller's loop.
  const int saved = loop_depth_;
  loop_depth_ = 0;
  const size_t body_start = pos_;
  Expected<Body> body = parse_body_until("endmacro");
  loop_depth_ = saved;
  if (!body.ok()) return std::move(body).take_status();
  stmt->body = std::move(body).value();
  for (size_t i = body_start; i < pos_; ++i) {
    if (tokens_[i].kind != TokenKind::kName) continue;
    stmt->uses_varargs = stmt->uses_varargs || tokens_[i].text == "varargs";
    stmt->uses_kwargs = stmt->uses_kwargs || tokens_[i].text == "kwargs";
  }
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parse_call_block() {
  auto stmt = std::make_unique<CallBlockStmt>(current().line);
  advance();
  if (at_operator("(")) {
    PAGODA_ASSIGN_OR_RETURN(stmt->caller_params, parse_signature());
  }
  PAGODA_ASSIGN_OR_RETURN(ExprPtr call, parse_expression());
  if (call->kind != ExprKind::kCall)
    return syntax_error(stmt->line, "expected a call after {% call %}");
  stmt->call.reset(static_cast<CallExpr*>(call.release()));
  const int saved = loop_depth_;
  loop_depth_ = 0;
  Expected<Body> body = parse_body_until("endcall");
  loop_depth_ = saved;
  if (!body.ok()) return std::move(body).take_status();
  stmt->body = std::move(body).value();
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parse_filter_block() {
  auto stmt = std::make_unique<FilterBlockStmt>(current().line);
  advance();
  PAGODA_ASSIGN_OR_RETURN(stmt->filter, parse_filters(nullptr, true));
  PAGODA_ASSIGN_OR_RETURN(stmt->body, parse_body_until("endfilter"));
  return StmtPtr(std::move(stmt));
}

Expected<StmtPtr> Parser::parse_with() {
  auto stmt = std::make_unique<WithStmt>(current().line);
  advance();
  while (current().kind != TokenKind::kBlockEnd) {
    if (!stmt->assignments.empty()) PAGODA_TRY(expect_operator(","));
    PAGODA_ASSIGN_OR_RETURN(AssignTarget target, parse_assign_target(false, ""));
    PAGODA_TRY(expect_operator("="));
    PAGODA_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
    stmt->assignments.emplace_back(std::move(target), std::move(value));
  }
  PAGODA_ASSIGN_OR_RETURN(stmt->body, parse_body_until("endwith"));
  return StmtPtr(std::move(stmt));
}

}  // namespace pagoda::jinja
