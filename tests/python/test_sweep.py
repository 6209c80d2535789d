"""pathlift.sweep (docs/sweeps.md): the table equals a loop over the items calling pathlift's
functions directly, bit for bit, whether the items run in this process, on a local process pool
or on a Dask LocalCluster; a worker killed mid-sweep, a corrupt checkpoint and an interrupted
sweep rerun with the same table."""

import copy
import functools
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pd = pytest.importorskip("pandas")
nn = torch.nn

QUANTITIES = ["norm:1", "norm:2", "norm:inf", "kernel_trace", "top_eig:2", "rank",
              "bound:1797:16"]


def digits_cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 6, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(6 * 4 * 4, 10))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """40 state_dicts saved along a short SGD run of a small CNN on random 8x8 images, and a
    picklable constructor of the module they fit."""
    folder = tmp_path_factory.mktemp("checkpoints")
    torch.manual_seed(0)
    model = digits_cnn()
    template = copy.deepcopy(model)
    X, y = torch.randn(256, 1, 8, 8), torch.randint(0, 10, (256,))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    paths = []
    for step in range(40):
        idx = torch.randint(0, 256, (32,))
        loss = nn.functional.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        paths.append(str(folder / f"step{step:02d}.pt"))
        torch.save(model.state_dict(), paths[-1])
    return paths, functools.partial(copy.deepcopy, template)


def items_of(pl, checkpoints):
    paths, make = checkpoints
    return [pl.TorchCheckpoint(p, make, (1, 8, 8)) for p in paths]


def direct_loop(pl, checkpoints):
    """The serial loop a user would write: each checkpoint loaded, each function called."""
    paths, make = checkpoints
    rows = []
    for p in paths:
        m = make()
        m.load_state_dict(torch.load(p))
        m = m.double().eval()
        net = pl.from_torch(m, input_shape=(1, 8, 8))
        theta = pl.theta_from_torch(m)
        row = {"item": p, "d": theta.size}
        for s in ("1", "2", "inf"):
            r = pl.path_norm(net, theta, float(s))
            row[f"norm:{s}"], row[f"norm:{s}:log10"] = r.norm, r.log10
        t = pl.kernel_trace(net, theta, scaled=True)
        row["kernel_trace"], row["kernel_trace:log10"] = t.value, t.log10
        e = pl.kernel_top_eigenvalues(net, theta, 2)
        row["top_eig:2[0]"], row["top_eig:2[1]"] = e.values
        row["top_eig:2:status"] = e.status
        r = pl.rank(net, theta)
        row["rank"], row["rank:expected"], row["rank:status"] = (r["rank_B"], r["expected"],
                                                                 r["status"])
        g = pl.generalization_bound(net, theta, n=1797, input_bound=16)
        row["bound:1797:16"], row["bound:1797:16:log10"] = g.bound, g.log10_bound
        row["bound:1797:16:coefficient"], row["bound:1797:16:D"] = g.coefficient, g.D
        rows.append(row)
    return pd.DataFrame(rows)


def values(table):
    return table.drop(columns=["seconds"])


def test_in_process_and_pool_equal_the_direct_loop(pl, checkpoints):
    checkpoints = (checkpoints[0][:8], checkpoints[1])  # rank takes 0.5 s an item
    reference = direct_loop(pl, checkpoints)
    items = items_of(pl, checkpoints)
    for processes in (1, 2):
        table = pl.sweep(items, QUANTITIES, processes=processes, progress=False)
        assert list(table["item"]) == list(reference["item"])
        assert (table["error"] == "").all()
        got = values(table).drop(columns=["error"])
        assert list(got.columns) == list(reference.columns)
        for column in reference.columns:  # bit for bit
            assert list(got[column]) == list(reference[column]), (processes, column)


def test_local_cluster_with_a_killed_worker_and_a_corrupt_checkpoint(pl, checkpoints, tmp_path):
    distributed = pytest.importorskip("distributed")
    paths, make = checkpoints
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a checkpoint")
    items = items_of(pl, checkpoints)
    items.insert(17, pl.TorchCheckpoint(str(corrupt), make, (1, 8, 8)))
    quantities = [q for q in QUANTITIES if q != "rank"]
    serial = pl.sweep(items, quantities, processes=1, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        pids = list(client.run(os.getpid).values())
        killed, after = [], []

        def kill_one_worker(phase, fraction):  # at the first row: a worker killed mid-sweep
            if not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            else:
                after.append(fraction)

        table = pl.sweep(items, quantities, client=client, progress=kill_one_worker)
        client.wait_for_workers(2, timeout=60)
        assert pids[0] not in client.run(os.getpid).values()  # killed, and restarted
    assert killed and len(after) == len(items) - 1  # every other row came after the kill
    assert list(table["item"]) == [i.path for i in items]  # each exactly once, in order
    bad = table[table["item"] == str(corrupt)]
    assert len(bad) == 1 and bad["error"].iloc[0].startswith("UnpicklingError")
    good = table[table["item"] != str(corrupt)]
    assert (good["error"] == "").all()
    assert values(table).equals(values(serial))


calls = []


def counted_norm(net, theta):
    """A user quantity that counts its calls and interrupts the sweep at the 21st."""
    calls.append(1)
    if len(calls) == 21 and os.environ.get("PATHLIFT_TEST_INTERRUPT") == "1":
        raise KeyboardInterrupt
    return float(np.abs(theta).sum())


def test_an_interrupted_sweep_reruns_only_the_missing_rows(pl, checkpoints, tmp_path,
                                                           monkeypatch):
    items = items_of(pl, checkpoints)
    quantities = ["norm:1", counted_norm]
    calls.clear()
    uninterrupted = pl.sweep(items, quantities, processes=1, progress=False)
    out = tmp_path / "table.csv"
    calls.clear()
    monkeypatch.setenv("PATHLIFT_TEST_INTERRUPT", "1")
    with pytest.raises(KeyboardInterrupt):
        pl.sweep(items, quantities, processes=1, out=out, progress=False)
    written = pd.read_csv(out)
    assert len(written) == 20  # each row written as it arrived
    calls.clear()
    monkeypatch.setenv("PATHLIFT_TEST_INTERRUPT", "0")
    table = pl.sweep(items, quantities, processes=1, out=out, progress=False)
    assert len(calls) == 20  # only the missing rows computed
    assert values(table).equals(values(uninterrupted))
    assert values(pd.read_csv(out, float_precision="round_trip", keep_default_na=False,
                              na_values=[""]).assign(error="")).equals(
        values(uninterrupted))
    calls.clear()
    again = pl.sweep(items, quantities, processes=1, out=out, progress=False)
    assert len(calls) == 0 and values(again).equals(values(uninterrupted))
    # a quantity not in the table yet: every row computed again, the table grows a column
    more = pl.sweep(items, ["norm:1", counted_norm, "norm:2"], processes=1, out=out,
                    progress=False)
    assert len(calls) == 40 and "norm:2" in more.columns


def test_bad_requests_are_refused_before_any_work(pl, checkpoints, tmp_path):
    items = items_of(pl, checkpoints)
    with pytest.raises(ValueError, match="unknown quantity 'norm1'"):
        pl.sweep(items, ["norm1"])
    with pytest.raises(ValueError, match="shares by layer, channel, parameter or node"):
        pl.sweep(items, ["shares"])
    with pytest.raises(ValueError, match=r"give the training samples n and the input bound B"):
        pl.sweep(items, ["bound"])
    with pytest.raises(ValueError, match=r"n must be a whole number > 0 and B a finite number >= 0"):
        pl.sweep(items, ["bound:0:1"])
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        pl.sweep(items, ["top_eig:0"])
    with pytest.raises(ValueError, match="given twice"):
        pl.sweep(items + items[:1], ["norm:1"])
    with pytest.raises(ValueError, match="pyarrow|csv"):
        pl.sweep(items, ["norm:1"], out=tmp_path / "t.xlsx")
    with pytest.raises(ValueError, match="processes must be an integer >= 1"):
        pl.sweep(items, ["norm:1"], processes=0)


def test_model_files_and_theta_pairs(pl, tmp_path):
    net = pl.feed_forward(4, [5], 3)
    pl.write_network(net, tmp_path / "net.json")
    thetas = []
    for seed in range(3):
        thetas.append(pl.normal_weights(net.d, seed))
        np.save(tmp_path / f"t{seed}.npy", thetas[-1])
    items = [(str(tmp_path / "net.json"), str(tmp_path / f"t{s}.npy")) for s in range(3)]
    table = pl.sweep(items, ["norm:1", f"metric:{tmp_path / 't0.npy'}"], processes=1,
                     progress=False)
    for s in range(3):
        assert table["norm:1"][s] == pl.path_norm(net, thetas[s], 1.0).norm
        assert table[f"metric:{tmp_path / 't0.npy'}"][s] == pl.path_metric(
            net, thetas[s], thetas[0]).value
    assert table["item"][1] == f"{tmp_path / 'net.json'}:{tmp_path / 't1.npy'}"


def test_cli(pl, run_cli, tmp_path):
    """pathlift sweep keeps the command line's contract: the table on stdout or in -o (a status
    line on stderr), exit 1 when an item failed, 2 with "error: ..." for bad usage."""
    net = pl.feed_forward(3, [4], 2)
    pl.write_network(net, tmp_path / "net.json")
    for seed in range(2):
        np.save(tmp_path / f"t{seed}.npy", pl.normal_weights(net.d, seed))
    args = ["--model", tmp_path / "net.json", tmp_path / "t0.npy", tmp_path / "t1.npy",
            "--quantities", "norm:1,norm:2", "--workers", "1"]
    r = run_cli("sweep", *args)
    assert r.returncode == 0 and r.stderr == "", r
    lines = r.stdout.splitlines()
    assert lines[0].startswith("item,d,norm:1,norm:1:log10,norm:2") and len(lines) == 3
    assert float(lines[1].split(",")[2]) == pl.path_norm(
        net, np.load(tmp_path / "t0.npy"), 1.0).norm
    out = tmp_path / "table.csv"
    r = run_cli("sweep", *args, "-o", out)
    assert r.returncode == 0 and r.stdout == "" and str(out) in r.stderr, r
    assert pd.read_csv(out).shape[0] == 2
    (tmp_path / "bad.npy").write_text("junk")
    r = run_cli("sweep", *args, tmp_path / "bad.npy")
    assert r.returncode == 1 and "1 of 3 items failed" in r.stderr, r
    for bad, culprit in ((["--threads", "-1"], "--threads"), (["--no-such-option"],
                                                              "--no-such-option"),
                         (["--quantities", "norm:x"], "norm:x"),
                         (["--quantities", "bound:2.5:1"], "whole number")):
        r = run_cli("sweep", *args, *bad)
        assert r.returncode == 2 and r.stderr.startswith("error: ") and culprit in r.stderr, r
    r = run_cli("sweep", "--help")
    assert r.returncode == 0 and "sweep" in r.stdout and r.stderr == "", r


def test_cli_failed_rows_integers_and_warnings(pl, run_cli, tmp_path):
    """A failed row still gives the network's d, the integer columns stay integers beside its
    empty cells, and the importer's warning (an ONNX export that folded a BatchNorm) is one
    "warning: ..." line, once, although two theta files share the model."""
    nn = torch.nn
    torch.manual_seed(0)
    folded = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                           nn.Linear(2 * 4 * 4, 2)).eval()
    model = tmp_path / "folded.onnx"
    torch.onnx.export(folded, torch.zeros(1, 1, 6, 6), str(model), opset_version=13)
    with pytest.warns(UserWarning, match="BatchNorm folded"):
        net = pl.load_model(model)
    for seed in range(2):
        np.save(tmp_path / f"t{seed}.npy", pl.normal_weights(net.d, seed))
    np.save(tmp_path / "short.npy", np.ones(5))
    r = run_cli("sweep", "--model", model, tmp_path / "t0.npy", tmp_path / "t1.npy",
                tmp_path / "short.npy", "--quantities", "norm:1,rank", "--workers", "1")
    assert r.returncode == 1, r
    warnings = [line for line in r.stderr.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1 and warnings[0].startswith("warning: ") and \
        "BatchNorm folded" in warnings[0], r.stderr
    rows = [line.split(",") for line in r.stdout.splitlines()]
    header = rows[0]
    d, rank = header.index("d"), header.index("rank")
    assert [row[d] for row in rows[1:]] == [str(net.d)] * 3  # the short theta's row too
    assert rows[1][rank] == str(pl.rank(net, np.load(tmp_path / "t0.npy"))["rank_B"])
    assert rows[3][rank] == "" and "5 entries" in r.stdout


def test_the_imp_example_runs(build_dir, tmp_path):
    """examples/imp_sweep.py (docs/sweeps.md), 2 rounds: a table of 3 checkpoints and a plot."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")
    example = Path(__file__).resolve().parents[2] / "examples" / "imp_sweep.py"
    proc = subprocess.run([sys.executable, str(example), "--rounds", "2", "--epochs", "3",
                           "--retrain", "1", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              [str(build_dir / "python"),
                               *filter(None, [os.environ.get("PYTHONPATH")])])))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "table.csv")
    assert len(table) == 3 and (table["error"].isna() | (table["error"] == "")).all()
    assert (tmp_path / "imp_sweep.png").stat().st_size > 0
    assert "round" in proc.stdout
