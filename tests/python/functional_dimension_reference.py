"""An independent exact reference for pathlift.functional_dimension: the batch Jacobian
J_X = d f(X; theta) / d theta of a ReLU network and its rank over Q.

Nothing here imports pathlift or shares its code or its arithmetic modulo a prime:

- `exact_rank` is fraction-free Gaussian elimination over the integers (each row scaled to
  integers by the lcm of its denominators, every reduced row divided by the gcd of its
  entries): the rank over Q and the row rank profile (the lexicographically first independent
  rows), with Python's unbounded ints, no prime, no floating point.
- `mlp_jacobian` and `dag_jacobian` compute J_X in exact rationals (`fractions.Fraction`, or
  `int` where everything is integral) by a forward pass that fixes the activation pattern
  (slope 1 for a pre-activation > 0, the negative slope otherwise: ReLU'(0) = 0 as in PyTorch)
  and one backward pass per (sample, output). Rows are sample-major: row i q + j is
  d f_j(x_i) / d theta.
- `torch_batch_jacobian` takes J_X from PyTorch's autograd in float64 on the torch model itself
  (the CNNs), and proves that float64 was exact there: the weights (parameters, buffers), the
  activations (the input, every module's input and output) and the adjoints (every module
  output's gradient) lie on grids 2^-K_w, 2^-K_a, 2^-K_g with magnitudes below 2^B_w, 2^B_a,
  2^B_g; each float operation of the forward pass (sums of w x), of the backward pass (sums of
  w g) and of the parameter gradients (sums of g x) is a partial sum of at most 2^10 such
  products (times a constant 1/4 of a 2x2 average pool at most), whose exact value needs at most
  K + B + 12 bits for the pair's K = K_1 + K_2, B = B_1 + B_2: <= 53 is checked, so float64 did
  not round, and the Jacobian is then turned into Fractions exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Iterable, NamedTuple, Sequence

Number = int | Fraction
Matrix = list[list[Number]]


# --- the rank over Q -----------------------------------------------------------------------------


class RankProfile(NamedTuple):
    rank: int
    profile: list[int]  # row t is in it iff row t is independent of rows 0..t-1


def _integer_row(row: Sequence[Any]) -> list[int]:
    """The row scaled to coprime integers (same span): times the lcm of the denominators,
    divided by the gcd of the entries."""
    fr = [Fraction(x) for x in row]
    den = math.lcm(*(f.denominator for f in fr)) if fr else 1
    return _primitive([f.numerator * (den // f.denominator) for f in fr])


def _primitive(v: list[int]) -> list[int]:
    g = math.gcd(*v)
    return v if g <= 1 else [x // g for x in v]


def exact_rank(rows: Sequence[Sequence[Any]]) -> RankProfile:
    """Rank over Q of a matrix of ints / Fractions (or floats, taken exactly), and its row rank
    profile, by fraction-free elimination of the rows in order.

    The basis rows b_1, b_2, ... (in the order they were found) are integer rows; b_k has a pivot
    column c_k (its entry of smallest nonzero magnitude, to keep the numbers small) and zeros at
    c_1, ..., c_{k-1}. A new row v, scaled to integers, is reduced by v <- b_k[c_k] v - v[c_k] b_k
    for k = 1, 2, ... (step k zeroes v[c_k] and keeps v[c_1..c_{k-1}] = 0), then divided by the
    gcd of its entries. It is independent of the earlier rows iff something is left."""
    basis: list[tuple[int, list[int]]] = []  # (pivot column, integer row)
    profile: list[int] = []
    cols = len(rows[0]) if len(rows) else 0
    for t, row in enumerate(rows):
        if len(row) != cols:
            raise ValueError(f"row {t} has {len(row)} entries, row 0 has {cols}")
        if len(basis) == cols:
            break  # full column rank: every later row is dependent
        v = _integer_row(row)
        for c, b in basis:
            a = v[c]
            if a:
                p = b[c]
                if p == 1:
                    v = [x - a * y if y else x for x, y in zip(v, b)]
                elif p == -1:
                    v = [x + a * y if y else x for x, y in zip(v, b)]
                else:
                    v = _primitive([p * x - a * y for x, y in zip(v, b)])
        nonzero = [(abs(x), c) for c, x in enumerate(v) if x]
        if not nonzero:
            continue
        v = _primitive(v)
        basis.append((min(nonzero)[1], v))
        profile.append(t)
    return RankProfile(len(profile), profile)


def rank_mod_p(rows: Sequence[Sequence[Any]], p: int) -> RankProfile:
    """Rank and row rank profile of the matrix reduced modulo an odd prime p (its entries are
    rationals whose denominators p does not divide): plain Gaussian elimination over GF(p), the
    rows in order. Never above the rank over Q; equal to it unless p divides some minor."""
    basis: list[tuple[int, list[int]]] = []  # (pivot column, row with 1 there)
    profile: list[int] = []
    for t, row in enumerate(rows):
        v = []
        for x in row:
            f = Fraction(x)
            if f.denominator % p == 0:
                raise ValueError(f"{p} divides the denominator of {f}")
            v.append(f.numerator * pow(f.denominator, -1, p) % p)
        for c, b in basis:
            a = v[c]
            if a:
                v = [(x - a * y) % p for x, y in zip(v, b)]
        lead = next((c for c, x in enumerate(v) if x), None)
        if lead is None:
            continue
        inv = pow(v[lead], -1, p)
        basis.append((lead, [x * inv % p for x in v]))
        profile.append(t)
    return RankProfile(len(profile), profile)


# --- exact Jacobians of MLPs and DAGs ------------------------------------------------------------


def _exact(x: Any) -> Number:
    """An int stays an int; anything else (a float, a Fraction) becomes the exact Fraction."""
    if isinstance(x, int):
        return x
    f = Fraction(x)
    return f.numerator if f.denominator == 1 else f


def min_abs(values: Iterable[Any]) -> Any:
    """min |v| over the values (exact), None when there is none: the margin of a pattern."""
    best: Any = None
    for v in values:
        if best is None or abs(v) < best:
            best = abs(v)
    return best


def _slope(pre: Number, negative_slope: Number) -> Number:
    return 1 if pre > 0 else negative_slope


def mlp_preactivations(weights: Sequence[Sequence[Sequence[Any]]], biases: Sequence[Sequence[Any]],
                       X: Sequence[Sequence[Any]], leaky: Any = 0) -> list[list[list[Number]]]:
    """pre[i][l][u]: the exact pre-activation of hidden unit u of hidden layer l on sample i."""
    a_neg = _exact(leaky)
    out = []
    for x in X:
        a = [_exact(v) for v in x]
        per_layer = []
        for l in range(len(weights) - 1):
            pre = [sum((_exact(w) * v for w, v in zip(W_row, a)), _exact(b))
                   for W_row, b in zip(weights[l], biases[l])]
            per_layer.append(pre)
            a = [_slope(p, a_neg) * p for p in pre]
        out.append(per_layer)
    return out


def mlp_outputs(weights: Sequence[Sequence[Sequence[Any]]], biases: Sequence[Sequence[Any]],
                X: Sequence[Sequence[Any]], leaky: Any = 0) -> list[list[Number]]:
    """f(x_i) exactly, one row per sample."""
    pre = mlp_preactivations(weights, biases, X, leaky)
    a_neg = _exact(leaky)
    out = []
    for x, per_layer in zip(X, pre):
        a = [_exact(v) for v in x] if not per_layer else \
            [_slope(p, a_neg) * p for p in per_layer[-1]]
        out.append([sum((_exact(w) * v for w, v in zip(W_row, a)), _exact(b))
                    for W_row, b in zip(weights[-1], biases[-1])])
    return out


def mlp_jacobian(weights: Sequence[Sequence[Sequence[Any]]], biases: Sequence[Sequence[Any]],
                 X: Sequence[Sequence[Any]], leaky: Any = 0) -> Matrix:
    """Exact J_X of the MLP x -> W_L s(... s(W_1 x + b_1) ...) + b_L, s(z) = z for z > 0 and
    leaky z otherwise on the hidden layers (leaky = 0: ReLU, ReLU'(0) = 0), identity output.

    weights[l] is out x in, biases[l] has `out` entries. Columns in PyTorch's parameter order:
    for each layer l, W_l row-major ([out][in]) then b_l. Rows sample-major: row i q + j is
    d f_j(x_i) / d theta."""
    L = len(weights)
    W = [[[_exact(w) for w in row] for row in weights[l]] for l in range(L)]
    B = [[_exact(b) for b in biases[l]] for l in range(L)]
    a_neg = _exact(leaky)
    for l in range(L):
        if len(B[l]) != len(W[l]) or (l > 0 and any(len(r) != len(W[l - 1]) for r in W[l])):
            raise ValueError(f"layer {l}: shapes do not chain")
    rows: Matrix = []
    q = len(W[-1])
    for x in X:
        acts = [[_exact(v) for v in x]]  # the input of each layer
        slopes = []  # the slope of each hidden unit at this sample (the pattern)
        for l in range(L - 1):
            pre = [sum((w * v for w, v in zip(W_row, acts[l])), b) for W_row, b in zip(W[l], B[l])]
            s = [_slope(p, a_neg) for p in pre]
            slopes.append(s)
            acts.append([si * p for si, p in zip(s, pre)])
        for j in range(q):
            g: list[Number] = [0] * q  # adjoint of layer l's pre-activation
            g[j] = 1
            blocks: list[list[Number]] = [[] for _ in range(L)]
            for l in reversed(range(L)):
                blocks[l] = [gu * v for gu in g for v in acts[l]] + list(g)
                if l > 0:
                    width_in = len(acts[l])
                    adj = [sum((W[l][u][k] * g[u] for u in range(len(g)) if g[u]), 0)
                           for k in range(width_in)]
                    g = [s * a for s, a in zip(slopes[l - 1], adj)]
            rows.append([e for block in blocks for e in block])
    return rows


class Dag(NamedTuple):
    """A DAG network: node v's value is act_v(sum over in-edges w_e value(source)), act_v(z) = z
    for z > 0, negative_slopes[v] z otherwise (0: ReLU, 1: identity). data_inputs take the
    columns of X, bias nodes the value 1, outputs (in the order given) are the columns of f.
    Edge e weighs theta[edge_params[e]], or fixed_weights[e] when edge_params[e] == -1; without
    edge_params, edge e carries theta[e] (d = number of edges)."""
    num_nodes: int
    edges: list[tuple[int, int]]
    data_inputs: list[int]
    bias: list[int]
    outputs: list[int]
    negative_slopes: dict[int, Number]  # nodes absent: identity
    edge_params: list[int] | None = None
    fixed_weights: list[Any] | None = None
    num_params: int | None = None


def _topological_order(dag: Dag) -> list[int]:
    indeg = [0] * dag.num_nodes
    out_edges: list[list[int]] = [[] for _ in range(dag.num_nodes)]
    for k, (s, t) in enumerate(dag.edges):
        indeg[t] += 1
        out_edges[s].append(k)
    order = [v for v in range(dag.num_nodes) if indeg[v] == 0]
    for v in order:  # grows while it is read
        for k in out_edges[v]:
            t = dag.edges[k][1]
            indeg[t] -= 1
            if indeg[t] == 0:
                order.append(t)
    if len(order) != dag.num_nodes:
        raise ValueError("not a DAG")
    return order


def dag_jacobian(dag: Dag, theta: Sequence[Any], X: Sequence[Sequence[Any]]
                 ) -> tuple[Matrix, list[Number]]:
    """(exact J_X, the pre-activations of every kinked node (slope != 1) on every sample)."""
    th = [_exact(t) for t in theta]
    params = dag.edge_params if dag.edge_params is not None else list(range(len(dag.edges)))
    d = dag.num_params if dag.edge_params is not None else len(dag.edges)
    if len(th) != d:
        raise ValueError(f"theta has {len(th)} entries, the network {d} parameters")
    weight = [th[k] if k >= 0 else _exact(dag.fixed_weights[e])  # type: ignore[index]
              for e, k in enumerate(params)]
    order = _topological_order(dag)
    in_edges: list[list[int]] = [[] for _ in range(dag.num_nodes)]
    for k, (_, t) in enumerate(dag.edges):
        in_edges[t].append(k)
    rows: Matrix = []
    kinked_pre: list[Number] = []
    for x in X:
        val: list[Number] = [0] * dag.num_nodes
        slope: list[Number] = [1] * dag.num_nodes
        for c, v in enumerate(dag.data_inputs):
            val[v] = _exact(x[c])
        for v in dag.bias:
            val[v] = 1
        for v in order:
            if not in_edges[v]:
                continue
            pre = sum((weight[e] * val[dag.edges[e][0]] for e in in_edges[v]), 0)
            a_neg = _exact(dag.negative_slopes.get(v, 1))
            if a_neg != 1:
                kinked_pre.append(pre)
            slope[v] = _slope(pre, a_neg)
            val[v] = slope[v] * pre
        for o in dag.outputs:
            adj: list[Number] = [0] * dag.num_nodes  # d f_o / d value(v)
            adj[o] = 1
            row: list[Number] = [0] * d
            for v in reversed(order):
                if not adj[v] or not in_edges[v]:
                    continue
                g = adj[v] * slope[v]  # d f_o / d pre(v)
                if not g:
                    continue
                for e in in_edges[v]:
                    u = dag.edges[e][0]
                    if params[e] >= 0:
                        row[params[e]] += g * val[u]
                    adj[u] += g * weight[e]
            rows.append(row)
    return rows, kinked_pre


def mlp_dag(sizes: Sequence[int], leaky: Any = 0) -> Dag:
    """The MLP of layer sizes (r, w_1, ..., w_L, q) as a Dag in pathlift's feed-forward node
    order (docs/conventions.md#feed-forward: inputs, bias b1, layer 1, bias b2, ..., outputs)
    and PyTorch's parameter order (per layer W row-major, then b). Returns the Dag; the node
    names are `mlp_node_names(sizes)`."""
    names, edges, data, bias, outputs, hidden = _mlp_layout(sizes)
    a_neg = _exact(leaky)
    return Dag(len(names), edges, data, bias, outputs, {v: a_neg for v in hidden})


def mlp_node_names(sizes: Sequence[int]) -> list[str]:
    return _mlp_layout(sizes)[0]


def _mlp_layout(sizes: Sequence[int]):
    r, *widths, q = sizes
    names = [f"x{i}" for i in range(r)]
    layers = [list(range(r))]
    bias_nodes, hidden = [], []
    for l, w in enumerate([*widths, q], start=1):
        bias_nodes.append(len(names))
        names.append(f"b{l}")
        start = len(names)
        names += [f"h{l}_{u}" if l <= len(widths) else f"y{u}" for u in range(w)]
        layers.append(list(range(start, start + w)))
        if l <= len(widths):
            hidden += layers[-1]
    edges = []
    for l in range(1, len(layers)):
        edges += [(u, v) for v in layers[l] for u in layers[l - 1]]  # W row-major
        edges += [(bias_nodes[l - 1], v) for v in layers[l]]  # then b
    return names, edges, layers[0], bias_nodes, layers[-1], hidden


def mlp_theta(weights: Sequence[Sequence[Sequence[Any]]], biases: Sequence[Sequence[Any]]
              ) -> list[Number]:
    """theta in PyTorch's order: per layer W row-major, then b."""
    theta: list[Number] = []
    for W, b in zip(weights, biases):
        theta += [_exact(w) for row in W for w in row] + [_exact(v) for v in b]
    return theta


# --- PyTorch's autograd, proven exact ------------------------------------------------------------


class NotExact(AssertionError):
    """float64 may have rounded: the values are off a small dyadic grid or too large."""


def _grid(values: Any) -> tuple[int, int]:
    """(K, B): every value is an integer multiple of 2^-K with |value| < 2^B (numpy float64)."""
    import numpy as np

    a = np.asarray(values, dtype=np.float64).ravel()
    if a.size == 0:
        return 0, 0
    if not np.all(np.isfinite(a)):
        raise NotExact("a value is not finite")
    for k in range(0, 64):
        s = np.ldexp(a, k)
        if np.all(s == np.round(s)):
            break
    else:
        raise NotExact("a value is not a dyadic rational with a small denominator")
    top = float(np.max(np.abs(a)))
    return k, (0 if top == 0 else math.frexp(top)[1])


def _grids(tensors: Sequence[Any]) -> tuple[int, int]:
    """(max K, max B) of _grid over float64 tensors (torch or numpy)."""
    K = B = 0
    for t in tensors:
        a = t.detach().numpy() if hasattr(t, "detach") else t
        if a.dtype != "float64":
            raise NotExact(f"a tensor of dtype {a.dtype}: use model.double()")
        k, b = _grid(a)
        K, B = max(K, k), max(B, b)
    return K, B


def torch_batch_jacobian(model: Any, X: Any) -> tuple[Matrix, Number | None]:
    """(exact J_X, min |input| of the ReLU / LeakyReLU modules (None without one)) of a float64
    torch model built from leaf modules (nn.Sequential of Conv2d, BatchNorm2d in eval mode, ReLU,
    LeakyReLU, AvgPool2d, Flatten, Linear): rows sample-major (i q + j, the output flattened),
    columns in `model.parameters()` order, each parameter flattened in C order. Raises NotExact
    when float64 cannot be shown exact (see the module docstring)."""
    import numpy as np
    import torch

    params = [p for p in model.parameters()]
    recorded: list[Any] = []
    adjoints: list[Any] = []
    margin: list[Number] = []

    def forward_hook(module, inputs, output):
        recorded.extend(t for t in inputs if isinstance(t, torch.Tensor))
        recorded.append(output)
        if isinstance(module, (torch.nn.ReLU, torch.nn.LeakyReLU)):
            margin.append(_exact(float(inputs[0].detach().abs().min())))
        if output.requires_grad:
            output.register_hook(lambda g: adjoints.append(g.detach().clone()))

    leaves = [m for m in model.modules() if not list(m.children())]
    handles = [m.register_forward_hook(forward_hook) for m in leaves]
    try:
        with torch.enable_grad():
            out = model(X)
            out = out.reshape(out.shape[0], -1)
            n, q = out.shape
            rows = []
            for i in range(n):
                for j in range(q):
                    grads = torch.autograd.grad(out[i, j], params, retain_graph=True,
                                                allow_unused=True)
                    rows.append(torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1)
                                           for g, p in zip(grads, params)]))
    finally:
        for h in handles:
            h.remove()
    J = torch.stack(rows).detach().numpy() if rows else np.zeros((0, 0))
    weights = [*params, *(b for b in model.buffers() if b.dtype.is_floating_point)]
    # at most 2^10 nonzero terms per sum: fan-ins and fan-outs below a weight tensor's size,
    # sums over positions below a sample's size
    if any(w.numel() > 1024 for w in weights) or any(t[0].numel() > 1024 for t in recorded):
        raise NotExact("a layer too large for the 2^10 terms per sum assumed")
    ka, ba = _grids([X, *recorded])
    kw, bw = _grids(weights)
    kg, bg = _grids(adjoints)
    # forward sums of w x, backward sums of w g (adjoints) and of g x (parameter gradients):
    # each a sum of at most 2^10 products, plus 2 bits for the constants (1/4 of a pool)
    for what, bits in (("forward", ka + ba + kw + bw), ("adjoint", kg + bg + kw + bw),
                       ("gradient", kg + bg + ka + ba)):
        if bits + 12 > 53:
            raise NotExact(f"{what} sums may need {bits + 12} > 53 bits: float64 may round")
    _grid(J)  # and the Jacobian itself is dyadic, finite
    matrix: Matrix = [[_exact(float(v)) for v in row] for row in J]
    return matrix, min_abs(margin)
