// Measures the links the router models: between two ranks on different hosts over the
// inter-host transport, or on one host over the intra-host one; small messages for latency and
// 1 MiB ones for bandwidth. Torch-free.
#pragma once

#include "plugins/registry/Communicator.h"
#include "topology/CostModel.h"

namespace domino {

// comm has exactly two ranks; rank 0 of it starts each round trip. Both ranks must call it.
// Returns the cost marked "measured"; throws TransportError if the transport cannot do it.
topology::TransportCost probe_transport(Communicator& comm, int comm_rank);

// The same for the intra-host transport, timed the way the router uses it: its model prices the
// in-host reduce-scatter and all-gather steps, whose large messages take paths (single-copy
// reads) that a ping-pong of sends does not, so this times two-rank all-reduces (2 latencies and
// one message of bandwidth each).
topology::TransportCost probe_transport_by_collectives(Communicator& comm);

}  // namespace domino
