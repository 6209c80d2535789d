"""A PyTorch model as a pathlift network: the path-lifting Phi, the skeleton B and the
Jacobian dPhi, checked against torch's autograd.

Run from the repository root after building (build directory `build`):

    PYTHONPATH=build/python /usr/bin/python3 examples/torch_to_pathlift.py
"""
import numpy as np
import torch
from torch import nn

import pathlift

torch.manual_seed(0)


class ResidualMLP(nn.Module):
    """x -> h = relu(fc1 x) -> y = relu(fc2 h) + h (identity skip) -> fc3 y."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 8)
        self.fc3 = nn.Linear(8, 2)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc3(torch.relu(self.fc2(h)) + h)


for name, model in [
    ("Sequential 5-8-2", nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))),
    ("ResidualMLP", ResidualMLP()),
]:
    model = model.double().eval()
    net = pathlift.from_torch(model)  # edge k = k-th entry of the model's parameters
    theta = pathlift.theta_from_torch(model)  # torch.cat([p.flatten() for p in parameters()])
    # An identity skip adds fixed edges (weight 1) after the parameters; net.weights holds
    # theta followed by those weights, and is used when theta is omitted.
    full_theta = net.weights
    print(f"{name}: {net}")
    print(f"  parameters = {theta.size}, d = {net.d} ({net.d - theta.size} fixed skip edges), "
          f"h = {net.h}, P = {pathlift.count_paths(net).paths}")

    phi = pathlift.path_lifting(net, full_theta)  # numpy array, P entries
    B = pathlift.skeleton(net)  # scipy.sparse.csr_matrix, P x d, 0/1
    J = pathlift.jacobian(net, full_theta)  # scipy.sparse.csr_matrix, P x d
    print(f"  Phi: {phi.shape}, B: {B.shape} nnz {B.nnz}, dPhi: {J.shape} nnz {J.nnz}")

    # The same Jacobian by torch autograd (functorch.jacrev of a vectorized Phi).
    paths = pathlift.enumerate_paths(net)
    lengths = np.diff(paths.offsets)
    idx = np.full((len(paths), lengths.max()), net.d)
    for p in range(len(paths)):
        idx[p, : lengths[p]] = paths.path(p)
    idx = torch.from_numpy(idx)

    def phi_torch(t):
        return torch.cat([t, torch.ones(1, dtype=t.dtype)])[idx].prod(dim=1)

    from functorch import jacrev

    J_torch = jacrev(phi_torch)(torch.from_numpy(np.array(full_theta))).numpy()
    print(f"  max |dPhi - torch autograd| = {np.abs(J.toarray() - J_torch).max():.2e}")
    # Columns 0..len(theta)-1 are the PyTorch parameter entries.
    print(f"  d Phi / d (fc-layer parameters): {J[:, : theta.size].shape}")

    # Theorem: rank(B) = d - h (numerically here; the certified rank binding comes later).
    rank_b = np.linalg.matrix_rank(B.toarray())
    print(f"  rank(B) = {rank_b}, d - h = {net.d - net.h}: rank(B) = d - h "
          f"{'holds' if rank_b == net.d - net.h else 'FAILS'}")

    # TODO(issue 4, 5): when the rank and linearization bindings land, add here:
    #   the certified rank of B and the numerical rank of dPhi (pathlift.rank...), and
    #   f = L Phi for a data batch X (pathlift.linearize...), compared with model(X).
