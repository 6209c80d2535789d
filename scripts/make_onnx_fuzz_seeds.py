#!/usr/bin/python3
"""Writes the seeds of the fuzz_onnx harness (fuzz/fuzz_onnx.cpp) into fuzz/corpus/fuzz_onnx/:
small torch.onnx.export models (float32 and float64, opsets 11 and 13, with and without constant
folding, static and dynamic batch) of every layer kind pathlift imports, each prefixed with the
byte that picks its input shape in the harness. Tiny channel counts keep each under the fuzzer's
4096-byte input limit. Run once; the fuzzer's merges keep what adds coverage.

    /usr/bin/python3 scripts/make_onnx_fuzz_seeds.py
"""
import hashlib
import io
import pathlib

import torch
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "fuzz" / "corpus" / "fuzz_onnx"
# The harness's shapes, by index (fuzz_onnx.cpp): 0 is the model's own.
SHAPES = {(): 0, (1, 6, 6): 1, (2, 5, 5): 2, (3, 8, 8): 3, (2, 7): 4, (4,): 5, (1, 28, 28): 6,
          (6,): 7}


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(2, 2, 3, padding=1)
        self.bn = nn.BatchNorm2d(2)
        self.b = nn.Conv2d(2, 2, 1, bias=False)

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.bn(self.a(x)))) + x)


class Cat(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(2, 1, 1)
        self.b = nn.Conv2d(2, 1, 3, padding=1)

    def forward(self, x):
        return torch.flatten(torch.cat([torch.relu(self.a(x)), self.b(x)], dim=1), 1)


class Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 3)
        self.b = nn.Linear(4, 3, bias=False)

    def forward(self, x):
        return torch.relu(self.a(x)) - self.b(x)


class Flatten(nn.Module):
    def __init__(self, how):
        super().__init__()
        self.how = how
        self.c = nn.Conv2d(1, 2, 2, stride=2)
        self.l = nn.Linear(18, 2)

    def forward(self, x):
        h = torch.relu(self.c(x))
        h = h.view(h.size(0), -1) if self.how == "view" else h.reshape(-1, 18)
        return self.l(h)


class Shuffle(nn.Module):
    """chunk (Slice), torch.split (Split), cat and a channel shuffle (Reshape, Transpose)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 4, 1)

    def forward(self, x):
        h = torch.relu(self.c(x))
        a, b = h.chunk(2, dim=1)
        h = torch.cat([b, a], 1)
        n, c, height, width = h.shape
        h = h.view(n, 2, c // 2, height, width).transpose(1, 2).reshape(n, c, height, width)
        p, q = torch.split(h, [1, 3], dim=1)
        return torch.cat([q, p], 1)[:, :, 1:, ::2].sum([2, 3])


class Signal(nn.Module):
    """clamp(min=0), a mean over the length, x * 2.0 and x / 4.0."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(2, 3, 3)
        self.pool = nn.MaxPool1d(2, ceil_mode=True)

    def forward(self, x):
        return self.pool(self.c(x)).clamp(min=0).mean(2) * 2.0 / 4.0


def models():
    yield "linear", nn.Sequential(nn.Linear(6, 3), nn.ReLU(), nn.Linear(3, 2)), (6,)
    yield "linear_nobias", nn.Sequential(nn.Linear(4, 3, bias=False), nn.ReLU(),
                                         nn.Linear(3, 1, bias=False)), (4,)
    yield "conv", nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(),
                                nn.Linear(32, 2)), (1, 6, 6)
    yield "conv_groups", nn.Sequential(nn.Conv2d(2, 2, 3, groups=2, padding=1, dilation=1),
                                       nn.ReLU(), nn.Conv2d(2, 1, 2, stride=2, padding=1)), (2, 5, 5)
    yield "conv1d", nn.Sequential(nn.Conv1d(2, 2, 3, padding=2, dilation=2), nn.ReLU(),
                                  nn.MaxPool1d(2), nn.Flatten(), nn.Linear(6, 1)), (2, 7)
    yield "maxpool", nn.Sequential(nn.Conv2d(1, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Flatten()), (1, 6, 6)
    yield "maxpool_pad", nn.Sequential(nn.MaxPool2d(3, stride=2, padding=1), nn.Flatten()), (2, 5, 5)
    yield "avgpool", nn.Sequential(nn.AvgPool2d(2, padding=1), nn.Flatten()), (2, 5, 5)
    yield "avgpool_nopadcount", nn.Sequential(nn.AvgPool2d(3, stride=2, padding=1,
                                                           count_include_pad=False)), (1, 6, 6)
    yield "adaptive", nn.Sequential(nn.Conv2d(3, 2, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                    nn.Flatten(), nn.Linear(2, 1)), (3, 8, 8)
    yield "batchnorm", nn.Sequential(nn.Conv2d(2, 2, 1), nn.BatchNorm2d(2), nn.ReLU()), (2, 5, 5)
    yield "batchnorm1d", nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU()), (4,)
    yield "residual", Residual(), (2, 5, 5)
    yield "cat", Cat(), (2, 5, 5)
    yield "sub", Sub(), (4,)
    yield "flatten_view", Flatten("view"), (1, 6, 6)
    yield "flatten_reshape", Flatten("reshape"), (1, 6, 6)
    yield "identity_dropout", nn.Sequential(nn.Linear(6, 2), nn.Identity(), nn.Dropout(0.5),
                                            nn.ReLU()), (6,)
    yield "pad", nn.Sequential(nn.ZeroPad2d(1), nn.Conv2d(1, 1, 3)), (1, 6, 6)
    yield "lenet_like", nn.Sequential(nn.Conv2d(1, 1, 5), nn.ReLU(), nn.MaxPool2d(4),
                                      nn.Flatten(), nn.Linear(36, 2)), (1, 28, 28)
    # issue 31
    yield "ceil_pools", nn.Sequential(nn.MaxPool2d(2, ceil_mode=True),
                                      nn.AvgPool2d(3, 2, padding=1, ceil_mode=True)), (2, 5, 5)
    yield "conv_transpose", nn.Sequential(nn.ConvTranspose2d(2, 2, 2, stride=2), nn.ReLU(),
                                          nn.ConvTranspose2d(2, 1, 3, padding=1,
                                                             output_padding=1, stride=2)), (2, 5, 5)
    yield "copy_pads", nn.Sequential(nn.ReflectionPad2d((1, 0, 2, 1)),
                                     nn.Conv2d(2, 1, 3, padding=1, padding_mode="replicate")), (2, 5, 5)
    yield "upsample", nn.Sequential(nn.Conv2d(2, 1, 1), nn.Upsample(scale_factor=2)), (2, 5, 5)
    yield "shuffle", Shuffle(), (3, 8, 8)
    yield "signal", Signal(), (2, 7)


def export(model, shape, dtype, opset, fold, dynamic):
    model = model.to(dtype).eval()
    buffer = io.BytesIO()
    kwargs = {"dynamic_axes": {"x": {0: "batch"}}} if dynamic else {}
    torch.onnx.export(model, torch.zeros((1, *shape), dtype=dtype), buffer, input_names=["x"],
                      output_names=["y"], opset_version=opset, do_constant_folding=fold,
                      training=torch.onnx.TrainingMode.PRESERVE if not fold
                      else torch.onnx.TrainingMode.EVAL, **kwargs)
    return buffer.getvalue()


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    written = 0
    for name, model, shape in models():
        variants = [(torch.float32, 13, True, True), (torch.float64, 11, False, False),
                    (torch.float32, 11, True, False)]
        for dtype, opset, fold, dynamic in variants:
            data = export(model, shape, dtype, opset, fold, dynamic)
            for prefix in {0, SHAPES[shape]}:  # the model's own shape, and the given one
                seed = bytes([prefix]) + data
                if len(seed) > 4096:
                    continue
                digest = hashlib.sha1(seed).hexdigest()
                (OUT / f"seed-{name}-{digest[:12]}").write_bytes(seed)
                written += 1
    print(f"{written} seeds in {OUT}")


if __name__ == "__main__":
    main()
