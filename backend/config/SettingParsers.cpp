#include "SettingParsers.h"

#include "topology/AlgorithmTable.h"
#include "topology/PlanShapes.h"

namespace domino::settings {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

[[noreturn]] void invalid(const std::string& variable, const std::string& value,
                          const std::string& accepted) {
  throw ConfigError(variable + "='" + value + "' is not valid; accepted values: " + accepted +
                    ". Fix or unset " + variable + ".");
}

std::string transport_name(const std::string& variable, const std::string& value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
  if (!plain)
    invalid(variable, value, "auto, or a transport name made of letters, digits, '-' and '_'");
  return value;
}

void parse_algorithms(const std::string& variable, const std::string& value, Settings& s) {
  using topology::AlgorithmHome;
  const std::string accepted =
      "auto, or a comma-separated list of at most one plan (" + topology::forced_plan_words() +
      "), one inter-host all-reduce algorithm (" +
      topology::algorithm_names("all_reduce", AlgorithmHome::kLinks) +
      ") and one in-host all-reduce algorithm: shared memory's own (" +
      topology::algorithm_names("all_reduce", AlgorithmHome::kShm) +
      ", or intra: before either), or intra: before an inter-host one to run it over the "
      "intra-host transport's links (e.g. intra:ring)";
  bool plan = false, inter = false, intra = false;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t end = value.find(',', start);
    std::string item = value.substr(start, end == std::string::npos ? end : end - start);
    std::transform(item.begin(), item.end(), item.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto take = [&](bool& seen) {
      if (seen) invalid(variable, value, accepted);
      seen = true;
    };
    const std::string intra_prefix = "intra:";
    const bool prefixed = item.rfind(intra_prefix, 0) == 0;
    const std::string name = prefixed ? item.substr(intra_prefix.size()) : item;
    auto serves = [&](AlgorithmHome home) {
      return topology::find_algorithm(name, "all_reduce", home) != nullptr;
    };
    if (item == "auto" && value.find(',') == std::string::npos) {
      // everything automatic
    } else if (!prefixed && topology::forces_a_plan(item)) {
      take(plan);
      s.plan = item;
    } else if (!prefixed && serves(AlgorithmHome::kLinks)) {
      take(inter);
      s.inter_algorithm = item;
    } else if (serves(AlgorithmHome::kShm) || (prefixed && serves(AlgorithmHome::kLinks))) {
      take(intra);
      s.intra_algorithm = name;
    } else {
      invalid(variable, value, accepted);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

std::vector<std::string> split_path(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t end = value.find(':', start);
    const std::string part = value.substr(start, end == std::string::npos ? end : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace domino::settings

namespace domino {

uint64_t parse_bytes(const std::string& variable, const std::string& value) {
  using settings::invalid;
  const std::string accepted = "a positive byte count such as 4096, 64K, 8M or 1G";
  size_t digits = 0;
  while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits]))) ++digits;
  if (digits == 0 || digits > 15) invalid(variable, value, accepted);
  uint64_t number = std::stoull(value.substr(0, digits));
  const std::string suffix = value.substr(digits);
  uint64_t scale = 1;
  if (suffix == "k" || suffix == "K" || suffix == "KiB") {
    scale = 1ull << 10;
  } else if (suffix == "m" || suffix == "M" || suffix == "MiB") {
    scale = 1ull << 20;
  } else if (suffix == "g" || suffix == "G" || suffix == "GiB") {
    scale = 1ull << 30;
  } else if (!suffix.empty()) {
    invalid(variable, value, accepted);
  }
  uint64_t bytes = 0;
  // 15 digits times a GiB would wrap to a small, wrong size instead of failing.
  if (number == 0 || __builtin_mul_overflow(number, scale, &bytes)) {
    invalid(variable, value, accepted);
  }
  return bytes;
}

Priority parse_priority(const std::string& name, const std::string& what) {
  std::string lowered = name;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lowered == "high") return Priority::kHigh;
  if (lowered == "normal") return Priority::kNormal;
  if (lowered == "low") return Priority::kLow;
  throw ConfigError(what + "='" + name + "' is not valid; accepted values: high, normal, low");
}

const char* priority_name(Priority priority) {
  switch (priority) {
    case Priority::kHigh:
      return "high";
    case Priority::kNormal:
      return "normal";
    case Priority::kLow:
      return "low";
  }
  return "normal";
}

}  // namespace domino
