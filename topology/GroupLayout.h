// Where the ranks of a group sit: which host each is on (from host identities every rank
// publishes), local ranks and sizes, and whether the layout is uniform. Torch-free.
#pragma once

#include <string>
#include <vector>

namespace domino::topology {

struct GroupLayout {
  std::vector<std::string> hosts;            // in order of first appearance
  std::vector<std::vector<int>> host_ranks;  // group ranks per host, ascending
  std::vector<int> host_of_rank;
  std::vector<int> local_rank;
  bool uniform = true;  // every host has the same number of ranks

  int local_size(int rank) const { return static_cast<int>(host_ranks[host_of_rank[rank]].size()); }
  bool single_host() const { return hosts.size() <= 1; }
};

// host_ids[r] is rank r's host identity.
GroupLayout layout_from_host_ids(const std::vector<std::string>& host_ids);

// This process's host identity: override when non-empty (DOMINO_HOST_ID), else hostname plus
// boot id, so two containers sharing a hostname on different machines stay apart.
std::string local_host_id(const std::string& override_id);

}  // namespace domino::topology
