// The built-in UCX transport (between hosts, or between any processes), registered like any
// external plugin. UCX itself starts on the first communicator, not at load.
#pragma once

#include "domino/plugin.h"

const domino_plugin_t* domino_ucx_plugin();
