"""The repository's own rules, checked on the tree (docs/maths-to-code.md, "one home per concept").

The library never names a CLI flag or command (the CLI and Python add their own hints), no
source file grows past the size where two concepts share it, and nothing points outside the
repository.
"""

import pathlib
import re

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


def test_no_library_file_is_over_700_lines():
    long = {str(p.relative_to(ROOT)): n for p in LIBRARY
            if (n := len(p.read_text().splitlines())) > 700}
    assert not long, long


def test_nothing_points_outside_the_repository():
    outside = re.compile(r"MATH\.md|\.\./shared")
    hits = [str(p.relative_to(ROOT)) for p in tracked_text_files()
            if p.name != "test_repository.py" and outside.search(p.read_text(errors="replace"))]
    assert not hits, hits
