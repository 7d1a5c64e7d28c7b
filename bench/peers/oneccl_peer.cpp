// oneCCL's C++ API as a bench peer: a shared library that bench/peers/dtype_bench.py loads into
// its ranks (ctypes), so oneCCL's all-reduce is timed in the same processes and batches as
// domino's. Built by bench/peers/setup.sh against the oneccl-devel wheel's CPU-only static
// library; nothing of it enters torch-domino's library or install.
#include <oneapi/ccl.hpp>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

namespace {

std::shared_ptr<ccl::kvs> store;
std::unique_ptr<ccl::communicator> comm;

// The codes dtype_bench.py passes.
bool datatype_of(int code, ccl::datatype& out) {
  switch (code) {
    case 0:
      out = ccl::datatype::float32;
      return true;
    case 1:
      out = ccl::datatype::bfloat16;
      return true;
    case 2:
      out = ccl::datatype::float16;
      return true;
    default:
      return false;
  }
}

int report(const char* what, const std::exception& e) {
  std::fprintf(stderr, "oneccl_peer %s: %s\n", what, e.what());
  return -1;
}

}  // namespace

// Rank 0 creates the key-value store the others join; its address travels out of band.
extern "C" int oneccl_peer_main_address(char* out, int capacity) {
  try {
    ccl::init();
    store = ccl::create_main_kvs();
    const ccl::kvs::address_type address = store->get_address();
    if (static_cast<int>(address.size()) > capacity) return -1;
    std::memcpy(out, address.data(), address.size());
    return static_cast<int>(address.size());
  } catch (const std::exception& e) {
    return report("main_address", e);
  }
}

extern "C" int oneccl_peer_connect(int rank, int world, const char* address, int length) {
  try {
    if (!store) {
      ccl::init();
      ccl::kvs::address_type joined{};
      if (length < 0 || static_cast<size_t>(length) > joined.size()) return -1;
      std::memcpy(joined.data(), address, static_cast<size_t>(length));
      store = ccl::create_kvs(joined);
    }
    comm = std::make_unique<ccl::communicator>(ccl::create_communicator(world, rank, store));
    return 0;
  } catch (const std::exception& e) {
    return report("connect", e);
  }
}

extern "C" int oneccl_peer_all_reduce(void* buffer, size_t count, int dtype_code) {
  ccl::datatype dtype{};
  if (!comm || !datatype_of(dtype_code, dtype)) return -1;
  try {
    ccl::allreduce(buffer, buffer, count, dtype, ccl::reduction::sum, *comm).wait();
    return 0;
  } catch (const std::exception& e) {
    return report("all_reduce", e);
  }
}

// The communicator must go before the process exits: oneCCL's own teardown at exit faults if
// one is still alive.
extern "C" void oneccl_peer_close() {
  comm.reset();
  store.reset();
}
