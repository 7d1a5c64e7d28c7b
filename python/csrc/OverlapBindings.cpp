#include "OverlapBindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <map>

#include "overlap/Transformer.h"

namespace py = pybind11;
namespace ov = domino::overlap;

namespace {

ov::TransformerConfig config_from(const py::dict& fields) {
  ov::TransformerConfig c;
  auto get = [&](const char* key, auto fallback) {
    return fields.contains(key) && !fields[key].is_none() ? fields[key].cast<decltype(fallback)>()
                                                          : fallback;
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
  c.qkv_bias = get("qkv_bias", c.qkv_bias);
  c.hidden_dropout = get("hidden_dropout", c.hidden_dropout);
  c.attention_dropout = get("attention_dropout", c.attention_dropout);
  c.params_dtype = get("params_dtype", c.params_dtype);
  c.split = ov::parse_split(get("split", std::string("row")));
  c.micro_batches = get("micro_batches", c.micro_batches);
  c.column_chunks = get("column_chunks", c.column_chunks);
  c.overlap = ov::parse_overlap(get("overlap", std::string("inter")));
  c.norm_epsilon = get("norm_epsilon", c.norm_epsilon);
  c.init_std = get("init_std", c.init_std);
  c.seed = get("seed", c.seed);
  return c;
}

ov::TensorParallelGroupPtr group_from(const py::object& group) {
  if (group.is_none()) return c10::make_intrusive<ov::TensorParallelGroup>();
  return c10::make_intrusive<ov::TensorParallelGroup>(
      group.cast<c10::intrusive_ptr<c10d::ProcessGroup>>());
}

template <typename Impl>
py::class_<Impl, std::shared_ptr<Impl>> bind_layer(py::module_& m, const char* name) {
  return py::class_<Impl, std::shared_ptr<Impl>>(m, name)
      .def(
          "forward", [](Impl& self, const at::Tensor& input) { return self.forward(input); },
          py::call_guard<py::gil_scoped_release>())
      .def("named_parameters",
           [](const Impl& self) {
             std::vector<std::pair<std::string, at::Tensor>> out;
             for (const auto& item : self.named_parameters())
               out.emplace_back(item.key(), item.value());
             return out;
           })
      .def(
          "train", [](Impl& self, bool mode) { self.train(mode); }, py::arg("mode") = true)
      .def(
          "shard_of",
          [](const Impl& self, const std::string& name, const at::Tensor& full) {
            return ov::shard_of(self, name, full);
          },
          py::arg("name"), py::arg("full"))
      .def("shard_layouts",
           [](const Impl& self) {
             std::vector<
                 std::tuple<std::string, int64_t, std::vector<int64_t>, std::vector<std::string>>>
                 out;
             for (auto& [name, layout] : ov::parameter_layouts(self))
               out.emplace_back(name, layout.dim, layout.segments, layout.segment_names);
             return out;
           })
      .def(
          "load_unsharded",
          [](Impl& self, const std::map<std::string, at::Tensor>& full) {
            ov::load_unsharded(self, full);
          },
          py::arg("state"))
      .def("_drop_communication_for_benchmark",
           [](Impl& self, bool drop) { self.group()->drop_communication_for_benchmark(drop); });
}

// Layers built from a TransformerConfig (as a dict) and a group.
template <typename Impl>
py::class_<Impl, std::shared_ptr<Impl>> bind_configured(py::module_& m, const char* name) {
  auto cls = bind_layer<Impl>(m, name);
  cls.def(py::init([](const py::dict& c, const py::object& g) {
            return std::make_shared<Impl>(config_from(c), group_from(g));
          }),
          py::arg("config"), py::arg("group"));
  return cls;
}

}  // namespace

void register_overlap(py::module_& m) {
  auto overlap = m.def_submodule("overlap", "Domino tensor-parallel layers (C++).");
  overlap.def(
      "validate_transformer_config",
      [](const py::dict& fields, int64_t tensor_parallel, int64_t batch_size) {
        auto c = config_from(fields);
        c.validate(tensor_parallel, batch_size);
        return c.ffn_size();
      },
      py::arg("fields"), py::arg("tensor_parallel"), py::arg("batch_size") = 0,
      "Checks a transformer shape against a tensor-parallel size; returns the FFN size used.");

  bind_configured<ov::TransformerImpl>(overlap, "DominoTransformer")
      .def("dropout_seed", &ov::TransformerImpl::dropout_seed, py::arg("hidden"),
           py::call_guard<py::gil_scoped_release>())
      .def("forward_layer", &ov::TransformerImpl::forward_layer, py::arg("index"),
           py::arg("hidden"), py::arg("dropout_seed"), py::call_guard<py::gil_scoped_release>())
      .def("forward_final_norm", &ov::TransformerImpl::forward_final_norm, py::arg("hidden"),
           py::call_guard<py::gil_scoped_release>());
  bind_configured<ov::TransformerLayerImpl>(overlap, "DominoTransformerLayer");
  bind_configured<ov::ShardedAttentionImpl>(overlap, "ShardedAttention");
  bind_configured<ov::ParallelMLPImpl>(overlap, "ParallelMLP");
  bind_layer<ov::ColumnParallelLinearImpl>(overlap, "ColumnParallelLinear")
      .def(py::init([](int64_t in_features, std::vector<int64_t> segments, const py::object& g,
                       bool bias, uint64_t seed, double init_std, const std::string& dtype,
                       std::vector<std::string> names) {
             ov::WeightInit init(seed, init_std, ov::parse_params_dtype(dtype));
             return std::make_shared<ov::ColumnParallelLinearImpl>(
                 in_features, std::move(segments), bias, group_from(g), init, std::move(names));
           }),
           py::arg("in_features"), py::arg("out_segments"), py::arg("group"), py::arg("bias"),
           py::arg("seed"), py::arg("init_std"), py::arg("dtype"), py::arg("segment_names"));
  bind_layer<ov::RowParallelLinearImpl>(overlap, "RowParallelLinear")
      .def(py::init([](int64_t in_features, int64_t out_features, const py::object& g, bool bias,
                       uint64_t seed, double init_std, const std::string& dtype) {
             ov::WeightInit init(seed, init_std, ov::parse_params_dtype(dtype));
             return std::make_shared<ov::RowParallelLinearImpl>(in_features, out_features, bias,
                                                                group_from(g), init);
           }),
           py::arg("in_features"), py::arg("out_features"), py::arg("group"), py::arg("bias"),
           py::arg("seed"), py::arg("init_std"), py::arg("dtype"));
}
