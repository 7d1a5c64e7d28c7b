#include "engine/DevicePath.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace domino {
namespace {

const std::vector<std::pair<int, std::string>> kOwnGpus = {
    {0, "node-a GPU 11"}, {1, "node-a GPU 22"}, {2, "node-b GPU 11"}};
const std::vector<std::pair<int, std::string>> kSharedGpu = {
    {0, "node-a GPU 11"}, {1, "node-a GPU 22"}, {2, "node-a GPU 22"}, {3, "node-b GPU 33"}};

TEST(DevicePath, NcclWhenEveryRankHasItsOwnGpuEvenWithEqualUuidsOnOtherHosts) {
  const DevicePathChoice choice = choose_device_path(kOwnGpus, true, GpuTransport::kAuto);
  EXPECT_TRUE(choice.nccl);
  EXPECT_TRUE(choose_device_path(kOwnGpus, true, GpuTransport::kNccl).nccl);
  EXPECT_TRUE(choose_device_path({{5, "x GPU 1"}}, true, GpuTransport::kAuto).nccl);
}

TEST(DevicePath, RanksSharingAGpuStageTheWholeGroupAndSayWhich) {
  const DevicePathChoice choice = choose_device_path(kSharedGpu, true, GpuTransport::kAuto);
  EXPECT_FALSE(choice.nccl);
  EXPECT_EQ(choice.why, "ranks 1 and 2 share node-a GPU 22");
}

TEST(DevicePath, NoNcclInTheBuildOrStagedByChoiceStages) {
  EXPECT_FALSE(choose_device_path(kOwnGpus, false, GpuTransport::kAuto).nccl);
  EXPECT_EQ(choose_device_path(kOwnGpus, false, GpuTransport::kAuto).why,
            "this build has no NCCL transport");
  EXPECT_EQ(choose_device_path(kOwnGpus, true, GpuTransport::kStaged).why,
            "DOMINO_GPU_TRANSPORT=staged");
}

TEST(DevicePath, ForcedNcclThatCannotBeIsRefusedNamingTheRanksOrTheBuild) {
  try {
    choose_device_path(kSharedGpu, true, GpuTransport::kNccl);
    FAIL() << "accepted NCCL for ranks that share a GPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ranks 1 and 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("DOMINO_GPU_TRANSPORT"), std::string::npos) << e.what();
  }
  EXPECT_THROW(choose_device_path(kOwnGpus, false, GpuTransport::kNccl), std::invalid_argument);
}

}  // namespace
}  // namespace domino
