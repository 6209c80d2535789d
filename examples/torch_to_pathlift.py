"""A PyTorch model as a pathlift network: the path-lifting Phi, the skeleton B and the
Jacobian dPhi (checked against torch's autograd), the certified rank (Theorem 1: rank(B) =
d - h), the linearization f = L Phi on a batch (checked against the model), path-norms and the
diagonal of the path kernel.

Run from the repository root after building (build directory `build`):

    PYTHONPATH=build/python /usr/bin/python3 examples/torch_to_pathlift.py
"""
import numpy as np
import torch
from functorch import jacrev
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
    net = pathlift.from_torch(model)  # parameter k = k-th entry of the model's parameters
    # theta: the parameters in model.parameters() order (the same vector as net.weights); an
    # identity skip is a fixed edge of weight 1 inside the network, not an entry of theta.
    theta = pathlift.theta_from_torch(model)
    n_params = sum(p.numel() for p in model.parameters())
    dag = net.unrolled()  # the DAG (a pathlift.Network): its edges, nodes, parameters
    fixed = int((dag.params < 0).sum())
    print(f"{name}: {net}")
    print(f"  parameters = d = {net.d}, edges = {net.num_edges} ({fixed} fixed skip edges), "
          f"h = {dag.h}, P = {pathlift.count_paths(net).paths}")

    phi = pathlift.path_lifting(net, theta)  # numpy array, P entries
    B = pathlift.skeleton(net)  # scipy.sparse.csr_matrix, P x d, 0/1
    J = pathlift.jacobian(net, theta)  # scipy.sparse.csr_matrix, P x d
    print(f"  Phi: {phi.shape}, B: {B.shape} nnz {B.nnz}, dPhi: {J.shape} nnz {J.nnz}")

    # The same Jacobian by torch autograd (functorch.jacrev of a vectorized Phi).
    paths = pathlift.enumerate_paths(net)
    lengths = np.diff(paths.offsets)
    idx = np.full((len(paths), lengths.max()), net.num_edges)
    for p in range(len(paths)):
        idx[p, : lengths[p]] = paths.path(p)
    index = torch.from_numpy(idx)
    params = torch.from_numpy(dag.params)
    fixed_weights = torch.from_numpy(dag.fixed_weights)

    def phi_torch(t):  # each edge weighs theta[its parameter], or its fixed weight
        w = torch.where(params >= 0, t[params.clamp(min=0)], fixed_weights)
        return torch.cat([w, torch.ones(1, dtype=t.dtype)])[index].prod(dim=1)

    J_torch = jacrev(phi_torch)(torch.from_numpy(theta)).numpy()
    print(f"  max |dPhi - torch autograd| = {np.abs(J.toarray() - J_torch).max():.2e}")
    # The columns are the PyTorch parameter entries.
    print(f"  d Phi / d (model parameters): {J.shape} ({n_params} parameters)")

    # Theorem 1: rank(B) = d - h, certified (modular elimination + rescaling vectors), and
    # rank(dPhi) = d - h numerically at this theta (with skips: d - h_sym, the hidden nodes
    # with a rescaling symmetry). The keys are those of `pathlift rank --json`.
    r = pathlift.rank(net, theta)
    print(f"  rank(B) = {r['rank_B']} (certified: {r['rank_B_certified']}), "
          f"rank(dPhi) = {r['rank_J']}, d - h_sym = {r['expected']}: rank(B) = d - h "
          f"{'holds' if r['rank_B'] == r['expected'] else 'FAILS'} ({r['status']})")

    # Proposition 1: on a batch X, f_theta(X) = L Phi(theta) with L sparse (n q) x P, and
    # df/dtheta = L dPhi.
    X = torch.randn(32, 5, dtype=torch.float64)
    lin = pathlift.linearize(net, theta, X.numpy())
    f = (lin.L @ phi).reshape(X.shape[0], -1)
    with torch.no_grad():
        f_torch = model(X).numpy()
    print(f"  L: {lin.L.shape} nnz {lin.L.nnz}, margin {lin.pattern.margin:.2e}; "
          f"max |L Phi - model(X)| = {np.abs(f - f_torch).max():.2e}")
    grad = lin.L @ J  # d f / d theta, (n q) x d
    print(f"  df/dtheta = L dPhi: {grad.shape}")

    # Path-norms and the path kernel by dynamic programming (no path enumerated).
    l1 = pathlift.path_norm(net, theta, 1)
    K_diag = pathlift.kernel_diagonal(net, theta)  # diag(dPhi^T dPhi), one per parameter
    print(f"  ||Phi||_1 = {l1.norm:.4g}, trace K = {K_diag.sum():.4g} "
          f"(= {pathlift.kernel_trace(net, theta):.4g} by its own pass)")
