// A std::ostream that appends to a string as it is written: for a caller of the compiler's API
// (compiler/Compile.h) that reads the diagnostics, or a printed program, back as text.
#ifndef COLLC_COMPILER_DIAGNOSTICTEXT_H
#define COLLC_COMPILER_DIAGNOSTICTEXT_H

#include <ostream>
#include <streambuf>
#include <string>

namespace collc {

namespace detail {
class AppendToString : public std::streambuf {
public:
  explicit AppendToString(std::string& text) : text_(text) {}

protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof()))
      text_.push_back(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    text_.append(s, size_t(n));
    return n;
  }

private:
  std::string& text_;
};
} // namespace detail

/// Writes into `text`, which the caller owns and may read at any time.
class DiagnosticText : private detail::AppendToString, public std::ostream {
public:
  explicit DiagnosticText(std::string& text)
      : detail::AppendToString(text), std::ostream(this), text_(text) {}
  /// What was written (and whatever `text` held before).
  const std::string& str() const { return text_; }

private:
  const std::string& text_;
};

} // namespace collc

#endif // COLLC_COMPILER_DIAGNOSTICTEXT_H
