"""Sparse matrices written as .npz (issue 18): `skeleton`, `jacobian` (also --float32 and
--paper-formula) and `linearize -o FILE.npz` give, through scipy.sparse.load_npz, the matrix of
the .mtx file and of the Python API bit for bit, in the very bytes scipy.sparse.save_npz
writes; the formats that cannot hold what a command writes are refused, leaving no file."""

import zipfile

import numpy as np
import pytest
import scipy.io
import scipy.sparse

FF = "3,5,4,2"
SEED = 3


def python_matrix(pl, command, flags, tmp_path):
    """The matrix that `command flags` writes, from the Python API (the independent side)."""
    net = pl.builtin_network(f"ff:{FF}")
    theta = pl.normal_weights(net.d, SEED)
    if command == "skeleton":
        return pl.skeleton(net)
    if command == "linearize":
        return pl.linearize(net, theta, np.load(tmp_path / "X.npy")).L
    if "--paper-formula" in flags:
        return pl.jacobian_paper_formula(net, theta)
    return pl.jacobian(net, theta, dtype=np.float32 if "--float32" in flags else np.float64)


CASES = [
    ("skeleton", []),
    ("jacobian", ["--seed", SEED]),
    ("jacobian", ["--seed", SEED, "--float32"]),
    ("jacobian", ["--seed", SEED, "--paper-formula"]),
    ("linearize", ["--seed", SEED, "--data", "X.npy"]),
]


IDS = [" ".join(map(str, [command, *flags])) for command, flags in CASES]


@pytest.fixture(autouse=True)
def data(tmp_path):
    """X.npy (7 samples) for linearize, in each test's folder."""
    np.save(tmp_path / "X.npy", np.random.default_rng(0).standard_normal((7, 3)))


def write(run_cli, tmp_path, command, flags, out):
    run_cli(command, "--ff", FF, *flags, "-o", out, check=True, cwd=tmp_path)
    return tmp_path / out


def assert_same_csr(a, b):
    """Same shape, dtype, indptr, indices and data bits (so -0.0 and 0.0 differ)."""
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.data.view(np.uint8), b.data.view(np.uint8))


@pytest.mark.parametrize("command,flags", CASES, ids=IDS)
def test_npz_is_the_python_matrix_and_the_mtx(pl, run_cli, tmp_path, command, flags):
    expected = python_matrix(pl, command, flags, tmp_path)
    m = scipy.sparse.load_npz(write(run_cli, tmp_path, command, flags, "M.npz"))
    assert isinstance(m, scipy.sparse.csr_matrix)
    assert_same_csr(m, expected)
    # The .mtx holds 17 (float32: 9) significant digits: the same numbers once read.
    mtx = scipy.io.mmread(str(write(run_cli, tmp_path, command, flags, "M.mtx"))).tocsr()
    assert_same_csr(m, mtx.astype(m.dtype))


@pytest.mark.parametrize("command,flags", CASES, ids=IDS)
def test_npz_members_are_the_bytes_scipy_writes(pl, run_cli, tmp_path, command, flags):
    ours = write(run_cli, tmp_path, command, flags, "M.npz")
    theirs = tmp_path / "scipy.npz"
    scipy.sparse.save_npz(theirs, python_matrix(pl, command, flags, tmp_path), compressed=False)
    with zipfile.ZipFile(ours) as a, zipfile.ZipFile(theirs) as b:
        assert a.testzip() is None  # every CRC-32 right
        assert a.namelist() == b.namelist() == [
            "indices.npy", "indptr.npy", "format.npy", "shape.npy", "data.npy"]
        for name in a.namelist():
            info = a.getinfo(name)
            assert info.compress_type == zipfile.ZIP_STORED and info.extra == b""
            assert a.read(name) == b.read(name), name


def test_indices_are_int32_when_they_fit(run_cli, tmp_path):
    """As scipy chooses (nnz, rows and columns below 2^31); int64 beyond, which needs a matrix of
    16 GB or more, not written here."""
    with np.load(write(run_cli, tmp_path, "jacobian", [], "J.npz")) as z:
        assert z["indices"].dtype == np.int32 and z["indptr"].dtype == np.int32
        assert z["shape"].dtype == np.int64 and z["format"][()] == b"csr"
        assert z["data"].dtype == np.float64


def test_npz_replaces_an_existing_file(run_cli, tmp_path):
    (tmp_path / "B.npz").write_bytes(b"old")
    write(run_cli, tmp_path, "skeleton", [], "B.npz")
    assert scipy.sparse.load_npz(tmp_path / "B.npz").nnz > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["B.npz", "X.npy"]


@pytest.mark.parametrize("args,says", [
    (["skeleton", "--dense", "-o", "B.npz"],
     "'B.npz': .npz holds a sparse matrix (scipy.sparse.load_npz); write a dense matrix as .npy"),
    (["jacobian", "--dense", "-o", "J.npz"], "'J.npz': .npz holds a sparse matrix"),
    (["lift", "-o", "phi.npz"], "'phi.npz': .npz holds a sparse matrix (scipy.sparse.load_npz); "
                                "write a vector as .npy"),
    (["kernel", "--diag", "-o", "k.npz"], "write a vector as .npy"),
    (["forward", "--data", "X.npy", "-o", "f.npz"], "write a dense matrix as .npy"),
    (["jacobian", "-o", "J.npy"], ".npy"),
    (["linearize", "--data", "X.npy", "-o", "L.npy"], ".npy"),
    (["jacobian", "-o", "J.npzz"], "unknown output format '.npzz' (use .mtx, .npy, .npz,"),
])
def test_refused_outputs_leave_nothing(run_cli, tmp_path, args, says):
    r = run_cli(args[0], "--ff", FF, *args[1:], cwd=tmp_path)
    assert r.returncode != 0
    assert says in r.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["X.npy"]
