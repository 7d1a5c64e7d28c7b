// The split-rail (hierarchical) plans of RoutedComm: all-reduce by reduce-scatter inside the
// host, all-reduce of each rank's slice along its rail, all-gather inside the host; all-gather
// along the rail, then inside the host; reduce-scatter the reverse. Host memory of the router's
// rail_chunks goes through RailPipeline; one piece otherwise (and always on a device, whose
// communicators are stream-ordered).
#include <algorithm>

#include "RoutedComm.h"
#include "plugins/common/Dtype.h"

namespace domino {

namespace {
// A message of `count` elements cut into at most `chunks` pieces of `per` elements each, the
// last one shorter.
struct Cut {
  Cut(size_t count, size_t chunks_wanted)
      : per(std::max<size_t>(1, (count + std::max<size_t>(chunks_wanted, 1) - 1) /
                                    std::max<size_t>(chunks_wanted, 1))),
        chunks(count == 0 ? 0 : (count + per - 1) / per),
        count(count) {}
  size_t size(size_t c) const { return std::min(per, count - c * per); }
  size_t per;
  size_t chunks;
  size_t count;
};
}  // namespace

RailPipeline& RoutedComm::rail_pipeline() {
  if (!rail_pipeline_) rail_pipeline_ = std::make_unique<RailPipeline>(*rail_, rail_thread_);
  return *rail_pipeline_;
}

size_t RoutedComm::pipeline_chunks(const topology::Plan& plan, int device) {
  return device < 0 ? plan.chunks : 1;
}

void RoutedComm::permute_blocks(char* group_order, size_t group_stride, char* host_order,
                                size_t block_bytes, bool to_host_order, int device) {
  if (block_bytes == 0) return;
  const topology::GroupLayout& layout = router_.layout();
  const size_t hosts = layout.host_ranks.size();
  for (size_t h = 0; h < hosts; ++h) {
    const std::vector<int>& ranks = layout.host_ranks[h];
    for (size_t l = 0; l < ranks.size(); ++l) {
      char* in_group = group_order + static_cast<size_t>(ranks[l]) * group_stride;
      char* in_host = host_order + (l * hosts + h) * block_bytes;
      memory_->copy(to_host_order ? in_host : in_group, to_host_order ? in_group : in_host,
                    block_bytes, device);
    }
  }
}

void RoutedComm::allreduce_hierarchical(const topology::Plan& plan, domino_buffer_t& data,
                                        domino_redop_t op) {
  // The router chose the rail's algorithm for one chunk's slice; it goes down with each call.
  const std::string& rail_algorithm =
      plan.algorithm_of(topology::Level::kRail, topology::Collective::kAllReduce);
  if (!local_) {
    rail_->allreduce(data, data, op, rail_algorithm);
    return;
  }
  const size_t local_size = router_.layout().host_ranks.front().size();
  const size_t element = dtype_size(data.dtype);
  const size_t padded = (data.count + local_size - 1) / local_size * local_size;
  const size_t slice = padded / local_size;
  // Reduce-scatter needs equal slices: a message that does not divide goes through a padded
  // copy whose tail nobody reads.
  std::shared_ptr<void> padded_copy;
  domino_buffer_t whole = data;
  if (padded != data.count) {
    padded_copy = memory_->allocate(padded * element, data.device);
    if (data.count > 0)
      memory_->copy(padded_copy.get(), data.ptr, data.count * element, data.device);
    whole = {padded_copy.get(), padded, data.dtype, data.device};
  }
  const std::shared_ptr<void> part = memory_->allocate(slice * element, data.device);
  const Cut cut(slice, pipeline_chunks(plan, data.device));  // whole slices
  if (cut.chunks >= 2) {
    auto chunk = [&](size_t c) {
      return domino_buffer_t{static_cast<char*>(whole.ptr) + c * cut.per * local_size * element,
                             cut.size(c) * local_size, data.dtype, -1};
    };
    auto mine = [&](size_t c) {
      return domino_buffer_t{static_cast<char*>(part.get()) + c * cut.per * element, cut.size(c),
                             data.dtype, -1};
    };
    rail_pipeline().run(
        cut.chunks,
        [&](size_t c) {
          domino_buffer_t in = chunk(c), out = mine(c);
          local_->reduce_scatter(in, out, op);
        },
        [&](size_t c, Communicator& rail) {
          domino_buffer_t slice_c = mine(c);
          rail.allreduce(slice_c, slice_c, op, rail_algorithm);
        },
        [&](size_t c) {
          domino_buffer_t in = mine(c), out = chunk(c);
          local_->allgather(in, out);
        });
  } else {
    domino_buffer_t mine{part.get(), slice, data.dtype, data.device};
    local_->reduce_scatter(whole, mine, op);
    rail_->allreduce(mine, mine, op, rail_algorithm);
    local_->allgather(mine, whole);
  }
  if (padded_copy && data.count > 0) {
    memory_->copy(data.ptr, padded_copy.get(), data.count * element, data.device);
  }
}

void RoutedComm::allgather_hierarchical(const topology::Plan& plan, const domino_buffer_t& send,
                                        domino_buffer_t recv) {
  if (!local_) {  // one rank per host: the rail is the whole group, in group-rank order
    rail_->allgather(send, recv);
    return;
  }
  const topology::GroupLayout& layout = router_.layout();
  const size_t hosts = layout.host_ranks.size(), local = layout.host_ranks.front().size();
  const size_t element = dtype_size(send.dtype), block = send.count * element;
  const std::shared_ptr<void> rail_part = memory_->allocate(hosts * block, recv.device);
  const std::shared_ptr<void> host_part = memory_->allocate(local * hosts * block, recv.device);
  // Chunk c is the same piece of every rank's block: gathered along the rail, then inside the
  // host, then put in place.
  const Cut cut(send.count, pipeline_chunks(plan, recv.device));
  auto rail_blocks = [&](size_t c) {
    return domino_buffer_t{static_cast<char*>(rail_part.get()) + c * cut.per * hosts * element,
                           hosts * cut.size(c), send.dtype, recv.device};
  };
  auto host_blocks = [&](size_t c) {
    return domino_buffer_t{
        static_cast<char*>(host_part.get()) + c * cut.per * local * hosts * element,
        local * hosts * cut.size(c), send.dtype, recv.device};
  };
  auto gather_on_rail = [&](size_t c, Communicator& rail) {
    const domino_buffer_t mine{static_cast<char*>(send.ptr) + c * cut.per * element, cut.size(c),
                               send.dtype, send.device};
    domino_buffer_t out = rail_blocks(c);
    rail.allgather(mine, out);
  };
  auto gather_in_host = [&](size_t c) {
    domino_buffer_t in = rail_blocks(c), out = host_blocks(c);
    local_->allgather(in, out);
    permute_blocks(static_cast<char*>(recv.ptr) + c * cut.per * element, block,
                   static_cast<char*>(out.ptr), cut.size(c) * element, false, recv.device);
  };
  if (cut.chunks >= 2) {
    rail_pipeline().run(
        cut.chunks, [](size_t) {}, gather_on_rail, gather_in_host);
  } else if (cut.chunks == 1) {
    gather_on_rail(0, *rail_);
    gather_in_host(0);
  } else {  // nothing to gather; the steps still meet
    domino_buffer_t none = rail_blocks(0), none_out = host_blocks(0);
    rail_->allgather(send, none);
    local_->allgather(none, none_out);
  }
}

void RoutedComm::reduce_scatter_hierarchical(const topology::Plan& plan,
                                             const domino_buffer_t& send, domino_buffer_t recv,
                                             domino_redop_t op) {
  if (!local_) {
    rail_->reduce_scatter(send, recv, op);
    return;
  }
  const topology::GroupLayout& layout = router_.layout();
  const size_t hosts = layout.host_ranks.size(), local = layout.host_ranks.front().size();
  const size_t element = dtype_size(recv.dtype), block = recv.count * element;
  // AVG is a sum until the end: the steps would divide by their own sizes.
  const domino_redop_t step_op = op == DOMINO_AVG ? DOMINO_SUM : op;
  const std::shared_ptr<void> ordered = memory_->allocate(local * hosts * block, recv.device);
  const std::shared_ptr<void> host_sums = memory_->allocate(hosts * block, recv.device);
  // Chunk c is the same piece of every rank's block: put in host order, reduced inside the
  // host, then along the rail into this rank's piece.
  const Cut cut(recv.count, pipeline_chunks(plan, recv.device));
  auto ordered_blocks = [&](size_t c) {
    return domino_buffer_t{
        static_cast<char*>(ordered.get()) + c * cut.per * local * hosts * element,
        local * hosts * cut.size(c), recv.dtype, recv.device};
  };
  auto sums = [&](size_t c) {
    return domino_buffer_t{static_cast<char*>(host_sums.get()) + c * cut.per * hosts * element,
                           hosts * cut.size(c), recv.dtype, recv.device};
  };
  auto reduce_in_host = [&](size_t c) {
    domino_buffer_t in = ordered_blocks(c), out = sums(c);
    permute_blocks(static_cast<char*>(send.ptr) + c * cut.per * element, block,
                   static_cast<char*>(in.ptr), cut.size(c) * element, true, recv.device);
    local_->reduce_scatter(in, out, step_op);
  };
  auto reduce_on_rail = [&](size_t c, Communicator& rail) {
    domino_buffer_t in = sums(c);
    domino_buffer_t out{static_cast<char*>(recv.ptr) + c * cut.per * element, cut.size(c),
                        recv.dtype, recv.device};
    rail.reduce_scatter(in, out, step_op);
  };
  if (cut.chunks >= 2) {
    rail_pipeline().run(cut.chunks, reduce_in_host, reduce_on_rail, [](size_t) {});
  } else if (cut.chunks == 1) {
    reduce_in_host(0);
    reduce_on_rail(0, *rail_);
  } else {  // nothing to reduce; the steps still meet
    domino_buffer_t none = ordered_blocks(0), none_sums = sums(0);
    local_->reduce_scatter(none, none_sums, step_op);
    rail_->reduce_scatter(none_sums, recv, step_op);
  }
  if (op == DOMINO_AVG) memory_->divide(recv, size_);
}

}  // namespace domino
