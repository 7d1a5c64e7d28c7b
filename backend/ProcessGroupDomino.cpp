#include "ProcessGroupDomino.h"

#include <c10/util/Exception.h>

#include "StoreBootstrap.h"
#include "TensorBuffer.h"
#include "Work.h"
#include "config/Log.h"
#include "engine/ProgressLane.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/TransportError.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginRegistry.h"

namespace domino {

namespace {
constexpr uint64_t kDirectOnlyBytes = ~0ull;
constexpr uint64_t kAlwaysChunked = 1;

std::exception_ptr as_backend_error(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

domino_redop_t to_redop(const c10d::ReduceOp& op, const std::string& where) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return DOMINO_SUM;
    case c10d::ReduceOp::AVG:
      return DOMINO_AVG;
    case c10d::ReduceOp::PRODUCT:
      return DOMINO_PRODUCT;
    case c10d::ReduceOp::MIN:
      return DOMINO_MIN;
    case c10d::ReduceOp::MAX:
      return DOMINO_MAX;
    case c10d::ReduceOp::BAND:
      return DOMINO_BAND;
    case c10d::ReduceOp::BOR:
      return DOMINO_BOR;
    case c10d::ReduceOp::BXOR:
      return DOMINO_BXOR;
    default:
      TORCH_CHECK(false, where, ": reduce op ", static_cast<int>(op.op_),
                  " (PREMUL_SUM or unknown) is not supported by domino; use SUM, AVG, PRODUCT, "
                  "MIN, MAX, BAND, BOR or BXOR");
  }
}
}  // namespace

ProcessGroupDomino::ProcessGroupDomino(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size, c10::intrusive_ptr<Options> options)
    : c10d::Backend(rank, size), options_(std::move(options)) {
  ParsedSettings parsed;
  try {
    parsed = parse_settings(domino_environment());
  } catch (const ConfigError& e) {
    TORCH_CHECK_VALUE(false, "domino: init of ", label(), " failed: ", e.what());
  }
  settings_ = parsed.settings;
  set_log_level(settings_.log_level);
  for (const std::string& warning : parsed.warnings) log_line(LogLevel::kWarn, rank, warning);

  try {
    registry_ = std::make_unique<PluginRegistry>(settings_.plugin_path);
    const std::string intra =
        settings_.intra_transport == "auto" ? std::string("shm") : settings_.intra_transport;
    const domino_plugin_v1_t* plugin = registry_->find(intra);
    if (plugin == nullptr) {
      std::string known;
      for (const auto& name : registry_->names()) known += (known.empty() ? "" : ", ") + name;
      TORCH_CHECK_VALUE(false, "domino: DOMINO_INTRA_TRANSPORT='", intra,
                        "' names no loaded transport; accepted values: auto, ", known,
                        ". Fix the name or add its plugin directory to DOMINO_PLUGIN_PATH.");
    }
    if (settings_.inter_transport != "auto") {
      TORCH_CHECK_VALUE(registry_->find(settings_.inter_transport) != nullptr,
                        "domino: DOMINO_INTER_TRANSPORT='", settings_.inter_transport,
                        "' names no loaded transport; accepted values: auto, or a plugin on "
                        "DOMINO_PLUGIN_PATH.");
    }
    bootstrap_ = std::make_unique<StoreBootstrap>(store, "domino/intra/");
    const std::vector<int64_t> global_ranks = [&] {
      std::vector<int64_t> out(options_->global_ranks_in_group.begin(),
                               options_->global_ranks_in_group.end());
      if (out.size() != static_cast<size_t>(size)) {
        out.resize(static_cast<size_t>(size));
        for (int i = 0; i < size; ++i) out[static_cast<size_t>(i)] = i;
      }
      return out;
    }();
    const std::string group_name = options_->group_name.empty() ? "default" : options_->group_name;
    domino_comm_config_t config{};
    config.rank = rank;
    config.size = size;
    config.global_ranks = global_ranks.data();
    config.group_name = group_name.c_str();
    config.timeout_ms = options_->timeout.count();
    config.workspace_bytes = settings_.shm_bytes;
    config.chunk_bytes = settings_.chunk_bytes;
    config.small_message_bytes =
        settings_.algorithm == IntraAlgorithm::kDirect                  ? kDirectOnlyBytes
        : settings_.algorithm == IntraAlgorithm::kReduceScatterAllGather ? kAlwaysChunked
                                                                         : 0;
    config.bootstrap = bootstrap_->table();
    intra_ = std::make_unique<Communicator>(plugin, config);
  } catch (const TransportError& e) {
    C10_THROW_ERROR(DistBackendError, std::string("domino: init of ") + label() + " failed: " + e.what());
  }
  lane_ = std::make_unique<ProgressLane>();
  log_line(LogLevel::kInfo, rank,
           label() + " ready: intra-host transport " + intra_->transport());
}

ProcessGroupDomino::~ProcessGroupDomino() { shutdown(); }

void ProcessGroupDomino::shutdown() {
  lane_.reset();
  intra_.reset();
  bootstrap_.reset();
}

const char* ProcessGroupDomino::intra_transport() const {
  return intra_ != nullptr ? intra_->transport() : "none";
}

std::string ProcessGroupDomino::label() const {
  return "group '" + (options_->group_name.empty() ? std::string("default") : options_->group_name) +
         "' (rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  const std::string where = "domino allreduce on " + label();
  TORCH_CHECK(tensors.size() == 1, where, ": expected exactly one tensor, got ", tensors.size());
  TORCH_CHECK(lane_ != nullptr, where, ": the process group was shut down");
  const domino_redop_t op = to_redop(opts.reduceOp, where);
  const domino_dtype_t dtype = to_domino_dtype(tensors[0].scalar_type(), where);
  const std::string unsupported = reduction_unsupported_reason(dtype, op);
  TORCH_CHECK(unsupported.empty(), where, ": ", unsupported);

  auto staged = std::make_shared<StagedTensor>(tensors[0]);
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::ALLREDUCE, tensors);
  ++sequence_;
  lane_->submit([this, work, staged, op] {
    try {
      domino_buffer_t buffer = staged->buffer();
      intra_->allreduce(buffer, buffer, op);
      staged->publish();
      work->complete();
    } catch (const std::exception& e) {
      work->fail(as_backend_error(std::string("domino: ") + e.what()));
    }
  });
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::barrier(const c10d::BarrierOptions&) {
  TORCH_CHECK(lane_ != nullptr, "domino barrier on ", label(), ": the process group was shut down");
  auto work = c10::make_intrusive<Work>(rank_, c10d::OpType::BARRIER, std::vector<at::Tensor>{});
  ++sequence_;
  lane_->submit([this, work] {
    try {
      intra_->barrier();
      work->complete();
    } catch (const std::exception& e) {
      work->fail(as_backend_error(std::string("domino: ") + e.what()));
    }
  });
  return work;
}

}  // namespace domino
