"""Memory that the limit sees (issue 19, item 5): the path-length histogram of `info` is bounded
and refused alone, a limit above the physical memory is refused with both sizes, and the peak
resident memory of the big commands stays within --max-memory (scripts/check-memory.sh)."""
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def chain_with_skips(path, n):
    """Nodes 0 -> 1 -> ... -> n-1 and i -> i + 2: the histograms of all the nodes take O(n^2)."""
    edges = [[i, i + 1] for i in range(n - 1)] + [[i, i + 2] for i in range(n - 2)]
    path.write_text(json.dumps({"format": "pathlift-network", "version": 1, "nodes": n,
                                "edges": edges, "outputs": [n - 1]}))
    return path


def test_info_on_a_deep_network_refuses_the_histogram_alone(run_cli):
    # 20,000 layers of width 2 with biases: paths of every length up to 20,001 edges, so the
    # histograms of all the nodes would take O(nodes x depth); only their live part is held.
    # (A network file this deep would itself exceed the file bound of a 1M limit: --ff.)
    ff = ",".join(["2"] * 20001 + ["1"])
    r = run_cli("info", "--ff", ff, "--max-memory", "1M")
    assert r.returncode == 0, r
    assert "max path length  20001" in r.stdout and "P                ~" in r.stdout
    assert "path lengths     not computed: the path-length histogram (60004 nodes" in r.stdout
    # The work's limit is what the 1 MiB leaves once the network is built.
    assert "over the memory limit of" in r.stdout
    assert "what --max-memory leaves beside the" in r.stdout
    j = json.loads(run_cli("info", "--ff", ff, "--max-memory", "1M", "--json", check=True).stdout)
    assert j["length_histogram"] is None and "memory limit" in j["length_histogram_refused"]
    assert j["max_path_length"] == 20001


def test_python_count_paths_of_a_long_chain_refuses_the_histogram_alone(pathlift_module):
    # 40,000 nodes used to need ~19 GB for the histogram; its live part is ~3 MB.
    pl = pathlift_module
    n = 40000
    edges = [(i, i + 1) for i in range(n - 1)] + [(i, i + 2) for i in range(n - 2)]
    counts = pl.count_paths(pl.Network(edges), max_memory=1 << 20)
    assert "40000 nodes" in counts.length_histogram_refused
    assert "memory limit" in counts.length_histogram_refused
    assert counts.max_path_length == n - 1 and len(counts.length_histogram) == 0


def test_info_histogram_of_a_chain_within_the_limit(run_cli, tmp_path):
    net = chain_with_skips(tmp_path / "chain.json", 2000)
    # 4 MiB: the process's network (about 3 MiB resident) and the histogram's live part.
    j = json.loads(run_cli("info", "--network", net, "--max-memory", "4M", "--json",
                           check=True).stdout)
    hist = j["length_histogram"]
    assert hist["1999"] == 1 and hist["1000"] == 1000 and "999" not in hist
    assert "length_histogram_refused" not in j


def test_limit_above_physical_memory_is_refused(run_cli, tmp_path):
    r = run_cli("lift", "--ff", "3,4,2", "--max-memory", "1000T", "-o", tmp_path / "phi.npy")
    assert r.returncode == 2, r
    assert "above the physical memory of" in r.stderr and "1000.00 TiB" in r.stderr, r
    assert not (tmp_path / "phi.npy").exists()


def test_python_limit_above_physical_memory(pathlift_module):
    pl = pathlift_module
    with pytest.raises(ValueError, match="above the physical memory"):
        pl.effective_max_memory(1 << 60)
    net = pl.feed_forward(3, [4], 2)
    with pytest.raises(ValueError, match="above the physical memory"):
        pl.jacobian(net, [1.0] * net.d, max_memory=1 << 60)
    counts = pl.count_paths(net, max_memory=1 << 10)
    assert counts.length_histogram_refused == "" and sum(counts.length_histogram) == counts.paths


@pytest.mark.skipif(shutil.which("/usr/bin/time") is None, reason="GNU time is not installed")
def test_peak_memory_within_the_limit(cli_path):
    # The smallest size (64M, networks of 10-200 MB of results; a small ONNX Gemm model and a
    # pathlift-layers conv net, each for info, norm, kernel --diag and lift): a few seconds.
    r = subprocess.run([str(ROOT / "scripts" / "check-memory.sh"), "--quick", str(cli_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("\n") == 1 + 9 + 8 and " NO" not in r.stdout, r.stdout


def gemm_onnx(path, n_in, n_out):
    """scripts/gemm_onnx.py's Gemm model (PyTorch's Linear(n_in, n_out) as exported)."""
    pytest.importorskip("onnx", reason="onnx (Debian: python3-onnx) writes the model")
    sys.path.insert(0, str(ROOT / "scripts"))
    from gemm_onnx import gemm_onnx as write
    return write(path, n_in, n_out)


def peak_mb(args):
    """(exit status, stderr, peak resident memory in MB) of a command, by GNU time."""
    r = subprocess.run(["/usr/bin/time", "-f", "peak_kb %M", *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    peak = int(r.stderr.rsplit("peak_kb ", 1)[1].split()[0])
    return r.returncode, r.stderr, peak / 1024


@pytest.mark.skipif(shutil.which("/usr/bin/time") is None, reason="GNU time is not installed")
def test_onnx_import_stays_within_the_limit(cli_path, tmp_path):
    # 20.2 M parameters: an 80.6 MB file, 154 MiB as doubles. Under 200M the contract allows
    # 1.25 x 200 + 64 = 314 MiB; a reader holding the file, protobuf's copy of the raw data and
    # two copies of the doubles needs about 460 MiB (now: about 170 MiB).
    model = gemm_onnx(tmp_path / "gemm.onnx", 280_000, 72)
    bound = 1.25 * 200 + 64
    for command in (["info"], ["norm"]):
        rc, err, peak = peak_mb([cli_path, *command, "--onnx", model, "--max-memory", "200M"])
        assert rc == 0, (command, err)
        assert peak <= bound, (command, peak)
    # Under 120M the file itself (over 120M / 2) is refused from its size, before it is read.
    rc, err, peak = peak_mb([cli_path, "norm", "--onnx", model, "--max-memory", "120M"])
    assert rc == 2 and "too large to read" in err and "memory limit" in err, err
    assert peak <= 1.25 * 120 + 64


def test_passes_on_position_classes_are_estimated_on_them(run_cli, tmp_path):
    """Issue 50: the estimates counted a full column matrix and full tensors where the passes run
    on position classes (3x3 convolutions with padding: 9 classes a channel), so --max-memory
    refused work that fits: kernel --trace on conv 3 -> 64 -> 64 at 256x256 'needs 482 MiB' under
    256M, and peaks at 48 MB. Its trace equals the sum of the diagonal written under 1G."""
    layers = [{"name": "input", "kind": "input"}]
    offset, c = 0, 3
    for i in range(2):
        layers.append({"name": f"conv{i}", "kind": "conv", "inputs": [len(layers) - 1],
                       "out_channels": 64, "kernel": [3, 3], "padding": [1, 1],
                       "weight_offset": offset, "bias_offset": offset + 64 * c * 9})
        offset += 64 * c * 9 + 64
        c = 64
        layers.append({"name": f"relu{i}", "kind": "activation", "inputs": [len(layers) - 1],
                       "activation": "relu"})
    path = tmp_path / "conv.json"
    path.write_text(json.dumps({"format": "pathlift-layers", "version": 1,
                                "input_shape": [3, 256, 256], "layers": layers,
                                "outputs": [len(layers) - 1], "num_params": offset}))
    r = run_cli("kernel", "--trace", "--network", path, "--max-memory", "256M", "--json",
                check=True)
    trace = json.loads(r.stdout)["trace"]
    run_cli("kernel", "--diag", "--network", path, "-o", tmp_path / "d.npy", check=True)
    assert trace == pytest.approx(np.load(tmp_path / "d.npy").sum(), rel=1e-12)
