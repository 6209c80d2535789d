"""torch.fx tracing for pathlift.from_torch (private): the traced graph with in-place
operations made exact (:class:`Traced`), and what is supported whatever the shapes.

In-place operations are traced exactly: ``h.relu_()``, ``torch.relu_(h)``, ``F.relu(h,
inplace=True)``, ``nn.ReLU(inplace=True)``, ``h.add_(y)``, ``h += y`` change h for every later
reader in graph order, and for its aliases (nn.Identity, eval-mode Dropout, ``.contiguous()``,
``.detach()``, the results of in-place operations: the same tensor). torch.fx alone records
``h += y`` as ``h + y`` and drops an in-place operation whose result is not used; here both are
kept where a later operation reads the tensor. Views (slices, pieces of a chunk or split, a
flatten, a view, and PyTorch's other view operations) share entries with their tensor: an
in-place operation on one of them, or on the tensor, is refused by name when another view that
may share the changed entries (not another piece of the same split) is read after it, unless
both are the same entries in the same order; an in-place operation that is not supported
(``h.pow_(2)``) is refused, never dropped. What the trace does not see -- forward hooks,
weight_norm, spectral_norm, parametrizations -- is refused by module (:func:`module_problems`).
"""

from __future__ import annotations

import dis
import inspect
import operator
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

import numpy as np
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as torch_module
from torch.nn.utils import parametrize

from ._pathlift import UnsupportedModelError

InputShape = Union[None, int, Sequence[int]]

RELU_FUNCTIONS = {F.relu, torch.relu, torch.relu_}
# Activations that are not positively homogeneous (f(a x) = a f(x) fails for some a > 0): not
# the ReLU networks the path-lifting describes, refused with that reason.
_NON_HOMOGENEOUS = ("relu6", "hardtanh", "hardswish", "hardsigmoid", "silu", "gelu", "elu",
                    "selu", "celu", "softplus", "mish", "logsigmoid", "softsign", "tanhshrink",
                    "sigmoid", "tanh")
NON_HOMOGENEOUS_MODULES = tuple(
    getattr(nn, n) for n in ("ReLU6", "Hardtanh", "Hardswish", "Hardsigmoid", "SiLU", "GELU",
                             "ELU", "SELU", "CELU", "Softplus", "Mish", "LogSigmoid", "Softsign",
                             "Tanhshrink", "Sigmoid", "Tanh") if hasattr(nn, n))
NON_HOMOGENEOUS_FUNCTIONS = ({getattr(F, n) for n in _NON_HOMOGENEOUS if hasattr(F, n)}
                             | {getattr(torch, n) for n in _NON_HOMOGENEOUS if hasattr(torch, n)})
NON_HOMOGENEOUS_METHODS = {m for n in _NON_HOMOGENEOUS for m in (n, n + "_")
                           if hasattr(torch.Tensor, m)}


# Why such an activation is refused (after its description: "layer ReLU6 at 'f.2': ...").
NON_HOMOGENEOUS = ("not positively homogeneous (f(a x) = a f(x) fails for some a > 0): the "
                   "path-lifting describes networks of ReLU, leaky ReLU, identity and max-pooling "
                   "neurons")
LEAKY_FUNCTIONS = {F.leaky_relu}
# clamp(min=0) is a ReLU; clamp_min takes only the lower bound.
CLAMP_FUNCTIONS = {torch.clamp, torch.clip, torch.clamp_, torch.clip_}
CLAMP_MIN_FUNCTIONS = {torch.clamp_min, torch.clamp_min_}
CLAMP_METHODS = {"clamp", "clamp_", "clip", "clip_"}
CLAMP_MIN_METHODS = {"clamp_min", "clamp_min_"}
MEAN_FUNCTIONS = {torch.mean}  # over every spatial dimension: a global average pool
SUM_FUNCTIONS = {torch.sum}    # the same with weight 1
ADD_FUNCTIONS = {operator.add, operator.iadd, torch.add}
# A tensor times or divided by a number: fixed edges of that weight (ints: shape arithmetic).
MUL_FUNCTIONS = {operator.mul, operator.imul, torch.mul}
DIV_FUNCTIONS = {operator.truediv, operator.itruediv, torch.div}
INT_FUNCTIONS = {operator.floordiv, operator.mod, operator.neg}  # shape arithmetic only
# Rearrangements of entries (chunks, splits, slices, channel shuffles): gathers.
CHUNK_FUNCTIONS = {torch.chunk}
SPLIT_FUNCTIONS = {torch.split}
TRANSPOSE_FUNCTIONS = {torch.transpose}
PERMUTE_FUNCTIONS = {torch.permute}
PAD_FUNCTIONS = {F.pad}
INTERPOLATE_FUNCTIONS = {F.interpolate}
CONV_TRANSPOSE_MODULES = (nn.ConvTranspose1d, nn.ConvTranspose2d)
PAD_MODULES: Dict[type, str] = {nn.ReflectionPad1d: "reflect", nn.ReflectionPad2d: "reflect",
                                nn.ReplicationPad1d: "replicate",
                                nn.ReplicationPad2d: "replicate"}
UPSAMPLE_MODULES = (nn.Upsample, nn.UpsamplingNearest2d, nn.UpsamplingBilinear2d)
SUB_FUNCTIONS = {operator.sub, operator.isub, torch.sub}
# Order statistics (GroupSort, MaxMin, k-max pooling): a sort, a max or min over a dim or of
# two tensors (entry-wise: maximum, minimum), topk and kthvalue: group_sort and k_max_pool
# layers (with gathers and concats around them).
SORT_FUNCTIONS = {torch.sort}
EXTREME_FUNCTIONS = {torch.max, torch.min, torch.amax, torch.amin}
PAIRWISE_FUNCTIONS = {torch.maximum, torch.minimum}
TOPK_FUNCTIONS = {torch.topk}
KTHVALUE_FUNCTIONS = {torch.kthvalue}
ORDER_METHODS = {"sort", "max", "min", "amax", "amin", "maximum", "minimum", "topk",
                 "kthvalue"}
CAT_FUNCTIONS = {torch.cat} | ({torch.concat} if hasattr(torch, "concat") else set())
FLATTEN_FUNCTIONS = {torch.flatten}
LINEAR_FUNCTIONS = {F.linear}
MAX_POOL_FUNCTIONS: Dict[Any, int] = {F.max_pool1d: 1, F.max_pool2d: 2}
AVG_POOL_FUNCTIONS: Dict[Any, int] = {F.avg_pool1d: 1, F.avg_pool2d: 2}
ADAPTIVE_FUNCTIONS: Dict[Any, int] = {F.adaptive_avg_pool1d: 1, F.adaptive_avg_pool2d: 2}
SUPPORTED_MODULES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.MaxPool1d, nn.MaxPool2d, nn.AvgPool1d,
                     nn.AvgPool2d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.BatchNorm1d,
                     nn.BatchNorm2d, nn.ReLU, nn.LeakyReLU, nn.Identity, nn.Dropout, nn.Flatten,
                     nn.ChannelShuffle, *CONV_TRANSPOSE_MODULES, *PAD_MODULES,
                     *UPSAMPLE_MODULES)
SUPPORTED_METHODS = {"relu", "relu_", "add", "add_", "sub", "sub_", "flatten", "view",
                     "reshape", "size", "contiguous", "detach", "mean", "sum", "mul", "mul_",
                     "div", "div_", "chunk", "split", "transpose", "permute", "unfold"} | \
    CLAMP_METHODS | CLAMP_MIN_METHODS | ORDER_METHODS
SHAPE_READS = {"size", "dim"}  # methods that read a tensor's shape, not its values
# Operations whose result may share entries with their first argument (PyTorch's view
# operations, and reshape/flatten, which return a view when they can): an in-place operation
# on one is an in-place operation on the other's entries. Those that cut a tensor into pieces
# (SPLIT_VIEWS, then operator.getitem of a piece) make disjoint views.
SPLIT_VIEWS = {"chunk", "split", "split_with_sizes", "tensor_split", "unbind", "hsplit",
               "vsplit", "dsplit"}
VIEW_METHODS = {"view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "transpose",
                "permute", "t", "narrow", "select", "squeeze", "unsqueeze", "expand",
                "expand_as", "movedim", "moveaxis", "swapaxes", "swapdims", "diagonal",
                "unfold", "as_strided", "real", "imag", "__getitem__"} | SPLIT_VIEWS
VIEW_FUNCTIONS = {operator.getitem} | {getattr(torch, name) for name in VIEW_METHODS
                                       if hasattr(torch, name)}
SPLIT_FUNCTIONS = {getattr(torch, name) for name in SPLIT_VIEWS if hasattr(torch, name)}
VIEW_ATTRIBUTES = {"T", "mT", "H", "mH", "data", "real", "imag"}  # x.T: getattr(x, "T")
VIEW_MODULES = (nn.Flatten, nn.Unflatten)
ALIAS_METHODS = {"contiguous", "detach"}
INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv,
                     operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul,
                     operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift}


# --------------------------------------------------------------------------------------------
# tracing, with in-place operations made explicit


class _Proxy(torch.fx.Proxy):
    """torch.fx's Proxy records ``h += y`` as ``h + y`` (a new tensor, h rebound); this one
    records operator.iadd, an in-place operation on h, so that h's aliases see it."""


def _inplace_operator(op: Any) -> Any:
    def method(self: _Proxy, other: Any) -> Any:
        return self.tracer.create_proxy("call_function", op, (self, other), {})
    return method


for _op in INPLACE_OPERATORS:
    setattr(_Proxy, f"__{_op.__name__}__", _inplace_operator(_op))


def _unpacked_iter(self: _Proxy) -> Any:
    """``a, b = x.chunk(2, dim=1)``: the caller unpacks a known number of values (torch.fx's
    own test of the caller's bytecode predates Python 3.11's byte offsets)."""
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is not None:
        for ins in dis.get_instructions(caller.f_code):
            if ins.offset == caller.f_lasti and ins.opname == "UNPACK_SEQUENCE":
                return iter([self[i] for i in range(int(ins.argval))])  # type: ignore[index]
    return torch.fx.Proxy.__iter__(self)


class _Attribute(torch.fx.proxy.Attribute):
    """``x.shape`` of a traced tensor: unpacked like a _Proxy (``n, c, h, w = x.shape``)."""


setattr(_Proxy, "__iter__", _unpacked_iter)
setattr(_Attribute, "__iter__", _unpacked_iter)
setattr(_Proxy, "__getattr__", lambda self, k: _Attribute(self, k))


class _Tracer(torch.fx.Tracer):
    def proxy(self, node: torch.fx.Node) -> torch.fx.Proxy:
        return _Proxy(node, self)


def _inplace_position(fn: Any) -> int:
    try:
        return list(inspect.signature(fn).parameters).index("inplace")
    except (TypeError, ValueError):
        return -1


def module_of(model: nn.Module, node: torch.fx.Node) -> nn.Module:
    return model.get_submodule(str(node.target))


def mutates(node: torch.fx.Node, model: nn.Module) -> bool:
    """Whether the operation changes its first argument in place (``h.relu_()``, ``h += y``,
    ``h[i] = v``, ``inplace=True``)."""
    if node.op == "call_method":
        name = str(node.target)
        return (name.endswith("_") and not name.startswith("_")) or name == "__setitem__" or \
            (name.startswith("__i") and name.endswith("__"))
    if node.op == "call_function":
        t = node.target
        if t in INPLACE_OPERATORS or t is operator.setitem or node.kwargs.get("inplace") is True:
            return True
        k = _inplace_position(t)
        if 0 <= k < len(node.args) and node.args[k] is True:
            return True
        name = getattr(t, "__name__", "")
        return name.endswith("_") and not name.startswith("_")
    if node.op == "call_module":
        return getattr(module_of(model, node), "inplace", False) is True
    return False


def _alias_kind(node: torch.fx.Node, model: nn.Module) -> str:
    """'alias' (the same tensor), 'view' (some of its entries, maybe another shape: a slice, a
    piece of a chunk, a reshape) or 'new'."""
    if mutates(node, model):
        return "alias"
    if node.op == "call_method":
        return "alias" if node.target in ALIAS_METHODS else \
            "view" if node.target in VIEW_METHODS else "new"
    if node.op == "call_module":
        mod = module_of(model, node)
        return "alias" if type(mod) in (nn.Identity, nn.Dropout) else \
            "view" if isinstance(mod, VIEW_MODULES) else "new"
    if node.op == "call_function":
        t = node.target
        if t is getattr:
            return "view" if len(node.args) > 1 and node.args[1] in VIEW_ATTRIBUTES else "new"
        return "view" if t in VIEW_FUNCTIONS or t in FLATTEN_FUNCTIONS else "new"
    return "new"


def _piece(node: torch.fx.Node) -> Optional[Tuple[torch.fx.Node, int]]:
    """(splitting node, k) when node is piece k of a chunk, split, unbind, ...: pieces of one
    split with different k share no entry."""
    if node.op != "call_function" or node.target is not operator.getitem or \
            len(node.args) != 2 or not isinstance(node.args[1], int) or \
            not isinstance(node.args[0], torch.fx.Node):
        return None
    source = node.args[0]
    if (source.op == "call_method" and source.target in SPLIT_VIEWS) or \
            (source.op == "call_function" and source.target in SPLIT_FUNCTIONS):
        return source, node.args[1]
    return None


Region = Tuple[Tuple[torch.fx.Node, int], ...]


def _overlap(r1: Region, r2: Region) -> bool:
    """Whether two views of one storage may share entries: unless one is piece k of a split and
    the other another piece of it (indices of one sign, as the number of pieces is unknown)."""
    pieces = dict(r1)
    return not any(s in pieces and pieces[s] != k and (pieces[s] < 0) == (k < 0)
                   for s, k in r2)


def _reads_values(node: torch.fx.Node) -> bool:
    return not ((node.op == "call_method" and node.target in SHAPE_READS) or
                (node.op == "call_function" and node.target is getattr))


class Traced:
    """A model traced by torch.fx, with what each operation reads once in-place operations are
    applied. For a reader n and an argument a, ``redirect[n][a]`` is the in-place operation
    whose result n reads instead of a (a's alias was changed after a was made);
    ``view_reads[n][a]`` the same for an a of another alias class that may share entries with
    the changed tensor (a view of it, or a tensor it is a view of: a slice, a piece of a chunk,
    a reshape), accepted in the walk only when both are the same entries. ``mutations`` are the
    in-place operations. ``nodes`` are the operations the outputs depend on, in graph order
    (dead code left out, in-place operations on what is read later kept). ``problems`` are
    what the trace does not see (:func:`module_problems`: hooks, parametrizations), and
    ``refused`` the ids of the modules they name."""

    def __init__(self, model: nn.Module):
        if not isinstance(model, nn.Module):
            raise TypeError(f"expects a torch.nn.Module, got {type(model).__name__}")
        try:
            self.graph = _Tracer().trace(model)
        except Exception as e:  # torch.fx raises many types (TraceError, TypeError, ...)
            raise UnsupportedModelError(
                f"torch.fx cannot trace {type(model).__name__}: {type(e).__name__}: {e}") from e
        self.model = model
        self.problems, self.refused = module_problems(model)
        self.redirect: Dict[torch.fx.Node, Dict[torch.fx.Node, torch.fx.Node]] = {}
        self.view_reads: Dict[torch.fx.Node, Dict[torch.fx.Node, torch.fx.Node]] = {}
        self.mutations: Set[torch.fx.Node] = set()
        order = {n: i for i, n in enumerate(self.graph.nodes)}
        group: Dict[torch.fx.Node, torch.fx.Node] = {}
        storage: Dict[torch.fx.Node, torch.fx.Node] = {}
        region: Dict[torch.fx.Node, Region] = {}  # which pieces of its storage a node holds
        changes: Dict[torch.fx.Node, List[torch.fx.Node]] = {}  # storage -> in-place ops
        for n in self.graph.nodes:
            first = n.args[0] if n.args and isinstance(n.args[0], torch.fx.Node) else None
            kind = _alias_kind(n, model) if first is not None else "new"
            piece = _piece(n)
            region[n] = () if kind == "new" or first is None else \
                region[first] + ((piece,) if piece is not None else ())
            for a in (n.all_input_nodes if _reads_values(n) else ()):
                # the last in-place operation since a was made on entries n may read (a piece
                # of a split reads only its own entries)
                reads = region[n] if piece is not None and a is first else region[a]
                w = next((w for w in reversed(changes.get(storage[a], []))
                          if order[w] > order[a] and _overlap(region[w], reads)), None)
                if w is not None:
                    target = self.redirect if group[a] is group[w] else self.view_reads
                    target.setdefault(n, {})[a] = w
            group[n] = group[first] if kind == "alias" and first is not None else n
            storage[n] = storage[first] if kind != "new" and first is not None else n
            if kind == "alias" and mutates(n, model):
                changes.setdefault(storage[n], []).append(n)
                self.mutations.add(n)
        live: Set[torch.fx.Node] = set()
        stack = [n for n in self.graph.nodes if n.op == "output"]
        while stack:
            n = stack.pop()
            if n in live:
                continue
            live.add(n)
            redirect = self.redirect.get(n, {})
            stack += [redirect.get(a, a) for a in n.all_input_nodes]
            stack += list(self.view_reads.get(n, {}).values())
        self.nodes = [n for n in self.graph.nodes if n in live or n.op == "placeholder"]

    def read(self, reader: torch.fx.Node, a: torch.fx.Node) -> torch.fx.Node:
        """The node whose value `reader` reads for its argument `a` (views aside)."""
        return self.redirect.get(reader, {}).get(a, a)


# --------------------------------------------------------------------------------------------
# what is supported


def describe(node: torch.fx.Node, model: nn.Module) -> str:
    if node.op == "call_module":
        return f"layer {type(module_of(model, node)).__name__} at '{node.target}'"
    if node.op == "call_function":
        t = node.target
        name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or str(t)
        mod = getattr(t, "__module__", None) or ""
        if name == "boolean_dispatch.<locals>.fn":
            name = node.name
        prefix = f"{mod}." if mod and mod not in ("builtins", "_operator") else ""
        return f"operation {prefix}{name} (node '{node.name}')"
    if node.op == "call_method":
        return f"tensor method .{node.target}() (node '{node.name}')"
    return f"{node.op} '{node.target}'"


def _hook_name(hook: Any) -> str:
    return str(getattr(hook, "__qualname__", None) or type(hook).__name__)


def _where(path: str, mod: nn.Module) -> str:
    return f"module '{path}' ({type(mod).__name__})" if path else \
        f"the model ({type(mod).__name__})"


def module_problems(model: nn.Module) -> Tuple[List[str], Set[int]]:
    """What the trace does not see, each problem naming its module, and the ids of those
    modules: forward hooks and pre-hooks (torch.fx records a module call without running its
    hooks, which may change its inputs or outputs; global ones too), weight_norm and
    spectral_norm (pre-hooks that compute the weight) and parametrizations
    (torch.nn.utils.parametrize: a tensor computed at each call): theta maps to parameters, so
    each is refused with what to do. Backward hooks do not change outputs: accepted."""
    problems: List[str] = []
    refused: Set[int] = set()
    for path, mod in model.named_modules():
        where = _where(path, mod)
        found = []
        for hook in getattr(mod, "_forward_pre_hooks", {}).values():
            kind = type(hook).__name__
            if kind == "WeightNorm" and "weight_norm" in type(hook).__module__:
                found.append(
                    f"{where} has weight_norm on '{hook.name}' (its weight is computed from "
                    f"'{hook.name}_g' and '{hook.name}_v' at each call; theta maps to "
                    "parameters): call torch.nn.utils.remove_weight_norm(module"
                    f"{'' if hook.name == 'weight' else f', {hook.name!r}'}) first")
            elif kind == "SpectralNorm" and "spectral_norm" in type(hook).__module__:
                found.append(
                    f"{where} has spectral_norm on '{hook.name}' (its weight is computed from "
                    f"'{hook.name}_orig' at each call; theta maps to parameters): call "
                    "torch.nn.utils.remove_spectral_norm(module"
                    f"{'' if hook.name == 'weight' else f', {hook.name!r}'}) first")
            else:
                found.append(f"{where} has a forward pre-hook ({_hook_name(hook)}, "
                             "register_forward_pre_hook): pathlift does not run hooks, which "
                             "may change the inputs; remove it (handle.remove()) or write it "
                             "into forward")
        for hook in getattr(mod, "_forward_hooks", {}).values():
            found.append(f"{where} has a forward hook ({_hook_name(hook)}, "
                         "register_forward_hook): pathlift does not run hooks, which may change "
                         "the outputs; remove it (handle.remove()) or write it into forward")
        if parametrize.is_parametrized(mod):
            for name, chain in getattr(mod, "parametrizations", {}).items():
                kinds = ", ".join(type(p).__name__ for p in chain)
                found.append(
                    f"{where} has a parametrized '{name}' (torch.nn.utils.parametrize: "
                    f"{kinds}; the tensor is computed from 'parametrizations.{name}.original' "
                    "at each call, and theta maps to parameters): call torch.nn.utils."
                    f"parametrize.remove_parametrizations(module, {name!r}, "
                    "leave_parametrized=True) first")
        if found:
            problems += found
            refused.add(id(mod))
    for attribute, register, kind in (
            ("_global_forward_pre_hooks", "register_module_forward_pre_hook", "pre-hook"),
            ("_global_forward_hooks", "register_module_forward_hook", "hook")):
        for hook in getattr(torch_module, attribute, {}).values():
            problems.append(f"a global forward {kind} ({_hook_name(hook)}, torch.nn.modules."
                            f"module.{register}) is registered: pathlift does not run hooks, "
                            f"which may change every module's "
                            f"{'inputs' if kind == 'pre-hook' else 'outputs'}; remove it "
                            "(handle.remove())")
    return problems, refused


# --------------------------------------------------------------------------------------------
# training mode: the one rule of every face that takes a module

EVAL_FIRST = "call model.eval() first"
_NORMALIZES, _RANDOM = "normalize", "random"  # what a module does in training mode
_VERBS = {_NORMALIZES: ("normalizes by the batch", "normalize by the batch"),
          _RANDOM: ("is random", "are random")}


def _in_training(mod: nn.Module) -> Optional[str]:
    """What a module does in training mode that its eval-mode function does not, or None."""
    if not mod.training:
        return None
    if isinstance(mod, nn.modules.batchnorm._BatchNorm):
        return _NORMALIZES
    if isinstance(mod, nn.modules.dropout._DropoutNd) and mod.p > 0:
        return _RANDOM
    return None


def refuse_training_mode(model: nn.Module, what: str, remedy: str = EVAL_FIRST) -> None:
    """The one rule for a module in training mode, called by every face that takes a module
    (from_torch, theta_from_torch, load_theta, supports, path_norm, kernel_diagonal, PathSGD,
    theta_tensor, kernel_operator, lipschitz_bound, path_cond, enorm, rescale, fold_batchnorm):
    pathlift computes a module's eval-mode function, each BatchNorm the affine map
    ``y = a x + b`` of its running statistics and Dropout the identity, so a module holding a
    BatchNorm, or a Dropout with p > 0, in training mode (where the former normalizes by the
    batch and the latter is random) is refused: UnsupportedModelError (a ValueError) starting
    with ``what``, naming each such submodule by its path (three of a kind, then a count) and
    ending with ``remedy``. Modules whose training mode changes nothing (Linear, Conv, ReLU,
    ...) are accepted in either mode. The training-mode rescaling symmetry (a convolution
    feeding a training-mode BatchNorm is scale-free) is not supported."""
    if not isinstance(model, nn.Module):
        return  # not a module: the caller's TypeError
    found: Dict[str, List[str]] = {}
    for path, mod in model.named_modules():
        effect = _in_training(mod)
        if effect is not None:
            found.setdefault(effect, []).append(_where(path, mod))
    if not found:
        return
    clauses = []
    for effect, where in found.items():
        more = len(where) - 3
        named = ", ".join(where[:3]) + (f" and {more} more" if more > 0 else "")
        clauses.append(f"{named} {_VERBS[effect][len(where) > 1]}")
    meaning = ", ".join(text for effect, text in (
        (_NORMALIZES, "each BatchNorm the affine map y = a x + b of its running statistics"),
        (_RANDOM, "Dropout the identity")) if effect in found)
    if _NORMALIZES in found:
        meaning += "; the training-mode symmetry of a BatchNorm is not supported"
    raise UnsupportedModelError(
        f"{what}: {type(model).__name__} is in training mode, where {'; '.join(clauses)}. "
        f"pathlift computes the eval-mode function ({meaning}): {remedy}")


def own_forward(mod: nn.Module, cls: type) -> bool:
    """mod is a cls whose forward is cls's (a subclass that overrides it is another layer)."""
    return isinstance(mod, cls) and getattr(type(mod), "forward") is getattr(cls, "forward")


def _supported(node: torch.fx.Node, model: nn.Module) -> bool:
    """Whether the operation is of a supported type (its arguments aside)."""
    if node.op == "call_module":
        mod = module_of(model, node)
        return any(type(mod) is c or own_forward(mod, c) for c in SUPPORTED_MODULES)
    if node.op == "call_function":
        t = node.target
        groups: Tuple[Any, ...] = (
            RELU_FUNCTIONS, LEAKY_FUNCTIONS, ADD_FUNCTIONS, SUB_FUNCTIONS, CAT_FUNCTIONS,
            FLATTEN_FUNCTIONS, LINEAR_FUNCTIONS, MAX_POOL_FUNCTIONS, AVG_POOL_FUNCTIONS,
            ADAPTIVE_FUNCTIONS, CLAMP_FUNCTIONS, CLAMP_MIN_FUNCTIONS, MEAN_FUNCTIONS,
            SUM_FUNCTIONS, MUL_FUNCTIONS, DIV_FUNCTIONS, INT_FUNCTIONS, CHUNK_FUNCTIONS,
            SPLIT_FUNCTIONS, TRANSPOSE_FUNCTIONS, PERMUTE_FUNCTIONS, PAD_FUNCTIONS,
            INTERPOLATE_FUNCTIONS, SORT_FUNCTIONS, EXTREME_FUNCTIONS, PAIRWISE_FUNCTIONS,
            TOPK_FUNCTIONS, KTHVALUE_FUNCTIONS)
        return any(t in group for group in groups) or t in (getattr, operator.getitem)
    if node.op == "call_method":
        return node.target in SUPPORTED_METHODS
    return True


def _arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    return node.args[index] if len(node.args) > index else node.kwargs.get(name, default)


def _pool_problem(divisor_override: Any, return_indices: Any) -> Optional[str]:
    if divisor_override is not None:
        return "divisor_override is not supported"
    if return_indices:
        return "return_indices=True is not a tensor of the network"
    return None


INTERPOLATE_MODES = ("nearest", "linear", "bilinear")


def _interpolate_problem(mode: Any, antialias: Any) -> Optional[str]:
    if mode not in INTERPOLATE_MODES:
        return (f"mode {mode!r} is not supported: not a piecewise-linear map pathlift "
                "represents (only 'nearest', which copies entries, and 'linear' / 'bilinear', "
                "PyTorch's fixed interpolation weights)")
    if antialias:
        return ("antialias=True is not supported (its filter is wider than the bilinear "
                "weights pathlift represents)")
    return None


def _why_unsupported(node: torch.fx.Node, model: nn.Module) -> str:
    """The reason an operation pathlift does not import is refused: a non-homogeneous
    activation says so."""
    target: Any = node.target
    if ((node.op == "call_module" and isinstance(module_of(model, node), NON_HOMOGENEOUS_MODULES))
            or (node.op == "call_function" and target in NON_HOMOGENEOUS_FUNCTIONS)
            or (node.op == "call_method" and target in NON_HOMOGENEOUS_METHODS)):
        return NON_HOMOGENEOUS
    return "not supported"


def type_problem(node: torch.fx.Node, model: nn.Module) -> Optional[str]:
    """Why the operation cannot be imported whatever its inputs (its type, an option such as a
    pool's ceil_mode), or None (modules in training mode are refused before the trace is read:
    :func:`refuse_training_mode`): known without shapes, so reported even after a refused
    operation upstream (every problem at once)."""
    if not _supported(node, model):
        return _why_unsupported(node, model)
    if node.op == "call_function":
        if node.target in MAX_POOL_FUNCTIONS:
            return _pool_problem(None, _arg(node, 6, "return_indices", False))
        if node.target in AVG_POOL_FUNCTIONS:
            return _pool_problem(_arg(node, 6, "divisor_override"), False)
        if node.target in INTERPOLATE_FUNCTIONS:
            return _interpolate_problem(_arg(node, 3, "mode", "nearest"),
                                        _arg(node, 6, "antialias", False))
        if node.target in PAD_FUNCTIONS:
            mode = _arg(node, 2, "mode", "constant")
            if mode not in ("constant", "reflect", "replicate", "circular"):
                return f"padding mode {mode!r} is not supported"
        return None
    if node.op != "call_module":
        return None
    mod: Any = module_of(model, node)
    for key in ("weight", "bias"):
        t = getattr(mod, key, None)
        if isinstance(t, torch.Tensor) and not isinstance(t, nn.Parameter):
            return (f"its {key} is a plain tensor, not a parameter (theta maps to the model's "
                    "parameters): make it an nn.Parameter")
    if type(mod) in (nn.MaxPool1d, nn.MaxPool2d):
        return _pool_problem(None, mod.return_indices)
    if type(mod) in (nn.AvgPool1d, nn.AvgPool2d):
        return _pool_problem(getattr(mod, "divisor_override", None), False)
    if isinstance(mod, UPSAMPLE_MODULES):
        return _interpolate_problem(mod.mode, False)
    if type(mod) in (nn.BatchNorm1d, nn.BatchNorm2d):  # in eval mode (refuse_training_mode)
        if mod.running_mean is None or mod.running_var is None:
            return "track_running_stats=False normalizes by the batch even in eval mode"
        if mod.weight is None or mod.bias is None:
            return "affine=False has no parameters to carry a and b"
    return None


def refused_call(traced: Traced, node: torch.fx.Node) -> bool:
    """Whether node calls a module refused as a whole (Traced.refused: reported once)."""
    return node.op == "call_module" and id(module_of(traced.model, node)) in traced.refused


def check_types(traced: Traced) -> Tuple[List[str], List[nn.Module]]:
    """The problems that do not depend on shapes (unsupported operations) and
    the BatchNorms the forward pass calls: what theta needs, without an input shape."""
    problems: List[str] = list(traced.problems)
    batch_norms: Dict[int, nn.Module] = {}
    for node in traced.nodes:
        if refused_call(traced, node):
            continue  # its module's problem is listed
        problem = type_problem(node, traced.model)
        if problem is not None:
            problems.append(f"{describe(node, traced.model)}: {problem}")
        elif node.op == "call_module":
            mod = module_of(traced.model, node)
            if type(mod) in (nn.BatchNorm1d, nn.BatchNorm2d):
                batch_norms[id(mod)] = mod
    return problems, list(batch_norms.values())


def _size(s: Any) -> Optional[int]:
    """s as a positive integer size (an int, a numpy or 0-dim torch integer), else None."""
    if isinstance(s, (bool, np.bool_)) or (isinstance(s, torch.Tensor) and
                                           s.dtype == torch.bool):
        return None
    try:
        k = operator.index(s)
    except TypeError:
        return None
    return k if k > 0 else None


def parse_input_shape(input_shape: Any) -> Tuple[int, ...]:
    """One sample's shape as a tuple of positive ints (a number: a 1-entry shape); ValueError
    naming the first entry that is not a positive integer (a float, a bool, 0, a negative
    number, nan)."""
    expected = "input_shape must be one sample's shape, positive integers such as (3, 32, 32)"
    if isinstance(input_shape, (str, bytes)):
        raise ValueError(f"{expected}, got {input_shape!r}")
    size = _size(input_shape)
    if size is not None:
        return (size,)
    try:
        entries = list(input_shape)
    except TypeError:
        raise ValueError(f"{expected}, got {input_shape!r}, not a positive integer") from None
    if not entries:
        raise ValueError(f"{expected}, got {input_shape!r} (no entry)")
    for i, s in enumerate(entries):
        if _size(s) is None:
            raise ValueError(f"{expected}, got {input_shape!r}: entry {i} ({s!r}) is not a "
                             "positive integer")
    return tuple(int(operator.index(s)) for s in entries)


def input_shape_of(traced: Traced, input_shape: InputShape) -> Tuple[int, ...]:
    """input_shape as a tuple, or (in_features,) of the first Linear the input reaches through
    shape-free operations; ValueError when there is none, one line saying what to pass (with
    the channels of the first convolution the input reaches, if one does)."""
    if input_shape is not None:
        return parse_input_shape(input_shape)
    model = traced.model
    chain = {n for n in traced.nodes if n.op == "placeholder"}
    passing = (nn.ReLU, nn.LeakyReLU, nn.Identity, nn.Flatten, nn.Dropout)
    convolution: Optional[Tuple[str, Any]] = None  # the first one the input reaches
    for node in traced.nodes:
        if not node.args or not isinstance(node.args[0], torch.fx.Node) or \
                traced.read(node, node.args[0]) not in chain:
            continue
        if node.op == "call_module":
            mod = module_of(model, node)
            if isinstance(mod, nn.Linear):
                return (mod.in_features,)
            if type(mod) in passing:
                chain.add(node)
            elif convolution is None and isinstance(mod, nn.modules.conv._ConvNd):
                convolution = (str(node.target), mod)
        elif node.op == "call_function":
            if node.target in LINEAR_FUNCTIONS and isinstance(node.args[1], torch.fx.Node) \
                    and node.args[1].op == "get_attr":
                return (int(model.get_parameter(str(node.args[1].target)).shape[1]),)
            if node.target in RELU_FUNCTIONS | LEAKY_FUNCTIONS | FLATTEN_FUNCTIONS:
                chain.add(node)
        elif node.op == "call_method" and node.target in {"relu", "relu_", "flatten"}:
            chain.add(node)
    name = type(model).__name__
    if convolution is None:
        raise ValueError(f"cannot infer the input shape of {name}: pass input_shape, one "
                         "sample's shape without the batch dimension, e.g. (3, 32, 32)")
    path, conv = convolution
    sizes = ("L",) if len(conv.kernel_size) == 1 else ("H", "W")
    channels = conv.in_channels
    raise ValueError(
        f"cannot infer the input shape of {name}: pass input_shape=({channels}, "
        f"{', '.join(sizes)}), one sample's shape without the batch dimension ("
        f"{_where(path, conv)} takes {channels} channel{'s' if channels > 1 else ''})")
