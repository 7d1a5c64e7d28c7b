#include <gtest/gtest.h>

#include "plugins/common/Dtype.h"

namespace domino {
namespace {

TEST(Dtype, SizesMatchTheElementTypes) {
  EXPECT_EQ(dtype_size(DOMINO_FLOAT64), 8u);
  EXPECT_EQ(dtype_size(DOMINO_BFLOAT16), 2u);
  EXPECT_EQ(dtype_size(DOMINO_BOOL), 1u);
  EXPECT_EQ(dtype_size(DOMINO_DTYPE_COUNT), 0u);
}

TEST(Dtype, BitwiseOpsOnFloatsAreRejectedWithAReason) {
  const std::string reason = reduction_unsupported_reason(DOMINO_FLOAT32, DOMINO_BXOR);
  EXPECT_NE(reason.find("BXOR"), std::string::npos) << reason;
  EXPECT_NE(reason.find("float32"), std::string::npos) << reason;
}

TEST(Dtype, AverageOfIntegersIsRejected) {
  EXPECT_FALSE(reduction_unsupported_reason(DOMINO_INT32, DOMINO_AVG).empty());
  EXPECT_FALSE(reduction_unsupported_reason(DOMINO_BOOL, DOMINO_AVG).empty());
}

TEST(Dtype, EveryOtherCombinationIsAccepted) {
  for (int d = 0; d < DOMINO_DTYPE_COUNT; ++d) {
    for (int o = 0; o < DOMINO_REDOP_COUNT; ++o) {
      const auto dtype = static_cast<domino_dtype_t>(d);
      const auto op = static_cast<domino_redop_t>(o);
      const bool bitwise = op == DOMINO_BAND || op == DOMINO_BOR || op == DOMINO_BXOR;
      const bool expect_ok = is_floating(dtype) ? !bitwise : op != DOMINO_AVG;
      EXPECT_EQ(reduction_unsupported_reason(dtype, op).empty(), expect_ok)
          << dtype_name(dtype) << " " << redop_name(op);
    }
  }
}

}  // namespace
}  // namespace domino
