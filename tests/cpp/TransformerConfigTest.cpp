#include <gtest/gtest.h>

#include <stdexcept>

#include "overlap/TransformerConfig.h"

namespace domino::overlap {
namespace {

TransformerConfig small() {
  TransformerConfig c;
  c.hidden_size = 64;
  c.num_attention_heads = 8;
  c.num_query_groups = 4;
  return c;
}

std::string why(const TransformerConfig& c, int64_t tp, int64_t batch = 0) {
  try {
    c.validate(tp, batch);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(TransformerConfig, ShardableShapesPass) {
  EXPECT_EQ(why(small(), 1), "");
  EXPECT_EQ(why(small(), 2), "");
  EXPECT_EQ(why(small(), 4), "");
  EXPECT_EQ(small().ffn_size(), 256);
}

TEST(TransformerConfig, HeadsNotDivisibleByTensorParallelAreNamed) {
  const std::string message = why(small(), 3);
  EXPECT_NE(message.find("num_attention_heads=8"), std::string::npos) << message;
  EXPECT_NE(message.find("tensor-parallel size=3"), std::string::npos) << message;
}

TEST(TransformerConfig, MoreMicroBatchesThanSequencesIsRejected) {
  TransformerConfig c = small();
  c.micro_batches = 4;
  EXPECT_NE(why(c, 2, 2).find("micro_batches=4"), std::string::npos);
  EXPECT_EQ(why(c, 2, 4), "");
}

TEST(TransformerConfig, TheNaiveScheduleCutsNothingAndOverlapsNothing) {
  TransformerConfig c = small();
  c.split = parse_split("none");
  EXPECT_NE(why(c, 2).find("split=none cuts nothing"), std::string::npos);  // 2 micro-batches
  c.micro_batches = 1;
  EXPECT_NE(why(c, 2).find("overlap=intra"), std::string::npos);  // inter by default
  c.overlap = OverlapScope::kIntra;
  EXPECT_EQ(why(c, 2), "");
  EXPECT_EQ(c.batch_slices(), 1);
  EXPECT_EQ(c.column_slices(), 1);
}

TEST(TransformerConfig, ParsersNameTheAcceptedValues) {
  EXPECT_EQ(parse_split("2d"), Split::k2d);
  try {
    parse_activation("relu");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gelu, gelu_tanh, swiglu"), std::string::npos);
  }
}

}  // namespace
}  // namespace domino::overlap
