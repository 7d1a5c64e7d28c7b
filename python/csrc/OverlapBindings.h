// torch_domino._C's overlap part: the Domino layers and their configuration.
#pragma once

#include <pybind11/pybind11.h>

void register_overlap(pybind11::module_& m);
