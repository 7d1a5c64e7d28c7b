// A record of named fields, one "name=value" line each: the one form in which rank 0 publishes
// what every rank of a group adopts at init (the DOMINO_* wire settings, the router's link
// costs). Named, so a field added or dropped by another version is reported, never misread.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace domino {

using RecordFields = std::vector<std::pair<std::string, std::string>>;

// A newline inside a value becomes a space (no value any parser accepts has one).
std::string encode_record(const RecordFields& fields);
// The fields of record; throws std::invalid_argument naming `what` for a line that is not
// "name=value" or a name given twice.
std::map<std::string, std::string> decode_record(const std::string& record,
                                                 const std::string& what);
// Exact text of a double: decoding gives back the same value on every rank.
std::string exact_number(double value);

}  // namespace domino
