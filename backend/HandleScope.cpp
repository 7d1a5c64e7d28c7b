#include "HandleScope.h"

namespace domino {

namespace {
thread_local HandleScope* t_innermost = nullptr;
}

HandleScope::HandleScope() : outer_(t_innermost) {
  t_innermost = this;
}

HandleScope::~HandleScope() {
  wait_all();
  t_innermost = outer_;
}

void HandleScope::record(const c10::intrusive_ptr<c10d::Work>& work) {
  if (t_innermost != nullptr) t_innermost->works_.push_back(work);
}

std::exception_ptr HandleScope::wait_all() noexcept {
  std::exception_ptr first;
  // Handles issued while waiting (by hooks) join the list; index so growth is safe.
  for (size_t i = 0; i < works_.size(); ++i) {
    try {
      works_[i]->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  works_.clear();
  return first;
}

void HandleScope::wait() {
  if (std::exception_ptr first = wait_all()) std::rethrow_exception(first);
}

}  // namespace domino
