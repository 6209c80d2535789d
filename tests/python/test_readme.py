"""README.md's examples run as written: every `build/cli/pathlift ...` line of its shell blocks
(from a scratch directory, the build under test in place of build/) and its Python blocks,
executed in order in one namespace, with their printed claims checked."""
import contextlib
import io
import pathlib
import re
import shlex
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()

# The one README line whose output is a 400 MB file: run on a smaller network of the same kind.
SUBSTITUTE = {"jacobian --ff 5,64,64,64,2 -o J.npz": "jacobian --ff 5,16,16,16,2 -o J.npz"}


def blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def cli_lines():
    lines = []
    for block in blocks("sh"):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("build/cli/pathlift "):
                lines.append(line[len("build/cli/pathlift "):])
    return lines


def test_readme_has_examples():
    assert len(cli_lines()) >= 8 and len(blocks("python")) >= 2
    assert "./scripts/test.sh" in README and "./scripts/quickstart.sh" in README
    assert (ROOT / "docs" / "figures" / "paper_experiment.png").exists()
    assert "docs/figures/paper_experiment.png" in README


def test_readme_cli_examples(cli_path, tmp_path):
    # in order: `convert -o fig1.json` comes before `check --network fig1.json`
    for line in cli_lines():
        line = SUBSTITUTE.get(line, line)
        # paths in the repository (tests/data/...) are read from its root
        cwd = ROOT if "tests/data/" in line else tmp_path
        proc = subprocess.run([str(cli_path), *shlex.split(line)], capture_output=True, text=True,
                              cwd=cwd, timeout=300)
        assert proc.returncode == 0, f"pathlift {line}: {proc.stderr}"
        if line == "info --ff 5,64,64,64,2 --json":
            assert '"P": 3154050' in proc.stdout.replace(" ", "").replace('"P":', '"P": ')
        if line.startswith("rank --ff 5,16,16,2 --json"):
            assert '"rank_B": 370' in proc.stdout and '"rank_J": 370' in proc.stdout


def test_readme_python_examples(pathlift_module):
    pytest.importorskip("torch")
    namespace = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks("python"):
            exec(compile(block, "README.md", "exec"), namespace)
    printed = out.getvalue().splitlines()
    # the claims in the comments: P = 98, rank(B) = d - h, L Phi == model(X)
    assert printed[0].endswith(" 98")
    assert printed[1] == "True" and printed[2] == "True"
    # the functional dimension on X: d - h = 66 - 8, certified
    assert printed[4] == "certified 58 58"
    # the CNN block: forward equals the model, rank(B) = d - h_sym = 359 certified
    assert printed[5] == "True"
    assert printed[6] == "359 359 verified"
    # the training block: dPhi as a torch sparse CSR tensor, P x d
    assert printed[8] == "torch.sparse_csr (98, 66)"
    # the generalization bound of the MLP 5 -> 8 -> 2: depth 2, n = 32 samples
    assert printed[9] == "2 32 True True"


def test_readme_cpp_example_is_the_consumer_built_by_the_tests():
    """The C++ block is tests/consumer/main.cpp's readme_example(), built against the installed
    package and run by the ctest consumer.build_and_run: the same lines, up to indentation."""
    consumer = (ROOT / "tests" / "consumer" / "main.cpp").read_text()
    marked = re.search(r"// README begin\n(.*?)\n\s*// README end", consumer, flags=re.S).group(1)
    (block,) = blocks("cpp")
    def lines(text):  # white space aside (clang-format aligns comments its own way)
        return [" ".join(line.split()) for line in text.splitlines() if line.strip()]

    shown = [line for line in lines(block) if not line.startswith("#include")]
    assert shown == lines(marked)
    assert "#include <pathlift/pathlift.hpp>" in block and "#include <pathlift/pathlift.hpp>" in consumer
