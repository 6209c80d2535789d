"""ONNX import of the operations issue 31 adds (the ONNX side): MaxPool / AveragePool with
ceil_mode, ConvTranspose, Resize / Upsample in nearest mode, Pad in reflect and edge modes,
Slice and Split of the data, a channel shuffle (Reshape, Transpose, Reshape), ReduceMean and
ReduceSum over the spatial axes, Clip(min=0) and Mul / Div by a constant, each mapped to the layer
kinds of layers.hpp (gather, conv_transpose, scale, ceil_mode pools), and the variants pathlift
refuses, named.

Every model is exported by torch.onnx.export (float64, eval mode) to a file, imported with
pathlift.from_onnx, and checked against PyTorch itself: pathlift's forward pass (of the unrolled
DAG) equals the model's to 1e-10, and the layer graph's path-norms (s = 1, 2, by the layer
dynamic programme) equal those of its unrolled DAG (pathlift.unroll, then path_norm on the
Network). The U-Net export is also read by the command line (`pathlift norm --onnx`).

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_onnx_coverage.py
"""
import contextlib
import json
import subprocess

import numpy as np
import pytest

from onnx_export import onnx, onnx_bytes, torch  # the module is skipped without torch or onnx

nn = torch.nn
F = torch.nn.functional


def export(model, shape, path, opset=13, fold=True, keep_batch_norm=False):
    """model (float64, eval mode) exported to path with a symbolic batch; path returned."""
    extra = {"training": torch.onnx.TrainingMode.PRESERVE} if keep_batch_norm else {}
    path.write_bytes(onnx_bytes(model, shape, opset, do_constant_folding=fold, **extra))
    return path


def ops(path):
    return [n.op_type for n in onnx.load(str(path)).graph.node]


def check(pl, model, path, shape, samples=4):
    """The imported model computes what the PyTorch model computes, and its layer graph's
    path-norms are those of its unrolled DAG. Returns the LayerNetwork."""
    net = pl.from_onnx(str(path))
    X = torch.randn((samples, *shape), dtype=torch.float64,
                    generator=torch.Generator().manual_seed(7))
    got = pl.forward(net, net.weights, X.reshape(samples, -1).numpy()).outputs
    with torch.no_grad():
        want = model.double().eval()(X).reshape(samples, -1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    dag = pl.unroll(net.layer_graph)
    for s in (1.0, 2.0):
        layered = pl.path_norm(net, s=s).norm
        unrolled = pl.path_norm(dag, s=s).norm
        assert np.isfinite(layered) and layered > 0
        assert layered == pytest.approx(unrolled, rel=1e-10)
    return net


def kinds(net):
    return [layer.kind for layer in net.layer_graph.layers]


def randomize_batch_norms(model, seed):
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g))
                m.running_mean.copy_(torch.randn(m.num_features, generator=g))
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


# --- acceptance models -------------------------------------------------------------------------


class UNet(nn.Module):
    """Reflect-padded conv + BatchNorm, MaxPool2d(2, ceil_mode=True) on an odd size, a stride-2
    ConvTranspose2d cropped back (Slice), a skip by torch.cat, nn.Upsample(scale_factor=2)."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, padding_mode="reflect"),
                                  nn.BatchNorm2d(4), nn.ReLU())
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.enc2 = nn.Sequential(nn.Conv2d(4, 6, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(6, 4, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(8, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)                                  # 4 x 7 x 7
        e2 = self.enc2(self.pool(e1))                      # 6 x 4 x 4 (ceil mode)
        u = self.up(e2)[:, :, :x.shape[2], :x.shape[3]]    # 4 x 8 x 8, cropped to 7 x 7
        d = self.dec(torch.cat([u, e1], 1))                # 4 x 7 x 7
        return self.head(self.upsample(d))                 # 2 x 14 x 14


@pytest.mark.parametrize("fold", [True, False])
def test_unet(pl, tmp_path, fold):
    torch.manual_seed(0)
    model = randomize_batch_norms(UNet(), 1)
    path = export(model, (2, 7, 7), tmp_path / "unet.onnx", fold=fold, keep_batch_norm=True)
    written = ops(path)
    for op in ("Pad", "MaxPool", "ConvTranspose", "Slice", "Concat", "Resize",
               "BatchNormalization"):
        assert op in written
    net = check(pl, model, path, (2, 7, 7))
    k = kinds(net)
    assert k.count("conv_transpose") == 1 and k.count("batch_norm") == 2
    assert k.count("gather") == 2 + 2 + 2  # reflect pad, crop, upsample: one per spatial axis
    pool = next(layer for layer in net.layer_graph.layers if layer.kind == "max_pool")
    assert pool.ceil_mode
    # theta: the model's parameters in order, batch norms as a and b.
    assert net.num_params == sum(p.numel() for p in model.parameters())
    up = next(layer for layer in net.layer_graph.layers if layer.kind == "conv_transpose")
    start = up.weight_offset
    np.testing.assert_array_equal(np.asarray(net.weights)[start:start + model.up.weight.numel()],
                                  model.up.weight.detach().numpy().ravel())


def test_unet_from_the_command_line(pl, tmp_path, cli_path):
    torch.manual_seed(0)
    model = randomize_batch_norms(UNet(), 1)
    path = export(model, (2, 7, 7), tmp_path / "unet.onnx", keep_batch_norm=True)
    proc = subprocess.run([str(cli_path), "norm", "--onnx", str(path), "--input-shape", "2,7,7",
                           "--s", "1,2", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    net = pl.from_onnx(str(path))
    for s in (1, 2):
        assert report["norms"][str(s)] == pytest.approx(pl.path_norm(net, s=s).norm, rel=1e-12)


def test_squeezenet1_1(pl, tmp_path):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.squeezenet1_1(num_classes=10)
    path = export(model, (3, 64, 64), tmp_path / "squeezenet.onnx")
    assert sum(1 for n in onnx.load(str(path)).graph.node
               if n.op_type == "MaxPool" and any(a.name == "ceil_mode" and a.i == 1
                                                 for a in n.attribute)) == 3
    net = check(pl, model, path, (3, 64, 64), samples=2)
    assert sum(layer.ceil_mode for layer in net.layer_graph.layers if layer.kind == "max_pool") == 3


class ShuffleBlock(nn.Module):
    """x.chunk(2, dim=1) (Slice), torch.split (Split), cat, and a channel shuffle written with
    view / transpose / view."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, groups=2)
        self.conv3 = nn.Conv2d(8, 6, 1)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        a, b = x.chunk(2, dim=1)
        b = torch.relu(self.conv2(b))
        x = torch.cat([a, b], 1)
        n, c, h, w = x.shape
        x = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        y = torch.relu(self.conv3(x))
        p, q = torch.split(y, [2, 4], dim=1)
        return torch.cat([q, p], 1)


@pytest.mark.parametrize("fold", [True, False])
def test_channel_shuffle_block(pl, tmp_path, fold):
    torch.manual_seed(2)
    model = ShuffleBlock()
    path = export(model, (3, 5, 5), tmp_path / "shuffle.onnx", fold=fold)
    for op in ("Slice", "Split", "Reshape", "Transpose"):
        assert op in ops(path)
    net = check(pl, model, path, (3, 5, 5))
    shuffle = [layer for layer in net.layer_graph.layers
               if layer.kind == "gather" and len(layer.indices) == 8]
    assert len(shuffle) == 1 and shuffle[0].axis == 0
    assert list(shuffle[0].indices) == [0, 4, 1, 5, 2, 6, 3, 7]


class Audio(nn.Module):
    """A 1-D CNN: MaxPool1d(ceil_mode=True), clamp(min=0), x.mean(dim=2), x * 2.0, x / 4.0."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(2, 4, 5, stride=2)
        self.pool = nn.MaxPool1d(3, stride=2, ceil_mode=True)
        self.conv2 = nn.Conv1d(4, 6, 3)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.conv2(x).clamp(min=0)
        x = x.mean(dim=2) * 2.0
        return self.fc(x) / 4.0


@pytest.mark.parametrize("opset", [13, 17])
def test_audio_cnn(pl, tmp_path, opset):
    torch.manual_seed(3)
    model = Audio()
    path = export(model, (2, 40), tmp_path / "audio.onnx", opset=opset)
    for op in ("MaxPool", "Clip", "ReduceMean", "Mul", "Div"):
        assert op in ops(path)
    net = check(pl, model, path, (2, 40))
    assert kinds(net) == ["input", "conv", "activation", "max_pool", "conv", "activation",
                          "adaptive_avg_pool", "flatten", "scale", "linear", "scale"]
    assert [layer.factor for layer in net.layer_graph.layers if layer.kind == "scale"] == [2.0, 0.25]


# --- each operation on its own -----------------------------------------------------------------


class Lambda(nn.Module):
    def __init__(self, f, conv=None):
        super().__init__()
        self.conv = conv
        self.f = f

    def forward(self, x):
        return self.f(self.conv(x) if self.conv is not None else x)


def conv(c_in=2, c_out=3, k=1):
    torch.manual_seed(4)
    return nn.Conv2d(c_in, c_out, k)


CASES = {
    "reflect pad": (lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), (2, 5, 6)),
    "replicate pad": (nn.ReplicationPad2d((2, 0, 1, 3)), (2, 4, 4)),
    "reflect pad 1-D": (nn.ReflectionPad1d((3, 1)), (2, 6)),
    "replicate conv": (nn.Conv2d(2, 3, 3, padding=2, padding_mode="replicate"), (2, 5, 5)),
    "interpolate to a size": (lambda x: F.interpolate(x, size=(7, 5)), (2, 3, 4)),
    "interpolate by 3": (lambda x: F.interpolate(x, scale_factor=3), (2, 3, 2)),
    "interpolate 1-D": (lambda x: F.interpolate(x, scale_factor=2), (2, 5)),
    "slice with steps": (lambda x: x[:, 1:, ::2, -3:], (3, 5, 6)),
    "split along height": (lambda x: torch.cat(torch.split(x, [1, 3], 2)[::-1], 2), (2, 4, 3)),
    "gather channels": (lambda x: x[:, [2, 0, 0]], (3, 2, 2)),
    "sum over space": (lambda x: x.sum([2, 3]), (2, 3, 4)),
    "mean keepdim": (lambda x: x.mean([-1, -2], keepdim=True), (2, 3, 4)),
    "conv transpose": (nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1, output_padding=1,
                                          groups=2, dilation=2), (2, 3, 4)),
    "conv transpose 1-D": (nn.ConvTranspose1d(2, 3, 4, stride=3, padding=2), (2, 5)),
    "avg pool ceil": (nn.AvgPool2d(3, 2, padding=1, ceil_mode=True), (2, 6, 6)),
    "avg pool ceil without pad count": (nn.AvgPool2d(3, 2, padding=1, ceil_mode=True,
                                                     count_include_pad=False), (2, 6, 6)),
    "avg pool ceil no padding": (nn.AvgPool2d(2, ceil_mode=True), (2, 5, 5)),
    "max pool ceil padded": (nn.MaxPool2d(3, 2, padding=1, ceil_mode=True), (2, 6, 6)),
    "flatten of a transpose": (lambda x: torch.flatten(x.permute(0, 2, 3, 1), 1), (3, 2, 4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_operation(pl, tmp_path, name):
    body, shape = CASES[name]
    torch.manual_seed(5)
    model = body if isinstance(body, nn.Module) else Lambda(body)
    if len(shape) == 3 and not isinstance(body, nn.Module):
        # a convolution first, so that every entry comes from a computed node
        model = Lambda(body, conv(shape[0], shape[0], 1))
    path = export(model, shape, tmp_path / "case.onnx")
    check(pl, model, path, shape)


@pytest.mark.parametrize("opset", [9, 10, 11])
def test_nearest_upsampling_of_older_opsets(pl, tmp_path, opset):
    """Upsample (opset 9), Resize without coordinate transformation (10), Resize with an empty
    roi (11): each a gather per axis, as PyTorch computes it."""
    torch.manual_seed(8)
    model = nn.Sequential(nn.Conv2d(2, 2, 1), nn.Upsample(scale_factor=(2, 3)))
    with pytest.warns(UserWarning) if opset < 11 else contextlib.nullcontext():
        path = export(model, (2, 3, 2), tmp_path / "up.onnx", opset=opset)
    assert ("Upsample" if opset == 9 else "Resize") in ops(path)
    net = check(pl, model, path, (2, 3, 2))
    assert kinds(net) == ["input", "conv", "gather", "gather"]


def test_circular_padding_as_exported(pl, tmp_path):
    """padding_mode='circular' is exported as Slices and Concats of the data: read as gathers and
    concatenations. torch 1.13 writes the left part as x[..., -(p + 1):-1] where PyTorch pads with
    x[..., -p:] (its exporter's bug): pathlift follows the file."""
    torch.manual_seed(6)
    model = nn.Conv2d(2, 3, 3, padding=2, padding_mode="circular")
    path = export(model, (2, 5, 6), tmp_path / "circular.onnx")

    def as_written(x):
        for axis in (2, 3):
            n = x.shape[axis]
            left = x.narrow(axis, n - 3, 2)  # Slice [-(2 + 1), -1)
            right = x.narrow(axis, 0, 2)
            x = torch.cat([left, x, right], axis)
        return F.conv2d(x, model.weight, model.bias)

    check(pl, Lambda(as_written), path, (2, 5, 6))
    assert kinds(pl.from_onnx(str(path))).count("gather") == 4


# --- refusals ----------------------------------------------------------------------------------


REFUSED = {
    "bicubic": (nn.Upsample(scale_factor=2, mode="bicubic"), (2, 3, 3),
                r"Resize at '/.*Resize' \(mode cubic: pathlift reads mode nearest"),
    "relu6": (nn.ReLU6(), (3,), r"Clip at '/.*Clip' \(min 0, max 6: a clamp other than"),
    "square": (lambda x: x * x, (3,), r"Mul at '/Mul' \(a product or quotient of two tensors"),
    "per-channel scale": (lambda x: x * torch.arange(1.0, 4.0, dtype=torch.float64), (3,),
                          r"Mul at '/Mul' \(its constant .* of shape \{3\} is not one value"),
    "ceil window in the padding": (nn.MaxPool2d(2, 2, padding=1, ceil_mode=True), (2, 5, 5),
                                   r"MaxPool at '/.*MaxPool' \(ceil_mode 1 with a last window "
                                   r"that starts in the right padding in spatial dimension 0"),
    "mean over channels": (lambda x: x.mean(1), (2, 3, 3),
                           r"ReduceMean at '/ReduceMean' \(over axes \[1\]"),
    "height-width transpose": (lambda x: x.transpose(2, 3), (2, 3, 4),
                               r"Transpose at '/Transpose' \(a transpose: the entries of"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_name_the_node(pl, tmp_path, name):
    body, shape, message = REFUSED[name]
    model = body if isinstance(body, nn.Module) else Lambda(body)
    path = export(model, shape, tmp_path / "refused.onnx")
    with pytest.raises(pl.UnsupportedModelError, match=message):
        pl.from_onnx(str(path))


def test_every_refusal_is_listed_at_once(pl, tmp_path):
    class Many(nn.Module):
        def forward(self, x):
            a = F.interpolate(x, scale_factor=2, mode="bicubic").sum([2, 3])
            b = torch.clamp(x, 0, 6).sum([2, 3])
            return a + b + x.mean(1)[:, :1, 0]

    path = export(Many(), (2, 3, 3), tmp_path / "many.onnx")
    with pytest.raises(pl.UnsupportedModelError) as info:
        pl.from_onnx(str(path))
    message = str(info.value)
    for op in ("Resize", "Clip", "ReduceMean"):
        assert f"{op} at '/" in message
