#pragma once
// Errors are values inside the library (DESIGN.md, invariant 6): a function that
// can fail on bad input returns Status or Expected<T>, never throws or exits.

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace pagoda {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,    // the caller passed something out of range or malformed
  kNotFound,           // a named key, tensor, file or model does not exist
  kCorruptFile,        // a file's bytes contradict its own format
  kUnsupported,        // valid input that this build cannot handle
  kIo,                 // the operating system refused (open, mmap, read, write)
  kResourceExhausted,  // out of memory, KV blocks, queue slots
  kInternal,           // a broken invariant inside Pagoda
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status corrupt_file(std::string m) { return {ErrorCode::kCorruptFile, std::move(m)}; }
inline Status unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
inline Status io_error(std::string m) { return {ErrorCode::kIo, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {ErrorCode::kResourceExhausted, std::move(m)}; }
inline Status internal_error(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

// Expected<T>: a T, or the Status saying why there is none. (std::expected is C++23.)
// Expected<T, E>: a T, or an error of another type, for a layer whose errors carry more
// than a Status (the server's ApiError: HTTP status, OpenAI type, param, code).
template <typename T, typename E = Status>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(E error) : state_(std::move(error)) {   // NOLINT: implicit by design
    if constexpr (std::is_same_v<E, Status>) {
      assert(!std::get<Status>(state_).ok() && "Expected built from an ok Status");
    }
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // Only when !ok().
  const E& error() const& {
    assert(!ok());
    return std::get<E>(state_);
  }
  E&& error() && {
    assert(!ok());
    return std::get<E>(std::move(state_));
  }

  // With a Status as the error: ok_status() when there is a value.
  const Status& status() const
    requires std::is_same_v<E, Status>
  {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }
  Status take_status() &&
    requires std::is_same_v<E, Status>
  {
    return ok() ? Status{} : std::get<Status>(std::move(state_));
  }

 private:
  std::variant<T, E> state_;
};

}  // namespace pagoda

#define PAGODA_CONCAT_INNER(a, b) a##b
#define PAGODA_CONCAT(a, b) PAGODA_CONCAT_INNER(a, b)

// PAGODA_TRY(expr): return the Status of expr from the enclosing function if it failed.
#define PAGODA_TRY(expr)                              \
  do {                                                \
    ::pagoda::Status pagoda_try_status_ = (expr);     \
    if (!pagoda_try_status_.ok()) return pagoda_try_status_; \
  } while (0)

// PAGODA_ASSIGN_OR_RETURN(decl, expr): decl = *expr, or return expr's Status.
#define PAGODA_ASSIGN_OR_RETURN(decl, expr) \
  PAGODA_ASSIGN_OR_RETURN_IMPL(PAGODA_CONCAT(pagoda_expected_, __LINE__), decl, expr)
#define PAGODA_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).take_status(); \
  decl = std::move(tmp).value()
