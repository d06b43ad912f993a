#include "tools/command/Arguments.h"

#include <cctype>
#include <cstdint>

namespace collc::driver {

std::optional<std::string> ParsedArguments::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return std::nullopt;
  return it->second;
}

bool parseArguments(const Command& command, const std::vector<std::string>& args,
                    ParsedArguments& parsed, std::string& error) {
  auto find = [&](const std::string& name) -> const OptionSpec* {
    for (const auto& option : command.options)
      if (option.name == name)
        return &option;
    return nullptr;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positionals_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string> inlineValue;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inlineValue = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const OptionSpec* option = find(name);
    if (!option) {
      error = "unknown option '" + arg + "' for 'collc " + command.name + "' (see 'collc " +
              command.name + " --help')";
      return false;
    }
    if (option->valueName.empty()) {
      if (inlineValue) {
        error = "option '--" + name + "' takes no value";
        return false;
      }
      parsed.values_[name] = "";
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= args.size()) {
        error = "option '" + arg + "' needs a value (" + option->valueName + ")";
        return false;
      }
      inlineValue = args[++i];
    }
    parsed.values_[name] = *inlineValue;
  }
  const int given = int(parsed.positionals_.size());
  const int most = command.positionals + command.optionalPositionals;
  if (given < command.positionals || given > most) {
    auto arguments = [](int n) {
      return n == 0 ? std::string("no arguments")
                    : std::to_string(n) + " argument" + (n == 1 ? "" : "s");
    };
    error = "'collc " + command.name + "' takes " +
            (most == command.positionals ? arguments(most)
             : command.positionals == 0
                 ? "at most " + arguments(most)
                 : std::to_string(command.positionals) + " to " + arguments(most)) +
            "; usage: collc " + command.synopsis;
    return false;
  }
  return true;
}

std::string helpText(const Command& command) {
  std::string text = "USAGE: collc " + command.synopsis + "\n\n" + command.summary + "\n";
  if (!command.options.empty()) {
    text += "\nOPTIONS:\n";
    for (const auto& option : command.options) {
      std::string left = (option.name.size() == 1 ? "  -" : "  --") + option.name;
      if (!option.valueName.empty())
        left += (option.name.size() == 1 ? " " : "=") + option.valueName;
      if (left.size() < 26)
        left.resize(26, ' ');
      else
        left += "\n" + std::string(26, ' ');
      text += left + option.help + "\n";
    }
  }
  if (!command.details.empty())
    text += "\n" + command.details;
  return text;
}

std::optional<uint64_t> parseSize(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    return std::nullopt;
  size_t pos = 0;
  uint64_t value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (value > (uint64_t(1) << 50))
      return std::nullopt;
    value = value * 10 + uint64_t(text[pos++] - '0');
  }
  std::string suffix = text.substr(pos);
  uint64_t scale = suffix.empty()                     ? 1
                   : (suffix == "K" || suffix == "k") ? uint64_t(1) << 10
                   : (suffix == "M" || suffix == "m") ? uint64_t(1) << 20
                   : (suffix == "G" || suffix == "g") ? uint64_t(1) << 30
                                                      : 0;
  if (scale == 0 || value > (uint64_t(1) << 50) / scale)
    return std::nullopt;
  return value * scale;
}

} // namespace collc::driver
