// Runs a function as N real processes (fork), the way ranks of one host run, and reports what
// each one said. A rank that hangs is killed after a deadline so a test fails, never hangs.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace domino::testing {

struct RankOutcome {
  int exit_code = -1;  // -1: killed or crashed
  std::string message;
};

// body returns the text the rank reports ("" for success is conventional).
inline std::vector<RankOutcome> fork_ranks(int ranks, const std::function<std::string(int)>& body,
                                           std::chrono::seconds limit = std::chrono::seconds(60)) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (int r = 0; r < ranks; ++r) {
    int fds[2];
    if (pipe(fds) != 0) return {};
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      std::string said;
      int code = 0;
      try {
        said = body(r);
      } catch (const std::exception& e) {
        said = std::string("exception: ") + e.what();
        code = 3;
      }
      (void)!write(fds[1], said.data(), said.size());
      close(fds[1]);
      _exit(code);
    }
    close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<RankOutcome> outcomes(static_cast<size_t>(ranks));
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int r = 0; r < ranks; ++r) {
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &status, 0);
        outcomes[r].message = "killed: did not finish in time";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (WIFEXITED(status)) outcomes[r].exit_code = WEXITSTATUS(status);
    char buffer[8192];
    ssize_t n;
    while ((n = read(pipes[r], buffer, sizeof buffer)) > 0)
      outcomes[r].message.append(buffer, static_cast<size_t>(n));
    close(pipes[r]);
  }
  return outcomes;
}

}  // namespace domino::testing
