// Layer types by name. A layer type is a module built from a TransformerConfig and a
// tensor-parallel group that maps hidden states [s, b, h] to [s, b, h]. The Python package
// offers every registered type as torch_domino.overlap.<name>, with its parameters, state_dict,
// shard_of and load_unsharded as the built-in layers have them, so a new layer type is its own
// file and one registration:
//
//   class MyLayerImpl : public ConfiguredLayerImpl {
//    public:
//     MyLayerImpl(const TransformerConfig& config, TensorParallelGroupPtr group);
//     at::Tensor forward(const at::Tensor& hidden) override;
//   };
//   namespace {
//   const bool my_layer_registered = register_layer_type<MyLayerImpl>("MyLayer", "what it is");
//   }
//
// (overlap/ compiles as one unit: each file's registration needs a name of its own.)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ShardedModule.h"
#include "TransformerConfig.h"

namespace domino::overlap {

// What the Python binding needs of a registered layer beyond a ShardedModule: its forward.
class ConfiguredLayerImpl : public ShardedModule {
 public:
  virtual at::Tensor forward(const at::Tensor& hidden) = 0;

 protected:
  using ShardedModule::ShardedModule;
};

using LayerBuilder = std::function<std::shared_ptr<ConfiguredLayerImpl>(const TransformerConfig&,
                                                                        TensorParallelGroupPtr)>;

struct LayerType {
  std::string name;  // the Python class's name
  std::string doc;   // its docstring
  LayerBuilder build;
};

// Adds a type; returns true (for a namespace-scope initializer). Throws std::logic_error for an
// empty or taken name, or no builder.
bool register_layer_type(LayerType type);

// A type whose constructor takes (config, group).
template <class Layer>
bool register_layer_type(std::string name, std::string doc) {
  return register_layer_type({std::move(name), std::move(doc),
                              [](const TransformerConfig& config, TensorParallelGroupPtr group)
                                  -> std::shared_ptr<ConfiguredLayerImpl> {
                                return std::make_shared<Layer>(config, std::move(group));
                              }});
}

// Every registered type, in registration order.
const std::vector<LayerType>& layer_types();

// Builds the type registered as `name`; throws std::invalid_argument naming it and every
// registered type when there is none.
std::shared_ptr<ConfiguredLayerImpl> build_layer(const std::string& name,
                                                 const TransformerConfig& config,
                                                 TensorParallelGroupPtr group);

}  // namespace domino::overlap
