// Measures the inter-host link the router models: ping-pong between two ranks on different
// hosts over the inter-host transport, small messages for latency and 1 MiB ones for bandwidth.
// Torch-free.
#pragma once

#include "plugins/registry/Communicator.h"
#include "topology/CostModel.h"

namespace domino {

// comm has exactly two ranks; rank 0 of it starts each round trip. Both ranks must call it.
// Returns the cost marked "measured"; throws TransportError if the transport cannot do it.
topology::LinkCost probe_link(Communicator& comm, int comm_rank);

}  // namespace domino
