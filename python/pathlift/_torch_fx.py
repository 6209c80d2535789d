"""The torch.fx importer behind pathlift.from_torch (private): one walk over a traced model
(:class:`Traced`, in-place operations applied) that adds one :class:`pathlift.Layer` per
operation to a :class:`pathlift.LayerGraphBuilder` (never per tensor entry). The builder owns
the rules -- output shapes, parameter-tensor shapes, layer names, the collection of problems --
and this module translates PyTorch's operations and their arguments into layers, naming what it
cannot translate with ``builder.problem``.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

import numpy as np
import torch
import torch.fx
from torch import nn

from ._pathlift import (Layer, LayerGraph, LayerGraphBuilder, LayerOutput, NetworkError,
                        UnsupportedModelError)
from ._torch_params import TorchParameters
from ._torch_fx_kinds import _Orders, _Sorted
from ._torch_fx_values import (_Arranged, _Batch, _Call, _Param, _Problem, _Shape, _UNKNOWN,
                               _conv_padding, _failed, _flatten_dims, _leaky, _number, _pair,
                               _shape_of, _show, _tensor)
from ._torch_trace import (ADAPTIVE_FUNCTIONS, ALIAS_METHODS, AVG_POOL_FUNCTIONS, ADD_FUNCTIONS,
                           CAT_FUNCTIONS, CHUNK_FUNCTIONS, CLAMP_FUNCTIONS, CLAMP_METHODS,
                           CLAMP_MIN_FUNCTIONS, CLAMP_MIN_METHODS, CONV_TRANSPOSE_MODULES,
                           DIV_FUNCTIONS, EXTREME_FUNCTIONS, INT_FUNCTIONS,
                           INTERPOLATE_FUNCTIONS, KTHVALUE_FUNCTIONS, MEAN_FUNCTIONS,
                           MUL_FUNCTIONS, PAD_FUNCTIONS, PAD_MODULES, PAIRWISE_FUNCTIONS,
                           PERMUTE_FUNCTIONS, SORT_FUNCTIONS, SPLIT_FUNCTIONS, SUM_FUNCTIONS,
                           TOPK_FUNCTIONS, TRANSPOSE_FUNCTIONS, UPSAMPLE_MODULES,
                           FLATTEN_FUNCTIONS, InputShape, LEAKY_FUNCTIONS,
                           LINEAR_FUNCTIONS, MAX_POOL_FUNCTIONS, RELU_FUNCTIONS, SUB_FUNCTIONS,
                           Traced, check_types, describe, input_shape_of,
                           module_of, own_forward, refuse_training_mode, refused_call,
                           type_problem)

SUPPORTED = ("supported: nn.Linear, nn.Conv1d/2d (any padding_mode), nn.ConvTranspose1d/2d "
             "(output_size too), nn.MaxPool1d/2d, nn.AvgPool1d/2d (ceil_mode too), "
             "nn.AdaptiveAvgPool1d/2d, nn.BatchNorm1d/2d (eval mode), nn.ReLU, nn.LeakyReLU, "
             "nn.Identity, nn.Dropout (eval mode), nn.Flatten, nn.ChannelShuffle, "
             "nn.ReflectionPad/ReplicationPad1d/2d, nn.Upsample/nn.UpsamplingNearest2d/"
             "nn.UpsamplingBilinear2d/F.interpolate (modes 'nearest', 'linear', 'bilinear', "
             "align_corners either way, size or scale_factor), "
             "F.pad (reflect, replicate, circular; constant only to crop), "
             "F.relu/F.leaky_relu/F.linear, "
             "torch.clamp/clip/clamp_min with min=0 and no max (a ReLU), "
             "torch.mean/sum over every spatial dim (a global pool), "
             "F.max_pool2d/F.avg_pool2d/F.adaptive_avg_pool2d, torch.flatten, torch.cat, "
             "chunk/split/slicing of non-batch dims, .view/.reshape/.transpose/.permute that "
             "keep the batch first and end in a supported shape (a channel shuffle, a flatten), "
             "+ and - of tensors, * and / by a number (in place too), "
             "GroupSort (x.view(N, C // g, g, ...).sort(dim=2) or torch.sort, its values: [0] "
             "or .values), MaxMin (torch.max/min/maximum/minimum of two tensors of one shape, "
             "x.view(N, C // 2, 2, ...).max(dim=2)[0] and .min, torch.cat of both), k-max "
             "pooling (x.unfold(2, kh, sh).unfold(3, kw, sw).flatten(-2) then .topk(k, "
             "dim=-1).values[..., k - 1] or .kthvalue(j, dim=-1).values)")

# --------------------------------------------------------------------------------------------
# the walk into a LayerGraphBuilder


class Imported(NamedTuple):
    """What an import found: the graph (None when a problem was found), every problem (the
    builder's and those before it), whether one is an unsupported operation, the parameters'
    layout and the input shape."""
    graph: Optional[LayerGraph]
    problems: List[str]
    unsupported: bool
    params: Optional[TorchParameters]
    input_shape: Tuple[int, ...]


class _Importer(_Orders):
    """Walks the traced graph once, adding one layer per operation to the builder."""

    def __init__(self, traced: Traced, input_shape: Tuple[int, ...]):
        self.traced = traced
        self.model = traced.model
        placeholder = next(n for n in traced.nodes if n.op == "placeholder")
        self.b = LayerGraphBuilder(list(input_shape), placeholder.name)
        self.used: Set[int] = set()
        self.batch_norms: Dict[int, nn.Module] = {}
        self.values: Dict[torch.fx.Node, Any] = {placeholder: self.b.input()}
        self.changed: Dict[torch.fx.Node, Any] = {}  # in-place operation -> what it changed
        self.cached: Dict[Tuple[Any, ...], LayerOutput] = {}  # group sorts, concats (_Orders)
        self.layout = TorchParameters(self.model, [])  # offsets and names
        self.params: Optional[TorchParameters] = None  # with the BatchNorms, after run()

    def run(self) -> None:
        for unseen in self.traced.problems:  # hooks, parametrizations: not in the trace
            self.b.problem(unseen)
        for node in self.traced.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                self.output(self.val(node, node.args[0]))
                continue
            call = _Call(node, [self.val(node, a) for a in node.args],
                         {k: self.val(node, v) for k, v in node.kwargs.items()})
            if node in self.traced.mutations and call.args:
                self.changed[node] = call.args[0]
            problem = type_problem(node, self.model)
            try:
                if refused_call(self.traced, node):
                    self.values[node] = _UNKNOWN  # its module's problem is listed
                elif problem is not None:
                    raise _Problem(problem)
                elif _failed(call.args) or _failed(list(call.kwargs.values())):
                    self.values[node] = _UNKNOWN  # refused upstream: reported there
                else:
                    self.values[node] = self.apply(call)
            except _Problem as p:
                self.b.problem(f"{describe(node, self.model)}: {p}")
                self.values[node] = _UNKNOWN
            if self.values[node] is _UNKNOWN:  # its parameters are not "unused"
                self.mark_used(call)
        self.params = TorchParameters(self.model, list(self.batch_norms.values()))
        unused = [name for name, p in self.model.named_parameters() if id(p) not in self.used]
        if unused:
            self.b.problem(f"parameters {', '.join(repr(n) for n in unused)} are not used by "
                           "the forward pass: every parameter must carry an edge")

    def val(self, reader: torch.fx.Node, a: Any) -> Any:
        """What `reader` reads for its argument a (in-place operations applied)."""
        if isinstance(a, (tuple, list)):
            return type(a)(self.val(reader, x) for x in a)
        if isinstance(a, slice):  # x[:, :, :x.shape[2]]: the bounds may be traced sizes
            return slice(self.val(reader, a.start), self.val(reader, a.stop),
                         self.val(reader, a.step))
        if not isinstance(a, torch.fx.Node):
            return a
        view = self.traced.view_reads.get(reader, {}).get(a)
        if view is None:
            return self.values[self.traced.read(reader, a)]
        before, after = self.values[a], self.values[view]
        changed = self.changed.get(view)
        if _failed(before) or _failed(after) or _failed(changed):
            return _UNKNOWN
        if isinstance(before, LayerOutput) and isinstance(changed, LayerOutput) and \
                isinstance(after, LayerOutput) and before.layer == changed.layer and \
                tuple(before.shape) == tuple(changed.shape):
            return after  # a view of the same entries in the same order sees the change
        self.b.problem(f"{describe(view, self.model)} modifies in place a tensor whose view of "
                       f"another shape or order ({describe(a, self.model)}) is read afterwards "
                       f"(by node '{reader.name}'): not supported (an in-place operation on a "
                       "slice, a piece of a chunk or split, a reshape is applied only to that "
                       "view and its aliases; write it out of place, e.g. torch.cat of the "
                       "pieces)")
        return _UNKNOWN

    def mark_used(self, call: _Call) -> None:
        if call.node.op == "call_module":
            self.used.update(id(p) for p in module_of(self.model, call.node).parameters())
        self.used.update(id(a.param) for a in [*call.args, *call.kwargs.values()]
                         if isinstance(a, _Param))

    def output(self, out: Any) -> None:
        for item in (list(out) if isinstance(out, (tuple, list)) else [out]):
            if isinstance(item, LayerOutput):
                self.b.output(item.layer)
            elif item is _UNKNOWN:  # refused upstream, reported there: layer 0 stands in (the
                self.b.output(0)    # graph is never made), not a problem "no output" of its own
            else:
                self.b.problem("the model's output must be a tensor or a tuple of tensors, got "
                               f"{type(item).__name__}")

    def pick(self, name: str, x: LayerOutput, axis: int, indices: Sequence[int]) -> LayerOutput:
        """Entries indices along axis (0: channels); the tensor itself when nothing moves."""
        if list(indices) == list(range(int(x.shape[axis]))):
            return x
        return self.add("gather", name, [x], axis=axis, indices=[int(i) for i in indices])

    def add(self, kind: str, name: str, inputs: Sequence[LayerOutput], *,
            weight: Optional[nn.Parameter] = None, bias: Optional[nn.Parameter] = None,
            **fields: Any) -> LayerOutput:
        """One layer, its parameter tensors named and shaped for the builder's checks."""
        params = {}
        for key, p in (("weight", weight), ("bias", bias)):
            if p is not None and not self.layout.holds(p):
                raise _Problem(f"its {key} is not a parameter of the model (theta maps to "
                               "model.parameters())")
            if p is not None:
                self.used.add(id(p))
                fields[f"{key}_offset"] = self.offset(p)
                params[key] = (self.name_of(p), tuple(p.shape))
        return self.b.add(Layer(kind, name, [x.layer for x in inputs], **fields), **params)

    def offset(self, p: nn.Parameter) -> int:
        return self.layout.offset(p)

    def name_of(self, p: nn.Parameter) -> str:
        return self.layout.name(p)

    # ---- the operations ------------------------------------------------------------------

    def apply(self, call: _Call) -> Any:
        node = call.node
        if node.op == "call_module":
            return self.module(node, module_of(self.model, node), call)
        if node.op == "call_function":
            return self.function(call)
        if node.op == "call_method":
            return self.method(call)
        if node.op == "get_attr":
            try:
                return _Param(self.model.get_parameter(str(node.target)))
            except AttributeError:
                raise _Problem("a buffer or constant tensor is not a parameter (only "
                               "parameters can be weights)") from None
        raise _Problem("not supported")

    def module(self, node: torch.fx.Node, mod: Any, call: _Call) -> Any:
        name, args = str(node.target), call.args
        if not args:
            raise _Problem("called without a tensor")
        transposed = any(own_forward(mod, cls) for cls in CONV_TRANSPOSE_MODULES)
        allowed = ["output_size"] if transposed else []  # forward's arguments after the input
        extra = [f"argument {i}" for i in range(1 + len(allowed), len(args))] + \
            [f"{k}=" for k in call.kwargs if k not in allowed]
        if extra:  # never ignored: each changes what the module computes
            raise _Problem(f"called with {', '.join(extra)} besides the input: not supported "
                           "(only a ConvTranspose's output_size is)")
        if type(mod) is nn.Flatten:
            return self.flatten(name, args[0], mod.start_dim, mod.end_dim)
        if type(mod) in (nn.Identity, nn.Dropout):  # Dropout in eval mode (refuse_training_mode)
            return args[0] if isinstance(args[0], _Arranged) else _tensor(args[0])
        x = _tensor(args[0])
        if transposed:
            return self.conv_transpose(name, x, mod, call.arg(1, "output_size"))
        if type(mod) in PAD_MODULES:
            return self.pad(name, x, list(mod.padding), PAD_MODULES[type(mod)])
        if isinstance(mod, UPSAMPLE_MODULES):
            return self.resize(name, x, mod.size, mod.scale_factor, mod.mode, mod.align_corners,
                               getattr(mod, "recompute_scale_factor", None))
        if type(mod) is nn.ChannelShuffle:
            channels = int(x.shape[0])
            g = int(mod.groups)
            if g < 1 or channels % g:
                raise _Problem(f"{g} groups do not divide {channels} channels")
            order = np.arange(channels).reshape(g, channels // g).T.reshape(-1)
            return self.pick(name, x, 0, order.tolist())
        if own_forward(mod, nn.Linear):
            return self.add("linear", name, [x], out_features=int(mod.out_features),
                            weight=mod.weight, bias=mod.bias)
        if own_forward(mod, nn.Conv1d) or own_forward(mod, nn.Conv2d):
            return self.conv(name, x, mod)
        if type(mod) in (nn.MaxPool1d, nn.MaxPool2d):
            return self.max_pool(name, x, 1 if isinstance(mod, nn.MaxPool1d) else 2,
                                 mod.kernel_size, mod.stride, mod.padding, mod.dilation,
                                 mod.ceil_mode)
        if type(mod) in (nn.AvgPool1d, nn.AvgPool2d):
            return self.avg_pool(name, x, 1 if isinstance(mod, nn.AvgPool1d) else 2,
                                 mod.kernel_size, mod.stride, mod.padding,
                                 mod.count_include_pad, mod.ceil_mode)
        if type(mod) in (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d):
            return self.adaptive(name, x, 1 if isinstance(mod, nn.AdaptiveAvgPool1d) else 2,
                                 mod.output_size)
        if type(mod) in (nn.BatchNorm1d, nn.BatchNorm2d):
            out = self.add("batch_norm", name, [x], weight=mod.weight, bias=mod.bias)
            self.batch_norms[id(mod)] = mod
            return out
        if type(mod) is nn.ReLU:
            return self.add("activation", name, [x], activation="relu")
        if type(mod) is nn.LeakyReLU:
            return self.add("activation", name, [x], activation=_leaky(mod.negative_slope))
        raise _Problem("not supported")

    def conv(self, name: str, x: LayerOutput, mod: Any) -> LayerOutput:
        n = 1 if isinstance(mod, nn.Conv1d) else 2
        kernel, stride, dilation = (_pair(v, n) for v in (mod.kernel_size, mod.stride,
                                                           mod.dilation))
        padding = _conv_padding(mod.padding, kernel, dilation)
        if mod.padding_mode != "zeros":
            # PyTorch pads by the mode, then convolves without padding: copies of entries.
            pairs = [v for p in reversed(padding) for v in (p, p)]
            x = self.pad(f"{name}.pad", x, pairs, str(mod.padding_mode))
            padding = [0] * n
        return self.add("conv", name, [x], out_channels=int(mod.out_channels),
                        groups=int(mod.groups), kernel=kernel, stride=stride,
                        padding=padding, dilation=dilation, weight=mod.weight, bias=mod.bias)

    def max_pool(self, name: str, x: LayerOutput, n: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, ceil_mode: Any) -> LayerOutput:
        # return_indices: type_problem, before the shapes
        kernel = _pair(kernel_size, n)
        return self.add("max_pool", name, [x], kernel=kernel,
                        stride=_pair(stride, n) if stride not in (None, [], ()) else kernel,
                        padding=_pair(padding, n), dilation=_pair(dilation, n),
                        ceil_mode=bool(ceil_mode))

    def avg_pool(self, name: str, x: LayerOutput, n: int, kernel_size: Any, stride: Any,
                 padding: Any, count_include_pad: bool, ceil_mode: Any) -> LayerOutput:
        # divisor_override: type_problem, before the shapes
        kernel = _pair(kernel_size, n)
        return self.add("avg_pool", name, [x], kernel=kernel,
                        stride=_pair(stride, n) if stride not in (None, [], ()) else kernel,
                        padding=_pair(padding, n), count_include_pad=bool(count_include_pad),
                        ceil_mode=bool(ceil_mode))

    def adaptive(self, name: str, x: LayerOutput, n: int, output_size: Any) -> LayerOutput:
        sizes = list(output_size) if isinstance(output_size, (tuple, list)) else \
            [output_size] * n
        shape = tuple(x.shape)  # None keeps the input's size
        out = [int(s) if s is not None else (shape[1 + i] if 1 + i < len(shape) else 0)
               for i, s in enumerate(sizes)]
        return self.add("adaptive_avg_pool", name, [x], output_size=out)

    def flatten_call(self, c: _Call) -> Any:
        """torch.flatten(x, ...) and x.flatten(...): the tensor first, then the dims."""
        return self.flatten(c.node.name, c.arg(0, "input"), int(c.arg(1, "start_dim", 0)),
                            int(c.arg(2, "end_dim", -1)))

    def extreme_call(self, c: _Call, what: str) -> Any:
        """torch.max/min (over a dim: values and indices; of two tensors: entry-wise),
        torch.amax/amin (over a dim: values), torch.maximum/minimum (entry-wise), and the
        methods of those names."""
        name, x = c.node.name, c.arg(0, "input")
        largest = what in ("max", "amax", "maximum")
        other = c.arg(1, "other") if what in ("maximum", "minimum") or "other" in c.kwargs \
            else c.arg(1, "dim", () if what.startswith("a") else None)
        label = f"{'.' if c.node.op == 'call_method' else 'torch.'}{what}"
        if isinstance(other, (LayerOutput, _Arranged)):
            return self.pairwise(name, x, other, largest, label)
        if what in ("maximum", "minimum"):
            raise _Problem(f"{label} of a tensor and {type(other).__name__}: only of two "
                           "tensors of one shape")
        if other is None or other == ():
            raise _Problem(f"{label} over every entry (the batch included): only over one dim "
                           "of each sample, or of two tensors")
        values = self.extreme(name, x, other, c.arg(2, "keepdim", False), largest, label)
        return values if what.startswith("a") else _Sorted(values, f"{label}(dim={other})")

    def flatten(self, name: str, x: Any, start_dim: int, end_dim: int) -> Any:
        if isinstance(x, _Arranged):  # any dims but the batch: a layer once the shape is one
            s, e = _flatten_dims(start_dim, end_dim, x.idx.ndim + 1)
            shape = x.idx.shape
            merged = (*shape[:s - 1], int(np.prod(shape[s - 1:e])), *shape[e:])
            return self.arranged(name, x.source, x.idx.reshape(merged))
        x = _tensor(x)
        nd = len(x.shape) + 1  # with the batch dimension
        s, e = _flatten_dims(start_dim, end_dim, nd)
        if s == e or len(x.shape) == 1:
            return x
        if s != 1 or e != nd - 1:
            raise _Problem(f"flattening dims {s}..{e} of {nd} keeps a multi-dimensional "
                           "sample: only flatten to (batch, features) is supported")
        return self.add("flatten", name, [x])

    def add_sub(self, name: str, kind: str, a: Any, b: Any) -> LayerOutput:
        if not isinstance(a, LayerOutput) or not isinstance(b, LayerOutput):
            const = b if isinstance(a, LayerOutput) else a
            raise _Problem(f"{'adding' if kind == 'add' else 'subtracting'} a constant "
                           f"({type(const).__name__}) is not a DAG ReLU network operation")
        return self.add(kind, name, [a, b])

    def cat(self, name: str, tensors: Sequence[Any], dim: int) -> LayerOutput:
        if not tensors or not all(isinstance(t, LayerOutput) for t in tensors):
            raise _Problem("torch.cat of something that is not a traced tensor")
        nd = len(tensors[0].shape) + 1
        d = dim + nd if dim < 0 else dim
        if d == 0:
            raise _Problem("concatenation along the batch dimension (dim=0)")
        return self.add("concat", name, list(tensors), axis=d - 1)

    def clamp(self, name: str, x: Any, low: Any, high: Any) -> LayerOutput:
        """clamp(min=0) with no max is relu; any other bound is not positively homogeneous."""
        if high is not None:
            raise _Problem(f"a clamp with max={high!r} (ReLU6-like) is not positively "
                           "homogeneous: only clamp(min=0), a ReLU, is")
        if isinstance(low, bool) or not isinstance(low, (int, float)) or low != 0:
            raise _Problem(f"a clamp with min={low!r} is not positively homogeneous: only "
                           "clamp(min=0), a ReLU, is")
        return self.add("activation", name, [_tensor(x)], activation="relu")

    def mean(self, name: str, x: LayerOutput, dims: Any, keepdim: Any,
             dtype: Any, total: bool = False) -> LayerOutput:
        """The mean over every spatial dimension is a global average pool (then a flatten
        unless keepdim); the sum (total) is that pool times the window; any other mean or sum
        is refused."""
        what = "sum" if total else "mean"
        if dtype is not None:
            raise _Problem(f"a {what} with dtype={dtype!r} changes the number type")
        nd = len(x.shape) + 1  # with the batch dimension
        if dims is None:
            raise _Problem(f"a {what} over every dimension (the batch included) is not a "
                           "pooling")
        listed = dims if isinstance(dims, (tuple, list)) else [dims]
        ds = sorted({int(d) + nd if int(d) < 0 else int(d) for d in listed})
        spatial = list(range(2, nd))
        if nd < 3 or ds != spatial:
            raise _Problem(f"a {what} over dims {_show(listed)} of a {nd}-dim tensor: only the "
                           f"{what} over every spatial dim {_show(spatial)} (a global "
                           f"{'sum' if total else 'average'} pool) is supported")
        pooled = self.add("adaptive_avg_pool", name, [x], output_size=[1] * (nd - 2))
        if total:
            pooled = self.add("scale", name, [pooled], factor=float(np.prod(x.shape[1:])))
        return pooled if keepdim else self.add("flatten", name, [pooled])

    def scale(self, name: str, x: Any, factor: Any, divide: bool) -> Any:
        """x * c or x / c for a number c: a fixed weight (ints: shape arithmetic)."""
        if _number(x) and _number(factor):
            return x / factor if divide else x * factor
        if not divide and _number(x) and isinstance(factor, (LayerOutput, _Arranged)):
            x, factor = factor, x
        if not isinstance(x, (LayerOutput, _Arranged)) or not _number(factor):
            raise _Problem(f"{'dividing' if divide else 'multiplying'} "
                           f"{type(x).__name__} by {type(factor).__name__}: only a tensor "
                           f"{'divided' if divide else 'multiplied'} by a number is supported "
                           "(a product of two tensors is not positively homogeneous)")
        if divide and factor == 0:
            raise _Problem("division by 0")
        c = 1.0 / float(factor) if divide else float(factor)
        if not math.isfinite(c):
            raise _Problem(f"the factor {c} is not finite")
        return self.add("scale", name, [_tensor(x)], factor=c)

    def conv_transpose(self, name: str, x: LayerOutput, mod: Any,
                       output_size: Any) -> LayerOutput:
        """A ConvTranspose; output_size (the forward's argument) chooses output_padding by
        PyTorch's own rule (mod._output_padding)."""
        n = 1 if isinstance(mod, nn.ConvTranspose1d) else 2
        kernel, stride, padding, dilation = (_pair(v, n) for v in (
            mod.kernel_size, mod.stride, mod.padding, mod.dilation))
        output_padding = _pair(mod.output_padding, n)
        if output_size is not None:
            size = list(output_size.shape) if isinstance(output_size, _Shape) else output_size
            if not isinstance(size, (tuple, list)) or \
                    not all(isinstance(s, (int, _Batch)) for s in size):
                raise _Problem(f"output_size {output_size!r} must be a list of sizes")
            size = size[-n:]  # PyTorch takes the spatial sizes last (batch, channels ahead)
            if len(size) != n or not all(_number(s) for s in size):
                raise _Problem(f"output_size {_show(list(output_size))} does not give "
                               f"{n} spatial sizes")
            sample = torch.empty((1, *x.shape), device="meta")
            try:
                output_padding = [int(v) for v in mod._output_padding(
                    sample, [int(s) for s in size], stride, padding, kernel, n, dilation)]
            except (ValueError, RuntimeError) as e:
                raise _Problem(f"output_size {list(size)}: {e}") from None
        return self.add("conv_transpose", name, [x], out_channels=int(mod.out_channels),
                        groups=int(mod.groups), kernel=kernel, stride=stride, padding=padding,
                        dilation=dilation, output_padding=output_padding, weight=mod.weight,
                        bias=mod.bias)

    def function(self, c: _Call) -> Any:
        t: Any = c.node.target
        name, args = c.node.name, c.args
        x = args[0] if args else None
        if t in INT_FUNCTIONS and all(_number(a) for a in args):
            return t(*args)
        if t in MUL_FUNCTIONS or t in DIV_FUNCTIONS:
            if t is torch.div and c.kwargs.get("rounding_mode") is not None:
                raise _Problem("a division with a rounding_mode is not linear")
            return self.scale(name, x, c.arg(1, "other"), t in DIV_FUNCTIONS)
        if (t in ADD_FUNCTIONS or t in SUB_FUNCTIONS) and all(_number(a) for a in args):
            return t(*args)
        if t in TRANSPOSE_FUNCTIONS:
            return self.transpose(name, x, c.arg(1, "dim0"), c.arg(2, "dim1"))
        if t in PERMUTE_FUNCTIONS:
            return self.permute(name, x, c.arg(1, "dims"))
        if t in CHUNK_FUNCTIONS:
            return self.chunk(name, _tensor(x), c.arg(1, "chunks"), c.arg(2, "dim", 0))
        if t in SPLIT_FUNCTIONS:
            return self.split(name, _tensor(x), c.arg(1, "split_size_or_sections"),
                              c.arg(2, "dim", 0))
        if t in PAD_FUNCTIONS:
            mode = c.arg(2, "mode", "constant")
            if mode == "constant" and c.arg(3, "value") not in (None, 0, 0.0):
                raise _Problem(f"constant padding with value {c.arg(3, 'value')!r}")
            return self.pad(name, _tensor(x), c.arg(1, "pad"), mode)
        if t in INTERPOLATE_FUNCTIONS:
            return self.resize(name, _tensor(x), c.arg(1, "size"), c.arg(2, "scale_factor"),
                               c.arg(3, "mode", "nearest"), c.arg(4, "align_corners"),
                               c.arg(5, "recompute_scale_factor"))
        if t is operator.getitem and isinstance(x, _Sorted):
            return x.item(args[1])
        if t is getattr and len(args) == 2 and isinstance(x, _Sorted):
            return x.item(args[1])
        if t in SORT_FUNCTIONS:
            return self.sort(name, x, c.arg(1, "dim", -1), c.arg(2, "descending", False),
                             "torch.sort")
        if t in EXTREME_FUNCTIONS or t in PAIRWISE_FUNCTIONS:
            return self.extreme_call(c, getattr(t, "__name__", "max"))
        if t in TOPK_FUNCTIONS:
            return self.topk(name, x, c.arg(1, "k"), c.arg(2, "dim", -1),
                             c.arg(3, "largest", True), c.arg(4, "sorted", True))
        if t in KTHVALUE_FUNCTIONS:
            return self.kthvalue(name, x, c.arg(1, "k"), c.arg(2, "dim", -1),
                                 c.arg(3, "keepdim", False))
        if t is operator.getitem and isinstance(x, _Arranged):
            return self.index_arranged(name, x, args[1])
        if t is operator.getitem and isinstance(x, (tuple, list)) and \
                not isinstance(x, _Shape) and isinstance(args[1], int):
            if not -len(x) <= args[1] < len(x):  # a chunk of chunk() or split()
                raise _Problem(f"item {args[1]} of {len(x)} pieces")
            return x[args[1]]
        if t is operator.getitem and isinstance(x, LayerOutput):
            return self.index(name, x, args[1])
        if t in SUM_FUNCTIONS:
            return self.mean(name, _tensor(x), c.arg(1, "dim"), c.arg(2, "keepdim", False),
                             c.kwargs.get("dtype"), total=True)
        if t in RELU_FUNCTIONS:
            return self.add("activation", name, [_tensor(x)], activation="relu")
        if t in CLAMP_FUNCTIONS:
            return self.clamp(name, x, c.arg(1, "min"), c.arg(2, "max"))
        if t in CLAMP_MIN_FUNCTIONS:
            return self.clamp(name, x, c.arg(1, "min"), None)
        if t in MEAN_FUNCTIONS:
            return self.mean(name, _tensor(x), c.arg(1, "dim"), c.arg(2, "keepdim", False),
                             c.kwargs.get("dtype"))
        if t in LEAKY_FUNCTIONS:
            slope = float(c.arg(1, "negative_slope", 0.01))
            return self.add("activation", name, [_tensor(x)], activation=_leaky(slope))
        if t in ADD_FUNCTIONS or t in SUB_FUNCTIONS:
            if c.kwargs.get("alpha", 1) != 1:
                raise _Problem("alpha != 1 is a multiplication")
            return self.add_sub(name, "add" if t in ADD_FUNCTIONS else "sub", x,
                                c.arg(1, "other"))
        if t in CAT_FUNCTIONS:
            return self.cat(name, c.arg(0, "tensors", ()), int(c.arg(1, "dim", 0)))
        if t in FLATTEN_FUNCTIONS:
            return self.flatten_call(c)
        if t in LINEAR_FUNCTIONS:
            w, b = c.arg(1, "weight"), c.arg(2, "bias")
            if not isinstance(w, _Param) or not (b is None or isinstance(b, _Param)):
                raise _Problem("F.linear needs parameters (model attributes) as weight and bias")
            return self.add("linear", name, [_tensor(x)], out_features=int(w.param.shape[0]),
                            weight=w.param, bias=b.param if b is not None else None)
        if t in MAX_POOL_FUNCTIONS:
            return self.max_pool(name, _tensor(x), MAX_POOL_FUNCTIONS[t],
                                 c.arg(1, "kernel_size", None), c.arg(2, "stride", None),
                                 c.arg(3, "padding", 0), c.arg(4, "dilation", 1),
                                 c.arg(5, "ceil_mode", False))
        if t in AVG_POOL_FUNCTIONS:
            n = AVG_POOL_FUNCTIONS[t]
            return self.avg_pool(name, _tensor(x), n, c.arg(1, "kernel_size", None),
                                 c.arg(2, "stride", None), c.arg(3, "padding", 0),
                                 bool(c.arg(5, "count_include_pad", True)),
                                 c.arg(4, "ceil_mode", False))
        if t in ADAPTIVE_FUNCTIONS:
            return self.adaptive(name, _tensor(x), ADAPTIVE_FUNCTIONS[t],
                                 c.arg(1, "output_size", None))
        if t is getattr and len(args) == 2 and args[1] == "shape" and \
                isinstance(x, (LayerOutput, _Arranged)):
            return _Shape(_shape_of(x))
        if t is operator.getitem and isinstance(x, _Shape) and isinstance(args[1], int):
            return _Batch() if args[1] == 0 else x.shape[args[1] - 1]
        if t is operator.getitem and isinstance(x, _Shape) and isinstance(args[1], slice):
            return tuple([_Batch(), *x.shape][args[1]])  # x.shape[2:]: sizes
        raise _Problem("not supported")

    def method(self, c: _Call) -> Any:
        m, name, args = str(c.node.target), c.node.name, c.args
        raw = args[0]
        if m in ALIAS_METHODS:
            return raw if isinstance(raw, _Arranged) else _tensor(raw)
        if m in ("view", "reshape"):
            return self.view(name, raw, args[1:])
        if m == "transpose":
            return self.transpose(name, raw, c.arg(1, "dim0"), c.arg(2, "dim1"))
        if m == "permute":
            return self.permute(name, raw, args[1:])
        if m == "flatten":
            return self.flatten_call(c)
        if m == "size" and len(args) == 1:
            return _Shape(_shape_of(raw))
        if m == "sort":
            return self.sort(name, raw, c.arg(1, "dim", -1), c.arg(2, "descending", False),
                             ".sort")
        if m in ("max", "min", "amax", "amin", "maximum", "minimum"):
            return self.extreme_call(c, m)
        if m == "topk":
            return self.topk(name, raw, c.arg(1, "k"), c.arg(2, "dim", -1),
                             c.arg(3, "largest", True), c.arg(4, "sorted", True))
        if m == "kthvalue":
            return self.kthvalue(name, raw, c.arg(1, "k"), c.arg(2, "dim", -1),
                                 c.arg(3, "keepdim", False))
        if m == "unfold":
            return self.unfold(name, raw, c.arg(1, "dimension"), c.arg(2, "size"),
                               c.arg(3, "step"))
        if m in ("mul", "mul_", "div", "div_"):
            if c.kwargs.get("rounding_mode") is not None:
                raise _Problem("a division with a rounding_mode is not linear")
            return self.scale(name, raw, c.arg(1, "other"), m.startswith("div"))
        x = _tensor(raw)
        if m == "chunk":
            return self.chunk(name, x, c.arg(1, "chunks"), c.arg(2, "dim", 0))
        if m == "split":
            return self.split(name, x, c.arg(1, "split_size"), c.arg(2, "dim", 0))
        if m == "sum":
            return self.mean(name, x, c.arg(1, "dim"), c.arg(2, "keepdim", False),
                             c.kwargs.get("dtype"), total=True)
        if m in ("relu", "relu_"):
            return self.add("activation", name, [x], activation="relu")
        if m in CLAMP_METHODS:
            return self.clamp(name, x, c.arg(1, "min"), c.arg(2, "max"))
        if m in CLAMP_MIN_METHODS:
            return self.clamp(name, x, c.arg(1, "min"), None)
        if m == "mean":
            return self.mean(name, x, c.arg(1, "dim"), c.arg(2, "keepdim", False),
                             c.kwargs.get("dtype"))
        if m in ("add", "add_", "sub", "sub_"):
            if c.kwargs.get("alpha", 1) != 1:
                raise _Problem("alpha != 1 is a multiplication")
            return self.add_sub(name, "add" if m.startswith("add") else "sub", x,
                                c.arg(1, "other"))
        if m == "size" and len(args) == 2 and isinstance(args[1], int):
            d = args[1] + len(x.shape) + 1 if args[1] < 0 else args[1]
            return _Batch() if d == 0 else int(x.shape[d - 1])
        raise _Problem("not supported")


def import_model(model: nn.Module, input_shape: InputShape, *, with_weights: bool = False,
                 what: str = "pathlift.from_torch") -> Imported:
    """The model's layer graph, or every problem found (UnsupportedModelError when it cannot
    even be traced, or is in training mode: :func:`refuse_training_mode`, its message starting
    with ``what``; ValueError, one line saying what to pass, when input_shape is None, cannot be
    inferred and nothing else is wrong). with_weights: the graph holds theta (the current
    parameters)."""
    refuse_training_mode(model, what)
    traced = Traced(model)
    placeholders = [n for n in traced.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise UnsupportedModelError(
            f"the model's forward takes {len(placeholders)} tensors: exactly one is supported")
    try:
        shape = input_shape_of(traced, input_shape)
    except ValueError as e:
        if input_shape is not None:
            raise  # not a shape: the entry named
        problems, _ = check_types(traced)
        if not problems:
            raise  # none inferred: one line saying what to pass
        # none inferred, and unsupported operations: every problem at once
        return Imported(None, problems + [str(e)], True, None, ())
    imp = _Importer(traced, shape)
    imp.run()
    assert imp.params is not None
    theta = imp.params.theta() if with_weights and not imp.b.problems else None
    try:
        graph = imp.b.finish(imp.params.num_params, theta)
    except UnsupportedModelError:
        return Imported(None, list(imp.b.problems), True, imp.params, shape)
    except NetworkError:
        return Imported(None, list(imp.b.problems), False, imp.params, shape)
    return Imported(graph, [], False, imp.params, shape)


def raise_problems(model: nn.Module, problems: Sequence[str], unsupported: bool) -> None:
    """Raises what an import found, every problem listed: UnsupportedModelError when an
    operation is not supported, NetworkError when only the layers' rules are broken."""
    if not problems:
        return
    listed = "\n".join(f"  - {p}" for p in problems)
    message = (f"cannot import {type(model).__name__}: {len(problems)} "
               f"problem{'s' if len(problems) > 1 else ''}\n{listed}")
    if unsupported:
        raise UnsupportedModelError(f"{message}\n{SUPPORTED}")
    raise NetworkError(message)
