// Sizes, names and reduction legality of the plugin ABI's element types.
#pragma once

#include <cstddef>
#include <string>

#include "domino/plugin.h"

namespace domino {

size_t dtype_size(domino_dtype_t dtype);
const char* dtype_name(domino_dtype_t dtype);
const char* redop_name(domino_redop_t op);
bool is_floating(domino_dtype_t dtype);

// Empty when op can reduce dtype; otherwise a sentence saying why not and what to do instead.
std::string reduction_unsupported_reason(domino_dtype_t dtype, domino_redop_t op);

}  // namespace domino
