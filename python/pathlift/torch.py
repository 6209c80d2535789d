"""The PyTorch bridge: PyTorch models as pathlift networks and back.

``from_torch(model, input_shape)`` traces the model with ``torch.fx`` (nested modules
included) and describes it **per layer** as a :class:`pathlift.LayerGraph`, held by the
:class:`pathlift.LayerNetwork` it returns. The path-free functions run on that graph; the
others unroll it in C++ (:func:`pathlift.unroll`) into the DAG on first use: one node per
tensor entry that needs one, one edge per weight use. Nothing is done per tensor entry in
Python.

Parameters. theta is ``torch.cat([p.flatten() for p in model.parameters()])`` in float64
(``theta_from_torch(model)``), except that each eval-mode BatchNorm's ``weight`` and ``bias``
positions hold ``a = weight / sqrt(running_var + eps)`` and ``b = bias - a * running_mean``,
the per-channel affine map ``y = a x + b`` it computes. Column k of ``pathlift.jacobian(net,
theta)`` is the derivative with respect to entry k of that vector; ``net.d`` is the number of
parameter entries. Each layer names where its parameter blocks start in theta (the position
of the tensor in ``model.parameters()``): a module called twice is two layers with the same
offsets (weight sharing: several edges carry one parameter). Operations without parameters
are **fixed edges** inside the network, not entries of theta: an identity skip
(``relu(conv(x) + x)``: weight 1, -1 for a subtraction), average pooling (weight 1/k),
max pooling (weight 1 into a *max node*). A parameter used by no operation is refused.

The mapping, module by module (functional forms in parentheses):

* ``nn.Linear`` (``F.linear`` of parameters): a ``linear`` layer, on a flat ``(F,)`` input;
* ``nn.Conv1d`` / ``nn.Conv2d`` (zero padding, any stride, dilation, groups; padding
  ``"same"`` when symmetric): a ``conv`` layer;
* ``nn.MaxPool1d/2d`` (``F.max_pool2d``), ``nn.AvgPool1d/2d`` (``F.avg_pool2d``,
  ``count_include_pad`` either way), ``nn.AdaptiveAvgPool1d/2d`` (``F.adaptive_avg_pool2d``):
  pooling layers (``ceil_mode=False``, no ``divisor_override``);
* ``nn.BatchNorm1d/2d`` in eval mode, with affine parameters and running statistics: a
  ``batch_norm`` layer ``y = a x + b`` (a, b as above);
* ``nn.ReLU`` (``F.relu``, ``torch.relu``, ``.relu()``), ``nn.LeakyReLU`` (``F.leaky_relu``):
  an ``activation`` layer;
* ``+`` / ``-`` of tensors (``torch.add``, ``+=``, ``.add()``): ``add`` / ``sub`` layers, the
  sum kept pending until a layer needs node values (no node of its own);
* ``torch.cat`` along a non-batch dimension: ``concat``; ``nn.Flatten`` / ``torch.flatten(x,
  1)`` / ``x.flatten(1)`` / ``x.view(x.size(0), -1)`` / ``x.reshape(batch, -1)``: ``flatten``
  (no node, no edge); ``nn.Identity`` and ``nn.Dropout`` in eval mode: nothing.

Node names (from the unroller): input entries ``x[i]`` (``x[c,h,w]`` for a tensor input, in
row-major order: the data columns), ``<layer>[c,h,w]`` for a layer's entries, ``<layer>.bias``
for a bias node, outputs ``y0, y1, ...`` last (the model's outputs flattened and
concatenated). Layer names are module paths (``layer1.0.conv1``; a second call of a module
gets the fx node's name) and fx node names for functions.

Anything else -- Sigmoid, Tanh, a product, a constant added, a BatchNorm or Dropout in
training mode (call ``model.eval()``) -- raises :class:`pathlift.UnsupportedModelError` (a
ValueError) listing **every** unsupported operation at once; :func:`supports` answers the
same question without raising. ``to_torch`` maps a feed-forward network back to an
``nn.Sequential``.

In a training loop (``_torch_autograd``): ``path_norm(model, s)``, a differentiable path-norm
(a penalty in a loss), ``kernel_diagonal(model)``, the ``PathSGD`` optimizer,
``theta_tensor(model)`` (theta with gradients to the parameters), ``PathNormFunction`` and
``to_torch_sparse(J)`` (a scipy CSR matrix as a torch sparse CSR tensor). ``rescale(model,
lambdas)`` (``_torch_rescale``): a copy of the model moved along a rescaling orbit.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.fx
from torch import nn

from . import UnsupportedModelError, _pathlift
from ._torch_autograd import (PathNormFunction, PathSGD, kernel_diagonal, path_norm,
                              theta_tensor, to_torch_sparse)
from ._torch_fx import (_FLATTEN_FUNCTIONS, _LEAKY_FUNCTIONS, _LINEAR_FUNCTIONS, _RELU_FUNCTIONS,
                        _SUPPORTED, _describe, _Importer, _offsets, _parameters, _type_problem)

InputShape = Union[None, int, Sequence[int]]

__all__ = ["from_torch", "theta_from_torch", "layer_graph_from_torch", "supports", "Support",
           "to_torch", "UnsupportedModelError", "path_norm", "PathNormFunction",
           "kernel_diagonal", "PathSGD", "theta_tensor", "to_torch_sparse", "rescale"]


# --------------------------------------------------------------------------------------------
# tracing, theta


def _numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype in (torch.bfloat16, torch.complex32):
        t = t.float()
    return t.numpy().reshape(-1)


def _theta(model: nn.Module, batch_norms: Sequence[nn.Module]) -> np.ndarray:
    """The parameter vector with each BatchNorm's gamma/beta replaced by its a/b. One
    concatenation (numpy's: PyTorch's float32 -> float64 conversion is much slower)."""
    params = _parameters(model)
    if not params:
        return np.zeros(0)
    theta = np.concatenate([_numpy(p) for _, p in params], dtype=np.float64)
    offsets = _offsets(params)
    for bn in batch_norms:
        a, b = _batch_norm_affine(bn)
        wo = offsets[id(bn.weight)][0]
        bo = offsets[id(bn.bias)][0]
        theta[wo: wo + a.size] = a
        theta[bo: bo + b.size] = b
    return theta


def _batch_norm_affine(bn: Any) -> Tuple[np.ndarray, np.ndarray]:
    """(a, b) with bn(x) = a x + b in eval mode, per channel, in float64."""
    var = _numpy(bn.running_var).astype(np.float64)
    mean = _numpy(bn.running_mean).astype(np.float64)
    a = _numpy(bn.weight).astype(np.float64) / np.sqrt(var + float(bn.eps))
    b = _numpy(bn.bias).astype(np.float64) - a * mean
    return a, b


def _trace(model: nn.Module) -> torch.fx.Graph:
    if not isinstance(model, nn.Module):
        raise TypeError(f"expects a torch.nn.Module, got {type(model).__name__}")
    try:
        graph = torch.fx.Tracer().trace(model)
    except Exception as e:  # torch.fx raises many types (TraceError, TypeError, ...)
        raise UnsupportedModelError(
            f"torch.fx cannot trace {type(model).__name__}: {type(e).__name__}: {e}") from e
    # Dead code (an unused branch) must not become layers; the purity check needs a module.
    graph = torch.fx.GraphModule(model, graph).graph
    graph.eliminate_dead_code()
    return graph


def _input_shape(graph: torch.fx.Graph, model: nn.Module, input_shape: InputShape
                 ) -> Tuple[int, ...]:
    if input_shape is not None:
        shape = (int(input_shape),) if isinstance(input_shape, (int, np.integer)) \
            else tuple(int(s) for s in input_shape)
        if not shape or any(s <= 0 for s in shape):
            raise ValueError(f"input_shape must be positive sizes, got {input_shape!r}")
        return shape
    # (in_features,) of the first Linear the input reaches through shape-free operations.
    chain = {n for n in graph.nodes if n.op == "placeholder"}
    passing = (nn.ReLU, nn.LeakyReLU, nn.Identity, nn.Flatten, nn.Dropout)
    for node in graph.nodes:
        if not node.args or not isinstance(node.args[0], torch.fx.Node) or \
                node.args[0] not in chain:
            continue
        if node.op == "call_module":
            mod = model.get_submodule(node.target)
            if isinstance(mod, nn.Linear):
                return (mod.in_features,)
            if type(mod) in passing:
                chain.add(node)
        elif node.op == "call_function":
            if node.target in _LINEAR_FUNCTIONS and isinstance(node.args[1], torch.fx.Node) \
                    and node.args[1].op == "get_attr":
                return (int(model.get_parameter(node.args[1].target).shape[1]),)
            if node.target in _RELU_FUNCTIONS | _LEAKY_FUNCTIONS | _FLATTEN_FUNCTIONS:
                chain.add(node)
        elif node.op == "call_method" and node.target in {"relu", "relu_", "flatten"}:
            chain.add(node)
    raise UnsupportedModelError("cannot infer the input shape from the model: pass input_shape "
                                "(one sample's shape, e.g. (3, 32, 32))")


def _import(model: nn.Module, input_shape: InputShape) -> _Importer:
    """The importer after its walk (problems collected, not raised), or UnsupportedModelError
    when the model cannot even be traced."""
    graph = _trace(model)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise UnsupportedModelError(
            f"the model's forward takes {len(placeholders)} tensors: exactly one is supported")
    imp = _Importer(model, graph)
    try:
        shape = _input_shape(graph, model, input_shape)
    except UnsupportedModelError as e:  # report the unsupported operations too
        for node in graph.nodes:
            imp.check_supported(node)
        imp.problems.append(str(e))
        return imp
    imp.run(shape)
    return imp


def _raise(model: nn.Module, problems: List[str]) -> None:
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise UnsupportedModelError(
            f"cannot import {type(model).__name__}: {len(problems)} "
            f"problem{'s' if len(problems) > 1 else ''}\n{listed}\n{_SUPPORTED}")


def _check_types(model: nn.Module) -> Tuple[List[str], List[nn.Module]]:
    """The problems that do not depend on shapes (unsupported operations, training mode) and
    the BatchNorm modules the forward pass calls: what theta needs, without an input shape."""
    graph = _trace(model)
    problems: List[str] = []
    batch_norms: Dict[int, nn.Module] = {}
    for node in graph.nodes:
        problem = _type_problem(node, model)
        if problem is not None:
            problems.append(f"{_describe(node, model)}: {problem}")
        elif node.op == "call_module":
            mod = model.get_submodule(node.target)
            if type(mod) in (nn.BatchNorm1d, nn.BatchNorm2d):
                batch_norms[id(mod)] = mod
    return problems, list(batch_norms.values())


# --------------------------------------------------------------------------------------------
# the public functions


class Support(NamedTuple):
    """What :func:`supports` answers: ``ok`` and the list of ``problems`` (each a sentence
    naming the layer or operation). Unpacks as ``ok, problems = pathlift.supports(m)``;
    ``bool(result)`` is ``ok``."""

    ok: bool
    problems: List[str]

    def __bool__(self) -> bool:
        return self.ok


def layer_graph_from_torch(model: nn.Module, input_shape: InputShape = None
                           ) -> "_pathlift.LayerGraph":
    """The :class:`pathlift.LayerGraph` of a model (one Layer per operation, weights =
    :func:`theta_from_torch`), validated by :func:`pathlift.layer_shapes`: what
    :func:`from_torch` unrolls. Arguments and errors as from_torch."""
    imp = _import(model, input_shape)
    _raise(model, imp.problems)
    theta = _theta(model, list(imp.batch_norms.values()))
    graph = _pathlift.LayerGraph(input_shape=list(imp.input_shape), layers=imp.layers,
                                 outputs=imp.outputs, num_params=imp.num_params, weights=theta)
    _pathlift.layer_shapes(graph)
    return graph


def from_torch(model: nn.Module, input_shape: InputShape = None, *,
               max_memory: int = 0) -> "_pathlift.LayerNetwork":
    """The DAG ReLU network of a PyTorch model (eval mode) as a :class:`pathlift.LayerNetwork`:
    known by its layer graph, unrolled only when a function needs edges. Parameters in the
    order of :func:`theta_from_torch`: ``model.parameters()`` flattened, BatchNorm's gamma/beta
    standing for a/b. ``net.d`` is the number of parameter entries; ``net.weights`` is theta.

    model: any module that ``torch.fx`` traces into the supported operations (see the
    ``pathlift.torch`` module docstring): MLPs, CNNs (LeNet, VGG, torchvision's ResNets), skip
    connections, weight sharing. input_shape: one sample's shape without the batch dimension,
    e.g. ``(3, 32, 32)``; by default ``(in_features,)`` of the first Linear the input reaches.
    max_memory: bytes the unrolled network may take when it is unrolled (0: half of physical
    RAM).

    The model is described per layer (:func:`layer_graph_from_torch`); nothing is unrolled
    here. The path-free functions (:func:`pathlift.path_norm`,
    :func:`pathlift.path_norm_gradient`, :func:`pathlift.count_paths`, the ``kernel_*``
    functions but the dense :func:`pathlift.kernel`) run on the layer graph; every other
    function unrolls it in C++ on first use (:func:`pathlift.unroll`) and keeps the DAG.
    Raises :class:`pathlift.UnsupportedModelError` (a ValueError) listing every unsupported
    operation (Sigmoid, Tanh, a product, BatchNorm in training mode, ...), TypeError for
    something that is not a module; a function that unrolls raises TooLarge (a MemoryError)
    over max_memory.
    """
    return _pathlift.LayerNetwork(layer_graph_from_torch(model, input_shape),
                                  max_memory=max_memory)


def theta_from_torch(model: nn.Module, input_shape: InputShape = None) -> np.ndarray:
    """theta for ``from_torch(model)``: a new float64 numpy array,
    ``torch.cat([p.flatten() for p in model.parameters()])`` except that each BatchNorm's
    weight/bias positions hold a = weight / sqrt(running_var + eps) and
    b = bias - a running_mean. Equal to ``from_torch(model).weights``.

    The model is traced to find its BatchNorms and to refuse what from_torch refuses whatever
    the input shape: :class:`pathlift.UnsupportedModelError` listing the unsupported
    operations and the modules in training mode. input_shape is accepted for symmetry with
    from_torch and does not change theta.
    """
    del input_shape
    problems, batch_norms = _check_types(model)
    _raise(model, problems)
    return _theta(model, batch_norms)


def supports(model: Any, input_shape: InputShape = None) -> Support:
    """Whether :func:`from_torch` can import the model, without raising: a
    :class:`Support` ``(ok, problems)``, problems listing every unsupported operation (the
    lines of from_torch's UnsupportedModelError). The layer graph is built and its shapes
    checked, but nothing is unrolled."""
    try:
        layer_graph_from_torch(model, input_shape)
    except UnsupportedModelError as e:
        lines = str(e).splitlines()
        problems = [line[4:] for line in lines if line.startswith("  - ")]
        return Support(False, problems or [str(e)])
    except (ValueError, TypeError) as e:
        return Support(False, [f"{type(e).__name__}: {e}"])
    return Support(True, [])


# --------------------------------------------------------------------------------------------
# to_torch


def _num_params(net: Any) -> int:
    return int(net.num_params)


def _param_endpoints(net: "_pathlift.Network") -> Tuple[np.ndarray, np.ndarray]:
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


def to_torch(net: Union["_pathlift.Network", "_pathlift.LayerNetwork"],
             theta: Optional[Any] = None, *,
             dtype: torch.dtype = torch.float64) -> nn.Sequential:
    """The ``nn.Sequential(Linear, act, ..., Linear[, act])`` of a feed-forward network in PyTorch
    parameter order (``feed_forward()``, or ``from_torch`` of such a Sequential), with
    parameters theta (default: the network's stored weights), in eval mode (a LayerNetwork is
    unrolled). Round trip:
    ``to_torch(from_torch(m), theta_from_torch(m))`` computes what ``m`` computes, and its
    ``theta_from_torch`` is theta. The inputs are the data inputs in node order, the outputs
    the output nodes in node order. ValueError for any other network (skip or other fixed
    edges, weight sharing, convolutions, layers out of PyTorch order, mixed activations in a
    layer) or a bad theta.
    """
    if theta is None:
        if net.weights is None:
            raise ValueError("to_torch: theta is required (the network has no stored weights)")
        theta = net.weights
    elif isinstance(theta, torch.Tensor) and not theta.is_complex():
        theta = _numpy(theta)  # detached, on the CPU: what the engine's functions do
    theta = np.asarray(theta.detach().cpu() if isinstance(theta, torch.Tensor) else theta)
    if theta.dtype.kind == "c":  # refused, as by the engine: a cast drops the imaginary part
        raise ValueError(f"theta must be real numbers, got complex ({theta.dtype})")
    theta = theta.astype(np.float64, copy=False)
    if theta.ndim != 1 or theta.size != _num_params(net):
        raise ValueError(f"theta has {theta.size} entries but the network has "
                         f"{_num_params(net)} parameters")
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


# Last: _torch_rescale uses this module's functions.
from ._torch_rescale import rescale  # noqa: E402
