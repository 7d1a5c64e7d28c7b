#include "Settings.h"

#include <algorithm>
#include <cstring>

#include "SettingDeclarations.h"
#include "SettingParsers.h"

extern char** environ;

namespace domino {

namespace {
const char* const kPrefix = "DOMINO_";
}  // namespace

const std::vector<std::string>& known_variables() {
  static const std::vector<std::string> names = variable_names(setting_declarations());
  return names;
}

ParsedSettings parse_settings(const std::map<std::string, std::string>& env,
                              std::span<const SettingDeclaration> declared) {
  ParsedSettings parsed;
  for (const auto& [name, value] : env) {
    if (name.rfind(kPrefix, 0) != 0) continue;
    const auto declaration =
        std::find_if(declared.begin(), declared.end(),
                     [&](const SettingDeclaration& d) { return name == d.name; });
    if (declaration == declared.end()) {
      parsed.warnings.push_back("unknown variable " + name + " is ignored (known: " +
                                settings::join(variable_names(declared)) + ")");
      continue;
    }
    declaration->parse(name, value, parsed.settings);
  }
  return parsed;
}

ParsedSettings parse_settings(const std::map<std::string, std::string>& env) {
  return parse_settings(env, setting_declarations());
}

std::map<std::string, std::string> domino_environment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const char* equals = std::strchr(*entry, '=');
    if (equals == nullptr || std::strncmp(*entry, kPrefix, std::strlen(kPrefix)) != 0) continue;
    env.emplace(std::string(*entry, static_cast<size_t>(equals - *entry)), std::string(equals + 1));
  }
  return env;
}

}  // namespace domino
