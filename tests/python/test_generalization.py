"""The path-norm toolkit's generalization bound (docs/generalization.md): Theorem 3.1's formula
recomputed here from the report's own constants, the constants torchvision's resnet18 has, the
bound against pathlift.path_norm, the training-set terms against torch, the CLI against Python."""

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

N = 1268355
B = 2.64


def theorem(r):
    """C, Remark 3.1's C and the coefficient, from the report's D, P, K, M, d_in, d_out."""
    io = (r.d_in + 1) * r.d_out
    C = math.sqrt(r.D * math.log((3 + 2 * r.P) * r.K) + math.log((3 + 2 * r.P) / (1 + r.P) * io))
    Cs = math.sqrt(r.D * math.log(3) + r.M * math.log(r.K) + math.log(io))
    return C, Cs, 4 * C * max(r.B, 1) / math.sqrt(r.n)


def small_cnn(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2, ceil_mode=True), nn.Flatten(),
                         nn.Linear(4 * 3 * 3, 3)).double().eval()


def test_resnet18_at_imagenet_size(pl):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    net = pl.from_torch(torchvision.models.resnet18().eval(), (3, 224, 224))
    r = pl.generalization_bound(net, n=N, input_bound=B, progress=False)
    assert (r.P, r.K, r.M, r.d_in, r.d_out) == (1, 9, 1, 150528, 1000)
    # conv1, bn1, the max pool, (conv, bn) x 16, the average pool and fc into the outputs: the
    # adds and the batch norms before a ReLU are absorbed by the node they feed.
    assert r.D == 37 and r.D_exact
    C, Cs, coefficient = theorem(r)
    assert r.C == pytest.approx(C, rel=1e-12)
    assert r.C_sharp == pytest.approx(Cs, rel=1e-12)
    assert r.coefficient == pytest.approx(coefficient, rel=1e-12)
    l1 = pl.path_norm(net, None, 1)
    assert r.log10_l1_path_norm == pytest.approx(l1.log10, rel=1e-14)
    assert r.log10_bound == pytest.approx(math.log10(r.coefficient) + l1.log10, rel=1e-12)
    assert r.bound == pytest.approx(r.coefficient * float(l1), rel=1e-12)


def test_the_layers_depth_is_the_counted_one_on_resnet34(pl):
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet34().eval()
    # At 3x224x224 the path lengths are too many to count: D comes from the layers.
    big = pl.generalization_bound(pl.from_torch(model, (3, 224, 224)), n=N, input_bound=B,
                                  progress=False)
    assert not big.D_exact
    # At 3x32x32 they are counted; the depth of a ResNet does not depend on the input's size.
    small = pl.generalization_bound(pl.from_torch(model, (3, 32, 32)), n=N, input_bound=B,
                                    progress=False)
    assert small.D_exact and small.D == pl.count_paths(pl.from_torch(model, (3, 32, 32))) \
        .max_path_length
    assert big.D == small.D == 69


def test_the_training_set_terms_are_torchs(pl):
    import pathlift.torch as pt
    model = small_cnn()
    g = torch.Generator().manual_seed(1)
    X = torch.randn(70, 1, 12, 12, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (70,), generator=g)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16)
    b = pt.generalization_bound(model, loader, progress=False)
    assert b.n == 70
    assert b.input_bound == float(X.abs().max())
    with torch.no_grad():
        out = model(X)
        assert b.empirical_loss == pytest.approx(float(nn.functional.cross_entropy(out, y)),
                                                 rel=1e-12)
        assert b.train_error == pytest.approx(float((out.argmax(1) != y).double().mean()))
    direct = pl.generalization_bound(pl.from_torch(model, (1, 12, 12)), n=70,
                                     input_bound=float(X.abs().max()), progress=False)
    assert b.to_dict() == {**direct.to_dict(), "empirical_loss": b.empirical_loss,
                           "train_error": b.train_error, "loss_bound": b.loss_bound}
    assert b.loss_bound == pytest.approx(b.empirical_loss + direct.bound, rel=1e-15)
    # The fields of the report read through: two max pools on a path, 2 x 2 windows.
    assert (b.P, b.K, b.M) == (1, 4, 2)
    # Two tensors are taken as well as a DataLoader.
    again = pt.generalization_bound(model, (X, y), batch_size=7, progress=False)
    assert (again.n, again.input_bound, again.report.to_dict()) == (b.n, b.input_bound,
                                                                   b.report.to_dict())
    assert again.empirical_loss == pytest.approx(b.empirical_loss, rel=1e-14)


def test_refusals_name_what_is_wrong(pl):
    import pathlift.torch as pt
    model = small_cnn()
    X = torch.randn(4, 1, 12, 12, dtype=torch.float64)
    y = torch.zeros(4, dtype=torch.long)
    net = pl.from_torch(model, (1, 12, 12))
    with pytest.raises(ValueError, match=r"number of samples n must be finite and > 0 \(got 0\)"):
        pl.generalization_bound(net, n=0, input_bound=1)
    with pytest.raises(ValueError, match=r"input bound B must be finite and >= 0 \(got -1\)"):
        pl.generalization_bound(net, n=10, input_bound=-1)
    leaky = nn.Sequential(nn.Linear(3, 4), nn.LeakyReLU(0.1), nn.Linear(4, 2)).eval()
    with pytest.raises(ValueError, match=r"layer '1' has activation leaky_relu.*Theorem 3\.1"):
        pl.generalization_bound(pl.from_torch(leaky, (3,)), n=10, input_bound=1)
    model.train()
    with pytest.raises(ValueError, match=r"training mode"):
        pt.generalization_bound(model, (X, y), progress=False)
    model.eval()
    with pytest.raises(ValueError, match="no sample"):
        pt.generalization_bound(model, [], input_shape=(1, 12, 12), progress=False)
    with pytest.raises(ValueError, match=r"n must be a whole number \(got 2\.5\)"):
        pl.generalization_bound(net, n=2.5, input_bound=1)
    classes = model(X).shape[1]
    with pytest.raises(ValueError, match=rf"batch 0 holds the label {classes}, but the model has "
                                         rf"{classes} outputs"):
        pt.generalization_bound(model, (X, torch.full((4,), classes)), progress=False)
    with pytest.raises(ValueError, match=r"label -1"):
        pt.generalization_bound(model, (X, torch.full((4,), -1)), progress=False)
    with pytest.raises(ValueError, match=r"labels of batch 0 must be an integer tensor of 4 class "
                                         r"indices .* got dtype torch.float64 and shape \(4,\)"):
        pt.generalization_bound(model, (X, y.double()), progress=False)
    # labels of another integer dtype are class indices all the same
    assert pt.generalization_bound(model, (X, y.int()), progress=False).empirical_loss == \
        pt.generalization_bound(model, (X, y), progress=False).empirical_loss
    with pytest.raises(pl.NetworkError, match=r"the input shape \(144,\) is the first batch's"):
        pt.generalization_bound(model, (X.reshape(4, 144), y), progress=False)


def test_the_cli_prints_the_library_report(pl, run_cli, tmp_path):
    model = small_cnn()
    path = tmp_path / "cnn.json"
    net = pl.from_torch(model, (1, 12, 12))
    path.write_text(net.layer_graph.to_json())
    result = run_cli("bound", "--network", str(path), "--samples", "500", "--input-bound", "3", "--json")
    assert result.returncode == 0, result.stderr
    j = json.loads(result.stdout)
    report = pl.generalization_bound(net, n=500, input_bound=3, progress=False).to_dict()
    assert {k: j[k] for k in report} == report
    assert j["format"] == "pathlift-bound" and j["d"] == net.d
    text = run_cli("bound", "--network", str(path), "--samples", "500", "--input-bound", "3")
    assert text.returncode == 0 and "Theorem 3.1" in text.stdout
    assert f"D            {j['D']}  (longest input-to-output path" in text.stdout
    bad = run_cli("bound", "--network", str(path), "--samples", "0", "--input-bound", "3")
    assert bad.returncode != 0 and "--samples" in bad.stderr
    missing = run_cli("bound", "--network", str(path), "--samples", "5")
    assert missing.returncode != 0 and "--input-bound" in missing.stderr
    assert np.isfinite(j["C"])
