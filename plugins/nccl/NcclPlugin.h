// The built-in NCCL transport for CUDA tensors, registered like any external plugin. Present only
// in builds against a CUDA torch; NCCL is the library torch itself loads.
#pragma once

#include "domino/plugin.h"

const domino_plugin_t* domino_nccl_plugin();
