#include "Dtype.h"

namespace domino {

size_t dtype_size(domino_dtype_t dtype) {
  switch (dtype) {
    case DOMINO_FLOAT64:
    case DOMINO_INT64:
      return 8;
    case DOMINO_FLOAT32:
    case DOMINO_INT32:
      return 4;
    case DOMINO_FLOAT16:
    case DOMINO_BFLOAT16:
      return 2;
    case DOMINO_INT8:
    case DOMINO_UINT8:
    case DOMINO_BOOL:
      return 1;
    case DOMINO_DTYPE_COUNT:
      break;
  }
  return 0;
}

const char* dtype_name(domino_dtype_t dtype) {
  switch (dtype) {
    case DOMINO_FLOAT32:
      return "float32";
    case DOMINO_FLOAT64:
      return "float64";
    case DOMINO_FLOAT16:
      return "float16";
    case DOMINO_BFLOAT16:
      return "bfloat16";
    case DOMINO_INT8:
      return "int8";
    case DOMINO_UINT8:
      return "uint8";
    case DOMINO_INT32:
      return "int32";
    case DOMINO_INT64:
      return "int64";
    case DOMINO_BOOL:
      return "bool";
    case DOMINO_DTYPE_COUNT:
      break;
  }
  return "unknown-dtype";
}

const char* redop_name(domino_redop_t op) {
  switch (op) {
    case DOMINO_SUM:
      return "SUM";
    case DOMINO_AVG:
      return "AVG";
    case DOMINO_PRODUCT:
      return "PRODUCT";
    case DOMINO_MIN:
      return "MIN";
    case DOMINO_MAX:
      return "MAX";
    case DOMINO_BAND:
      return "BAND";
    case DOMINO_BOR:
      return "BOR";
    case DOMINO_BXOR:
      return "BXOR";
    case DOMINO_REDOP_COUNT:
      break;
  }
  return "unknown-op";
}

bool is_floating(domino_dtype_t dtype) {
  return dtype == DOMINO_FLOAT32 || dtype == DOMINO_FLOAT64 || dtype == DOMINO_FLOAT16 ||
         dtype == DOMINO_BFLOAT16;
}

std::string reduction_unsupported_reason(domino_dtype_t dtype, domino_redop_t op) {
  if (dtype_size(dtype) == 0) return "the element type is not one domino can reduce";
  if (op < 0 || op >= DOMINO_REDOP_COUNT) return "the reduction op is not one domino knows";
  const bool bitwise = op == DOMINO_BAND || op == DOMINO_BOR || op == DOMINO_BXOR;
  if (bitwise && is_floating(dtype)) {
    return std::string("bitwise ") + redop_name(op) + " is undefined for floating type " +
           dtype_name(dtype) + "; use an integer or bool tensor";
  }
  if (op == DOMINO_AVG && !is_floating(dtype)) {
    return std::string("AVG of ") + dtype_name(dtype) +
           " would truncate; reduce with SUM and divide, or use a floating type";
  }
  return {};
}

}  // namespace domino
