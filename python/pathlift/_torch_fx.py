"""The torch.fx importer behind pathlift.torch: one walk over a traced model that builds one
:class:`pathlift.Layer` per operation (never per tensor entry), with per-sample shapes tracked
for the messages, and collects every problem instead of stopping at the first. Private: use
pathlift.from_torch & co."""

from __future__ import annotations

import math
import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from . import _pathlift

_SUPPORTED = ("supported: nn.Linear, nn.Conv1d/2d, nn.MaxPool1d/2d, nn.AvgPool1d/2d, "
              "nn.AdaptiveAvgPool1d/2d, nn.BatchNorm1d/2d (eval mode), nn.ReLU, nn.LeakyReLU, "
              "nn.Identity, nn.Dropout (eval mode), nn.Flatten, F.relu/F.leaky_relu/F.linear, "
              "F.max_pool2d/F.avg_pool2d/F.adaptive_avg_pool2d, torch.flatten, torch.cat, "
              ".view/.reshape to (batch, -1), + and - of tensors")


# --------------------------------------------------------------------------------------------
# parameters


def _parameters(model: nn.Module) -> List[Tuple[str, nn.Parameter]]:
    return list(model.named_parameters())


def _offsets(params: List[Tuple[str, nn.Parameter]]) -> Dict[int, Tuple[int, str]]:
    out: Dict[int, Tuple[int, str]] = {}
    offset = 0
    for name, p in params:
        out[id(p)] = (offset, name)
        offset += p.numel()
    return out


# --------------------------------------------------------------------------------------------
# tracing into a LayerGraph


class _Value:
    """A traced tensor: the layer whose output it is and its per-sample shape."""

    __slots__ = ("layer", "shape")

    def __init__(self, layer: int, shape: Tuple[int, ...]):
        self.layer = layer
        self.shape = shape


class _Param:
    """A parameter fetched by get_attr (for F.linear)."""

    __slots__ = ("param", "name")

    def __init__(self, param: nn.Parameter, name: str):
        self.param = param
        self.name = name


class _Batch:
    """The batch size (x.size(0), x.shape[0]): only a view/reshape argument."""


class _Shape:
    """x.shape of a traced tensor (for x.shape[0])."""

    __slots__ = ("shape",)

    def __init__(self, shape: Tuple[int, ...]):
        self.shape = shape


class _Unknown:
    """The result of an unsupported operation (already reported): consumers stay quiet."""


_UNKNOWN = _Unknown()

_RELU_FUNCTIONS = {F.relu, torch.relu, torch.relu_}
_LEAKY_FUNCTIONS = {F.leaky_relu}
_ADD_FUNCTIONS = {operator.add, operator.iadd, torch.add}
_SUB_FUNCTIONS = {operator.sub, operator.isub, torch.sub}
_CAT_FUNCTIONS = {torch.cat} | ({torch.concat} if hasattr(torch, "concat") else set())
_FLATTEN_FUNCTIONS = {torch.flatten}
_LINEAR_FUNCTIONS = {F.linear}
_MAX_POOL_FUNCTIONS: Dict[Any, int] = {F.max_pool1d: 1, F.max_pool2d: 2}
_AVG_POOL_FUNCTIONS: Dict[Any, int] = {F.avg_pool1d: 1, F.avg_pool2d: 2}
_ADAPTIVE_FUNCTIONS: Dict[Any, int] = {F.adaptive_avg_pool1d: 1, F.adaptive_avg_pool2d: 2}
_INPLACE_METHODS = {"relu_", "add_", "sub_"}
_INPLACE_FUNCTIONS = {torch.relu_, operator.iadd, operator.isub}


def _pair(v: Any, n: int) -> List[int]:
    if isinstance(v, (tuple, list)):
        return [int(x) for x in v]
    return [int(v)] * n


def _arg(node: torch.fx.Node, index: int, name: str, default: Any) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _target(node: torch.fx.Node) -> str:
    """The qualified name a call_module or get_attr node refers to."""
    return str(node.target)


def _describe(node: torch.fx.Node, model: nn.Module) -> str:
    if node.op == "call_module":
        return f"layer {type(model.get_submodule(_target(node))).__name__} at '{node.target}'"
    if node.op == "call_function":
        t = node.target
        name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or str(t)
        mod = getattr(t, "__module__", None) or ""
        if name == "boolean_dispatch.<locals>.fn":
            name = node.name
        prefix = f"{mod}." if mod and mod != "builtins" and mod != "_operator" else ""
        return f"operation {prefix}{name} (node '{node.name}')"
    if node.op == "call_method":
        return f"tensor method .{node.target}() (node '{node.name}')"
    return f"{node.op} '{node.target}'"


def _own_forward(mod: nn.Module, cls: type) -> bool:
    """mod is a cls whose forward is cls's (a subclass that overrides it is another layer)."""
    return isinstance(mod, cls) and getattr(type(mod), "forward") is getattr(cls, "forward")


class _Importer:
    """Walks the fx graph once, building one Layer per operation and collecting every problem
    (so that all of them are reported at once)."""

    def __init__(self, model: nn.Module, graph: torch.fx.Graph):
        self.model = model
        self.graph = graph
        self.params = _parameters(model)
        self.offsets = _offsets(self.params)
        self.num_params = sum(p.numel() for _, p in self.params)
        self.layers: List[Any] = []
        self.names: set = set()
        self.problems: List[str] = []
        self.used: set = set()
        self.batch_norms: Dict[int, nn.Module] = {}
        self.outputs: List[int] = []
        self.order = {n: i for i, n in enumerate(graph.nodes)}
        self.input_shape: Tuple[int, ...] = ()

    # layers --------------------------------------------------------------------------------

    def unique(self, name: str, fallback: str) -> str:
        for candidate in (name, fallback):
            if candidate not in self.names and candidate != "x" and candidate:
                self.names.add(candidate)
                return candidate
        k = 2
        while f"{fallback}_{k}" in self.names:
            k += 1
        self.names.add(f"{fallback}_{k}")
        return f"{fallback}_{k}"

    def add(self, kind: str, name: str, inputs: Sequence[_Value], shape: Tuple[int, ...],
            **fields: Any) -> _Value:
        self.layers.append(_pathlift.Layer(kind, name, [v.layer for v in inputs], **fields))
        return _Value(len(self.layers) - 1, tuple(int(s) for s in shape))

    def offset(self, p: Optional[nn.Parameter]) -> int:
        if p is None:
            return -1
        self.used.add(id(p))
        return self.offsets[id(p)][0]

    # the walk ------------------------------------------------------------------------------

    def run(self, input_shape: Tuple[int, ...]) -> None:
        self.input_shape = input_shape
        values: Dict[torch.fx.Node, Any] = {}

        def val(a: Any) -> Any:
            if isinstance(a, torch.fx.Node):
                return values[a]
            if isinstance(a, (tuple, list)):
                return type(a)(val(x) for x in a)
            return a

        for node in self.graph.nodes:
            if node.op == "placeholder":
                self.names.add(node.name)
                self.layers.append(_pathlift.Layer("input", node.name))
                values[node] = _Value(0, input_shape)
            elif node.op == "output":
                self.output(val(node.args[0]))
            else:
                where = _describe(node, self.model)
                self.check_inplace(node, where)
                try:
                    values[node] = self.apply(node, val, where)
                except _Problem as p:
                    self.problems.append(f"{where}: {p}")
                    values[node] = _UNKNOWN
        unused = [name for name, p in self.params if id(p) not in self.used]
        if unused:
            self.problems.append(
                f"parameters {', '.join(repr(n) for n in unused)} are not used by the forward "
                "pass: every parameter must carry an edge")

    def output(self, out: Any) -> None:
        items = list(out) if isinstance(out, (tuple, list)) else [out]
        for item in items:
            if isinstance(item, _Value):
                self.outputs.append(item.layer)
            elif item is not _UNKNOWN:
                self.problems.append(
                    "the model's output must be a tensor or a tuple of tensors, got "
                    f"{type(item).__name__}")

    def check_inplace(self, node: torch.fx.Node, where: str) -> None:
        """An in-place operation is read as its functional form: refused when a later operation
        reads the tensor it modifies (it would see the modified values)."""
        inplace = (node.op == "call_method" and node.target in _INPLACE_METHODS) or (
            node.op == "call_function" and (node.target in _INPLACE_FUNCTIONS or
                                             bool(node.kwargs.get("inplace", False)))) or (
            node.op == "call_module" and
            bool(getattr(self.model.get_submodule(_target(node)), "inplace", False)))
        if not inplace or not node.args or not isinstance(node.args[0], torch.fx.Node):
            return
        if any(self.order[u] > self.order[node] for u in node.args[0].users if u is not node):
            self.problems.append(f"{where} modifies in place a tensor that is read afterwards")

    def apply(self, node: torch.fx.Node, val, where: str) -> Any:
        args = [val(a) for a in node.args]
        problem = _type_problem(node, self.model)
        if problem is not None:
            self.problems.append(f"{where}: {problem}")
        if problem is not None or any(a is _UNKNOWN for a in args) or any(
                isinstance(a, (tuple, list)) and any(x is _UNKNOWN for x in a) for a in args):
            # Report the operation, not its consequences downstream (a later layer that reads
            # an unknown value, its parameters then unused).
            self.mark_used(node, args)
            return _UNKNOWN
        if node.op == "call_module":
            return self.module(node, self.model.get_submodule(_target(node)), args, where)
        if node.op == "call_function":
            return self.function(node, args, val)
        if node.op == "call_method":
            return self.method(node, args, val)
        if node.op == "get_attr":
            try:
                p = self.model.get_parameter(_target(node))
            except AttributeError:
                raise _Problem("a buffer or constant tensor is not a parameter (only parameters "
                               "can be weights)") from None
            return _Param(p, _target(node))
        raise _Problem("not supported")

    def check_supported(self, node: torch.fx.Node) -> None:
        problem = _type_problem(node, self.model)
        if problem is not None:
            self.problems.append(f"{_describe(node, self.model)}: {problem}")

    def mark_used(self, node: torch.fx.Node, args: List[Any]) -> None:
        if node.op == "call_module":
            for p in self.model.get_submodule(_target(node)).parameters():
                self.used.add(id(p))
        for a in args:
            if isinstance(a, _Param):
                self.used.add(id(a.param))

    # modules -------------------------------------------------------------------------------

    def module(self, node: torch.fx.Node, mod: Any, args: List[Any], where: str) -> Any:
        first = node.target not in self.names
        name = self.unique(_target(node) if first else node.name, node.name)
        x = args[0] if args else None
        if _own_forward(mod, nn.Linear):
            return self.linear(name, _tensor(x), mod.weight, mod.bias)
        if _own_forward(mod, nn.Conv1d) or _own_forward(mod, nn.Conv2d):
            return self.conv(name, _tensor(x), mod)
        if type(mod) in (nn.MaxPool1d, nn.MaxPool2d):
            n = 1 if isinstance(mod, nn.MaxPool1d) else 2
            if mod.return_indices:
                raise _Problem("return_indices=True is not a tensor of the network")
            return self.max_pool(name, _tensor(x), n, mod.kernel_size, mod.stride, mod.padding,
                                 mod.dilation, mod.ceil_mode)
        if type(mod) in (nn.AvgPool1d, nn.AvgPool2d):
            n = 1 if isinstance(mod, nn.AvgPool1d) else 2
            return self.avg_pool(name, _tensor(x), n, mod.kernel_size, mod.stride, mod.padding,
                                 mod.ceil_mode, mod.count_include_pad,
                                 getattr(mod, "divisor_override", None))
        if type(mod) in (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d):
            n = 1 if isinstance(mod, nn.AdaptiveAvgPool1d) else 2
            return self.adaptive(name, _tensor(x), n, mod.output_size)
        if type(mod) in (nn.BatchNorm1d, nn.BatchNorm2d):
            return self.batch_norm(name, _tensor(x), mod)
        if type(mod) is nn.ReLU:
            return self.activation(name, _tensor(x), "relu")
        if type(mod) is nn.LeakyReLU:
            return self.activation(name, _tensor(x), _leaky(mod.negative_slope))
        if type(mod) is nn.Identity:
            return x
        if type(mod) is nn.Dropout:  # in eval mode (_type_problem)
            return x
        if type(mod) is nn.Flatten:
            return self.flatten(name, _tensor(x), mod.start_dim, mod.end_dim)
        raise _Problem("not supported")

    def linear(self, name: str, x: _Value, weight: nn.Parameter,
               bias: Optional[nn.Parameter]) -> _Value:
        out_features, in_features = weight.shape
        if len(x.shape) != 1:
            raise _Problem(f"applied to a per-sample tensor of shape {x.shape}: flatten first")
        if x.shape[0] != in_features:
            raise _Problem(f"expects {in_features} features, the traced input has {x.shape[0]}")
        return self.add("linear", name, [x], (out_features,), out_features=int(out_features),
                        weight_offset=self.offset(weight), bias_offset=self.offset(bias))

    def conv(self, name: str, x: _Value, mod: Any) -> _Value:
        n = 1 if isinstance(mod, nn.Conv1d) else 2
        if mod.padding_mode != "zeros":
            raise _Problem(f"padding_mode '{mod.padding_mode}' (only zero padding is supported)")
        if len(x.shape) != n + 1:
            raise _Problem(f"expects a ({'C, L' if n == 1 else 'C, H, W'}) per-sample input, "
                           f"the traced input has shape {x.shape}")
        if x.shape[0] != mod.in_channels:
            raise _Problem(f"expects {mod.in_channels} channels, the traced input has "
                           f"{x.shape[0]}")
        kernel, stride, dilation = (_pair(v, n) for v in (mod.kernel_size, mod.stride,
                                                           mod.dilation))
        padding = _conv_padding(mod.padding, kernel, stride, dilation)
        spatial = [_window_out(size, k, s, p, d) for size, k, s, p, d in
                   zip(x.shape[1:], kernel, stride, padding, dilation)]
        return self.add("conv", name, [x], (mod.out_channels, *spatial),
                        out_channels=int(mod.out_channels), groups=int(mod.groups), kernel=kernel,
                        stride=stride, padding=padding, dilation=dilation,
                        weight_offset=self.offset(mod.weight), bias_offset=self.offset(mod.bias))

    def max_pool(self, name: str, x: _Value, n: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, ceil_mode: bool) -> _Value:
        if ceil_mode:
            raise _Problem("ceil_mode=True is not supported")
        kernel = _pair(kernel_size, n)
        strides = _pair(stride, n) if stride not in (None, [], ()) else kernel
        pads, dils = _pair(padding, n), _pair(dilation, n)
        spatial = self.pool_shape(x, n, kernel, strides, pads, dils)
        return self.add("max_pool", name, [x], (x.shape[0], *spatial), kernel=kernel,
                        stride=strides, padding=pads, dilation=dils)

    def avg_pool(self, name: str, x: _Value, n: int, kernel_size: Any, stride: Any,
                 padding: Any, ceil_mode: bool, count_include_pad: bool,
                 divisor_override: Any) -> _Value:
        if ceil_mode:
            raise _Problem("ceil_mode=True is not supported")
        if divisor_override is not None:
            raise _Problem("divisor_override is not supported")
        kernel = _pair(kernel_size, n)
        strides = _pair(stride, n) if stride not in (None, [], ()) else kernel
        pads = _pair(padding, n)
        spatial = self.pool_shape(x, n, kernel, strides, pads, [1] * n)
        return self.add("avg_pool", name, [x], (x.shape[0], *spatial), kernel=kernel,
                        stride=strides, padding=pads, count_include_pad=bool(count_include_pad))

    def pool_shape(self, x: _Value, n: int, kernel: List[int], stride: List[int],
                   padding: List[int], dilation: List[int]) -> List[int]:
        if len(x.shape) != n + 1:
            raise _Problem(f"expects a ({'C, L' if n == 1 else 'C, H, W'}) per-sample input, "
                           f"the traced input has shape {x.shape}")
        return [_window_out(size, k, s, p, d) for size, k, s, p, d in
                zip(x.shape[1:], kernel, stride, padding, dilation)]

    def adaptive(self, name: str, x: _Value, n: int, output_size: Any) -> _Value:
        if len(x.shape) != n + 1:
            raise _Problem(f"expects a ({'C, L' if n == 1 else 'C, H, W'}) per-sample input, "
                           f"the traced input has shape {x.shape}")
        sizes = list(output_size) if isinstance(output_size, (tuple, list)) else \
            [output_size] * n
        out = [int(x.shape[1 + i]) if s is None else int(s) for i, s in enumerate(sizes)]
        return self.add("adaptive_avg_pool", name, [x], (x.shape[0], *out), output_size=out)

    def batch_norm(self, name: str, x: _Value, mod: Any) -> _Value:
        ndim = 2 if isinstance(mod, nn.BatchNorm1d) else 3
        if not (len(x.shape) == ndim or (ndim == 2 and len(x.shape) == 1)):
            raise _Problem(f"the traced input has shape {x.shape}")
        if x.shape[0] != mod.num_features:
            raise _Problem(f"expects {mod.num_features} channels, the traced input has "
                           f"{x.shape[0]}")
        self.batch_norms[id(mod)] = mod
        return self.add("batch_norm", name, [x], x.shape, weight_offset=self.offset(mod.weight),
                        bias_offset=self.offset(mod.bias))

    def activation(self, name: str, x: _Value, act: str) -> _Value:
        return self.add("activation", name, [x], x.shape, activation=act)

    def flatten(self, name: str, x: _Value, start_dim: int, end_dim: int) -> _Value:
        nd = len(x.shape) + 1  # with the batch dimension
        s = start_dim + nd if start_dim < 0 else start_dim
        e = end_dim + nd if end_dim < 0 else end_dim
        if s == 0:
            raise _Problem("flattening the batch dimension (start_dim=0)")
        if not 1 <= s <= e < nd:
            raise _Problem(f"flatten dims ({start_dim}, {end_dim}) do not fit a tensor of "
                           f"{nd} dims")
        if s == e:
            return x
        if s != 1 or e != nd - 1:
            raise _Problem(f"flattening dims {s}..{e} of {nd} keeps a multi-dimensional "
                           "sample: only flatten to (batch, features) is supported")
        if len(x.shape) == 1:
            return x
        return self.add("flatten", name, [x], (int(np.prod(x.shape)),))

    def view(self, name: str, x: _Value, shape: Sequence[Any]) -> _Value:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        n = int(np.prod(x.shape))
        if len(shape) == 2:
            batch, rest = shape
            flat = (isinstance(batch, _Batch) and rest in (-1, n)) or (batch == -1 and rest == n)
            if flat:
                return x if len(x.shape) == 1 else self.add("flatten", name, [x], (n,))
        raise _Problem(f"reshaping a {x.shape} sample to {_show(shape)}: only (batch, -1) "
                       "(a flatten) is supported")

    def add_sub(self, name: str, kind: str, a: Any, b: Any) -> _Value:
        if not isinstance(a, _Value) or not isinstance(b, _Value):
            const = b if isinstance(a, _Value) else a
            raise _Problem(f"{'adding' if kind == 'add' else 'subtracting'} a constant "
                           f"({type(const).__name__}) is not a DAG ReLU network operation")
        if a.shape != b.shape:
            raise _Problem(f"operands of shapes {a.shape} and {b.shape} (broadcasting is not "
                           "supported)")
        return self.add(kind, name, [a, b], a.shape)

    def cat(self, name: str, tensors: Sequence[Any], dim: int) -> _Value:
        if not tensors or not all(isinstance(t, _Value) for t in tensors):
            raise _Problem("torch.cat of something that is not a traced tensor")
        nd = len(tensors[0].shape) + 1
        d = dim + nd if dim < 0 else dim
        if d == 0:
            raise _Problem("concatenation along the batch dimension (dim=0)")
        shapes = [t.shape for t in tensors]
        if any(len(s) != nd - 1 or s[:d - 1] + s[d:] != shapes[0][:d - 1] + shapes[0][d:]
               for s in shapes):
            raise _Problem(f"shapes {shapes} do not match outside dim {dim}")
        out = list(shapes[0])
        out[d - 1] = sum(s[d - 1] for s in shapes)
        return self.add("concat", name, list(tensors), tuple(out), axis=d - 1)

    # functions and methods -----------------------------------------------------------------

    def function(self, node: torch.fx.Node, args: List[Any], val) -> Any:
        t = node.target
        name = self.unique(node.name, node.name)
        x = args[0] if args else None
        if t in _RELU_FUNCTIONS:
            return self.activation(name, _tensor(x), "relu")
        if t in _LEAKY_FUNCTIONS:
            return self.activation(name, _tensor(x),
                                   _leaky(float(_arg(node, 1, "negative_slope", 0.01))))
        if t in _ADD_FUNCTIONS or t in _SUB_FUNCTIONS:
            if node.kwargs.get("alpha", 1) != 1:
                raise _Problem("alpha != 1 is a multiplication")
            return self.add_sub(name, "add" if t in _ADD_FUNCTIONS else "sub", x, args[1])
        if t in _CAT_FUNCTIONS:
            return self.cat(name, val(_arg(node, 0, "tensors", ())), int(_arg(node, 1, "dim", 0)))
        if t in _FLATTEN_FUNCTIONS:
            return self.flatten(name, _tensor(x), int(_arg(node, 1, "start_dim", 0)),
                                int(_arg(node, 2, "end_dim", -1)))
        if t in _LINEAR_FUNCTIONS:
            w, b = val(_arg(node, 1, "weight", None)), val(_arg(node, 2, "bias", None))
            if not isinstance(w, _Param) or not (b is None or isinstance(b, _Param)):
                raise _Problem("F.linear needs parameters (model attributes) as weight and bias")
            return self.linear(name, _tensor(x), w.param, b.param if b is not None else None)
        if t in _MAX_POOL_FUNCTIONS:
            if _arg(node, 6, "return_indices", False):
                raise _Problem("return_indices=True is not a tensor of the network")
            return self.max_pool(name, _tensor(x), _MAX_POOL_FUNCTIONS[t], _arg(node, 1,
                                 "kernel_size", None), _arg(node, 2, "stride", None),
                                 _arg(node, 3, "padding", 0), _arg(node, 4, "dilation", 1),
                                 bool(_arg(node, 5, "ceil_mode", False)))
        if t in _AVG_POOL_FUNCTIONS:
            n = _AVG_POOL_FUNCTIONS[t]
            return self.avg_pool(name, _tensor(x), n, _arg(node, 1, "kernel_size", None),
                                 _arg(node, 2, "stride", None), _arg(node, 3, "padding", 0),
                                 bool(_arg(node, 4, "ceil_mode", False)),
                                 bool(_arg(node, 5, "count_include_pad", True)),
                                 _arg(node, 6, "divisor_override", None) if n == 2 else None)
        if t in _ADAPTIVE_FUNCTIONS:
            return self.adaptive(name, _tensor(x), _ADAPTIVE_FUNCTIONS[t],
                                 _arg(node, 1, "output_size", None))
        if t is getattr and len(args) == 2 and args[1] == "shape" and isinstance(x, _Value):
            return _Shape(x.shape)
        if t is operator.getitem and isinstance(x, _Shape) and isinstance(args[1], int):
            return _Batch() if args[1] == 0 else x.shape[args[1] - 1]
        raise _Problem("not supported")

    def method(self, node: torch.fx.Node, args: List[Any], val) -> Any:
        m = _target(node)
        name = self.unique(node.name, node.name)
        x = _tensor(args[0])
        if m in ("relu", "relu_"):
            return self.activation(name, x, "relu")
        if m in ("add", "add_", "sub", "sub_"):
            if node.kwargs.get("alpha", 1) != 1:
                raise _Problem("alpha != 1 is a multiplication")
            return self.add_sub(name, "add" if m.startswith("add") else "sub", x, args[1])
        if m == "flatten":
            return self.flatten(name, x, int(_arg(node, 1, "start_dim", 0)),
                                int(_arg(node, 2, "end_dim", -1)))
        if m in ("view", "reshape"):
            return self.view(name, x, args[1:])
        if m == "size" and len(args) == 2 and isinstance(args[1], int):
            d = args[1] + len(x.shape) + 1 if args[1] < 0 else args[1]
            return _Batch() if d == 0 else x.shape[d - 1]
        if m in ("contiguous", "detach"):
            return x
        raise _Problem("not supported")


class _Problem(Exception):
    """One problem of one operation, collected by the importer."""


def _tensor(x: Any) -> _Value:
    if not isinstance(x, _Value):
        raise _Problem(f"expects a traced tensor, got {type(x).__name__}")
    return x


def _show(shape: Sequence[Any]) -> str:
    return "(" + ", ".join("batch" if isinstance(s, _Batch) else str(s) for s in shape) + ")"


def _leaky(slope: float) -> str:
    if slope == 0.0:
        return "relu"
    if not math.isfinite(slope):
        raise _Problem(f"LeakyReLU slope {slope} is not finite")
    return f"leaky_relu:{float(slope)!r}"


def _window_out(size: int, k: int, s: int, p: int, d: int) -> int:
    out = (size + 2 * p - d * (k - 1) - 1) // s + 1
    if out <= 0:
        raise _Problem(f"a window of {k} (dilation {d}, padding {p}) does not fit an input of "
                       f"size {size}")
    return out


def _conv_padding(padding: Any, kernel: List[int], stride: List[int],
                  dilation: List[int]) -> List[int]:
    if padding == "valid":
        return [0] * len(kernel)
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        if any(t % 2 for t in total):
            raise _Problem("padding='same' with an even window pads asymmetrically "
                           "(not supported)")
        return [t // 2 for t in total]
    return _pair(padding, len(kernel))


_SUPPORTED_MODULES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.MaxPool1d, nn.MaxPool2d, nn.AvgPool1d,
                      nn.AvgPool2d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.BatchNorm1d,
                      nn.BatchNorm2d, nn.ReLU, nn.LeakyReLU, nn.Identity, nn.Dropout, nn.Flatten)
_SUPPORTED_METHODS = {"relu", "relu_", "add", "add_", "sub", "sub_", "flatten", "view",
                      "reshape", "size", "contiguous", "detach"}


def _type_problem(node: torch.fx.Node, model: nn.Module) -> Optional[str]:
    """Why the operation cannot be imported whatever its inputs (its type, a module in
    training mode), or None."""
    if not _supported(node, model):
        return "not supported"
    if node.op != "call_module":
        return None
    mod = model.get_submodule(_target(node))
    if type(mod) is nn.Dropout and mod.training and mod.p > 0:
        return "in training mode it is random: call model.eval() first"
    if type(mod) in (nn.BatchNorm1d, nn.BatchNorm2d):
        if mod.training:
            return "in training mode it normalizes by the batch: call model.eval() first"
        if mod.running_mean is None or mod.running_var is None:
            return "track_running_stats=False normalizes by the batch even in eval mode"
        if mod.weight is None or mod.bias is None:
            return "affine=False has no parameters to carry a and b"
    return None


def _supported(node: torch.fx.Node, model: nn.Module) -> bool:
    """Whether the operation is of a supported type (its arguments aside)."""
    if node.op == "call_module":
        mod = model.get_submodule(_target(node))
        return any(type(mod) is c or _own_forward(mod, c) for c in _SUPPORTED_MODULES)
    if node.op == "call_function":
        t = node.target
        groups: Tuple[Any, ...] = (
            _RELU_FUNCTIONS, _LEAKY_FUNCTIONS, _ADD_FUNCTIONS, _SUB_FUNCTIONS, _CAT_FUNCTIONS,
            _FLATTEN_FUNCTIONS, _LINEAR_FUNCTIONS, _MAX_POOL_FUNCTIONS, _AVG_POOL_FUNCTIONS,
            _ADAPTIVE_FUNCTIONS)
        return any(t in group for group in groups) or t in (getattr, operator.getitem)
    if node.op == "call_method":
        return node.target in _SUPPORTED_METHODS
    return True
