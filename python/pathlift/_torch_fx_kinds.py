"""The torch.fx importer's order statistics and interpolations (private): sorts of channel
groups (GroupSort; MaxMin and the max or min of two tensors, through a concat and gathers around
one ``group_sort`` layer), the k-th largest entry of pooling windows (``x.unfold(...)`` then
``topk`` / ``kthvalue`` / ``max``: ``k_max_pool``, ``max_pool`` for the largest) and linear /
bilinear interpolation (``interpolate``). A mixin of _torch_fx._Importer, which supplies add()
and the ``cached`` dict.

Every order statistic is read from the *fibers* of a tensor along one dim: each fiber is a list
of entries of one layer (their flat indices, a view's rearrangement applied). The fibers of a
sort must be groups of channels at one position, of one size g: they become one pick of the
groups' channels, one after the other, and one ``group_sort`` of g (copies of a channel are
allowed). A max, min, topk or kthvalue also takes fibers that are the windows of a pooling of
one channel (one window shape, strides and dilations), which become ``k_max_pool`` layers.
"""

from __future__ import annotations

import math
from functools import reduce
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._pathlift import LayerOutput
from ._torch_fx_values import (_Arranged, _Problem, _dim, _entries, _index_keys, _number,
                               _shape_of, _show)
from ._torch_fx_views import _Rearrangements

GROUP_SORT = ("GroupSort: x.view(N, C // g, g, H, W).sort(dim=2), or .view(-1, F // g, g)"
              ".sort(dim=-1) on features")
LINEAR_MODES = {"linear": 1, "bilinear": 2}  # interpolating modes: their spatial dims


class _Sorted:
    """What torch.sort, topk, kthvalue and a max or min over a dim return: the values (item 0,
    ``.values``) and the indices (item 1, ``.indices``), which are refused (integers, not a
    function of the entries a network computes)."""

    def __init__(self, values: Any, what: str):
        self.values = values
        self.what = what

    def item(self, key: Any) -> Any:
        if key in (0, -2, "values"):
            return self.values
        if key in (1, -1, "indices"):
            raise _Problem(f"uses the indices of {self.what} (integer positions, not a "
                           "function of the entries pathlift represents): only its values are "
                           "supported")
        raise _Problem(f"item {key!r} of the (values, indices) of {self.what}")


class _Windows:
    """Fibers that are the windows of a pooling of one channel: its geometry, and each fiber's
    output position (its flat index in the pooling's per-sample output)."""

    def __init__(self, kernel: List[int], stride: List[int], dilation: List[int],
                 out: np.ndarray, out_shape: Tuple[int, ...]):
        self.kernel, self.stride, self.dilation = kernel, stride, dilation
        self.out, self.out_shape = out, out_shape


def _channel_groups(shape: Tuple[int, ...], fibers: np.ndarray
                    ) -> Optional[Tuple[List[int], np.ndarray, np.ndarray]]:
    """(the channels of the distinct groups one after the other, each fiber's group, each
    fiber's position) when every fiber is g channels at one position of a tensor of that
    shape (channel: the first dim), else None. Groups keep the order of their channels and of
    their first appearance."""
    g = fibers.shape[-1]
    per = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    channel, position = fibers // per, fibers % per
    if not (position == position[..., :1]).all():
        return None
    rows = channel.reshape(-1, g)
    groups, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    number = np.empty_like(order)
    number[order] = np.arange(order.size)
    return (groups[order].reshape(-1).tolist(), number[inverse.reshape(-1)].reshape(
        fibers.shape[:-1]), position[..., 0])


def _progression(values: np.ndarray) -> Optional[Tuple[int, int]]:
    """(count, step) when the sorted distinct values are 0, step, 2 step, ... (step 1 for one
    value), else None."""
    distinct = np.unique(values)
    if distinct[0] != 0:
        return None
    if distinct.size == 1:
        return 1, 1
    step = int(distinct[1])
    if not np.array_equal(distinct, step * np.arange(distinct.size)):
        return None
    return int(distinct.size), step


def _pooling_windows(shape: Tuple[int, ...], fibers: np.ndarray) -> Optional[_Windows]:
    """The pooling whose windows the fibers are (one channel each, one window shape), else
    None: on a {C, L} or {C, H, W} tensor, without padding."""
    if len(shape) not in (2, 3):
        return None
    spatial = tuple(int(s) for s in shape[1:])
    per = int(np.prod(spatial))
    channel = fibers // per
    if not (channel == channel[..., :1]).all():
        return None
    coords = np.unravel_index(fibers % per, spatial)  # one array per spatial dim
    origin = [c.min(axis=-1) for c in coords]
    offsets = [c - o[..., None] for c, o in zip(coords, origin)]
    g = fibers.shape[-1]
    kernel, dilation = [], []
    for off in offsets:
        found = _progression(off)
        if found is None:
            return None
        kernel.append(found[0])
        dilation.append(found[1])
    if int(np.prod(kernel)) != g:
        return None
    taps = np.zeros_like(fibers)  # each entry's tap, row-major in the window
    for off, d, k in zip(offsets, dilation, kernel):
        taps = taps * k + off // d
    if not (np.sort(taps, axis=-1) == np.arange(g)).all():
        return None
    stride, out_sizes, out = [], [], channel[..., 0]
    for o, size, k, d in zip(origin, spatial, kernel, dilation):
        extent = d * (k - 1) + 1
        nonzero = np.unique(o[o > 0])
        s = int(reduce(math.gcd, nonzero.tolist())) if nonzero.size else size - extent + 1
        n = (size - extent) // s + 1
        stride.append(s)
        out_sizes.append(n)
        out = out * n + o // s
    return _Windows(kernel, stride, dilation, out, (int(shape[0]), *out_sizes))


class _Orders(_Rearrangements):
    """Order statistics and interpolations as layers, given add() and the ``cached`` layers
    (group sorts and concats made once for all their readers: a MaxMin's max and min share
    one group_sort)."""

    cached: Dict[Tuple[Any, ...], LayerOutput]

    # ---- order statistics along a dim ------------------------------------------------------

    def fibers(self, x: Any, dim: Any, what: str) -> Tuple[LayerOutput, np.ndarray, int]:
        """(source, the fibers of x along dim as the last axis, the dim's axis in a sample)."""
        if isinstance(dim, (tuple, list)):
            if len(dim) != 1:
                raise _Problem(f"{what} over dims {_show(list(dim))}: only one dim is supported")
            dim = dim[0]
        if dim is None or not _number(dim):
            raise _Problem(f"{what} over every entry (the batch included): only over one dim "
                           "of each sample")
        source, idx = _entries(x)
        axis = _dim(dim, idx.ndim + 1, f"{what} along") - 1
        return source, np.moveaxis(idx, axis, -1), axis

    def group_sort(self, name: str, source: LayerOutput, channels: List[int], g: int,
                   descending: bool) -> LayerOutput:
        """group_sort of g over the pick of channels (made once per source and channels)."""
        key = ("group_sort", source.layer, tuple(channels), g, descending)
        if key not in self.cached:
            grouped = self.pick(name, source, 0, channels)
            self.cached[key] = self.add("group_sort", name, [grouped], group_size=g,
                                        descending=descending)
        return self.cached[key]

    def order(self, name: str, source: LayerOutput, fibers: np.ndarray, ranks: Sequence[int],
              what: str, descending: bool = True, windows: bool = True
              ) -> Tuple[LayerOutput, np.ndarray]:
        """Order statistics ranks (0: the first of the order, descending or not) of each fiber:
        (layer, its flat indices, of shape fibers.shape[:-1] + (len(ranks),))."""
        g = int(fibers.shape[-1])
        shape = tuple(int(s) for s in source.shape)
        picked = np.asarray(ranks, dtype=np.int64)
        if g == 1:  # one entry: itself
            return source, fibers[..., picked]
        groups = _channel_groups(shape, fibers)
        if groups is not None:
            channels, number, position = groups
            per = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            sorted_ = self.group_sort(name, source, channels, g, descending)
            return sorted_, (number[..., None] * g + picked) * per + position[..., None]
        pools = _pooling_windows(shape, fibers) if windows else None
        if pools is None:
            raise _Problem(self.not_an_order(shape, fibers, what, windows))
        layers = []
        for r in ranks:
            k = r + 1 if descending else g - r  # the k-th largest
            key: Tuple[Any, ...] = ("k_max_pool", source.layer, tuple(pools.kernel),
                                    tuple(pools.stride), tuple(pools.dilation), k)
            if key not in self.cached:
                fields: Dict[str, Any] = dict(kernel=pools.kernel, stride=pools.stride,
                                              padding=[0] * len(pools.kernel),
                                              dilation=pools.dilation, ceil_mode=False)
                self.cached[key] = self.add("max_pool", name, [source], **fields) if k == 1 \
                    else self.add("k_max_pool", name, [source], k=k, **fields)
            layers.append(self.cached[key])
        size = int(np.prod(pools.out_shape))
        out = pools.out[..., None] + size * np.arange(len(ranks))
        if len(layers) == 1:
            return layers[0], out
        key = ("concat", *(t.layer for t in layers))
        if key not in self.cached:
            self.cached[key] = self.add("concat", name, layers, axis=0)
        return self.cached[key], out

    @staticmethod
    def not_an_order(shape: Tuple[int, ...], fibers: np.ndarray, what: str,
                     windows: bool) -> str:
        """Why fibers are not ordered by a layer: the first fiber's entries named."""
        first = fibers.reshape(-1, fibers.shape[-1])[0]
        seen = ", ".join(str(tuple(int(v) for v in np.unravel_index(int(i), shape)))
                         for i in first[:4]) + (", ..." if first.size > 4 else "")
        pooled = (" or the windows of a pooling of one channel (k-max pooling: x.unfold(2, kh, "
                  "sh).unfold(3, kw, sw).flatten(-2).topk(k, dim=-1).values[..., k - 1])"
                  if windows else " (a sort of entries at several positions is not supported)")
        return (f"{what} orders entries {seen} of a {_show(shape)} tensor together: they must "
                f"be channels at one position{pooled}; {GROUP_SORT}")

    def sort(self, name: str, x: Any, dim: Any, descending: Any, what: str) -> _Sorted:
        what = f"{what}(dim={-1 if dim is None else dim})"
        source, fibers, axis = self.fibers(x, -1 if dim is None else dim, what)
        g = int(fibers.shape[-1])
        layer, idx = self.order(name, source, fibers, range(g), what, bool(descending),
                                windows=False)
        return _Sorted(self.arranged(name, layer, np.moveaxis(idx, -1, axis)), what)

    def extreme(self, name: str, x: Any, dim: Any, keepdim: Any, largest: bool,
                what: str) -> Any:
        """The max (largest) or min over one dim: the values (keepdim: the dim kept, size 1)."""
        what = f"{what}(dim={dim})"
        source, fibers, axis = self.fibers(x, dim, what)
        g = int(fibers.shape[-1])
        layer, idx = self.order(name, source, fibers, [0 if largest else g - 1], what)
        return self.arranged(name, layer, np.moveaxis(idx, -1, axis) if keepdim else idx[..., 0])

    def topk(self, name: str, x: Any, k: Any, dim: Any, largest: Any, sorted_: Any) -> _Sorted:
        what = f"topk(dim={-1 if dim is None else dim})"
        if not sorted_:
            raise _Problem("topk with sorted=False leaves the order of the values unspecified")
        source, fibers, axis = self.fibers(x, -1 if dim is None else dim, what)
        g = int(fibers.shape[-1])
        if not _number(k) or not 1 <= int(k) <= g:
            raise _Problem(f"topk of k={k!r} along a dim of size {g}")
        ranks = list(range(int(k))) if largest in (None, True) else \
            list(range(g - 1, g - 1 - int(k), -1))
        layer, idx = self.order(name, source, fibers, ranks, what)
        return _Sorted(self.arranged(name, layer, np.moveaxis(idx, -1, axis)), what)

    def kthvalue(self, name: str, x: Any, k: Any, dim: Any, keepdim: Any) -> _Sorted:
        what = f"kthvalue(dim={-1 if dim is None else dim})"
        source, fibers, axis = self.fibers(x, -1 if dim is None else dim, what)
        g = int(fibers.shape[-1])
        if not _number(k) or not 1 <= int(k) <= g:
            raise _Problem(f"kthvalue of k={k!r} along a dim of size {g}")
        layer, idx = self.order(name, source, fibers, [g - int(k)], what)  # k-th smallest
        return _Sorted(self.arranged(name, layer, np.moveaxis(idx, -1, axis) if keepdim
                                     else idx[..., 0]), what)

    def pairwise(self, name: str, a: Any, b: Any, largest: bool, what: str) -> Any:
        """The entry-wise max or min of two tensors of one shape: order statistics of the
        pairs (a concat when they are entries of two layers)."""
        if _shape_of(a) != _shape_of(b):
            raise _Problem(f"{what} of tensors of shapes {_show(_shape_of(a))} and "
                           f"{_show(_shape_of(b))}: only tensors of one shape (no "
                           "broadcasting) are supported")
        (sa, ia), (sb, ib) = _entries(a), _entries(b)
        if sa.layer != sb.layer:
            if len(sa.shape) != len(sb.shape) or tuple(sa.shape)[1:] != tuple(sb.shape)[1:]:
                raise _Problem(f"{what} of entries of layers of shapes {_show(tuple(sa.shape))} "
                               f"and {_show(tuple(sb.shape))}, which cannot be concatenated")
            key = ("concat", sa.layer, sb.layer)
            if key not in self.cached:
                self.cached[key] = self.add("concat", name, [sa, sb], axis=0)
            ib = ib + int(np.prod(tuple(sa.shape)))
            sa = self.cached[key]
        layer, idx = self.order(name, sa, np.stack([ia, ib], axis=-1), [0 if largest else 1],
                                what)
        return self.arranged(name, layer, idx[..., 0])

    def unfold(self, name: str, x: Any, dim: Any, size: Any, step: Any) -> Any:
        """x.unfold(dim, size, step): the windows along dim as a new last dim."""
        source, idx = _entries(x)
        axis = _dim(dim, idx.ndim + 1, "unfolding") - 1
        length = int(idx.shape[axis])
        if not _number(size) or not _number(step) or not 1 <= int(size) <= length or \
                int(step) < 1:
            raise _Problem(f"unfold of size {size!r} and step {step!r} along a dim of size "
                           f"{length}")
        moved = np.moveaxis(idx, axis, -1)
        starts = range(0, length - int(size) + 1, int(step))
        windows = np.stack([moved[..., s:s + int(size)] for s in starts], axis=-2)
        return self.arranged(name, source, np.moveaxis(windows, -2, axis))

    # ---- interpolation ---------------------------------------------------------------------

    def resize(self, name: str, x: LayerOutput, size: Any, scale_factor: Any, mode: Any,
               align_corners: Any, recompute: Any) -> LayerOutput:
        """nn.Upsample / F.interpolate: 'nearest' (gathers) or 'linear' / 'bilinear' (one
        interpolate layer of PyTorch's weights); other modes are refused before (type_problem).
        """
        if mode == "nearest":
            if align_corners is not None:
                raise _Problem("align_corners is not used by mode 'nearest'")
            return self.upsample(name, x, size, scale_factor, recompute)
        if mode not in LINEAR_MODES:
            raise _Problem(f"mode {mode!r} is not supported")
        dims = len(x.shape) - 1
        if dims != LINEAR_MODES[mode]:
            n = LINEAR_MODES[mode]
            raise _Problem(f"mode {mode!r} interpolates {n} spatial dim{'s' if n > 1 else ''}: "
                           f"the input {_show(tuple(x.shape))} has {dims} (PyTorch: 'linear' "
                           "on (N, C, L), 'bilinear' on (N, C, H, W))")
        if (size is None) == (scale_factor is None):
            raise _Problem("exactly one of size and scale_factor must be given")
        if size is not None and recompute:
            raise _Problem("recompute_scale_factor=True with an explicit size")
        sizes = self.sizes(size if size is not None else scale_factor, dims,
                           "size" if size is not None else "scale_factor")
        out = [int(s) if size is not None else int(math.floor(float(x.shape[1 + i]) * s))
               for i, s in enumerate(sizes)]
        for i, n in enumerate(out):
            if n < 1:
                raise _Problem(f"the output size {n} of spatial dim {i} is empty")
        scales = [] if size is not None or recompute else [float(s) for s in sizes]
        return self.add("interpolate", name, [x], output_size=out,
                        align_corners=bool(align_corners), scales=scales)

    @staticmethod
    def sizes(value: Any, dims: int, what: str) -> List[float]:
        listed = list(value) if isinstance(value, (tuple, list)) else [value] * dims
        if len(listed) != dims or not all(_number(v) for v in listed):
            raise _Problem(f"{what} {value!r} does not give a number for each of the {dims} "
                           "spatial dims")
        return [float(v) for v in listed]

    # ---- rearranged tensors read by index --------------------------------------------------

    def index_arranged(self, name: str, x: _Arranged, key: Any) -> Any:
        """x[:, ..., i] of a rearranged tensor (an unfold's windows, a topk's values): slices
        and integers of non-batch dims."""
        nd = x.idx.ndim + 1
        keys = _index_keys(key, nd)
        if not all(isinstance(k, slice) or (_number(k) and isinstance(k, int)) for k in keys):
            raise _Problem(f"indexing with {key!r} (only slices and integers of non-batch dims "
                           "are supported)")
        try:
            idx = x.idx[tuple(keys[1:])]
        except IndexError as e:
            raise _Problem(f"indexing {key!r}: {e}") from None
        if idx.size == 0:
            raise _Problem(f"indexing {key!r} leaves no entry")
        return self.arranged(name, x.source, idx)
