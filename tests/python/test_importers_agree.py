"""The three importers build identical graphs (issue 28, "One LayerGraphBuilder"): each model of a
corpus -- torchvision's resnet18, densenet121 and inception_v3, and small models covering every
layer kind -- imported by pathlift.from_torch, by pathlift.from_onnx of its torch.onnx.export
(BatchNorm kept: TrainingMode.PRESERVE, no constant folding) and by pathlift.load_model of the
pathlift-layers JSON of the first (the JSON round trip), gives the same layers (up to names), the
same d and unrolled size, and equal path-norms (s = 1, 2), kernel diagonals and forward passes to
1e-12 relative (float64, eval mode, random weights and BatchNorm statistics; each BatchNorm's
epsilon a float32 number, as ONNX stores it).

The three torchvision models are large: their JSON round trip carries the structure and theta
is given to it (their weights as JSON text take 10 s and more), and their forward passes, which
unroll the graph (densenet121 51 M edges, inception_v3 163 M), are compared on resnet18 only.
A model the ONNX importer refuses is an xfail naming the importer's message: the k-max pool
(exported as TopK, which from_onnx refuses by name).

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_importers_agree.py
"""
import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx", reason="onnx (Debian: python3-onnx) is needed for the ONNX import")
nn = torch.nn
F = torch.nn.functional

from test_cnn import LeNet5, conv1d_net, prepare, tiny_resnet, vgg_like  # noqa: E402


# --- the corpus ----------------------------------------------------------------------------------


def torchvision_model(name):
    torchvision = pytest.importorskip("torchvision", reason="torchvision (Debian: "
                                      "python3-torchvision) is needed for these models")
    if name == "inception_v3":
        return torchvision.models.inception_v3(num_classes=10, aux_logits=False,
                                               init_weights=False)
    return getattr(torchvision.models, name)(num_classes=10)


def seq(*layers):
    return lambda: nn.Sequential(*layers)


class Residual(nn.Module):
    """A skip (add) and a subtraction of two computed tensors."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3, self.fc4 = (nn.Linear(4, 4) for _ in range(4))

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.relu(self.fc2(h) + h)
        return self.fc4(torch.relu(self.fc3(h) - h))


class Concat(nn.Module):
    """Concatenations along channels and along features, a projection shortcut."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(2, 3, 3, padding=1)
        self.b = nn.Conv2d(2, 2, 1)
        self.fc = nn.Linear(5 * 4 * 4 + 32, 3)

    def forward(self, x):
        h = torch.relu(torch.cat([self.a(x), self.b(x)], 1))
        return self.fc(torch.cat([torch.flatten(h, 1), torch.flatten(x, 1)], 1))


class Shared(nn.Module):
    """Weight sharing: one conv applied on two parallel branches, then summed."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 3, 3, padding=1)
        self.c2 = nn.Conv2d(2, 3, 3, padding=1)
        self.shared = nn.Conv2d(3, 3, 1)
        self.fc = nn.Linear(3 * 4 * 4, 2)

    def forward(self, x):
        a = self.shared(torch.relu(self.c1(x)))
        b = self.shared(torch.relu(self.c2(x)))
        return self.fc(torch.relu(a + b).view(x.size(0), -1))


class Functional(nn.Module):
    """The functional forms: F.linear of parameters, F.max_pool2d, F.avg_pool2d, in-place
    ReLU and +=, x.reshape(x.shape[0], -1), F.leaky_relu (its slope a float32 number, as in
    ONNX)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.w = nn.Parameter(torch.randn(3, 16))
        self.b = nn.Parameter(torch.randn(3))

    def forward(self, x):
        h = F.max_pool2d(self.conv(x), 2)
        h.relu_()
        g = self.conv2(h)
        g += h
        g = F.avg_pool2d(F.relu(g, inplace=True), 2)
        return F.leaky_relu(F.linear(g.reshape(g.shape[0], -1), self.w, self.b), 0.125)


class Rearranged(nn.Module):
    """Issue 31's layers: reflect padding, a ceil_mode max pool, a transposed convolution, a
    chunk and a channel shuffle (view, transpose, view) with cat, nearest upsampling, a ceil_mode
    average pool, x * 2.0, clamp(min=0), the mean over the spatial dims."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(2, 4, 3, padding=1, padding_mode="reflect")
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.up = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.mid = nn.Conv2d(4, 4, 3, padding=1)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.up(self.pool(torch.relu(self.enc(x))))        # 4 x 6 x 6
        a, b = h.chunk(2, dim=1)
        h = torch.cat([torch.clamp(b, min=0), a * 2.0], dim=1)
        n, c, hh, ww = h.size()
        h = h.view(n, 2, c // 2, hh, ww).transpose(1, 2).contiguous().view(n, c, hh, ww)
        h = torch.relu(self.mid(self.upsample(h)))
        h = F.avg_pool2d(h, 3, stride=2, padding=1, ceil_mode=True)
        return self.fc(h.mean([2, 3]))


class BilinearUNet(nn.Module):
    """The path-norm toolkit's interpolations: a max-pooled encoder, bilinear upsampling
    (align_corners false, by a scale factor) concatenated with the skip, and linear upsampling
    with align_corners to an odd size."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(1, 3, 3, padding=1)
        self.mid = nn.Conv2d(3, 3, 3, padding=1)
        self.dec = nn.Conv2d(6, 2, 3, padding=1)

    def forward(self, x):
        e = torch.relu(self.enc(x))                                        # 3 x 6 x 6
        m = torch.relu(self.mid(F.max_pool2d(e, 2)))                       # 3 x 3 x 3
        u = F.interpolate(m, scale_factor=2, mode="bilinear", align_corners=False)
        d = torch.relu(self.dec(torch.cat([u, e], 1)))                     # 2 x 6 x 6
        return F.interpolate(d, size=(5, 9), mode="bilinear", align_corners=True)


class MaxMinMlp(nn.Module):
    """A Lipschitz MLP's MaxMin: torch.max and torch.min of two chunks (GroupSort of 2)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 6), nn.Linear(6, 2)

    def forward(self, x):
        a, b = self.fc1(x).chunk(2, dim=1)
        return self.fc2(torch.cat([torch.max(a, b), torch.min(a, b)], dim=1))


class KMaxPool(nn.Module):
    """A 2-max pooling written with unfold and topk (ONNX: TopK, which from_onnx refuses)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.fc = nn.Linear(2 * 3 * 3, 2)

    def forward(self, x):
        h = torch.relu(self.conv(x))                                      # 2 x 6 x 6
        u = h.unfold(2, 2, 2).unfold(3, 2, 2)                             # 2 x 3 x 3 x 2 x 2
        h = u.reshape(u.shape[0], 2, 3, 3, 4).topk(2, dim=-1).values[..., 1]
        return self.fc(h.flatten(1))


# name -> (model factory, input shape)
CORPUS = {
    "resnet18": (lambda: torchvision_model("resnet18"), (3, 16, 16)),
    "densenet121": (lambda: torchvision_model("densenet121"), (3, 32, 32)),
    "inception_v3": (lambda: torchvision_model("inception_v3"), (3, 75, 75)),
    "mlp": (seq(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3)),
            (5,)),
    "mlp-leaky-nobias": (seq(nn.Linear(4, 6, bias=False), nn.LeakyReLU(0.125),
                             nn.Linear(6, 2, bias=False)), (4,)),
    "linear-batchnorm1d": (seq(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(),
                               nn.Linear(6, 2)), (4,)),
    "conv1d": (lambda: conv1d_net(adaptive=2), (4, 32)),
    "conv1d-pools": (seq(nn.Conv1d(2, 4, 3, stride=2, padding=1), nn.ReLU(),
                         nn.AvgPool1d(3, stride=1, padding=1), nn.MaxPool1d(2),
                         nn.AdaptiveAvgPool1d(2), nn.Flatten(), nn.Linear(8, 2)), (2, 16)),
    "conv2d-stride-dilation": (seq(nn.Conv2d(2, 4, 3, padding=2, dilation=2), nn.ReLU(),
                                   nn.Conv2d(4, 4, 3, stride=2, padding=1), nn.ReLU(),
                                   nn.Flatten(), nn.Linear(4 * 3 * 3, 2)), (2, 6, 6)),
    "conv2d-groups": (seq(nn.Conv2d(4, 6, 3, padding=1, groups=2), nn.ReLU(),
                          nn.Conv2d(6, 6, 1, groups=3, bias=False), nn.ReLU(),
                          nn.Flatten(), nn.Linear(6 * 4 * 4, 2)), (4, 4, 4)),
    "avgpool-exclude-pad": (seq(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(),
                                nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
                                nn.Flatten(), nn.Linear(3 * 5 * 5, 2)), (2, 5, 5)),
    "maxpool-padding-dilation": (seq(nn.Conv2d(1, 2, 3), nn.ReLU(),
                                     nn.MaxPool2d(3, stride=1, padding=1, dilation=2),
                                     nn.Flatten(), nn.Linear(2 * 4 * 4, 2)), (1, 8, 8)),
    "avgpool-include-pad": (seq(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(),
                                nn.AvgPool2d(3, stride=2, padding=1), nn.Flatten(),
                                nn.Linear(2 * 3 * 3, 2)), (1, 6, 6)),
    "global-avgpool": (seq(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                           nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)),
                       (3, 6, 6)),
    "adaptive-avgpool": (seq(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(12, 2)),
                         (2, 4, 4)),
    "lenet5": (lambda: LeNet5(c1=3, c2=4, f1=10, f2=8, classes=3, size=16), (1, 16, 16)),
    "vgg": (lambda: vgg_like(w=4, adaptive=2), (3, 16, 16)),
    "tiny-resnet": (tiny_resnet, (3, 4, 4)),
    "residual-sub": (Residual, (4,)),
    "concat": (Concat, (2, 4, 4)),
    "shared": (Shared, (2, 4, 4)),
    "functional-inplace": (Functional, (1, 8, 8)),
    "rearranged": (Rearranged, (2, 5, 5)),
    "bilinear-unet": (BilinearUNet, (1, 6, 6)),
    "maxmin-mlp": (MaxMinMlp, (4,)),
    "kmax-pool": (KMaxPool, (1, 6, 6)),
    "audio-ceil-mean": (seq(nn.Conv1d(1, 3, 5, stride=3), nn.ReLU(), nn.MaxPool1d(3, ceil_mode=True),
                            nn.Conv1d(3, 4, 2), nn.ReLU(), nn.AvgPool1d(2, ceil_mode=True),
                            nn.Flatten(), nn.Linear(4 * 2, 2)), (1, 40)),
}
LARGE = {"resnet18", "densenet121", "inception_v3"}
FORWARD = [n for n in CORPUS if n not in LARGE - {"resnet18"}]


def float32_epsilons(model):
    """Each BatchNorm's eps made a float32 number: ONNX stores it as one, and the three
    importers then fold exactly the same a and b."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.eps = float(np.float32(m.eps))
    return model


def onnx_bytes(model, shape):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.zeros((1, *shape), dtype=torch.float64), buffer,
                          training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                          input_names=["x"], output_names=["y"], opset_version=13)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def imported(pl):
    """name -> (model, shape, {importer: network}), built once per module."""
    cache = {}

    def get(name, need_onnx=True):
        if name not in cache:
            factory, shape = CORPUS[name]
            model = float32_epsilons(prepare(factory(), 100 + list(CORPUS).index(name)))
            nets = {"torch": pl.from_torch(model, input_shape=shape)}
            graph = nets["torch"].layer_graph
            if name in LARGE:  # the structure through JSON, theta given
                text = pl.layer_graph_to_json(pl.LayerGraph(
                    graph.input_shape, graph.layers, graph.outputs, graph.num_params))
                parsed = pl.parse_layer_graph(text)
                nets["json"] = pl.LayerNetwork(pl.LayerGraph(
                    parsed.input_shape, parsed.layers, parsed.outputs, parsed.num_params,
                    graph.weights))
            else:
                nets["json"] = pl.load_model(pl.layer_graph_to_json(graph).encode())
            try:
                nets["onnx"] = pl.from_onnx(onnx_bytes(model, shape))
            except (pl.UnsupportedModelError, pl.NetworkError, pl.FormatError) as e:
                nets["onnx"] = e
            cache[name] = (model, shape, nets)
        model, shape, nets = cache[name]
        if isinstance(nets["onnx"], Exception) and need_onnx:
            pytest.xfail(f"the ONNX importer refuses {name}: {type(nets['onnx']).__name__}: "
                         f"{nets['onnx']}")
        return cache[name]

    return get


def layers_without_names(pl, graph):
    """(layers, outputs), each layer as its kind, inputs and meaningful fields, without its
    name: defaults written out (stride = kernel, padding 0, dilation 1), count_include_pad only
    where there is padding, an adaptive pool whose windows tile its input as the average pool it
    is, and a concat read only by a concat along the same axis inlined into it (what
    torch.onnx.export writes for both)."""
    shapes = pl.layer_shapes(graph)
    layers = graph.layers
    readers = [0] * len(layers)
    for layer in layers:
        for i in layer.inputs:
            readers[i] += 1
    for o in graph.outputs:
        readers[o] += 1
    inlined = [False] * len(layers)
    for layer in layers:
        if layer.kind == "concat":
            for i in layer.inputs:
                inner = layers[i]
                inlined[i] = inner.kind == "concat" and inner.axis == layer.axis and \
                    readers[i] == 1

    def inputs(i):
        return [k for j in layers[i].inputs for k in (inputs(j) if inlined[j] else [j])]

    index = {}
    out = []
    for i, layer in enumerate(layers):
        if inlined[i]:
            continue
        index[i] = len(index)
        kind = layer.kind
        fields = dict(inputs=[index[j] for j in inputs(i)], weight_offset=layer.weight_offset,
                      bias_offset=layer.bias_offset)
        if kind == "linear":
            fields["out_features"] = layer.out_features
        elif kind == "activation":
            fields["activation"] = layer.activation
        elif kind == "concat":
            fields["axis"] = layer.axis
        elif kind in ("conv", "max_pool", "avg_pool", "adaptive_avg_pool"):
            size = shapes[layer.inputs[0]][1:]
            if kind == "adaptive_avg_pool":
                if any(n % o for n, o in zip(size, layer.output_size)):
                    fields["output_size"] = list(layer.output_size)
                    out.append((kind, fields))
                    continue
                kind = "avg_pool"
                kernel = [n // o for n, o in zip(size, layer.output_size)]
                stride, padding, dilation = kernel, [], []
            else:
                kernel, stride = list(layer.kernel), list(layer.stride) or list(layer.kernel)
                padding, dilation = list(layer.padding), list(layer.dilation)
            fields.update(kernel=kernel, stride=stride, padding=padding or [0] * len(size),
                          dilation=dilation or [1] * len(size))
            if kind == "conv":
                fields.update(out_channels=layer.out_channels, groups=layer.groups)
            if kind == "avg_pool" and any(fields["padding"]):
                fields["count_include_pad"] = layer.count_include_pad
        out.append((kind, fields))
    return out, [index[o] for o in graph.outputs]


def relative(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


# --- the checks ----------------------------------------------------------------------------------


def test_the_corpus_covers_every_layer_kind(pl, imported):
    assert len(CORPUS) >= 20
    kinds = set()
    for name in CORPUS:
        if name not in LARGE:
            net = imported(name, need_onnx=False)[2]["torch"]
            kinds |= {layer.kind for layer in net.layer_graph.layers}
    assert kinds == set(pl.layer_kinds())


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_same_graph(pl, imported, name):
    """The same layers (kinds, inputs, fields, parameter offsets: up to the names), outputs,
    d and unrolled size; the JSON round trip gives the very graph (names included)."""
    model, shape, nets = imported(name)
    graphs = {k: net.layer_graph for k, net in nets.items()}
    d = sum(p.numel() for p in model.parameters())
    assert {k: net.d for k, net in nets.items()} == {"torch": d, "json": d, "onnx": d}
    assert graphs["json"] == graphs["torch"]
    sizes = {k: (net.num_nodes, net.num_edges) for k, net in nets.items()}
    assert sizes["onnx"] == sizes["torch"] == sizes["json"]
    assert layers_without_names(pl, graphs["onnx"]) == layers_without_names(pl, graphs["torch"])
    assert list(graphs["onnx"].input_shape) == list(shape)
    np.testing.assert_allclose(nets["onnx"].weights, nets["torch"].weights, rtol=1e-15,
                               atol=1e-15)


@pytest.mark.parametrize("name", list(CORPUS))
def test_equal_path_norms_and_kernel_diagonals(pl, imported, name):
    _, _, nets = imported(name)
    theta = nets["torch"].weights
    for s in (1.0, 2.0):
        norms = {k: pl.path_norm(net, theta, s).norm for k, net in nets.items()}
        assert relative(norms["onnx"], norms["torch"]) <= 1e-12, norms
        assert relative(norms["json"], norms["torch"]) <= 1e-12, norms
    diagonals = {k: pl.kernel_diagonal(net, theta) for k, net in nets.items()}
    assert relative(diagonals["onnx"], diagonals["torch"]) <= 1e-12
    assert relative(diagonals["json"], diagonals["torch"]) <= 1e-12
    # each with its own weights too
    assert relative(pl.path_norm(nets["onnx"], s=2.0).norm,
                    pl.path_norm(nets["torch"], s=2.0).norm) <= 1e-12


@pytest.mark.parametrize("name", FORWARD)
def test_equal_forward_passes(pl, imported, name):
    model, shape, nets = imported(name)
    X = torch.randn((3, *shape), dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        expected = model(X).reshape(3, -1).numpy()
    for k, net in nets.items():
        got = pl.forward(net, None, X.reshape(3, -1).numpy()).outputs
        assert relative(got, expected) <= 1e-12, k
