// How collc reports failure, in the compiler's API and the runtime's: an Error is success or a
// message that says what went wrong and where, and whether the caller's spec (or an option) was at
// fault rather than collc; an Expected<T> is a T or an Error. Plain C++17, so that a program
// embedding collc needs no other library's error types. Both read as LLVM's do:
//   if (Error err = world.barrier("ready")) return err;
//   Expected<int> gpus = gpuCount(); if (!gpus) return gpus.takeError();
#ifndef COLLC_ABI_STATUS_H
#define COLLC_ABI_STATUS_H

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace collc {

class [[nodiscard]] Error {
public:
  /// No error.
  static Error success() { return Error(); }
  /// A failure that says `message` (which may span lines).
  static Error failure(std::string message) {
    Error error;
    error.message_ = std::make_unique<std::string>(std::move(message));
    return error;
  }
  /// A failure of the spec or of an option the caller gave, not of collc: its diagnostics were
  /// printed already, and `message` says how many ("2 errors in allreduce.coll").
  static Error specFailure(std::string message) {
    Error error = failure(std::move(message));
    error.spec_ = true;
    return error;
  }

  Error(Error&&) noexcept = default;
  Error& operator=(Error&&) noexcept = default;
  Error(const Error&) = delete;
  Error& operator=(const Error&) = delete;

  /// True for a failure.
  explicit operator bool() const { return message_ != nullptr; }
  /// True for a failure made by specFailure: the spec's fault, not collc's.
  bool isSpecError() const { return message_ != nullptr && spec_; }
  /// The failure's message; empty for success.
  const std::string& message() const {
    static const std::string none;
    return message_ ? *message_ : none;
  }

private:
  Error() = default;
  std::unique_ptr<std::string> message_; // null: success
  bool spec_ = false;                    // specFailure
};

/// A failure that says `message`.
inline Error makeError(std::string message) {
  return Error::failure(std::move(message));
}

/// The message of `error` (empty for success), which is consumed.
inline std::string toString(Error error) {
  return error.message();
}

/// Drops `error` on purpose: a failure that does not matter where it is dropped.
inline void consumeError(Error error) {
  (void)error;
}

/// Both failures as one, the first's message first, a line each; a success where both are.
inline Error joinErrors(Error first, Error second) {
  if (!first)
    return second;
  if (!second)
    return first;
  return makeError(first.message() + "\n" + second.message());
}

/// A T, or the Error that says why there is none.
template <class T> class [[nodiscard]] Expected {
public:
  /// A failure; `error` must be one (a success given here becomes a failure saying so).
  Expected(Error error) : error_(std::move(error)) {
    if (!error_)
      error_ = makeError("internal error: an Expected made from a success holds no value");
  }
  template <class U,
            std::enable_if_t<
                std::is_convertible_v<U&&, T> && !std::is_same_v<std::decay_t<U>, Error>, int> = 0>
  Expected(U&& value) : value_(std::in_place, std::forward<U>(value)) {}
  /// From an Expected of a type T is made from (a derived class's pointer, for one).
  template <class U,
            std::enable_if_t<std::is_convertible_v<U&&, T> && !std::is_same_v<U, T>, int> = 0>
  Expected(Expected<U>&& other) : error_(other.takeError()) {
    if (!error_)
      value_.emplace(std::move(*other));
  }

  Expected(Expected&&) = default;
  Expected& operator=(Expected&&) = default;

  /// True when it holds a value.
  explicit operator bool() const { return value_.has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& get() { return *value_; }
  const T& get() const { return *value_; }
  /// The failure, moved out; a success where there is a value.
  Error takeError() { return std::move(error_); }

private:
  std::optional<T> value_;
  Error error_ = Error::success();
};

/// For a program that can only stop on an error (an example, a test's setup): check(f()) returns
/// f()'s value, or prints the prefix and the message on stderr and exits with status 1.
class ExitOnError {
public:
  explicit ExitOnError(std::string prefix = "") : prefix_(std::move(prefix)) {}
  void operator()(Error error) const {
    if (error) {
      std::fprintf(stderr, "%s%s\n", prefix_.c_str(), error.message().c_str());
      std::exit(1);
    }
  }
  template <class T> T operator()(Expected<T> value) const {
    (*this)(value.takeError());
    return std::move(*value);
  }

private:
  std::string prefix_;
};

} // namespace collc

#endif // COLLC_ABI_STATUS_H
