#include "WireSettings.h"

#include <algorithm>
#include <stdexcept>

#include "Record.h"
#include "SettingDeclarations.h"

namespace domino {

const std::vector<std::string>& wire_variables() {
  static const std::vector<std::string> names =
      variable_names(setting_declarations(), Agreement::kRank0);
  return names;
}

std::string wire_record(const std::map<std::string, std::string>& env) {
  RecordFields fields;
  for (const std::string& name : wire_variables()) {
    const auto found = env.find(name);
    if (found != env.end()) fields.emplace_back(name, found->second);
  }
  return encode_record(fields);
}

AdoptedEnvironment adopt_wire_settings(const std::map<std::string, std::string>& own,
                                       const std::string& rank0_record, int rank) {
  std::map<std::string, std::string> theirs =
      decode_record(rank0_record, "rank 0's settings record");
  const auto& names = wire_variables();
  for (const auto& [name, value] : theirs) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw std::invalid_argument("rank 0's settings record has a line '" + name + "=" + value +
                                  "' this build does not know (mixed torch-domino versions?)");
    }
  }
  AdoptedEnvironment adopted{own, {}};
  auto shown = [](const std::map<std::string, std::string>& env, const std::string& name) {
    const auto found = env.find(name);
    return found == env.end() ? std::string("unset") : "'" + found->second + "'";
  };
  for (const std::string& name : wire_variables()) {
    const std::string mine = shown(own, name), rank0 = shown(theirs, name);
    if (mine == rank0) continue;
    adopted.differences.push_back(name + " is " + mine + " on rank " + std::to_string(rank) +
                                  " but " + rank0 + " on rank 0; rank " + std::to_string(rank) +
                                  " uses rank 0's, as every rank of the group does");
    adopted.env.erase(name);
    if (theirs.count(name) != 0) adopted.env[name] = theirs[name];
  }
  return adopted;
}

}  // namespace domino
