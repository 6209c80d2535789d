"""pathlift: path-lifting, skeleton and Jacobian of DAG ReLU networks.

The C++ engine (``pathlift._pathlift``) is re-exported here: networks (:class:`Network`, the
file format, built-ins), path counts, paths (CSR numpy arrays), :func:`path_lifting`,
:func:`skeleton` and :func:`jacobian` (``scipy.sparse.csr_matrix`` viewing the C++ buffers);
the paper's checks (:func:`check_identities`); certified ranks and Theorem 1
(:func:`rank`, :func:`certify_rank`, :func:`numerical_rank`, :func:`check_rank_theorem`) and
its proof executed step by step (:func:`prove_rank`); the forward pass and the linearization
f = L Phi (:func:`forward`, :func:`linearize`); path-norms and the path kernel by dynamic
programming (:func:`path_norm`, :func:`path_norm_gradient`, :func:`kernel_diagonal`,
:func:`kernel_matvec`, :func:`kernel`, :func:`skeleton_gram`).
Layer graphs (:class:`LayerGraph`, :func:`unroll`: CNNs and ResNets described per layer and
unrolled in C++), :class:`LayerNetwork` (a network known by its layer graph: the path-free
functions -- :func:`count_paths`, :func:`path_norm`, :func:`path_norm_gradient`, the
``kernel_*`` functions but the dense :func:`kernel` -- run on it without unrolling, every other
function takes it too and unrolls it on first use) and ONNX import (:func:`from_onnx`, which
needs neither torch nor the onnx package; like :func:`from_torch` it returns a LayerNetwork).
The PyTorch bridge -- :func:`from_torch`, :func:`theta_from_torch`, :func:`supports`,
:func:`layer_graph_from_torch`, :func:`to_torch`, :func:`to_torch_sparse` -- lives in
``pathlift.torch`` and is imported on first use, so ``import pathlift`` does not import torch;
``pathlift.torch`` also has the training-loop tools (a differentiable ``path_norm``,
``kernel_diagonal``, the ``PathSGD`` optimizer). Every function taking theta or X takes a
torch tensor too (detached, moved to the CPU, converted to float64).

Example::

    import numpy, pathlift
    net = pathlift.feed_forward(5, [8], 2)          # Sequential(Linear(5, 8), ReLU, Linear(8, 2))
    theta = numpy.random.default_rng(0).standard_normal(net.d)
    phi = pathlift.path_lifting(net, theta)          # numpy array, P entries
    J = pathlift.jacobian(net, theta)                # scipy.sparse.csr_matrix, P x d
    pathlift.rank(net, theta)["rank_B"]              # d - h = 66 - 8 = 58, certified
    X = pathlift.random_data(net, 10)                # 10 samples x 5 inputs
    L = pathlift.linearize(net, theta, X).L          # f(X) = (L @ phi).reshape(10, 2)

See docs/python.md for the full reference.
"""

import os as _os
from typing import Any as _Any
from typing import Optional as _Optional
from typing import Sequence as _Sequence

from . import _pathlift
from ._pathlift import *  # noqa: F401,F403  (every public name of the engine)
from ._pathlift import UnsupportedModelError, __version__  # noqa: F401

_TORCH_NAMES = ("from_torch", "theta_from_torch", "to_torch", "supports",
                "layer_graph_from_torch", "to_torch_sparse")


def from_onnx(model: _Any, input_shape: _Optional[_Sequence[int]] = None, *,
              max_memory: int = 0) -> "_pathlift.LayerNetwork":
    """The DAG ReLU network of an ONNX model as a :class:`LayerNetwork`: a path (str or
    os.PathLike), the serialized bytes, or an ``onnx.ModelProto`` (anything with
    ``SerializeToString()``). Read in C++ (:func:`read_onnx` / :func:`parse_onnx`) into a
    :class:`LayerGraph`, not unrolled: the path-free functions run on the graph, the others
    unroll it on first use (:func:`unroll`; TooLarge over max_memory bytes, 0: half of
    physical RAM). theta is the initializers in graph order -- for ``torch.onnx.export``,
    ``model.parameters()`` order with BatchNormalization's scale and bias standing for a and b
    as in :func:`from_torch` -- and is stored as ``net.weights``. input_shape (one sample,
    without the batch dimension) overrides the model's, needed when it is symbolic.

    Raises :class:`UnsupportedModelError` (a ValueError) listing every unsupported operator,
    :class:`FormatError` for something that is not ONNX, TypeError for another argument type.
    """
    shape = None if input_shape is None else [int(s) for s in input_shape]
    if isinstance(model, (str, _os.PathLike)):
        graph = _pathlift.read_onnx(model, shape)
    elif isinstance(model, (bytes, bytearray, memoryview)):
        graph = _pathlift.parse_onnx(bytes(model), shape)
    elif hasattr(model, "SerializeToString"):
        graph = _pathlift.parse_onnx(model.SerializeToString(), shape)
    else:
        raise TypeError("from_onnx expects a path, bytes or an onnx.ModelProto, got "
                        f"{type(model).__name__}")
    return _pathlift.LayerNetwork(graph, max_memory=max_memory)


# Types show as pathlift.X (and pickle by that name), not pathlift._pathlift.X.
for _name in dir(_pathlift):
    _obj = getattr(_pathlift, _name)
    if isinstance(_obj, type) and not _name.startswith("_"):
        try:
            _obj.__module__ = __name__
        except (AttributeError, TypeError):  # pragma: no cover - immutable type
            pass

__all__ = sorted([n for n in dir(_pathlift) if not n.startswith("_")]
                 + ["from_onnx", *_TORCH_NAMES])


def __getattr__(name):
    # PEP 562: the PyTorch bridge and the plots (matplotlib) are imported when first used.
    if name == "plot":
        import importlib

        return importlib.import_module(".plot", __name__)
    if name in _TORCH_NAMES:
        from . import torch as _torch_bridge

        return getattr(_torch_bridge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_TORCH_NAMES) | {"plot"})


del _name, _obj
