"""Inputs that cannot hurt pathlift (issue 19): a network file nested 100,000 arrays deep gets a
short error from Python and from the CLI (the error path used to print it with a recursive
printer and overflow the stack); thread counts beyond what the machine can run are refused with
the bound (libgomp used to abort or crash).

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_robust_inputs.py
"""
import pytest

DEEP = "[" * 100000 + "]" * 100000


def network_text(rest):
    return '{"format": "pathlift-network", "version": 1, "nodes": ["x", "y"], ' + rest + "}"


DEEP_FILES = [
    network_text('"edges": ' + DEEP),
    network_text('"edges": [["x", "y"]], "weights": [' + DEEP + "]"),
    network_text('"edges": [["x", "y"]], "activations": {"y": ' + DEEP + "}"),
]


@pytest.mark.parametrize("text", DEEP_FILES, ids=["edges", "weights", "activations"])
def test_deeply_nested_network_file_gets_a_short_error(pathlift_module, run_cli, tmp_path, text):
    with pytest.raises(pathlift_module.FormatError) as e:
        pathlift_module.parse_network(text)
    assert len(str(e.value)) < 300
    path = tmp_path / "deep.json"
    path.write_text(text)
    r = run_cli("info", "--network", path)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and len(r.stderr) < 400, r


def test_thread_counts_beyond_the_machine_are_refused(pathlift_module, run_cli):
    pl = pathlift_module
    with pytest.raises(ValueError, match=r"threads = 100000 is more than this machine allows: "
                                         r"at most \d+"):
        pl.skeleton(pl.fig1(), threads=100000)
    r = run_cli("lift", "--ff", "5,16,16,2", "--threads", "100000", "-o", "-")
    assert r.returncode == 2 and "at most" in r.stderr and r.stdout == "", r
    assert pl.skeleton(pl.fig1(), threads=64).shape == (5, 7)  # the bound itself runs
