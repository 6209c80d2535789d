"""The toolkit's layer kinds from PyTorch: linear / bilinear interpolation (``interpolate``),
GroupSort and MaxMin (``group_sort`` between gathers and concats) and k-max pooling
(``k_max_pool``), each as PyTorch code writes it, imported by pathlift.from_torch.

For every form: the imported network's forward pass equals the module's to 1e-12, and its
path-norms for s = 1 and s = 2 equal an independent recipe written in PyTorch, pathnorm-pytorch's
extended to the new operations: every parameter replaced by |p|^s, an all-ones input of batch
1, every max, min or order statistic replaced by the SUM over its window or group (a GroupSort:
each output of a group is the sum of the group), every interpolation weight w by w^s (the
interpolation as a matrix: PyTorch's module applied to unit vectors, its entries to the power
s), and the output summed: ||Phi||_s^s. The models hold a class attribute ``s`` (None: the
PyTorch model, traced as it is; a number: the recipe) read in forward.

Then the acceptance models (a small U-Net, a MaxMin Lipschitz MLP) and the refusals by name
(interpolation modes whose weights pathlift does not represent, the indices of a sort, a sort of
entries at several positions).
"""
import copy
from typing import Any, Callable, Optional

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

DT = torch.float64


# --------------------------------------------------------------------------------------------
# helpers: the forward pass and the recipe


class Recipe(nn.Module):
    """A model whose forward is the PyTorch model (s None) or its path-norm recipe (s > 0)."""

    s: Optional[float] = None

    def __init__(self, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)


def prepared(model: nn.Module) -> nn.Module:
    return model.double().eval()


def check_forward(pl, model: nn.Module, shape, n: int = 12, seed: int = 1):
    """from_torch's forward equals the module's on random data (1e-12); the network."""
    net = pl.from_torch(model, input_shape=shape)
    X = torch.randn((n, *shape), dtype=DT, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        want = model(X).reshape(n, -1).numpy()
    got = pl.forward(net, None, X.reshape(n, -1).numpy()).outputs
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    return net


def recipe(model: Recipe, shape, s: float) -> float:
    """||Phi||_s^s by the recipe: |p|^s, ones in, sums for orders, w^s for interpolations."""
    m = copy.deepcopy(model)
    m.s = s
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(p.abs() ** s)
        return float(m(torch.ones((1, *shape), dtype=DT)).sum())


def check_path_norms(pl, net, model: Recipe, shape, rel: float = 1e-10):
    for s in (1.0, 2.0):
        got = pl.path_norm(net, s=s).sum
        want = recipe(model, shape, s)
        assert got == pytest.approx(want, rel=rel), (s, got, want)


def check(pl, model: Recipe, shape):
    model = prepared(model)
    check_path_norms(pl, check_forward(pl, model, shape), model, shape)


def interpolated(fn: Callable[[Any], Any], h, s: Optional[float]):
    """fn (an interpolation of h) itself, or in the recipe its matrix (fn applied to unit
    vectors) with each entry to the power s, applied to h."""
    if s is None:
        return fn(h)
    n, c, *spatial = h.shape
    p = int(np.prod(spatial))
    columns = fn(torch.eye(p, dtype=DT).reshape(p, 1, *spatial))  # (p, 1, *out)
    out = columns.shape[2:]
    w = columns.reshape(p, -1)
    assert (w >= 0).all()  # interpolation weights are >= 0
    return (h.reshape(n, c, p) @ w ** s).reshape(n, c, *out)


def group_sums(h, g: int):
    """Each entry replaced by the sum of its group of g consecutive channels (the recipe of a
    GroupSort): channels are dim 1."""
    n, c = h.shape[:2]
    v = h.reshape(n, c // g, g, *h.shape[2:])
    return v.sum(2, keepdim=True).expand(v.shape).reshape(h.shape)


# --------------------------------------------------------------------------------------------
# interpolation: linear (1-D) and bilinear (2-D)


class Interpolate2d(Recipe):
    def __init__(self, resize):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.resize = resize  # a module (a submodule) or a function of the tensor
        self.conv2 = nn.Conv2d(3, 2, 2)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = interpolated(self.resize, h, self.s)
        return self.conv2(torch.relu(h))


class Interpolate1d(Recipe):
    def __init__(self, resize):
        super().__init__()
        self.conv = nn.Conv1d(2, 3, 3, padding=1)
        self.resize = resize
        self.conv2 = nn.Conv1d(3, 2, 2)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = interpolated(self.resize, h, self.s)
        return self.conv2(torch.relu(h))


def bilinear(corners, **kw):
    return lambda h: F.interpolate(h, mode="bilinear", align_corners=corners, **kw)


def linear(corners, **kw):
    return lambda h: F.interpolate(h, mode="linear", align_corners=corners, **kw)


BILINEAR = {
    "x2": bilinear(False, scale_factor=2),
    "x2 corners": bilinear(True, scale_factor=2),
    "x3": bilinear(False, scale_factor=3),
    "x3 corners": bilinear(True, scale_factor=3),
    "(2, 3)": bilinear(False, scale_factor=(2, 3)),
    "size": bilinear(False, size=(8, 11)),
    "size corners": bilinear(True, size=(8, 11)),
    "down": bilinear(False, size=(3, 4)),
    "down corners": bilinear(True, size=(3, 4)),
    "x1.5 (scales passed)": bilinear(False, scale_factor=1.5),
    "x1.5 recomputed": bilinear(False, scale_factor=1.5, recompute_scale_factor=True),
    "nn.Upsample": nn.Upsample(scale_factor=2, mode="bilinear"),
    "nn.Upsample size corners": nn.Upsample(size=(9, 6), mode="bilinear", align_corners=True),
    "nn.UpsamplingBilinear2d": nn.UpsamplingBilinear2d(scale_factor=2),
    "nearest (a gather)": lambda h: F.interpolate(h, scale_factor=2),
}

LINEAR = {
    "x2": linear(False, scale_factor=2),
    "x2 corners": linear(True, scale_factor=2),
    "x3": linear(False, scale_factor=3),
    "x3 corners": linear(True, scale_factor=3),
    "size": linear(False, size=10),
    "size corners": linear(True, size=[10]),
    "x2.5 (scales passed)": linear(False, scale_factor=2.5),
    "nn.Upsample corners": nn.Upsample(scale_factor=2, mode="linear", align_corners=True),
}


@pytest.mark.parametrize("label", list(BILINEAR))
def test_bilinear_interpolation(pl, label):
    check(pl, Interpolate2d(BILINEAR[label]), (2, 5, 7))


@pytest.mark.parametrize("label", list(LINEAR))
def test_linear_interpolation(pl, label):
    check(pl, Interpolate1d(LINEAR[label]), (2, 7))


def test_interpolate_layers_hold_pytorch_arguments(pl):
    """One interpolate layer each: PyTorch's output size, align_corners and the scales its
    kernel receives (the scale factor given and not recomputed)."""
    cases = [(bilinear(False, scale_factor=1.5), [7, 10], False, [1.5, 1.5]),
             (bilinear(False, scale_factor=1.5, recompute_scale_factor=True), [7, 10], False,
              []),
             (bilinear(True, size=(8, 11)), [8, 11], True, []),
             (nn.UpsamplingBilinear2d(scale_factor=3), [15, 21], True, [3.0, 3.0])]
    for resize, size, corners, scales in cases:
        graph = pl.layer_graph_from_torch(prepared(Interpolate2d(resize)), (2, 5, 7))
        (layer,) = [la for la in graph.layers if la.kind == "interpolate"]
        assert (list(layer.output_size), layer.align_corners, list(layer.scales)) == \
            (size, corners, scales)


# --------------------------------------------------------------------------------------------
# GroupSort


def group_sort_cnn(h, g: int, descending: bool, form: str):
    n, c, hh, ww = h.shape
    if form == "view.sort[0].view":
        return h.view(n, c // g, g, hh, ww).sort(dim=2, descending=descending)[0].view(
            n, c, hh, ww)
    if form == "torch.sort.values.flatten":
        return torch.sort(h.view(-1, c // g, g, hh, ww), dim=2,
                          descending=descending).values.flatten(1, 2)
    if form == "reshape.sort(2, d)[0].reshape":
        return h.reshape(n, -1, g, hh, ww).sort(2, descending)[0].reshape(n, c, hh, ww)
    raise AssertionError(form)


class GroupSortCNN(Recipe):
    def __init__(self, g: int, descending: bool, form: str):
        super().__init__()
        self.conv = nn.Conv2d(2, 12, 3, padding=1)
        self.conv2 = nn.Conv2d(12, 3, 3)
        self.g, self.descending, self.form = g, descending, form

    def forward(self, x):
        h = self.conv(x)
        if self.s is not None:
            h = group_sums(h, self.g)
        elif self.form == "sort(dim=1) (all channels)":
            h = h.sort(dim=1, descending=self.descending)[0]
        else:
            h = group_sort_cnn(h, self.g, self.descending, self.form)
        return self.conv2(h)


class GroupSortMLP(Recipe):
    def __init__(self, g: int, descending: bool, form: str):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 12), nn.Linear(12, 3)
        self.g, self.descending, self.form = g, descending, form

    def forward(self, x):
        h, g = self.fc1(x), self.g
        if self.s is not None:
            h = group_sums(h, g)
        elif self.form == "view.sort[0].view":
            h = h.view(-1, 12 // g, g).sort(dim=-1, descending=self.descending)[0].view(-1, 12)
        elif self.form == "torch.sort.values.flatten":
            h = torch.sort(h.view(h.shape[0], -1, g), -1, self.descending).values.flatten(1)
        else:
            h = h.sort(dim=1, descending=self.descending).values  # one group of all
        return self.fc2(h)


CNN_FORMS = ["view.sort[0].view", "torch.sort.values.flatten", "reshape.sort(2, d)[0].reshape"]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("g", [2, 3, 4])
@pytest.mark.parametrize("form", CNN_FORMS)
def test_group_sort_on_feature_maps(pl, form, g, descending):
    check(pl, GroupSortCNN(g, descending, form), (2, 5, 7))


@pytest.mark.parametrize("descending", [False, True])
def test_sort_of_all_channels(pl, descending):
    check(pl, GroupSortCNN(12, descending, "sort(dim=1) (all channels)"), (2, 5, 7))
    check(pl, GroupSortMLP(12, descending, "sort(dim=1)"), (6,))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("g", [2, 3, 4])
@pytest.mark.parametrize("form", ["view.sort[0].view", "torch.sort.values.flatten"])
def test_group_sort_on_vectors(pl, form, g, descending):
    check(pl, GroupSortMLP(g, descending, form), (6,))


def test_group_sort_is_one_layer(pl):
    graph = pl.layer_graph_from_torch(prepared(GroupSortCNN(3, True, CNN_FORMS[1])), (2, 5, 7))
    kinds = [la.kind for la in graph.layers]
    assert kinds == ["input", "conv", "group_sort", "conv"], kinds
    (layer,) = [la for la in graph.layers if la.kind == "group_sort"]
    assert (layer.group_size, layer.descending) == (3, True)


# --------------------------------------------------------------------------------------------
# MaxMin


def max_min(h, form: str, pairs):
    """MaxMin of channels (dim 1): the two halves (chunk forms) or pairs of neighbours (lnets
    forms: pairs(h) is the view (N, C // 2, 2, ...)), maxima then minima."""
    if form.startswith("chunk"):
        a, b = h.chunk(2, dim=1)
        if form == "chunk torch.max/min":
            return torch.cat([torch.max(a, b), torch.min(a, b)], dim=1)
        if form == "chunk torch.maximum/minimum":
            return torch.cat([torch.maximum(a, b), torch.minimum(a, b)], dim=1)
        return torch.cat([a.maximum(b), b.min(a)], dim=1)  # "chunk methods"
    v = pairs(h)
    if form == "lnets .max(dim=2)[0]":
        return torch.cat([v.max(dim=2)[0], v.min(dim=2)[0]], dim=1)
    if form == "lnets torch.max(v, 2)":
        return torch.cat([torch.max(v, 2)[0], torch.min(v, dim=2).values], dim=1)
    return torch.cat([v.amax(2), torch.amin(v, dim=2)], dim=1)  # "lnets amax/amin"


def max_min_recipe(h, form: str, pairs):
    if form.startswith("chunk"):
        a, b = h.chunk(2, dim=1)
        return torch.cat([a + b, a + b], dim=1)
    v = pairs(h).sum(2)
    return torch.cat([v, v], dim=1)


def pairs_of_channels(h):
    n, c, hh, ww = h.shape
    return h.view(n, c // 2, 2, hh, ww)


def pairs_of_features(h):
    return h.view(-1, h.shape[1] // 2, 2)


MAXMIN_FORMS = ["chunk torch.max/min", "chunk torch.maximum/minimum", "chunk methods",
                "lnets .max(dim=2)[0]", "lnets torch.max(v, 2)", "lnets amax/amin"]


class MaxMinCNN(Recipe):
    def __init__(self, form: str):
        super().__init__()
        self.conv = nn.Conv2d(2, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 3, 3)
        self.form = form

    def forward(self, x):
        h = self.conv(x)
        act = max_min if self.s is None else max_min_recipe
        h = act(h, self.form, pairs_of_channels)
        return self.conv2(h)


class MaxMinMLP(Recipe):
    """Linear-MaxMin-Linear-MaxMin-Linear on 8 features (a Lipschitz MLP), the two MaxMin in
    the forms given."""

    def __init__(self, first: str, second: str):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(8, 16), nn.Linear(16, 16), nn.Linear(16, 4)
        self.forms = first, second

    def forward(self, x):
        act = max_min if self.s is None else max_min_recipe
        h = act(self.fc1(x), self.forms[0], pairs_of_features)
        h = act(self.fc2(h), self.forms[1], pairs_of_features)
        return self.fc3(h)


@pytest.mark.parametrize("form", MAXMIN_FORMS)
def test_max_min_on_feature_maps(pl, form):
    check(pl, MaxMinCNN(form), (2, 5, 7))


@pytest.mark.parametrize("form", MAXMIN_FORMS)
def test_max_min_on_vectors(pl, form):
    check(pl, MaxMinMLP(form, form), (8,))


def test_max_and_min_share_one_group_sort(pl):
    for form in ("chunk torch.max/min", "lnets .max(dim=2)[0]"):
        graph = pl.layer_graph_from_torch(prepared(MaxMinCNN(form)), (2, 5, 7))
        sorts = [la for la in graph.layers if la.kind == "group_sort"]
        assert len(sorts) == 1 and sorts[0].group_size == 2, form


def test_max_of_a_tensor_and_itself(pl):
    class Same(Recipe):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(5, 4), nn.Linear(4, 2)

        def forward(self, x):
            h = self.fc1(x)
            return self.fc2(torch.max(h, h) if self.s is None else h + h)

    check(pl, Same(), (5,))


class SpatialExtremes(Recipe):
    """A max or min over a spatial dim (a pooling window spanning it: max_pool, k_max_pool)
    and the max of two shifted views (entries of two layers: concat, gather, group_sort)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.fc = nn.Linear(3 * 7 + 3 * 5 + 3 * 4 * 7, 2)

    def forward(self, x):
        h = self.conv(x)
        if self.s is None:
            a = h.max(dim=2, keepdim=True)[0]
            b = torch.amin(h, 3)
            c = torch.max(h[:, :, :-1], h[:, :, 1:])
        else:
            a, b, c = h.sum(2, keepdim=True), h.sum(3), h[:, :, :-1] + h[:, :, 1:]
        return self.fc(torch.cat([a.flatten(1), b.flatten(1), c.flatten(1)], dim=1))


def test_max_and_min_over_positions(pl):
    check(pl, SpatialExtremes(), (2, 5, 7))


# --------------------------------------------------------------------------------------------
# k-max pooling: the k-th largest of each window, as PyTorch code writes it with unfold


class KMaxPool(Recipe):
    def __init__(self, kernel, stride, k: int, form: str):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.conv2 = nn.Conv2d(3, 2, 2)
        self.kernel, self.stride, self.k, self.form = kernel, stride, k, form

    def forward(self, x):
        h = torch.relu(self.conv(x))
        (kh, kw), (sh, sw), k = self.kernel, self.stride, self.k
        if self.s is not None:  # a sum pool
            h = F.avg_pool2d(h, self.kernel, self.stride) * (kh * kw)
        elif self.form == "topk":
            u = h.unfold(2, kh, sh).unfold(3, kw, sw)
            n, c, ho, wo = u.shape[:4]
            h = u.reshape(n, c, ho, wo, kh * kw).topk(k, dim=-1).values[..., k - 1]
        else:  # kthvalue: the k-th largest is the (K - k + 1)-th smallest
            u = h.unfold(2, kh, sh).unfold(3, kw, sw).flatten(-2)
            h = u.kthvalue(kh * kw - k + 1, dim=-1).values
        return self.conv2(h)


class KMaxPool1d(Recipe):
    def __init__(self):
        super().__init__()
        self.conv, self.conv2 = nn.Conv1d(2, 3, 2), nn.Conv1d(3, 2, 2)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        if self.s is None:
            h = h.unfold(2, 3, 2).topk(2, dim=-1).values[:, :, :, 1]
        else:
            h = F.avg_pool1d(h, 3, 2) * 3
        return self.conv2(h)


@pytest.mark.parametrize("kernel, stride, k, form", [
    ((3, 3), (2, 2), 2, "topk"), ((3, 3), (2, 2), 5, "topk"), ((3, 3), (2, 2), 1, "topk"),
    ((3, 3), (2, 2), 9, "kthvalue"), ((2, 3), (1, 2), 4, "kthvalue"),
    ((2, 2), (3, 1), 3, "topk")])
def test_k_max_pooling(pl, kernel, stride, k, form):
    check(pl, KMaxPool(kernel, stride, k, form), (2, 9, 10))


def test_k_max_pooling_1d(pl):
    check(pl, KMaxPool1d(), (2, 11))


def test_k_max_pooling_layers(pl):
    """The k-th largest of each window is one k_max_pool layer (k = 1: a max_pool)."""
    graph = pl.layer_graph_from_torch(prepared(KMaxPool((3, 3), (2, 2), 4, "kthvalue")),
                                      (2, 9, 10))
    (layer,) = [la for la in graph.layers if la.kind == "k_max_pool"]
    assert (layer.k, list(layer.kernel), list(layer.stride)) == (4, [3, 3], [2, 2])
    graph = pl.layer_graph_from_torch(prepared(KMaxPool((3, 3), (2, 2), 1, "topk")),
                                      (2, 9, 10))
    assert [la.kind for la in graph.layers].count("max_pool") == 1


# --------------------------------------------------------------------------------------------
# the acceptance models


class UNet(Recipe):
    """Two levels: conv-relu-conv-relu, a max-pool down, conv-relu-conv-relu, a bilinear
    upsample (align_corners=False) up, the skip concatenated, a convolution. sized: the
    upsample is F.interpolate to the skip's size (size=a.shape[2:])."""

    def __init__(self, sized: bool = False):
        super().__init__()
        self.sized = sized
        self.c1, self.c2 = nn.Conv2d(1, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1)
        self.c3, self.c4 = nn.Conv2d(4, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.c5, self.c6 = nn.Conv2d(12, 4, 3, padding=1), nn.Conv2d(4, 2, 1)

    def forward(self, x):
        a = torch.relu(self.c2(torch.relu(self.c1(x))))
        b = self.pool(a) if self.s is None else F.avg_pool2d(a, 2) * 4
        b = torch.relu(self.c4(torch.relu(self.c3(b))))
        up = self.up if not self.sized else lambda t: F.interpolate(
            t, size=a.shape[2:], mode="bilinear", align_corners=False)
        u = interpolated(up, b, self.s)
        return self.c6(torch.relu(self.c5(torch.cat([u, a], dim=1))))


@pytest.mark.parametrize("sized", [False, True])
def test_unet(pl, sized):
    model = prepared(UNet(sized))
    net = check_forward(pl, model, (1, 16, 16), n=6)
    assert pl.path_norm(net, s=1).sum == pytest.approx(recipe(model, (1, 16, 16), 1.0),
                                                       rel=1e-10)
    assert pl.path_norm(net, s=2).sum == pytest.approx(recipe(model, (1, 16, 16), 2.0),
                                                       rel=1e-10)


@pytest.mark.parametrize("first, second", [
    ("chunk torch.max/min", "chunk torch.max/min"),
    ("lnets .max(dim=2)[0]", "lnets .max(dim=2)[0]"),
    ("chunk torch.maximum/minimum", "lnets torch.max(v, 2)")])
def test_max_min_lipschitz_mlp(pl, first, second):
    model = prepared(MaxMinMLP(first, second))
    net = check_forward(pl, model, (8,), n=32)
    assert pl.path_norm(net, s=1).sum == pytest.approx(recipe(model, (8,), 1.0), rel=1e-10)


# --------------------------------------------------------------------------------------------
# refusals, by name


class Op(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.conv(x))


def grouped(h):
    return h.view(h.shape[0], 2, 2, h.shape[2], h.shape[3])


REFUSED = [
    ("bicubic", lambda h: F.interpolate(h, scale_factor=2, mode="bicubic"),
     r"mode 'bicubic' is not supported: not a piecewise-linear map"),
    ("bicubic module", nn.Upsample(scale_factor=2, mode="bicubic"),
     r"Upsample at 'fn': mode 'bicubic' is not supported"),
    ("area", lambda h: F.interpolate(h, size=(3, 3), mode="area"), r"mode 'area' is not"),
    ("antialias", lambda h: F.interpolate(h, scale_factor=2, mode="bilinear", antialias=True),
     r"antialias=True is not supported"),
    ("linear of a 2-D map", lambda h: F.interpolate(h, scale_factor=2, mode="linear"),
     r"mode 'linear' interpolates 1 spatial dim"),
    ("sort indices [1]", lambda h: grouped(h).sort(dim=2)[1].flatten(1),
     r"uses the indices of \.sort\(dim=2\)"),
    ("sort .indices", lambda h: torch.sort(grouped(h), 2).indices.flatten(1),
     r"uses the indices of torch\.sort\(dim=2\)"),
    ("max indices", lambda h: torch.max(grouped(h), 2)[1].flatten(1),
     r"uses the indices of torch\.max\(dim=2\)"),
    ("sort along the width", lambda h: h.sort(dim=3)[0],
     r"\.sort\(dim=3\) orders entries \(0, 0, 0\), \(0, 0, 1\), .* must be channels at one "
     r"position"),
    ("max across channels and positions", lambda h: h.view(h.shape[0], -1, 4).max(
        dim=2)[0], r"must be channels at one position or the windows of a pooling"),
    ("max of shapes that broadcast", lambda h: torch.maximum(h, h[:, :1]),
     r"only tensors of one shape \(no broadcasting\)"),
    ("max over everything", lambda h: h.max(), r"\.max over every entry"),
    ("topk unsorted", lambda h: grouped(h).topk(1, dim=2, sorted=False)[0].flatten(1),
     r"sorted=False"),
]


@pytest.mark.parametrize("label, fn, words", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_by_name(pl, label, fn, words):
    with pytest.raises(pl.UnsupportedModelError, match=words):
        pl.from_torch(prepared(Op(fn)), input_shape=(2, 5, 5))


def test_json_round_trip(pl):
    """The new kinds' fields survive the pathlift-layers JSON: the same forward pass and
    path-norm."""
    for model in (GroupSortCNN(3, True, CNN_FORMS[0]), MaxMinCNN("chunk torch.max/min"),
                  KMaxPool((2, 3), (1, 2), 4, "kthvalue"),
                  Interpolate2d(BILINEAR["x1.5 (scales passed)"]),
                  Interpolate2d(BILINEAR["size corners"])):
        shape = (2, 9, 10) if isinstance(model, KMaxPool) else (2, 5, 7)
        net = pl.from_torch(prepared(model), input_shape=shape)
        again = pl.load_model(pl.layer_graph_to_json(net.layer_graph).encode())
        data = np.random.default_rng(0).standard_normal((4, int(np.prod(shape))))
        np.testing.assert_array_equal(pl.forward(again, None, data).outputs,
                                      pl.forward(net, None, data).outputs)
        assert pl.path_norm(again, s=1).sum == pl.path_norm(net, s=1).sum
