// The named-field record rank 0 publishes at init: fields round-trip, doubles exactly, and a
// record another version wrote is refused with a sentence instead of misread.
#include <gtest/gtest.h>

#include <stdexcept>

#include "config/Record.h"

namespace domino {
namespace {

TEST(Record, FieldsRoundTripAndDoublesAreExact) {
  const double measured = 4.812345678901234;
  const std::string record =
      encode_record({{"inter.latency_us", exact_number(measured)}, {"inter.source", "meas\nured"}});
  const auto fields = decode_record(record, "test record");
  EXPECT_EQ(std::stod(fields.at("inter.latency_us")), measured);
  EXPECT_EQ(fields.at("inter.source"), "meas ured");  // a newline cannot split a field
  EXPECT_TRUE(decode_record("", "empty").empty());
}

TEST(Record, ALineThatIsNoFieldOrAFieldTwiceIsRefused) {
  for (const char* bad : {"1.5;2.0;measured", "a=1\na=2\n", "=1\n", "a=1"}) {
    try {
      decode_record(bad, "rank 0's routing record");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("rank 0's routing record has a line"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace domino
