"""The torch.fx importer's rearrangements of entries (private): views, transposes, permutes,
chunks and splits, indexing, paddings and nearest upsampling, each made of gathers and flattens.
A mixin of _torch_fx._Importer, which supplies add()."""

from __future__ import annotations

import math
from typing import Any, Sequence, Tuple

import numpy as np

from ._pathlift import LayerOutput
from ._torch_fx_values import (_Arranged, _Batch, _Problem, _dim, _entries, _index_keys,
                               _nearest_indices, _pad_indices, _shape_of, _show)


class _Rearrangements:
    """The gathers of PyTorch's rearrangements, given add() (one layer)."""

    def add(self, kind: str, name: str, inputs: Sequence[LayerOutput], **fields: Any
            ) -> LayerOutput:
        raise NotImplementedError  # _Importer.add

    def pick(self, name: str, x: LayerOutput, axis: int, indices: Sequence[int]) -> LayerOutput:
        raise NotImplementedError  # _Importer.pick

    # ---- rearrangements of entries: picks ----------------------------------------------------

    def arranged(self, name: str, source: LayerOutput, idx: np.ndarray) -> Any:
        """Entries idx of source as a layer when its shape is one (whole channels, permuted,
        picked or repeated; a vector), else kept symbolic until a later view."""
        shape = tuple(source.shape)
        n = idx.size
        flat = idx.reshape(-1)
        if idx.ndim == len(shape) and idx.shape[1:] == shape[1:] and n:
            per = int(np.prod(shape[1:]))
            rows = idx.reshape(idx.shape[0], per)
            channels = rows[:, 0] // per
            if np.array_equal(rows, channels[:, None] * per + np.arange(per)):
                return self.pick(name, source, 0, channels.tolist())
        if idx.ndim == 1:
            vector = source if len(shape) == 1 else self.add("flatten", name, [source])
            return self.pick(name, vector, 0, flat.tolist())
        return _Arranged(source, idx)

    def view(self, name: str, x: Any, shape: Sequence[Any]) -> Any:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        source, idx = _entries(x)
        n = idx.size
        if not shape or not (isinstance(shape[0], _Batch) or shape[0] == -1):
            raise _Problem(f"reshaping a {_shape_of(x)} sample to {_show(shape)}: the batch "
                           "(x.size(0) or -1) must stay first")
        rest = [int(v) for v in shape[1:]]
        if shape[0] == -1 and -1 in rest:
            raise _Problem(f"reshaping to {_show(shape)}: two sizes are -1")
        known = int(np.prod([v for v in rest if v != -1])) if rest else 1
        if -1 in rest:
            if known == 0 or n % known:
                raise _Problem(f"reshaping a {_shape_of(x)} sample to {_show(shape)}")
            rest[rest.index(-1)] = n // known
        if int(np.prod(rest)) != n or not rest:
            raise _Problem(f"reshaping a {_shape_of(x)} sample ({n} entries) to {_show(shape)}")
        return self.arranged(name, source, idx.reshape(rest))

    def transpose(self, name: str, x: Any, d0: Any, d1: Any) -> Any:
        source, idx = _entries(x)
        nd = idx.ndim + 1
        a, b = _dim(d0, nd, "transposing"), _dim(d1, nd, "transposing")
        return self.arranged(name, source, np.swapaxes(idx, a - 1, b - 1))

    def permute(self, name: str, x: Any, dims: Sequence[Any]) -> Any:
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
        source, idx = _entries(x)
        nd = idx.ndim + 1
        ds = [int(d) + nd if int(d) < 0 else int(d) for d in dims]
        if sorted(ds) != list(range(nd)) or ds[0] != 0:
            raise _Problem(f"permute{tuple(dims)} of a {nd}-dim tensor: the batch must stay "
                           "first")
        return self.arranged(name, source, np.transpose(idx, [d - 1 for d in ds[1:]]))

    def chunks(self, name: str, x: LayerOutput, sizes: Sequence[int], dim: int) -> Tuple[Any, ...]:
        axis = _dim(dim, len(x.shape) + 1, "splitting") - 1
        out = []
        at = 0
        for k, size in enumerate(sizes):
            out.append(self.pick(f"{name}_{k}", x, axis, range(at, at + size)))
            at += size
        return tuple(out)

    def chunk(self, name: str, x: LayerOutput, n: Any, dim: Any) -> Tuple[Any, ...]:
        axis = _dim(dim, len(x.shape) + 1, "splitting")
        size = int(x.shape[axis - 1])
        each = -(-size // int(n))
        return self.chunks(name, x, [min(each, size - s) for s in range(0, size, each)], axis)

    def split(self, name: str, x: LayerOutput, sections: Any, dim: Any) -> Tuple[Any, ...]:
        axis = _dim(dim, len(x.shape) + 1, "splitting")
        size = int(x.shape[axis - 1])
        if isinstance(sections, int):
            sizes = [min(sections, size - s) for s in range(0, size, sections)]
        else:
            sizes = [int(v) for v in sections]
            if sum(sizes) != size:
                raise _Problem(f"split sizes {sizes} do not add up to {size}")
        return self.chunks(name, x, sizes, axis)

    def index(self, name: str, x: LayerOutput, key: Any) -> LayerOutput:
        """x[:, a:b, ...]: slices of non-batch dims (gathers)."""
        nd = len(x.shape) + 1
        keys = _index_keys(key, nd)
        out = x
        for axis, k in enumerate(keys[1:]):
            if not isinstance(k, slice):
                raise _Problem(f"indexing with {k!r} (only slices of non-batch dims are "
                               "supported: an index drops a dimension)")
            picked = list(range(int(out.shape[axis])))[k]
            if not picked:
                raise _Problem(f"the slice {k!r} of dim {axis + 1} is empty")
            out = self.pick(name, out, axis, picked)
        return out

    def pad(self, name: str, x: LayerOutput, pads: Sequence[Any], mode: str) -> LayerOutput:
        """F.pad: pairs from the last dim backwards, as gathers (copies of entries)."""
        nd = len(x.shape) + 1
        if len(pads) % 2 or len(pads) // 2 > nd - 1:
            raise _Problem(f"padding {tuple(pads)} does not fit a tensor of {nd} dims")
        out = x
        for k in range(len(pads) // 2):
            axis = len(x.shape) - 1 - k
            out = self.pick(name, out, axis, _pad_indices(int(out.shape[axis]), int(pads[2 * k]),
                                                          int(pads[2 * k + 1]), mode))
        return out

    def upsample(self, name: str, x: LayerOutput, size: Any, scale_factor: Any,
                 recompute: Any) -> LayerOutput:
        """Nearest upsampling (or downsampling) as one pick per spatial dim."""
        dims = len(x.shape) - 1
        if dims < 1:
            raise _Problem("nearest interpolation needs spatial dims")
        if (size is None) == (scale_factor is None):
            raise _Problem("exactly one of size and scale_factor must be given")
        out = x
        for i in range(dims):
            n_in = int(x.shape[1 + i])
            if size is not None:
                n_out = int(size[i] if isinstance(size, (tuple, list)) else size)
                scale = None
            else:
                f = float(scale_factor[i] if isinstance(scale_factor, (tuple, list))
                          else scale_factor)
                n_out = int(math.floor(n_in * f))
                scale = None if recompute else f
            if n_out < 1:
                raise _Problem(f"the output size {n_out} of spatial dim {i} is empty")
            out = self.pick(name, out, 1 + i, _nearest_indices(n_in, n_out, scale))
        return out
