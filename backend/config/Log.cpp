#include "Log.h"

#include <atomic>
#include <cstdio>

namespace domino {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warning";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "log";
}
}  // namespace

void set_log_level(LogLevel level) {
  g_level.store(static_cast<int>(level));
}

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) <= g_level.load();
}

void log_line(LogLevel level, int rank, const std::string& message) {
  if (!log_enabled(level)) return;
  std::fprintf(stderr, "[domino rank %d] %s: %s\n", rank, level_name(level), message.c_str());
}

}  // namespace domino
