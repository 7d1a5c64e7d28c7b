// torch_domino._C: the backend class for torch.distributed's creator function, plus the
// overlap layers (OverlapBindings.cpp).
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>
#include <optional>

#include "FlightRecorder.h"
#include "HandleScope.h"
#include "OverlapBindings.h"
#include "PriorityGuard.h"
#include "ProcessGroupDominoImpl.h"
#include "Work.h"
#include "config/SettingDeclarations.h"
#include "config/WireSettings.h"
#include "engine/PlanTrial.h"
#include "plugins/common/Reduction.h"
#include "topology/AlgorithmTable.h"

namespace py = pybind11;

namespace {
py::dict host_dict(const domino::topology::HostTopology& host) {
  auto devices = [](const std::vector<domino::topology::Device>& list) {
    py::list out;
    for (const auto& d : list) {
      py::dict entry;
      entry["name"] = d.name;
      entry["pci_busid"] = d.pci_busid;
      entry["numa"] = d.numa;
      if (!d.closest_nic.empty()) entry["closest_nic"] = d.closest_nic;
      out.append(entry);
    }
    return out;
  };
  py::dict out;
  out["source"] = host.source;
  out["packages"] = host.packages;
  out["cores"] = host.cores;
  out["processing_units"] = host.processing_units;
  py::list numa;
  for (const auto& n : host.numa_nodes) {
    py::dict entry;
    entry["os_index"] = n.os_index;
    entry["cpus"] = n.cpus;
    entry["memory_bytes"] = n.memory_bytes;
    numa.append(entry);
  }
  out["numa_nodes"] = numa;
  out["gpus"] = devices(host.gpus);
  out["nics"] = devices(host.nics);
  return out;
}

py::dict link_dict(const domino::topology::TransportCost& c) {
  py::dict out;
  out["latency_us"] = c.latency_us;
  out["gbytes_per_s"] = c.gbytes_per_s;
  out["source"] = c.source;
  return out;
}

// The router's inputs and, for every op at each size, the plan it takes and the alternatives
// with their predicted times.
py::dict routing_dict(const domino::ProcessGroupDomino& pg, const std::vector<size_t>& sizes) {
  namespace topo = domino::topology;
  const topo::Router& router = pg.impl().router();
  py::dict out;
  out["cost_model"] = py::dict(py::arg("intra") = link_dict(router.costs().intra),
                               py::arg("inter") = link_dict(router.costs().inter));
  out["inter_small_message_bytes"] = router.inter_small_message_bytes();
  // Small all-reduces across hosts are decided by the group's own trial (engine/PlanTrial.h).
  out["measured_up_to_bytes"] =
      router.multi_host() && router.forced_shape() == nullptr ? domino::kPlanTrialMaxBytes : 0;
  py::list plans;
  for (const topo::RoutingRow& row : pg.impl().routing_report(sizes)) {
    py::dict entry;
    entry["op"] = topo::collective_name(row.op);
    entry["bytes"] = row.bytes;
    entry["plan"] = std::string(row.chosen.shape);
    entry["steps"] = row.chosen.describe();
    entry["algorithm"] = row.chosen.inter_algorithm();
    entry["chunks"] = row.chosen.chunks;
    entry["predicted_us"] = row.chosen.predicted_us;
    entry["forced"] = row.chosen.forced;
    py::dict alternatives;
    for (const topo::Plan& p : row.alternatives) {
      alternatives[py::str(std::string(p.shape))] = p.predicted_us;
    }
    entry["alternatives_us"] = alternatives;
    plans.append(entry);
  }
  out["plans"] = plans;
  return out;
}

// Python context managers open and close these explicitly: the C++ objects are bound to the
// thread's scope stack, so their lifetime must not depend on the garbage collector.
class PyPriorityGuard {
 public:
  explicit PyPriorityGuard(const std::string& level) {
    try {
      guard_.emplace(domino::parse_priority(level));
    } catch (const domino::ConfigError& e) {
      throw py::value_error(std::string("torch_domino.priority: ") + e.what());
    }
  }
  void release() { guard_.reset(); }

 private:
  std::optional<domino::PriorityGuard> guard_;
};

class PyHandleScope {
 public:
  void open() { scope_.emplace(); }
  void wait() {
    if (scope_) scope_->wait();
  }
  size_t size() const { return scope_ ? scope_->size() : 0; }
  // Waits for every handle; raise=false drops their errors (another exception is in flight).
  void close(bool raise) {
    if (!scope_) return;
    std::exception_ptr error;
    try {
      scope_->wait();
    } catch (...) {
      error = std::current_exception();
    }
    scope_.reset();
    if (raise && error) std::rethrow_exception(error);
  }

 private:
  std::optional<domino::HandleScope> scope_;
};
}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch-domino native module";
  // The base classes (Backend, Backend.Options, Store) are registered by torch's own module.
  py::module_::import("torch.distributed");

  py::class_<domino::ProcessGroupDomino::Options, c10d::Backend::Options,
             c10::intrusive_ptr<domino::ProcessGroupDomino::Options>>(m, "Options")
      .def(py::init([](std::chrono::milliseconds timeout) {
             return domino::ProcessGroupDomino::Options::create(timeout);
           }),
           py::arg("timeout") = kBackendDefaultTimeout)
      .def_readwrite("_timeout", &domino::ProcessGroupDomino::Options::timeout)
      .def_readwrite("priority", &domino::ProcessGroupDomino::Options::priority,
                     "Default lane of the group: 'high', 'normal' or 'low' ('' = DOMINO_PRIORITY)")
      .def_readwrite("group_name", &domino::ProcessGroupDomino::Options::group_name)
      .def_readwrite("global_ranks_in_group",
                     &domino::ProcessGroupDomino::Options::global_ranks_in_group);

  // domino's handle as a Python type of its own, below torch's Work. Without it, pybind11 looks
  // for the unregistered type on every op before settling on the base; torch's holder then
  // gives up the GIL to destroy the handle, whose outputs take it back to drop their Python
  // tensors' references; and torch's wait() gives up the GIL even when the work is long done.
  py::class_<domino::Work, c10d::Work, c10::intrusive_ptr<domino::Work>>(m, "Work").def(
      "wait",
      [](domino::Work& work, std::chrono::milliseconds timeout) {
        if (work.waits_for_nothing()) return work.wait(timeout);
        py::gil_scoped_release release;
        return work.wait(timeout);
      },
      py::arg("timeout") = kNoTimeout);

  py::class_<domino::ProcessGroupDomino, c10d::Backend,
             c10::intrusive_ptr<domino::ProcessGroupDomino>>(m, "ProcessGroupDomino")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       const c10::intrusive_ptr<domino::ProcessGroupDomino::Options>& options) {
             return c10::make_intrusive<domino::ProcessGroupDomino>(store, rank, size, options);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("options"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("options", &domino::ProcessGroupDomino::getBackendOptions)
      .def_property_readonly("intra_transport", &domino::ProcessGroupDomino::intra_transport)
      .def_property_readonly("inter_transport", &domino::ProcessGroupDomino::inter_transport)
      .def("_routing", &routing_dict, py::arg("sizes"))
      .def("_wire_settings",
           [](const domino::ProcessGroupDomino& pg) {
             py::dict out;
             for (const auto& [name, value] : pg.impl().wire_settings()) out[py::str(name)] = value;
             return out;
           })
      .def("_binding",
           [](const domino::ProcessGroupDomino& pg) {
             const auto& b = pg.impl().binding();
             py::dict out;
             out["numa"] = b.numa;
             out["cpus"] = b.cpus;
             out["nic"] = b.nic.empty() ? py::object(py::none()) : py::object(py::str(b.nic));
             // As UCX reads them: the user's UCX_NET_DEVICES or what this rank hands down.
             const std::string& devices = pg.impl().ucx_net_devices();
             out["ucx_net_devices"] =
                 devices.empty() ? py::object(py::none()) : py::object(py::str(devices));
             out["ucx_net_devices_rule"] = pg.impl().network_rule();
             return out;
           })
      .def_property_readonly("default_priority",
                             [](const domino::ProcessGroupDomino& pg) {
                               return std::string(domino::priority_name(pg.default_priority()));
                             })
      .def("_layout",
           [](const domino::ProcessGroupDomino& pg) {
             const auto& l = pg.impl().layout();
             py::dict out;
             py::list hosts;
             for (size_t h = 0; h < l.hosts.size(); ++h) {
               py::dict entry;
               entry["id"] = l.hosts[h];
               entry["ranks"] = l.host_ranks[h];
               hosts.append(entry);
             }
             out["hosts"] = hosts;
             out["local_rank"] = l.local_rank[static_cast<size_t>(pg.getRank())];
             out["local_size"] = l.local_size(pg.getRank());
             out["uniform"] = l.uniform;
             return out;
           })
      .def("_host",
           [](const domino::ProcessGroupDomino& pg) { return host_dict(pg.impl().host()); })
      .def("_cuda",
           [](const domino::ProcessGroupDomino& pg) {
             py::dict out;
             out["path"] = pg.impl().device_path();
             out["nccl_built"] = pg.impl().has_device_transport();
             py::list streams;
             for (const auto& s : pg.impl().comm_streams()) {
               py::dict entry;
               entry["lane"] = s.lane;
               entry["device"] = s.device;
               entry["priority"] = s.priority;
               entry["least_priority"] = s.least_priority;
               entry["greatest_priority"] = s.greatest_priority;
               streams.append(entry);
             }
             out["comm_streams"] = streams;
             return out;
           })
      .def("_issued_per_lane", [](const domino::ProcessGroupDomino& pg) {
        const auto counts = pg.issued_per_lane();
        py::dict out;
        out["high"] = counts[0];
        out["normal"] = counts[1];
        out["low"] = counts[2];
        return out;
      });

  m.def(
      "host_topology",
      [](const std::string& xml_path) {
        return host_dict(domino::topology::load_host_topology(xml_path));
      },
      py::arg("xml_path") = "",
      "This host as hwloc sees it (or as an hwloc XML file describes it).");

  py::class_<PyPriorityGuard>(m, "_PriorityGuard")
      .def(py::init<const std::string&>(), py::arg("level"))
      .def("release", &PyPriorityGuard::release);
  py::class_<PyHandleScope>(m, "_HandleScope")
      .def(py::init<>())
      .def("open", &PyHandleScope::open)
      .def("wait", &PyHandleScope::wait, py::call_guard<py::gil_scoped_release>())
      .def("close", &PyHandleScope::close, py::arg("raise_error"),
           py::call_guard<py::gil_scoped_release>())
      .def("__len__", &PyHandleScope::size);
  m.def("_current_priority", [] {
    const auto p = domino::current_priority();
    return p ? std::string(domino::priority_name(*p)) : std::string();
  });

  m.def("known_variables", &domino::known_variables,
        "Every DOMINO_* environment variable the backend reads.");
  m.def("wire_variables", &domino::wire_variables,
        "The DOMINO_* variables every rank of a group takes from rank 0.");
  m.def(
      "setting_declarations",
      [] {
        py::list rows;
        for (const domino::SettingDeclaration& d : domino::setting_declarations()) {
          py::dict row;
          row["name"] = d.name;
          row["agreed"] = d.agreement == domino::Agreement::kRank0;
          row["accepted"] = d.accepted;
          row["default"] = d.default_value;
          row["effect"] = d.effect;
          rows.append(row);
        }
        return rows;
      },
      "Every DOMINO_* variable as declared: name, agreed (rank 0's), accepted, default, effect.");

  m.def(
      "_dump_flight_recorder",
      [](bool only_active) {
        std::string bytes;
        {
          py::gil_scoped_release unlocked;
          bytes = domino::FlightRecorder::get().dump(only_active);
        }
        return py::bytes(bytes);
      },
      py::arg("only_active") = false,
      "This process's Flight Recorder buffer, pickled as fr_trace reads it.");
  m.def("_flight_recorder_enabled", [] { return domino::FlightRecorder::get().enabled(); });

  m.def("reduction_isa", &domino::reduction_isa,
        "Instruction set the reduction kernels dispatched to on this CPU.");
  m.def(
      "algorithms",
      [] {
        namespace topo = domino::topology;
        py::list out;
        for (const topo::AlgorithmEntry& e : topo::algorithm_table()) {
          py::dict entry;
          entry["name"] = std::string(e.name);
          entry["description"] = std::string(e.description);
          py::list ops;
          for (std::string_view op : e.ops) ops.append(std::string(op));
          entry["ops"] = ops;
          entry["runs_on"] = e.home == topo::AlgorithmHome::kLinks ? "links" : "shm";
          entry["modeled"] = e.seconds != nullptr;
          out.append(entry);
        }
        return out;
      },
      "The algorithm table: every collective algorithm of this build, what it serves and where "
      "it runs (links: over any transport's point-to-point messages; shm: the shared-memory "
      "transport's own).");

  register_overlap(m);
}
