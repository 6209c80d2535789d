"""The PyTorch bridge: PyTorch models as pathlift networks and back.

``from_torch(model)`` maps a model to a DAG ReLU network whose edge k carries the k-th entry of
``torch.cat([p.flatten() for p in model.parameters()])``, so column k of
``pathlift.jacobian(net, theta)`` is the derivative with respect to that PyTorch parameter
entry. The model is traced with ``torch.fx`` (an ``nn.Sequential`` included); each tensor
entry of the trace is followed symbolically, one sample at a time:

* the input: one input node per entry, ``x0, x1, ...`` (row-major over ``input_shape``);
* ``nn.Linear`` / ``F.linear`` number ``l`` (call order, from 1): output ``j`` is a pending
  pre-activation ``sum_i W[j, i] v_i + b[j]``; the edge of ``W[j, i]`` gets the index of that
  entry in ``model.parameters()`` order, and the bias comes from a bias node ``b<l>`` (one per
  Linear with bias). The pending pre-activation becomes node ``h<l>_<j>`` when it is needed:
  as a ReLU node under ``ReLU`` / ``LeakyReLU`` (activation ``relu`` / ``leaky_relu:a``), as an
  identity node when it feeds another Linear directly, as output ``y<j>`` at the end;
* ``a + b`` (and ``a - b``) add pending pre-activations: a Linear after an add takes the sum.
  An addition is not a ReLU node: ``relu(L1(x) + L2(x))`` is one ReLU node whose incoming
  edges are those of both Linears (parallel edges when they share a source). A term that is
  already a node's value (``x`` in ``relu(L(x)) + x``) has no parameter: it enters the sum
  through a *fixed edge* of weight 1 (-1 for a subtraction). Fixed edges come after the
  parameters in the edge order (so the first ``n = sum(p.numel() for p in
  model.parameters())`` columns are still the model's parameters); their weights are stored
  with the network (``net.weights``) and returned by ``theta_from_torch(model)`` after the
  parameters, so ``jacobian(net, theta_from_torch(model))`` and ``jacobian(net)`` with theta
  omitted both evaluate at the model's values. A sum
  that feeds a Linear becomes an identity node ``a<k>_<j>`` (``k``-th addition);
* ``torch.cat`` (dim >= 1), ``nn.Flatten`` / ``torch.flatten`` (start_dim >= 1),
  ``nn.Identity``, ``nn.Dropout`` in eval mode only rearrange entries: no node, no edge;
* ``ReLU`` of a value that is already a node (an input, an identity node) is a new ReLU node
  ``r<k>_<j>`` fed by a fixed edge; ``ReLU`` of a ReLU node is that node;
* the outputs, in the model's output order (a tuple of tensors is concatenated), are nodes
  ``y0, y1, ...`` placed last in node order (the columns of f(X)); an output that is an input
  or already an output gets an identity node fed by a fixed edge.

Node order: the nodes in creation order, outputs last. For ``nn.Sequential(Linear, ReLU, ...,
Linear)`` the network is exactly ``pathlift.feed_forward(r, widths, q, bias)``, names
included. Anything else -- Conv2d, Sigmoid, BatchNorm, multiplication, a Linear applied twice
(weight sharing), a constant added to a tensor -- raises :class:`pathlift.UnsupportedModelError`
(a ValueError) naming the layer or operation.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from . import UnsupportedModelError, _pathlift

__all__ = ["from_torch", "theta_from_torch", "to_torch", "UnsupportedModelError"]


def _parameter_vector(model: nn.Module) -> np.ndarray:
    """``torch.cat([p.flatten() for p in model.parameters()])`` as float64 numpy (a copy)."""
    params = [p.detach().reshape(-1).to(device="cpu", dtype=torch.float64)
              for p in model.parameters()]
    if not params:
        return np.zeros(0)
    return torch.cat(params).numpy().copy()


def _plain_sequential(model: nn.Module) -> bool:
    """True for an ``nn.Sequential`` that from_torch maps without any fixed edge: optional
    leading Flatten, then Linear layers each followed by at most one ReLU / LeakyReLU, with
    Identity and eval-mode Dropout anywhere. (A ReLU of an input, an activation of an
    activation or a skip would add fixed edges: those models take the traced route.)"""
    if type(model) is not nn.Sequential:
        return False
    previous = "start"
    for mod in model:
        if isinstance(mod, nn.Identity) or (isinstance(mod, nn.Dropout) and
                                            (not mod.training or mod.p == 0)):
            continue
        if isinstance(mod, nn.Flatten) and previous == "start":
            continue
        if type(mod) is nn.Linear:
            previous = "linear"
        elif type(mod) in (nn.ReLU, nn.LeakyReLU) and previous == "linear":
            previous = "activation"
        else:
            return False
    return previous != "start"


def theta_from_torch(model: nn.Module,
                     input_shape: Union[None, int, Sequence[int]] = None) -> np.ndarray:
    """theta for ``from_torch(model, input_shape)``: the network's full parameter vector, a new
    float64 numpy array. It is the model's parameters in ``model.parameters()`` order,
    ``torch.cat([p.flatten() for p in model.parameters()])`` (n entries), FOLLOWED by the
    weights (+1, or -1 for a subtraction) of the fixed edges that identity skip connections
    add (``relu(L(x)) + x``: see the module docstring). So
    ``pathlift.jacobian(pathlift.from_torch(m), pathlift.theta_from_torch(m))`` works for every
    supported model, its first ``n = sum(p.numel() for p in m.parameters())`` columns are the
    PyTorch parameter entries, and ``theta_from_torch(m)`` equals ``from_torch(m).weights``.
    For an ``nn.Sequential`` of Linear / ReLU layers (no fixed edge) it is just the
    parameters, computed without tracing.

    input_shape: as in :func:`from_torch` (needed only when from_torch needs it). Raises what
    from_torch raises (:class:`pathlift.UnsupportedModelError`) for a model it cannot map.
    """
    if _plain_sequential(model):
        return _parameter_vector(model)
    return np.array(from_torch(model, input_shape).weights, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# from_torch


class _Pending:
    """A pre-activation that is not a node yet: sum_t coef_t * value(src_t), where coef_t is a
    model parameter (param[t] >= 0, its index in theta) or a constant (param[t] = -1, const[t]).
    Consumed at most once: a value used twice is made a node first."""

    __slots__ = ("src", "param", "const", "name")

    def __init__(self, src: List[int], param: List[int], const: List[float], name: str):
        self.src = src
        self.param = param
        self.const = const
        self.name = name

    def has_parameters(self) -> bool:
        return any(p >= 0 for p in self.param)


class _Param:
    """A parameter fetched by get_attr (for F.linear): its offset in theta."""

    __slots__ = ("tensor", "offset", "name")

    def __init__(self, tensor: torch.Tensor, offset: int, name: str):
        self.tensor = tensor
        self.offset = offset
        self.name = name


class _Tensor:
    """Symbolic per-sample tensor: an object array of node ids (int) and _Pending entries."""

    __slots__ = ("entries",)

    def __init__(self, entries: np.ndarray):
        self.entries = entries

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self.entries.shape)


_RELU_FUNCTIONS = {F.relu, torch.relu, torch.relu_}
_LEAKY_FUNCTIONS = {F.leaky_relu}
_ADD_FUNCTIONS = {operator.add, operator.iadd, torch.add}
_SUB_FUNCTIONS = {operator.sub, operator.isub, torch.sub}
_CAT_FUNCTIONS = {torch.cat}
if hasattr(torch, "concat"):
    _CAT_FUNCTIONS.add(torch.concat)
_FLATTEN_FUNCTIONS = {torch.flatten}
_LINEAR_FUNCTIONS = {F.linear}
_INPLACE_METHODS = {"relu_", "add_", "sub_"}
_INPLACE_FUNCTIONS = {torch.relu_, operator.iadd, operator.isub}


def _describe(node: torch.fx.Node, model: nn.Module) -> str:
    if node.op == "call_module":
        mod = model.get_submodule(node.target)
        return f"layer {type(mod).__name__} at '{node.target}'"
    if node.op == "call_function":
        name = getattr(node.target, "__qualname__", None) or getattr(node.target, "__name__", None)
        mod = getattr(node.target, "__module__", None) or ""
        return f"operation {mod + '.' if mod and mod != 'builtins' else ''}{name or node.target}" \
               f" (node '{node.name}')"
    if node.op == "call_method":
        return f"tensor method .{node.target}() (node '{node.name}')"
    return f"{node.op} '{node.target}'"


_SUPPORTED = ("supported: nn.Linear, nn.ReLU, nn.LeakyReLU, nn.Identity, nn.Flatten, "
              "nn.Dropout (eval mode), F.relu/F.leaky_relu/F.linear, torch.flatten, torch.cat, "
              "+ and - of tensors")


class _Builder:
    def __init__(self, model: nn.Module):
        self.model = model
        self.names: List[str] = []
        self.acts: List[str] = []
        self.is_input: List[bool] = []
        self.bias_nodes: List[int] = []
        self.param_offset: Dict[int, Tuple[int, str, torch.Tensor]] = {}
        offset = 0
        for name, p in model.named_parameters():
            self.param_offset[id(p)] = (offset, name, p)
            offset += p.numel()
        self.num_params = offset
        self.edge_src = np.full(offset, -1, dtype=np.int64)
        self.edge_dst = np.full(offset, -1, dtype=np.int64)
        self.fixed: List[Tuple[int, int, float]] = []
        self.linear_count = 0
        self.add_count = 0
        self.relu_count = 0
        self.called_modules: set = set()

    # nodes and edges -----------------------------------------------------------------------

    def new_node(self, name: str, act: str, is_input: bool = False) -> int:
        self.names.append(name)
        self.acts.append(act)
        self.is_input.append(is_input)
        return len(self.names) - 1

    def materialize(self, pending: _Pending, act: str, name: Optional[str] = None) -> int:
        v = self.new_node(name or pending.name, act)
        for s, p, c in zip(pending.src, pending.param, pending.const):
            if p >= 0:
                if self.edge_src[p] != -1:
                    raise UnsupportedModelError(
                        f"parameter entry {p} ({self.param_name(p)}) would be on two edges: "
                        "weight sharing is not representable")
                self.edge_src[p] = s
                self.edge_dst[p] = v
            else:
                self.fixed.append((s, v, c))
        return v

    def param_name(self, index: int) -> str:
        for offset, name, p in self.param_offset.values():
            if offset <= index < offset + p.numel():
                return f"'{name}' entry {index - offset}"
        return f"entry {index}"

    def as_node(self, entry: Any) -> int:
        """The entry as a node (a pending pre-activation becomes an identity node)."""
        if isinstance(entry, _Pending):
            return self.materialize(entry, "identity")
        return entry

    def terms(self, entry: Any, sign: float) -> Tuple[List[int], List[int], List[float]]:
        if isinstance(entry, _Pending):
            if sign < 0 and entry.has_parameters():
                entry = self.as_node(entry)
            else:
                return entry.src, entry.param, [sign * c for c in entry.const]
        return [entry], [-1], [sign]

    # operations ----------------------------------------------------------------------------

    def linear(self, x: _Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
               where: str) -> _Tensor:
        out_features, in_features = weight.shape
        if len(x.shape) != 1:
            raise UnsupportedModelError(
                f"{where}: a Linear applied to a per-sample tensor of shape {x.shape} would share "
                "its weights across positions (flatten first, or pass input_shape)")
        if x.shape[0] != in_features:
            raise UnsupportedModelError(
                f"{where}: expects {in_features} features, the traced input has {x.shape[0]} "
                "(pass input_shape)")
        w_off = self.offset_of(weight, where)
        b_off = self.offset_of(bias, where) if bias is not None else None
        self.linear_count += 1
        l = self.linear_count
        inputs = [self.as_node(e) for e in x.entries]
        bias_node = None
        if bias is not None:
            bias_node = self.new_node(f"b{l}", "identity", is_input=True)
            self.bias_nodes.append(bias_node)
        out = np.empty(out_features, dtype=object)
        for j in range(out_features):
            src = list(inputs)
            param = list(range(w_off + j * in_features, w_off + (j + 1) * in_features))
            const = [0.0] * in_features
            if bias_node is not None:
                src.append(bias_node)
                param.append(b_off + j)
                const.append(0.0)
            out[j] = _Pending(src, param, const, f"h{l}_{j}")
        return _Tensor(out)

    def offset_of(self, tensor: torch.Tensor, where: str) -> int:
        entry = self.param_offset.get(id(tensor))
        if entry is None:
            raise UnsupportedModelError(
                f"{where}: uses a tensor that is not one of model.parameters() (a buffer or a "
                "constant): only parameters can be edges")
        return entry[0]

    def activation(self, x: _Tensor, act: str) -> _Tensor:
        self.relu_count += 1
        k = self.relu_count
        out = np.empty(x.shape, dtype=object)
        flat_in = x.entries.reshape(-1)
        flat_out = out.reshape(-1)
        for j, e in enumerate(flat_in):
            if isinstance(e, _Pending):
                flat_out[j] = self.materialize(e, act)
            elif act == "relu" and self.acts[e] == "relu":
                flat_out[j] = e  # relu(relu(z)) = relu(z)
            else:
                flat_out[j] = self.materialize(_Pending([e], [-1], [1.0], ""), act,
                                               name=f"r{k}_{j}")
        return _Tensor(out)

    def add(self, a: Any, b: Any, sign: float, where: str) -> _Tensor:
        if not isinstance(a, _Tensor) or not isinstance(b, _Tensor):
            raise UnsupportedModelError(
                f"{where}: adding a constant to a tensor is not representable (it would be a "
                "bias that is not a parameter)")
        if a.shape != b.shape:
            raise UnsupportedModelError(
                f"{where}: adds tensors of per-sample shapes {a.shape} and {b.shape} "
                "(broadcasting is not supported)")
        self.add_count += 1
        k = self.add_count
        out = np.empty(a.shape, dtype=object)
        fa, fb, fo = a.entries.reshape(-1), b.entries.reshape(-1), out.reshape(-1)
        for j in range(fo.size):
            sa, pa, ca = self.terms(fa[j], 1.0)
            sb, pb, cb = self.terms(fb[j], sign)
            fo[j] = _Pending(sa + sb, pa + pb, ca + cb, f"a{k}_{j}")
        return _Tensor(out)

    def output(self, entries: Sequence[Any]) -> List[int]:
        outputs: List[int] = []
        taken = set()
        for j, e in enumerate(entries):
            name = f"y{j}"
            if isinstance(e, _Pending):
                v = self.materialize(e, "identity", name=name)
            elif self.is_input[e] or e in taken:
                v = self.materialize(_Pending([e], [-1], [1.0], name), "identity")
            else:
                v = e
                self.names[v] = name
            taken.add(v)
            outputs.append(v)
        return outputs


def _flatten(x: _Tensor, start_dim: int, end_dim: int, where: str) -> _Tensor:
    nd = len(x.shape) + 1  # with the batch dimension
    s = start_dim + nd if start_dim < 0 else start_dim
    e = end_dim + nd if end_dim < 0 else end_dim
    if s == 0:
        raise UnsupportedModelError(f"{where}: flattening the batch dimension (start_dim=0)")
    if not 1 <= s <= e < nd:
        raise UnsupportedModelError(
            f"{where}: flatten dims ({start_dim}, {end_dim}) do not fit a tensor of {nd} dims")
    shape = x.shape
    new_shape = shape[: s - 1] + (int(np.prod(shape[s - 1: e], dtype=np.int64)),) + shape[e:]
    return _Tensor(x.entries.reshape(new_shape))


def _cat(tensors: Sequence[Any], dim: int, where: str) -> _Tensor:
    if not tensors or not all(isinstance(t, _Tensor) for t in tensors):
        raise UnsupportedModelError(f"{where}: torch.cat of something that is not a traced tensor")
    nd = len(tensors[0].shape) + 1
    d = dim + nd if dim < 0 else dim
    if d == 0:
        raise UnsupportedModelError(f"{where}: concatenation along the batch dimension (dim=0)")
    return _Tensor(np.concatenate([t.entries for t in tensors], axis=d - 1))


def _infer_input_shape(graph: torch.fx.Graph, model: nn.Module,
                       placeholder: torch.fx.Node) -> Tuple[int, ...]:
    """(in_features,) of the first Linear the input reaches through shape-free operations."""
    chain = {placeholder}
    for node in graph.nodes:
        if not node.args or not isinstance(node.args[0], torch.fx.Node) or \
                node.args[0] not in chain:
            continue
        if node.op == "call_module":
            mod = model.get_submodule(node.target)
            if isinstance(mod, nn.Linear):
                return (mod.in_features,)
            if isinstance(mod, (nn.ReLU, nn.LeakyReLU, nn.Identity, nn.Flatten, nn.Dropout)):
                chain.add(node)
        elif node.op == "call_function":
            if node.target in _LINEAR_FUNCTIONS and isinstance(node.args[1], torch.fx.Node) \
                    and node.args[1].op == "get_attr":
                return (int(model.get_parameter(node.args[1].target).shape[1]),)
            if node.target in _RELU_FUNCTIONS | _LEAKY_FUNCTIONS | _FLATTEN_FUNCTIONS:
                chain.add(node)
        elif node.op == "call_method" and node.target in {"relu", "relu_", "flatten"}:
            chain.add(node)
    raise UnsupportedModelError("cannot infer the input shape from the model: pass input_shape")


def _use_counts(graph: torch.fx.Graph) -> Dict[torch.fx.Node, int]:
    counts: Dict[torch.fx.Node, int] = {n: 0 for n in graph.nodes}

    def count(n: torch.fx.Node) -> torch.fx.Node:
        counts[n] += 1
        return n

    for node in graph.nodes:
        torch.fx.node.map_arg(node.args, count)
        torch.fx.node.map_arg(node.kwargs, count)
    return counts


def _arg(node: torch.fx.Node, index: int, name: str, default: Any) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def from_torch(model: nn.Module, input_shape: Union[None, int, Sequence[int]] = None
               ) -> "_pathlift.Network":
    """The DAG ReLU network of a PyTorch model, with parameter order
    ``torch.cat([p.flatten() for p in model.parameters()])``: edge k carries the k-th entry,
    so column k of ``pathlift.jacobian(net, theta)`` is that PyTorch parameter entry.

    model: an ``nn.Sequential`` of ``Linear`` (with or without bias), ``ReLU``, ``LeakyReLU``,
    ``Identity``, ``Flatten``, ``Dropout`` (eval mode), or any module that ``torch.fx`` can trace
    into those plus ``+``/``-`` of tensors (skip connections) and ``torch.cat`` (dim >= 1).
    input_shape: the shape of one sample (without the batch dimension), e.g. ``(1, 28, 28)``;
    by default ``(in_features,)`` of the first Linear the input reaches.

    Returns a :class:`pathlift.Network` storing the model's weights (``net.weights``, equal to
    ``theta_from_torch(model)``). Identity skips (``relu(L(x)) + x``) add fixed edges of
    weight 1 after the parameters: then ``net.d`` exceeds the number n of parameter entries
    and ``net.weights`` (and ``theta_from_torch(model)``) end with those weights. The
    mapping of modules to nodes is described in the ``pathlift.torch`` module docstring and
    docs/python.md.

    Raises :class:`pathlift.UnsupportedModelError` (a ValueError) naming the layer or
    operation that cannot be represented (Conv2d, Sigmoid, BatchNorm, a reused Linear, ...).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"from_torch expects a torch.nn.Module, got {type(model).__name__}")
    try:
        graph = torch.fx.Tracer().trace(model)
    except Exception as e:  # torch.fx raises many types (TraceError, TypeError, ...)
        raise UnsupportedModelError(
            f"torch.fx cannot trace {type(model).__name__}: {type(e).__name__}: {e}") from e
    # Dead code (an unused Linear) must not become nodes; the purity check needs a module.
    graph = torch.fx.GraphModule(model, graph).graph
    graph.eliminate_dead_code()
    uses = _use_counts(graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise UnsupportedModelError(
            f"the model's forward takes {len(placeholders)} tensors: exactly one is supported")
    for node in graph.nodes:  # name an unsupported layer before anything else goes wrong
        if not _supported(node, model):
            raise UnsupportedModelError(f"unsupported {_describe(node, model)}; {_SUPPORTED}")
    if input_shape is None:
        shape = _infer_input_shape(graph, model, placeholders[0])
    else:
        shape = (int(input_shape),) if isinstance(input_shape, (int, np.integer)) \
            else tuple(int(s) for s in input_shape)
        if not shape or any(s <= 0 for s in shape):
            raise ValueError(f"input_shape must be positive sizes, got {input_shape!r}")

    b = _Builder(model)
    values: Dict[torch.fx.Node, Any] = {}
    outputs: Optional[List[int]] = None

    def val(a: Any) -> Any:
        return values[a] if isinstance(a, torch.fx.Node) else a

    for node in graph.nodes:
        where = _describe(node, model)
        if node.op == "placeholder":
            n = int(np.prod(shape, dtype=np.int64))
            ids = np.array([b.new_node(f"x{i}", "identity", is_input=True) for i in range(n)],
                           dtype=object)
            result: Any = _Tensor(ids.reshape(shape))
        elif node.op == "get_attr":
            try:
                p = model.get_parameter(node.target)
            except AttributeError as e:
                raise UnsupportedModelError(
                    f"get_attr '{node.target}' is not a parameter (a buffer or a constant)") from e
            result = _Param(p, b.offset_of(p, where), node.target)
        elif node.op == "output":
            out = node.args[0]
            items = list(out) if isinstance(out, (tuple, list)) else [out]
            entries: List[Any] = []
            for item in items:
                v = val(item)
                if not isinstance(v, _Tensor):
                    raise UnsupportedModelError("the model's output must be a tensor or a tuple of "
                                                "tensors")
                entries.extend(v.entries.reshape(-1))
            outputs = b.output(entries)
            continue
        else:
            if _is_inplace(node, model) and node.args and \
                    isinstance(node.args[0], torch.fx.Node) and uses[node.args[0]] > 1:
                raise UnsupportedModelError(
                    f"{where} modifies in place a tensor that is used elsewhere")
            result = _apply(node, model, b, val, where)
        # A value used twice must not hand its pending sums to two consumers (the parameters
        # would be on two edges): make them nodes now.
        if isinstance(result, _Tensor) and uses[node] > 1:
            flat = result.entries.reshape(-1)
            for j, e in enumerate(flat):
                if isinstance(e, _Pending):
                    flat[j] = b.as_node(e)
        values[node] = result

    if outputs is None:  # pragma: no cover - fx graphs always end with an output node
        raise UnsupportedModelError("the traced model has no output")
    unused = np.flatnonzero(b.edge_src < 0)
    if unused.size:
        names = sorted({b.param_name(int(i)).split(" entry")[0] for i in unused})
        raise UnsupportedModelError(
            f"parameters {', '.join(names)} are not used by the forward pass: every parameter "
            "must be an edge")
    return _assemble(b, outputs)


_SUPPORTED_MODULES = (nn.Linear, nn.ReLU, nn.LeakyReLU, nn.Identity, nn.Flatten, nn.Dropout)
_SUPPORTED_METHODS = {"relu", "relu_", "add", "add_", "sub", "sub_", "flatten"}


def _supported(node: torch.fx.Node, model: nn.Module) -> bool:
    if node.op == "call_module":
        mod = model.get_submodule(node.target)
        return isinstance(mod, _SUPPORTED_MODULES)
    if node.op == "call_function":
        t = node.target
        return any(t in group for group in (_RELU_FUNCTIONS, _LEAKY_FUNCTIONS, _ADD_FUNCTIONS,
                                            _SUB_FUNCTIONS, _CAT_FUNCTIONS, _FLATTEN_FUNCTIONS,
                                            _LINEAR_FUNCTIONS))
    if node.op == "call_method":
        return node.target in _SUPPORTED_METHODS
    return True


def _is_inplace(node: torch.fx.Node, model: nn.Module) -> bool:
    if node.op == "call_method":
        return node.target in _INPLACE_METHODS
    if node.op == "call_function":
        return node.target in _INPLACE_FUNCTIONS or bool(node.kwargs.get("inplace", False))
    if node.op == "call_module":
        return bool(getattr(model.get_submodule(node.target), "inplace", False))
    return False


def _apply(node: torch.fx.Node, model: nn.Module, b: _Builder, val, where: str) -> Any:
    if node.op == "call_module":
        mod = model.get_submodule(node.target)
        x = val(node.args[0]) if node.args else None
        if isinstance(mod, nn.Linear):
            if id(mod) in b.called_modules:
                raise UnsupportedModelError(
                    f"{where} is called twice: weight sharing is not representable")
            b.called_modules.add(id(mod))
            return b.linear(x, mod.weight, mod.bias, where)
        if isinstance(mod, nn.ReLU):
            return b.activation(x, "relu")
        if isinstance(mod, nn.LeakyReLU):
            return _leaky(b, x, mod.negative_slope)
        if isinstance(mod, nn.Identity):
            return x
        if isinstance(mod, nn.Flatten):
            return _flatten(x, mod.start_dim, mod.end_dim, where)
        if isinstance(mod, nn.Dropout):
            if mod.training and mod.p > 0:
                raise UnsupportedModelError(
                    f"{where} in training mode is random: call model.eval() first")
            return x
        raise UnsupportedModelError(f"unsupported {where}; {_SUPPORTED}")
    if node.op == "call_function":
        t = node.target
        if t in _RELU_FUNCTIONS:
            return b.activation(val(node.args[0]), "relu")
        if t in _LEAKY_FUNCTIONS:
            return _leaky(b, val(node.args[0]), float(_arg(node, 1, "negative_slope", 0.01)))
        if t in _ADD_FUNCTIONS or t in _SUB_FUNCTIONS:
            alpha = node.kwargs.get("alpha", 1)
            if alpha != 1:
                raise UnsupportedModelError(f"{where}: alpha != 1 is a multiplication")
            sign = 1.0 if t in _ADD_FUNCTIONS else -1.0
            return b.add(val(node.args[0]), val(node.args[1]), sign, where)
        if t in _CAT_FUNCTIONS:
            tensors = [val(a) for a in _arg(node, 0, "tensors", ())]
            return _cat(tensors, int(_arg(node, 1, "dim", 0)), where)
        if t in _FLATTEN_FUNCTIONS:
            return _flatten(val(node.args[0]), int(_arg(node, 1, "start_dim", 0)),
                            int(_arg(node, 2, "end_dim", -1)), where)
        if t in _LINEAR_FUNCTIONS:
            w = val(_arg(node, 1, "weight", None))
            bias = val(_arg(node, 2, "bias", None))
            if not isinstance(w, _Param) or not (bias is None or isinstance(bias, _Param)):
                raise UnsupportedModelError(f"{where}: F.linear needs parameters as weight/bias")
            key = ("F.linear", w.name)
            if key in b.called_modules:
                raise UnsupportedModelError(
                    f"{where}: parameter '{w.name}' used twice: weight sharing is not "
                    "representable")
            b.called_modules.add(key)
            return b.linear(val(node.args[0]), w.tensor, bias.tensor if bias else None, where)
        raise UnsupportedModelError(f"unsupported {where}; {_SUPPORTED}")
    if node.op == "call_method":
        m = node.target
        x = val(node.args[0])
        if m in ("relu", "relu_"):
            return b.activation(x, "relu")
        if m in ("add", "add_", "sub", "sub_"):
            if node.kwargs.get("alpha", 1) != 1:
                raise UnsupportedModelError(f"{where}: alpha != 1 is a multiplication")
            return b.add(x, val(node.args[1]), 1.0 if m.startswith("add") else -1.0, where)
        if m == "flatten":
            return _flatten(x, int(_arg(node, 1, "start_dim", 0)),
                            int(_arg(node, 2, "end_dim", -1)), where)
        raise UnsupportedModelError(f"unsupported {where}; {_SUPPORTED}")
    raise UnsupportedModelError(f"unsupported {where}")


def _leaky(b: _Builder, x: _Tensor, slope: float) -> _Tensor:
    if slope == 0.0:
        return b.activation(x, "relu")
    if not math.isfinite(slope):
        raise UnsupportedModelError(f"LeakyReLU slope {slope} is not finite")
    return b.activation(x, f"leaky_relu:{float(slope)!r}")


def _assemble(b: _Builder, outputs: List[int]) -> "_pathlift.Network":
    m = len(b.names)
    out_set = set(outputs)
    order = [v for v in range(m) if v not in out_set] + outputs  # outputs last, model order
    new_id = np.empty(m, dtype=np.int64)
    new_id[order] = np.arange(m)
    fixed = np.array([(s, t) for s, t, _ in b.fixed], dtype=np.int64).reshape(-1, 2)
    src = np.concatenate([b.edge_src, fixed[:, 0]])
    dst = np.concatenate([b.edge_dst, fixed[:, 1]])
    edges = np.stack([new_id[src], new_id[dst]], axis=1)
    weights = np.concatenate([_parameter_vector(b.model), [w for _, _, w in b.fixed]])
    has_out = np.zeros(m, dtype=bool)
    has_out[src] = True
    has_in = np.zeros(m, dtype=bool)
    has_in[dst] = True
    activations = {}
    for v in range(m):
        if b.is_input[v]:
            continue
        default = "identity" if (v in out_set or not has_out[v]) else "relu"
        if b.acts[v] != default:
            activations[b.names[v]] = b.acts[v]
    designated = [b.names[v] for v in outputs if has_out[v]]
    return _pathlift.Network(edges, nodes=[b.names[v] for v in order],
                             outputs=designated, bias=[b.names[v] for v in b.bias_nodes],
                             activations=activations, weights=weights)


# --------------------------------------------------------------------------------------------
# to_torch


def _layers(net: "_pathlift.Network") -> List[Tuple[List[int], int, bool]]:
    """The layers of a feed-forward network in PyTorch parameter order: for each Linear, its
    target nodes (rows of W), the offset of W in theta and whether a bias block follows.
    ValueError when the edge list is not of that form."""
    src = np.asarray(net.sources)
    dst = np.asarray(net.targets)
    d = net.d
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


def to_torch(net: "_pathlift.Network", theta: Optional[Any] = None, *,
             dtype: torch.dtype = torch.float64) -> nn.Sequential:
    """The ``nn.Sequential(Linear, act, ..., Linear[, act])`` of a feed-forward network in PyTorch
    parameter order (``feed_forward()``, or ``from_torch`` of such a Sequential), with
    parameters theta (default: the network's stored weights), in eval mode. Round trip:
    ``to_torch(from_torch(m), theta_from_torch(m))`` computes what ``m`` computes, and its
    ``theta_from_torch`` is theta. The inputs are the data inputs in node order, the outputs
    the output nodes in node order. ValueError for any other network (skip edges, layers
    out of PyTorch order, mixed activations in a layer) or a bad theta.
    """
    if theta is None:
        if net.weights is None:
            raise ValueError("to_torch: theta is required (the network has no stored weights)")
        theta = net.weights
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 1 or theta.size != net.d:
        raise ValueError(f"theta has {theta.size} entries but the network has {net.d} edges")
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta has non-finite entries")
    layers = _layers(net)
    acts = net.activations
    modules: List[nn.Module] = []
    n_in = len(net.data_inputs)
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
