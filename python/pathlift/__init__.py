"""pathlift: path-lifting, skeleton and Jacobian of DAG ReLU networks.

The C++ engine (``pathlift._pathlift``) is re-exported here: networks (:class:`Network`, the
file format, built-ins), path counts, paths (CSR numpy arrays), :func:`path_lifting`,
:func:`skeleton` and :func:`jacobian` (``scipy.sparse.csr_matrix`` viewing the C++ buffers);
the paper's checks (:func:`check_identities`); certified ranks and Theorem 1
(:func:`rank`, :func:`certify_rank`, :func:`numerical_rank`, :func:`check_rank_theorem`) and
its proof executed step by step (:func:`prove_rank`); the forward pass and the linearization
f = L Phi (:func:`forward`, :func:`linearize`); path-norms and the path kernel by dynamic
programming (:func:`path_norm`, :func:`path_norm_gradient`, :func:`kernel_diagonal`,
:func:`kernel_matvec`, :func:`kernel_operator` -- K as a scipy ``LinearOperator`` --,
:func:`kernel`, :func:`skeleton_gram`).
Layer graphs (:class:`LayerGraph`, :func:`unroll`: CNNs and ResNets described per layer and
unrolled in C++), :class:`LayerNetwork` (a network known by its layer graph: the path-free
functions -- :func:`count_paths`, :func:`path_norm`, :func:`path_norm_gradient`, the
``kernel_*`` functions but the dense :func:`kernel` -- run on it without unrolling, every other
function takes it too and unrolls it on first use) and ONNX import (:func:`from_onnx`, which
needs neither torch nor the onnx package; like :func:`from_torch` it returns a LayerNetwork;
:func:`theta_permutation` maps theta between the two importers' orders).
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

import operator as _operator
import os as _os
import warnings as _warnings
from typing import Any as _Any
from typing import Optional as _Optional
from typing import Sequence as _Sequence

from . import _pathlift
from ._pathlift import *  # noqa: F401,F403  (every public name of the engine)
from ._pathlift import FormatError, UnsupportedModelError, __version__  # noqa: F401
# The engine's top_paths and sample_paths, adding "param_names" on a from_torch network.
from ._paths import PathList, sample_paths, top_paths  # noqa: F401,F811
from ._theta_order import theta_permutation

# K as a scipy LinearOperator: scipy.sparse.linalg is imported on first use (half a second).
_SCIPY_NAMES = ("kernel_operator", "KernelOperator")
# Sweeps (pandas, and Dask with a client): imported on first use.
_SWEEP_NAMES = ("sweep", "TorchCheckpoint")
_TORCH_NAMES = ("from_torch", "theta_from_torch", "to_torch", "supports",
                "layer_graph_from_torch", "to_torch_sparse", "load_theta", "fold_batchnorm",
                "TorchNetwork")


def _shape_argument(input_shape: _Any) -> _Optional[list]:
    """input_shape as a list of ints (operator.index: 4.5 or "4" are refused), or None."""
    if input_shape is None:
        return None
    try:
        return [_operator.index(s) for s in input_shape]
    except TypeError:
        raise TypeError(f"input_shape must be a sequence of integers, got {input_shape!r}") from None


def load_model(source: _Any, input_shape: _Optional[_Sequence[int]] = None, *,
               max_memory: int = 0) -> _Any:
    """A model in any format pathlift reads (model.hpp's load_model): a pathlift-network JSON
    file (a :class:`Network`), a pathlift-layers JSON file or an ONNX model (a
    :class:`LayerNetwork`, never unrolled here). ``source``: a path (str or os.PathLike), the
    file's bytes, or an ``onnx.ModelProto`` (anything with ``SerializeToString()``).
    input_shape: ONNX only, one sample's shape without the batch dimension (needed when the
    model's is symbolic). max_memory: bytes the file may need once read (and the LayerNetwork's
    limit when a function unrolls it; 0: half of physical RAM).

    Raises FormatError for something that is not a model, UnsupportedModelError (a ValueError)
    listing every unsupported ONNX operator, NetworkError for an invalid network, TypeError for
    another argument type. An import's warnings (an ONNX export that folded batch norms into
    convolutions) are issued as Python warnings and kept in ``net.warnings``.
    """
    net = _read_model(source, input_shape, max_memory)
    for warning in getattr(net, "warnings", ()):
        _warnings.warn(warning, stacklevel=2)
    return net


def _read_model(source: _Any, input_shape: _Optional[_Sequence[int]], max_memory: int) -> _Any:
    """load_model without issuing the import's warnings (they stay in ``net.warnings``): for a
    caller that reports them itself (a sweep's worker sends them with its row)."""
    shape = _shape_argument(input_shape)
    if isinstance(source, (str, _os.PathLike)):
        return _pathlift._load_model(_os.fspath(source), shape, max_memory)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _pathlift._parse_model(bytes(source), shape, max_memory)
    if hasattr(source, "SerializeToString"):
        return _pathlift._parse_model(source.SerializeToString(), shape, max_memory)
    raise TypeError(f"expects a path, bytes or an onnx.ModelProto, got {type(source).__name__}")


def from_onnx(model: _Any, input_shape: _Optional[_Sequence[int]] = None, *,
              max_memory: int = 0) -> "_pathlift.LayerNetwork":
    """The DAG ReLU network of an ONNX model as a :class:`LayerNetwork`: a path (str or
    os.PathLike), the serialized bytes, or an ``onnx.ModelProto`` (anything with
    ``SerializeToString()``). Read in C++ (:func:`load_model`) into a layer graph, not unrolled:
    the path-free functions run on the graph, the others unroll it when they need edges
    (TooLarge over max_memory bytes, 0: half of physical RAM; ``net.unrolled()`` gives the DAG).
    theta is the initializers in the file's order -- for ``torch.onnx.export``,
    ``model.parameters()`` order, but for the parameters the exporter aliased to an equal one
    and the initializers it made by constant folding, which the importer places by its own
    rule; BatchNormalization's scale and bias standing for a and b as in :func:`from_torch` --
    and is stored as ``net.weights``; :func:`theta_permutation` maps it to from_torch's order
    (docs/python.md#theta-order). input_shape (one sample,
    without the batch dimension) overrides the model's, needed when it is symbolic.

    Raises :class:`UnsupportedModelError` (a ValueError) listing every unsupported operator,
    :class:`FormatError` for something that is not ONNX, TypeError for another argument type.
    A warning when the exporter folded batch norms into convolutions (theta is then not the
    PyTorch model's parameters).
    """
    if isinstance(model, str) and "\0" in model:
        raise TypeError("from_onnx expects a path, bytes or an onnx.ModelProto: this str holds "
                        "binary data (pass the bytes, not a str)")
    if not isinstance(model, (str, _os.PathLike, bytes, bytearray, memoryview)) and \
            not hasattr(model, "SerializeToString"):
        raise TypeError("from_onnx expects a path, bytes or an onnx.ModelProto, got "
                        f"{type(model).__name__}")
    net = load_model(model, input_shape, max_memory=max_memory)
    if not isinstance(net, _pathlift.LayerNetwork):
        raise FormatError("from_onnx: this is a pathlift-network file, not an ONNX model "
                          "(pathlift.load_model reads it)")
    return net


# Types show as pathlift.X (and pickle by that name), not pathlift._pathlift.X.
for _name in dir(_pathlift):
    _obj = getattr(_pathlift, _name)
    if isinstance(_obj, type) and not _name.startswith("_"):
        try:
            _obj.__module__ = __name__
        except (AttributeError, TypeError):  # pragma: no cover - immutable type
            pass

__all__ = sorted([n for n in dir(_pathlift) if not n.startswith("_")]
                 + ["from_onnx", "load_model", "theta_permutation", *_SCIPY_NAMES,
                    *_TORCH_NAMES, *_SWEEP_NAMES])


def __getattr__(name):
    # PEP 562: the PyTorch bridge, the plots (matplotlib) and the kernel operator (scipy) are
    # imported when first used.
    if name in ("plot", "torch"):  # the submodules pathlift.plot and pathlift.torch
        import importlib

        return importlib.import_module("." + name, __name__)
    if name in _SWEEP_NAMES:
        from . import _sweep

        return getattr(_sweep, name)
    if name in _SCIPY_NAMES:
        from . import _kernel_operator

        return getattr(_kernel_operator, name)
    if name in _TORCH_NAMES:
        from . import torch as _torch_bridge

        return getattr(_torch_bridge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SCIPY_NAMES) | set(_TORCH_NAMES) | set(_SWEEP_NAMES)
                  | {"plot", "torch"})


del _name, _obj
