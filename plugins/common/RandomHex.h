// A random name for one incarnation of something the ranks share (a group's store scope, a
// communicator's message id): 128 bits from the system's entropy source, mixed with the pid and
// the time so that a deterministic random_device still never repeats across processes.
#pragma once

#include <string>

namespace domino {

std::string random_hex();  // 32 hex digits

}  // namespace domino
