"""to_torch (private; re-exported by pathlift.torch): a feed-forward pathlift network in
PyTorch parameter order as the ``nn.Sequential(Linear, activation, ..., Linear)`` it is."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple, Union

import numpy as np
import torch
from torch import nn

from ._pathlift import LayerNetwork, Network
from ._torch_params import numpy_of


def _num_params(net: Any) -> int:
    return int(net.num_params)


def _param_endpoints(net: Network) -> Tuple[np.ndarray, np.ndarray]:
    """(source, target) node of the edge of each parameter, for a network where each
    parameter is on exactly one edge and no edge is fixed (ValueError otherwise)."""
    src = np.asarray(net.sources, dtype=np.int64)
    dst = np.asarray(net.targets, dtype=np.int64)
    if net.one_parameter_per_edge:  # edge k carries parameter k
        return src, dst
    ep = np.asarray(net.params, dtype=np.int64)
    d = _num_params(net)
    if (ep < 0).any() or ep.size != d or np.unique(ep).size != d:
        raise ValueError("to_torch supports feed-forward networks whose parameters are each on "
                         "one edge, without fixed edges (skips, pooling) or weight sharing")
    s = np.empty(d, dtype=np.int64)
    t = np.empty(d, dtype=np.int64)
    s[ep] = src
    t[ep] = dst
    return s, t


def _layers(net: Any) -> List[Tuple[List[int], int, bool]]:
    """The layers of a feed-forward network in PyTorch parameter order: for each Linear, its
    target nodes (rows of W), the offset of W in theta and whether a bias block follows.
    ValueError when the edge list is not of that form."""
    src, dst = _param_endpoints(net)
    d = src.size
    bias = set(int(v) for v in net.bias)
    prev = [int(v) for v in net.data_inputs]
    if not prev:
        raise ValueError("to_torch: the network has no data input")
    layers = []
    seen = set(prev)
    k = 0

    def fail(msg: str):
        raise ValueError("to_torch supports feed-forward networks in PyTorch parameter order "
                         f"(per Linear: W row-major, then b), such as feed_forward() or "
                         f"from_torch(nn.Sequential(...)): {msg}")

    while k < d:
        n_in = len(prev)
        offset = k
        targets: List[int] = []
        while k + n_in <= d and np.array_equal(src[k:k + n_in], prev) and \
                np.all(dst[k:k + n_in] == dst[k]):
            t = int(dst[k])
            if t in seen or t in bias:
                fail(f"edge {k} goes back to node '{net.node_name(t)}'")
            targets.append(t)
            seen.add(t)
            k += n_in
        if not targets:
            fail(f"edge {k} ({net.edge_label(k)}) does not start a row of W over "
                 f"{n_in} inputs")
        has_bias = False
        out = len(targets)
        if k < d and int(src[k]) in bias:
            if k + out > d or not np.all(src[k:k + out] == src[k]) or \
                    not np.array_equal(dst[k:k + out], targets):
                fail(f"edges {k}.. are not the bias block of the layer")
            has_bias = True
            k += out
        layers.append((targets, offset, has_bias))
        prev = targets
    if sorted(prev) != sorted(int(v) for v in net.outputs):
        fail("the last layer is not the set of outputs")
    if list(prev) != [int(v) for v in net.outputs]:
        fail("the last layer's order differs from the output order")
    for v in range(net.num_nodes):
        if v not in seen and v not in bias:
            fail(f"node '{net.node_name(v)}' is not in a layer")
    return layers


def _activation_module(name: str) -> Optional[nn.Module]:
    if name == "identity":
        return None
    if name == "relu":
        return nn.ReLU()
    if name.startswith("leaky_relu:"):
        return nn.LeakyReLU(float(name.split(":", 1)[1]))
    raise ValueError(f"to_torch: unknown activation {name!r}")  # pragma: no cover


def to_torch(net: Union[Network, LayerNetwork],
             theta: Optional[Any] = None, *,
             dtype: torch.dtype = torch.float64) -> nn.Sequential:
    """The ``nn.Sequential(Linear, act, ..., Linear[, act])`` of a feed-forward network in PyTorch
    parameter order (``feed_forward()``, or ``from_torch`` of such a Sequential), with
    parameters theta (default: the network's weights; for a from_torch network, its module's
    current ones), in eval mode (a LayerNetwork's unrolled DAG is read, ``net.unrolled()``).
    Round trip: ``to_torch(from_torch(m), theta_from_torch(m))`` computes what ``m`` computes,
    and its ``theta_from_torch`` is theta. The inputs are the data inputs in node order, the
    outputs the output nodes in node order. ValueError for any other network (skip or other fixed
    edges, weight sharing, convolutions, layers out of PyTorch order, mixed activations in a
    layer) or a bad theta.
    """
    if theta is None:
        if net.weights is None:
            raise ValueError("to_torch: theta is required (the network has no stored weights)")
        theta = net.weights
    elif isinstance(theta, torch.Tensor) and not theta.is_complex():
        theta = numpy_of(theta)  # detached, on the CPU: what the engine's functions do
    theta = np.asarray(theta.detach().cpu() if isinstance(theta, torch.Tensor) else theta)
    if theta.dtype.kind == "c":  # refused, as by the engine: a cast drops the imaginary part
        raise ValueError(f"theta must be real numbers, got complex ({theta.dtype})")
    theta = theta.astype(np.float64, copy=False)
    if theta.ndim != 1 or theta.size != _num_params(net):
        raise ValueError(f"theta has {theta.size} entries but the network has "
                         f"{_num_params(net)} parameters")
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta has non-finite entries")
    dag = net.unrolled() if isinstance(net, LayerNetwork) else net
    layers = _layers(dag)
    acts = dag.activations
    modules: List[nn.Module] = []
    n_in = len(dag.data_inputs)
    for targets, offset, has_bias in layers:
        out = len(targets)
        lin = nn.Linear(n_in, out, bias=has_bias, dtype=dtype)
        with torch.no_grad():
            w = theta[offset: offset + out * n_in].reshape(out, n_in)
            lin.weight.copy_(torch.tensor(w, dtype=dtype))
            if has_bias:
                lin.bias.copy_(torch.tensor(theta[offset + out * n_in: offset + out * (n_in + 1)],
                                            dtype=dtype))
        modules.append(lin)
        layer_acts = {acts[t] for t in targets}
        if len(layer_acts) != 1:
            raise ValueError(f"to_torch: a layer mixes activations {sorted(layer_acts)}")
        act = _activation_module(layer_acts.pop())
        if act is not None:
            modules.append(act)
        n_in = out
    return nn.Sequential(*modules).eval()
