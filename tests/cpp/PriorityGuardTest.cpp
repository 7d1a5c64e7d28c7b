#include <gtest/gtest.h>

#include <thread>

#include "PriorityGuard.h"
#include "config/Settings.h"

namespace domino {
namespace {

TEST(PriorityGuard, NestsAndRestoresPerThread) {
  EXPECT_FALSE(current_priority().has_value());
  {
    PriorityGuard low(Priority::kLow);
    EXPECT_EQ(current_priority(), Priority::kLow);
    {
      PriorityGuard high(Priority::kHigh);
      EXPECT_EQ(current_priority(), Priority::kHigh);
      std::optional<Priority> other;
      std::thread([&] { other = current_priority(); }).join();
      EXPECT_FALSE(other.has_value());  // thread-local
    }
    EXPECT_EQ(current_priority(), Priority::kLow);
  }
  EXPECT_FALSE(current_priority().has_value());
}

TEST(PriorityGuard, ParsesLevelsAndNamesTheAcceptedOnes) {
  EXPECT_EQ(parse_priority("HIGH"), Priority::kHigh);
  EXPECT_STREQ(priority_name(Priority::kLow), "low");
  try {
    parse_priority("urgent", "DOMINO_PRIORITY");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("DOMINO_PRIORITY='urgent'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("high, normal, low"), std::string::npos);
  }
}

}  // namespace
}  // namespace domino
