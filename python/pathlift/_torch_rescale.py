"""Copies of a PyTorch model that compute the same function with other parameters (private;
re-exported by pathlift.torch): :func:`rescale` moves the parameters along a rescaling orbit
(:func:`pathlift.rescale`: Phi unchanged), :func:`fold_batchnorm` folds each eval-mode
BatchNorm into the Conv or Linear before it (:func:`pathlift.fold_batch_norm`)."""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

import numpy as np
import torch
import torch.fx
from torch import nn

from ._pathlift import BalanceReport, UnsupportedModelError, fold_batch_norm
from ._pathlift import enorm as _enorm
from ._pathlift import path_cond as _path_cond
from ._pathlift import rescale as _rescale
from ._torch_network import TorchNetwork, from_torch, load_theta, network_of
from ._torch_params import numpy_of
from ._torch_trace import InputShape, Traced, module_of, own_forward, refuse_training_mode

_BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d)
_FOLDS_INTO = (nn.Conv1d, nn.Conv2d, nn.Linear)


def rescale(model: nn.Module, lambdas: Any, input_shape: InputShape = None) -> nn.Module:
    """A copy of ``model`` rescaled by ``lambdas``: one factor > 0 per hidden node of
    ``from_torch(model, input_shape)`` (in ``net.unrolled().hidden`` order; for an MLP, the
    hidden neurons layer by layer), the weights into a node multiplied by its factor and the
    weights out of it divided by it (:func:`pathlift.rescale`). The copy computes the same
    function and has the same Phi; ``model`` is left unchanged. Parameters keep their dtype
    and device.

    With shared parameters (convolutions), the factors must be equal across each channel, else
    ValueError names the parameter that would need two factors. A model with BatchNorm is
    refused (its parameters are not theta: theta holds the folded affine a, b):
    :func:`fold_batchnorm` first."""
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            raise ValueError(
                f"rescale: the model has a {type(module).__name__}, whose weight and bias are not "
                "theta (theta holds its folded affine map a, b); fold it into the previous layer "
                "first (pathlift.torch.fold_batchnorm)")
    refuse_training_mode(model, "pathlift.torch.rescale")
    net = from_torch(model, input_shape)
    rescaled = _rescale(net, None, lambdas)
    out = copy.deepcopy(model)
    load_theta(out, rescaled)
    return out


def _foldable(traced: Traced) -> List[Tuple[str, str]]:
    """(conv or linear, batch norm) module names: each eval-mode BatchNorm (with running
    statistics) whose input is the output of a Conv1d/Conv2d/Linear read by nothing else, both
    modules called once."""
    model = traced.model
    calls: Dict[str, int] = {}
    readers: Dict[torch.fx.Node, int] = {}
    for node in traced.nodes:
        if node.op == "call_module":
            calls[str(node.target)] = calls.get(str(node.target), 0) + 1
        for a in node.all_input_nodes:
            a = traced.read(node, a)
            readers[a] = readers.get(a, 0) + 1
    pairs = []
    for node in traced.nodes:
        if node.op != "call_module" or not node.args or \
                not isinstance(node.args[0], torch.fx.Node):
            continue
        bn: Any = module_of(model, node)
        source = traced.read(node, node.args[0])
        if type(bn) not in _BATCH_NORMS or bn.running_var is None or \
                source.op != "call_module" or readers.get(source) != 1 or \
                node in traced.view_reads or calls[str(node.target)] != 1 or \
                calls[str(source.target)] != 1:
            continue
        layer = module_of(model, source)
        if any(own_forward(layer, c) for c in _FOLDS_INTO):
            pairs.append((str(source.target), str(node.target)))
    return pairs


def fold_batchnorm(model: nn.Module) -> nn.Module:
    """A copy of ``model`` in which each eval-mode BatchNorm (with running statistics) that
    follows a Conv1d, Conv2d or Linear -- the BatchNorm its output's only reader, each module
    called once -- is folded into it: the layer's weight scaled by a per output channel, its
    bias ``a bias + b`` (made when it had none), with (a, b) = :func:`pathlift.fold_batch_norm`
    of the BatchNorm, which becomes ``nn.Identity``. The copy computes the same function;
    its theta has no a, b slots (d smaller by two per channel of each folded BatchNorm), and it
    can be rescaled (:func:`rescale`). Other BatchNorms are kept. ``model`` is left unchanged;
    parameters keep their dtype and device. The model is traced by torch.fx
    (UnsupportedModelError when it cannot be, or when it has what the trace does not see --
    forward hooks, weight_norm, parametrizations -- whose function a fold would change), and
    so is a model with a BatchNorm or a Dropout in training mode (as by from_torch: the fold
    is of the eval-mode function)."""
    refuse_training_mode(model, "pathlift.torch.fold_batchnorm")
    out = copy.deepcopy(model)
    traced = Traced(out)
    if traced.problems:
        raise UnsupportedModelError(
            f"cannot fold the BatchNorms of {type(model).__name__} exactly: "
            + "; ".join(traced.problems))
    for layer_name, bn_name in _foldable(traced):
        layer: Any = out.get_submodule(layer_name)
        bn: Any = out.get_submodule(bn_name)
        channels = layer.weight.shape[0]
        gamma = numpy_of(bn.weight) if bn.weight is not None else np.ones(channels)
        beta = numpy_of(bn.bias) if bn.bias is not None else np.zeros(channels)
        a, b = fold_batch_norm(gamma, beta, numpy_of(bn.running_mean),
                               numpy_of(bn.running_var), float(bn.eps),
                               f"batch norm '{bn_name}'")
        weight = layer.weight.detach().to(torch.float64)
        bias = layer.bias.detach().to(torch.float64) if layer.bias is not None else \
            torch.zeros(channels, dtype=torch.float64, device=weight.device)
        a_t, b_t = (torch.from_numpy(v).to(weight.device) for v in (a, b))
        with torch.no_grad():
            layer.weight.copy_(weight * a_t.view(-1, *([1] * (weight.dim() - 1))))
            new_bias = (a_t * bias + b_t).to(layer.weight.dtype)
            if layer.bias is None:
                layer.bias = nn.Parameter(new_bias)
            else:
                layer.bias.copy_(new_bias)
        parent, _, child = bn_name.rpartition(".")
        setattr(out.get_submodule(parent) if parent else out, child, nn.Identity())
    return out


# What path_cond and enorm say to a module in training mode, theirs or their network's.
_BALANCE_EVAL = ("call model.eval() first: the rescaled model then computes the same eval-mode "
                 "function, not the same training-mode one")


def _balance(model: Any, how: Any, input_shape: InputShape, max_sweeps: int,
             tolerance: float, what: str) -> BalanceReport:
    # The module is changed in place: refused in training mode, given as a network too.
    refuse_training_mode(model.module if isinstance(model, TorchNetwork) else model, what,
                         _BALANCE_EVAL)
    net = network_of(model, input_shape, what=what)
    report = how(net, net.theta_layout.theta(), max_sweeps=max_sweeps, tolerance=tolerance)
    load_theta(net.module, report.theta)
    return report


def path_cond(model: Any, *, input_shape: InputShape = None, max_sweeps: int = 1000,
              tolerance: float = 1e-10) -> BalanceReport:
    """PathCond (Lebeurrier, Vayer, Gribonval, 2026) on any imported architecture: rescales the
    model's hidden units (per channel class for CNNs; a BatchNorm's a, b move with its channel)
    **in place**, the function unchanged, to minimise ``n log(sum_k G_kk) - sum_k log G_kk``
    over the rescaling symmetries (G the path kernel's diagonal; :func:`pathlift.path_cond`).
    Call it before training. ``model``: a module or its from_torch network. A BatchNorm is
    rescaled as its eval-mode affine map: a model with a BatchNorm in training mode (given
    itself or as its network) is refused, naming it, before anything changes (the training-mode
    function would not be kept; docs/balance.md#batchnorm). Returns a
    :class:`pathlift.BalanceReport` (sweeps, criterion before / after, stationarity).
    docs/balance.md."""
    return _balance(model, _path_cond, input_shape, max_sweeps, tolerance,
                    "pathlift.torch.path_cond")


def enorm(model: Any, *, input_shape: InputShape = None, max_sweeps: int = 1000,
          tolerance: float = 1e-10) -> BalanceReport:
    """ENorm (Stock et al., 2019) on any imported architecture: rescales the model in place, the
    function unchanged, to minimise ``sum_k theta_k^2`` over the rescaling symmetries (every
    class's incoming and outgoing squared norms equal; :func:`pathlift.enorm`). A BatchNorm in
    training mode is refused as by :func:`path_cond`. Returns a
    :class:`pathlift.BalanceReport`."""
    return _balance(model, _enorm, input_shape, max_sweeps, tolerance, "pathlift.torch.enorm")
