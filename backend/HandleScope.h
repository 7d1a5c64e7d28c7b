// Collects every Work issued on a domino group by this thread while the scope lives, and keeps
// them (and so their tensors) alive until waited. Scopes nest: a Work belongs to the innermost.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <vector>

namespace domino {

class HandleScope {
 public:
  HandleScope();
  HandleScope(const HandleScope&) = delete;
  HandleScope& operator=(const HandleScope&) = delete;
  // Waits for every handle; errors are not thrown from here (call wait() to see them).
  ~HandleScope();

  // Waits for every handle collected so far, then throws the first error, if any.
  void wait();
  size_t size() const { return works_.size(); }

  // Adds work to the innermost scope on this thread; no-op outside any scope.
  static void record(const c10::intrusive_ptr<c10d::Work>& work);

 private:
  // Waits all, returning the first error instead of throwing it.
  std::exception_ptr wait_all() noexcept;

  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
  HandleScope* outer_;
};

}  // namespace domino
