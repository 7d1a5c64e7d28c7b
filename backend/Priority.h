// The lanes a group runs its collectives on, most urgent first. Torch-free.
#pragma once

namespace domino {

enum class Priority { kHigh, kNormal, kLow };

// "high", "normal" or "low".
const char* priority_name(Priority priority);

}  // namespace domino
