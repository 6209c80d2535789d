"""The repository's own rules, checked on the tree (docs/maths-to-code.md, "one home per concept").

The library never names a CLI flag or command (the CLI and Python add their own hints), no
source file grows past the size where two concepts share it, and nothing points outside the
repository.
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIBRARY = [p for d in ("src", "include") for p in (ROOT / d).rglob("*") if p.suffix in (".cpp", ".hpp")]


def tracked_text_files():
    skip = {".git", "__pycache__"}
    for p in ROOT.rglob("*"):
        if any(part in skip or part.startswith("build") for part in p.relative_to(ROOT).parts):
            continue
        if p.is_file() and p.suffix in (".cpp", ".hpp", ".py", ".pyi", ".md", ".txt", ".cmake", ".sh", ".in"):
            yield p


def test_the_library_names_no_cli_flag():
    flag = re.compile(r"--max-memory|--no-enumerate|pathlift info|--threads|--seed")
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
            for p in LIBRARY
            for n, line in enumerate(p.read_text().splitlines(), 1) if flag.search(line)]
    assert not hits, "\n".join(hits)


def test_no_source_file_is_over_700_lines():
    sources = LIBRARY + [p for d in ("cli", "python") for p in (ROOT / d).rglob("*")
                         if p.suffix in (".cpp", ".hpp", ".py")]
    long = {str(p.relative_to(ROOT)): n for p in sources
            if (n := len(p.read_text().splitlines())) > 700}
    assert not long, long


def test_no_function_of_the_faces_is_over_150_lines():
    """The CLI and the bindings are thin layers: a function of theirs (a command, a bind_*)
    longer than 150 lines holds several concepts."""
    header = re.compile(r"^[A-Za-z][\w:<>,*& \[\]]* [\w:~]+\(")
    long = []
    for p in [p for d in ("cli", "python/src") for p in (ROOT / d).rglob("*.cpp")]:
        lines = re.sub(r'R"(\w*)\(.*?\)\1"', lambda m: "\n" * m.group(0).count("\n"),
                       p.read_text(), flags=re.S).split("\n")
        i = 0
        while i < len(lines):
            j = i
            while header.match(lines[i]) and j < len(lines) and not lines[j].rstrip().endswith(
                    ("{", ";")):
                j += 1
            if header.match(lines[i]) and j < len(lines) and lines[j].rstrip().endswith("{"):
                depth, k = 0, j
                while True:
                    depth += lines[k].count("{") - lines[k].count("}")
                    if depth == 0:
                        break
                    k += 1
                if k - i + 1 > 150:
                    long.append(f"{p.relative_to(ROOT)}:{i + 1} ({k - i + 1} lines)")
                i = k + 1
            else:
                i += 1
    assert not long, long


def test_nothing_points_outside_the_repository():
    outside = re.compile(r"MATH\.md|\.\./shared")
    hits = [str(p.relative_to(ROOT)) for p in tracked_text_files()
            if p.name != "test_repository.py" and outside.search(p.read_text(errors="replace"))]
    assert not hits, hits


# The parts of the library (src/<part>/, docs/maths-to-code.md "Where things live") and the parts
# each may include. The plan reads left to right: the DAG (network) below the layer graph
# (layers) and its importers, the Model facade above both (a DAG, or a layer graph
# unrolled into a DAG); the walk enumerates its paths, the DPs sum over them without enumerating,
# the layer DP sums over a layer graph, and the ranks use all of them.
ALLOWED = {
    "core": {"core"},
    "network": {"core", "network"},
    "layers": {"core", "network", "layers"},
    "model": {"core", "network", "layers", "model"},
    "dp": {"core", "network", "dp"},
    "walk": {"core", "network", "dp", "walk"},
    "layer_dp": {"core", "network", "layers", "model", "dp", "layer_dp"},
    "rank": {"core", "network", "layers", "model", "dp", "walk", "layer_dp", "rank"},
}
# The public headers (include/pathlift/, flat: a user includes <pathlift/norms.hpp> whatever the
# folder of its implementation) by part. A new header must be added here.
PUBLIC = {
    "core": ["types", "error", "options", "limits", "sparse", "count", "scaled_real", "mod_p",
             "version"],
    "network": ["network", "builtins", "io"],
    "layers": ["layers", "layer_kinds", "layer_graph_builder", "onnx"],  # layer_kinds.def: the list
    "model": ["model"],
    "layer_dp": ["layer_dp", "path_free", "generalization", "heavy_paths", "path_shares"],
    "dp": ["counting", "norms", "kernel", "magnitude", "gram", "path_memory", "path_metric"],
    "walk": ["paths", "lifting", "linearize", "forward", "checks"],
    "rank": ["certificate", "modular", "numerical_rank", "symmetry", "rank", "proof", "rescaling",
             "balance", "summary", "conservation", "functional_dimension"],
}
INCLUDE = re.compile(r'^#include "((?:pathlift|src)/[^"]+)"', re.M)


def part_of(path: str):
    """The part of a repository file ("src/dp/norms.cpp") or include ("pathlift/norms.hpp")."""
    if path.startswith("src/"):
        return path.split("/")[1]
    name = pathlib.PurePath(path).stem
    if name == "pathlift":
        return None  # the umbrella header includes everything
    return next((part for part, names in PUBLIC.items() if name in names), "unclassified")


def test_every_source_file_is_in_a_part():
    loose = [str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*")
             if p.suffix in (".cpp", ".hpp") and p.relative_to(ROOT / "src").parts[0] not in ALLOWED]
    assert not loose, loose
    headers = {p.stem for p in (ROOT / "include/pathlift").glob("*.hpp")} | {"version"}
    unclassified = sorted(h for h in headers if part_of(f"pathlift/{h}.hpp") == "unclassified")
    assert not unclassified, f"add these public headers to PUBLIC: {unclassified}"


def test_the_include_directions_are_acyclic():
    """Each pair of parts has one direction at most: the table orders the parts."""
    left = {part: allowed - {part} for part, allowed in ALLOWED.items()}
    order = []
    while left:
        ready = sorted(p for p, needs in left.items() if needs <= set(order))
        assert ready, f"a cycle among {sorted(left)}"
        order += ready
        for p in ready:
            del left[p]
    assert order[0] == "core"


def test_the_include_directions():
    """network never includes layers or model; layers never includes model; model never
    includes dp, walk or rank; walk never includes rank; dp never includes walk; core includes
    no other part (the whole table is ALLOWED)."""
    wrong = []
    for p in LIBRARY:
        rel = str(p.relative_to(ROOT))
        me = part_of(rel if rel.startswith("src/") else rel.removeprefix("include/"))
        if me is None:
            continue
        for target in INCLUDE.findall(p.read_text()):
            them = part_of(target)
            if them is not None and them not in ALLOWED[me]:
                wrong.append(f"{rel} ({me}) includes {target} ({them})")
            if target.startswith("src/") and "/detail/" in target and them != me:
                wrong.append(f"{rel} ({me}) includes {target}, a detail of {them}: a header other "
                             f"parts use is its part's internal interface, src/{them}/")
    assert not wrong, "\n".join(wrong)


def switches(text: str):
    """Each `switch (...) {` body of a C++ source, as (line, the body's text at its own depth:
    nested braces' contents left out)."""
    for m in re.finditer(r"\bswitch \(.*\) \{", text):
        depth, i, own = 1, m.end(), []
        while depth:
            c = text[i]
            depth += (c == "{") - (c == "}")
            if depth == 1 and c != "}":
                own.append(c)
            i += 1
        yield text.count("\n", 0, m.start()) + 1, "".join(own)


def test_no_switch_over_a_layer_kind_has_a_default():
    """A layer kind is one entry of the list (include/pathlift/layer_kinds.def) and one unit
    (src/layers/kinds/<kind>.hpp): the table (src/layers/layer_kinds.hpp) is the one place that
    switches over LayerKind (visit_kind_or, the dispatch every pass goes through), a case per
    entry of the list with no `default:`, so that -Wswitch (an error here) and the units' rules
    make a new kind compile only once it has them all (docs/adding-a-layer-kind.md)."""
    sources = [p for d in ("src", "include", "cli", "python/src") for p in (ROOT / d).rglob("*")
               if p.suffix in (".cpp", ".hpp")]
    found, wrong = [], []
    for p in sources:
        for line, body in switches(p.read_text()):
            if "case LayerKind::" in body:
                found.append(f"{p.relative_to(ROOT)}:{line}")
                if re.search(r"\bdefault:", body):
                    wrong.append(f"{p.relative_to(ROOT)}:{line}")
    assert len(found) == 1, found  # visit_kind_or
    assert {f.split(":")[0] for f in found} == {"src/layers/layer_kinds.hpp"}, found
    assert not wrong, wrong


# Where C++ may name a layer kind (LayerKind::x) besides the list (include/pathlift/layer_kinds.def),
# its unit (src/layers/kinds/x.hpp) and the ONNX operator table (onnx_operators.cpp, the kind a
# node of an operator builds): each place and why. Everything else asks the kind's record or
# visits its form (docs/adding-a-layer-kind.md).
KIND_NAMED_ELSEWHERE = {
    # the input is kind 0; `name`: the list's entry in the table's X-macros (visit_kind_or, k_kinds)
    "src/layers/layer_kinds.hpp": {"input", "name"},
    # the public enum's examples, Layer's default, a graph's layer 0
    "include/pathlift/layers.hpp": {"conv", "activation", "input"},
    "include/pathlift/layer_graph_builder.hpp": {"linear", "activation"},  # its example
    "src/layers/kinds/kind.hpp": {"input", "x"},  # the input is no plain map; `x` in a comment
    # layer 0 is the input, and only layer 0
    "src/layers/detail/layers_json.cpp": {"input"},
    "src/layers/layer_graph_builder.cpp": {"input"},
    "src/layers/layers.cpp": {"input"},
    # ONNX handlers whose operator becomes layers of several kinds (no one kind in the table)
    "src/layers/detail/onnx_scale.cpp": {"adaptive_avg_pool", "scale", "flatten", "concat",
                                         "group_sort"},  # ReduceMean/ReduceSum, Max/Min
    "src/layers/detail/onnx_views.cpp": {"flatten"},  # a view made a vector
    "src/layers/detail/onnx_layers.cpp": {"flatten"},  # Reshape
    "src/layers/detail/onnx_resize.cpp": {"interpolate"},  # Resize: gathers or interpolate
}


def test_a_layer_kind_is_named_only_in_its_homes():
    """Issue 45's extension without a hunt: a kind is named (LayerKind::x) by the list, its unit
    and the ONNX operator table, and elsewhere only where KIND_NAMED_ELSEWHERE says why. A pass
    that needs to know a kind visits its form or reads its record instead."""
    homes = {"src/layers/detail/onnx_operators.cpp"}
    wrong, seen = {}, {}
    for d in ("src", "include", "cli", "python/src"):
        for p in (ROOT / d).rglob("*"):
            if p.suffix not in (".cpp", ".hpp"):
                continue
            rel = str(p.relative_to(ROOT))
            named = set(re.findall(r"LayerKind::(\w+)", p.read_text()))
            if rel.startswith("src/layers/kinds/") and rel != "src/layers/kinds/kind.hpp":
                named -= {p.stem} | ({"add"} if p.stem == "sub" else set())  # sub is add's rule
            elif rel in homes:
                continue
            seen[rel] = named
            extra = named - KIND_NAMED_ELSEWHERE.get(rel, set())
            if extra:
                wrong[rel] = sorted(extra)
    assert not wrong, wrong
    # An entry that no longer names its kinds goes: the list stays the places that do.
    stale = {f: sorted(k - seen.get(f, set())) for f, k in KIND_NAMED_ELSEWHERE.items()
             if k - seen.get(f, set())}
    assert not stale, stale


LIST = ROOT / "include/pathlift/layer_kinds.def"


def listed_kinds():
    """The kinds of the list, include/pathlift/layer_kinds.def, in its order."""
    return re.findall(r"^PATHLIFT_LAYER_KIND\((\w+),", LIST.read_text(), re.M)


def test_every_kind_of_the_list_has_its_unit_and_nothing_else():
    """The list is the kinds: each entry has its unit (the build includes
    src/layers/kinds/<name>.hpp for it, which specializes Kind<LayerKind::name>), and every unit
    is an entry of the list."""
    kinds = listed_kinds()
    assert kinds and len(set(kinds)) == len(kinds), kinds
    units = {p.stem for p in (ROOT / "src/layers/kinds").glob("*.hpp")} - {"kind", "fields"}
    assert units == set(kinds), (sorted(units - set(kinds)), sorted(set(kinds) - units))
    for k in kinds:
        assert f"struct Kind<LayerKind::{k}> {{" in (ROOT / f"src/layers/kinds/{k}.hpp").read_text()


# The files outside tests, docs and bench that name a kind whose name is no common word: the
# list, its unit, the ONNX operator table, the torch.fx importer and the Python layer
# description (torch.py's docstring). The other places say what they need in other words
# (a transposed convolution, a layer picking entries) or ask the kind's record.
KIND_HOMES = {"include/pathlift/layer_kinds.def", "src/layers/detail/onnx_operators.cpp",
              "python/pathlift/_torch_fx.py", "python/pathlift/torch.py"}


@pytest.mark.parametrize("kind", ["conv_transpose", "gather"])
def test_a_kind_is_named_in_its_five_homes(kind):
    word = re.compile(rf"\b{kind}\b")
    naming = {str(p.relative_to(ROOT)) for d in ("src", "include", "cli", "python")
              for p in (ROOT / d).rglob("*") if p.is_file() and "__pycache__" not in p.parts
              and word.search(p.read_text(errors="replace"))}
    assert naming == KIND_HOMES | {f"src/layers/kinds/{kind}.hpp"}, naming


def test_unity_batches_cannot_collide():
    """The CLI and the bindings compile in unity batches (several .cpp files as one): a function
    defined at file scope in two of their files, in anonymous namespaces, would be a
    redefinition once a new file puts both in one batch. Each name has one file."""
    definition = re.compile(r"^[A-Za-z][\w:<>,*& ]* (\w+)\(", re.M)
    for folder in ("cli", "python/src"):
        where = {}
        for p in sorted((ROOT / folder).rglob("*.cpp")):
            code = re.sub(r'R"(\w*)\(.*?\)\1"', '""', p.read_text(), flags=re.S)  # raw strings
            for name in set(definition.findall(code)):
                where.setdefault(name, []).append(str(p.relative_to(ROOT)))
        shared = {n: files for n, files in where.items() if len(files) > 1}
        assert not shared, shared
