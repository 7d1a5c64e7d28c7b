// The narrow interface the shared collective algorithms run over: one collective's messages to
// and from single peers. A transport posts them and completes them together in wait(), so a rank
// sends to one peer while it receives from another (rings, pairwise exchanges) and neither side
// blocks the other. Messages between two ranks match in the order they were posted. Gloo's pair
// and UCC's p2p layer draw the same line; transports add only their native collectives on top.
#pragma once

#include <cstddef>
#include <string>

namespace domino::algorithms {

class PeerLinks {
 public:
  virtual ~PeerLinks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The buffer must stay valid until wait() returns.
  virtual void post_send(int peer, const void* data, size_t bytes) = 0;
  virtual void post_recv(int peer, void* data, size_t bytes) = 0;
  // Completes everything posted since the last wait; throws TransportError naming the peers at
  // fault (timeout, size disagreement, a dead peer).
  virtual void wait() = 0;
  // "<transport> <op> on group '<name>'", to begin the algorithms' own messages.
  virtual std::string where() const = 0;

  // Sends to `to` and receives from `from` at once; either may be -1 to skip that side.
  void exchange(int to, const void* out, size_t out_bytes, int from, void* in, size_t in_bytes) {
    if (from >= 0) post_recv(from, in, in_bytes);
    if (to >= 0) post_send(to, out, out_bytes);
    wait();
  }
};

}  // namespace domino::algorithms
