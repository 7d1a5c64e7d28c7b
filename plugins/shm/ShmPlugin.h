// The built-in shared-memory transport, registered like any external plugin.
#pragma once

#include "domino/plugin.h"

const domino_plugin_t* domino_shm_plugin();
