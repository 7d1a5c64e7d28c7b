// One line per event on stderr, prefixed so a multi-rank log stays readable.
#pragma once

#include <string>

#include "Settings.h"

namespace domino {

void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);
void log_line(LogLevel level, int rank, const std::string& message);

}  // namespace domino
