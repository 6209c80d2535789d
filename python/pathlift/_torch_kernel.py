"""The path kernel of a PyTorch model as an operator on torch tensors
(pathlift.torch.kernel_operator)."""

from __future__ import annotations

from typing import Any, List, Tuple

import torch

from . import _pathlift

# The engine's operator class (private: the stubs generated from the module omit it).
_KERNEL_PRODUCTS: Any = getattr(_pathlift, "_KernelProducts")
from ._torch_network import TorchNetwork, network_of
from ._torch_trace import InputShape


class TorchKernelOperator:
    """K = dPhi^T dPhi (d x d) of a PyTorch model at the parameters it had when the operator
    was made, acting on torch tensors: ``K @ v`` for d numbers and ``K @ V`` for a d x k block
    (one sweep of the block product), returned with v's dtype and device. Vectors are in
    theta's order: the model's ``parameters()`` order (BatchNorm slots holding a = gamma / std
    and b = beta - a mean, as in :func:`pathlift.torch.theta_from_torch`); :meth:`split` cuts
    a result into parameter-shaped blocks. Nothing is differentiated through it."""

    def __init__(self, net: TorchNetwork, threads: int) -> None:
        self.network = net
        self._products = _KERNEL_PRODUCTS(net, net.theta_layout.theta(),
                                                   threads=threads)
        d = int(self._products.d)
        self.shape: Tuple[int, int] = (d, d)

    def matmat(self, v: torch.Tensor) -> torch.Tensor:
        """K v (v: d entries) or K V (V: d x k), as a tensor of v's floating dtype (float64
        for an integer v) and device."""
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"pathlift.torch.kernel_operator: expects a torch.Tensor, got "
                            f"{type(v).__name__}")
        if v.is_complex():
            raise ValueError(f"pathlift.torch.kernel_operator: K is real; multiply the real and "
                             f"imaginary parts separately (got {v.dtype})")
        out = self._products.matmat(v.detach().to("cpu", torch.float64).numpy())
        dtype = v.dtype if v.is_floating_point() else torch.float64
        return torch.from_numpy(out).to(dtype=dtype, device=v.device)

    matvec = matmat

    def __matmul__(self, v: torch.Tensor) -> torch.Tensor:
        return self.matmat(v)

    def split(self, flat: torch.Tensor) -> List[torch.Tensor]:
        """A d-entry tensor cut into blocks shaped like the model's parameters."""
        return self.network.theta_layout.split(flat)


def kernel_operator(model: Any, *, input_shape: InputShape = None,
                    threads: int = 0) -> TorchKernelOperator:
    """The path kernel K of ``model`` (a module, traced now as from_torch traces it, or its
    :func:`pathlift.torch.from_torch` network) at its current parameters, as an operator on
    torch tensors (:class:`TorchKernelOperator`): ``K @ v``, ``K @ V``, never formed, the
    network never unrolled. For scipy, ``pathlift.kernel_operator(net, theta)``.
    docs/path-free.md#spectrum."""
    net = network_of(model, input_shape, what="pathlift.torch.kernel_operator")
    return TorchKernelOperator(net, threads)
