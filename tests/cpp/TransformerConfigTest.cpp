#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

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
  EXPECT_EQ(why(c, 2), "");  // unset micro_batches and overlap follow the split: 1 and intra
  EXPECT_EQ(c.micro_batch_count(), 1);
  EXPECT_EQ(c.overlap_scope(), OverlapScope::kIntra);
  c.micro_batches = 2;
  EXPECT_NE(why(c, 2).find("split=none cuts nothing"), std::string::npos);
  c.micro_batches = 1;
  c.overlap = OverlapScope::kInter;
  EXPECT_NE(why(c, 2).find("overlap=intra"), std::string::npos);
  c.overlap = OverlapScope::kIntra;
  EXPECT_EQ(why(c, 2), "");
  EXPECT_EQ(c.batch_slices(), 1);
  EXPECT_EQ(c.column_slices(), 1);
}

TEST(TransformerConfig, UnsetScheduleFieldsFollowTheSplit) {
  TransformerConfig c = small();
  EXPECT_EQ(c.micro_batch_count(), 2);
  EXPECT_EQ(c.overlap_scope(), OverlapScope::kInter);
  c.split = Split::kColumn;
  EXPECT_EQ(c.micro_batch_count(), 1);
  EXPECT_EQ(c.batch_slices(), 1);
}

TEST(TransformerConfig, EveryFieldIsVisitedOnceByName) {
  // The Python binding, repr and equality read the fields from visit_fields alone.
  TransformerConfig c = small();
  std::vector<std::string> names;
  visit_fields(c, [&](const char* name, auto&, const char* doc) {
    names.emplace_back(name);
    EXPECT_GT(std::string(doc).size(), 5u) << name;
  });
  EXPECT_EQ(names.front(), "hidden_size");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_NE(std::find(names.begin(), names.end(), "sequence_parallel"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "recompute"), names.end());
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
