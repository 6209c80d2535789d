#!/usr/bin/python3
"""PyTorch recipes for path-free quantities of a CNN, written without pathlift (issue 17).

These are what a researcher runs without pathlift, in float64, on a model in eval mode
(torchvision's resnet18/50, vgg11, small CNNs), with pathlift's parameter convention: theta is
``model.parameters()`` flattened, except that each BatchNorm's gamma/beta positions hold its
eval-mode affine map ``y = a x + b`` (``a = gamma / sqrt(running_var + eps)``,
``b = beta - a running_mean``); see :func:`theta`.

All recipes rest on one object, the **linear model** ``G_q(u)``: the model traced by torch.fx
(a tracer that keeps ``h += y`` in place and unpacks ``a, b = x.chunk(2)``) and re-run with

* every parameter replaced by the entry of ``u`` (a flat float64 vector in theta's order; a
  BatchNorm is the affine ``y = u_a x + u_b``; a ConvTranspose1d/2d runs
  ``F.conv_transpose1d/2d`` with its blocks, weight ``(in, out / groups, k...)``, stride,
  padding, output_padding (or forward's ``output_size``), groups, dilation),
* every ReLU / LeakyReLU, and ``clamp`` / ``clip`` / ``clamp_min`` with ``min=0`` and no max,
  removed (identity; out of place a copy, so that aliases behave as in the model), Dropout
  removed (eval mode),
* every fixed weight ``c`` replaced by ``|c|^q``: a max-pool (weights 1 into a max) becomes a
  sum-pool over exactly PyTorch's windows (padding contributes 0; ``ceil_mode=True``: PyTorch's
  output size, the last windows clipped to the input); an average pool's ``1/n`` becomes
  ``(1/n)^q`` exactly per window, ``n`` PyTorch's divisor (``count_include_pad`` either way,
  ``ceil_mode``, whose last windows count only up to ``L + p``; ``divisor_override``), and
  adaptive pools with uneven windows; ``mean`` over non-batch dimensions is the sum times
  ``(1/n)^q`` (``sum``: weights 1); ``x * c``, ``c * x``, ``x / c`` for a python number ``c``
  scale by ``|c|^q`` (``|1/c|^q``); a subtraction's (and negation's) -1 becomes +1,
* operations that copy, select or permute entries (coefficients 1) run as they are: reflect /
  replicate / circular padding (a Conv with such a ``padding_mode`` pads by it before the
  u-weight convolution, as PyTorch does; ``F.pad``, ``nn.ReflectionPad``/``ReplicationPad``/
  ``ZeroPad`` modules; constant padding only by 0), nearest upsampling (``nn.Upsample``,
  ``F.interpolate``), ``chunk``, ``split``, indexing, ``view``, ``reshape``, ``transpose``,
  ``permute``, ``flatten``, ``contiguous``, ``repeat``, ``torch.cat``, ``torch.stack``,
* fed an all-ones input of batch 1, and the outputs summed.

Anything else raises ``NotImplementedError`` naming the operation, never a silently wrong
number: other activations (ReLU6 = clamp(0, 6), Hardswish, SiLU, sigmoid, ...), products of
two tensors, a number divided by a tensor, a constant added, bilinear upsampling, a fixed
floating-point tensor (a buffer) used in forward, reductions over the batch dimension, max-pools
with ``return_indices``, any operation not listed.

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

import dis
import inspect
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
_IDENTITY_MODULES = (nn.Identity, torch.nn.modules.dropout._DropoutNd)   # Dropout: eval
_IDENTITY_FUNCTIONS = {F.relu, torch.relu, F.leaky_relu, F.dropout, torch.relu_,
                       getattr(F, "relu_", None), getattr(F, "leaky_relu_", None)} - {None}
_ADD = {operator.add, operator.iadd, torch.add, operator.sub, operator.isub, torch.sub}


def _pair(x: Any, n: int) -> Tuple[int, ...]:
    if isinstance(x, (tuple, list)):
        if len(x) != n:
            raise ValueError(f"{x}: {n} entries expected")
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


def _is_default_stride(stride: Any) -> bool:
    return stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output size (pooling_output_shape): floor or ceil of
    (L + 2p - d(k-1) - 1) / s, plus 1; in ceil mode decremented when the last window would
    start in the right padding ((out-1) s >= L + p)."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    if out < 1:
        raise ValueError(f"pooling: output size {out} < 1 (L {size}, kernel {k}, stride {s}, "
                         f"padding {p}, dilation {d})")
    return out


def _pool_args(x: torch.Tensor, kernel, stride, padding, dilation):
    nd = x.dim() - 2
    if nd not in (1, 2):
        raise NotImplementedError(f"pooling of a {x.dim()}-d tensor (batched 1d/2d only)")
    kernel = _pair(kernel, nd)
    stride = _pair(kernel if _is_default_stride(stride) else stride, nd)
    return nd, kernel, stride, _pair(padding, nd), _pair(dilation, nd)


def _sum_pool(x: torch.Tensor, kernel, stride, padding, dilation, ceil_mode: bool = False
              ) -> torch.Tensor:
    """Sum over each of PyTorch's pooling windows, 1d (N, C, L) or 2d (N, C, H, W): output
    ``o`` sums the entries ``o s - p + j d`` (j < k) that lie in the input (padding counts 0);
    the output size is PyTorch's (:func:`_pool_out`), floor or ceil mode. In ceil mode the
    last windows may reach beyond the right padding: they are clipped to the input too."""
    nd, kernel, stride, padding, dilation = _pool_args(x, kernel, stride, padding, dilation)
    if nd == 1:
        return _sum_pool(x.unsqueeze(2), (1,) + kernel, (1,) + stride, (0,) + padding,
                         (1,) + dilation, ceil_mode).squeeze(2)
    sizes = tuple(x.shape[2:])
    outs = [_pool_out(L, k, s, p, d, ceil_mode)
            for L, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
    # zeros: p before, and after as many as the last window needs (at least p)
    right = [max(p, (o - 1) * s + d * (k - 1) + 1 - L - p)
             for L, k, s, p, d, o in zip(sizes, kernel, stride, padding, dilation, outs)]
    if right != list(padding):
        x = F.pad(x, (padding[1], right[1], padding[0], right[0]))   # constant 0
        padding = (0, 0)
    if dilation == (1, 1):
        # divisor_override=1: the plain sum of the window, padding entries 0. Exact.
        total = F.avg_pool2d(x, kernel, stride, padding, ceil_mode=False,
                             count_include_pad=True, divisor_override=1)
    else:
        n, c, h, w = x.shape
        cols = F.unfold(x, kernel, dilation=dilation, padding=padding, stride=stride)
        ho = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        wo = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
        total = cols.view(n, c, kernel[0] * kernel[1], ho * wo).sum(2).view(n, c, ho, wo)
    return total[:, :, :outs[0], :outs[1]]


def _avg_divisors(size: int, k: int, s: int, p: int, ceil_mode: bool,
                  count_include_pad: bool) -> torch.Tensor:
    """One axis of PyTorch's average-pool divisors (cpu_avg_pool): for output o,
    start = o s - p, end = min(start + k, L + p), pool_size = end - start; the window clipped
    to [0, L); the divisor is pool_size (count_include_pad) or the clipped count. (The 2d
    divisor is the product of the two axes' numbers.)"""
    out = _pool_out(size, k, s, p, 1, ceil_mode)
    div = []
    for o in range(out):
        start = o * s - p
        end = min(start + k, size + p)
        pool_size = end - start
        clipped = min(end, size) - max(start, 0)
        div.append(pool_size if count_include_pad else clipped)
    return torch.tensor(div, dtype=torch.float64)


def _avg_pool(x: torch.Tensor, q: float, kernel, stride, padding, count_include_pad: bool,
              ceil_mode: bool = False, divisor_override: Optional[int] = None) -> torch.Tensor:
    """An average pool whose fixed weights 1/n are raised to q: the sum over each window
    (clipped to the input) times n^-q, n = PyTorch's divisor of that output
    (:func:`_avg_divisors`: the kernel area, or in ceil mode the part of the window within
    the padded input, with count_include_pad; else the in-bounds entries of the window), or
    |divisor_override|^-q."""
    nd, kernel, stride, padding, _ = _pool_args(x, kernel, stride, padding, 1)
    total = _sum_pool(x, kernel, stride, padding, 1, ceil_mode)
    if divisor_override is not None:
        if divisor_override == 0:
            raise ZeroDivisionError("avg_pool: divisor_override 0")
        return total * float(abs(divisor_override)) ** -q
    divs = [_avg_divisors(L, k, s, p, ceil_mode, count_include_pad)
            for L, k, s, p in zip(x.shape[2:], kernel, stride, padding)]
    n = divs[0] if nd == 1 else torch.outer(divs[0], divs[1])   # integers: exact
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


def _reduce(x: torch.Tensor, q: float, dims, keepdim: bool, mean: bool, what: str
            ) -> torch.Tensor:
    """x.sum(dims) (weights 1) or x.mean(dims) (weights (1/n)^q, n the reduced entries),
    over non-batch dimensions only."""
    if dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0):
        raise NotImplementedError(f"{what} over every dimension (the batch one included)")
    dims = [dims] if isinstance(dims, int) else list(dims)
    dims = sorted({d % x.dim() for d in dims})
    if 0 in dims:
        raise NotImplementedError(f"{what} over the batch dimension")
    out = x.sum(dims, keepdim=keepdim)
    if mean:
        out = out * float(math.prod(x.shape[d] for d in dims)) ** -q
    return out


def _bind(fn, args, kwargs, names, defaults):
    """args/kwargs of a functional call as a dict over names (positional first)."""
    out = dict(defaults)
    out.update(zip(names, args))
    out.update(kwargs)
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _has_tensor(*values: Any) -> bool:
    for v in values:
        if isinstance(v, torch.Tensor):
            return True
        if isinstance(v, (tuple, list)) and _has_tensor(*v):
            return True
        if isinstance(v, dict) and _has_tensor(*v.values()):
            return True
    return False


# Operations that copy, select or permute entries (every coefficient 1), run as they are.
# (torch.fx records F.linear / F.conv* of parameters as functions too: the parameters, from
# get_attr, are then already blocks of u, and these are linear in the weights.)
_PASS_FUNCTIONS = {operator.getitem, getattr, torch.flatten, torch.cat, torch.stack,
                   torch.reshape, torch.transpose, torch.permute, torch.chunk, torch.split,
                   torch.squeeze, torch.unsqueeze, torch.narrow, torch.t, torch.flip,
                   torch.roll, torch.movedim, torch.swapaxes, torch.swapdims,
                   torch.tensor_split, torch.unflatten, torch.channel_shuffle,
                   getattr(torch, "concat", None), getattr(F, "channel_shuffle", None),
                   F.linear, F.conv1d, F.conv2d, F.conv_transpose1d,
                   F.conv_transpose2d} - {None}
_PASS_METHODS = {"view", "view_as", "reshape", "reshape_as", "transpose", "permute", "flatten",
                 "unflatten", "contiguous", "size", "dim", "numel", "chunk", "split",
                 "tensor_split", "unsqueeze", "squeeze", "expand", "expand_as", "repeat",
                 "narrow", "t", "movedim", "swapaxes", "swapdims", "flip", "roll"}
# modules that copy entries: padding by reflection/replication/circularly or by zeros,
# channel shuffles, unflatten (upsampling: nearest modes only, checked below)
_PASS_MODULES = tuple(m for m in (
    getattr(nn, name, None) for name in (
        "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
        "CircularPad1d", "CircularPad2d", "ZeroPad1d", "ZeroPad2d", "ChannelShuffle",
        "Unflatten")) if m is not None)
_CONSTANT_PADS = tuple(m for m in (getattr(nn, n, None) for n in (
    "ConstantPad1d", "ConstantPad2d")) if m is not None)
_UPSAMPLES = (nn.Upsample, nn.UpsamplingNearest2d)
_NEAREST = ("nearest", "nearest-exact")
_CONV_TRANSPOSES = (nn.ConvTranspose1d, nn.ConvTranspose2d)
_MUL = {operator.mul, operator.imul, torch.mul, torch.multiply}
_DIV = {operator.truediv, operator.itruediv, torch.div, torch.divide, torch.true_divide}
_INPLACE = {operator.iadd, operator.isub, operator.imul, operator.itruediv}
_CLAMP_FUNCTIONS = {f for f in (torch.clamp, torch.clip, torch.clamp_min,
                                getattr(torch, "clamp_", None), getattr(torch, "clip_", None),
                                getattr(torch, "clamp_min_", None)) if f is not None}
_NEG = {operator.neg, torch.neg, torch.negative}


class _Runner(torch.fx.Interpreter):
    """Runs the traced model as the linear model G_q(u).

    Aliasing follows the model's: an in-place operation (``+=``, ``.add_()``, ``*= 2.0``,
    ``relu_``, ``ReLU(inplace=True)``) changes its tensor in place, an out-of-place one
    makes a new tensor (an out-of-place ReLU: a copy), so that a later reader of an alias sees
    what it sees in the model."""

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
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            # a fixed tensor used by an operation: its entries would have to be |c|^q
            raise NotImplementedError(f"attribute {target}: a fixed floating-point tensor (not "
                                      f"a parameter) used in forward")
        return value

    @staticmethod
    def _identity(x: torch.Tensor, inplace: bool) -> torch.Tensor:
        """A ReLU (or clamp(min=0)) in the linear model: x itself when in place, else a copy."""
        return x if inplace else x.clone()

    def _scale(self, x, c, inplace: bool, divide: bool, what: str):
        """x * c or x / c for a python number c: the fixed weight c (1/c) becomes |c|^q."""
        if not _is_number(c):
            raise NotImplementedError(f"{what} of a tensor by {type(c).__name__} (only by a "
                                      f"python number)")
        if divide and c == 0:
            raise ZeroDivisionError(f"{what} by 0")
        factor = float(abs(c)) ** (-self.q if divide else self.q)
        return x.mul_(factor) if inplace else x * factor

    def _mul_div(self, args, kwargs, inplace: bool, divide: bool, what: str):
        a = args[0] if args else kwargs.get("input")
        b = args[1] if len(args) > 1 else kwargs.get("other")
        if divide and kwargs.get("rounding_mode") is not None:
            raise NotImplementedError(f"{what} with rounding_mode {kwargs['rounding_mode']!r}")
        if not _has_tensor(a, b):      # shape arithmetic on python numbers
            return a / b if divide else a * b
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            raise NotImplementedError(f"{what} of two tensors (a product is not linear)")
        if isinstance(a, torch.Tensor):
            return self._scale(a, b, inplace, divide, what)
        if divide:
            raise NotImplementedError(f"{what} of a number by a tensor (a reciprocal)")
        return self._scale(b, a, False, False, what)

    def _add_sub(self, args, kwargs, inplace: bool, what: str):
        a = args[0] if args else kwargs.get("input")
        b = args[1] if len(args) > 1 else kwargs.get("other")
        if kwargs.get("alpha", 1) != 1 or (len(args) > 2 and args[2] != 1):
            raise NotImplementedError(f"{what} with alpha")
        if not _has_tensor(a, b):      # shape arithmetic on python numbers
            return operator.sub(a, b) if "sub" in what else operator.add(a, b)
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            other = b if isinstance(a, torch.Tensor) else a
            if other != 0:
                raise NotImplementedError(f"{what} of a tensor and the constant {other!r}")
            x = a if isinstance(a, torch.Tensor) else b
            return x if inplace and x is a else x.clone()
        # a subtraction's fixed -1 becomes |-1|^q = 1
        return a.add_(b) if inplace else a + b

    def _clamp(self, args, kwargs, inplace: bool, only_min: bool, what: str):
        names = ("input", "min") if only_min else ("input", "min", "max")
        a = _bind(None, args, kwargs, names, {"min": None, "max": None})
        if not (_is_number(a["min"]) and a["min"] == 0 and a["max"] is None):
            raise NotImplementedError(f"{what} with min={a['min']!r}, max={a['max']!r} (only "
                                      f"min=0 without max, a ReLU)")
        return self._identity(a["input"], inplace)

    def call_module(self, target, args, kwargs):
        mod = self.module.get_submodule(target)
        x = args[0]
        q = self.q
        if isinstance(mod, (nn.ReLU, nn.LeakyReLU)):
            return self._identity(x, bool(mod.inplace))
        if isinstance(mod, _IDENTITY_MODULES):
            if not isinstance(mod, nn.Identity) and mod.training and mod.p > 0:
                raise NotImplementedError(f"{target}: Dropout in training mode")
            return x
        if isinstance(mod, nn.Linear):
            return F.linear(x, self._block(mod.weight),
                            None if mod.bias is None else self._block(mod.bias))
        if isinstance(mod, _CONVS):
            conv = F.conv1d if isinstance(mod, nn.Conv1d) else F.conv2d
            padding = mod.padding
            if mod.padding_mode != "zeros":
                # as PyTorch's _conv_forward: pad by the mode (entries copied), then convolve
                x = F.pad(x, mod._reversed_padding_repeated_twice, mode=mod.padding_mode)
                padding = 0
            return conv(x, self._block(mod.weight),
                        None if mod.bias is None else self._block(mod.bias),
                        mod.stride, padding, mod.dilation, mod.groups)
        if isinstance(mod, _CONV_TRANSPOSES):
            if mod.padding_mode != "zeros":
                raise NotImplementedError(f"{target}: padding_mode {mod.padding_mode}")
            nd = 1 if isinstance(mod, nn.ConvTranspose1d) else 2
            output_size = args[1] if len(args) > 1 else kwargs.get("output_size")
            output_padding = mod.output_padding if output_size is None else \
                mod._output_padding(x, output_size, list(mod.stride), list(mod.padding),
                                    list(mod.kernel_size), nd, list(mod.dilation))
            conv_t = F.conv_transpose1d if nd == 1 else F.conv_transpose2d
            return conv_t(x, self._block(mod.weight),
                          None if mod.bias is None else self._block(mod.bias),
                          mod.stride, mod.padding, output_padding, mod.groups, mod.dilation)
        if isinstance(mod, _BATCH_NORMS):
            shape = (1, -1) + (1,) * (x.dim() - 2)
            return x * self._block(mod.weight).view(shape) + self._block(mod.bias).view(shape)
        if isinstance(mod, (nn.MaxPool1d, nn.MaxPool2d)):
            if mod.return_indices:
                raise NotImplementedError(f"{target}: return_indices")
            return _sum_pool(x, mod.kernel_size, mod.stride, mod.padding, mod.dilation,
                             mod.ceil_mode)
        if isinstance(mod, (nn.AvgPool1d, nn.AvgPool2d)):
            return _avg_pool(x, q, mod.kernel_size, mod.stride, mod.padding,
                             mod.count_include_pad, mod.ceil_mode,
                             getattr(mod, "divisor_override", None))
        if isinstance(mod, (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d)):
            return _adaptive_avg_pool(x, q, mod.output_size)
        if isinstance(mod, nn.Flatten):
            return torch.flatten(x, mod.start_dim, mod.end_dim)
        if isinstance(mod, _CONSTANT_PADS):
            if mod.value != 0:
                raise NotImplementedError(f"{target}: padding by the constant {mod.value}")
            return mod(x)
        if isinstance(mod, _UPSAMPLES):
            if mod.mode not in _NEAREST:
                raise NotImplementedError(f"{target}: upsampling mode {mod.mode!r} (nearest "
                                          f"only: its entries are copies)")
            return mod(x)
        if isinstance(mod, _PASS_MODULES):
            return mod(x)
        raise NotImplementedError(f"module {target}: {type(mod).__name__} is not handled")

    def call_function(self, target, args, kwargs):
        q = self.q
        if target in _IDENTITY_FUNCTIONS:
            name = target.__name__
            if target is F.dropout:
                a = _bind(target, args, kwargs, ("input", "p", "training", "inplace"),
                          {"p": 0.5, "training": True, "inplace": False})
                if a["training"] and a["p"] > 0:
                    raise NotImplementedError("F.dropout with training=True (random)")
                return a["input"]
            if target is F.relu:
                a = _bind(target, args, kwargs, ("input", "inplace"), {"inplace": False})
            elif target is F.leaky_relu:
                a = _bind(target, args, kwargs, ("input", "negative_slope", "inplace"),
                          {"inplace": False})
            else:           # torch.relu (a new tensor), torch.relu_, F.relu_, F.leaky_relu_
                a = _bind(target, args, kwargs, ("input",), {})
                a["inplace"] = name.endswith("_")
            return self._identity(a["input"], bool(a["inplace"]))
        if target in _ADD:
            return self._add_sub(args, kwargs, target in _INPLACE,
                                 getattr(target, "__name__", "add"))
        if target in _MUL or target in _DIV:
            return self._mul_div(args, kwargs, target in _INPLACE, target in _DIV,
                                 getattr(target, "__name__", "mul"))
        if target in _NEG:
            if not _has_tensor(args, kwargs):
                return super().call_function(target, args, kwargs)   # shape arithmetic
            return args[0].clone()        # the fixed -1 becomes |-1|^q = 1
        if target in _CLAMP_FUNCTIONS:
            name = target.__name__
            return self._clamp(args, kwargs, name.endswith("_"), "clamp_min" in name, name)
        name = getattr(target, "__name__", "")
        if name in ("max_pool1d", "max_pool2d", "_max_pool1d", "_max_pool2d",
                    "max_pool1d_with_indices", "max_pool2d_with_indices"):
            a = _bind(target, args, kwargs,
                      ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode",
                       "return_indices"),
                      {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False,
                       "return_indices": False})
            if a["return_indices"] or name.endswith("with_indices"):
                raise NotImplementedError("max_pool with return_indices")
            return _sum_pool(a["input"], a["kernel_size"], a["stride"], a["padding"],
                             a["dilation"], a["ceil_mode"])
        if name in ("avg_pool1d", "avg_pool2d"):
            a = _bind(target, args, kwargs,
                      ("input", "kernel_size", "stride", "padding", "ceil_mode",
                       "count_include_pad", "divisor_override"),
                      {"stride": None, "padding": 0, "ceil_mode": False,
                       "count_include_pad": True, "divisor_override": None})
            return _avg_pool(a["input"], q, a["kernel_size"], a["stride"], a["padding"],
                             a["count_include_pad"], a["ceil_mode"], a["divisor_override"])
        if name in ("adaptive_avg_pool1d", "adaptive_avg_pool2d"):
            a = _bind(target, args, kwargs, ("input", "output_size"), {})
            return _adaptive_avg_pool(a["input"], q, a["output_size"])
        if target in (torch.mean, torch.sum):
            a = _bind(target, args, kwargs, ("input", "dim", "keepdim"),
                      {"dim": kwargs.get("axis"), "keepdim": False})
            if a.get("dtype") not in (None, torch.float64):
                raise NotImplementedError(f"{name} with dtype {a['dtype']}")
            return _reduce(a["input"], q, a["dim"], a["keepdim"], target is torch.mean,
                           f"torch.{name}")
        if target is F.pad or name in ("pad", "_pad"):
            a = _bind(target, args, kwargs, ("input", "pad", "mode", "value"),
                      {"mode": "constant", "value": None})
            if a["mode"] == "constant" and a["value"] not in (None, 0):
                raise NotImplementedError(f"F.pad by the constant {a['value']}")
            if a["mode"] not in ("constant", "reflect", "replicate", "circular"):
                raise NotImplementedError(f"F.pad mode {a['mode']!r}")
            return super().call_function(target, args, kwargs)
        if target is F.interpolate or name in ("interpolate", "upsample", "upsample_nearest"):
            if name != "upsample_nearest":
                a = _bind(target, args, kwargs, ("input", "size", "scale_factor", "mode"),
                          {"mode": "nearest"})
                if a["mode"] not in _NEAREST:
                    raise NotImplementedError(f"{name} mode {a['mode']!r} (nearest only: its "
                                              f"entries are copies)")
            return super().call_function(target, args, kwargs)
        if target in _PASS_FUNCTIONS:
            return super().call_function(target, args, kwargs)
        if getattr(target, "__module__", None) in ("_operator", "operator", "math",
                                                    "builtins") \
                and not _has_tensor(args, kwargs):
            return super().call_function(target, args, kwargs)   # shape arithmetic
        raise NotImplementedError(f"function {getattr(target, '__module__', '')}."
                                  f"{name or target} is not handled")

    def call_method(self, target, args, kwargs):
        if target in ("relu", "relu_"):
            return self._identity(args[0], target == "relu_")
        if target in ("detach", "detach_"):
            return args[0]
        if target == "clone":
            return args[0].clone()
        if target in ("add", "add_", "sub", "sub_", "__add__", "__sub__", "__iadd__",
                      "__isub__"):
            return self._add_sub(args, kwargs, target.endswith("_") or "__i" in target,
                                 target)
        if target in ("mul", "mul_", "multiply", "multiply_", "div", "div_", "divide",
                      "divide_", "true_divide", "true_divide_"):
            return self._mul_div(args, kwargs, target.endswith("_"),
                                 not target.startswith("mul"), target)
        if target in ("neg", "negative"):
            return args[0].clone()
        if target in ("clamp", "clip", "clamp_min", "clamp_", "clip_", "clamp_min_"):
            return self._clamp(args, kwargs, target.endswith("_"), "clamp_min" in target,
                               target)
        if target in ("mean", "sum"):
            a = _bind(None, args, kwargs, ("input", "dim", "keepdim"),
                      {"dim": kwargs.get("axis"), "keepdim": False})
            if a.get("dtype") not in (None, torch.float64):
                raise NotImplementedError(f"{target} with dtype {a['dtype']}")
            return _reduce(a["input"], self.q, a["dim"], a["keepdim"], target == "mean",
                           f".{target}()")
        if target in _PASS_METHODS:
            return super().call_method(target, args, kwargs)
        raise NotImplementedError(f"method {target} is not handled")


class _Proxy(torch.fx.Proxy):
    """torch.fx's Proxy records ``h += y`` as ``h + y`` (a new tensor): this one records
    ``operator.iadd`` (and isub, imul, ...), run in place, so that h's aliases see the change as
    in the model. Its ``__iter__`` finds the ``UNPACK_SEQUENCE`` of ``a, b = x.chunk(2)`` by
    offset (torch 1.13's indexing of the instructions is wrong on Python 3.11)."""

    def __iter__(self):
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if caller is not None:
            for inst in dis.get_instructions(caller.f_code):
                if inst.offset == caller.f_lasti:
                    if inst.opname == "UNPACK_SEQUENCE":
                        return (self[i] for i in range(inst.argval))
                    break
        return self.tracer.iter(self)


def _inplace_operator(op: Any) -> Any:
    def method(self: _Proxy, other: Any) -> Any:
        return self.tracer.create_proxy("call_function", op, (self, other), {})
    return method


for _op in (operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
            operator.imod, operator.ipow, operator.imatmul):
    setattr(_Proxy, f"__{_op.__name__}__", _inplace_operator(_op))


class _Tracer(torch.fx.Tracer):
    def proxy(self, node: torch.fx.Node) -> torch.fx.Proxy:
        return _Proxy(node, self)


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
        self.graph_module = torch.fx.GraphModule(model, _Tracer().trace(model))
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
        # a fresh input each run: the model may change its input in place
        out = _Runner(self, blocks, q).run(self.ones.clone())
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


def torchvision_model(name: str, seed: int = 0, **kwargs: Any) -> nn.Module:
    """torchvision's ``name`` (resnet18, resnet50, vgg11, ...), random init under
    torch.manual_seed(seed), random BatchNorm statistics, float64, eval mode; ``kwargs`` go
    to the builder (``aux_logits=False, init_weights=False`` for googlenet, inception_v3).

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
        model = getattr(torchvision.models, name)(**kwargs)
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
