"""The certified functional dimension of a PyTorch model on a batch (pathlift.torch)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._pathlift import FunctionalDimension, functional_dimension as _functional_dimension
from ._torch_network import network_of
from ._torch_trace import InputShape


def functional_dimension(model: Any, X: Any, *, input_shape: InputShape = None,
                         numerical: Optional[bool] = None, threads: int = 0,
                         max_memory: int = 0) -> FunctionalDimension:
    """The rank of the batch Jacobian of ``model`` on the batch ``X`` (N, *input_shape), at
    the model's current parameters, certified: :func:`pathlift.functional_dimension` on
    ``from_torch(model)`` with ``X`` flattened per sample. ``input_shape`` defaults to
    ``X.shape[1:]``. The parameters are :func:`theta_from_torch`'s: a BatchNorm's folded
    ``a, b``, which its ``weight, bias`` map onto one to one per channel, so the rank is the
    same. ``model``: a module in eval mode (or its from_torch network). A FunctionalDimension
    (``status``, ``lower``, ``upper``, ``rank``, ``pivot_rows``, ``to_dict()``).
    docs/functional-dimension.md."""
    x = X.detach().cpu().numpy() if hasattr(X, "detach") else np.asarray(X)
    if x.ndim < 2:
        raise ValueError(f"X must be a batch (N, *input_shape); got shape {tuple(x.shape)}")
    shape = input_shape if input_shape is not None else tuple(int(s) for s in x.shape[1:])
    net = network_of(model, shape, what="pathlift.torch.functional_dimension")
    flat = np.ascontiguousarray(x.reshape(x.shape[0], -1), dtype=np.float64)
    return _functional_dimension(net, net.theta_layout.theta(), flat, numerical=numerical,
                                 threads=threads, max_memory=max_memory)
