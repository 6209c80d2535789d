"""The path-metric bound between two PyTorch models of one architecture (pathlift.torch)."""

from __future__ import annotations

import json
from typing import Any

from torch import nn

from ._pathlift import LipschitzBound, lipschitz_bound as _lipschitz_bound
from ._torch_network import TorchNetwork, from_torch, network_of
from ._torch_trace import InputShape, refuse_training_mode


def _architecture(net: TorchNetwork) -> Any:
    """The layer graph without its weights (what two copies of one architecture share)."""
    graph = json.loads(net.layer_graph.to_json())
    graph.pop("weights", None)
    return graph


def lipschitz_bound(model: Any, model2: nn.Module, *,
                    input_shape: InputShape = None) -> LipschitzBound:
    """The constant C of ``||model(x) - model2(x)||_1 <= max(||x||_inf, 1) C`` for every input
    x (Gonon, Brisebarre, Riccietti, Gribonval, ICML 2025; :func:`pathlift.lipschitz_bound`):
    ``model2`` a pruned, quantized or otherwise changed copy of ``model`` (same architecture,
    checked: the layer graphs must be equal but for their weights). Both are their eval-mode
    functions (a BatchNorm is its running-statistics affine map): a module with a BatchNorm or
    a Dropout in training mode is refused, as by from_torch. ``model``: a module or its
    from_torch network; input_shape as for :func:`pathlift.torch.from_torch`.
    Returns a :class:`pathlift.LipschitzBound` (``constant``, ``log10``, ``exact``,
    ``sign_changes``, ``bound(x_inf)``). docs/path_metric.md."""
    net = network_of(model, input_shape, what="pathlift.torch.lipschitz_bound")
    if not isinstance(model2, nn.Module):
        raise TypeError(f"pathlift.torch.lipschitz_bound: model2 must be a torch.nn.Module, got "
                        f"{type(model2).__name__}")
    refuse_training_mode(model2, "pathlift.torch.lipschitz_bound (model2)")
    net2 = from_torch(model2, net.input_shape)
    if _architecture(net2) != _architecture(net):
        raise ValueError("pathlift.torch.lipschitz_bound: model2 is not the same architecture as "
                         "model (their layer graphs differ beyond the weights)")
    return _lipschitz_bound(net, net.theta_layout.theta(), net2.theta_layout.theta())
