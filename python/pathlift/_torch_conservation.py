"""The conservation laws of gradient flow for a PyTorch model (pathlift.torch)."""

from __future__ import annotations

from typing import Any

from ._pathlift import ConservationLaws, conservation_laws as _conservation_laws
from ._torch_network import network_of
from ._torch_trace import InputShape


def conservation_laws(model: Any, *, input_shape: InputShape = None) -> ConservationLaws:
    """The quantities that gradient flow of any loss conserves, at the model's current
    parameters (:func:`pathlift.conservation_laws` on ``from_torch(model)``): one per hidden
    unit of a Linear, per channel class of a Conv or a BatchNorm, the sum of the squares of the
    weights and bias entering it minus that of the weights leaving it. Their descriptions name
    the modules (the layers of from_torch are module paths): ``"unit 5 of 'fc1' (out: 'fc2')"``,
    ``"channel 3 of 'layer1.0.bn2', 'layer1.1.bn2' (out: ...)"``; ``as_dict()`` maps them to
    the values. ``model``: a module (eval mode when it has a BatchNorm or a Dropout) or its
    from_torch network. theta is :func:`theta_from_torch`'s: a BatchNorm holds its folded
    ``a, b``, so its laws are those of gradient flow on ``a, b``, not on ``weight, bias``.
    docs/dynamics.md."""
    net = network_of(model, input_shape, what="pathlift.torch.conservation_laws")
    return _conservation_laws(net, net.theta_layout.theta())
