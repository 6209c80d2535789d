"""A researcher's first hour (issue 51): what a first session with pathlift runs into.

* A module in training mode: one rule on every face that takes a module (from_torch,
  theta_from_torch, path_norm, PathSGD, path_cond, ...): a BatchNorm (or a Dropout) in training
  mode is refused, naming it by its module path and saying the remedy; the same model is
  accepted after model.eval() by every face.
* PathCond and ENorm stopped by max_sweeps before their tolerance: a RuntimeWarning (the CLI
  prints "(not converged)"), from pathlift and from pathlift.torch alike.
* from_torch without input_shape on a CNN: one short line saying what to pass, not the list of
  supported modules (which follows unsupported operations).
* repr(ParameterClasses) says the classes, the parameters they cover and the constraints.
* theta's order: from_onnx of a ResNet whose modules run in another order than they are
  registered, exported with the aliases torch.onnx.export makes for equal parameters, orders
  theta otherwise than from_torch; pathlift.theta_permutation maps one to the other.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_first_hour.py
"""
import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


@pytest.fixture(scope="module")
def pl(pathlift_module):
    import pathlift.torch  # noqa: F401  (pathlift.torch below)

    return pathlift_module


SHAPE = (2, 6, 6)


class CNN(nn.Module):
    """A convolution feeding a BatchNorm, nested (the BatchNorm's path is 'features.1')."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU())
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))

    def forward(self, x):
        return self.head(self.features(x))


def cnn():
    torch.manual_seed(0)
    model = CNN().double()
    with torch.no_grad():
        bn = model.features[1]
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-1, 1)
    return model


def faces(pl, theta):
    """Every face that takes a module: (name in the message, call on the module)."""
    pt = pl.torch
    return [
        ("pathlift.from_torch", lambda m: pl.from_torch(m, SHAPE)),
        ("pathlift.layer_graph_from_torch", lambda m: pt.layer_graph_from_torch(m, SHAPE)),
        ("pathlift.theta_from_torch", lambda m: pl.theta_from_torch(m)),
        ("pathlift.load_theta", lambda m: pt.load_theta(m, theta)),
        ("pathlift.torch.theta_tensor", lambda m: pt.theta_tensor(m)),
        ("pathlift.torch.path_norm", lambda m: pt.path_norm(m, 1.0, input_shape=SHAPE)),
        ("pathlift.torch.kernel_diagonal", lambda m: pt.kernel_diagonal(m, input_shape=SHAPE)),
        ("PathSGD", lambda m: pt.PathSGD(m, lr=0.1, input_shape=SHAPE)),
        ("pathlift.torch.kernel_operator", lambda m: pt.kernel_operator(m, input_shape=SHAPE)),
        ("pathlift.torch.lipschitz_bound", lambda m: pt.lipschitz_bound(m, cnn().eval(),
                                                                         input_shape=SHAPE)),
        (r"pathlift.torch.lipschitz_bound \(model2\)",
         lambda m: pt.lipschitz_bound(cnn().eval(), m, input_shape=SHAPE)),
        ("pathlift.torch.path_cond", lambda m: pt.path_cond(m, input_shape=SHAPE)),
        ("pathlift.torch.enorm", lambda m: pt.enorm(m, input_shape=SHAPE)),
        ("pathlift.torch.fold_batchnorm", lambda m: pt.fold_batchnorm(m)),
    ]


def parameters(model):
    return [p.detach().clone() for p in model.parameters()]


def test_every_face_refuses_a_batch_norm_in_training_mode_and_accepts_it_after_eval(pl):
    theta = pl.theta_from_torch(cnn().eval())
    for what, call in faces(pl, theta):
        model = cnn()
        assert model.training
        before = parameters(model)
        with pytest.raises(ValueError, match=rf"^{what}: CNN is in training mode, where module "
                           r"'features\.1' \(BatchNorm2d\) normalizes by the batch\. .*"
                           r"call model\.eval\(\) first") as info:
            call(model)
        assert isinstance(info.value, pl.UnsupportedModelError), what
        assert model.training and model.features[1].training, what  # the mode is kept
        for p, q in zip(model.parameters(), before):  # nothing written
            assert torch.equal(p, q), what
        call(model.eval())  # the same model, in eval mode: accepted by every face
    ok, problems = pl.supports(cnn(), SHAPE)
    assert not ok and "module 'features.1' (BatchNorm2d) normalizes by the batch" in problems[0]
    assert pl.supports(cnn().eval(), SHAPE).ok


def test_the_remedy_fits_the_face(pl):
    """A training-loop face says how to keep a network across model.train(); path_cond and
    enorm say that the training-mode function is not kept."""
    pt = pl.torch
    with pytest.raises(ValueError, match=r"in a training loop, make the network once in eval "
                       r"mode \(net = pathlift\.from_torch\(model\.eval\(\)\), then "
                       r"model\.train\(\)\) and pass net"):
        pt.path_norm(cnn(), 1.0, input_shape=SHAPE)
    with pytest.raises(ValueError, match=r"the rescaled model then computes the same eval-mode "
                       "function, not the same training-mode one"):
        pt.path_cond(cnn(), input_shape=SHAPE)
    with pytest.raises(ValueError, match=r"call model\.eval\(\) first$"):
        pl.from_torch(cnn(), SHAPE)


def test_a_network_made_in_eval_mode_follows_the_module_in_a_training_loop(pl):
    """The network of the module in eval mode is the eval-mode function whatever the module's
    mode: the training-loop faces read it after model.train(); path_cond and enorm, which
    rescale the module in place, refuse it while a BatchNorm is in training mode (its
    training-mode function would move), as they refuse the module."""
    pt = pl.torch
    model = cnn().eval()
    net = pl.from_torch(model, SHAPE)
    expected = float(pt.path_norm(net, 1.0))
    model.train()
    assert float(pt.path_norm(net, 1.0)) == expected
    pt.kernel_diagonal(net)
    pt.PathSGD(net, lr=0.1)
    for what, call in (("pathlift.torch.path_cond", pt.path_cond),
                       ("pathlift.torch.enorm", pt.enorm)):
        before = parameters(model)
        with pytest.raises(pl.UnsupportedModelError,
                           match=rf"^{what}: CNN is in training mode, where module "
                           r"'features\.1' \(BatchNorm2d\)"):
            call(net)
        for p, q in zip(model.parameters(), before):
            assert torch.equal(p, q)
    model.eval()
    X = torch.randn(5, *SHAPE, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        f = model(X)
    pt.path_cond(net)
    with torch.no_grad():
        np.testing.assert_allclose(model(X).numpy(), f.numpy(), rtol=1e-10, atol=1e-12)


def test_a_dropout_in_training_mode_is_the_same_rule(pl):
    """Dropout (p > 0) in training mode is random: refused by the same rule (rescale too);
    p = 0 changes nothing and is accepted; a model of Linear and ReLU only, in training mode,
    is accepted (its mode changes nothing)."""
    pt = pl.torch
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4, 2)).double()
    for what, call in (("pathlift.from_torch", lambda m: pl.from_torch(m)),
                       ("pathlift.torch.path_norm", lambda m: pt.path_norm(m, 1.0)),
                       ("pathlift.torch.rescale", lambda m: pt.rescale(m, np.ones(4))),
                       ("PathSGD", lambda m: pt.PathSGD(m, lr=0.1))):
        with pytest.raises(pl.UnsupportedModelError, match=rf"^{what}: Sequential is in "
                           r"training mode, where module '2' \(Dropout\) is random\. pathlift "
                           r"computes the eval-mode function \(Dropout the identity\)"):
            call(model.train())
        call(model.eval())
    pl.from_torch(nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.0), nn.ReLU()).train())
    pt.path_norm(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).train(), 1.0)


def test_many_batch_norms_are_counted_past_three(pl):
    model = nn.Sequential(*[m for _ in range(5) for m in (nn.Linear(3, 3), nn.BatchNorm1d(3))])
    with pytest.raises(pl.UnsupportedModelError, match=r"where module '1' \(BatchNorm1d\), "
                       r"module '3' \(BatchNorm1d\), module '5' \(BatchNorm1d\) and 2 more "
                       r"normalize"):
        pl.from_torch(model)


# --- converged=False ---------------------------------------------------------------------------


def test_a_balancing_that_did_not_converge_warns(pl):
    """max_sweeps=1 stops short of the tolerance: a RuntimeWarning saying the stationarity, the
    tolerance, the sweeps and what to pass, on pathlift.path_cond / enorm and on their
    pathlift.torch faces; none when converged, nor for max_sweeps=0 (the criterion only)."""
    net = pl.feed_forward(3, [5, 4], 2)
    theta = pl.normal_weights(net.d, 0)
    for how, method in ((pl.path_cond, "PathCond"), (pl.enorm, "ENorm")):
        with pytest.warns(RuntimeWarning) as record:
            r = how(net, theta, max_sweeps=1)
        assert not r.converged and len(record) == 1
        assert str(record[0].message) == (
            f"{method} did not converge: stationarity {r.stationarity:.3g} > tolerance 1e-10 "
            "after max_sweeps = 1 sweep; the returned theta computes the same function but is "
            "not yet balanced: pass a larger max_sweeps (or call it again on the result to "
            "continue)")
        assert record[0].filename == __file__  # the caller's line
        with pytest.warns(RuntimeWarning, match=r"tolerance 0\.001 after max_sweeps = 2 "
                          r"sweeps"):
            how(net, theta, max_sweeps=2, tolerance=1e-3)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert how(net, theta).converged
            assert not how(net, theta, max_sweeps=0).converged
    pt = pl.torch
    for how, method in ((pt.path_cond, "PathCond"), (pt.enorm, "ENorm")):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 4), nn.ReLU(),
                              nn.Linear(4, 2)).double()
        with pytest.warns(RuntimeWarning, match=rf"^{method} did not converge: stationarity "
                          r"\S+ > tolerance 1e-10 after max_sweeps = 1 sweep; .*max_sweeps"):
            r = how(model, max_sweeps=1)
        assert not r.converged
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert how(model).converged


# --- input_shape omitted -----------------------------------------------------------------------


def test_a_missing_input_shape_is_one_line_saying_what_to_pass(pl):
    pt = pl.torch
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8, 2)).double()
    expected = ("cannot infer the input shape of Sequential: pass input_shape=(1, H, W), one "
                "sample's shape without the batch dimension (module '0' (Conv2d) takes 1 "
                "channel)")
    for call in (lambda: pl.from_torch(model), lambda: pt.layer_graph_from_torch(model),
                 lambda: pt.path_norm(model, 1.0), lambda: pt.PathSGD(model, lr=0.1),
                 lambda: pt.path_cond(model), lambda: pt.kernel_operator(model)):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == expected
    pl.from_torch(model, input_shape=(1, 4, 4))  # what it says to pass
    for model, shape in ((nn.Sequential(nn.ReLU(), nn.Conv1d(3, 2, 3)), r"\(3, L\)"),
                         (nn.Sequential(nn.Conv2d(4, 2, 3), nn.ReLU()), r"\(4, H, W\)")):
        with pytest.raises(ValueError, match=rf"^cannot infer the input shape of Sequential: "
                           rf"pass input_shape={shape}, .* takes \d channels\)$"):
            pl.from_torch(model)
    with pytest.raises(ValueError, match=r"^cannot infer the input shape of Sequential: pass "
                       r"input_shape, one sample's shape without the batch dimension, e\.g\. "
                       r"\(3, 32, 32\)$"):
        pl.from_torch(nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(1, 2, 3)))
    # With an unsupported operation: every problem at once, then the supported modules.
    with pytest.raises(pl.UnsupportedModelError, match=r"2 problems\n  - layer Sigmoid at '1': "
                       r"not positively homogeneous [^\n]*\n  - cannot infer the input shape of "
                       r"Sequential: pass "
                       r"input_shape=\(1, H, W\).*\nsupported: nn\.Linear"):
        pl.from_torch(nn.Sequential(nn.Conv2d(1, 2, 3), nn.Sigmoid()))


# --- ParameterClasses --------------------------------------------------------------------------


def test_parameter_classes_say_what_they_cover(pl):
    """a -> h -> y and a skip a -> y, and a fourth parameter no edge carries: one class (h), two
    parameters rescaled by it, the skip pinned at both ends, one unused; then on networks with
    several classes, against the target and source arrays."""
    net = pl.Network([("a", "h"), ("h", "y"), ("a", "y")], params=[0, 1, 2], num_params=4)
    assert repr(pl.parameter_classes(net)) == (
        "<pathlift.ParameterClasses: 1 class over d = 4 parameters (2 rescaled, 1 pinned at both "
        "ends, 1 unused), 0 constraints>")
    for net in (pl.feed_forward(3, [5, 4], 2), pl.from_torch(cnn().eval(), SHAPE)):
        c = pl.parameter_classes(net)
        unused = int(np.sum(c.target == -2))
        pinned = int(np.sum((c.target == -1) & (c.source == -1)))
        assert c.classes > 1 and c.target.size == net.d
        assert repr(c) == (
            f"<pathlift.ParameterClasses: {c.classes} classes over d = {net.d} parameters "
            f"({net.d - pinned - unused} rescaled, {pinned} pinned at both ends, {unused} "
            f"unused), {c.constraints} constraints>")


# --- theta orders: from_onnx and from_torch ----------------------------------------------------


class Block(nn.Module):
    """A residual block whose shortcut is registered before the convolutions it runs after."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.shortcut = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(h)) + self.shortcut(x))


class ResNet(nn.Module):
    """A small ResNet whose classifier is registered first."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.layer1 = Block(4, 4, 1)
        self.layer2 = Block(4, 8, 2)

    def forward(self, x):
        h = self.layer2(self.layer1(torch.relu(self.stem(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1))


def onnx_bytes(model, shape, **options):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.zeros((1, *shape), dtype=torch.float64), buffer,
                          opset_version=13, **options)
    return buffer.getvalue()


def test_from_onnx_orders_theta_otherwise_and_theta_permutation_maps_it(pl):
    """A freshly initialized ResNet (every BatchNorm's gamma 1 and beta 0: the exporter keeps one
    initializer and aliases the others) whose modules run in another order than they are
    registered: from_onnx's theta is a permutation of from_torch's. Random running statistics
    make every entry of theta distinct, so that the values check the permutation independently
    of the layers it is made from."""
    pytest.importorskip("onnx", reason="onnx (Debian: python3-onnx) is needed for the export")
    torch.manual_seed(0)
    model = ResNet().double().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.eps = float(np.float32(m.eps))  # as ONNX stores it: the same a and b
    shape = (3, 8, 8)
    torch_net = pl.from_torch(model, shape)
    onnx_net = pl.from_onnx(onnx_bytes(model, shape, training=torch.onnx.TrainingMode.PRESERVE,
                                       do_constant_folding=False))
    t, o = torch_net.weights, onnx_net.weights
    assert np.unique(t).size == t.size == o.size
    assert not np.array_equal(t, o)  # the orders differ (docs/python.md says when)
    np.testing.assert_array_equal(np.sort(o), np.sort(t))  # the same values
    p = pl.theta_permutation(onnx_net, torch_net)
    assert p.dtype == np.int64 and np.array_equal(np.sort(p), np.arange(t.size))
    np.testing.assert_array_equal(o[p], t)
    np.testing.assert_array_equal(t[np.argsort(p)], o)
    np.testing.assert_array_equal(pl.theta_permutation(torch_net, onnx_net), np.argsort(p))
    # written back in the module's order, the ONNX theta is the model's parameters
    copy = ResNet().double().eval()
    copy.load_state_dict(model.state_dict())
    with torch.no_grad():
        for q in copy.parameters():
            q.zero_()
    pl.load_theta(copy, o[p])
    for a, b in zip(copy.parameters(), model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    # LayerGraphs too; the same order: the identity
    assert np.array_equal(pl.theta_permutation(torch_net.layer_graph, torch_net),
                          np.arange(t.size))


def test_theta_permutation_refuses_another_architecture(pl):
    pytest.importorskip("onnx", reason="onnx (Debian: python3-onnx) is needed for the export")
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                          nn.Linear(8, 2)).double().eval()
    torch_net = pl.from_torch(model, (1, 4, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the import's: batch norms folded
        folded = pl.from_onnx(onnx_bytes(model, (1, 4, 4)))  # eval mode: BatchNorm folded
    with pytest.raises(ValueError, match=r"net has d = 38 parameters and reference d = 42: not "
                       r"the same architecture \(an ONNX export in eval mode, for one, folds"):
        pl.theta_permutation(folded, torch_net)
    wide = pl.from_torch(nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1)))
    narrow = pl.from_torch(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2)))
    assert wide.d == narrow.d == 17
    with pytest.raises(ValueError, match=r"layer '0' of net \(linear, parameter blocks of "
                       r"\[8, 4\] entries\) pairs with layer '0' of reference \(linear, "
                       r"\[6, 3\]\): not the same architecture"):
        pl.theta_permutation(wide, narrow)
    with pytest.raises(TypeError, match=r"net must be a LayerNetwork .* got a pathlift\.Network"):
        pl.theta_permutation(pl.feed_forward(2, [2], 1), torch_net)
