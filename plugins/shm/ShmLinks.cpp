// The shared-memory transport's entries for the plugin ABI's links: the backend's shared
// algorithms (plugins/algorithms) run over them, so an algorithm written once over PeerLinks
// runs inside a host as well. The messages go through the segment's second set of rings
// (SegmentLinks), never mixed with send/recv's.
#include "ShmCommunicator.h"
#include "plugins/common/TransportError.h"

namespace domino::shm {

template <class Call>
void ShmCommunicator::on_links(Call&& call) {
  try {
    call();
  } catch (const TransportError& e) {
    if (e.status() == DOMINO_ERR_TIMEOUT || e.status() == DOMINO_ERR_PEER) {
      if (broken_reason_.empty()) broken_reason_ = e.what();
    }
    links_->drop();
    throw;
  } catch (...) {
    links_->drop();  // the ABI: any failed link call drops what was posted
    throw;
  }
}

void ShmCommunicator::link_send(const void* data, size_t bytes, int peer) {
  on_links([&] {
    check_usable("link_send");
    links_->post_send(peer, data, bytes);
  });
}

void ShmCommunicator::link_recv(void* data, size_t bytes, int peer) {
  on_links([&] {
    check_usable("link_recv");
    links_->post_recv(peer, data, bytes);
  });
}

void ShmCommunicator::link_wait() {
  on_links([&] {
    check_usable("link_wait");
    // A step boundary of the algorithm: a higher-priority op of this process may go first.
    yield_to_priority(deadline());
    links_->wait();
  });
}

}  // namespace domino::shm
