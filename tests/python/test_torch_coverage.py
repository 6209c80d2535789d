"""ReLU networks written with other operations than nn.ReLU (issue 31's coverage): each imports
with from_torch and computes what the model computes; what is not positively homogeneous is
refused by name."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


class Clamped(nn.Module):
    """Every spelling of clamp(min=0): functions, methods, in place, clip and clamp_min."""

    def __init__(self, spelling):
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2, self.fc3 = nn.Linear(5, 7), nn.Linear(7, 6), nn.Linear(6, 3)
        self.spelling = spelling

    def forward(self, x):
        h = self.fc1(x)
        h = {"torch.clamp": lambda t: torch.clamp(t, min=0),
             "torch.clip": lambda t: torch.clip(t, 0),
             "torch.clamp_min": lambda t: torch.clamp_min(t, 0.0),
             "method": lambda t: t.clamp(min=0),
             "method_min": lambda t: t.clamp_min(0),
             "in_place": lambda t: t.clamp_(min=0)}[self.spelling](h)
        return self.fc3(self.fc2(h).clamp(0))


@pytest.mark.parametrize("spelling", ["torch.clamp", "torch.clip", "torch.clamp_min", "method",
                                      "method_min", "in_place"])
def test_clamp_at_zero_is_a_relu(pathlift_module, spelling):
    pl = pathlift_module
    model = Clamped(spelling).double().eval()
    net = pl.from_torch(model, input_shape=(5,))
    X = torch.randn(40, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(X).numpy()
    np.testing.assert_allclose(pl.forward(net, None, X.numpy()).outputs, want, rtol=1e-12,
                               atol=1e-14)
    # The same network as with nn.ReLU: same graph of activations, same path-norms.
    relu = nn.Sequential(model.fc1, nn.ReLU(), model.fc2, nn.ReLU(), model.fc3)
    same = pl.from_torch(relu, input_shape=(5,))
    for s in (1.0, 2.0):
        assert pl.path_norm(net, s=s).log10 == pytest.approx(pl.path_norm(same, s=s).log10,
                                                             rel=1e-13)


class Bounded(nn.Module):
    def __init__(self, low, high):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 4), nn.Linear(4, 2)
        self.low, self.high = low, high

    def forward(self, x):
        return self.fc2(torch.clamp(self.fc1(x), min=self.low, max=self.high))


@pytest.mark.parametrize("low, high, words", [(0, 6, "max=6"), (0.5, None, "min=0.5"),
                                              (-1, None, "min=-1")])
def test_other_clamps_are_refused_by_name(pathlift_module, low, high, words):
    pl = pathlift_module
    with pytest.raises(pl.UnsupportedModelError) as info:
        pl.from_torch(Bounded(low, high).eval(), input_shape=(4,))
    message = str(info.value)
    assert words in message and "positively homogeneous" in message and "clamp" in message


class GlobalMean(nn.Module):
    """mnasnet's head (x.mean([2, 3])) and a 1-D audio CNN's (.mean(dim=2)), and keepdim."""

    def __init__(self, dims, spelling):
        super().__init__()
        torch.manual_seed(0)
        conv = nn.Conv2d if dims == 2 else nn.Conv1d
        self.conv, self.fc = conv(2, 4, 3), nn.Linear(4, 3)
        self.dims, self.spelling = dims, spelling

    def forward(self, x):
        h = torch.relu(self.conv(x))
        spatial = [2, 3] if self.dims == 2 else 2
        if self.spelling == "method":
            h = h.mean(spatial)
        elif self.spelling == "function":
            h = torch.mean(h, dim=spatial)
        elif self.spelling == "negative":
            h = h.mean([-2, -1] if self.dims == 2 else -1)
        else:  # keepdim, then a flatten
            h = torch.flatten(h.mean(spatial, keepdim=True), 1)
        return self.fc(h)


@pytest.mark.parametrize("dims, shape", [(2, (2, 7, 6)), (1, (2, 11))])
@pytest.mark.parametrize("spelling", ["method", "function", "negative", "keepdim"])
def test_mean_over_the_spatial_dims_is_a_global_average_pool(pathlift_module, dims, shape,
                                                             spelling):
    pl = pathlift_module
    model = GlobalMean(dims, spelling).double().eval()
    net = pl.from_torch(model, input_shape=shape)
    X = torch.randn(30, *shape, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want = model(X).numpy()
    np.testing.assert_allclose(pl.forward(net, None, X.reshape(30, -1).numpy()).outputs, want,
                               rtol=1e-12, atol=1e-14)
    # The norms equal those of the same model with nn.AdaptiveAvgPool (the average's weight
    # 1 / positions to the power s on each path).
    pool = nn.AdaptiveAvgPool2d(1) if dims == 2 else nn.AdaptiveAvgPool1d(1)
    same = nn.Sequential(model.conv, nn.ReLU(), pool, nn.Flatten(), model.fc)
    reference = pl.from_torch(same, input_shape=shape)
    for s in (1.0, 2.0):
        assert pl.path_norm(net, s=s).log10 == pytest.approx(
            pl.path_norm(reference, s=s).log10, rel=1e-13)


class OtherMean(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.dims = dims

    def forward(self, x):
        return torch.relu(self.conv(x)).mean(self.dims)


@pytest.mark.parametrize("dims, words", [(1, "a mean over dims (1) of a 4-dim tensor"),
                                         (3, "a mean over dims (3) of a 4-dim tensor")])
def test_other_means_are_refused_by_name(pathlift_module, dims, words):
    pl = pathlift_module
    with pytest.raises(pl.UnsupportedModelError) as info:
        pl.from_torch(OtherMean(dims).eval(), input_shape=(2, 6, 6))
    assert words in str(info.value) and "global average pool" in str(info.value)


class ManyRefusals(nn.Module):
    """Refused options after a refused layer: each is reported, not hidden by the first."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.up = nn.Upsample(scale_factor=2, mode="bicubic")  # weights not represented
        self.pool1 = nn.MaxPool2d(2, return_indices=True)
        self.pool2 = nn.AvgPool2d(2, divisor_override=3)
        self.six = nn.ReLU6()

    def forward(self, x):
        h = self.pool1(torch.relu(self.up(self.conv(x))))
        h = torch.nn.functional.interpolate(self.pool2(self.six(h)), scale_factor=2,
                                            mode="bicubic")
        return torch.nn.functional.avg_pool2d(h, 2, divisor_override=3)


def test_every_problem_is_reported_at_once(pathlift_module):
    pl = pathlift_module
    with pytest.raises(pl.UnsupportedModelError) as info:
        pl.from_torch(ManyRefusals().eval(), input_shape=(2, 12, 12))
    message = str(info.value)
    assert "6 problems" in message, message
    for words in ("Upsample at 'up': mode 'bicubic' is not supported",
                  "MaxPool2d at 'pool1': return_indices=True",
                  "AvgPool2d at 'pool2': divisor_override is not supported",
                  "ReLU6 at 'six': not positively homogeneous",
                  "interpolate", "mode 'bicubic'", "divisor_override is not supported"):
        assert words in message, (words, message)
    assert "not used by the forward pass" not in message  # the refused layers' parameters
    # supports() lists the same problems; without an input shape too (and that it needs one).
    assert len(pl.supports(ManyRefusals().eval(), input_shape=(2, 12, 12)).problems) == 6
    assert len(pl.supports(ManyRefusals().eval()).problems) == 7
