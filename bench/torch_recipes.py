#!/usr/bin/python3
"""PyTorch recipes for path-free quantities of a CNN, written without pathlift (issue 17).

These are what a researcher runs without pathlift, in float64, on a model in eval mode
(torchvision's resnet18/50, vgg11, small CNNs), with pathlift's parameter convention: theta is
``model.parameters()`` flattened, except that each BatchNorm's gamma/beta positions hold its
eval-mode affine map ``y = a x + b`` (``a = gamma / sqrt(running_var + eps)``,
``b = beta - a running_mean``); see :func:`theta`.

All recipes rest on one object, the **linear model** ``G_q(u)``: the model traced by torch.fx
and re-run with

* every parameter replaced by the entry of ``u`` (a flat float64 vector in theta's order; a
  BatchNorm is the affine ``y = u_a x + u_b``),
* every ReLU / LeakyReLU removed (identity), Dropout removed (eval mode),
* every fixed weight ``c`` replaced by ``|c|^q``: a max-pool (weights 1 into a max) becomes a
  sum-pool (padding contributes 0), an average pool's ``1/n`` becomes ``(1/n)^q`` (exactly per
  window: ``count_include_pad=False`` and adaptive pools with uneven windows included),
  a subtraction's -1 becomes +1,
* fed an all-ones input of batch 1, and the outputs summed.

Every path ``p`` from an input entry (or a bias) to an output then contributes
``prod_{e in p} w_e`` with ``w_e = u_{param(e)}`` or ``|c_e|^q``, so
``G_q(u) = sum_p prod_{e in p} w_e``. That is pathnorm-pytorch's method for the path-norm
(``u = |theta|^s``, ``q = s``) and pathcond's for the kernel diagonal (``q = 2``, gradient in
``u`` at ``u = theta^2``).

Functions (each takes a model, or a prepared :class:`LinearModel` to skip the tracing):

* :func:`path_norm_recipe` -- ``(G_s(|theta|^s))^(1/s)``, the L^s path-norm;
* :func:`kernel_diagonal_recipe` -- ``diag K = grad_u G_2(u)`` at ``u = theta^2``;
* :func:`kernel_matvec_recipe` -- ``K v`` by a double backward;
* :func:`path_norm_gradient_recipe` / :func:`l1_gradient_recipe` -- autograd of the norm.

Run as a script it validates the recipes against pathlift's DAG functions on small inputs (the
model unrolled at 3x32x32: ``pathlift.unroll(pathlift.layer_graph_from_torch(model, shape))``),
or with ``--against layer`` against the layer-graph functions:
``PYTHONPATH=build/python /usr/bin/python3 bench/torch_recipes.py [--models ...]``.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

__all__ = ["LinearModel", "theta", "path_norm_recipe", "kernel_diagonal_recipe",
           "kernel_matvec_recipe", "path_norm_gradient_recipe", "l1_gradient_recipe"]

_BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d)
_CONVS = (nn.Conv1d, nn.Conv2d)
_IDENTITY_MODULES = (nn.ReLU, nn.LeakyReLU, nn.Identity, nn.Dropout)
_IDENTITY_FUNCTIONS = {F.relu, torch.relu, F.leaky_relu, F.dropout, torch.relu_,
                       getattr(F, "relu_", None), getattr(F, "leaky_relu_", None)} - {None}
_IDENTITY_METHODS = {"relu", "relu_", "contiguous", "detach", "clone"}
_ADD = {operator.add, operator.iadd, torch.add, operator.sub, operator.isub, torch.sub}
_ADD_METHODS = {"add", "add_", "sub", "sub_"}


def _pair(x: Any, n: int) -> Tuple[int, ...]:
    if isinstance(x, (tuple, list)):
        assert len(x) == n, x
        return tuple(int(v) for v in x)
    return (int(x),) * n


# --------------------------------------------------------------------------------------------
# theta in pathlift's convention, computed here without pathlift


def _bn_affine(bn: nn.Module) -> Tuple[torch.Tensor, torch.Tensor]:
    """(a, b) of an eval-mode BatchNorm, float64: bn(x) = a x + b per channel."""
    if not (bn.affine and bn.track_running_stats and bn.running_var is not None):
        raise ValueError(f"{bn}: an affine BatchNorm with running statistics is needed")
    var = bn.running_var.detach().to(torch.float64)
    mean = bn.running_mean.detach().to(torch.float64)
    a = bn.weight.detach().to(torch.float64) / torch.sqrt(var + float(bn.eps))
    b = bn.bias.detach().to(torch.float64) - a * mean
    return a, b


def theta(model: nn.Module) -> torch.Tensor:
    """pathlift's theta: ``model.parameters()`` flattened in float64, each BatchNorm's
    gamma/beta replaced by a/b (equal to ``pathlift.theta_from_torch(model)``)."""
    params = list(model.named_parameters())
    offsets, off = {}, 0
    for _, p in params:
        offsets[id(p)] = off
        off += p.numel()
    out = torch.cat([p.detach().reshape(-1).to(torch.float64) for _, p in params]) \
        if params else torch.zeros(0, dtype=torch.float64)
    for mod in model.modules():
        if isinstance(mod, _BATCH_NORMS):
            a, b = _bn_affine(mod)
            wo, bo = offsets[id(mod.weight)], offsets[id(mod.bias)]
            out[wo: wo + a.numel()] = a
            out[bo: bo + b.numel()] = b
    return out


# --------------------------------------------------------------------------------------------
# the linear model G_q(u)


def _sum_pool(x: torch.Tensor, kernel, stride, padding, dilation) -> torch.Tensor:
    """Sum over each window (zero padding, floor mode), 1d (N, C, L) or 2d (N, C, H, W)."""
    nd = x.dim() - 2
    assert nd in (1, 2), x.shape
    kernel = _pair(kernel, nd)
    stride = _pair(stride if stride not in (None, ()) else kernel, nd)
    padding = _pair(padding, nd)
    dilation = _pair(dilation, nd)
    if nd == 1:
        return _sum_pool(x.unsqueeze(2), (1,) + kernel, (1,) + stride, (0,) + padding,
                         (1,) + dilation).squeeze(2)
    if dilation == (1, 1):
        # divisor_override=1: the plain sum of the window, padding entries 0. Exact.
        return F.avg_pool2d(x, kernel, stride, padding, ceil_mode=False,
                            count_include_pad=True, divisor_override=1)
    n, c, h, w = x.shape
    cols = F.unfold(x, kernel, dilation=dilation, padding=padding, stride=stride)
    ho = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    wo = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    return cols.view(n, c, kernel[0] * kernel[1], ho * wo).sum(2).view(n, c, ho, wo)


def _avg_pool(x: torch.Tensor, q: float, kernel, stride, padding, count_include_pad: bool
              ) -> torch.Tensor:
    """An average pool whose fixed weights 1/n are raised to q: sum over the window times
    n^-q, n = the kernel area (count_include_pad) or the in-bounds entries of the window."""
    nd = x.dim() - 2
    kernel = _pair(kernel, nd)
    total = _sum_pool(x, kernel, stride, padding, 1)
    if count_include_pad or not any(_pair(padding, nd)):
        return total * float(math.prod(kernel)) ** -q
    ones = torch.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype)
    n = _sum_pool(ones, kernel, stride, padding, 1)
    return total * n ** -q


def _adaptive_matrix(size_in: int, size_out: int, q: float) -> torch.Tensor:
    """(size_out, size_in): row i = (1/|W_i|)^q on PyTorch's window W_i =
    [floor(i In / Out), ceil((i + 1) In / Out))."""
    m = torch.zeros(size_out, size_in, dtype=torch.float64)
    for i in range(size_out):
        lo = (i * size_in) // size_out
        hi = -((-(i + 1) * size_in) // size_out)
        m[i, lo:hi] = float(hi - lo) ** -q
    return m


def _adaptive_avg_pool(x: torch.Tensor, q: float, output_size) -> torch.Tensor:
    """Adaptive average pooling with weights (1/|window|)^q, exact for uneven windows. The pool
    is separable (1/(|W_i| |W_j|) = 1/|W_i| 1/|W_j|): one matrix per axis."""
    nd = x.dim() - 2
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * nd
    sizes = [x.shape[2 + k] if s is None else int(s) for k, s in enumerate(sizes)]
    if nd == 1:
        return torch.matmul(x, _adaptive_matrix(x.shape[2], sizes[0], q).T)
    mh = _adaptive_matrix(x.shape[2], sizes[0], q)
    mw = _adaptive_matrix(x.shape[3], sizes[1], q)
    return torch.matmul(torch.matmul(mh, x), mw.T)


def _bind(fn, args, kwargs, names, defaults):
    """args/kwargs of a functional call as a dict over names (positional first)."""
    out = dict(defaults)
    out.update(zip(names, args))
    out.update(kwargs)
    return out


class _Runner(torch.fx.Interpreter):
    """Runs the traced model as the linear model G_q(u)."""

    def __init__(self, lm: "LinearModel", blocks: Sequence[torch.Tensor], q: float):
        super().__init__(lm.graph_module)
        self.lm, self.q = lm, q
        self.blocks = dict(zip(lm.param_ids, blocks))

    def _block(self, p: torch.Tensor) -> torch.Tensor:
        return self.blocks[id(p)].view(p.shape)

    def get_attr(self, target, args, kwargs):
        value = super().get_attr(target, args, kwargs)
        if isinstance(value, nn.Parameter):
            return self._block(value)
        return value

    def call_module(self, target, args, kwargs):
        mod = self.module.get_submodule(target)
        x = args[0]
        q = self.q
        if isinstance(mod, _IDENTITY_MODULES):
            return x
        if isinstance(mod, nn.Linear):
            return F.linear(x, self._block(mod.weight),
                            None if mod.bias is None else self._block(mod.bias))
        if isinstance(mod, _CONVS):
            if mod.padding_mode != "zeros":
                raise NotImplementedError(f"{target}: padding_mode {mod.padding_mode}")
            conv = F.conv1d if isinstance(mod, nn.Conv1d) else F.conv2d
            return conv(x, self._block(mod.weight),
                        None if mod.bias is None else self._block(mod.bias),
                        mod.stride, mod.padding, mod.dilation, mod.groups)
        if isinstance(mod, _BATCH_NORMS):
            shape = (1, -1) + (1,) * (x.dim() - 2)
            return x * self._block(mod.weight).view(shape) + self._block(mod.bias).view(shape)
        if isinstance(mod, (nn.MaxPool1d, nn.MaxPool2d)):
            if mod.ceil_mode or mod.return_indices:
                raise NotImplementedError(f"{target}: ceil_mode / return_indices")
            return _sum_pool(x, mod.kernel_size, mod.stride, mod.padding, mod.dilation)
        if isinstance(mod, (nn.AvgPool1d, nn.AvgPool2d)):
            if mod.ceil_mode or getattr(mod, "divisor_override", None):
                raise NotImplementedError(f"{target}: ceil_mode / divisor_override")
            return _avg_pool(x, q, mod.kernel_size, mod.stride, mod.padding,
                             mod.count_include_pad)
        if isinstance(mod, (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d)):
            return _adaptive_avg_pool(x, q, mod.output_size)
        if isinstance(mod, nn.Flatten):
            return torch.flatten(x, mod.start_dim, mod.end_dim)
        raise NotImplementedError(f"module {target}: {type(mod).__name__} is not handled")

    def call_function(self, target, args, kwargs):
        q = self.q
        if target in _IDENTITY_FUNCTIONS:
            return args[0]
        if target in _ADD:
            if kwargs.get("alpha", 1) != 1:
                raise NotImplementedError("add/sub with alpha")
            return args[0] + args[1]        # a subtraction's fixed -1 becomes |-1|^q = 1
        name = getattr(target, "__name__", "")
        if name in ("max_pool1d", "max_pool2d", "_max_pool1d", "_max_pool2d",
                    "max_pool1d_with_indices", "max_pool2d_with_indices"):
            a = _bind(target, args, kwargs,
                      ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode",
                       "return_indices"),
                      {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False,
                       "return_indices": False})
            if a["ceil_mode"] or a["return_indices"]:
                raise NotImplementedError("max_pool with ceil_mode / return_indices")
            return _sum_pool(a["input"], a["kernel_size"], a["stride"], a["padding"],
                             a["dilation"])
        if name in ("avg_pool1d", "avg_pool2d"):
            a = _bind(target, args, kwargs,
                      ("input", "kernel_size", "stride", "padding", "ceil_mode",
                       "count_include_pad", "divisor_override"),
                      {"stride": None, "padding": 0, "ceil_mode": False,
                       "count_include_pad": True, "divisor_override": None})
            if a["ceil_mode"] or a["divisor_override"]:
                raise NotImplementedError("avg_pool with ceil_mode / divisor_override")
            return _avg_pool(a["input"], q, a["kernel_size"], a["stride"], a["padding"],
                             a["count_include_pad"])
        if name in ("adaptive_avg_pool1d", "adaptive_avg_pool2d"):
            a = _bind(target, args, kwargs, ("input", "output_size"), {})
            return _adaptive_avg_pool(a["input"], q, a["output_size"])
        if name in ("adaptive_max_pool1d", "adaptive_max_pool2d", "max", "maximum", "sigmoid",
                    "tanh", "mul"):
            raise NotImplementedError(f"function {name} is not handled")
        # views (flatten, cat, getattr, size), F.linear / F.conv2d of get_attr parameters
        # (already replaced by blocks of u): run as they are.
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target in _IDENTITY_METHODS:
            return args[0]
        if target in _ADD_METHODS:
            return args[0] + args[1]
        if target in ("mul", "mul_", "sigmoid", "tanh", "max"):
            raise NotImplementedError(f"method {target} is not handled")
        return super().call_method(target, args, kwargs)


class LinearModel:
    """A model traced once (torch.fx) and evaluated as the linear model ``G_q(u)``.

    ``theta`` is pathlift's theta of the model (float64 tensor of ``d`` entries);
    ``total(u, q)`` is ``sum_p prod_{e in p} w_e`` with ``w_e = u_{param(e)}`` or ``|c_e|^q``
    (a scalar tensor, differentiable in ``u``)."""

    def __init__(self, model: nn.Module, input_shape: Sequence[int]):
        if model.training:
            raise ValueError("call model.eval() first (BatchNorm and Dropout in eval mode)")
        self.model = model
        self.input_shape = tuple(int(s) for s in input_shape)
        self.graph_module = torch.fx.symbolic_trace(model)
        params = list(model.named_parameters())
        self.param_ids = [id(p) for _, p in params]
        self.sizes = [p.numel() for _, p in params]
        self.d = sum(self.sizes)
        # the traced module must hold the same parameter objects (fx copies by reference)
        for p in self.graph_module.parameters():
            if id(p) not in set(self.param_ids):
                raise RuntimeError("torch.fx copied a parameter: offsets would be wrong")
        self.theta = theta(model)
        self.ones = torch.ones((1,) + self.input_shape, dtype=torch.float64)

    def split(self, u: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        """u (d entries) cut into the parameters' blocks (flat views), in theta's order."""
        if u.shape != (self.d,) or u.dtype != torch.float64:
            raise ValueError(f"u must be a float64 vector of {self.d} entries, got "
                             f"{tuple(u.shape)} {u.dtype}")
        return torch.split(u, self.sizes)

    def total(self, u: Union[torch.Tensor, Sequence[torch.Tensor]], q: float) -> torch.Tensor:
        """G_q(u): the sum of the outputs of the linear model on an all-ones input. u: a flat
        float64 vector of d entries, or its blocks (:meth:`split`) -- what autograd then
        differentiates block by block, without a d-sized concatenation (vgg11: 1 GB each).
        (A flat u is split once: its backward is one concatenation, where a slice per
        parameter would write a d-sized zero tensor per parameter.)"""
        blocks = self.split(u) if isinstance(u, torch.Tensor) else list(u)
        if [b.numel() for b in blocks] != self.sizes:
            raise ValueError("u's blocks do not match the model's parameters")
        out = _Runner(self, blocks, q).run(self.ones)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return sum(o.sum() for o in outs)


ModelLike = Union[nn.Module, LinearModel]


def _linear_model(model: ModelLike, input_shape: Optional[Sequence[int]]) -> LinearModel:
    if isinstance(model, LinearModel):
        return model
    if input_shape is None:
        raise ValueError("input_shape is needed with a module")
    return LinearModel(model, input_shape)


def _theta_of(lm: LinearModel, theta_: Optional[Any]) -> torch.Tensor:
    if theta_ is None:
        return lm.theta
    t = torch.as_tensor(np.asarray(theta_, dtype=np.float64))
    if t.shape != (lm.d,):
        raise ValueError(f"theta must have {lm.d} entries")
    return t


# --------------------------------------------------------------------------------------------
# the recipes


def path_norm_recipe(model: ModelLike, input_shape: Optional[Sequence[int]] = None,
                     s: float = 1.0, theta_: Optional[Any] = None) -> float:
    """The L^s path-norm ``(sum_p |Phi_p(theta)|^s)^(1/s)`` by pathnorm-pytorch's method: the
    model with every weight |w|^s (BatchNorm: |a|^s x + |b|^s), no ReLU, max-pools as
    sum-pools, average pools' 1/n as (1/n)^s, on an all-ones input; the outputs summed, to the
    power 1/s. float64: beyond 1.8e308 the sum is inf (pathlift's ScaledReal is not)."""
    lm = _linear_model(model, input_shape)
    t = _theta_of(lm, theta_)
    with torch.no_grad():
        total = float(lm.total(t.abs() ** s, s))
    return total ** (1.0 / s)


def kernel_diagonal_recipe(model: ModelLike, input_shape: Optional[Sequence[int]] = None,
                           theta_: Optional[Any] = None) -> np.ndarray:
    """diag K, ``K[k, k] = sum_p (d Phi_p / d theta_k)^2``, by pathcond's method: the gradient
    of ``G_2(u)`` (the s = 2 linear model: parameters u, fixed weights squared) at
    ``u = theta^2``. Since ``G_2(u) = sum_p prod_{e in p} u_e c_e^2`` and a parameter sits
    on at most one edge of a path, ``dG_2/du_k = sum_{p through k} prod_{e != k} theta_e^2
    c_e^2 = sum_p dPhi[p, k]^2``. Returned in theta's order (float64 numpy, d entries)."""
    lm = _linear_model(model, input_shape)
    u = [(b ** 2).requires_grad_(True) for b in lm.split(_theta_of(lm, theta_))]
    grads = torch.autograd.grad(lm.total(u, 2.0), u)
    return torch.cat(grads).numpy()


def kernel_matvec_recipe(model: ModelLike, input_shape: Optional[Sequence[int]] = None,
                         v: Any = None, theta_: Optional[Any] = None) -> np.ndarray:
    """``K v = dPhi^T (dPhi v)`` by a double backward.

    Let ``G(a, b)`` be the sum of the outputs of the linear model (no ReLU, sum-pools, fixed
    weights squared: ``c^2``) whose parameter values are ``a * b`` entrywise. Each path
    contributes ``prod_{e in p} a_e b_e c_e^2 = Phi_p(a) Phi_p(b)``, so
    ``G(a, b) = sum_p Phi_p(a) Phi_p(b) = Phi(a) . Phi(b)``. Then
    ``grad_b G = dPhi(b)^T Phi(a)``, ``v . grad_b G = Phi(a) . (dPhi(b) v)`` and
    ``grad_a (v . grad_b G) = dPhi(a)^T (dPhi(b) v)``, which at ``a = b = theta`` is
    ``K v``. (This holds with shared parameters too: Phi_p is a product over edges.)
    Costs about two forward and two backward passes; returns a float64 numpy vector."""
    lm = _linear_model(model, input_shape)
    t = _theta_of(lm, theta_)
    v = torch.as_tensor(np.asarray(v, dtype=np.float64))
    if v.shape != (lm.d,):
        raise ValueError(f"v must have {lm.d} entries")
    # a and b: two leaf tensors per parameter block, both views of theta's storage (no copy)
    a = [x.detach().requires_grad_(True) for x in lm.split(t)]
    b = [x.detach().requires_grad_(True) for x in lm.split(t)]
    g = lm.total([x * y for x, y in zip(a, b)], 2.0)
    gb = torch.autograd.grad(g, b, create_graph=True)
    vgb = sum(torch.dot(x, y) for x, y in zip(gb, lm.split(v)))
    del gb, g
    ka = torch.autograd.grad(vgb, a)
    return torch.cat(ka).numpy()


def path_norm_gradient_recipe(model: ModelLike, input_shape: Optional[Sequence[int]] = None,
                              s: float = 1.0, theta_: Optional[Any] = None) -> np.ndarray:
    """The gradient of the L^s path-norm ``||Phi(theta)||_s`` with respect to theta, by
    autograd through ``(G_s(|theta|^s))^(1/s)``. torch's d|x|/dx is sign(x) (0 at 0): at a
    zero weight the entry is 0, pathlift's convention for s >= 1."""
    lm = _linear_model(model, input_shape)
    t = [x.detach().requires_grad_(True) for x in lm.split(_theta_of(lm, theta_))]
    total = lm.total([x.abs() ** s for x in t], s)
    norm = total if s == 1.0 else total ** (1.0 / s)
    grads = torch.autograd.grad(norm, t)
    return torch.cat(grads).numpy()


def l1_gradient_recipe(model: ModelLike, input_shape: Optional[Sequence[int]] = None,
                       theta_: Optional[Any] = None) -> np.ndarray:
    """The gradient of the L1 path-norm ``sum_p |Phi_p(theta)|``:
    ``sign(theta_k) dG_1/du_k`` at ``u = |theta|``, by autograd of the s = 1 recipe
    (``|theta|`` inside the graph carries the sign)."""
    return path_norm_gradient_recipe(model, input_shape, 1.0, theta_)


# --------------------------------------------------------------------------------------------
# small models for the validation (and the tests)


class LeNetPools(nn.Module):
    """LeNet-like: conv, max-pool (padded), conv without bias, avg-pool (count_include_pad
    False, padded), a BatchNorm, a skip by subtraction, adaptive avg-pool with uneven windows,
    two Linear layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool1 = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(6, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.conv3 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool2 = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
        self.pool3 = nn.AdaptiveAvgPool2d((3, 2))
        self.fc1 = nn.Linear(8 * 3 * 2, 16)
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x):
        h = self.pool1(torch.relu(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = torch.relu(self.conv3(h) - h)
        h = self.pool3(self.pool2(h))
        h = F.relu(self.fc1(torch.flatten(h, 1)))
        return self.fc2(h)


class BiasFreeConvNet(nn.Module):
    """Bias-free convolutions (one dilated, one grouped), F.avg_pool2d, F.max_pool2d with
    dilation, a Linear without bias."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, bias=False)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=2, bias=False)
        self.fc = nn.Linear(4 * 2 * 2, 3, bias=False)

    def forward(self, x):
        h = nn.functional.relu(self.conv1(x))
        h = nn.functional.avg_pool2d(h, 2)
        h = self.conv2(h).relu()
        h = nn.functional.max_pool2d(h, 3, stride=2, dilation=2)
        return self.fc(h.flatten(1))


def randomize_batch_norms(model: nn.Module, seed: int = 0) -> nn.Module:
    """Random running statistics and affine parameters for every BatchNorm (so BN is not the
    identity): mean ~ 0.3 N(0, 1), var ~ 0.5 + U(0, 1), gamma ~ 1 + 0.2 N, beta ~ 0.2 N."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, _BATCH_NORMS):
                n = m.num_features

                def r(kind, dtype):
                    return (torch.randn if kind == "n" else torch.rand)(
                        n, generator=g, dtype=torch.float64).to(dtype)

                m.running_mean.copy_(0.3 * r("n", m.running_mean.dtype))
                m.running_var.copy_(0.5 + r("u", m.running_var.dtype))
                m.weight.copy_(1.0 + 0.2 * r("n", m.weight.dtype))
                m.bias.copy_(0.2 * r("n", m.bias.dtype))
    return model


def torchvision_model(name: str, seed: int = 0) -> nn.Module:
    """torchvision's ``name`` (resnet18, resnet50, vgg11, ...), random init under
    torch.manual_seed(seed), random BatchNorm statistics, float64, eval mode.

    ``vgg11-narrow`` / ``vgg11_bn-narrow``: torchvision's VGG class and ``make_layers`` with
    vgg11's configuration ("A") at 1/8 of the widths and a classifier of width 64 (the same
    code paths: max-pools, AdaptiveAvgPool2d((7, 7)), Dropout), small enough to unroll at
    3x32x32 (vgg11 itself unrolls to 2.4e8 edges there, about 17 GB)."""
    import torchvision
    from torchvision.models import vgg
    torch.manual_seed(seed)
    if name.endswith("-narrow"):
        cfg = [c // 8 if isinstance(c, int) else c for c in vgg.cfgs["A"]]
        model = vgg.VGG(vgg.make_layers(cfg, batch_norm=name.startswith("vgg11_bn")))
        width = cfg[-2]
        model.classifier = nn.Sequential(
            nn.Linear(width * 7 * 7, 64), nn.ReLU(True), nn.Dropout(),
            nn.Linear(64, 64), nn.ReLU(True), nn.Dropout(), nn.Linear(64, 10))
    else:
        model = getattr(torchvision.models, name)()
    return randomize_batch_norms(model, seed).double().eval()


# --------------------------------------------------------------------------------------------
# validation against pathlift's DAG functions (small inputs: the network is unrolled)


def _rel(x: float, y: float) -> float:
    return abs(x - y) / max(abs(y), 1e-300)


def _validate(models, against: str = "dag") -> int:
    import time

    import pathlift
    rng = np.random.default_rng(0)
    failures = 0
    print(f"{'model':24} {'d':>10}  {'L1 rel':>9} {'L2 rel':>9} {'diag max rel':>12} "
          f"{'Kv rel':>9} {'grad1 rel':>9}  seconds")
    for label, model, shape in models:
        start = time.perf_counter()
        lm = LinearModel(model, shape)
        if against == "dag":     # the unrolled DAG and its functions (small inputs only)
            net = pathlift.unroll(pathlift.layer_graph_from_torch(model, shape))
        else:                    # the layer graph (pathlift.LayerNetwork), never unrolled
            net = pathlift.from_torch(model, shape)
        th = pathlift.theta_from_torch(model)
        assert np.array_equal(th, lm.theta.numpy()), f"{label}: theta differs from pathlift's"
        errs = {}
        for s in (1.0, 2.0):
            errs[f"L{s:g}"] = _rel(path_norm_recipe(lm, s=s),
                                   float(pathlift.path_norm(net, th, s).norm))
        diag_pl = np.asarray(pathlift.kernel_diagonal(net, th))
        diag_t = kernel_diagonal_recipe(lm)
        nz = diag_pl != 0
        assert np.array_equal(diag_t[~nz], diag_pl[~nz]), f"{label}: zero entries differ"
        errs["diag"] = float(np.max(np.abs(diag_t[nz] - diag_pl[nz]) / diag_pl[nz])) \
            if nz.any() else 0.0
        v = rng.standard_normal(lm.d)
        kv_pl = np.asarray(pathlift.kernel_matvec(net, th, v))
        kv_t = kernel_matvec_recipe(lm, v=v)
        errs["Kv"] = float(np.linalg.norm(kv_t - kv_pl) / np.linalg.norm(kv_pl))
        # the L1 gradient
        g_t = l1_gradient_recipe(lm)
        g_pl = np.asarray(pathlift.path_norm_gradient(net, th, 1.0))
        errs["grad1"] = float(np.linalg.norm(g_t - g_pl) / np.linalg.norm(g_pl))
        ok = (errs["L1"] <= 1e-10 and errs["L2"] <= 1e-10 and errs["diag"] <= 1e-10
              and errs["Kv"] <= 1e-9 and errs["grad1"] <= 1e-10)
        failures += not ok
        print(f"{label:24} {lm.d:>10}  {errs['L1']:9.1e} {errs['L2']:9.1e} "
              f"{errs['diag']:12.1e} {errs['Kv']:9.1e} {errs['grad1']:9.1e}  "
              f"{time.perf_counter() - start:.1f}{'' if ok else '  FAIL'}")
    return failures


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description="validate the recipes against pathlift (small)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--against", choices=("dag", "layer"), default="dag",
                    help="pathlift's DAG functions on the unrolled network (default), or its "
                         "layer-graph functions (from_torch's LayerNetwork)")
    ap.add_argument("--models", default="lenet,biasfree,resnet18,vgg11-narrow,vgg11_bn-narrow",
                    help="comma-separated; also resnet50, vgg11 (too large to unroll here)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    wanted = args.models.split(",")
    models = []
    if "lenet" in wanted:
        models.append(("lenet-pools 3x22x22",
                       randomize_batch_norms(LeNetPools()).double().eval(), (3, 22, 22)))
    if "biasfree" in wanted:
        models.append(("bias-free conv 3x16x16", BiasFreeConvNet().double().eval(),
                       (3, 16, 16)))
    for name in ("resnet18", "resnet50", "vgg11", "vgg11-narrow", "vgg11_bn-narrow"):
        if name in wanted:
            models.append((f"{name} 3x32x32", torchvision_model(name), (3, 32, 32)))
    return 1 if _validate(models, args.against) else 0


if __name__ == "__main__":
    import sys
    sys.exit(main())
