// Element-wise reduction of several same-shaped buffers: the arithmetic every transport shares.
#pragma once

#include <cstddef>
#include <string>

#include "domino/plugin.h"

namespace domino {

// out[i] = op(inputs[0][i], ..., inputs[n_inputs-1][i]); AVG divides by n_inputs. out may be one
// of the inputs. 16-bit floats accumulate in float32 and round once. The caller has checked the
// combination with reduction_unsupported_reason().
void reduce_buffers(void* out, const void* const* inputs, int n_inputs, size_t count,
                    domino_dtype_t dtype, domino_redop_t op);

// buf[i] /= divisor, for floating dtypes (the last step of AVG in algorithms that sum in several
// steps); other dtypes are left alone.
void divide_buffer(void* buf, size_t count, domino_dtype_t dtype, int divisor);

// Which instruction set reduce_buffers dispatches to, for the topology report.
const char* reduction_isa();

// Makes reduce_buffers use the variant named ("avx512", "avx2+f16c" or "generic"), or the
// fastest this CPU runs for "auto". Every variant gives the same bits, so ranks need not agree.
// Throws std::invalid_argument naming the variants this CPU runs if it cannot run that one.
void use_reduction_variant(const std::string& name);

}  // namespace domino
