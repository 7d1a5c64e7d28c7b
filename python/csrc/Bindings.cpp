// torch_domino._C: the backend class for torch.distributed's creator function, plus the
// overlap configuration. The only translation unit that sees pybind11.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "ProcessGroupDomino.h"
#include "overlap/TransformerConfig.h"
#include "plugins/common/Reduction.h"

namespace py = pybind11;

namespace {
template <class T>
using intrusive_class = py::class_<T, c10::intrusive_ptr<T>>;
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
      .def_readwrite("group_name", &domino::ProcessGroupDomino::Options::group_name)
      .def_readwrite("global_ranks_in_group",
                     &domino::ProcessGroupDomino::Options::global_ranks_in_group);

  py::class_<domino::ProcessGroupDomino, c10d::Backend,
             c10::intrusive_ptr<domino::ProcessGroupDomino>>(m, "ProcessGroupDomino")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       const c10::intrusive_ptr<domino::ProcessGroupDomino::Options>& options) {
             return c10::make_intrusive<domino::ProcessGroupDomino>(store, rank, size, options);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("options"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("options", &domino::ProcessGroupDomino::getBackendOptions)
      .def_property_readonly("intra_transport", &domino::ProcessGroupDomino::intra_transport);

  m.def("reduction_isa", &domino::reduction_isa,
        "Instruction set the reduction kernels dispatched to on this CPU.");

  m.def(
      "validate_transformer_config",
      [](const py::dict& fields, int64_t tensor_parallel, int64_t batch_size) {
        namespace ov = domino::overlap;
        ov::TransformerConfig c;
        auto get = [&](const char* key, auto fallback) {
          return fields.contains(key) ? fields[key].cast<decltype(fallback)>() : fallback;
        };
        c.hidden_size = get("hidden_size", c.hidden_size);
        c.num_layers = get("num_layers", c.num_layers);
        c.num_attention_heads = get("num_attention_heads", c.num_attention_heads);
        c.num_query_groups = get("num_query_groups", c.num_query_groups);
        c.ffn_hidden_size = get("ffn_hidden_size", c.ffn_hidden_size);
        c.activation = ov::parse_activation(get("activation", std::string("gelu")));
        c.normalization = ov::parse_normalization(get("normalization", std::string("layernorm")));
        c.rotary = get("rotary", c.rotary);
        c.rotary_base = get("rotary_base", c.rotary_base);
        c.bias = get("bias", c.bias);
        c.hidden_dropout = get("hidden_dropout", c.hidden_dropout);
        c.attention_dropout = get("attention_dropout", c.attention_dropout);
        c.params_dtype = get("params_dtype", c.params_dtype);
        c.split = ov::parse_split(get("split", std::string("row")));
        c.micro_batches = get("micro_batches", c.micro_batches);
        c.column_chunks = get("column_chunks", c.column_chunks);
        c.overlap = ov::parse_overlap(get("overlap", std::string("inter")));
        c.validate(tensor_parallel, batch_size);
        return c.ffn_size();
      },
      py::arg("fields"), py::arg("tensor_parallel"), py::arg("batch_size") = 0,
      "Checks a transformer shape against a tensor-parallel size; returns the FFN size used.");
}
