"""Type stubs of the pathlift package: the engine's names (see _pathlift.pyi), from_onnx, and
the PyTorch bridge (pathlift.torch, imported on first use)."""

import os
from typing import Any, Optional, Sequence, Union

from ._pathlift import *  # noqa: F401,F403
from ._pathlift import LayerNetwork, UnsupportedModelError as UnsupportedModelError
from ._pathlift import __version__ as __version__
from .torch import from_torch as from_torch
from .torch import layer_graph_from_torch as layer_graph_from_torch
from .torch import supports as supports
from .torch import theta_from_torch as theta_from_torch
from .torch import to_torch as to_torch
from .torch import to_torch_sparse as to_torch_sparse
from . import plot as plot
from . import torch as torch
from ._kernel_operator import KernelOperator as KernelOperator
from ._kernel_operator import kernel_operator as kernel_operator
from ._paths import PathList as PathList
from ._paths import sample_paths as sample_paths
from ._paths import top_paths as top_paths
from ._theta_order import theta_permutation as theta_permutation
from ._sweep import TorchCheckpoint as TorchCheckpoint
from ._sweep import sweep as sweep

def from_onnx(model: Union[str, os.PathLike, bytes, Any],
              input_shape: Optional[Sequence[int]] = None, *,
              max_memory: int = 0) -> LayerNetwork: ...

def load_model(source: Union[str, os.PathLike, bytes, Any],
               input_shape: Optional[Sequence[int]] = None, *,
               max_memory: int = 0) -> Any: ...
# load_model without issuing the import's warnings (pathlift's sweep reports them itself)
def _read_model(source: Union[str, os.PathLike, bytes, Any],
                input_shape: Optional[Sequence[int]], max_memory: int) -> Any: ...
