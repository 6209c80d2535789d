#!/usr/bin/env python3
"""Writes the type stub of pathlift's C++ module (pathlift/_pathlift.pyi) from the module itself.

The build runs it after linking the module (python/CMakeLists.txt), so the stub is never kept by
hand beside the bindings: every class, function, overload, property, parameter name, keyword-only
marker and default comes from the signatures pybind11 writes at the top of each docstring. Their
types are mapped to typing syntax (pathlift._pathlift.Network -> Network,
numpy.ndarray[numpy.int32] -> npt.NDArray[np.int32]; a Network parameter is NetworkLike, since the
bindings unroll a LayerNetwork passed for it, unless the function has a LayerNetwork overload of
its own); where the bindings take or return a plain
Python object (`object`: an array-like, a scipy matrix, an int or a Count), TYPES below says what
it is. An entry of TYPES that matches nothing in the module is an error, so the table cannot go
stale.

Usage: stubgen.py BUILD_PYTHON_DIR OUTPUT.pyi   (BUILD_PYTHON_DIR holds the pathlift package)
"""

import ast
import re
import sys

HEADER = '''"""Type stubs of pathlift._pathlift, the C++ engine. Generated from the module by
scripts/stubgen.py at build time: do not edit."""

import os
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt
import scipy.sparse

NodeRef = Union[str, int]
DTypeLike = Any  # numpy.float64 / numpy.float32 / "float64" / None
Theta = Union[npt.ArrayLike, None]
CountLike = Union[int, "Count"]
NetworkLike = Union["Network", "LayerNetwork"]  # a LayerNetwork is unrolled on demand
'''

SPARSE_OR_NUMPY = "Union[scipy.sparse.spmatrix, np.ndarray]"
SKELETON_LIKE = "Union[None, PathSet, scipy.sparse.spmatrix, np.ndarray]"

# What the bindings' plain Python objects are. Keys: "name(param)" for a parameter of any function
# or method called `name` ("*(param)": of every function), "name->" for a return value, where name
# is a module function or Class.member.
TYPES = {
    "*(theta)": "Theta",
    "*(X)": "npt.ArrayLike",
    "*(dtype)": "DTypeLike",
    "*(path)": "Union[str, os.PathLike]",
    "*(B)": SKELETON_LIKE,
    "*(J)": SPARSE_OR_NUMPY,
    "*(phi)": "npt.ArrayLike",
    "verify_linearization(phi)": "Optional[npt.ArrayLike]",
    "verify_linearization(J)": "Optional[" + SPARSE_OR_NUMPY + "]",
    "*.shape->": "Tuple[int, int]",
    "Network.roles->": "List[str]",
    "Network.activations->": "List[str]",
    "*(weights)": "Optional[npt.ArrayLike]",
    "Network.__init__(edges)": "Union[Sequence[Tuple[NodeRef, NodeRef]], npt.NDArray[np.integer]]",
    "Network.__init__(nodes)": "Union[None, int, Sequence[str]]",
    "Network.__init__(outputs)": "Optional[Sequence[NodeRef]]",
    "Network.__init__(bias)": "Optional[Sequence[NodeRef]]",
    "Network.__init__(activations)": "Optional[Dict[NodeRef, str]]",
    "Network.weights->": "Optional[npt.NDArray[np.float64]]",
    "LayerNetwork.weights->": "Optional[npt.NDArray[np.float64]]",
    "Network.spec->": "Dict[str, Any]",
    "OutputGrouping.layout(values)": "npt.ArrayLike",
    "OutputGrouping.layout->": "np.ndarray",
    "OutputGrouping.P1->": "Optional[int]",
    "ActivationPattern.margin_sample->": "Optional[int]",
    "ActivationPattern.margin_node->": "Optional[int]",
    "PathCounts.paths->": "CountLike",
    "PathCounts.nnz->": "CountLike",
    "PathCounts.per_output->": "List[CountLike]",
    "PathCounts.per_input->": "List[CountLike]",
    "PathCounts.per_edge->": "List[CountLike]",
    "PathCounts.length_histogram->": "List[CountLike]",
    "count_paths_total->": "CountLike",
    "path_lifting->": "np.ndarray",
    "Linearization.L->": "scipy.sparse.csr_matrix",
    "linear_map->": "scipy.sparse.csr_matrix",
    "kernel_matvec(v)": "npt.ArrayLike",
    "kernel_matvec->": "npt.NDArray[np.float64]",
    "PathNorm.per_output->": "List[float]",
    "PathNorm.log10_per_output->": "List[float]",
    "PathNorm.per_input->": "Optional[List[float]]",
    "PathNorm.log10_per_input->": "Optional[List[float]]",
    "RankCertificate.rank->": "Optional[int]",
    "RankCertificate.kernel_failure_row->": "Optional[int]",
    "JacobianRankCertificate.rank->": "Optional[int]",
    "RankReport.rank_J->": "Optional[NumericalRank]",
    "RankReport.rank_J_exact->": "Optional[JacobianRankCertificate]",
    "modular_rank(column_order)": "Optional[npt.ArrayLike]",
    "check_rank_theorem(numerical)": "Optional[bool]",
    "rank(numerical)": "Optional[bool]",
    "rank(enumerate)": "Optional[bool]",
    "rank->": "Dict[str, Any]",
    "*.to_dict->": "Dict[str, Any]",
    "ProofCertificate.steps->": "List[ProofStep]",
    "ProofCertificate.failure->": "Optional[ProofIssue]",
    "ProofCertificate.rank->": "Optional[int]",
    "ProofCheck.failure->": "Optional[ProofIssue]",
    "ProofIssue.path->": "Optional[int]",
    "ProofIssue.edge->": "Optional[int]",
    "ProofIssue.node->": "Optional[int]",
    "ProofMatrix.matrix->": "scipy.sparse.csr_matrix",
    "*.findings->": "List[ProofIssue]",
    "proof_claims->": "Dict[str, str]",
    "ProofStep.u->": "Optional[int]",
    "ProofStep.k->": "Optional[int]",
    "ProofStep.e->": "Optional[int]",
    "ProofStep.reduced_rank->": "Optional[int]",
    "ProofStep.rank_after->": "Optional[int]",
    "ProofStep.matrices->": "List[ProofMatrix]",
    "ProofStep.matrix->": "ProofMatrix",
}

# Functions whose result type follows a keyword-only bool flag: name -> (flag, the result when
# it is False (the default), the result when it is True). Each overload of the function becomes
# three, `flag: Literal[False] = False`, `flag: Literal[True]` and `flag: bool` (either result),
# so that `J.nnz` type-checks.
LITERAL_OVERLOADS = {
    "skeleton": ("dense", "scipy.sparse.csr_matrix", "np.ndarray"),
    "jacobian": ("dense", "scipy.sparse.csr_matrix", "np.ndarray"),
    "jacobian_paper_formula": ("dense", "scipy.sparse.csr_matrix", "np.ndarray"),
    "kernel_trace": ("scaled", "float", "ScaledReal"),
}

# pybind11's names of Python types, as typing expressions.
NAMES = {"object": "Any", "list": "List[Any]", "dict": "Dict[str, Any]", "tuple": "Tuple[Any, ...]",
         "numpy.ndarray": "np.ndarray"}


def split_top(text, sep=","):
    """`text` split at `sep` outside brackets and quotes."""
    parts, depth, quote, cur = [], 0, None, ""
    for c in text:
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += c
    if cur.strip():
        parts.append(cur.strip())
    return parts


def typing_of(t):
    """A pybind11 type name as a typing expression."""
    t = t.replace("pathlift._pathlift.", "")
    t = re.sub(r"numpy\.ndarray\[numpy\.(\w+)\]", r"npt.NDArray[np.\1]", t)
    return re.sub(r"\b[\w.]+\b", lambda m: NAMES.get(m.group(0), m.group(0)), t)


class Types:
    """TYPES looked up, each use recorded so that unused entries can be reported."""

    def __init__(self):
        self.used = set()

    def get(self, keys, default):
        for k in keys:
            if k in TYPES:
                self.used.add(k)
                return TYPES[k]
        return default

    def param(self, owner, name, pybind_type, widen=False):
        plain = pybind_type in ("object", "list")
        # A std::vector argument takes any sequence, not only a list.
        default = re.sub(r"^List\[", "Sequence[", typing_of(pybind_type))
        if widen and default == "Network":
            default = "NetworkLike"
        return self.get([f"{owner}({name})"] + ([f"*({name})"] if plain else []), default)

    def result(self, owner, pybind_type):
        member = owner.rsplit(".", 1)[-1]
        keys = [f"{owner}->"] + ([f"*.{member}->"] if "." in owner else [])
        return self.get(keys, typing_of(pybind_type))


def signatures(doc, name):
    """The "(params) -> result" parts of a pybind11 docstring: one, or one per overload."""
    lines = (doc or "").splitlines()
    if len(lines) > 1 and lines[1].strip() == "Overloaded function.":
        found = [m.group(1) for m in (re.match(rf"^\d+\. {re.escape(name)}(\(.*)$", ln)
                                      for ln in lines) if m]
    else:
        found = [lines[0][len(name):]] if lines and lines[0].startswith(name + "(") else []
    if not found:
        raise SystemExit(f"stubgen: no pybind11 signature in the docstring of {name}")
    return found


def default_text(text):
    try:
        ast.literal_eval(text)
        return text
    except (ValueError, SyntaxError):
        return "..."


def function(types, owner, name, sig, method, indent, widen):
    """`def name(...) -> T: ...` from a pybind11 signature "(a: int, *, b: str = 'x') -> T"."""
    m = re.match(r"^\((.*)\) -> (.+)$", sig)
    if not m:
        raise SystemExit(f"stubgen: cannot read the signature {owner}{sig}")
    params = split_top(m.group(1))
    if method and params:
        params = params[1:]  # self
    out = ["self"] if method else []
    for p in params:
        if p in ("*", "*args", "**kwargs"):
            out.append(p if p == "*" else p + ": Any")
            continue
        decl, _, default = p.partition(" = ")
        pname, _, ptype = decl.partition(": ")
        text = f"{pname}: {types.param(owner, pname, ptype, widen)}"
        out.append(text + (f" = {default_text(default)}" if default else ""))
    if owner in LITERAL_OVERLOADS:
        return literal_overloads(owner, out, indent)
    return def_text(indent, name, out, types.result(owner, m.group(2)))


def def_text(indent, name, params, result):
    line = f"{indent}def {name}({', '.join(params)}) -> {result}: ..."
    if len(line) <= 100:
        return line
    # One parameter a line, as black writes a long signature.
    inner = "".join(f"{indent}    {p},\n" for p in params)
    return f"{indent}def {name}(\n{inner}{indent}) -> {result}: ..."


def literal_overloads(name, params, indent):
    """The overloads of LITERAL_OVERLOADS[name]: one per value of its flag, and a plain bool
    (a flag only known at run time) giving either result."""
    flag, when_false, when_true = LITERAL_OVERLOADS[name]
    at = [i for i, p in enumerate(params) if p.startswith(f"{flag}: bool")]
    if len(at) != 1 or "*" not in params[:at[0]]:
        raise SystemExit(f"stubgen: {name} has no keyword-only bool parameter {flag}")
    false_params = list(params)
    false_params[at[0]] = f"{flag}: Literal[False] = False"
    true_params = list(params)
    true_params[at[0]] = f"{flag}: Literal[True]"
    either = f"Union[{when_false}, {when_true}]"
    return "\n".join([def_text(indent, name, false_params, when_false), f"{indent}@overload",
                      def_text(indent, name, true_params, when_true), f"{indent}@overload",
                      def_text(indent, name, params, either)])


def callable_lines(types, owner, name, doc, method=False, indent=""):
    sigs = signatures(doc, name)
    # With a LayerNetwork overload of its own, the Network one takes only a Network (noconvert).
    widen = not any("LayerNetwork" in sig for sig in sigs)
    lines = []
    for sig in sigs:
        if len(sigs) > 1 or owner in LITERAL_OVERLOADS:
            lines.append(f"{indent}@overload")
        lines.append(function(types, owner, name, sig, method, indent, widen))
    return lines


def class_lines(types, cls):
    name = cls.__name__
    if issubclass(cls, BaseException):
        return [f"class {name}({cls.__bases__[0].__name__}): ..."]
    lines = [f"class {name}:"]
    for member, value in vars(cls).items():
        if member.startswith("_") and member not in (
                "__init__", "__len__", "__float__", "__int__", "__bool__", "__getattr__"):
            continue
        if isinstance(value, property):
            sig = signatures(value.fget.__doc__, "")[0]
            result = types.result(f"{name}.{member}", sig.split(" -> ", 1)[1])
            lines += ["    @property", f"    def {member}(self) -> {result}: ..."]
        elif callable(value) and type(value).__name__ != "wrapper_descriptor":  # not a slot
            lines += callable_lines(types, f"{name}.{member}", member, value.__doc__, True, "    ")
    return lines if len(lines) > 1 else lines + ["    ..."]


def stub(module):
    types = Types()
    lines = [HEADER, "__version__: str"]
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if isinstance(value, type):
            lines += [""] + class_lines(types, value) + [""]
        elif callable(value):
            lines += callable_lines(types, name, name, value.__doc__)
        else:
            lines.append(f"{name}: {type(value).__name__}")
    unused = sorted(set(TYPES) - types.used)
    if unused:
        raise SystemExit(f"stubgen: TYPES entries that match nothing in the module: {unused}")
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip("\n") + "\n"
    ast.parse(text)  # a stub that is not valid Python is a bug here
    return text


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.path.insert(0, sys.argv[1])
    from pathlift import _pathlift

    text = stub(_pathlift)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
