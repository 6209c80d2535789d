"""Every code block of docs/*.md runs as written, or says why not (issue 32).

The blocks of each document run in document order, from a scratch copy of a fresh clone: the
checkout's files linked in, `build` the build under test, an empty docs/, nothing made before.
HOME is a scratch folder; `pathlift` and `python3` on PATH are the build's CLI and
/usr/bin/python3; PYTHONPATH is unset (the docs set it where they need it).

- ```sh: one bash a block; each command must exit 0, and the files it makes are there for the
  blocks after it. The commands that build the project (`cmake -S . -B build -D...`,
  `cmake --build build --target T`) made the build under test: they are checked against it
  (its cache has the -D variables, the targets exist), not run again.
- ```python: statement by statement, in one namespace per document, in the scratch folder. A
  statement whose comment starts with an exception's name (`x  # TooLarge: message`) must
  raise it, with the message shown. A block of `>>>` lines shows a dict: the keys shown are
  there in that order, with the values shown (numbers to the digits shown; '...' is any).
- ```json: parsed; a pathlift-network or pathlift-layers document is read by the CLI's
  `info --network FILE --json` and by `pathlift.load_model`, which agree on d and the edges;
  where the paragraph before it names a file of tests/data, the block is that file.
- a plain block of `$ ` lines (a transcript): the commands run as in a ```sh block; each prints
  what the block shows after it (stdout then stderr; `...` stands for anything, whitespace
  is not compared) and exits 0, or non-zero where it shows `error:`.
- a plain block of `pathlift COMMAND ...` lines (a synopsis): every option it names is in
  `pathlift COMMAND --help`.

Any other block needs a marker on the line before it: `<!-- not run: why -->`, or
`<!-- covered by: tests/FILE::test_name -->` naming the test that runs it. What the text says
about an output, where it is cheap to check, is in claims_shell, claims_python and CLAIMS_JSON
below, keyed by the command, statement or JSON text it is about; each key must meet its block.
"""
import ast
import builtins
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tokenize
import types
from collections import defaultdict
from dataclasses import dataclass

import pytest

from conftest import ROOT

DOCS = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^([ \t]*)```([\w+-]*)[ \t]*\n(.*?)^\1```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*(not run|covered by):\s*(\S.*?)\s*-->")


@dataclass
class Block:
    doc: str
    line: int  # of the opening fence
    lang: str
    text: str
    marker: tuple  # (kind, reason) or None
    before: str  # the paragraph before the block

    @property
    def where(self):
        return f"docs/{self.doc}:{self.line}"

    @property
    def kind(self):
        if self.marker:
            return "marked"
        if self.lang in ("sh", "json"):
            return self.lang
        if self.lang == "python":
            return "doctest" if self.text.startswith(">>> ") else "python"
        if self.lang == "" and self.text.startswith("$ "):
            return "transcript"
        if self.lang == "" and self.text.startswith("pathlift "):
            return "synopsis"
        return None


def blocks(path):
    text = path.read_text()
    found = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip()
        marker = MARKER.fullmatch(before.rsplit("\n", 1)[-1].strip())
        indent = m[1]  # a block in a list item: its lines without the item's indent
        body = "".join(line.removeprefix(indent) for line in m[3].splitlines(keepends=True))
        found.append(Block(path.name, text.count("\n", 0, m.start()) + 1, m[2], body,
                           marker.groups() if marker else None, before.rsplit("\n\n", 1)[-1]))
    return found


def squeeze(s):
    return re.sub(r"\s+", "", s)


def shows(shown, actual, anchored=True):
    """Whether `actual` reads as `shown`, where `...` stands for anything and whitespace is not
    compared; anchored: at both ends, unless `shown` starts or ends with `...`."""
    parts = [squeeze(p) for p in shown.split("...")]
    actual = squeeze(actual)
    if anchored and not (actual.startswith(parts[0]) and actual.endswith(parts[-1])):
        return False
    pos = 0
    for part in parts:
        at = actual.find(part, pos)
        if at < 0:
            return False
        pos = at + len(part)
    return True


def as_shown(actual, text):
    """`actual` rounded to the significant digits of the number `text` shows equals it."""
    digits = len(re.sub(r"^[-+]?0*\.?0*", "", text.split("e")[0]).replace(".", ""))
    return float(f"{actual:.{max(digits, 1)}g}") == float(text)


def holds(result):
    """A check's verdict: it asserts (None) or returns a truth value."""
    return result is None or bool(result)


# --- What the text claims -----------------------------------------------------------------------

def claims_shell():
    def lenet5(r, clone):
        assert re.search(r"^nodes\s+8883:", r.out, re.M), r.out
        assert re.search(r"^d\s+61706 parameters on 419478 edges", r.out, re.M), r.out

    def one_row_per_sample(r, clone):
        assert len(r.out.splitlines()) == 4, r.out  # X.npy: 4 samples

    def norms(r, clone):
        assert "||Phi||_1" in r.out and "||Phi||_2" in r.out, r.out

    def installed(r, clone):
        prefix = clone.parent / "home" / "opt" / "pathlift"
        files = re.findall(r"^-- (?:Installing|Up-to-date): (.*)$", r.out, re.M)
        assert files and all(f.startswith(f"{prefix}/") for f in files), r.out
        for f in ("bin/pathlift", "include/pathlift/pathlift.hpp",
                  "lib/python3.11/site-packages/pathlift/__init__.py"):
            assert (prefix / f).is_file(), f

    def consumer_finds_the_prefix(r, clone):
        cache = (clone / "build-consumer" / "CMakeCache.txt").read_text()
        prefix = clone.parent / "home" / "opt" / "pathlift"
        assert f"pathlift_DIR:PATH={prefix}/lib/cmake/pathlift" in cache

    return {
        "layers.md": {
            "build/cli/pathlift info --onnx tests/data/lenet5.onnx": lenet5,
            "build/cli/pathlift forward --onnx tests/data/residual.onnx --input-shape 3,16,16 "
            "--data X.npy": one_row_per_sample,
            "build/cli/pathlift norm --onnx tests/data/conv1d.onnx --s 1,2": norms,
        },
        "install.md": {
            "cmake --install build --prefix ~/opt/pathlift": installed,
            "cmake -S tests/consumer -B build-consumer -DCMAKE_PREFIX_PATH=~/opt/pathlift":
                consumer_finds_the_prefix,
        },
        "python.md": {
            "PYTHONPATH=build/python /usr/bin/python3 -c import pathlift; print(pathlift.fig1())":
                lambda r, clone: r.out.startswith("<pathlift.Network: 6 nodes"),
        },
    }


def claims_python():
    """{doc: {statement: check(r)}}: r.value (an expression's value, or what an assignment to a
    name assigned), r.printed, r.ns, r.seen (the values of the same statement before)."""
    import numpy as np

    def model_of(ns, X, dtype):
        import torch
        with torch.no_grad():
            return ns["model"](torch.as_tensor(X).to(dtype)).numpy()

    def intro_linearize(r):
        import torch
        f = (r.value @ r.ns["phi"]).reshape(32, 2)
        assert np.allclose(f, model_of(r.ns, r.ns["X"], torch.float32), atol=1e-5)

    def same_as_model(shape):
        def check(r):
            import torch
            X = r.ns["X"].numpy() if hasattr(r.ns["X"], "numpy") else r.ns["X"]
            assert np.allclose(np.reshape(r.value, shape),
                               model_of(r.ns, X, torch.float64).reshape(shape))
        return check

    def path_norms(r):
        assert as_shown(r.value, ["99.89", "200.5"][len(r.seen)]), r.value

    def rescaling_matrix(r):
        pathlift = r.ns["pathlift"]
        assert r.value.shape == (138, 16)
        assert abs(pathlift.skeleton(r.ns["net"]) @ r.value).max() == 0

    def unrolled(r):
        names = list(r.value.nodes)
        assert (r.value.num_edges, r.value.d) == (48, 10)
        assert names[0] == "x[0,0,0]" and "conv.bias" in names and "relu[0,0,0]" in names
        assert names[-8:] == [f"y{i}" for i in range(8)]

    return {
        "python.md": {
            "phases[-1]": lambda r: r.value == ("layer by layer", 1.0),
            "pathlift.rank(net, theta)":
                lambda r: [r.value[k] for k in ("d", "h", "h_sym", "expected")] == [66, 8, 8, 58],
            "B = pathlift.skeleton(net)":
                lambda r: r.value.shape == (len(r.ns["phi"]), 66) and (r.value.data == 1).all(),
            "L = pathlift.linearize(net, theta, X).L": intro_linearize,
            "net.d, net.num_edges, net.one_parameter_per_edge":
                lambda r: r.value == (2, 4, False),
            "pathlift.path_lifting(net, [2.0, 3.0])":
                lambda r: np.array_equal(r.value, [6.0, 1.0, 6.0]),
            "pathlift.jacobian(net, [2.0, 3.0], dense=True)":
                lambda r: np.array_equal(r.value, [[3, 2], [0, 0], [3, 2]]),
            "cert.proved, cert.rank": lambda r: r.value == (True, 5),
            "pathlift.check_proof(cert).failure.message":
                lambda r: isinstance(r.value, str) and r.value,
            "f = (lin.L @ pathlift.path_lifting(net, theta)).reshape(100, 2)":
                same_as_model((100, 2)),
            "G = lin.L @ pathlift.jacobian(net, theta)": lambda r: r.value.shape == (200, 66),
            "Z = pathlift.rescaling_matrix(net)": rescaling_matrix,
            "print(np.allclose(pathlift.path_lifting(net, rescaled), "
            "pathlift.path_lifting(net, theta)))": lambda r: r.printed == "True\n",
            "print(np.allclose(pathlift.path_magnitude(net, rescaled), scores))":
                lambda r: r.printed == "True\n",
            "net.num_edges": lambda r: r.value == 1_687_746_344,
            "net.is_unrolled": lambda r: r.value is False,
            "net.d, net.num_edges": lambda r: r.value == (119, 2025),
            "theta = pathlift.theta_from_torch(model)":
                lambda r: np.array_equal(r.value, r.ns["net"].weights),
            "f = pathlift.forward(net, None, X.reshape(4, -1).numpy()).outputs":
                same_as_model((4, 3)),
            "r = pathlift.rank(net)":
                lambda r: [r.value[k] for k in ("d", "h", "h_sym", "rank_B")] == [119, 234, 4, 115],
            "pathlift.path_norm(net).norm": path_norms,
            "pathlift.path_norm(net, theta).norm": lambda r: as_shown(r.value, "99.89"),
            "pathlift.supports(bad)": lambda r: not r.value.ok and list(r.value.problems) == [
                f"layer {layer}: not positively homogeneous (f(a x) = a f(x) fails for some a > "
                "0): the path-lifting describes networks of ReLU, leaky ReLU, identity and "
                "max-pooling neurons" for layer in ("Sigmoid at '1'", "Tanh at '3'")],
            "pathlift.layer_shapes(g)":
                lambda r: r.value == [(1, 3, 3), (2, 2, 2), (2, 2, 2)],
            "net = pathlift.unroll(g)": unrolled,
            "pathlift.kernel_trace(net)": lambda r: np.isfinite(r.value) and r.value > 0,
        },
        "layers.md": {
            '"BatchNormalization" in {node.op_type for node in onnx.load("model.onnx").graph.node}':
                lambda r: r.value is True,
        },
        "plots.md": {
            "ax = pathlift.plot.length_histogram(net)":
                lambda r: r.ns["net"].is_unrolled is False,
            "ax = pathlift.plot.kernel_spectrum(net, theta, k=10)":  # the full spectrum: d <= 1000
                lambda r: max(len(line.get_xdata()) for line in r.value.get_lines()) == 402,
        },
    }


# {doc: {a text the block holds: {key of `info --json`: value}}}
CLAIMS_JSON = {
    "file-format.md": {
        '"num_params": 1': {"d": 1, "edges": 3},
        '"nodes": 4': {"P": 4, "d": 4, "h": 1, "inputs": 1, "outputs": 2},
        '"name": "designated output': {"d": 10, "h": 2, "P": 15, "bias": 1, "outputs": 2},
    },
    "layers.md": {  # 61 nodes: 16 inputs, 2 biases, 32 relu and 8 max nodes, 3 outputs
        '"format": "pathlift-layers"': {"nodes": 61, "edges": 291, "d": 47, "inputs": 18,
                                        "bias": 2, "hidden": 40, "outputs": 3, "layers": 6},
    },
}


# --- Running the blocks -------------------------------------------------------------------------

def shell_commands(text):
    """The commands of a shell block: a line ending in a backslash, or inside an open quote,
    goes on to the next; lines that are only comments are dropped."""
    commands, pending = [], ""
    for line in text.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        if pending.endswith("\\"):
            continue
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # an open quote
            continue
        if words:
            commands.append(pending)
        pending = ""
    assert not pending, f"unfinished command: {pending}"
    return commands


def words_of(command):
    return shlex.split(command, comments=True)


def key_of(command):
    return " ".join(words_of(command))


class Shell:
    """Runs the shell commands of one document from its scratch clone."""

    def __init__(self, clone, env, build_dir):
        self.clone, self.env, self.build_dir = clone, env, build_dir
        self.runs = 0

    def run(self, where, commands, expect_failure=()):
        """Runs the commands in one bash; stops after the first whose exit status is not the
        expected one (0, or non-zero for the indices in expect_failure). Returns
        [SimpleNamespace(command, rc, out, err)] for those that ran."""
        self.runs += 1
        logs = self.clone.parent / f"logs{self.runs}"
        logs.mkdir()
        script = []
        for i, command in enumerate(commands):
            if self.built(where, command):
                command = ":"
            ok = '[ "$rc" != 0 ]' if i in expect_failure else '[ "$rc" = 0 ]'
            script.append(f"{{ {command}\n}} >{logs}/{i}.out 2>{logs}/{i}.err </dev/null\n"
                          f"rc=$?; echo $rc >{logs}/{i}.rc; {ok} || exit 0\n")
        (logs / "script.sh").write_text("".join(script))
        subprocess.run(["bash", str(logs / "script.sh")], cwd=self.clone, env=self.env,
                       timeout=300, check=True)
        results = []
        for i, command in enumerate(commands):
            if not (logs / f"{i}.rc").exists():
                break
            results.append(types.SimpleNamespace(
                command=command, rc=int((logs / f"{i}.rc").read_text()),
                out=(logs / f"{i}.out").read_text(), err=(logs / f"{i}.err").read_text()))
        return results

    def built(self, where, command):
        """Whether the command builds the project in build/, checked against the build under
        test (which it made) instead of run."""
        words = words_of(command)
        configure = words[:5] == ["cmake", "-S", ".", "-B", "build"]
        if not (configure or words[:3] == ["cmake", "--build", "build"]):
            return False
        assert not re.search(r"[;&|]", command), f"{where}: `{command}`: one build command a line"
        if configure:
            cache = (self.build_dir / "CMakeCache.txt").read_text()
            for word in words[5:]:
                name = word[2:].partition("=")[0]
                assert word.startswith("-D") and re.search(rf"^{re.escape(name)}:", cache, re.M), \
                    f"{where}: {word}: the build under test has no {name}"
            return True
        targets = []
        if "--target" in words:
            for word in words[words.index("--target") + 1:]:
                if word.startswith("-"):
                    break
                targets.append(word)
        listed = subprocess.run(["cmake", "--build", str(self.build_dir), "--target", "help"],
                                capture_output=True, text=True, check=True).stdout
        for target in targets:
            assert re.search(rf"^\.\.\. {re.escape(target)}(?:\s|$)", listed, re.M), \
                f"{where}: the build has no target {target}"
        return True


def check_shell(block, shell, claims):
    results = shell.run(block.where, shell_commands(block.text))
    for r in results:
        assert r.rc == 0, \
            f"{block.where}: `{r.command}` exited {r.rc}:\n{r.out[-2000:]}{r.err[-2000:]}"
        check = claims.pop(key_of(r.command), None)
        if check is not None:
            assert holds(check(r, shell.clone)), f"{block.where}: `{r.command}`: {r.out}"


def transcript(text):
    """[(command, what the block shows it prints)]: a `$ ` line starts a command (going on while
    a quote is open or the line ends in a backslash), the lines up to the next `$ ` are its
    output."""
    items = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        assert lines[i].startswith("$ "), lines[i]
        command = lines[i][2:]
        while command.endswith("\\") or not complete(command):
            i += 1
            command += "\n" + lines[i]
        i += 1
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        items.append((command, "\n".join(shown)))
    return items


def complete(command):
    try:
        shlex.split(command, comments=True)
        return True
    except ValueError:
        return False


def check_transcript(block, shell):
    items = transcript(block.text)
    failing = {i for i, (_, shown) in enumerate(items) if re.search(r"^error:", shown, re.M)}
    results = shell.run(block.where, [command for command, _ in items], failing)
    assert len(results) == len(items), f"{block.where}: `{results[-1].command}` exited " \
        f"{results[-1].rc}: {results[-1].err}"
    for i, (r, (_, shown)) in enumerate(zip(results, items)):
        assert (r.rc != 0) == (i in failing), f"{block.where}: `{r.command}` exited {r.rc}: {r.err}"
        assert shows(shown, r.out + r.err), \
            f"{block.where}: `{r.command}` printed\n{r.out}{r.err}\nnot\n{shown}"


def check_synopsis(block, cli_path):
    for usage in re.split(r"\n(?=pathlift )", block.text.strip()):
        command = usage.split()[1]
        text = subprocess.run([str(cli_path), command, "--help"], capture_output=True, text=True,
                              timeout=60, check=True).stdout
        for option in re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", usage):
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), \
                f"{block.where}: `pathlift {command} --help` has no {option}"


def check_json(block, clone, cli_path, pathlift, claims):
    document = json.loads(block.text)
    named = re.findall(r"`(tests/data/[\w.-]+\.json)`", block.before)
    if named:
        assert document == json.loads((ROOT / named[-1]).read_text()), \
            f"{block.where} differs from {named[-1]}, which the text says it is"
    if document.get("format") not in ("pathlift-network", "pathlift-layers"):
        return
    path = clone / f"block{block.line}.json"
    path.write_text(block.text)
    proc = subprocess.run([str(cli_path), "info", "--network", str(path), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{block.where}: pathlift info: {proc.stderr}"
    info = json.loads(proc.stdout)
    model = pathlift.load_model(str(path))
    assert (model.d, model.num_edges) == (info["d"], info["edges"]), block.where
    for text in [t for t in claims if t in block.text]:
        expected = claims.pop(text)
        assert {k: info[k] for k in expected} == expected, block.where


class Python:
    """Runs the Python blocks of one document in one namespace."""

    def __init__(self, doc, pathlift, claims):
        self.doc, self.pathlift, self.claims = doc, pathlift, claims
        self.ns = {"__name__": "__main__"}
        self.seen = defaultdict(list)
        self.met = set()

    def run(self, block):
        tree = ast.parse(block.text)
        comments = {t.start[0]: t.string for t in
                    tokenize.generate_tokens(io.StringIO(block.text).readline)
                    if t.type == tokenize.COMMENT}
        statements = [(s, ast.get_source_segment(block.text, s)) for s in tree.body]
        ast.increment_lineno(tree, block.line)  # tracebacks name the line of the document
        for stmt, source in statements:
            raises = self.expected_raise(stmt, comments, block)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                if raises:
                    with pytest.raises(raises[0]) as error:
                        self.execute(stmt, block)
                    assert shows(raises[1], str(error.value), anchored=False), \
                        f"{block.where}: `{source}` raised {error.value!r}, not {raises[1]!r}"
                    continue
                value = self.execute(stmt, block)
            check = self.claims.get(source)
            if check is not None:
                self.met.add(source)
                r = types.SimpleNamespace(value=value, printed=printed.getvalue(), ns=self.ns,
                                          seen=list(self.seen[source]))
                assert holds(check(r)), f"{block.where}: `{source}` gave {value!r}"
            self.seen[source].append(value)

    def execute(self, stmt, block):
        filename = f"docs/{self.doc}"
        if isinstance(stmt, ast.Expr):
            return eval(compile(ast.Expression(stmt.value), filename, "eval"), self.ns)
        exec(compile(ast.Module([stmt], type_ignores=[]), filename, "exec"), self.ns)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name):
            return self.ns[stmt.targets[0].id]
        return None

    def expected_raise(self, stmt, comments, block):
        """(exception class, message) when the statement's comment starts with an exception's
        name (`# TooLarge: unrolling ...`, going on in the comment lines right below)."""
        lines = block.text.splitlines()
        last = stmt.end_lineno - block.line  # the tree's lines are the document's
        m = re.match(r"#\s*([A-Za-z_]\w*):\s*(.*)", comments.get(last, ""))
        if not m:
            return None
        error = getattr(builtins, m[1], None) or getattr(self.pathlift, m[1], None)
        if not (isinstance(error, type) and issubclass(error, BaseException)):
            return None
        message = [m[2]]
        line = last + 1
        while line <= len(lines) and lines[line - 1].lstrip().startswith("#"):
            message.append(comments[line].lstrip("#").strip())
            line += 1
        return error, " ".join(message)

    def doctest(self, block):
        source = [line[4:] for line in block.text.splitlines() if line.startswith((">>> ", "... "))]
        shown = "\n".join(line for line in block.text.splitlines()
                          if not line.startswith((">>> ", "... ")))
        value = eval(compile("\n".join(source), f"docs/{self.doc}", "eval"), self.ns)
        keys = list(value)
        pairs = re.findall(r"'(\w+)': ('(?:[^'\\]|\\.)*'|[^,{}]+)", shown)
        assert pairs, block.where
        assert [k for k, _ in pairs] == sorted((k for k, _ in pairs), key=keys.index), \
            f"{block.where}: the keys are not in the order shown: {keys}"
        for key, text in pairs:
            text = text.strip()
            if text in ("'...'", "..."):
                continue
            expected = ast.literal_eval(text)
            if isinstance(expected, float):
                assert as_shown(value[key], text), \
                    f"{block.where}: {key} = {value[key]}, not {text}"
            else:
                assert value[key] == expected, f"{block.where}: {key} = {value[key]!r}, not {text}"


@pytest.fixture
def fresh_clone(tmp_path, build_dir, cli_path):
    """(scratch clone, environment for its shell commands)."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for entry in ROOT.iterdir():
        if not (entry.name.startswith((".", "build")) or entry.name == "docs"):
            (clone / entry.name).symlink_to(entry)
    (clone / "docs").mkdir()
    (clone / "build").symlink_to(build_dir)
    (tmp_path / "home").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pathlift").symlink_to(cli_path)
    (tmp_path / "bin" / "python3").symlink_to("/usr/bin/python3")
    env = dict(os.environ, HOME=str(tmp_path / "home"), MPLBACKEND="Agg",
               PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    return clone, env


# --- The tests ----------------------------------------------------------------------------------

def test_every_block_is_run_or_marked():
    problems = []
    for path in DOCS:
        found = blocks(path)
        markers = len(MARKER.findall(path.read_text()))
        if markers != sum(b.marker is not None for b in found):
            problems.append(f"docs/{path.name}: a marker not on the line right before a block")
        for b in found:
            if b.kind is None:
                problems.append(f"{b.where}: a ```{b.lang} block this test does not run: run it "
                                "(teach the test) or mark it <!-- not run: why -->")
            if b.marker and b.marker[0] == "covered by":
                file, _, test = b.marker[1].partition("::")
                if not ((ROOT / file).is_file() and f"def {test}(" in (ROOT / file).read_text()):
                    problems.append(f"{b.where}: covered by {b.marker[1]}, which is not there")
    assert not problems, "\n".join(problems)
    assert sum(len(blocks(p)) for p in DOCS) >= 40  # 45 when this was written


@pytest.mark.parametrize("doc", [p.name for p in DOCS
                                 if any(b.kind != "marked" for b in blocks(p))])
def test_doc_blocks_run_as_written(doc, fresh_clone, cli_path, build_dir, monkeypatch, request):
    found = blocks(ROOT / "docs" / doc)
    pathlift = None
    if any(b.kind in ("python", "doctest", "json") for b in found):
        pathlift = request.getfixturevalue("pathlift_module")
    if any(b.kind in ("python", "doctest") for b in found):
        pytest.importorskip("torch")
        pytest.importorskip("torchvision")
    clone, env = fresh_clone
    monkeypatch.chdir(clone)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    shell = Shell(clone, env, build_dir)
    shell_claims = dict(claims_shell().get(doc, {}))
    json_claims = dict(CLAIMS_JSON.get(doc, {}))
    python = Python(doc, pathlift, claims_python().get(doc, {}) if pathlift else {})
    try:
        for b in found:
            if b.kind == "sh":
                check_shell(b, shell, shell_claims)
            elif b.kind == "transcript":
                check_transcript(b, shell)
            elif b.kind == "synopsis":
                check_synopsis(b, cli_path)
            elif b.kind == "json":
                check_json(b, clone, cli_path, pathlift, json_claims)
            elif b.kind == "python":
                python.run(b)
            elif b.kind == "doctest":
                python.doctest(b)
            else:
                assert b.kind == "marked", f"{b.where}: neither run nor marked"
    finally:
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    unmet = [*shell_claims, *json_claims, *(set(python.claims) - python.met)]
    assert not unmet, f"claims about docs/{doc} that met no block: {unmet}"
