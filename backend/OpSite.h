// An op of a group as every message about it names it: "domino all_reduce on group 'tp' (rank 0
// of 2)". Formatted only when a message is made, so the checks an op passes cost nothing on its
// hot path. Torch-free.
#pragma once

#include <ostream>
#include <string>

namespace domino {

struct OpSite {
  const char* op;
  const std::string* group;  // the group's name; empty: the default group
  int rank;
  int size;

  // "group 'tp' (rank 0 of 2)"
  std::string group_label() const {
    return "group '" + (group->empty() ? std::string("default") : *group) + "' (rank " +
           std::to_string(rank) + " of " + std::to_string(size) + ")";
  }
  std::string str() const { return std::string("domino ") + op + " on " + group_label(); }
  operator std::string() const { return str(); }
};

inline std::ostream& operator<<(std::ostream& out, const OpSite& site) {
  return out << site.str();
}

}  // namespace domino
