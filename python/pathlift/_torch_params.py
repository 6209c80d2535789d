"""theta <-> a PyTorch module's parameters: the one home of that correspondence (private; the
public faces are pathlift.theta_from_torch, a from_torch network's ``weights``,
pathlift.torch.theta_tensor and pathlift.torch.load_theta).

theta is ``torch.cat([p.flatten() for p in model.parameters()])`` in float64, except that each
eval-mode BatchNorm's ``weight`` (gamma) and ``bias`` (beta) slots hold the affine map
``y = a x + b`` it computes: ``a = gamma / std``, ``b = beta - a mean``, with (std, mean) =
:func:`pathlift.batch_norm_coefficients` of its running statistics (linear in gamma and beta,
so theta is differentiable in the parameters and the map is inverted exactly).
"""

from __future__ import annotations

import bisect
import numbers
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn

from ._pathlift import NetworkError, batch_norm_coefficients


def numpy_of(t: torch.Tensor) -> np.ndarray:
    """A tensor's entries as a flat numpy array (detached, on the CPU; bfloat16 as float32)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    return t.numpy().reshape(-1)


def first_non_finite(t: torch.Tensor) -> Optional[int]:
    """The flat index of the first entry of t that is not finite (nan, inf), or None."""
    bad = torch.nonzero(~torch.isfinite(t.detach().reshape(-1)))
    return int(bad[0, 0]) if bad.numel() else None


class _BatchNorm(NamedTuple):
    module: nn.Module
    where: str   # "batch norm 'layer1.0.bn1'", for messages
    weight: int  # index of gamma (the slot of a) in model.parameters()
    bias: int    # index of beta (the slot of b)


class TorchParameters:
    """A module's parameters as theta, and back.

    ``TorchParameters(model, batch_norms)``: the parameters in ``model.parameters()`` order
    (shared tensors once), ``batch_norms`` the eval-mode BatchNorms whose gamma and beta slots
    hold a and b (those the forward pass calls). It remembers the module's structure -- its
    submodules and parameter tensors, their shapes -- and :meth:`check` refuses a module whose
    structure changed since, so that no theta of another network is ever produced.
    """

    def __init__(self, model: nn.Module, batch_norms: Sequence[nn.Module]):
        self._model = model
        self._named: List[Tuple[str, nn.Parameter]] = list(model.named_parameters())
        self._shapes = [tuple(p.shape) for _, p in self._named]
        self._modules = [m for _, m in model.named_modules()]
        sizes = [p.numel() for _, p in self._named]
        self.offsets: List[int] = [0, *np.cumsum(sizes, dtype=np.int64).tolist()]
        self.num_params = int(self.offsets[-1])
        self._index: Dict[int, int] = {id(p): i for i, (_, p) in enumerate(self._named)}
        names = {id(m): name for name, m in model.named_modules()}
        self._batch_norms = [
            _BatchNorm(bn, f"batch norm '{names.get(id(bn), type(bn).__name__)}'",
                       self._index[id(bn.weight)], self._index[id(bn.bias)])
            for bn in batch_norms]

    # ---- the layout ----------------------------------------------------------------------

    @property
    def names(self) -> List[str]:
        return [name for name, _ in self._named]

    @property
    def tensors(self) -> List[nn.Parameter]:
        return [p for _, p in self._named]

    def holds(self, p: Any) -> bool:
        """Whether p is one of the module's parameter tensors (one entry block of theta)."""
        return id(p) in self._index

    def offset(self, p: nn.Parameter) -> int:
        """Where parameter tensor p starts in theta."""
        return self.offsets[self._index[id(p)]]

    def name(self, p: nn.Parameter) -> str:
        return self._named[self._index[id(p)]][0]

    def entry_name(self, k: int) -> str:
        """The name of theta[k]: its parameter's name and its index in that parameter's shape,
        ``"layer1.0.conv1.weight[12, 3, 1, 1]"``, ``"fc.bias[7]"`` (a 0-d parameter: its name
        alone). A BatchNorm's ``weight[c]`` / ``bias[c]`` hold a and b in theta. IndexError
        for k outside [0, d)."""
        k = int(k)
        if not 0 <= k < self.num_params:
            raise IndexError(f"theta[{k}]: theta has d = {self.num_params} entries")
        i = bisect.bisect_right(self.offsets, k) - 1  # the last block starting at or before k
        name = self._named[i][0]
        shape = self._shapes[i]
        if not shape:
            return name
        # Row-major unravel by hand: np.unravel_index costs more than the rest for 10^5 names.
        rest = k - self.offsets[i]
        index = []
        for n in reversed(shape):
            rest, j = divmod(rest, n)
            index.append(j)
        return f"{name}[{', '.join(map(str, reversed(index)))}]"

    def entry_names(self, ks: Sequence[int]) -> List[str]:
        """entry_name of each k, vectorised over the parameter blocks (10^5 names in a
        fraction of a second)."""
        k = np.asarray(ks, dtype=np.int64)
        if k.size and (k.min() < 0 or k.max() >= self.num_params):
            bad = int(k[(k < 0) | (k >= self.num_params)][0])
            raise IndexError(f"theta[{bad}]: theta has d = {self.num_params} entries")
        block = np.searchsorted(np.asarray(self.offsets), k, side="right") - 1
        out: List[str] = [""] * len(k)
        for b in np.unique(block):
            at = np.flatnonzero(block == b)
            name, shape = self._named[int(b)][0], self._shapes[int(b)]
            if not shape:
                for i in at:
                    out[i] = name
                continue
            index = np.unravel_index(k[at] - self.offsets[int(b)], shape)
            rows = np.stack(index, axis=1).tolist()
            for i, row in zip(at.tolist(), rows):
                out[i] = f"{name}[{', '.join(map(str, row))}]"
        return out

    def split(self, flat: torch.Tensor) -> List[torch.Tensor]:
        """A d-entry tensor cut into blocks shaped like the parameters."""
        return [block.view(shape) for shape, block in
                zip(self._shapes, torch.split(flat, [p.numel() for _, p in self._named]))]

    def check(self, model: nn.Module) -> None:
        """NetworkError when ``model`` is not the module of this layout any more: a submodule
        or a parameter tensor replaced, added or removed, or a parameter of another shape."""
        why = None
        if model is not self._model:
            why = "another module is given"
        elif [m for _, m in model.named_modules()] != self._modules:
            why = "its submodules were replaced, added or removed"
        else:
            named = list(model.named_parameters())
            if len(named) != len(self._named) or any(
                    p is not q for (_, p), (_, q) in zip(named, self._named)):
                why = "its parameter tensors were replaced, added or removed"
            else:
                for (name, p), shape in zip(named, self._shapes):
                    if tuple(p.shape) != shape:
                        why = f"parameter '{name}' has shape {tuple(p.shape)}, was {shape}"
                        break
        if why is not None:
            raise NetworkError(
                f"the PyTorch module changed since its network was made ({why}): its network "
                "describes the old structure; call pathlift.from_torch(model) again (for "
                "PathSGD: make the optimizer again)")

    # ---- theta ---------------------------------------------------------------------------

    def coefficients(self, bn: _BatchNorm) -> Tuple[np.ndarray, np.ndarray]:
        """(std, mean) of a BatchNorm from its current running statistics."""
        m: Any = bn.module
        std, mean = batch_norm_coefficients(numpy_of(m.running_mean).astype(np.float64),
                                            numpy_of(m.running_var).astype(np.float64),
                                            float(m.eps), bn.where)
        return std, mean

    def theta(self) -> np.ndarray:
        """theta at the current parameters: a new float64 numpy array of d entries."""
        if not self._named:
            return np.zeros(0)
        theta = np.concatenate([numpy_of(p) for _, p in self._named], dtype=np.float64)
        for bn in self._batch_norms:
            std, mean = self.coefficients(bn)
            a = theta[self.offsets[bn.weight]: self.offsets[bn.weight + 1]]
            b = theta[self.offsets[bn.bias]: self.offsets[bn.bias + 1]]
            a /= std  # gamma / std, in place
            b -= a * mean
        return theta

    def tensor(self) -> torch.Tensor:
        """theta as a float64 tensor computed from the parameters by torch operations
        (gradients flow back to them), on their device."""
        flat = [p.reshape(-1).to(torch.float64) for _, p in self._named]
        if not flat:
            return torch.zeros(0, dtype=torch.float64)
        for bn in self._batch_norms:
            gamma = flat[bn.weight]
            std, mean = (torch.from_numpy(c).to(gamma.device) for c in self.coefficients(bn))
            a = gamma / std
            flat[bn.weight] = a
            flat[bn.bias] = flat[bn.bias] - a * mean
        return torch.cat(flat)

    def load(self, theta: Any) -> None:
        """Writes theta into the parameters, in place (under torch.no_grad(); each keeps its
        dtype and device): a BatchNorm's a and b become gamma = a std and beta = b + a mean for
        its current running statistics. ValueError for a theta that is not d real numbers or
        whose value for a parameter is not finite in that parameter's dtype (1e300 for a
        float32 one), naming the entry and the parameter; nothing is written then."""
        given = _numbers(theta)
        values = given.copy()  # the BatchNorm slots are inverted in it
        if values.ndim != 1 or values.size != self.num_params:
            raise ValueError(f"theta must be a 1-D vector of d = {self.num_params} numbers, got "
                             f"shape {values.shape}")
        if not np.all(np.isfinite(values)):
            k = int(np.flatnonzero(~np.isfinite(values))[0])
            raise ValueError(f"theta[{k}] is not finite: {values[k]}")
        for bn in self._batch_norms:
            std, mean = self.coefficients(bn)
            a = values[self.offsets[bn.weight]: self.offsets[bn.weight + 1]]
            b = values[self.offsets[bn.bias]: self.offsets[bn.bias + 1]]
            b += a * mean  # beta, before a becomes gamma
            a *= std
        blocks = []
        for k, (name, p) in enumerate(self._named):
            block = torch.from_numpy(values[self.offsets[k]: self.offsets[k + 1]]).to(
                dtype=p.dtype, device=p.device)
            i = first_non_finite(block)
            if i is not None:
                j = self.offsets[k] + i
                was = f"theta[{j}] = {given[j]:.6g}" if values[j] == given[j] else \
                    f"theta[{j}] = {given[j]:.6g} (gamma or beta {values[j]:.6g} by its batch " \
                    "norm's running statistics)"
                raise ValueError(
                    f"{was} is not finite as entry {i} of parameter '{name}', of dtype "
                    f"{str(p.dtype).replace('torch.', '')} (finite range +-"
                    f"{torch.finfo(p.dtype).max:.6g}): nothing was written")
            blocks.append(block.reshape(p.shape))
        with torch.no_grad():
            for (_, p), block in zip(self._named, blocks):
                p.copy_(block)


def _numbers(theta: Any) -> np.ndarray:
    """theta as a float64 numpy array; ValueError for complex numbers, TypeError naming the
    first entry that is not a real number (a string, an object)."""
    if isinstance(theta, torch.Tensor):
        if theta.is_complex():
            raise ValueError(f"theta must be real numbers, got a complex tensor "
                             f"({theta.dtype})")
        theta = numpy_of(theta)
    try:
        values = np.asarray(theta)
    except (TypeError, ValueError) as e:
        raise TypeError(f"theta must be real numbers, got {type(theta).__name__}: {e}") from None
    if values.dtype.kind == "c":
        raise ValueError(f"theta must be real numbers, got complex ({values.dtype})")
    if values.dtype.kind not in "biuf":
        # the entries as given (numpy turns [1.0, 'x'] into strings throughout)
        flat = values.reshape(-1) if isinstance(theta, np.ndarray) else \
            np.asarray(theta, dtype=object).reshape(-1)
        k = next((k for k, v in enumerate(flat) if not isinstance(v, numbers.Real)), None)
        if k is not None:
            raise TypeError(f"theta must be real numbers, got theta[{k}] = {flat[k]!r} "
                            f"(dtype {values.dtype})")
    return values.astype(np.float64)
