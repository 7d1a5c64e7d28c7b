// Hands a file descriptor to the other ranks of a group over an abstract-namespace Unix socket.
// The ticket (socket name plus a secret token) travels only through the group's own store, and
// the server checks the token and the peer's uid, so another job on the host cannot attach.
#pragma once

#include <chrono>
#include <string>

namespace domino::shm {

using Deadline = std::chrono::steady_clock::time_point;

class FdServer {
 public:
  FdServer();
  FdServer(const FdServer&) = delete;
  FdServer& operator=(const FdServer&) = delete;
  ~FdServer();

  // What a client needs to connect; publish it through the group's store only.
  const std::string& ticket() const { return ticket_; }

  // Gives fd to `peers` clients presenting this server's token. Throws at the deadline, saying
  // how many arrived.
  void serve(int fd, int peers, Deadline deadline);

 private:
  int listener_ = -1;
  std::string token_;
  std::string ticket_;
};

// Connects to the server named by ticket and returns the descriptor it hands over.
int receive_fd(const std::string& ticket, Deadline deadline);

}  // namespace domino::shm
