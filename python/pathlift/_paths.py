"""top_paths and sample_paths as pathlift exports them (private): the engine's functions, and on
a from_torch network each path dict also names its parameters the way PyTorch does
(``"param_names"``: ``"layer1.0.conv1.weight[12, 3, 1, 1]"``, None for a fixed weight); both
return a PathList, a sequence whose dicts are made when read. torch is never imported here: a network can only be a from_torch one once pathlift.torch is loaded.
"""

from __future__ import annotations

import operator
import sys
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Union, cast,
                    overload)

import numpy as np
import numpy.typing as npt

from . import _pathlift
from ._pathlift import LayerNetwork, Network

if TYPE_CHECKING:
    from ._pathlift import Theta

Path = Dict[str, Any]

_PARAM_NAMES_DOC = """
On a from_torch network (pathlift.from_torch) each dict also has param_names: per step the
PyTorch parameter it carries and its index in that parameter's shape,
"layer1.0.conv1.weight[12, 3, 1, 1]" or "fc.bias[7]" (a BatchNorm's "bn.weight[c]" and
"bn.bias[c]" hold a = gamma / sqrt(running_var + eps) and b = beta - a running_mean in theta),
or None for a fixed weight; the names are made for the parameters the paths carry only."""


def _engine_doc(fn: Any) -> str:
    """The engine function's docstring without pybind11's signature line, and param_names."""
    doc = fn.__doc__ or ""
    head, sep, body = doc.partition("\n\n")
    if sep and head.startswith(fn.__name__ + "("):
        doc = body
    return doc.rstrip() + "\n" + _PARAM_NAMES_DOC


class PathList(Sequence[Path]):
    """The paths of top_paths / sample_paths: a read-only sequence of dicts, each made when it
    is read (the paths stay in C++ until then: 10,000 sampled paths of 60 nodes as Python dicts
    are millions of objects). ``len``, indexing (a slice gives a list), iteration, ``==`` with
    another PathList or a list of dicts, ``+`` (a list); ``list(paths)`` makes them all;
    ``values``, ``signs`` and ``log10_abs`` are numpy arrays over every path, made without the
    dicts. On a from_torch network each dict also has ``param_names``."""

    def __init__(self, core: Any, namer: Optional[Callable[[List[int]], List[str]]] = None):
        self._core = core
        self._namer = namer

    def __len__(self) -> int:
        return len(self._core)

    @overload
    def __getitem__(self, i: int) -> Path: ...

    @overload
    def __getitem__(self, i: slice) -> List[Path]: ...

    def __getitem__(self, i: Union[int, slice]) -> Union[Path, List[Path]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        j = operator.index(i)
        if not -n <= j < n:
            raise IndexError(f"path {i}: there are {n} paths")
        path: Path = self._core.path(j % n)
        if self._namer is not None:
            params = path["params"]
            carried = [k for k in params if k is not None]
            names = dict(zip(carried, self._namer(carried)))
            path["param_names"] = [None if k is None else names[k] for k in params]
        return path

    @property
    def values(self) -> npt.NDArray[np.float64]:
        """Phi_p of every path (a float64 array), without making the dicts; RangeError for a
        path beyond float64 (log10_abs and signs hold every path's)."""
        return cast("npt.NDArray[np.float64]", self._core.values())

    @property
    def signs(self) -> npt.NDArray[np.int8]:
        """The sign of every Phi_p (an int8 array: +1, -1, 0)."""
        return cast("npt.NDArray[np.int8]", self._core.signs())

    @property
    def log10_abs(self) -> npt.NDArray[np.float64]:
        """log10 |Phi_p| of every path (a float64 array, -inf for 0), exact at any magnitude."""
        return cast("npt.NDArray[np.float64]", self._core.log10_abs())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (PathList, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[Path]) -> List[Path]:
        return list(self) + list(other)

    def __radd__(self, other: Sequence[Path]) -> List[Path]:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return f"<pathlift.PathList: {len(self)} paths>"


def _paths(net: Any, core: Any) -> PathList:
    """The PathList of core, naming parameters as PyTorch does on a from_torch network."""
    bridge = sys.modules.get("pathlift._torch_network")
    if bridge is None or not isinstance(net, bridge.TorchNetwork):
        return PathList(core)
    return PathList(core, net.theta_layout.entry_names)


def top_paths(net: Network | LayerNetwork, theta: Theta = None, k: int = 10, s: float = 1.0, *,
              threads: int = 0, progress: Any = None, max_memory: int = 0) -> PathList:
    return _paths(net, _pathlift.top_paths(net, theta, k, s, threads=threads, progress=progress,
                                           max_memory=max_memory))


def sample_paths(net: Network | LayerNetwork, theta: Theta = None, n: int = 10, s: float = 1.0,
                 seed: int = 0, *, threads: int = 0, progress: Any = None,
                 max_memory: int = 0) -> PathList:
    return _paths(net, _pathlift.sample_paths(net, theta, n, s, seed, threads=threads,
                                              progress=progress, max_memory=max_memory))


top_paths.__doc__ = _engine_doc(_pathlift.top_paths)
sample_paths.__doc__ = _engine_doc(_pathlift.sample_paths)
