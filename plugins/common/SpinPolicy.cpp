#include "SpinPolicy.h"

namespace domino {

namespace {
thread_local bool may_yield = false;
}  // namespace

bool spin_may_yield() {
  return may_yield;
}

SpinMayYield::SpinMayYield() : previous_(may_yield) {
  may_yield = true;
}

SpinMayYield::~SpinMayYield() {
  may_yield = previous_;
}

}  // namespace domino
