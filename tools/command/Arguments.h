// A small command-line parser for the collc subcommands: `--name value`, `--name=value`, `-o FILE`
// and flags. Each subcommand declares its options, so `--help` is generated from the same table
// that parsing uses, and an unknown or malformed option is a clear error.
#ifndef COLLC_TOOLS_COMMAND_ARGUMENTS_H
#define COLLC_TOOLS_COMMAND_ARGUMENTS_H

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace collc::driver {

struct OptionSpec {
  std::string name;      // "dtype" for --dtype; a single letter for -o
  std::string valueName; // empty: a flag
  std::string help;
};

struct Command {
  std::string name;
  std::string synopsis; // "check SPEC"
  std::string summary;  // one line
  std::string details;  // paragraphs after the options in --help
  std::vector<OptionSpec> options;
  int positionals = 1;         // at least this many positional arguments
  int optionalPositionals = 0; // and at most this many more
};

class ParsedArguments {
public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::optional<std::string> get(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

private:
  friend bool parseArguments(const Command&, const std::vector<std::string>&, ParsedArguments&,
                             std::string&);
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
};

/// Fills `parsed` from `args` (the words after the subcommand); false with `error` set otherwise.
bool parseArguments(const Command& command, const std::vector<std::string>& args,
                    ParsedArguments& parsed, std::string& error);

std::string helpText(const Command& command);

/// Parses a count or size with an optional K/M/G suffix (powers of 1024).
std::optional<uint64_t> parseSize(const std::string& text);

} // namespace collc::driver

#endif // COLLC_TOOLS_COMMAND_ARGUMENTS_H
