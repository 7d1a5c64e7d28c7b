// Every DOMINO_* variable, declared once: its name, whether a group's ranks take rank 0's value,
// how its value becomes part of Settings, and its row of the configuration table. The known
// list, the agreed-at-init list, the parsing and docs/configuration.md's table all come from
// here (scripts/configuration_table.py writes the table; tests/python/test_docs.py checks it).
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "Settings.h"

namespace domino {

// Whose value a rank uses: rank 0's for what changes the wire (ranks that disagreed would pair
// up different algorithms or lanes), its own for what may differ between ranks.
enum class Agreement { kRank0, kEachRank };

struct SettingDeclaration {
  const char* name;
  Agreement agreement;
  const char* accepted;       // the table's "Accepted values" (markdown)
  const char* default_value;  // its "Default" (markdown)
  const char* effect;         // its "Effect": one or two sentences; details go below the table
  // Stores value in settings; throws ConfigError naming name, the value and what it accepts.
  void (*parse)(const std::string& name, const std::string& value, Settings& settings);
};

// The backend's own declarations, in the table's order.
std::span<const SettingDeclaration> setting_declarations();

// env's DOMINO_* entries parsed by declared; any other DOMINO_* name warns.
ParsedSettings parse_settings(const std::map<std::string, std::string>& env,
                              std::span<const SettingDeclaration> declared);

// The names of declared, in order: all of them, or those of one agreement.
std::vector<std::string> variable_names(std::span<const SettingDeclaration> declared);
std::vector<std::string> variable_names(std::span<const SettingDeclaration> declared,
                                        Agreement agreement);

}  // namespace domino
