"""Rescaling a PyTorch model (pathlift.torch.rescale): the model's parameters moved along a
rescaling orbit by :func:`pathlift.rescale`, so that Phi and the function are unchanged."""

import copy
from typing import Any

import numpy as np
import torch
from torch import nn

from . import _pathlift
from .torch import InputShape, from_torch, theta_from_torch


def rescale(model: nn.Module, lambdas: Any, input_shape: InputShape = None) -> nn.Module:
    """A copy of ``model`` rescaled by ``lambdas``: one factor > 0 per hidden node of
    ``from_torch(model, input_shape)`` (in ``net.hidden`` order; for an MLP, the hidden neurons
    layer by layer), the weights into a node multiplied by its factor and the weights out of it
    divided by it (:func:`pathlift.rescale`). The copy computes the same function and has the
    same Phi; ``model`` is left unchanged. Parameters keep their dtype and device.

    With shared parameters (convolutions), the factors must be equal across each channel, else
    ValueError names the parameter that would need two factors. A model with BatchNorm is
    refused (its parameters are not theta: theta holds the folded affine a, b)."""
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            raise ValueError(
                f"rescale: the model has a {type(module).__name__}, whose weight and bias are not "
                "theta (theta holds its folded affine map a, b); fold it into the previous layer "
                "first")
    net = from_torch(model, input_shape)
    theta = theta_from_torch(model)
    rescaled = _pathlift.rescale(net, theta, lambdas)
    out = copy.deepcopy(model)
    offset = 0
    with torch.no_grad():
        for p in out.parameters():
            n = p.numel()
            chunk = np.ascontiguousarray(rescaled[offset:offset + n]).reshape(p.shape)
            p.copy_(torch.from_numpy(chunk).to(dtype=p.dtype, device=p.device))
            offset += n
    return out
