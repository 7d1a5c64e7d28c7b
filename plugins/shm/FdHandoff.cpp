#include "FdHandoff.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "plugins/common/TransportError.h"

namespace domino::shm {

namespace {
constexpr size_t kTokenBytes = 16;

[[noreturn]] void fail(domino_status_t status, const std::string& what) {
  throw TransportError(status, "shared memory handoff: " + what);
}
[[noreturn]] void fail_errno(const std::string& what) {
  fail(DOMINO_ERR_SYSTEM, what + ": " + std::strerror(errno));
}

std::string random_hex(size_t bytes) {
  unsigned char raw[64];
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(raw + got, bytes - got, 0);
    if (n < 0 && errno != EINTR) fail_errno("getrandom");
    if (n > 0) got += static_cast<size_t>(n);
  }
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    out += digits[raw[i] >> 4];
    out += digits[raw[i] & 15];
  }
  return out;
}

sockaddr_un abstract_address(const std::string& name, socklen_t* length) {
  sockaddr_un addr{};
  // A client's name comes from the store: one longer than sun_path would overrun it.
  if (name.empty() || name.size() > sizeof addr.sun_path - 1) {
    fail(DOMINO_ERR_SYSTEM, "rank 0's ticket names a socket of " + std::to_string(name.size()) +
                                " bytes, where names are 1 to " +
                                std::to_string(sizeof addr.sun_path - 1) +
                                "; the store's shm/ticket was not written by this build (mixed "
                                "torch-domino versions, or another job using the group's keys). "
                                "Create the group again with one build on every rank.");
  }
  addr.sun_family = AF_UNIX;
  addr.sun_path[0] = '\0';  // abstract namespace: no file, gone with the socket
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

int millis_left(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1000));
}

bool wait_readable(int fd, Deadline deadline) {
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, millis_left(deadline));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) fail_errno("poll");
  }
  return false;
}

bool read_exact(int fd, char* data, size_t size, Deadline deadline) {
  size_t got = 0;
  while (got < size) {
    if (!wait_readable(fd, deadline)) return false;
    const ssize_t n = recv(fd, data + got, size - got, 0);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

bool peer_is_same_user(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == getuid();
}

void send_fd(int connection, int fd) {
  char byte = 'F';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  if (sendmsg(connection, &msg, MSG_NOSIGNAL) != 1) fail_errno("sendmsg of the segment");
}
}  // namespace

FdServer::FdServer() {
  const std::string name = "domino-" + random_hex(kTokenBytes);
  token_ = random_hex(kTokenBytes);
  ticket_ = name + "/" + token_;
  listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener_ < 0) fail_errno("socket");
  socklen_t len = 0;
  const sockaddr_un addr = abstract_address(name, &len);
  if (bind(listener_, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    close(listener_);
    errno = err;
    fail_errno("bind");
  }
  if (listen(listener_, 64) != 0) {
    const int err = errno;
    close(listener_);
    errno = err;
    fail_errno("listen");
  }
}

FdServer::~FdServer() {
  if (listener_ >= 0) close(listener_);
}

void FdServer::serve(int fd, int peers, Deadline deadline) {
  int served = 0;
  while (served < peers) {
    if (!wait_readable(listener_, deadline)) {
      fail(DOMINO_ERR_TIMEOUT, std::to_string(served) + " of " + std::to_string(peers) +
                                   " peer rank(s) attached to the group's shared memory before "
                                   "the timeout; the others never arrived");
    }
    const int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      fail_errno("accept");
    }
    std::string presented(token_.size(), '\0');
    const bool admitted = peer_is_same_user(connection) &&
                          read_exact(connection, presented.data(), presented.size(), deadline) &&
                          presented == token_;
    if (admitted) {
      send_fd(connection, fd);
      ++served;
    }
    close(connection);
  }
}

int receive_fd(const std::string& ticket, Deadline deadline) {
  const auto slash = ticket.find('/');
  if (slash == std::string::npos) fail(DOMINO_ERR_SYSTEM, "malformed ticket '" + ticket + "'");
  const std::string name = ticket.substr(0, slash);
  const std::string token = ticket.substr(slash + 1);
  socklen_t len = 0;
  const sockaddr_un addr = abstract_address(name, &len);
  int connection = -1;
  // The server listens before it publishes the ticket, but retry briefly in case of backlog.
  while (true) {
    connection = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connection < 0) fail_errno("socket");
    if (connect(connection, reinterpret_cast<const sockaddr*>(&addr), len) == 0) break;
    const int err = errno;
    close(connection);
    if (std::chrono::steady_clock::now() >= deadline) {
      errno = err;
      fail_errno("connect to the group's rank 0 (is it in another network namespace?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (send(connection, token.data(), token.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(token.size())) {
    close(connection);
    fail_errno("send of the token");
  }
  if (!wait_readable(connection, deadline)) {
    close(connection);
    fail(DOMINO_ERR_TIMEOUT, "rank 0 did not hand over the shared memory before the timeout");
  }
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(connection, &msg, MSG_CMSG_CLOEXEC);
  close(connection);
  cmsghdr* cmsg = n == 1 ? CMSG_FIRSTHDR(&msg) : nullptr;
  if (cmsg == nullptr || cmsg->cmsg_type != SCM_RIGHTS) {
    fail(DOMINO_ERR_SYSTEM, "rank 0 refused or closed the handoff (token rejected?)");
  }
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
  return fd;
}

}  // namespace domino::shm
