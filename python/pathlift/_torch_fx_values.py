"""The values the torch.fx importer (_torch_fx.py) gives the traced graph's nodes and the index
arithmetic of its rearrangements (paddings, nearest resizing): private."""

from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.fx
from torch import nn

from ._pathlift import LayerOutput


class _Param(NamedTuple):
    """A parameter fetched by get_attr (for F.linear)."""
    param: nn.Parameter


class _Batch:
    """The batch size (x.size(0), x.shape[0]): only a view/reshape argument."""


class _Shape(NamedTuple):
    """x.shape of a traced tensor (for x.shape[0])."""
    shape: Tuple[int, ...]


class _Unknown:
    """The value of an operation that was refused (already reported): consumers stay quiet."""


_UNKNOWN = _Unknown()


class _Problem(Exception):
    """Why one operation cannot be imported (recorded by builder.problem)."""


def _pair(v: Any, n: int) -> List[int]:
    if isinstance(v, (tuple, list)):
        return [int(x) for x in v]
    return [int(v)] * n


class _Call(NamedTuple):
    """An operation and the values of its arguments (in-place operations applied)."""
    node: torch.fx.Node
    args: List[Any]
    kwargs: Dict[str, Any]

    def arg(self, index: int, name: str, default: Any = None) -> Any:
        return self.args[index] if len(self.args) > index else self.kwargs.get(name, default)


def _failed(a: Any) -> bool:
    return a is _UNKNOWN or (isinstance(a, LayerOutput) and not a.ok) or (
        isinstance(a, (tuple, list)) and any(_failed(x) for x in a))


class _Arranged(NamedTuple):
    """The entries of a traced tensor rearranged into a shape no layer holds (a view to five
    dims, then a transpose: the middle of a channel shuffle): ``idx`` has the logical per-sample
    shape and holds each entry's flat index in ``source``. It becomes a layer (a pick, a
    flatten) once the shape is one a layer holds again."""
    source: LayerOutput
    idx: np.ndarray


def _tensor(x: Any) -> LayerOutput:
    if isinstance(x, _Arranged):
        raise _Problem(f"reads a rearranged tensor of per-sample shape {tuple(x.idx.shape)} "
                       "(a view, transpose or permute that does not come back to a shape a "
                       "layer holds: only permutations of channels and flattens do)")
    if not isinstance(x, LayerOutput):
        raise _Problem(f"expects a traced tensor, got {type(x).__name__}")
    return x


def _entries(x: Any) -> Tuple[LayerOutput, np.ndarray]:
    """A traced tensor as (source, idx): its entries' flat indices in the source."""
    if isinstance(x, _Arranged):
        return x.source, x.idx
    t = _tensor(x)
    return t, np.arange(int(np.prod(t.shape)), dtype=np.int64).reshape(tuple(t.shape))


def _shape_of(x: Any) -> Tuple[int, ...]:
    return tuple(x.idx.shape) if isinstance(x, _Arranged) else tuple(_tensor(x).shape)


def _number(c: Any) -> bool:
    return isinstance(c, (int, float)) and not isinstance(c, bool)


def _dim(d: Any, nd: int, what: str) -> int:
    """A dim of a tensor of nd dims (the batch included) as 1..nd-1; the batch is refused."""
    k = int(d) + nd if int(d) < 0 else int(d)
    if not 0 <= k < nd:
        raise _Problem(f"{what} dim {d} does not fit a tensor of {nd} dims")
    if k == 0:
        raise _Problem(f"{what} the batch dimension (dim 0)")
    return k


def _flatten_dims(start_dim: int, end_dim: int, nd: int) -> Tuple[int, int]:
    """flatten's (start_dim, end_dim) of a tensor of nd dims (the batch included) as
    1 <= s <= e < nd; flattening the batch, or dims out of range, refused."""
    s = start_dim + nd if start_dim < 0 else start_dim
    e = end_dim + nd if end_dim < 0 else end_dim
    if s == 0:
        raise _Problem("flattening the batch dimension (start_dim=0)")
    if not 1 <= s <= e < nd:
        raise _Problem(f"flatten dims ({start_dim}, {end_dim}) do not fit a tensor of {nd} dims")
    return s, e


def _index_keys(key: Any, nd: int) -> List[Any]:
    """x[key] of a tensor of nd dims (the batch included) as one key per leading dim, the
    ellipsis expanded; the batch must be taken whole."""
    keys = list(key) if isinstance(key, tuple) else [key]
    if keys.count(Ellipsis) > 1:
        raise _Problem("indexing with two ellipses")
    if Ellipsis in keys:
        at = keys.index(Ellipsis)
        keys[at:at + 1] = [slice(None)] * (nd - len(keys) + 1)
    if len(keys) > nd or not keys or keys[0] != slice(None):
        raise _Problem(f"indexing {key!r}: the batch dimension must be taken whole")
    return keys


def _pad_indices(size: int, lo: int, hi: int, mode: str) -> List[int]:
    """The input index of each output position of one padded dimension (negative pads crop):
    reflect (without the edge), replicate (the edge) or circular; constant only crops."""
    if mode == "reflect" and (lo >= size or hi >= size):
        raise _Problem(f"reflect padding ({lo}, {hi}) must be smaller than the size {size}")
    if mode == "circular" and (lo > size or hi > size):
        raise _Problem(f"circular padding ({lo}, {hi}) must be at most the size {size}")
    if mode == "constant" and (lo > 0 or hi > 0):
        raise _Problem("constant padding in a separate operation is not supported (a value "
                       "that is not an entry); pad inside the convolution or pooling")
    out = []
    for j in range(-lo, size + hi):
        if mode == "reflect":
            j = -j if j < 0 else 2 * (size - 1) - j if j >= size else j
        elif mode == "replicate":
            j = min(max(j, 0), size - 1)
        elif mode == "circular":
            j %= size
        out.append(j)
    if not out:
        raise _Problem(f"padding ({lo}, {hi}) leaves nothing of a dimension of size {size}")
    return out


def _nearest_indices(size: int, out: int, scale: Optional[float]) -> List[int]:
    """PyTorch's nearest source index of each output position (float32 arithmetic, as its
    kernel: the scale is 1 / scale_factor when one is given, else size / out)."""
    if out == size:
        return list(range(size))
    if out == 2 * size:
        return [o >> 1 for o in range(out)]
    f = np.float32(1.0 / scale) if scale is not None and scale > 0 else \
        np.float32(np.float32(size) / np.float32(out))
    return [min(int(np.floor(np.float32(o) * f)), size - 1) for o in range(out)]


def _show(shape: Sequence[Any]) -> str:
    return "(" + ", ".join("batch" if isinstance(s, _Batch) else str(s) for s in shape) + ")"


def _leaky(slope: float) -> str:
    if slope == 0.0:
        return "relu"
    if not math.isfinite(slope):
        raise _Problem(f"LeakyReLU slope {slope} is not finite")
    return f"leaky_relu:{float(slope)!r}"


def _conv_padding(padding: Any, kernel: List[int], dilation: List[int]) -> List[int]:
    """torch's padding attribute as per-dimension numbers ('same' when symmetric)."""
    if padding == "valid":
        return [0] * len(kernel)
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        if any(t % 2 for t in total):
            raise _Problem("padding='same' with an even window pads asymmetrically "
                           "(not supported)")
        return [t // 2 for t in total]
    return _pair(padding, len(kernel))
