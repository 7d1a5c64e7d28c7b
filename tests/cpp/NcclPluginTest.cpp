// The NCCL transport through the plugin ABI. Without a GPU only its registration and its refusal
// of a device it cannot see run; the collectives skip.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "plugins/common/TransportError.h"
#include "plugins/nccl/NcclCommunicator.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginRegistry.h"
#include "support/FileBootstrap.h"

namespace domino {
namespace {

int visible_gpus() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

domino_comm_config_t one_rank(const testing::FileBootstrap& bootstrap, int device) {
  domino_comm_config_t config{};
  config.rank = 0;
  config.size = 1;
  config.group_name = "nccl-unit";
  config.timeout_ms = 30000;
  config.bootstrap = bootstrap.table();
  config.device = device;
  return config;
}

TEST(NcclPlugin, IsBuiltInForCudaMemoryAndSplits) {
  PluginRegistry registry({});
  const domino_plugin_t* nccl = registry.find("nccl");
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(registry.origin("nccl"), "built-in");
  EXPECT_EQ(nccl->devices, DOMINO_DEVICE_CUDA);
  EXPECT_NE(nccl->comm_split, nullptr);
  EXPECT_NE(nccl->allreduce, nullptr);
  EXPECT_NE(nccl->reduce_scatter, nullptr);
  EXPECT_NE(nccl->alltoall, nullptr);
  // NCCL chooses its own algorithms: without the named entries the backend hands it no name and
  // its report says the transport chooses.
  EXPECT_EQ(nccl->collective_with, nullptr);
  EXPECT_EQ(nccl->allreduce_with, nullptr);
}

TEST(NcclPlugin, RefusesADeviceThisProcessCannotSeeNamingIt) {
  PluginRegistry registry({});
  testing::FileBootstrap bootstrap(testing::make_temp_directory());
  const int missing = visible_gpus() + 3;
  try {
    Communicator comm(registry.find("nccl"), one_rank(bootstrap, missing));
    FAIL() << "created a communicator on CUDA device " << missing;
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status(), DOMINO_ERR_INVALID);
    const std::string message = e.what();
    EXPECT_NE(message.find("CUDA device " + std::to_string(missing)), std::string::npos) << message;
    EXPECT_NE(message.find("nccl-unit"), std::string::npos) << message;
  }
}

TEST(NcclPlugin, OneRankAllReduceSplitAndBarrierOnTheDevice) {
  if (visible_gpus() == 0) GTEST_SKIP() << "no CUDA device here";
  PluginRegistry registry({});
  const domino_plugin_t* nccl = registry.find("nccl");
  testing::FileBootstrap bootstrap(testing::make_temp_directory());
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  domino_comm_config_t config = one_rank(bootstrap, 0);
  config.stream = stream;  // both communicators enqueue here, in order
  auto comm = std::make_unique<Communicator>(nccl, config);
  const std::vector<float> host = {1.5f, -2.0f, 4.0f};
  float* data = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&data), sizeof(float) * host.size()), cudaSuccess);
  cudaMemcpy(data, host.data(), sizeof(float) * host.size(), cudaMemcpyHostToDevice);
  domino_buffer_t buffer{data, host.size(), DOMINO_FLOAT32, 0};
  comm->collective(
      domino::make_call(domino::topology::Collective::kAllReduce, buffer, buffer, DOMINO_AVG));
  std::unique_ptr<Communicator> half = comm->split(0, 0, config);
  ASSERT_NE(half, nullptr);
  half->collective(
      domino::make_call(domino::topology::Collective::kAllReduce, buffer, buffer, DOMINO_SUM));
  {
    domino_buffer_t none{nullptr, 0, DOMINO_UINT8, -1};
    half->collective(domino::make_call(domino::topology::Collective::kBarrier, none, none));
  }  // host-blocking: everything before it on the stream is done
  ASSERT_EQ(cudaStreamQuery(stream), cudaSuccess);
  std::vector<float> out(host.size());
  cudaMemcpy(out.data(), data, sizeof(float) * out.size(), cudaMemcpyDeviceToHost);
  EXPECT_EQ(out, host);
  // NCCL has no bitwise reductions: a clear refusal, not a wrong answer.
  domino_buffer_t ints{data, 1, DOMINO_INT32, 0};
  EXPECT_THROW(comm->collective(domino::make_call(domino::topology::Collective::kAllReduce, ints,
                                                  ints, DOMINO_BXOR)),
               TransportError);
  half.reset();
  // Abort (the watchdog's way out) ends the communicator: later ops fail at once, naming why.
  EXPECT_TRUE(comm->abort());
  try {
    comm->collective(
        domino::make_call(domino::topology::Collective::kAllReduce, buffer, buffer, DOMINO_SUM));
    ADD_FAILURE() << "an aborted communicator ran an all-reduce";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status(), DOMINO_ERR_PEER);
    EXPECT_NE(std::string(e.what()).find("aborted"), std::string::npos) << e.what();
  }
  comm.reset();  // released while its stream still exists
  cudaFree(data);
  cudaStreamDestroy(stream);
}

TEST(NcclPlugin, EveryOpOfOneRankRunsThroughItsEntryAndANameIsRefused) {
  if (visible_gpus() == 0) GTEST_SKIP() << "no CUDA device here";
  PluginRegistry registry({});
  testing::FileBootstrap bootstrap(testing::make_temp_directory());
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  Communicator comm(registry.find("nccl"), one_rank(bootstrap, 0));
  const std::vector<float> host = {1.5f, -2.0f, 4.0f};
  float* in = nullptr;
  float* out = nullptr;
  const size_t bytes = sizeof(float) * host.size();
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&in), bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), bytes), cudaSuccess);
  cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice);
  domino_buffer_t send{in, host.size(), DOMINO_FLOAT32, 0};
  domino_buffer_t recv{out, host.size(), DOMINO_FLOAT32, 0};
  const uint64_t counts[1] = {host.size()};
  const uint64_t offsets[1] = {0};
  using topology::Collective;
  // Among one rank every op but the barrier leaves the input in the output.
  for (Collective op : topology::kCollectives) {
    cudaMemset(out, 0, bytes);
    domino_call_t call = make_call(op, send, recv, DOMINO_SUM, 0);
    if (op == Collective::kBroadcast) {
      cudaMemcpy(out, host.data(), bytes, cudaMemcpyHostToDevice);
    }
    call.send_counts = call.recv_counts = counts;
    call.send_offsets = call.recv_offsets = offsets;
    comm.collective(call);
    cudaDeviceSynchronize();
    if (op == Collective::kBarrier) continue;
    std::vector<float> got(host.size());
    cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost);
    EXPECT_EQ(got, host) << topology::collective_name(op);
  }
  // NCCL chooses its own algorithm: a name is refused before anything is enqueued.
  nccl::NcclCommunicator direct(one_rank(bootstrap, 0));
  try {
    direct.collective(make_call(Collective::kAllReduce, send, recv), "ring");
    ADD_FAILURE() << "NCCL took the name 'ring'";
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status(), DOMINO_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("has no algorithm 'ring'"), std::string::npos) << e.what();
  }
  cudaFree(in);
  cudaFree(out);
}

}  // namespace
}  // namespace domino
