"""The CLI of issue 2: --help, --version, `info` (text and --json) and `convert`, and errors.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_cli_info.py
"""
import json
import math
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

INFO_KEYS = ["nodes", "inputs", "hidden", "outputs", "d", "h", "P", "nnz", "max_path_length",
             "length_histogram"]
BUILTINS = ["fig1", "sketch-h0", "sketch-h1", "ff:3,4,2", "ff-nobias:2,3,3,1",
            "random-dag:9,0.4,3"]


def info_json(run_cli, *args):
    result = run_cli("info", "--json", *args)
    assert result.returncode == 0, result
    return json.loads(result.stdout)


def expect_error(result, *culprits):
    """Exit code != 0, stderr starts with 'error: ' and names the culprits, no crash."""
    assert result.returncode not in (0, -6, -11, 134, 139), result  # not success, abort, segv
    assert result.returncode > 0, result
    assert result.stderr.startswith("error: "), result
    assert "Traceback" not in result.stderr and "terminate called" not in result.stderr, result
    for culprit in culprits:
        assert culprit in result.stderr, (culprit, result)


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(pathlift\s+VERSION\s+([0-9.]+)", text).group(1)


def ff_paths(r, widths, q, bias=True):
    """docs/conventions.md#feed-forward: P = q (r prod w + sum_l prod_{k>=l} w_k + 1) with
    biases, q r prod w without."""
    prod = math.prod(widths)
    inner = r * prod
    if bias:
        inner += sum(math.prod(widths[l:]) for l in range(len(widths))) + 1
    return q * inner


# --- help and version -------------------------------------------------------------------------

def test_help_lists_the_commands(run_cli):
    result = run_cli("--help")
    assert result.returncode == 0, result
    for command in ("info", "convert"):
        assert re.search(rf"^\s+{command}\s", result.stdout, re.M), result.stdout


def test_info_help_lists_the_network_options(run_cli):
    result = run_cli("info", "--help")
    assert result.returncode == 0, result
    for option in ("--network", "--ff", "--no-bias", "--example", "--json"):
        assert option in result.stdout


def test_version(run_cli):
    result = run_cli("--version")
    assert result.returncode == 0, result
    assert result.stdout.strip() == f"pathlift {project_version()}"


def test_no_command_is_an_error(run_cli):
    result = run_cli()
    assert result.returncode != 0
    assert "info" in result.stdout + result.stderr


# --- info ----------------------------------------------------------------------------------------

def test_info_default_is_fig1(run_cli):
    result = run_cli("info")
    assert result.returncode == 0, result
    text = result.stdout
    assert re.search(r"^P\s+5\b", text, re.M), text
    assert re.search(r"^d\s+7\b", text, re.M), text
    assert re.search(r"^h\s+2\b", text, re.M), text
    assert re.search(r"^d - h\s+5\b", text, re.M), text
    assert re.search(r"^nnz\(B\)\s+9\b", text, re.M), text
    assert re.search(r"^max path length\s+2\b", text, re.M), text
    assert re.search(r"1: 1, 2: 4", text), text
    # |I| |H| |O| on the nodes line.
    assert re.search(r"6: 3 inputs \(1 bias\), 2 hidden, 1 output", text), text
    assert run_cli("info", "--example", "fig1").stdout == text


def test_info_json_keys_and_fig1_values(run_cli):
    j = info_json(run_cli)
    for key in INFO_KEYS:
        assert key in j, key
    assert j["nodes"] == 6
    assert j["inputs"] == 3
    assert j["hidden"] == 2
    assert j["outputs"] == 1
    assert j["d"] == 7
    assert j["h"] == 2
    assert j["P"] == 5
    assert j["nnz"] == 9
    assert j["max_path_length"] == 2
    assert {int(k): v for k, v in j["length_histogram"].items()} == {1: 1, 2: 4}
    assert j["d"] - j["h"] == 5


def test_info_json_issue_feed_forward(run_cli):
    j = info_json(run_cli, "--ff", "5,64,64,64,2")
    assert j["P"] == 3154050 == ff_paths(5, [64, 64, 64], 2)
    assert j["d"] == 8834
    assert j["h"] == 192
    assert j["nnz"] == 12607746
    assert j["max_path_length"] == 4
    assert sum(j["length_histogram"].values()) == j["P"]


def test_info_json_more_than_2_to_the_64_paths(run_cli):
    widths = [64] * 12
    shape = ",".join(map(str, [10, *widths, 2]))
    result = run_cli("info", "--json", "--ff", shape)
    assert result.returncode == 0, result
    j = json.loads(result.stdout)
    exact = ff_paths(10, widths, 2)  # Python integers: exact
    assert exact > 2**64
    assert j["P_exact"] is False
    assert j["log10_P"] == pytest.approx(math.log10(exact), abs=1e-9)
    # Given as a double, not wrapped around 2^64.
    assert j["P"] == pytest.approx(float(exact), rel=1e-9)
    assert j["max_path_length"] == 13
    # The text form says so too.
    text = run_cli("info", "--ff", shape)
    assert text.returncode == 0, text
    assert "2^64" in text.stdout
    assert re.search(r"log10 P = 23\.0172", text.stdout), text.stdout


def test_info_no_bias(run_cli):
    j = info_json(run_cli, "--ff", "3,4,5,2", "--no-bias")
    assert j["P"] == ff_paths(3, [4, 5], 2, bias=False) == 120
    assert j["d"] == 3 * 4 + 4 * 5 + 5 * 2
    assert j["h"] == 9
    assert j["inputs"] == 3
    assert j["nnz"] == 3 * 120
    with_bias = info_json(run_cli, "--ff", "3,4,5,2")
    assert with_bias["P"] == ff_paths(3, [4, 5], 2)
    assert with_bias["inputs"] == 3 + 3


def test_info_example_sketch_h1(run_cli):
    j = info_json(run_cli, "--example", "sketch-h1")
    assert (j["P"], j["d"], j["h"]) == (6, 6, 1)
    assert (j["inputs"], j["hidden"], j["outputs"]) == (2, 1, 2)
    j = info_json(run_cli, "--example", "sketch-h0")
    assert (j["P"], j["d"], j["h"]) == (6, 5, 0)


def test_info_network_file(run_cli):
    j = info_json(run_cli, "--network", DATA / "fig1.json")
    assert (j["P"], j["d"], j["h"], j["nnz"]) == (5, 7, 2, 9)
    j = info_json(run_cli, "--network", DATA / "designated.json")
    assert (j["P"], j["d"], j["h"]) == (15, 10, 2)
    assert j["outputs"] == 2


@pytest.mark.parametrize("name", BUILTINS)
def test_convert_then_info_gives_the_same_counts(run_cli, tmp_path, name):
    out = tmp_path / "net.json"
    result = run_cli("convert", "--example", name, "-o", out)
    assert result.returncode == 0, result
    doc = json.loads(out.read_text())
    assert doc["format"] == "pathlift-network" and doc["version"] == 1
    from_file = info_json(run_cli, "--network", out)
    builtin = info_json(run_cli, "--example", name)
    for key in INFO_KEYS:
        assert from_file[key] == builtin[key], key


def test_convert_to_stdout(run_cli):
    result = run_cli("convert", "--example", "fig1", "-o", "-")
    assert result.returncode == 0, result
    doc = json.loads(result.stdout)
    assert doc["nodes"] == ["a", "c", "g", "d", "f", "h"]
    assert doc["edges"][6] == ["g", "h"]
    assert doc["bias"] == ["g"]


def test_convert_writes_the_weights_of_theta_or_seed(run_cli, tmp_path):
    """--theta F: those numbers, exactly; --seed N: the theta every command draws for N."""
    import numpy as np
    theta = np.linspace(-1.5, 2.25, 26) / 3.0  # d = 3*4 + 4 + 4*2 + 2 for --ff 3,4,2
    np.save(tmp_path / "theta.npy", theta)
    out = tmp_path / "net.json"
    r = run_cli("convert", "--ff", "3,4,2", "--theta", tmp_path / "theta.npy", "-o", out)
    assert r.returncode == 0, r
    assert "weights from --theta" in r.stderr
    assert json.loads(out.read_text())["weights"] == theta.tolist()
    r = run_cli("convert", "--ff", "3,4,2", "--seed", "7", "-o", out)
    assert r.returncode == 0, r
    from_file = run_cli("norm", "--network", out, "--json", check=True)
    drawn = run_cli("norm", "--ff", "3,4,2", "--seed", "7", "--json", check=True)
    assert json.loads(from_file.stdout)["norms"] == json.loads(drawn.stdout)["norms"]
    wrong = tmp_path / "short.npy"
    np.save(wrong, theta[:5])
    r = run_cli("convert", "--ff", "3,4,2", "--theta", wrong, "-o", out)
    assert r.returncode == 2 and "short.npy" in r.stderr, r


# --- errors ---------------------------------------------------------------------------------------

def test_error_unknown_example(run_cli):
    expect_error(run_cli("info", "--example", "nope"), "nope", "fig1")


@pytest.mark.parametrize("shape,culprit", [("5,0,2", "'0'"), ("abc", "'abc'"), ("5", "'5'"),
                                           ("5,,2", "entry 1")])
def test_error_bad_ff(run_cli, shape, culprit):
    expect_error(run_cli("info", "--ff", shape), culprit)


def test_error_missing_file(run_cli, tmp_path):
    missing = tmp_path / "missing.json"
    expect_error(run_cli("info", "--network", missing), str(missing))


def test_error_invalid_json(run_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "pathlift-network", "version": 1, "nodes": [')
    expect_error(run_cli("info", "--network", bad), str(bad), "invalid JSON")


def test_error_bad_field(run_cli, tmp_path):
    bad = tmp_path / "field.json"
    bad.write_text('{"format": "pathlift-network", "version": 1, "nodes": ["a", "b"], '
                   '"edges": [["a", "b"], ["a", "zz"]]}')
    expect_error(run_cli("info", "--network", bad), '"edges"[1][1]', "zz")


def test_error_number_too_large(run_cli, tmp_path):
    bad = tmp_path / "big.json"
    bad.write_text('{"format": "pathlift-network", "version": 1, "nodes": ["a", "b"], '
                   '"edges": [["a", "b"]], "weights": [1e400]}')
    expect_error(run_cli("info", "--network", bad), "1e400")


def test_error_cyclic_network(run_cli):
    expect_error(run_cli("info", "--network", DATA / "cycle.json"), "cycle", "a -> d -> c -> a")


def test_error_no_bias_without_ff(run_cli):
    expect_error(run_cli("info", "--no-bias"), "--no-bias")


def test_error_convert_unwritable(run_cli, tmp_path):
    expect_error(run_cli("convert", "--example", "fig1", "-o", tmp_path / "no-dir" / "x.json"),
                 "no-dir")


# --- docs/file-format.md ----------------------------------------------------------------------

def test_file_format_doc_examples_are_the_test_data_files(run_cli, tmp_path):
    """Every JSON example of docs/file-format.md is a valid network, and is one of tests/data."""
    doc = (ROOT / "docs" / "file-format.md").read_text()
    blocks = re.findall(r"```json\n(.*?)```", doc, re.S)
    assert len(blocks) >= 3
    data = {name: json.loads((DATA / name).read_text())
            for name in ("fig1.json", "counted.json", "designated.json", "max_pool_v2.json")}
    for i, block in enumerate(blocks):
        path = tmp_path / f"example{i}.json"
        path.write_text(block)
        result = run_cli("info", "--json", "--network", path)
        assert result.returncode == 0, (block, result)
        assert json.loads(block) in data.values(), block


def conv_chain(path, depth, channels, side):
    """A chain of depth x (conv 3x3 with bias, ReLU), without weights, as pathlift-layers JSON."""
    layers = [{"name": "input", "kind": "input"}]
    offset = 0
    for i in range(depth):
        layers.append({"name": f"conv{i}", "kind": "conv", "inputs": [len(layers) - 1],
                       "out_channels": channels, "kernel": [3, 3], "padding": [1, 1],
                       "weight_offset": offset, "bias_offset": offset + channels * channels * 9})
        offset += channels * channels * 9 + channels
        layers.append({"name": f"relu{i}", "kind": "activation", "inputs": [len(layers) - 1],
                       "activation": "relu"})
    path.write_text(json.dumps({"format": "pathlift-layers", "version": 1,
                                "input_shape": [channels, side, side], "layers": layers,
                                "outputs": [len(layers) - 1], "num_params": offset}))


def test_info_skips_a_histogram_whose_work_grows_as_the_square_of_the_depth(run_cli, tmp_path):
    """Issue 50: info on a 400-layer, 16-channel conv chain at 64x64 ran for over 633 s: each
    layer's sums are split by path length, and the biases start paths at every layer, so the
    histogram costs depth^2 / 2 counting passes. Beyond 2e11 multiply-adds it is skipped with the
    reason; P and the sum of the path lengths still come (one pass in dual numbers), in seconds."""
    import time
    deep = tmp_path / "deep.json"
    conv_chain(deep, 2000, 4, 32)
    start = time.monotonic()
    j = json.loads(run_cli("info", "--network", deep, "--json", check=True).stdout)
    assert time.monotonic() - start < 120
    assert j["length_histogram"] is None and j["max_path_length"] is None
    assert "multiply-adds" in j["length_histogram_refused"]
    assert "memory" not in j["length_histogram_refused"]
    assert j["log10_P"] > 3000 and j["nnz"] is None or j["nnz"] > 0
    text = run_cli("info", "--network", deep, check=True).stdout
    assert "path lengths     not computed: the path-length histogram" in text
    assert "max path length  not computed" in text
    # A shallow chain keeps its histogram.
    shallow = tmp_path / "shallow.json"
    conv_chain(shallow, 30, 2, 8)
    j = json.loads(run_cli("info", "--network", shallow, "--json", check=True).stdout)
    assert j["length_histogram"] is not None
    assert j["max_path_length"] == 31  # input -> 30 ReLU nodes -> the output node


def test_info_says_when_the_exporter_folded_a_batchnorm(run_cli, tmp_path):
    """Issue 51: an ONNX export with BatchNorm folded by the exporter (d smaller than the PyTorch
    model's) was not mentioned by info. Every command prints the importer's warnings on stderr;
    info --json lists them."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(0)
    folded = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                           nn.Linear(4 * 4 * 4, 2)).eval()
    plain = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64, 2)).eval()
    for name, model in (("folded", folded), ("plain", plain)):
        torch.onnx.export(model, torch.zeros(1, 1, 6, 6), str(tmp_path / f"{name}.onnx"),
                          input_names=["x"], output_names=["y"], opset_version=13)
    r = run_cli("info", "--onnx", tmp_path / "folded.onnx", "--json", check=True)
    j = json.loads(r.stdout)
    assert len(j["warnings"]) == 1 and "BatchNorm folded" in j["warnings"][0]
    assert r.stderr.count("warning: ONNX node") == 1
    assert j["d"] == 4 * 9 + 4 + 64 * 2 + 2  # the BatchNorm's 8 parameters are gone
    norm = run_cli("norm", "--onnx", tmp_path / "folded.onnx", check=True)
    assert "warning: ONNX node" in norm.stderr
    r = run_cli("info", "--onnx", tmp_path / "plain.onnx", "--json", check=True)
    assert json.loads(r.stdout)["warnings"] == [] and "warning" not in r.stderr
