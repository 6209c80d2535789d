"""CLI of the path engine: paths, lift, skeleton, jacobian, check, report.

Files written by the CLI must read back identically (numbers with 17 significant digits),
and agree with an independent brute-force computation from the network file.
"""
import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse


def network_json(run_cli, tmp_path, example):
    path = tmp_path / "net.json"
    run_cli("convert", "--example", example, "-o", path, check=True)
    return json.loads(path.read_text())


def brute_force_paths(doc):
    """Paths in canonical order from the file alone: DFS from inputs in node order, out-edges
    by increasing index, emit at each output (sinks and designated), continue past it."""
    nodes = doc["nodes"]
    index = {n: i for i, n in enumerate(nodes)}
    edges = [(index[a], index[b]) for a, b in doc["edges"]]
    has_in = {b for _, b in edges}
    has_out = {a for a, _ in edges}
    outputs = {index[o] for o in doc.get("outputs", [])} | (set(range(len(nodes))) - has_out)
    out = []

    def walk(v, prefix):
        for k, (a, b) in enumerate(edges):
            if a == v:
                prefix.append(k)
                if b in outputs:
                    out.append(list(prefix))
                walk(b, prefix)
                prefix.pop()

    for v in range(len(nodes)):
        if v not in has_in:
            walk(v, [])
    return out, len(edges)


@pytest.mark.parametrize("example", ["fig1", "sketch-h0", "sketch-h1", "random-dag:12,0.35,4",
                                     "ff:3,4,3,2"])
def test_outputs_match_brute_force_and_read_back(run_cli, tmp_path, example):
    doc = network_json(run_cli, tmp_path, example)
    paths, d = brute_force_paths(doc)
    theta = np.random.default_rng(7).standard_normal(d)
    theta_file = tmp_path / "theta.npy"
    np.save(theta_file, theta)
    net = ["--example", example, "--theta", theta_file]

    # paths: one a line, edge ids in walk order.
    run_cli("paths", "--example", example, "-o", tmp_path / "paths.txt", check=True)
    lines = (tmp_path / "paths.txt").read_text().splitlines()
    assert [list(map(int, line.split())) for line in lines] == paths

    phi_ref = np.array([np.prod(theta[p]) for p in paths])
    # Phi in every format.
    for ext in ("npy", "txt", "csv", "mtx"):
        out = tmp_path / f"phi.{ext}"
        run_cli("lift", *net, "-o", out, check=True)
        if ext == "npy":
            phi = np.load(out)
        elif ext == "mtx":
            phi = scipy.io.mmread(str(out)).ravel()
        else:
            phi = np.loadtxt(out, delimiter=",") if ext == "csv" else np.loadtxt(out)
        np.testing.assert_allclose(np.atleast_1d(phi), phi_ref, rtol=1e-14, atol=0)

    # B: sparse .mtx (pattern), equal to the brute force 0/1 matrix.
    b_ref = np.zeros((len(paths), d))
    for r, p in enumerate(paths):
        b_ref[r, p] = 1
    run_cli("skeleton", "--example", example, "-o", tmp_path / "B.mtx", check=True)
    b = scipy.io.mmread(str(tmp_path / "B.mtx")).toarray()
    np.testing.assert_array_equal(b, b_ref)
    run_cli("skeleton", "--example", example, "--dense", "-o", tmp_path / "B.npy", check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "B.npy"), b_ref)

    # dPhi: product of the other weights.
    j_ref = np.zeros((len(paths), d))
    for r, p in enumerate(paths):
        for i, k in enumerate(p):
            j_ref[r, k] = np.prod(theta[p[:i] + p[i + 1:]])
    run_cli("jacobian", *net, "-o", tmp_path / "J.mtx", check=True)
    j = scipy.io.mmread(str(tmp_path / "J.mtx"))
    assert scipy.sparse.issparse(j)
    np.testing.assert_allclose(j.toarray(), j_ref, rtol=1e-14, atol=1e-300)
    run_cli("jacobian", *net, "--dense", "-o", tmp_path / "J.npy", check=True)
    np.testing.assert_allclose(np.load(tmp_path / "J.npy"), j_ref, rtol=1e-14, atol=1e-300)
    run_cli("jacobian", *net, "--paper-formula", "-o", tmp_path / "Jp.mtx", check=True)
    np.testing.assert_allclose(scipy.io.mmread(str(tmp_path / "Jp.mtx")).toarray(), j_ref,
                               rtol=1e-13, atol=1e-300)
    # Text: "row col value" lines, 0-based.
    run_cli("jacobian", *net, "-o", tmp_path / "J.txt", check=True)
    rows = np.loadtxt(tmp_path / "J.txt", ndmin=2)
    jt = np.zeros_like(j_ref)
    jt[rows[:, 0].astype(int), rows[:, 1].astype(int)] = rows[:, 2]
    np.testing.assert_array_equal(jt, j.toarray())  # text and .mtx hold the same doubles


def test_seventeen_digits_round_trip_exactly(run_cli, tmp_path):
    run_cli("lift", "--ff", "3,5,4,2", "--seed", "3", "-o", tmp_path / "phi.txt", check=True)
    run_cli("lift", "--ff", "3,5,4,2", "--seed", "3", "-o", tmp_path / "phi.npy", check=True)
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "phi.txt"), np.load(tmp_path / "phi.npy"))
    run_cli("jacobian", "--ff", "3,5,4,2", "--seed", "3", "-o", tmp_path / "J.mtx", check=True)
    run_cli("jacobian", "--ff", "3,5,4,2", "--seed", "3", "--dense", "-o", tmp_path / "J.npy",
            check=True)
    np.testing.assert_array_equal(scipy.io.mmread(str(tmp_path / "J.mtx")).toarray(),
                                  np.load(tmp_path / "J.npy"))


def test_float32_and_threads(run_cli, tmp_path):
    run_cli("lift", "--ff", "5,8,8,2", "-o", tmp_path / "a.npy", check=True)
    run_cli("lift", "--ff", "5,8,8,2", "--float32", "-o", tmp_path / "b.npy", check=True)
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    assert a.dtype == np.float64 and b.dtype == np.float32
    np.testing.assert_allclose(b, a, rtol=1e-5)
    for threads in (1, 2, 7):
        run_cli("jacobian", "--ff", "5,16,16,2", "--threads", threads, "-o",
                tmp_path / f"J{threads}.mtx", check=True)
    ref = (tmp_path / "J1.mtx").read_bytes()
    assert (tmp_path / "J2.mtx").read_bytes() == ref
    assert (tmp_path / "J7.mtx").read_bytes() == ref


def test_weights_from_the_network_file(run_cli, tmp_path):
    doc = network_json(run_cli, tmp_path, "fig1")
    doc["weights"] = [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    out = run_cli("lift", "--network", path, "-o", "-", check=True)
    t = doc["weights"]
    expected = [t[0] * t[4], t[1] * t[5], t[2] * t[4], t[3] * t[5], t[6]]
    np.testing.assert_array_equal(np.array(out.stdout.split(), dtype=float), expected)


def test_dense_refused_with_sizes_and_nothing_written(run_cli, tmp_path):
    out = tmp_path / "J.npy"
    r = run_cli("jacobian", "--ff", "5,64,64,64,2", "--dense", "-o", out)
    assert r.returncode != 0
    assert r.stderr.startswith("error: ")
    assert "P = 3154050" in r.stderr and "nnz = 12607746" in r.stderr and "bytes" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_max_memory_refusal(run_cli, tmp_path):
    r = run_cli("jacobian", "--ff", "5,64,64,2", "--max-memory", "1M", "-o", tmp_path / "J.mtx")
    assert r.returncode != 0 and "over the memory limit" in r.stderr
    assert list(tmp_path.iterdir()) == []
    r = run_cli("lift", "--max-memory", "lots", "-o", "-")
    assert r.returncode != 0 and "--max-memory" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["lift", "-o", "x.xyz"], "unknown output format"),
    (["jacobian", "-o", "J.npy"], "--dense"),
    (["lift", "--theta", "missing.npy", "-o", "-"], "cannot open"),
    (["lift", "--seed", "1", "--theta", "t.npy", "-o", "-"], "excludes"),
])
def test_bad_usage(run_cli, tmp_path, args, message):
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode != 0
    assert message in r.stderr


def test_bad_theta_files(run_cli, tmp_path):
    np.save(tmp_path / "short.npy", np.ones(6))
    r = run_cli("lift", "--theta", tmp_path / "short.npy", "-o", "-")
    assert r.returncode == 2 and "theta has 6 entries but the network has 7 edges" in r.stderr
    (tmp_path / "nan.txt").write_text("1 2 3\nnan 5 6 7\n")
    r = run_cli("lift", "--theta", tmp_path / "nan.txt", "-o", "-")
    assert r.returncode == 2 and "not finite" in r.stderr and "line 2" in r.stderr


def test_check_passes_and_reports_json(run_cli):
    r = run_cli("check", "--example", "random-dag:14,0.4,2", "--json", check=True)
    doc = json.loads(r.stdout)
    assert doc["passed"] is True
    assert [c["name"] for c in doc["checks"]] == ["lemma1", "proposition2", "corollary1",
                                                 "finite_differences"]
    assert all(c["passed"] for c in doc["checks"])


def test_check_with_zero_weight_skips_proposition2(run_cli, tmp_path):
    np.savetxt(tmp_path / "t.txt", [0.0, 1, 2, 3, 4, 5, 6])
    r = run_cli("check", "--theta", tmp_path / "t.txt", "--json", check=True)
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["proposition2"]["applicable"] is False
    assert checks["finite_differences"]["passed"] is True


def test_report_is_the_main_job(run_cli):
    r = run_cli("report", check=True)
    for text in ("fig1", "P = 5", "d - h = 5", "Phi", "dPhi", "Lemma 1", "Proposition 2",
                 "Corollary 1", "rank B = 5 (certified", "rank dPhi = 5", "verified",
                 "f = L Phi ok", "timings"):
        assert text in r.stdout
    big = run_cli("report", "--ff", "5,16,16,2", check=True)
    assert "P = 3106" in big.stdout and "nnz" in big.stdout
    huge = run_cli("report", "--ff", "10,64,64,64,64,64,64,64,64,64,64,64,64,2", check=True)
    assert "too large to enumerate" in huge.stdout


def test_bench_table_and_csv(run_cli, tmp_path):
    """pathlift bench (issue 7): a row per shape on stdout, and in the CSV a row per shape and
    method with the DP sizes and ordered timings."""
    import csv

    out = tmp_path / "bench.csv"
    r = run_cli("bench", "--grid", "5,2,2", "--grid", "5,3,3,2", "--reps", "3", "--threads", "1",
                "--csv", out, check=True)
    lines = [l for l in r.stdout.splitlines() if l.startswith("5,")]
    assert [l.split()[0] for l in lines] == ["5,2,2", "5,3,3,2"]
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    methods = ["pathlift_build", "pathlift_phi", "pathlift_sparse_jacobian",
               "pathlift_dense_jacobian"]
    assert [(r["shape"], r["method"]) for r in rows] == [
        (s, m) for s in ("5,2,2", "5,3,3,2") for m in methods]
    # P = q (r w^L + w^L + ... + 1), d = sum (in + 1) out, from the DP (docs/conventions.md)
    sizes = {r["shape"]: (int(r["P"]), int(r["d"]), int(r["nnz"])) for r in rows}
    assert sizes == {"5,2,2": (26, 18, 50), "5,3,3,2": (116, 38, 338)}
    for row in rows:
        assert row["status"] == "ok" and row["reps"] == "3" and row["dtype"] == "float32"
        assert 0 < float(row["min_s"]) <= float(row["median_s"]) <= float(row["max_s"])
    assert run_cli("bench", "--grid", "5,0,2").returncode != 0
