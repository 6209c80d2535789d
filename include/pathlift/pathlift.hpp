#pragma once
/// \file pathlift.hpp
/// Umbrella header: the whole public API of pathlift. Each feature header can be included
/// alone.

#include "pathlift/builtins.hpp"
#include "pathlift/checks.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/forward.hpp"
#include "pathlift/io.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/linearize.hpp"
#include "pathlift/modular.hpp"
#include "pathlift/network.hpp"
#include "pathlift/norms.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/proof.hpp"
#include "pathlift/rank.hpp"
#include "pathlift/rescaling.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/symmetry.hpp"
#include "pathlift/types.hpp"
#include "pathlift/version.hpp"
