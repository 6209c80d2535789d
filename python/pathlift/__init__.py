"""pathlift: path-lifting, skeleton and Jacobian of DAG ReLU networks.

The C++ engine (``pathlift._pathlift``) is re-exported here: networks (:class:`Network`, the
file format, built-ins), path counts, paths (CSR numpy arrays), :func:`path_lifting`,
:func:`skeleton` and :func:`jacobian` (``scipy.sparse.csr_matrix`` viewing the C++ buffers);
the paper's checks (:func:`check_identities`); certified ranks and Theorem 1
(:func:`rank`, :func:`certify_rank`, :func:`numerical_rank`, :func:`check_rank_theorem`) and
its proof executed step by step (:func:`prove_rank`); the forward pass and the linearization
f = L Phi (:func:`forward`, :func:`linearize`); path-norms and the path kernel by dynamic
programming (:func:`path_norm`, :func:`kernel_diagonal`, :func:`kernel_matvec`,
:func:`kernel`, :func:`skeleton_gram`).
The PyTorch bridge -- :func:`from_torch`, :func:`theta_from_torch`, :func:`to_torch` -- lives in
``pathlift.torch`` and is imported on first use, so ``import pathlift`` does not import torch.

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

from . import _pathlift
from ._pathlift import *  # noqa: F401,F403  (every public name of the engine)
from ._pathlift import __version__


class UnsupportedModelError(ValueError):
    """A PyTorch model that from_torch cannot map to a DAG ReLU network (the message names the
    layer or operation)."""


_TORCH_NAMES = ("from_torch", "theta_from_torch", "to_torch")

# Types show as pathlift.X (and pickle by that name), not pathlift._pathlift.X.
for _name in dir(_pathlift):
    _obj = getattr(_pathlift, _name)
    if isinstance(_obj, type) and not _name.startswith("_"):
        try:
            _obj.__module__ = __name__
        except (AttributeError, TypeError):  # pragma: no cover - immutable type
            pass

__all__ = sorted([n for n in dir(_pathlift) if not n.startswith("_")]
                 + ["UnsupportedModelError", *_TORCH_NAMES])


def __getattr__(name):
    # PEP 562: the PyTorch bridge is imported when first used.
    if name in _TORCH_NAMES:
        from . import torch as _torch_bridge

        return getattr(_torch_bridge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_TORCH_NAMES))


del _name, _obj
