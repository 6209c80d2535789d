"""`pathlift forward` and `pathlift linearize`: results against hand computations on fig1,
the JSON contract, the written L (f = L Phi recomputed here from the .mtx), the kink warning,
and the refusals of bad data (wrong width, NaN, empty file)."""
import json
import random

import pytest

# fig1: inputs a, c (data columns), bias g; edges a-d, a-f, c-d, c-f, d-h, f-h, g-h.
THETA = [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0]
X = [[1.0, 2.0], [-1.0, 0.5], [2.0, -4.0], [0.0, 3.0]]
JSON_KEYS = ["n", "q", "P", "nnz_L", "margin", "max_err_f", "max_err_grad", "status"]


def relu(x):
    return x if x > 0 else 0.0


def fig1_forward(t, x):
    a, c = x
    return t[4] * relu(t[0] * a + t[2] * c) + t[5] * relu(t[1] * a + t[3] * c) + t[6]


def fig1_phi(t):
    # Canonical order: a-d-h, a-f-h, c-d-h, c-f-h, g-h.
    return [t[0] * t[4], t[1] * t[5], t[2] * t[4], t[3] * t[5], t[6]]


def write_rows(path, rows):
    path.write_text("".join(",".join(repr(v) for v in row) + "\n" for row in rows))
    return path


def read_rows(path):
    return [[float(v) for v in line.replace(",", " ").split()]
            for line in path.read_text().splitlines() if line.strip()]


def read_mtx(path):
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("%")]
    rows, cols, nnz = map(int, lines[0].split())
    entries = []
    for ln in lines[1:]:
        i, j, v = ln.split()
        entries.append((int(i) - 1, int(j) - 1, float(v)))
    assert len(entries) == nnz
    return rows, cols, entries


@pytest.fixture
def fig1_files(tmp_path):
    theta = tmp_path / "theta.txt"
    theta.write_text("\n".join(repr(v) for v in THETA) + "\n")
    data = write_rows(tmp_path / "X.csv", X)
    return theta, data


def test_forward_matches_hand_computation(run_cli, fig1_files, tmp_path):
    theta, data = fig1_files
    out = tmp_path / "f.csv"
    pattern = tmp_path / "pattern.csv"
    r = run_cli("forward", "--example", "fig1", "--theta", theta, "--data", data, "-o", out,
                "--pattern", pattern, check=True)
    assert r.stdout == "" and "margin" in r.stderr  # f(X) is in the file: the rest is status
    f = read_rows(out)
    assert len(f) == len(X)
    for row, x in zip(f, X):
        assert row == [pytest.approx(fig1_forward(THETA, x), rel=1e-15, abs=1e-15)]
    # Slopes n x m, nodes in node order a, c, g, d, f, h.
    slopes = read_rows(pattern)
    for row, (a, c) in zip(slopes, X):
        d_on = THETA[0] * a + THETA[2] * c > 0
        f_on = THETA[1] * a + THETA[3] * c > 0
        assert row == [1, 1, 1, float(d_on), float(f_on), 1]


def test_forward_prints_to_stdout_by_default(run_cli, fig1_files):
    theta, data = fig1_files
    r = run_cli("forward", "--example", "fig1", "--theta", theta, "--data", data, check=True)
    values = [float(v) for v in r.stdout.split()]
    assert values == pytest.approx([fig1_forward(THETA, x) for x in X], rel=1e-15)


def test_forward_npy_in_and_out(run_cli, tmp_path):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((7, 3))
    theta = rng.standard_normal(4 * 5 + 6 * 2)
    np.save(tmp_path / "X.npy", data)
    np.save(tmp_path / "theta.npy", theta)
    run_cli("forward", "--ff", "3,5,2", "--theta", tmp_path / "theta.npy", "--data",
            tmp_path / "X.npy", "-o", tmp_path / "f.npy", check=True)
    f = np.load(tmp_path / "f.npy")
    assert f.shape == (7, 2)
    # PyTorch parameter order: W1 (5 x 3, row-major), b1, W2 (2 x 5), b2.
    w1, b1 = theta[:15].reshape(5, 3), theta[15:20]
    w2, b2 = theta[20:30].reshape(2, 5), theta[30:32]
    expected = np.maximum(data @ w1.T + b1, 0) @ w2.T + b2
    assert np.allclose(f, expected, rtol=1e-13, atol=1e-13)


def test_linearize_json_contract(run_cli, fig1_files):
    theta, data = fig1_files
    r = run_cli("linearize", "--example", "fig1", "--theta", theta, "--data", data, "--json",
                check=True)
    j = json.loads(r.stdout)
    # the header of every --json output (docs/cli.md#json), then the check's keys
    assert list(j.keys()) == ["format", "version", "pathlift_version", "network", "theta",
                              *JSON_KEYS]
    assert (j["n"], j["q"], j["P"]) == (4, 1, 5)
    # Sample 0: d on, f off -> 3 entries; 1: all 5; 2: only g-h; 3: a = 0 -> c-d, c-f, g-h.
    assert j["nnz_L"] == 12
    assert j["margin"] == 0.5
    assert j["max_err_f"] <= 1e-15
    assert 0 <= j["max_err_grad"] <= 1e-9
    assert j["status"] == "ok"


def test_linearize_writes_L_with_f_equal_L_phi(run_cli, fig1_files, tmp_path):
    theta, data = fig1_files
    out = tmp_path / "L.mtx"
    r = run_cli("linearize", "--example", "fig1", "--theta", theta, "--data", data, "-o", out,
                check=True)
    assert r.stdout == "" and "status       ok" in r.stderr  # L is in the file: report on stderr
    rows, cols, entries = read_mtx(out)
    assert (rows, cols) == (4, 5)
    assert all(v != 0 for _, _, v in entries)
    phi = fig1_phi(THETA)
    lphi = [0.0] * rows
    for i, p, v in entries:
        lphi[i] += v * phi[p]
    assert lphi == pytest.approx([fig1_forward(THETA, x) for x in X], rel=1e-15, abs=1e-15)
    # Row i holds c_p^i x_i[start(p)]: sample 1 has both ReLUs on.
    assert sorted((p, v) for i, p, v in entries if i == 1) == [
        (0, -1.0), (1, -1.0), (2, 0.5), (3, 0.5), (4, 1.0)]


def test_linearize_feed_forward(run_cli, tmp_path):
    rnd = random.Random(3)
    data = write_rows(tmp_path / "X.csv",
                      [[rnd.gauss(0, 1) for _ in range(3)] for _ in range(30)])
    r = run_cli("linearize", "--ff", "3,8,8,2", "--seed", "1", "--data", data, "--json",
                "--threads", "2", check=True)
    j = json.loads(r.stdout)
    assert (j["n"], j["q"], j["P"]) == (30, 2, 2 * (3 * 64 + 64 + 8 + 1))
    assert 0 < j["nnz_L"] < 60 * j["P"]
    assert j["max_err_f"] <= 1e-10
    assert j["max_err_grad"] <= 1e-6
    assert j["status"] == "ok"


def test_input_on_a_kink_warns(run_cli, tmp_path):
    theta = tmp_path / "theta.txt"
    theta.write_text("1\n2\n-1\n1\n1\n1\n0.5\n")
    data = write_rows(tmp_path / "X.csv", [[1.0, 0.25], [0.5, 0.5]])  # pre(d) = 0 on row 1
    r = run_cli("linearize", "--example", "fig1", "--theta", theta, "--data", data, "--json",
                check=True)
    j = json.loads(r.stdout)
    assert j["margin"] == 0
    assert j["status"] == "on_kink"
    assert j["max_err_f"] <= 1e-15
    assert "warning" in r.stderr and "margin 0" in r.stderr and "node d" in r.stderr
    r = run_cli("forward", "--example", "fig1", "--theta", theta, "--data", data, check=True)
    assert "warning: margin 0" in r.stderr


@pytest.mark.parametrize("command", ["forward", "linearize"])
def test_rejects_wrong_width(run_cli, tmp_path, command):
    data = write_rows(tmp_path / "X.csv", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    r = run_cli(command, "--example", "fig1", "--data", data)
    assert r.returncode != 0
    assert "error:" in r.stderr
    assert "3 columns" in r.stderr and "2 data inputs" in r.stderr


@pytest.mark.parametrize("command", ["forward", "linearize"])
@pytest.mark.parametrize("text, says", [("1,2\nnan,3\n", ["row 1, column 0", "not finite"]),
                                        ("", ["empty", "X.csv"])], ids=["nan", "empty"])
def test_rejects_bad_csv(run_cli, tmp_path, command, text, says):
    data = tmp_path / "X.csv"
    data.write_text(text)
    r = run_cli(command, "--example", "fig1", "--data", data)
    assert r.returncode != 0
    assert all(part in r.stderr for part in says), r.stderr


def test_rejects_wrong_width_npy(run_cli, tmp_path):
    np = pytest.importorskip("numpy")
    np.save(tmp_path / "X.npy", np.ones((4, 5)))
    r = run_cli("linearize", "--ff", "3,4,1", "--data", tmp_path / "X.npy")
    assert r.returncode != 0
    assert "5 columns" in r.stderr and "3 data inputs" in r.stderr


def test_sparse_output_formats(run_cli, fig1_files, tmp_path):
    theta, data = fig1_files
    r = run_cli("linearize", "--example", "fig1", "--theta", theta, "--data", data, "-o",
                tmp_path / "L.npy")
    assert r.returncode != 0 and ".mtx" in r.stderr
    out = tmp_path / "L.csv"
    run_cli("linearize", "--example", "fig1", "--theta", theta, "--data", data, "-o", out,
            check=True)
    entries = [line.split(",") for line in out.read_text().splitlines()]
    assert len(entries) == 12
    assert entries[0] == ["0", "0", "1"]  # row 0 (sample 0, output 0), path 0 (a-d-h), 0-based


def test_help_lists_options(run_cli):
    r = run_cli("linearize", "--help", check=True)
    for flag in ["--data", "--output", "--json", "--theta", "--seed", "--threads", "--max-memory"]:
        assert flag in r.stdout
    r = run_cli("forward", "--help", check=True)
    for flag in ["--data", "--output", "--pattern"]:
        assert flag in r.stdout


def test_memory_limit_refuses_L(run_cli, tmp_path):
    rnd = random.Random(5)
    data = write_rows(tmp_path / "X.csv",
                      [[rnd.gauss(0, 1) for _ in range(3)] for _ in range(2500)])
    j = json.loads(run_cli("linearize", "--ff", "3,8,8,2", "--data", data, "--json",
                           check=True).stdout)
    # The forward pass needs n (2 m + q) 8 = 1 MB (m = 24 nodes); L needs far more. The limit
    # is the process's: the network and the data (a few MB) are resident beside the work.
    limit = 6 << 20
    assert 12 * j["nnz_L"] > limit - (2 << 20)  # L alone: 5.2 MB
    r = run_cli("linearize", "--ff", "3,8,8,2", "--data", data, "--max-memory", str(limit))
    assert r.returncode != 0
    assert "linear map L" in r.stderr and "memory limit" in r.stderr
