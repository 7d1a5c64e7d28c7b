// Paths and directory listings by POSIX calls, not std::filesystem: torch 2.11's libtorch.so
// exports its own copies of std::filesystem functions, and a process that loads it binds the
// project's calls to them (remove_all crashed that way); these calls never reach that copy.
#pragma once

#include <string>
#include <vector>

namespace domino {

bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
// The names in `dir` without "." and ".."; empty when it cannot be read.
std::vector<std::string> directory_entries(const std::string& dir);

}  // namespace domino
