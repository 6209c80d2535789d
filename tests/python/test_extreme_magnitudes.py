"""Every command on ff:2,3,3,3,3,3,3,3,3,3,3,1 with its weights scaled by 10^k (issue 19).

Phi_p is a product of up to 11 weights, so at k = -300 or 200 it lies far outside float64 and at
k = -40 or 10 partly. Each command must either return correct finite values (or log10 values)
or say overflow/underflow with exit 4; no "pass" next to a non-finite number, and no false
failure (exit 1: the identities hold at every theta). The references are independent of the
library's arithmetic: Python's Decimal with an unbounded exponent range (a forward pass and
the path sums of a DP over the network file), and log10|Phi| = B log10|theta| from the skeleton.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Context, Decimal

import numpy as np
import pytest

FF = "2,3,3,3,3,3,3,3,3,3,3,1"
SCALES = [-300, -40, -5, 0, 5, 10, 200]
CTX = Context(prec=40, Emin=-999999, Emax=999999)


@pytest.fixture(scope="module")
def case(tmp_path_factory, cli_path):
    import subprocess

    d = tmp_path_factory.mktemp("extreme")
    subprocess.run([cli_path, "convert", "--ff", FF, "-o", str(d / "net.json")], check=True,
                   capture_output=True)
    net = json.loads((d / "net.json").read_text())
    subprocess.run([cli_path, "skeleton", "--ff", FF, "-o", str(d / "B.npz")], check=True,
                   capture_output=True)
    import scipy.sparse

    B = scipy.sparse.load_npz(d / "B.npz").tocsr()
    rng = np.random.default_rng(7)
    base = rng.uniform(0.5, 1.5, B.shape[1]) * rng.choice([-1.0, 1.0], B.shape[1])
    X = rng.normal(size=(3, 2))
    np.save(d / "X.npy", X)
    return d, net, B, base, X


def theta_file(case, k):
    d, _, _, base, _ = case
    path = d / f"theta{k}.npy"
    np.save(path, base * 10.0**k)
    return path


def exact_theta(case, k):
    """theta as Decimals: base * 10^k exactly as the .npy holds it."""
    _, _, _, base, _ = case
    return [Decimal(float(x)) for x in base * 10.0**k]


def topo(net):
    return net["nodes"]  # convert writes nodes in a topological order


def exact_forward(case, k):
    _, net, _, _, X = case
    theta = exact_theta(case, k)
    inputs = [n for n in net["nodes"] if n.startswith("x")]
    outputs = [n for n in net["nodes"] if n.startswith("y")]
    ins: dict[str, list[tuple[str, Decimal]]] = {}
    for e, (u, v) in enumerate(net["edges"]):
        ins.setdefault(v, []).append((u, theta[e]))
    rows = []
    for x in X:
        val = {n: Decimal(float(x[i])) for i, n in enumerate(inputs)}
        for b in net["bias"]:
            val[b] = Decimal(1)
        for n in topo(net):
            if n in val:
                continue
            s = sum((CTX.multiply(w, val[u]) for u, w in ins[n]), Decimal(0))
            val[n] = s if n in outputs or s > 0 else Decimal(0)
        rows.append([val[n] for n in outputs])
    return rows


def exact_path_sum(case, k, power):
    """sum_p |Phi_p|^power by a DP over the network in Decimal."""
    _, net, _, _, _ = case
    theta = exact_theta(case, k)
    ins: dict[str, list[tuple[str, Decimal]]] = {}
    for e, (u, v) in enumerate(net["edges"]):
        ins.setdefault(v, []).append((u, CTX.power(abs(theta[e]), power)))
    acc: dict[str, Decimal] = {}
    for n in topo(net):
        acc[n] = Decimal(1) if n not in ins else sum(
            (CTX.multiply(w, acc[u]) for u, w in ins[n]), Decimal(0))
    return sum(acc[n] for n in net["nodes"] if n.startswith("y"))


def reference_log_phi(case, k):
    _, _, B, base, _ = case
    theta = base * 10.0**k
    logs = B @ np.log10(np.abs(theta))
    negatives = B @ (theta < 0).astype(float)
    signs = np.where(negatives % 2 == 1, -1.0, 1.0)
    return signs, logs


def says_range(r):
    text = (r.stdout + r.stderr).lower()
    return "overflow" in text or "underflow" in text


def no_pass_beside_non_finite(text):
    for line in text.splitlines():
        if re.search(r"\bpass", line) and re.search(r"\b(nan|inf)\b", line, re.I):
            return False
    return True


@pytest.mark.parametrize("k", SCALES)
def test_lift(run_cli, case, tmp_path, k):
    r = run_cli("lift", "--ff", FF, "--theta", theta_file(case, k), "-o", tmp_path / "phi.npy")
    signs, logs = reference_log_phi(case, k)
    fits = logs.max() < 308 and logs.min() > -307
    if r.returncode == 4:
        assert says_range(r) and not fits, r.stderr
        assert not (tmp_path / "phi.npy").exists()
    else:
        assert r.returncode == 0 and fits, r.stderr
        phi = np.load(tmp_path / "phi.npy")
        np.testing.assert_allclose(phi, signs * 10.0**logs, rtol=1e-12)


@pytest.mark.parametrize("k", SCALES)
def test_lift_log_is_exact_at_any_magnitude(run_cli, case, tmp_path, k):
    r = run_cli("lift", "--ff", FF, "--theta", theta_file(case, k), "--log", "-o",
                tmp_path / "phi.npy")
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "phi.npy")
    signs, logs = reference_log_phi(case, k)
    np.testing.assert_array_equal(out[:, 0], signs)
    np.testing.assert_allclose(out[:, 1], logs, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("k", SCALES)
def test_jacobian(run_cli, case, tmp_path, k):
    import scipy.sparse

    _, _, B, base, _ = case
    r = run_cli("jacobian", "--ff", FF, "--theta", theta_file(case, k), "-o", tmp_path / "J.npz")
    signs, logs = reference_log_phi(case, k)
    theta = base * 10.0**k
    entry_logs = (B.multiply(logs[:, None]) - B.multiply(np.log10(np.abs(theta))[None, :])).data
    if r.returncode == 4:
        assert says_range(r), r.stderr
        assert entry_logs.max() > 308 or entry_logs.min() < -307
    else:
        assert r.returncode == 0, r.stderr
        J = scipy.sparse.load_npz(tmp_path / "J.npz")
        ref = scipy.sparse.csr_matrix(
            B.multiply((signs * 10.0**logs)[:, None]).multiply(1 / theta[None, :]))
        assert np.isfinite(J.data).all()
        np.testing.assert_allclose(J.toarray(), ref.toarray(), rtol=1e-12)


@pytest.mark.parametrize("k", SCALES)
def test_jacobian_log_is_exact_at_any_magnitude(run_cli, case, tmp_path, k):
    _, _, B, base, _ = case
    r = run_cli("jacobian", "--ff", FF, "--theta", theta_file(case, k), "--log", "-o",
                tmp_path / "J.npy")
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "J.npy")
    Bc = B.tocoo()
    order = np.lexsort((Bc.col, Bc.row))
    rows, cols = Bc.row[order], Bc.col[order]
    np.testing.assert_array_equal(out[:, 0], rows)
    np.testing.assert_array_equal(out[:, 1], cols)
    signs, logs = reference_log_phi(case, k)
    theta = base * 10.0**k
    np.testing.assert_array_equal(out[:, 2], signs[rows] * np.sign(theta[cols]))
    np.testing.assert_allclose(out[:, 3], logs[rows] - np.log10(np.abs(theta[cols])),
                               rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("k", SCALES)
def test_forward(run_cli, case, k):
    d = case[0]
    r = run_cli("forward", "--ff", FF, "--theta", theta_file(case, k), "--data", d / "X.npy")
    if r.returncode == 4:
        assert says_range(r), r.stderr
        return
    assert r.returncode == 0, r.stderr
    f = np.array([float(x) for x in r.stdout.split()])
    ref = np.array([float(row[0]) for row in exact_forward(case, k)])
    assert np.isfinite(f).all()
    np.testing.assert_allclose(f, ref, rtol=1e-12)


@pytest.mark.parametrize("k", SCALES)
def test_norm(run_cli, case, k):
    r = run_cli("norm", "--ff", FF, "--theta", theta_file(case, k), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for s in (1, 2):
        ref = exact_path_sum(case, k, s)
        ref_log10 = float(CTX.log10(ref)) / s
        assert out["log10_norms"][str(s)] == pytest.approx(ref_log10, abs=1e-12 * max(1, abs(ref_log10)))


@pytest.mark.parametrize("k", SCALES)
@pytest.mark.parametrize("command", [
    ["check"], ["report"], ["rank"], ["linearize", "--data", "X.npy"],
    ["kernel", "--diag", "-o", "diag.npy"], ["kernel", "--trace"], ["kernel", "--top-eig", "2"],
])
def test_other_commands_never_pass_beside_a_non_finite_number(run_cli, case, k, command):
    d = case[0]
    command = [str(d / c) if c.endswith(".npy") and c != "diag.npy" else c for c in command]
    r = run_cli(*command, "--ff", FF, "--theta", theta_file(case, k), cwd=d)
    assert r.returncode in (0, 4), (r.returncode, r.stdout, r.stderr)
    if r.returncode == 4:
        assert says_range(r), r.stderr
    assert no_pass_beside_non_finite(r.stdout), r.stdout
    if r.returncode == 0 and command[0] == "kernel" and command[1] == "--diag":
        assert np.isfinite(np.load(d / "diag.npy")).all()
    if command[0] == "check" and k in (-300, 200):
        assert r.returncode == 4 and "out of range" in r.stdout.lower()


def test_check_json_says_out_of_range(run_cli, case):
    r = run_cli("check", "--ff", FF, "--theta", theta_file(case, 200), "--json")
    assert r.returncode == 4
    out = json.loads(r.stdout)
    assert out["status"] == "out_of_range" and out["passed"] is False
    statuses = {c["name"]: c["status"] for c in out["checks"]}
    assert statuses == {"lemma1": "out_of_range", "proposition2": "out_of_range",
                        "corollary1": "passed", "finite_differences": "out_of_range"}
