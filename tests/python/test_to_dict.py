"""Every Python result whose library type has a to_json gives it as to_dict(): the same keys and
values as the CLI's --json object for the same network and theta (the CLI adds its header and
keys of its own around them)."""
import numpy as np
import pytest

from conftest import run_json

FF = (4, [6, 5], 3)
FF_TEXT = "4,6,5,3"


def _contained(cli_object, python_dict):
    """Each key of python_dict in cli_object with the same value (floats to 1e-12)."""
    for key, value in python_dict.items():
        assert key in cli_object, key
        got = cli_object[key]
        if isinstance(value, float):
            assert got == pytest.approx(value, rel=1e-12), key
        else:
            assert got == value, key


@pytest.fixture()
def net_theta(pl):
    net = pl.feed_forward(*FF)
    return net, pl.normal_weights(net.d, 0)  # the CLI's default theta: --seed 0


def test_every_result_with_a_library_json_has_to_dict(pl):
    for name in ("BalanceReport", "ConservationLaws", "FunctionalDimension", "GeneralizationBound",
                 "KernelEigenvalues", "LinearizationCheck", "LipschitzBound", "PathCounts",
                 "PathMetric", "PathNormShares", "ProofCertificate", "RankReport"):
        assert callable(getattr(getattr(pl, name), "to_dict", None)), name


def test_balance_report(pl, run_cli, net_theta, tmp_path):
    net, theta = net_theta
    cli = run_json(run_cli, "rescale", "--ff", FF_TEXT, "--path-cond", "-o", tmp_path / "t.npy")
    report = pl.path_cond(net, theta).to_dict()
    assert set(report) == {"classes", "sweeps", "converged", "criterion_before",
                           "criterion_after", "stationarity"}
    _contained(cli, report)


def test_path_counts(pl, run_cli, net_theta):
    net, _ = net_theta
    cli = run_json(run_cli, "info", "--ff", FF_TEXT)
    counts = pl.count_paths(net)
    d = counts.to_dict()
    assert d["P"] == counts.paths == 4 * 6 * 5 * 3 + 6 * 5 * 3 + 5 * 3 + 3  # biases are inputs
    _contained(cli, d)


def test_path_metric_and_lipschitz_bound(pl, run_cli, net_theta, tmp_path):
    net, theta = net_theta
    pruned = np.where(np.abs(theta) < 0.5, 0.0, theta)
    np.save(tmp_path / "t2.npy", pruned)
    cli = run_json(run_cli, "metric", "--ff", FF_TEXT, "--theta2", tmp_path / "t2.npy")
    metric = pl.path_metric(net, theta, pruned).to_dict()
    bound = pl.lipschitz_bound(net, theta, pruned).to_dict()
    assert metric and bound and not set(metric) & set(bound)
    _contained(cli, metric)
    _contained(cli, bound)


def test_proof_certificate(pl, run_cli, net_theta):
    net, _ = net_theta
    cli = run_json(run_cli, "prove", "--ff", FF_TEXT)
    cert = pl.prove_rank(net)
    d = cert.to_dict()
    assert d["proved"] is True and d["rank"] == net.d - 11 == cert.rank
    _contained(cli, d)
