#include "LayerTypes.h"

#include <stdexcept>

namespace domino::overlap {

namespace {
// Filled by namespace-scope initializers in any order: built on first use.
std::vector<LayerType>& registered() {
  static std::vector<LayerType> types;
  return types;
}
}  // namespace

bool register_layer_type(LayerType type) {
  if (type.name.empty() || !type.build) {
    throw std::logic_error("register_layer_type: a layer type needs a name and a builder (got '" +
                           type.name + "')");
  }
  for (const auto& known : registered()) {
    if (known.name == type.name) {
      throw std::logic_error("register_layer_type: '" + type.name +
                             "' is registered already; give the new layer type another name");
    }
  }
  registered().push_back(std::move(type));
  return true;
}

const std::vector<LayerType>& layer_types() {
  return registered();
}

std::shared_ptr<ConfiguredLayerImpl> build_layer(const std::string& name,
                                                 const TransformerConfig& config,
                                                 TensorParallelGroupPtr group) {
  std::string known;
  for (const auto& type : registered()) {
    if (type.name == name) return type.build(config, std::move(group));
    known += (known.empty() ? "" : ", ") + type.name;
  }
  throw std::invalid_argument("no layer type '" + name + "'; the registered ones are " + known);
}

}  // namespace domino::overlap
