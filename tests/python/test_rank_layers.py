"""The rank theorem on real CNNs (docs/rank.md#layer-graphs, #zero-weights, #table):
rank(B) = d - h_sym certified without unrolling, h_sym computed on the layer graph, rank(dPhi)
by the identity or exactly by the zero pattern, on ONNX exports, PyTorch imports and the CLI.
The independent references: the unrolled network's h_sym (its own union-find over the DAG's
edges) and the enumerated route (elimination of B and of the exact entries of dPhi modulo p)."""

import json
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
nn = torch.nn


@pytest.fixture(scope="module")
def resnet18_onnx(tmp_path_factory):
    """torchvision's resnet18 as a user exports it: untrained, eval mode (BatchNorm folded into
    the convolutions, whose biases are then exactly 0)."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("onnx") / "resnet18.onnx"
    torch.onnx.export(torchvision.models.resnet18().eval(), torch.randn(1, 3, 224, 224),
                      str(path), opset_version=13)
    return path


def test_resnet18_onnx_certified_without_enumeration(run_cli, resnet18_onnx):
    reports = {}
    for size in (224, 64):
        r = json.loads(run_cli("rank", "--no-enumerate", "--onnx", resnet18_onnx, "--input-shape",
                               f"3,{size},{size}", "--json", check=True).stdout)
        assert r["status"] == "verified", r["explanation"]
        assert r["rank_B"] == r["rank_J_exact"] == r["expected"] == r["d"] - r["h_sym"]
        assert r["rank_B_method"] == "symmetry" and r["rank_B_certified"]
        # the folded biases are 0: rank(dPhi) by the zero pattern, on the layers
        assert r["zero_weights"] > 0 and r["rank_J_exact_method"] == "zero_pattern"
        reports[size] = r
    assert reports[224]["h_sym"] == reports[64]["h_sym"] == 2880
    assert reports[224]["d"] == 11_684_712
    info = json.loads(run_cli("info", "--onnx", resnet18_onnx, "--input-shape", "3,224,224",
                              "--json", check=True).stdout)
    assert info["h_sym"] == 2880 and info["d_minus_h_sym"] == reports[224]["expected"]
    assert info["h"] == reports[224]["h"]


def test_lenet5_onnx(run_cli):
    path = pathlib.Path(__file__).resolve().parents[1] / "data" / "lenet5.onnx"
    for extra in ([], ["--no-enumerate"]):
        r = json.loads(run_cli("rank", "--onnx", path, "--json", *extra, check=True).stdout)
        assert (r["d"], r["h_sym"], r["rank_B"], r["rank_J_exact"]) == (61706, 226, 61480, 61480)
        assert r["status"] == "verified" and r["rank_B_method"] == "symmetry"
    text = run_cli("info", "--onnx", path, check=True).stdout
    assert "h_sym            226" in text and "d - h_sym        61480" in text


def minimal_cnn():
    return nn.Sequential(nn.Conv1d(1, 2, 2), nn.ReLU(), nn.Flatten(), nn.Linear(4, 1)).double()


def test_the_minimal_zero_weight_case(pl):
    net = pl.from_torch(minimal_cnn().eval(), input_shape=(1, 3))
    assert net.d == 11
    theta = np.array([1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1], dtype=float)
    for enumerate_ in (None, True, False):
        r = pl.rank(net, theta, enumerate=enumerate_)
        assert (r["expected"], r["h_sym"], r["rank_B"]) == (9, 2, 9)
        assert r["rank_J_exact"] == 7 and r["status"] == "theta_in_null_set", r["explanation"]
        assert "2 direction(s) lost" in r["explanation"] or enumerate_ is True
        ones = pl.rank(net, np.ones(11), enumerate=enumerate_)
        assert ones["status"] == "verified" and ones["rank_J_exact"] == 9
    # the exact rank of dPhi by brute force: its 6 paths, derivatives of products of weights
    dag = net.unrolled()
    paths = pl.enumerate_paths(dag)
    B = pl.skeleton(dag).toarray()
    w = theta
    J = np.zeros_like(B)
    for p in range(B.shape[0]):
        for k in np.flatnonzero(B[p]):
            J[p, k] = np.prod([w[j] for j in np.flatnonzero(B[p]) if j != k])
    assert np.linalg.matrix_rank(J) == 7 and len(paths) == B.shape[0]


@pytest.mark.parametrize("name,shape", [("resnet18", (3, 32, 32)), ("squeezenet1_1", (3, 40, 40)),
                                        ("shufflenet_v2_x0_5", (3, 32, 32))])
def test_layer_h_sym_equals_the_unrolled_networks(pl, name, shape):
    torch.manual_seed(0)
    kwargs = {}
    model = getattr(torchvision.models, name)(**kwargs).double().eval()
    net = pl.from_torch(model, input_shape=shape)
    layer = pl.rescaling_symmetry_dimension(net)
    assert not net.is_unrolled
    unrolled = pl.rescaling_symmetry_dimension(net, unroll=True)
    assert layer.h_sym == unrolled.h_sym and layer.unused_params == unrolled.unused_params
    r = pl.rank(net, enumerate=False)
    assert r["h"] == net.unrolled().h and r["h_sym"] == layer.h_sym


def test_zero_weights_on_layers_agree_with_the_enumerated_route(pl):
    """Random zero patterns on small CNNs: the layer route (symmetry theorem, zero pattern on
    the layers or the unrolled DAG) against the enumerated one (eliminations of B and dPhi)."""
    rng = np.random.default_rng(1)
    statuses = set()
    for seed in range(12):
        torch.manual_seed(seed)
        bias = bool(seed % 2)
        stride = 2 if seed % 3 == 0 else 1
        side = 1 if stride == 2 else 2
        model = nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1, bias=bias), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 5, 3, stride=stride, padding=1, bias=not bias), nn.BatchNorm2d(5),
            nn.ReLU(), nn.Flatten(), nn.Linear(5 * side * side, 3)).double().eval()
        net = pl.from_torch(model, input_shape=(2, 4, 4))
        theta = np.asarray(net.weights).copy()
        theta[rng.random(theta.size) < [0.05, 0.2, 0.4][seed % 3]] = 0.0
        layers = pl.rank(net, theta, enumerate=False)
        enumerated = pl.rank(net.unrolled(), theta, enumerate=True)
        assert layers["rank_B"] == enumerated["rank_B"] == layers["expected"]
        assert layers["rank_J_exact"] == enumerated["rank_J_exact"], seed
        assert layers["status"] == enumerated["status"], (seed, layers["explanation"])
        statuses.add(layers["status"])
    assert statuses == {"verified", "theta_in_null_set"}


def small_digits_cnn():
    """A CNN on 4x4 images: d = 3,706, P = 1.3 M. The enumerated route takes about a second and
    adds only the numerical rank of dPhi, whose dense linear algebra is over the automatic limit."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 12, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(12, 24, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(24 * 4, 10)).double().eval()


def test_the_symmetry_certificate_comes_first(pl, run_cli, tmp_path):
    """Issue 51: on a digits CNN the automatic route enumerated 2e7 paths (19 s) to certify what
    the symmetry theorem certifies at once, then skipped the numerical rank as too costly. The
    paths are now enumerated only when their numerical rank would run, or when asked
    (enumerate=True, --enumerate), which agrees; the note says why they were not."""
    model = small_digits_cnn()
    net = pl.from_torch(model, input_shape=(1, 4, 4))
    auto = pl.rank(net)
    asked = pl.rank(net, enumerate=True)
    assert auto["rank_B"] == asked["rank_B"] == auto["expected"] == net.d - auto["h_sym"]
    assert auto["rank_B_certified"] and auto["status"] == asked["status"] == "verified"
    assert auto["rank_J_exact"] == asked["rank_J_exact"] == auto["rank_B"]
    assert auto["rank_J"] is None and "symmetry theorem certifies rank(B)" in auto["rank_J_note"]
    assert asked["rank_J_note"] is None or "symmetry theorem" not in asked["rank_J_note"]
    path = tmp_path / "cnn.onnx"
    torch.onnx.export(model.float(), torch.zeros(1, 1, 4, 4), str(path), input_names=["x"],
                      output_names=["y"], opset_version=13)
    cli_auto = json.loads(run_cli("rank", "--onnx", path, "--json", check=True).stdout)
    cli_enum = json.loads(run_cli("rank", "--onnx", path, "--json", "--enumerate",
                                  check=True).stdout)
    assert cli_auto["rank_B"] == cli_enum["rank_B"] == cli_auto["expected"] == auto["rank_B"]
    assert "symmetry theorem certifies rank(B)" in cli_auto["rank_J_note"]
    assert "symmetry theorem" not in (cli_enum["rank_J_note"] or "")
    bad = run_cli("rank", "--onnx", path, "--enumerate", "--no-enumerate")
    assert bad.returncode == 2


def test_a_layer_applied_twice_takes_the_path_free_route(pl):
    """A Linear applied twice puts its weights twice on some paths: the skeleton B (0/1) cannot
    hold them, so the automatic route certifies rank(B) by the symmetry theorem instead of
    refusing; it agrees with the rank of dPhi from the enumerated Jacobian (which handles the
    sharing). Asked for the enumerated route, rank still refuses, naming the parameter."""
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 2)

        def forward(self, x):
            return self.b(torch.relu(self.a(torch.relu(self.a(x)))))

    torch.manual_seed(0)
    model = Twice().double().eval()
    net = pl.from_torch(model, input_shape=(3,))
    theta = pl.theta_from_torch(model)
    jacobian_rank = np.linalg.matrix_rank(pl.jacobian(net.unrolled(), theta).toarray())
    for subject in (net, net.unrolled()):
        r = pl.rank(subject, theta)
        assert (r["status"], r["rank_B_method"]) == ("verified", "symmetry"), r
        assert r["rank_B"] == r["rank_J_exact"] == jacobian_rank
        assert "carried twice by one path" in r["rank_J_note"]
    asked = pl.rank(net, theta, numerical=True)  # the numerical rank would need B: not built
    assert (asked["status"], asked["rank_B_method"]) == ("verified", "symmetry")
    assert "parameter 0 is carried twice by one path" in asked["rank_J_note"]
    with pytest.raises(pl.NetworkError, match="carries parameter 0 twice"):
        pl.rank(net, theta, enumerate=True)
