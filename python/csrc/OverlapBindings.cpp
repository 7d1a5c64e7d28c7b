#include "OverlapBindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "overlap/LayerTypes.h"
#include "overlap/Transformer.h"

namespace py = pybind11;
namespace ov = domino::overlap;

namespace {

// TransformerConfig's fields seen from Python: enums by name, unset optionals as None.
template <class T>
py::object to_python(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return py::str(std::string(ov::enum_name(value)));
  } else {
    return py::cast(value);
  }
}
template <class T>
py::object to_python(const std::optional<T>& value) {
  return value ? to_python(*value) : py::none();
}

template <class T>
void from_python(const char* field, T& member, const py::handle& value) {
  if constexpr (std::is_enum_v<T>) {
    if (!py::isinstance<py::str>(value)) {
      throw py::type_error(std::string("TransformerConfig.") + field + " takes a name, got " +
                           py::repr(value).cast<std::string>());
    }
    member = ov::parse_enum<T>(field, value.cast<std::string>());
  } else {
    // No silent narrowing: 2.5 is no int, "2" no number (numpy's scalars are numbers).
    const bool is_bool = py::isinstance<py::bool_>(value);
    const bool integral = !is_bool && PyIndex_Check(value.ptr());
    const bool fits = std::is_same_v<T, bool>          ? is_bool
                      : std::is_same_v<T, std::string> ? py::isinstance<py::str>(value)
                      : std::is_floating_point_v<T>
                          ? !is_bool && !py::isinstance<py::str>(value) &&
                                (integral || py::hasattr(value, "__float__"))
                          : integral;
    if (!fits) {
      throw py::type_error(std::string("TransformerConfig.") + field + " got " +
                           py::repr(value).cast<std::string>() + " of type " +
                           py::str(py::type::of(value).attr("__name__")).cast<std::string>());
    }
    member = value.cast<T>();
  }
}
template <class T>
void from_python(const char* field, std::optional<T>& member, const py::handle& value) {
  if (value.is_none()) {
    member.reset();
    return;
  }
  T inner{};
  from_python(field, inner, value);
  member = inner;
}

std::vector<std::string> field_names() {
  ov::TransformerConfig c;
  std::vector<std::string> names;
  ov::visit_fields(c, [&](const char* name, auto&, const char*) { names.emplace_back(name); });
  return names;
}

py::object get_field(ov::TransformerConfig& c, const std::string& name) {
  py::object out;
  ov::visit_fields(c, [&](const char* field, auto& member, const char*) {
    if (name == field) out = to_python(member);
  });
  return out;
}

void set_field(ov::TransformerConfig& c, const std::string& name, const py::handle& value) {
  bool found = false;
  ov::visit_fields(c, [&](const char* field, auto& member, const char*) {
    if (name != field) return;
    from_python(field, member, value);
    found = true;
  });
  if (!found) {
    throw py::type_error("TransformerConfig has no field '" + name + "'");
  }
}

py::dict to_dict(ov::TransformerConfig& c) {
  py::dict out;
  ov::visit_fields(
      c, [&](const char* field, auto& member, const char*) { out[field] = to_python(member); });
  return out;
}

void set_fields(ov::TransformerConfig& c, const py::dict& fields) {
  for (auto [key, value] : fields) set_field(c, key.cast<std::string>(), value);
}

// TransformerConfig(*args, **kwargs): positional arguments take the fields in order;
// hidden_size and num_attention_heads are required, as a dataclass's first two fields would be.
ov::TransformerConfig make_config(const py::args& args, const py::kwargs& kwargs) {
  const auto names = field_names();
  if (args.size() > names.size()) {
    throw py::type_error("TransformerConfig takes at most " + std::to_string(names.size()) +
                         " positional arguments, got " + std::to_string(args.size()));
  }
  ov::TransformerConfig c;
  std::set<std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    set_field(c, names[i], args[i]);
    given.insert(names[i]);
  }
  for (auto [key, value] : kwargs) {
    const auto name = key.cast<std::string>();
    if (given.count(name)) {
      throw py::type_error("TransformerConfig got multiple values for '" + name + "'");
    }
    set_field(c, name, value);
    given.insert(name);
  }
  for (const char* required : {"hidden_size", "num_attention_heads"}) {
    if (!given.count(required)) {
      throw py::type_error(std::string("TransformerConfig missing required argument: '") +
                           required + "'");
    }
  }
  return c;
}

void bind_config(py::module_& m) {
  py::class_<ov::TransformerConfig> cls(m, "TransformerConfig", R"doc(
The shape and schedule of a Domino transformer: the C++ struct itself (overlap/TransformerConfig.h),
whose field list is the one definition. TransformerConfig(hidden_size, num_attention_heads, ...)
takes every field by keyword, or positionally in the order fields() lists. validate(tp,
batch_size=0) raises ValueError naming a field that cannot be sharded and returns the FFN size.
)doc");
  cls.def(py::init(&make_config))
      .def(
          "validate",
          [](const ov::TransformerConfig& c, int64_t tensor_parallel, int64_t batch_size) {
            c.validate(tensor_parallel, batch_size);
            return c.ffn_size();
          },
          py::arg("tensor_parallel"), py::arg("batch_size") = 0,
          "Checks the shape against a tensor-parallel size (and a batch); returns the FFN size.")
      .def("to_dict", &to_dict, "Every field by name, as the constructor takes them.")
      .def(
          "replace",
          [](const ov::TransformerConfig& c, const py::kwargs& changes) {
            ov::TransformerConfig copy = c;
            set_fields(copy, changes);
            return copy;
          },
          "A copy with the given fields changed.")
      .def_static(
          "fields",
          [] {
            ov::TransformerConfig c;
            py::list out;
            ov::visit_fields(c, [&](const char* name, auto& member, const char* doc) {
              out.append(py::make_tuple(name, to_python(member), doc));
            });
            return out;
          },
          "(name, default, meaning) of every field, in order.")
      .def("__eq__",
           [](const ov::TransformerConfig& a, const ov::TransformerConfig& b) { return a == b; })
      .def("__copy__", [](const ov::TransformerConfig& c) { return c; })
      .def("__deepcopy__", [](const ov::TransformerConfig& c, const py::dict&) { return c; })
      .def("__repr__",
           [](ov::TransformerConfig& c) {
             std::string out = "TransformerConfig(";
             bool first = true;
             for (auto [key, value] : to_dict(c)) {
               out += (first ? "" : ", ") + key.cast<std::string>() + "=" +
                      py::repr(value).cast<std::string>();
               first = false;
             }
             return out + ")";
           })
      .def(py::pickle([](ov::TransformerConfig& c) { return to_dict(c); },
                      [](const py::dict& fields) {
                        ov::TransformerConfig c;
                        set_fields(c, fields);
                        return c;
                      }));
  cls.attr("__hash__") = py::none();
  ov::TransformerConfig defaults;
  ov::visit_fields(defaults, [&](const char* name, auto&, const char* doc) {
    const std::string field = name;
    cls.def_property(
        name, [field](ov::TransformerConfig& c) { return get_field(c, field); },
        [field](ov::TransformerConfig& c, const py::object& value) { set_field(c, field, value); },
        doc);
  });
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

// Layers built from a TransformerConfig and a group.
template <typename Impl>
py::class_<Impl, std::shared_ptr<Impl>> bind_configured(py::module_& m, const char* name) {
  auto cls = bind_layer<Impl>(m, name);
  cls.def(py::init([](const ov::TransformerConfig& c, const py::object& g) {
            return std::make_shared<Impl>(c, group_from(g));
          }),
          py::arg("config"), py::arg("group"));
  return cls;
}

}  // namespace

void register_overlap(py::module_& m) {
  auto overlap = m.def_submodule("overlap", "Domino tensor-parallel layers (C++).");
  bind_config(overlap);
  bind_configured<ov::TransformerImpl>(overlap, "DominoTransformer")
      .def("dropout_seed", &ov::TransformerImpl::dropout_seed, py::arg("hidden"),
           py::call_guard<py::gil_scoped_release>())
      .def("forward_layer", &ov::TransformerImpl::forward_layer, py::arg("index"),
           py::arg("hidden"), py::arg("dropout_seed"), py::call_guard<py::gil_scoped_release>())
      .def("forward_final_norm", &ov::TransformerImpl::forward_final_norm, py::arg("hidden"),
           py::call_guard<py::gil_scoped_release>());
  bind_configured<ov::TransformerLayerImpl>(overlap, "DominoTransformerLayer")
      .def(
          "forward_rotated",
          [](ov::TransformerLayerImpl& self, const at::Tensor& hidden, const at::Tensor& angles) {
            return self.forward(hidden, angles);
          },
          py::arg("hidden"), py::arg("rotary_angles"), py::call_guard<py::gil_scoped_release>(),
          "forward with rotary angles computed elsewhere ([s, 1, 1, r], Megatron-Core's "
          "rotary_pos_emb) in place of the config's rotary embeddings");
  // Every registered layer type (overlap/LayerTypes.h) by name: torch_domino.overlap makes a
  // class of each, so a new type needs no binding.
  bind_layer<ov::ConfiguredLayerImpl>(overlap, "ConfiguredLayer");
  overlap.def(
      "layer_types",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& type : ov::layer_types()) out.emplace_back(type.name, type.doc);
        return out;
      },
      "(name, doc) of every registered layer type, in registration order.");
  overlap.def(
      "build_layer",
      [](const std::string& name, const ov::TransformerConfig& c, const py::object& g) {
        return ov::build_layer(name, c, group_from(g));
      },
      py::arg("name"), py::arg("config"), py::arg("group"));
  bind_layer<ov::ColumnParallelLinearImpl>(overlap, "ColumnParallelLinear")
      .def(py::init([](int64_t in_features, std::vector<int64_t> segments, const py::object& g,
                       bool bias, uint64_t seed, double init_std, const std::string& dtype,
                       std::vector<std::string> names, bool sequence_parallel) {
             ov::WeightInit init(seed, init_std, ov::parse_params_dtype(dtype));
             return std::make_shared<ov::ColumnParallelLinearImpl>(
                 in_features, std::move(segments), bias, group_from(g), init, std::move(names),
                 sequence_parallel);
           }),
           py::arg("in_features"), py::arg("out_segments"), py::arg("group"), py::arg("bias"),
           py::arg("seed"), py::arg("init_std"), py::arg("dtype"), py::arg("segment_names"),
           py::arg("sequence_parallel") = false);
  bind_layer<ov::RowParallelLinearImpl>(overlap, "RowParallelLinear")
      .def(py::init([](int64_t in_features, int64_t out_features, const py::object& g, bool bias,
                       uint64_t seed, double init_std, const std::string& dtype,
                       bool sequence_parallel) {
             ov::WeightInit init(seed, init_std, ov::parse_params_dtype(dtype));
             return std::make_shared<ov::RowParallelLinearImpl>(
                 in_features, out_features, bias, group_from(g), init, 1.0, sequence_parallel);
           }),
           py::arg("in_features"), py::arg("out_features"), py::arg("group"), py::arg("bias"),
           py::arg("seed"), py::arg("init_std"), py::arg("dtype"),
           py::arg("sequence_parallel") = false);
}
