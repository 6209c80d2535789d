"""Issue 31's acceptance: the ReLU networks researchers use every day import with from_torch and
compute what they compute -- torchvision's squeezenet1_1, googlenet, mnasnet0_5 and
shufflenet_v2_x0_5 (ceil_mode pools, x.mean([2, 3]), chunk and channel shuffles), a U-Net-like
model (reflect padding, ConvTranspose2d, nearest upsampling, skip by cat), a 1-D audio CNN
(ceil_mode MaxPool1d, .mean(dim=2)) and a strided Conv1d that never reads its last entries.

References are independent of pathlift: the model itself (forward), PyTorch autograd (the chain
rule L dPhi), and bench/torch_recipes.py's float64 recipes (pathnorm-pytorch's path-norm:
|w|^s, no ReLU, max-pools as sum-pools over the same windows, ceil_mode included, average
weights to the power s, all-ones input; pathcond's kernel diagonal: the gradient of the s = 2
model)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
nn = torch.nn
F = torch.nn.functional

import torch_recipes as R  # noqa: E402  (bench/, on sys.path by conftest)

ZOO = ["squeezenet1_1", "googlenet", "mnasnet0_5", "shufflenet_v2_x0_5"]


def zoo_model(name):
    kwargs = {"aux_logits": False, "init_weights": False} if name == "googlenet" else {}
    return R.torchvision_model(name, **kwargs)


def zoo_net(pl, name, shape):
    """zoo_model(name) and pathlift's import of it on inputs of this shape."""
    model = zoo_model(name)
    return model, pl.from_torch(model, input_shape=shape)


def rel(a, b):
    return abs(a - b) / abs(b)


@pytest.mark.parametrize("name", ZOO)
def test_torchvision_models_at_224_equal_the_recipes(pathlift_module, name):
    pl = pathlift_module
    shape = (3, 224, 224)
    model, net = zoo_net(pl, name, shape)
    theta = np.asarray(net.weights)
    np.testing.assert_array_equal(theta, R.theta(model).numpy())
    lm = R.LinearModel(model, shape)
    for s in (1.0, 2.0):
        got = float(pl.path_norm(net, s=s))
        assert rel(got, R.path_norm_recipe(lm, s=s)) < 1e-10, (name, s)
    diag = np.asarray(pl.kernel_diagonal(net))
    want = R.kernel_diagonal_recipe(lm)
    assert np.abs(diag - want).max() <= 1e-10 * np.abs(want).max(), name


@pytest.mark.parametrize("name", ZOO)
def test_torchvision_models_forward_where_they_unroll(pathlift_module, name):
    pl = pathlift_module
    shape = (3, 32, 32)
    model, net = zoo_net(pl, name, shape)
    X = torch.randn(3, *shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(X).numpy()
    got = pl.forward(net, None, X.reshape(3, -1).numpy()).outputs
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())


class UNet(nn.Module):
    """An encoder-decoder of the path-metric literature's kind: reflect-padded convolutions, a
    ceil_mode max-pool, a transposed convolution, a skip by cat, nearest upsampling, and the
    spellings x * 2.0, clamp(min=0), chunk, split, slicing and F.pad."""

    def __init__(self, size=7, width=(2, 4, 6)):
        super().__init__()
        c_in, c, c_down = width
        self.size = size  # odd: the ceil_mode pool keeps a last window of one entry
        self.enc = nn.Conv2d(c_in, c, 3, padding=1, padding_mode="reflect")
        self.down = nn.Conv2d(c, c_down, 3, padding=1, padding_mode="replicate")
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.up = nn.ConvTranspose2d(c_down, c, 3, stride=2, padding=1, output_padding=1)
        self.mid = nn.Conv2d(2 * c, c, 3, padding=1, padding_mode="circular")
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        n = self.size
        e = torch.relu(self.enc(x))                        # c x n x n
        d = self.pool(torch.clamp(self.down(e), min=0))    # c_down x (n + 1) / 2 (ceil)
        u = torch.relu(self.up(d))[:, :, :n, :n] * 2.0     # c x (n + 1), cropped to n x n
        h = torch.relu(self.mid(torch.cat([u, e], dim=1)))
        a, b = h.chunk(2, dim=1)
        h = torch.cat([b, F.pad(a, (1, 0, 0, 1), mode="replicate")[:, :, 1:, :-1]], dim=1)
        h = F.avg_pool2d(self.upsample(h), 3, stride=2, ceil_mode=True)
        return self.head(h) / 4


class Audio(nn.Module):
    """A 1-D audio CNN (M5-like): a strided first convolution, ceil_mode max-pools, BatchNorm,
    the mean over time, a linear head."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(1, 4, 8, stride=4)
        self.bn1 = nn.BatchNorm1d(4)
        self.pool1 = nn.MaxPool1d(3, ceil_mode=True)
        self.conv2 = nn.Conv1d(4, 6, 3)
        self.pool2 = nn.MaxPool1d(2, ceil_mode=True)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        h = self.pool1(F.relu(self.bn1(self.conv1(x))))
        h = self.pool2(F.relu(self.conv2(h)))
        return self.fc(h.mean(dim=2))


def randomized(model):
    torch.manual_seed(0)
    model = model.double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p))
    return R.randomize_batch_norms(model).eval()


@pytest.mark.parametrize("make, shape", [(UNet, (2, 7, 7)),
                                         (lambda: UNet(3, (1, 2, 2)), (1, 3, 3)),
                                         (Audio, (1, 203))])
def test_unet_and_audio_cnn(pathlift_module, make, shape):
    pl = pathlift_module
    model = randomized(make())
    net = pl.from_torch(model, input_shape=shape)
    theta = np.asarray(net.weights)
    X = torch.randn(4, *shape, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want = model(X).reshape(4, -1).numpy()
    x = X.reshape(4, -1).numpy()
    got = pl.forward(net, None, x).outputs
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    lm = R.LinearModel(model, shape)
    for s in (1.0, 2.0):
        assert rel(float(pl.path_norm(net, s=s)), R.path_norm_recipe(lm, s=s)) < 1e-12
    # The layer dynamic programme and the unrolled network agree.
    dag = net.unrolled()
    np.testing.assert_allclose(pl.kernel_diagonal(net), pl.kernel_diagonal(dag, theta),
                               rtol=1e-12, atol=1e-300)
    assert pl.count_paths(net).length_histogram == pl.count_paths(dag).length_histogram
    if any(isinstance(m, nn.BatchNorm1d) for m in model.modules()) or \
            pl.count_paths(net).log10_paths > 7:
        return  # autograd differentiates gamma and beta (theta holds a and b); too many paths
    # The chain rule: d(sum of the outputs) / d theta = 1^T L(x) dPhi, against autograd.
    lin = pl.linearize(net, None, x)
    J = pl.jacobian(net)
    chain = np.asarray((np.ones(lin.L.shape[0]) @ lin.L) @ J).ravel()
    model.zero_grad()
    model(X).sum().backward()
    grad = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy()
    np.testing.assert_allclose(chain, grad, rtol=1e-10, atol=1e-10 * np.abs(grad).max())


class Strided(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 2, 4, stride=3)
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        return self.fc(torch.flatten(F.relu(self.conv(x)), 1))


def test_unread_input_entries_are_inputs_without_paths(pathlift_module):
    """Entries 10 and 11 of a length-12 input are read by no window (stride 3, kernel 4): the
    input keeps its 12 entries; forward, linearize, jacobian and rank work."""
    pl = pathlift_module
    model = randomized(Strided())
    net = pl.from_torch(model, input_shape=(1, 12))
    X = torch.randn(5, 1, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        want = model(X).numpy()
    x = X.reshape(5, -1).numpy()
    np.testing.assert_allclose(pl.forward(net, None, x).outputs, want, rtol=1e-13, atol=1e-14)
    dag = net.unrolled()
    assert len(dag.data_inputs) == 12
    lin = pl.linearize(net, None, x)
    np.testing.assert_allclose((lin.L @ pl.path_lifting(net)).reshape(want.shape), want,
                               rtol=1e-12, atol=1e-13)
    r = pl.rank(net)
    assert r["rank_B"] == r["expected"]
    # The unread entries change nothing.
    x2 = x.copy()
    x2[:, 10:] += 100.0
    np.testing.assert_array_equal(pl.forward(net, None, x2).outputs,
                                  pl.forward(net, None, x).outputs)


def test_googlenet_refused_options_are_listed_at_once(pathlift_module):
    pl = pathlift_module
    model = zoo_model("googlenet")
    pools = [m for m in model.modules() if isinstance(m, nn.MaxPool2d)]
    for m in pools:
        m.return_indices = True
    with pytest.raises(pl.UnsupportedModelError) as info:
        pl.from_torch(model, input_shape=(3, 64, 64))
    message = str(info.value)
    assert len(pools) == 13 and f"{len(pools)} problems" in message, message[:300]
    assert message.count("return_indices=True") == 13
    assert "not used by the forward pass" not in message


@pytest.mark.parametrize("name, words", [("mobilenet_v2", "ReLU6"), ("efficientnet_b0", "SiLU")])
def test_non_relu_networks_are_still_refused(pathlift_module, name, words):
    pl = pathlift_module
    with pytest.raises(pl.UnsupportedModelError) as info:
        pl.from_torch(zoo_model(name), input_shape=(3, 64, 64))
    assert words in str(info.value)


def test_torch_functions_on_the_new_layers(pathlift_module):
    """pathlift.torch's path_norm (autograd), kernel_diagonal, PathSGD and rescale on the U-Net
    (transposed convolution, gathers, scale, ceil_mode pools)."""
    pl = pathlift_module
    import pathlift.torch as pt

    shape = (1, 3, 3)
    model = randomized(UNet(3, (1, 2, 2)))
    norm = pt.path_norm(model, 2.0, input_shape=shape)
    norm.backward()
    grad = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy()
    net = pl.from_torch(model, input_shape=shape)
    np.testing.assert_allclose(grad, pl.path_norm_gradient(net, None, 2.0), rtol=1e-11)
    diag = torch.cat([d.reshape(-1) for d in pt.kernel_diagonal(model, input_shape=shape,
                                                                 per_parameter=True)])
    np.testing.assert_allclose(diag.numpy(), pl.kernel_diagonal(net), rtol=1e-12)
    X = torch.randn(4, *shape, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    # rescale: the ReLU nodes of a reflect-padded convolution and of a transposed convolution
    # (parameters in and out), one factor per channel: the same function.
    seq = randomized(nn.Sequential(nn.Conv2d(1, 2, 3, padding=1, padding_mode="reflect"),
                                   nn.ReLU(), nn.ConvTranspose2d(2, 3, 2, stride=2), nn.ReLU(),
                                   nn.Conv2d(3, 2, 1), nn.Flatten()))
    dag = pl.from_torch(seq, input_shape=shape).unrolled()
    factors = {"1": [2.0, 0.5], "3": [3.0, 0.25, 1.5]}  # per layer, per channel
    lambdas = [factors[name.split("[")[0]][int(name.split("[")[1].split(",")[0])]
               for name in (dag.node_name(v) for v in dag.hidden)]
    copy = pt.rescale(seq, np.array(lambdas), input_shape=shape)
    with torch.no_grad():
        np.testing.assert_allclose(copy(X).numpy(), seq(X).numpy(), rtol=1e-11, atol=1e-12)
        assert not torch.allclose(copy[2].weight, seq[2].weight)
    before = float(pt.path_norm(model, 1.0, input_shape=shape))
    opt = pt.PathSGD(model, lr=1e-3, input_shape=shape)
    loss = model(X).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert float(pt.path_norm(model, 1.0, input_shape=shape)) != before


class ShapeReads(nn.Module):
    """``n, c, h, w = x.shape`` (unpacking a traced attribute) and a slice bounded by a traced
    size, ``y[:, :, :x.shape[2] - 1]``."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 3 * 4, 2)

    def forward(self, x):
        n, c, h, w = x.shape
        y = torch.relu(self.c(x))[:, :, :x.shape[2] - 1]
        return self.fc(y.reshape(n, -1))


def test_shapes_read_from_the_traced_tensor(pathlift_module):
    pl = pathlift_module
    model = randomized(ShapeReads())
    net = pl.from_torch(model, input_shape=(2, 4, 4))
    X = torch.randn(3, 2, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        want = model(X).numpy()
    np.testing.assert_allclose(pl.forward(net, None, X.reshape(3, -1).numpy()).outputs, want,
                               rtol=1e-12, atol=1e-13)
