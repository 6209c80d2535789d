"""What a user's typed code does with pathlift: mypy checks this file (test_typing.py) against
the package's stubs, and the test runs it, so the stubs must say what the functions return.
Each annotation below is an error under imprecise stubs (a Union where the result is known)."""

import numpy as np
import scipy.sparse

import pathlift

net = pathlift.feed_forward(3, [4], 2)
theta = np.random.default_rng(0).standard_normal(net.d)

J: scipy.sparse.csr_matrix = pathlift.jacobian(net, theta)
nnz: int = J.nnz
dense_J: np.ndarray = pathlift.jacobian(net, theta, dense=True)
B: scipy.sparse.csr_matrix = pathlift.skeleton(net)
dense_B: np.ndarray = pathlift.skeleton(net, dense=True)
flag = bool(np.random.default_rng(1).integers(2))
either = pathlift.jacobian(net, theta, dense=flag)  # a bool known at run time: either result

norm: float = pathlift.path_norm(net, theta, 2.0).norm
log10: float = pathlift.path_norm(net, theta, 2.0).log10
per_output: list[float] = pathlift.path_norm(net, theta, 1.0).per_output
trace: float = pathlift.kernel_trace(net, theta)
scaled: pathlift.ScaledReal = pathlift.kernel_trace(net, theta, scaled=True)
magnitude: np.ndarray = pathlift.path_magnitude(net, theta)
Z: scipy.sparse.csr_matrix = pathlift.rescaling_matrix(net)
rescaled: np.ndarray = pathlift.rescale(net, theta, np.ones(net.h))
version: str = pathlift.__version__

assert dense_J.shape == J.shape == (pathlift.count_paths_total(net), net.d) and nnz == J.nnz
assert dense_B.shape == B.shape and either.shape == J.shape
assert abs(trace - float(scaled)) <= 1e-12 * trace and abs(np.log10(norm) - log10) < 1e-12
assert len(per_output) == 2 and magnitude.shape == (net.d,) and Z.shape == (net.d, net.h)
assert np.array_equal(rescaled, theta) and version
