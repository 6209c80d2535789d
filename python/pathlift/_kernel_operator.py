"""The path kernel K = dPhi^T dPhi as a ``scipy.sparse.linalg.LinearOperator``
(:func:`pathlift.kernel_operator`), for scipy's solvers (``eigsh``, ``lobpcg``, ``cg``,
``svds``), K never formed."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from scipy.sparse.linalg import LinearOperator

from . import _pathlift

# The engine's operator class (private: the stubs generated from the module omit it).
_KERNEL_PRODUCTS: Any = getattr(_pathlift, "_KernelProducts")


def _real(x: Any) -> np.ndarray:
    """x as float64; a complex x (scipy passes one for a complex problem) is refused rather
    than losing its imaginary part."""
    a = np.asarray(x)
    if a.dtype.kind == "c":
        raise ValueError(f"K is real: multiply the real and imaginary parts of a complex vector "
                         f"separately (got dtype {a.dtype})")
    return a.astype(np.float64, copy=False)


class KernelOperator(LinearOperator):
    """K (d x d, symmetric positive semi-definite, float64) on a network and theta: ``K @ v``
    (d numbers) and ``K @ V`` (a d x k block, one sweep of the block product) without forming K
    or enumerating a path. The sums that do not depend on v (the forward and backward sums at
    theta^2 and the edge diagonal) are computed once, at construction, and kept: each product
    then costs about two thirds of :func:`pathlift.kernel_matvec`. theta is copied. K is
    symmetric: the adjoint is the operator itself."""

    def __init__(self, net: Any, theta: Any = None, *, threads: int = 0) -> None:
        self._products = _KERNEL_PRODUCTS(net, theta, threads=threads)
        d = self._products.d
        super().__init__(dtype=np.dtype(np.float64), shape=(d, d))

    def _matvec(self, x: Any) -> np.ndarray:
        return self._products.matmat(_real(x).reshape(-1))

    def _matmat(self, x: Any) -> np.ndarray:
        return self._products.matmat(_real(x))

    def _rmatvec(self, x: Any) -> np.ndarray:
        return self._matvec(x)

    def _rmatmat(self, x: Any) -> np.ndarray:
        return self._matmat(x)

    def _adjoint(self) -> "KernelOperator":
        return self


def kernel_operator(net: Any, theta: Optional[Any] = None, *, threads: int = 0) -> KernelOperator:
    """The path kernel K = dPhi^T dPhi of ``net`` at ``theta`` as a
    ``scipy.sparse.linalg.LinearOperator`` (a :class:`KernelOperator`): ``matvec`` and
    ``matmat`` run pathlift's block product (a LayerNetwork is never unrolled), so
    ``scipy.sparse.linalg.eigsh(pathlift.kernel_operator(net, theta), k=3)`` gives the top
    eigenpairs with K never formed. theta: d finite numbers (numpy, a sequence or a torch
    tensor), or None for the stored weights. ValueError for a bad theta, and from a product for
    a vector of the wrong size or with a non-finite entry; RangeError when an entry of K v
    overflows float64 or is subnormal, or when K v is all 0 while diag(K) has a 0 that may be
    an underflow. threads: 0 = all cores."""
    return KernelOperator(net, theta, threads=threads)
