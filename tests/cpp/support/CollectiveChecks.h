// Every collective of a communicator against values computed locally: the shared check of each
// transport's unit tests (sizes 0, 1 and large, every root, uneven all-to-all).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "domino/plugin.h"

namespace domino::testing {

// value of element i contributed by rank r
inline int64_t v(int r, size_t i) {
  return static_cast<int64_t>(r + 1) * 1000 + static_cast<int64_t>(i % 997);
}

inline domino_buffer_t buf(std::vector<int64_t>& data) {
  return {data.data(), data.size(), DOMINO_INT64, -1};
}

inline std::string expect_eq(const std::vector<int64_t>& got, const std::vector<int64_t>& want,
                             const char* what) {
  if (got.size() != want.size()) return std::string(what) + ": size differs";
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      return std::string(what) + ": element " + std::to_string(i) + " is " +
             std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
    }
  }
  return "";
}

// Every reduction an all-reduce algorithm must get right, sizes 0 to 100003, and AVG of floats
// leaving the same bits on every rank.
template <class Comm>
std::string check_allreduce(int rank, int size, Comm& comm) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{5000}, size_t{100003}}) {
    std::vector<int64_t> mine(n), want(n);
    for (size_t i = 0; i < n; ++i) mine[i] = v(rank, i);
    for (domino_redop_t op : {DOMINO_SUM, DOMINO_MAX, DOMINO_BXOR}) {
      std::vector<int64_t> out(n, -1);
      comm.allreduce(buf(mine), buf(out), op);
      for (size_t i = 0; i < n; ++i) {
        int64_t acc = v(0, i);
        for (int r = 1; r < size; ++r) {
          acc = op == DOMINO_SUM   ? acc + v(r, i)
                : op == DOMINO_MAX ? std::max(acc, v(r, i))
                                   : acc ^ v(r, i);
        }
        want[i] = acc;
      }
      if (auto e = expect_eq(out, want, "allreduce"); !e.empty()) return e;
    }
    // AVG of floats, in place; every rank must hold the same bits.
    std::vector<float> f(n);
    for (size_t i = 0; i < n; ++i) f[i] = 0.1f * static_cast<float>(rank + 1) + 1e-3f * (i % 31);
    domino_buffer_t fb{f.data(), n, DOMINO_FLOAT32, -1};
    comm.allreduce(fb, fb, DOMINO_AVG);
    for (size_t i = 0; i < n; ++i) {
      const double expected = 0.1 * (size + 1) / 2.0 + 1e-3 * static_cast<double>(i % 31);
      if (std::fabs(f[i] - expected) > 1e-5) {
        return "AVG element " + std::to_string(i) + " is " + std::to_string(f[i]) + ", expected " +
               std::to_string(expected);
      }
    }
    std::vector<float> everyone(n * static_cast<size_t>(size));
    domino_buffer_t eb{everyone.data(), everyone.size(), DOMINO_FLOAT32, -1};
    comm.allgather(fb, eb);
    for (int r = 0; r < size; ++r) {
      if (n > 0 && std::memcmp(everyone.data() + static_cast<size_t>(r) * n, f.data(),
                               n * sizeof(float)) != 0) {
        return "rank " + std::to_string(r) + " holds different bits of the AVG result";
      }
    }
  }
  return "";
}

template <class Comm>
std::string run_all_collectives(int rank, int size, Comm& comm) {
  const size_t sizes[] = {0, 1, 5000, 40000};
  for (size_t n : sizes) {
    std::vector<int64_t> mine(n), want(n);
    for (size_t i = 0; i < n; ++i) mine[i] = v(rank, i);

    // reduce to each root, MAX
    for (int root = 0; root < size; ++root) {
      std::vector<int64_t> out(n, -1);
      comm.reduce(buf(mine), buf(out), DOMINO_MAX, root);
      if (rank == root) {
        for (size_t i = 0; i < n; ++i) want[i] = v(size - 1, i);
        if (auto e = expect_eq(out, want, "reduce"); !e.empty()) return e;
      }
    }
    // broadcast from the last rank
    std::vector<int64_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = rank == size - 1 ? v(size - 1, i) : -7;
    comm.broadcast(buf(b), size - 1);
    for (size_t i = 0; i < n; ++i) want[i] = v(size - 1, i);
    if (auto e = expect_eq(b, want, "broadcast"); !e.empty()) return e;

    // allgather
    std::vector<int64_t> gathered(n * static_cast<size_t>(size), -1),
        all(n * static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < n; ++i) all[static_cast<size_t>(r) * n + i] = v(r, i);
    }
    comm.allgather(buf(mine), buf(gathered));
    if (auto e = expect_eq(gathered, all, "allgather"); !e.empty()) return e;

    // gather to rank 0
    std::vector<int64_t> at_root(rank == 0 ? n * static_cast<size_t>(size) : 0, -1);
    comm.gather(buf(mine), buf(at_root), 0);
    if (rank == 0) {
      if (auto e = expect_eq(at_root, all, "gather"); !e.empty()) return e;
    }

    // scatter from rank 0 of "all": rank r gets block r
    std::vector<int64_t> piece(n, -1), src = rank == 0 ? all : std::vector<int64_t>{};
    comm.scatter(buf(src), buf(piece), 0);
    for (size_t i = 0; i < n; ++i) want[i] = v(rank, i);
    if (auto e = expect_eq(piece, want, "scatter"); !e.empty()) return e;

    // reduce_scatter SUM: input block r of rank q holds v(q, i) + r
    std::vector<int64_t> rs_in(n * static_cast<size_t>(size)), rs_out(n, -1);
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < n; ++i) rs_in[static_cast<size_t>(r) * n + i] = v(rank, i) + r;
    }
    comm.reduce_scatter(buf(rs_in), buf(rs_out), DOMINO_SUM);
    for (size_t i = 0; i < n; ++i) {
      int64_t s = 0;
      for (int q = 0; q < size; ++q) s += v(q, i) + rank;
      want[i] = s;
    }
    if (auto e = expect_eq(rs_out, want, "reduce_scatter"); !e.empty()) return e;
  }

  // alltoall with uneven splits: rank s sends (s + d) * 3000 + d elements to d.
  const auto p = static_cast<size_t>(size);
  auto amount = [](int s, int d) { return static_cast<uint64_t>((s + d) * 3000 + d); };
  std::vector<uint64_t> sc(p), so(p), rc(p), ro(p);
  uint64_t total_send = 0, total_recv = 0;
  for (int d = 0; d < size; ++d) {
    sc[d] = amount(rank, d);
    so[d] = total_send;
    total_send += sc[d];
    rc[d] = amount(d, rank);
    ro[d] = total_recv;
    total_recv += rc[d];
  }
  std::vector<int64_t> a_in(total_send), a_out(total_recv, -1), a_want(total_recv);
  for (int d = 0; d < size; ++d) {
    for (uint64_t i = 0; i < sc[d]; ++i)
      a_in[so[d] + i] = rank * 100000000LL + d * 1000000LL + static_cast<int64_t>(i);
  }
  for (int s = 0; s < size; ++s) {
    for (uint64_t i = 0; i < rc[s]; ++i)
      a_want[ro[s] + i] = s * 100000000LL + rank * 1000000LL + static_cast<int64_t>(i);
  }
  comm.alltoall(buf(a_in), sc.data(), so.data(), buf(a_out), rc.data(), ro.data());
  if (auto e = expect_eq(a_out, a_want, "alltoall"); !e.empty()) return e;
  comm.barrier();
  return "";
}

}  // namespace domino::testing
