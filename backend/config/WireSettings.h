// The DOMINO_* settings that change what goes on the wire. Ranks that disagree on one would
// fail their first collective with a confusing mismatch (or worse, pick different algorithms
// for the same bytes), so every rank of a group adopts rank 0's values at init.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace domino {

// The variables every rank takes from rank 0 (Agreement::kRank0), in declaration order.
const std::vector<std::string>& wire_variables();

// env's wire variables as one record ("NAME=value" lines; unset ones are absent).
std::string wire_record(const std::map<std::string, std::string>& env);

struct AdoptedEnvironment {
  std::map<std::string, std::string> env;  // own variables, wire ones replaced by rank 0's
  std::vector<std::string> differences;    // one sentence per variable that differed
};

// own with rank 0's wire variables (from its record) in place of its own. rank names this rank
// in the sentences. Throws std::invalid_argument for a record that is not one (mixed versions).
AdoptedEnvironment adopt_wire_settings(const std::map<std::string, std::string>& own,
                                       const std::string& rank0_record, int rank);

}  // namespace domino
