"""Path-lifting quantities inside a PyTorch training loop (re-exported by ``pathlift.torch``).

* :func:`path_norm` -- the L^s path-norm of a model as a 0-dim tensor with a ``grad_fn``
  (:class:`PathNormFunction`, whose backward is :func:`pathlift.path_norm_gradient`): a
  path-norm penalty in a loss;
* :func:`kernel_diagonal` -- the path kernel's diagonal, per parameter if asked, detached;
* :class:`PathSGD` -- Path-SGD (Neyshabur, Salakhutdinov and Srebro 2015), each parameter's
  step divided by its path-scaling, the kernel diagonal;
* :func:`theta_tensor` -- theta (:func:`pathlift.theta_from_torch`) as a differentiable float64
  tensor of the parameters;
* :func:`to_torch_sparse` -- a scipy CSR matrix (the Jacobian) as a torch sparse CSR tensor.

Each takes a module or its network (:func:`pathlift.from_torch`, a :class:`TorchNetwork`): a
module is traced at each call, a network is not (the form for a training loop: make it once,
its theta follows the parameters); PathSGD traces once, at construction. theta is read from the
parameters at each call. Everything runs in float64 in C++: a norm beyond double's range
(1.8e308) comes back ``inf`` (``pathlift.path_norm(net).log10`` is exact there). The network is
the model's eval-mode function (Dropout the identity, BatchNorm the affine map of its running
statistics): a module with a BatchNorm or a Dropout in training mode is refused, as by
from_torch, and a network made once in eval mode is that function whatever the module's mode
afterwards (the form for a training loop).
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Callable, List, Optional, Union

import numpy as np
import scipy.sparse
import torch
from torch import nn

from ._pathlift import kernel_diagonal as _kernel_diagonal
from ._pathlift import path_norm as _path_norm
from ._pathlift import path_norm_gradient as _path_norm_gradient
from ._torch_params import first_non_finite
from ._torch_trace import InputShape
from ._torch_network import TorchNetwork, network_of, parameters_of

ModelOrNetwork = Union[nn.Module, TorchNetwork]

__all__ = ["path_norm", "PathNormFunction", "kernel_diagonal", "PathSGD", "theta_tensor",
           "to_torch_sparse"]


def _dtype(model: nn.Module) -> torch.dtype:
    p = next(model.parameters(), None)
    return torch.float64 if p is None else p.dtype


def theta_tensor(model: ModelOrNetwork, *, input_shape: InputShape = None) -> torch.Tensor:
    """:func:`pathlift.theta_from_torch` as a float64 tensor computed from the parameters with
    torch operations, so that gradients flow back to them (each BatchNorm's a and b from its
    gamma, beta and running statistics); on the parameters' device. ``model``: a module (traced
    for its BatchNorms) or its from_torch network. With :class:`PathNormFunction` it makes a
    path-norm of a theta of one's own. input_shape is accepted and not needed."""
    del input_shape
    if isinstance(model, TorchNetwork):
        return model.theta_layout.tensor()
    if not isinstance(model, nn.Module):
        network_of(model, what="pathlift.torch.theta_tensor")  # raises the TypeError
    return parameters_of(model, "pathlift.torch.theta_tensor").tensor()


# --------------------------------------------------------------------------------------------
# the path-norm and the kernel diagonal


class PathNormFunction(torch.autograd.Function):
    """``PathNormFunction.apply(net, theta, s)``: ``||Phi(theta)||_s`` of a pathlift network (a
    Network, a LayerNetwork, a from_torch network) at a 1-D tensor theta of d entries, a 0-dim
    tensor of theta's dtype and device, computed in float64 by :func:`pathlift.path_norm`. Its
    backward is ``pathlift.path_norm_gradient(net, theta, s)`` times the incoming gradient (no
    path enumerated; not differentiable twice). s > 0 for a gradient; for s < 1 the gradient
    needs nonzero weights (ValueError naming the parameter otherwise)."""

    @staticmethod
    def forward(ctx, net, theta, s):
        ctx.net, ctx.s = net, float(s)
        ctx.save_for_backward(theta)
        value = _path_norm(net, theta, float(s)).norm
        return torch.tensor(float(value), dtype=theta.dtype, device=theta.device)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        (theta,) = ctx.saved_tensors
        if not ctx.needs_input_grad[1]:
            return None, None, None
        g = _path_norm_gradient(ctx.net, theta, ctx.s)
        return None, torch.from_numpy(g).to(device=theta.device, dtype=theta.dtype) * grad, None



def path_norm(model: ModelOrNetwork, s: float = 1.0, *, input_shape: InputShape = None
              ) -> torch.Tensor:
    """The L^s path-norm ``||Phi(theta)||_s`` of a model as a 0-dim tensor of its parameters'
    dtype and device, differentiable: ``loss = criterion(model(x), y) + lam *
    pathlift.torch.path_norm(net, 1.0)`` trains with a path-norm penalty, the gradient
    (:func:`pathlift.path_norm_gradient`, by dynamic programming) flowing into every parameter
    (through a BatchNorm's a and b into gamma and beta).

    ``model``: its from_torch network ``net`` (:class:`TorchNetwork`; no trace: make it once
    before the loop), or the module itself (traced at each call, refused in training mode as by
    from_torch; input_shape as for from_torch). s >= 0 (s = 0: the path count, without a
    gradient); a norm beyond double's range is inf (``pathlift.path_norm(net).log10`` is
    exact).

    Not to be confused with :func:`pathlift.path_norm` (numbers, for any pathlift network and
    a theta: a PathNorm with log10, per output, ...): this one reads theta from the module and
    returns a tensor. TypeError for a pathlift network that is not a from_torch network, or an
    s that is not a number (a theta given in its place).
    """
    if isinstance(s, bool) or not isinstance(s, numbers.Real):
        raise TypeError(
            f"pathlift.torch.path_norm(model, s): s must be a number, got {type(s).__name__}: "
            "theta is read from the module's parameters (for a theta of one's own: "
            "PathNormFunction.apply(net, theta, s), or pathlift.path_norm(net, theta, s))")
    net = network_of(model, input_shape, what="pathlift.torch.path_norm")
    value = PathNormFunction.apply(net, net.theta_layout.tensor(), float(s))
    return value.to(_dtype(net.module))


def _kernel_diagonal64(net: TorchNetwork) -> torch.Tensor:
    diag = torch.from_numpy(_kernel_diagonal(net))  # theta: the module's current weights
    p = next(net.module.parameters(), None)
    return diag if p is None else diag.to(p.device)


def kernel_diagonal(model: ModelOrNetwork, *, input_shape: InputShape = None,
                    per_parameter: bool = False) -> Union[torch.Tensor, List[torch.Tensor]]:
    """The diagonal of the path kernel ``K = dPhi^T dPhi`` at the model's parameters
    (:func:`pathlift.kernel_diagonal`: ``K[k, k]`` = the sum over the paths through parameter
    k of the product of the other squared weights, Path-SGD's path-scaling), detached (not
    differentiable), in the parameters' dtype and on their device: a tensor of d entries, or
    with per_parameter=True a list of tensors shaped like ``model.parameters()``. A BatchNorm's
    entries are those of its a and b. ``model``: a module (traced at each call) or its
    from_torch network (no trace), as for :func:`path_norm`."""
    net = network_of(model, input_shape, what="pathlift.torch.kernel_diagonal")
    flat = _kernel_diagonal64(net).to(_dtype(net.module))
    return net.theta_layout.split(flat) if per_parameter else flat


# --------------------------------------------------------------------------------------------
# Path-SGD


class PathSGD(torch.optim.Optimizer):
    """Path-SGD (Neyshabur, Salakhutdinov and Srebro, "Path-SGD: Path-normalized optimization
    in deep neural networks", 2015) over ``model.parameters()``: each step is

        p_k <- p_k - lr * grad_k / gamma_k,  gamma_k = K[k, k] = sum over the paths through k
                                             of the product of the other squared weights,

    the path kernel's diagonal at the current weights (:func:`kernel_diagonal`, recomputed at
    every step by dynamic programming: O(parameters), no path enumerated). The update is
    invariant under the rescaling symmetries (a hidden neuron's in-weights times lambda, its
    out-weights divided by lambda), which plain SGD's is not. Biases are edges from a constant
    input 1 (pathlift's convention).

    lr > 0. momentum >= 0: heavy-ball on the scaled steps (``buf = momentum buf + grad / gamma``,
    ``p -= lr buf``; 0: the paper's update). eps >= 0: gamma_k is replaced by ``max(gamma_k,
    eps)``, bounding the step of a parameter on nearly dead paths (0: the exact update). A
    parameter with gamma_k = 0 lies on no live path -- the network's output does not depend on
    it -- and is not updated. ``model``: a module (traced once, here, refused in training mode
    as by from_torch; input_shape as for :func:`pathlift.from_torch`) or its from_torch network
    (made in eval mode, it serves after ``model.train()``); the optimizer holds the
    network (``opt.network``). Parameter groups may hold any of the model's parameters (each
    group its own lr, momentum, eps). A gradient that is not finite raises ValueError naming the
    parameter, before any parameter or momentum buffer changes.
    """

    def __init__(self, model: ModelOrNetwork, lr: float, *, momentum: float = 0.0,
                 eps: float = 0.0, input_shape: InputShape = None):
        for name, value, low in (("lr", lr, 0.0), ("momentum", momentum, 0.0), ("eps", eps, 0.0)):
            if not (math.isfinite(value) and (value > low or (name != "lr" and value == low))):
                raise ValueError(f"PathSGD: {name} must be finite and "
                                 f"{'> 0' if name == 'lr' else '>= 0'}, got {value!r}")
        self._net = network_of(model, input_shape, what="PathSGD")
        super().__init__(self._net.module.parameters(), dict(lr=lr, momentum=momentum, eps=eps))

    @property
    def network(self) -> TorchNetwork:
        """The model's network, made at construction (its theta follows the parameters)."""
        return self._net

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], float]] = None) -> Optional[float]:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        layout = self._net.theta_layout
        for group in self.param_groups:  # every check before any parameter changes
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not layout.holds(p):
                    raise ValueError(f"PathSGD: a parameter of shape {tuple(p.shape)} is not "
                                     "one of the model's parameters")
                i = first_non_finite(p.grad)
                if i is not None:
                    raise ValueError(
                        f"PathSGD: the gradient of parameter '{layout.name(p)}' is not finite "
                        f"(entry {i}: {p.grad.reshape(-1)[i].item()}): no parameter was changed "
                        "(skip this step, or lower the learning rate or scale the loss)")
        gammas = layout.split(_kernel_diagonal64(self._net))
        gamma_of = {id(p): g for p, g in zip(layout.tensors, gammas)}
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                gamma = gamma_of[id(p)].to(p.device)
                scaled = torch.where(gamma > 0,
                                     p.grad.to(torch.float64) / gamma.clamp(min=group["eps"]),
                                     torch.zeros_like(gamma))
                if group["momentum"] != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = scaled.clone()
                    else:
                        buf.mul_(group["momentum"]).add_(scaled)
                    scaled = buf
                p.sub_((group["lr"] * scaled).to(p.dtype))
        return loss


# --------------------------------------------------------------------------------------------
# sparse matrices


def to_torch_sparse(matrix: Any) -> torch.Tensor:
    """A scipy sparse matrix -- ``pathlift.jacobian(net, theta)``, ``pathlift.skeleton(net)``,
    a linearization's L -- as a ``torch.sparse_csr_tensor`` with int64 indices, never dense:
    ``to_torch_sparse(J) @ v`` is ``J @ v``. Values stay float32 or float64 (other dtypes
    become float64); they are shared with the matrix when its values are a writable float array
    (as torch.from_numpy shares), copied otherwise (the read-only arrays of matrices computed
    from a PathSet). TypeError for something that is not a scipy sparse matrix."""
    if not scipy.sparse.issparse(matrix):
        raise TypeError(f"to_torch_sparse expects a scipy.sparse matrix, got "
                        f"{type(matrix).__name__}")
    csr = matrix.tocsr()
    values = csr.data
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    elif not (values.flags.writeable and values.flags.c_contiguous):
        values = values.copy()
    crow = np.array(csr.indptr, dtype=np.int64)
    col = np.array(csr.indices, dtype=np.int64)
    with warnings.catch_warnings():  # torch < 2.1 calls sparse CSR support beta at each use
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(col),
                                       torch.from_numpy(values), size=tuple(csr.shape))
