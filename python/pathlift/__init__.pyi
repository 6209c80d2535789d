"""Type stubs of the pathlift package: the engine's names (see _pathlift.pyi) and the PyTorch
bridge (pathlift.torch, imported on first use)."""

from ._pathlift import *  # noqa: F401,F403
from ._pathlift import __version__ as __version__
from .torch import from_torch as from_torch
from .torch import theta_from_torch as theta_from_torch
from .torch import to_torch as to_torch

class UnsupportedModelError(ValueError): ...
