#include "Record.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace domino {

std::string encode_record(const RecordFields& fields) {
  std::string record;
  for (const auto& [name, raw] : fields) {
    std::string value = raw;
    std::replace(value.begin(), value.end(), '\n', ' ');
    record += name + "=" + value + "\n";
  }
  return record;
}

std::map<std::string, std::string> decode_record(const std::string& record,
                                                 const std::string& what) {
  std::map<std::string, std::string> fields;
  for (size_t start = 0; start < record.size();) {
    const size_t end = record.find('\n', start);
    const std::string line = record.substr(start, end - start);
    const size_t equals = line.find('=');
    if (end == std::string::npos || equals == std::string::npos || equals == 0 ||
        !fields.emplace(line.substr(0, equals), line.substr(equals + 1)).second) {
      throw std::invalid_argument(what + " has a line '" + line +
                                  "' this build cannot read (mixed torch-domino versions?)");
    }
    start = end + 1;
  }
  return fields;
}

std::string exact_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

}  // namespace domino
