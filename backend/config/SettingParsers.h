// The value parsers that setting declarations share. Each throws ConfigError naming the
// variable, the value and what it accepts.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "Settings.h"

namespace domino::settings {

std::string join(const std::vector<std::string>& items);

[[noreturn]] void invalid(const std::string& variable, const std::string& value,
                          const std::string& accepted);

// One of named choices, compared without case.
template <class T>
T choose(const std::string& variable, const std::string& value,
         const std::vector<std::pair<std::string, T>>& choices) {
  std::string lowered = value;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::vector<std::string> names;
  for (const auto& [name, v] : choices) {
    if (lowered == name) return v;
    names.push_back(name);
  }
  invalid(variable, value, join(names));
}

// "auto" or a transport's name: letters, digits, '-' and '_'.
std::string transport_name(const std::string& variable, const std::string& value);

// DOMINO_ALGO: a comma-separated list with at most one choice per level, e.g.
// "hierarchical,ring", "direct" or "intra:ring".
void parse_algorithms(const std::string& variable, const std::string& value, Settings& s);

// Non-empty parts of a ':'-separated list.
std::vector<std::string> split_path(const std::string& value);

}  // namespace domino::settings
