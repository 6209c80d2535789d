"""Independent checks of bench/torch_recipes.py's linear model G_q(u) on the operations added
for the torchvision zoo, without pathlift.

(a) With every parameter positive, fixed weights >= 0 and no max-pool, the model on an all-ones
    input never meets a negative number: its ReLUs and clamp(min=0) are the identity, and the
    model is its own linear model at q = 1, u = theta. So G_1(theta) = model(ones).sum() in
    float64: average pools (ceil_mode, count_include_pad both ways, divisor_override), mean and
    sum over dimensions, products and quotients by numbers (in place too), ConvTranspose1d/2d,
    reflect/replicate/circular padding, nearest upsampling, chunk + cat, a channel shuffle, an
    out-of-place ReLU read after its input is changed in place.
(b) Max-pools with ceil_mode=True: the sum-pool of the recipe equals a sum over PyTorch's windows
    enumerated with explicit loops (the windows checked first against F.max_poolNd itself: the
    max over each is PyTorch's output); average pools at q = 2 likewise, each output's divisor
    read from PyTorch's own avg_pool of ones.
(c) The kernel diagonal recipe equals the autograd of G_2, written out by hand for one small
    model, at u = theta^2.
(d) What the recipe cannot do exactly raises, never returns a number.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torch_recipes as R

DT = torch.float64


def positive(model: nn.Module, seed: int = 0) -> nn.Module:
    """float64, eval mode, every parameter uniform in [0.1, 1)."""
    g = torch.Generator().manual_seed(seed)
    model = model.double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.1 + 0.9 * torch.rand(p.shape, generator=g, dtype=DT))
    return model


def ones(shape):
    return torch.ones((1,) + tuple(shape), dtype=DT)


# --------------------------------------------------------------------------------------------
# (a) G_1(theta) = model(ones).sum() for positive models without max


class AvgPools(nn.Module):
    def __init__(self, cip: bool):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)        # non-uniform borders
        # H = 8: ceil mode adds a 5th row whose window [7, 10) ends beyond L + p = 9
        self.pool = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=cip)
        self.conv1 = nn.Conv1d(3, 2, 2, padding=1)
        self.pool1 = nn.AvgPool1d(2, stride=2, padding=1, ceil_mode=True,
                                  count_include_pad=cip)
        self.fc = nn.Linear(3 * 5 * 4 + 2 * 4, 3)
        self.cip = cip

    def forward(self, x):
        h = self.pool(self.conv(x))                       # (3, 5, 4)
        g = self.pool1(self.conv1(h.mean(3)))             # (2, 4)
        k = F.avg_pool2d(h, (2, 3), (2, 2), (1, 1), True, self.cip)
        k2 = F.avg_pool2d(h, 2, 1, 0, True, self.cip, 3)  # divisor_override
        return self.fc(torch.cat([h.flatten(1), g.flatten(1)], 1)) + \
            k.sum((1, 2, 3)).unsqueeze(1) + k2.sum((1, 2, 3)).unsqueeze(1)


class MeanSumNumbers(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        h = self.conv(x) * 2.0
        h = 0.5 * h + h / 4 + torch.mul(h, 3.0) + torch.div(h, 8)
        h = torch.clamp(h, min=0) + h.clamp_min(0.0) + torch.clip(h, 0) + h.clamp(min=0)
        h *= 1.5
        h /= 3
        a = h.mean([2, 3])
        b = torch.mean(h, dim=-1, keepdim=True).mean(dim=2).flatten(1)
        c = h.sum((2, 3)) + torch.sum(h, dim=[-2, -1]) + h.sum(-1).sum(dim=2)
        return self.fc(a + b + c / 100) + h.mean(1).sum((1, 2)).unsqueeze(1)


class ConvTransposes(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(2, 4, 2, padding=1)
        self.t1 = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2,
                                     dilation=2)
        self.c2 = nn.Conv2d(2, 4, 3, padding=1)
        self.t2 = nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0),
                                     output_padding=(1, 2), groups=2, dilation=(1, 2))
        self.t3 = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, bias=False)

    def forward(self, x):
        a = self.t1(self.c1(x.mean(3))).sum((1, 2))
        h = self.c2(x)
        b = self.t2(h).sum((1, 2, 3))
        c = self.t3(h, output_size=[2 * h.shape[2], 2 * h.shape[3]]).sum((1, 2, 3))
        return torch.stack([a, b, c], 1)


class Paddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.reflect = nn.Conv2d(3, 3, 3, padding=(1, 2), padding_mode="reflect")
        self.replicate = nn.Conv2d(3, 3, (2, 3), padding=2, padding_mode="replicate",
                                   dilation=(2, 1))
        self.circular = nn.Conv2d(3, 2, 3, padding=1, padding_mode="circular", stride=2)
        self.c1 = nn.Conv1d(3, 2, 3, padding=2, padding_mode="circular")
        self.rp = nn.ReflectionPad2d((1, 0, 2, 1))
        self.rp1 = nn.ReplicationPad1d((2, 1))
        self.zp = nn.ZeroPad2d(1)
        self.cp = nn.ConstantPad1d(2, 0.0)

    def forward(self, x):
        h = self.conv(x)
        a = self.circular(self.replicate(self.reflect(h)))
        b = self.c1(h.mean(2))
        c = F.pad(h, (1, 2, 0, 1), mode="reflect") * 0.5 + F.pad(h, (2, 2, 1, 1), "replicate")[
            :, :, :-1, 1:] + F.pad(h, (2, 1, 1, 0), mode="circular")
        d = self.rp(h).sum((2, 3)) + self.rp1(h.sum(2)).sum(2) + self.zp(h).sum((2, 3)) + \
            self.cp(h.mean(3)).sum(2) + F.pad(h, (1, 1)).sum((2, 3))
        return a.sum((1, 2, 3)) + b.sum((1, 2)) + c.sum((1, 2, 3)) + d.sum(1)


class Upsamples(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv2 = nn.Conv2d(3, 2, 3)

    def forward(self, x):
        h = self.conv(x)
        a = self.conv2(self.up(h))
        b = F.interpolate(h, size=(7, 4))                 # uneven: rows/columns repeated unevenly
        c = F.interpolate(h.mean(2), scale_factor=3, mode="nearest")
        return a.sum((1, 2, 3)) + b.sum((1, 2, 3)) + c.sum((1, 2))


class Shuffles(nn.Module):
    """ShuffleNet's channel shuffle (view, transpose, contiguous, view), chunk + cat,
    getitem slicing, permute, reshape, split, an out-of-place ReLU read after its input is
    changed in place (the copy must not see the change), torch.relu_."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(2, 2, 1)
        self.fc = nn.Linear(4 * 5, 3)
        self.relu = nn.ReLU()

    def forward(self, x):
        h = self.conv(x)
        n, c, hh, ww = h.size()
        h = h.view(n, 2, c // 2, hh, ww).transpose(1, 2).contiguous().view(n, -1, hh, ww)
        a, b = h.chunk(2, dim=1)
        h = torch.cat((a, self.conv2(b)), dim=1)
        r = self.relu(h)
        s = F.relu(h)
        h += a.repeat(1, 2, 1, 1)                          # r and s are copies: unchanged
        torch.relu_(h)
        p, q = torch.split(h.permute(0, 2, 3, 1).reshape(n, hh, -1), [3, ww * c - 3], dim=2)
        top = h[:, :, 1:, :-1].mean((2, 3))
        return self.fc(top.repeat(1, 5)) + r.sum((1, 2, 3)).unsqueeze(1) + \
            s.sum((1, 2, 3)).unsqueeze(1) + p.sum((1, 2)).unsqueeze(1) + \
            q.sum((1, 2)).unsqueeze(1)


class Blocks(nn.Module):
    """A residual block in the torchvision style: ReLU(inplace=True), out += identity."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 3, 3, padding=1)
        self.conv2 = nn.Conv2d(3, 3, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        identity = x
        out = self.relu(self.conv1(x))
        kept = out                                       # an alias: sees the += below
        out = self.conv2(out)
        out += identity
        kept.add_(out)
        out = self.relu(out)
        return self.fc(torch.flatten(self.pool(out + kept), 1))


MODELS_A = [
    ("avg pools, count_include_pad=True", lambda: AvgPools(True), (2, 8, 7)),
    ("avg pools, count_include_pad=False", lambda: AvgPools(False), (2, 8, 7)),
    ("mean, sum, numbers, clamp", MeanSumNumbers, (2, 5, 6)),
    ("conv transposes", ConvTransposes, (2, 5, 4)),
    ("reflect/replicate/circular", Paddings, (2, 6, 7)),
    ("nearest upsampling", Upsamples, (2, 4, 3)),
    ("chunk, cat, channel shuffle", Shuffles, (2, 4, 5)),
    ("residual, in place", Blocks, (3, 5, 5)),
]


@pytest.mark.parametrize("label,factory,shape", MODELS_A, ids=[m[0] for m in MODELS_A])
def test_g1_is_the_model_itself_when_everything_is_positive(label, factory, shape):
    model = positive(factory())
    lm = R.LinearModel(model, shape)
    assert lm.d == sum(p.numel() for p in model.parameters())
    with torch.no_grad():
        want = float(model(ones(shape)).sum())
        got = float(lm.total(lm.theta, 1.0))
    assert got == pytest.approx(want, rel=1e-12)
    # and the path-norm recipe is that number (s = 1: u = |theta| = theta)
    assert R.path_norm_recipe(lm, s=1.0) == pytest.approx(want, rel=1e-12)


def test_padding_modes_are_not_zero_padding():
    """The check above would miss a recipe that padded by zeros only where the zero-padded
    model happens to agree: here it does not."""
    model = positive(Paddings())
    zeros = positive(Paddings())
    for m in (zeros.reflect, zeros.replicate, zeros.circular, zeros.c1):
        m.padding_mode = "zeros"
    with torch.no_grad():
        assert float(model(ones((2, 6, 7))).sum()) != pytest.approx(
            float(zeros(ones((2, 6, 7))).sum()), rel=1e-6)


def test_conv_transpose_parameters_in_model_order():
    """The weight block of a ConvTranspose is (in, out / groups, k...) in theta's order: a
    single entry of u changes exactly the outputs PyTorch's own layer changes."""
    model = positive(nn.Sequential(nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2)))
    lm = R.LinearModel(model, (4, 3, 3))
    assert lm.sizes == [4 * 3 * 3 * 3, 6]
    for k in (0, 7, 50, 107, 110):
        u = torch.zeros(lm.d, dtype=DT)
        u[k] = 1.0
        ref = positive(nn.Sequential(nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2)))
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(u, ref.parameters())
            want = float(ref(ones((4, 3, 3))).sum())
        assert float(lm.total(u, 1.0)) == pytest.approx(want, rel=1e-14, abs=0)


# --------------------------------------------------------------------------------------------
# (b) ceil_mode pools against PyTorch's windows enumerated by loops


def windows_1d(size, k, s, p, d, out):
    """The entries of each of `out` windows: o s - p + j d for j < k, inside [0, size)."""
    return [[i for i in (o * s - p + j * d for j in range(k)) if 0 <= i < size]
            for o in range(out)]


def windows_2d(shape, k, s, p, d, out):
    rows = windows_1d(shape[0], k[0], s[0], p[0], d[0], out[0])
    cols = windows_1d(shape[1], k[1], s[1], p[1], d[1], out[1])
    return [[[(r, c) for r in rw for c in cw] for cw in cols] for rw in rows]


MAX_1D = [  # (L, k, s, p, d): the decrement rule fires, partial last windows, dilation
    (5, 2, 2, 1, 1), (7, 3, 2, 1, 1), (8, 3, 3, 1, 1), (6, 2, 4, 0, 1), (9, 3, 2, 1, 2),
    (10, 4, 3, 2, 1), (4, 3, 3, 0, 1)]
MAX_2D = [  # ((H, W), k, s, p, d)
    ((7, 8), (3, 2), (2, 2), (1, 0), (1, 1)), ((5, 5), (2, 2), (2, 2), (1, 1), (1, 1)),
    ((9, 6), (3, 3), (2, 3), (1, 1), (2, 1)), ((6, 7), (2, 3), (3, 2), (0, 1), (1, 2)),
    ((13, 13), (3, 3), (2, 2), (0, 0), (1, 1))]


def _seq1d(pool):
    return nn.Sequential(nn.Conv1d(1, 1, 3, padding=1, bias=False), pool).double().eval()


class FunctionalMax2d(nn.Module):
    def __init__(self, k, s, p, d):
        super().__init__()
        self.conv = nn.Conv2d(1, 1, 3, padding=1, bias=False)
        self.args = (k, s, p, d)

    def forward(self, x):
        k, s, p, d = self.args
        return F.max_pool2d(self.conv(x), k, s, p, d, ceil_mode=True)


@pytest.mark.parametrize("L,k,s,p,d", MAX_1D)
@pytest.mark.parametrize("functional", [False, True])
def test_max_pool_1d_ceil_mode_sums_pytorchs_windows(L, k, s, p, d, functional):
    g = torch.Generator().manual_seed(L * 31 + k)
    y = torch.randn(1, 1, L, dtype=DT, generator=g)
    ref = F.max_pool1d(y, k, s, p, d, ceil_mode=True)
    wins = windows_1d(L, k, s, p, d, ref.shape[-1])
    # the loops enumerate PyTorch's windows: the max over each is PyTorch's output
    assert [max(float(y[0, 0, i]) for i in w) for w in wins] == ref[0, 0].tolist()
    if functional:
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(1, 1, 3, padding=1, bias=False)

            def forward(self, x):
                return F.max_pool1d(self.conv(x), k, s, p, d, ceil_mode=True)
        model = M().double().eval()
    else:
        model = _seq1d(nn.MaxPool1d(k, s, p, d, ceil_mode=True))
    lm = R.LinearModel(model, (1, L))
    u = torch.randn(lm.d, dtype=DT, generator=g)
    z = F.conv1d(ones((1, L)), u.view(1, 1, 3), padding=1)[0, 0]   # the pool's input in G
    want = sum(float(z[i]) for w in wins for i in w)
    assert float(lm.total(u, 1.0)) == pytest.approx(want, rel=1e-13, abs=1e-13)
    assert float(lm.total(u, 2.0)) == pytest.approx(want, rel=1e-13, abs=1e-13)  # weights 1


@pytest.mark.parametrize("shape,k,s,p,d", MAX_2D)
@pytest.mark.parametrize("functional", [False, True])
def test_max_pool_2d_ceil_mode_sums_pytorchs_windows(shape, k, s, p, d, functional):
    g = torch.Generator().manual_seed(shape[0] * 7 + shape[1])
    y = torch.randn((1, 1) + shape, dtype=DT, generator=g)
    ref = F.max_pool2d(y, k, s, p, d, ceil_mode=True)
    wins = windows_2d(shape, k, s, p, d, ref.shape[-2:])
    assert [[max(float(y[0, 0, r, c]) for r, c in w) for w in row] for row in wins] == \
        ref[0, 0].tolist()
    model = FunctionalMax2d(k, s, p, d) if functional else nn.Sequential(
        nn.Conv2d(1, 1, 3, padding=1, bias=False), nn.MaxPool2d(k, s, p, d, ceil_mode=True))
    model = model.double().eval()
    lm = R.LinearModel(model, (1,) + shape)
    u = torch.randn(lm.d, dtype=DT, generator=g)
    z = F.conv2d(ones((1,) + shape), u.view(1, 1, 3, 3), padding=1)[0, 0]
    want = sum(float(z[r, c]) for row in wins for w in row for r, c in w)
    assert float(lm.total(u, 1.0)) == pytest.approx(want, rel=1e-13, abs=1e-13)


AVG = [  # ((H, W), k, s, p): ceil windows beyond L + p, clipped windows
    ((8, 7), (3, 3), (2, 2), (1, 1)), ((5, 6), (2, 3), (2, 2), (1, 1)),
    ((7, 5), (3, 2), (3, 2), (1, 0)), ((6, 9), (4, 3), (3, 2), (2, 1))]


@pytest.mark.parametrize("shape,k,s,p", AVG)
@pytest.mark.parametrize("cip", [True, False])
@pytest.mark.parametrize("q", [1.0, 2.0, 0.5])
def test_avg_pool_ceil_mode_weights_at_q(shape, k, s, p, cip, q):
    """G_q of conv -> AvgPool2d(ceil_mode=True): sum_o n_o^-q sum_{i in W_o} z_i, with W_o
    from the loops and n_o = |W_o| / avg_pool(ones)_o read from PyTorch."""
    model = nn.Sequential(nn.Conv2d(1, 1, 3, padding=1, bias=False),
                          nn.AvgPool2d(k, s, p, ceil_mode=True, count_include_pad=cip))
    model = model.double().eval()
    lm = R.LinearModel(model, (1,) + shape)
    avg_ones = F.avg_pool2d(ones((1,) + shape), k, s, p, ceil_mode=True, count_include_pad=cip)
    wins = windows_2d(shape, k, s, p, (1, 1), avg_ones.shape[-2:])
    u = torch.randn(lm.d, dtype=DT, generator=torch.Generator().manual_seed(5))
    z = F.conv2d(ones((1,) + shape), u.view(1, 1, 3, 3), padding=1)[0, 0]
    want = 0.0
    for i, row in enumerate(wins):
        for j, w in enumerate(row):
            n = round(len(w) / float(avg_ones[0, 0, i, j]))
            want += n ** -q * sum(float(z[r, c]) for r, c in w)
    assert float(lm.total(u, q)) == pytest.approx(want, rel=1e-13, abs=1e-13)


def test_numbers_and_means_at_q2():
    """x * -2.0 / 4, then mean over (2, 3): fixed weights |-2|^2, (1/4)^2, (1/(H W))^2."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3, padding=1)

        def forward(self, x):
            return (self.conv(x) * -2.0 / 4).mean([2, 3])
    model = M().double().eval()
    lm = R.LinearModel(model, (1, 4, 5))
    u = torch.randn(lm.d, dtype=DT, generator=torch.Generator().manual_seed(3))
    w, b = u[:18].view(2, 1, 3, 3), u[18:]
    z = F.conv2d(ones((1, 4, 5)), w, b, padding=1)
    want = float(z.sum()) * 2.0 ** 2 * 4.0 ** -2 * 20.0 ** -2
    assert float(lm.total(u, 2.0)) == pytest.approx(want, rel=1e-13)


# --------------------------------------------------------------------------------------------
# (c) the kernel diagonal against the autograd of G_2 written by hand


class Hand(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 2, 2, padding=1)           # length 5 -> 6
        self.pool = nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True,
                                 count_include_pad=True)     # 6 -> 4 (floor mode: 3)
        self.fc = nn.Linear(2 * 5, 1)

    def forward(self, x):
        h = self.pool(F.relu(self.conv(x))) * -3.0
        h = torch.cat([h, h.mean(2, keepdim=True)], 2)      # (2, 5)
        return self.fc(h.flatten(1))


def g2_by_hand(u: torch.Tensor) -> torch.Tensor:
    """G_2 of Hand, at u: conv weights w (2, 1, 2), biases b (2), fc weights v (1, 10), fc bias
    c. On an all-ones input of length 5, padded by 1 on each side:
      z[ch, 0] = w1 + b (tap 0 on the padding), z[ch, 1..4] = w0 + w1 + b, z[ch, 5] = w0 + b.
    The pool (k 3, s 2, p 1, ceil): windows [0, 2), [1, 4), [3, 6), [5, 6) clipped;
    PyTorch's divisors (count_include_pad, end = min(start + 3, L + p = 7)): 3, 3, 3, 2.
    Fixed weights squared: (1/n)^2, |-3|^2 = 9, the mean's (1/4)^2."""
    w, b, v, c = u[:4].view(2, 2), u[4:6], u[6:16].view(2, 5), u[16]
    total = c
    for ch in range(2):
        z = [w[ch, 1] + b[ch]] + [w[ch, 0] + w[ch, 1] + b[ch]] * 4 + [w[ch, 0] + b[ch]]
        pooled = [9.0 * (z[0] + z[1]) / 3 ** 2, 9.0 * (z[1] + z[2] + z[3]) / 3 ** 2,
                  9.0 * (z[3] + z[4] + z[5]) / 3 ** 2, 9.0 * z[5] / 2 ** 2]
        feats = pooled + [sum(pooled) / 4 ** 2]
        total = total + sum(v[ch, k] * feats[k] for k in range(5))
    return total


def test_kernel_diagonal_is_the_gradient_of_g2_by_hand():
    torch.manual_seed(4)
    model = Hand().double().eval()
    lm = R.LinearModel(model, (1, 5))
    th = lm.theta
    assert lm.d == 17
    # G_2 by hand is the linear model at q = 2, at any u
    u = torch.randn(lm.d, dtype=DT)
    assert float(lm.total(u, 2.0)) == pytest.approx(float(g2_by_hand(u)), rel=1e-13)
    u = (th ** 2).clone().requires_grad_(True)
    (want,) = torch.autograd.grad(g2_by_hand(u), u)
    got = R.kernel_diagonal_recipe(lm)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-13, atol=0)
    # and diag K = sum_p (dPhi_p / dtheta_k)^2 >= 0
    assert (got >= 0).all()


# --------------------------------------------------------------------------------------------
# (d) refusals


class Op(nn.Module):
    def __init__(self, fn, buffer=False):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)
        self.fn = fn
        if buffer:
            self.register_buffer("fixed", torch.ones(2, 2, 1, 1, dtype=DT))

    def forward(self, x):
        return self.fn(self, self.conv(x))


REFUSED = [
    ("relu6", lambda m, h: F.relu6(h)),
    ("clamp 0..6", lambda m, h: torch.clamp(h, 0, 6)),
    ("clamp min 0.1", lambda m, h: h.clamp(min=0.1)),
    ("clamp max only", lambda m, h: h.clamp(max=0)),
    ("bilinear", lambda m, h: F.interpolate(h, scale_factor=2, mode="bilinear")),
    ("product of tensors", lambda m, h: h * h),
    ("reciprocal", lambda m, h: 2.0 / h),
    ("constant added", lambda m, h: h + 1.0),
    ("mean of everything", lambda m, h: h.mean()),
    ("mean over the batch", lambda m, h: h.mean(0)),
    ("sum over the batch", lambda m, h: torch.sum(h, dim=(0, 1))),
    ("pad by a constant", lambda m, h: F.pad(h, (1, 1), value=1.0)),
    ("sigmoid", lambda m, h: torch.sigmoid(h)),
    ("exp", lambda m, h: h.exp()),
    ("floor division", lambda m, h: torch.div(h, 2, rounding_mode="floor")),
    ("max with indices", lambda m, h: F.max_pool2d(h, 2, return_indices=True)[0]),
    ("dropout in training", lambda m, h: F.dropout(h, 0.5, True)),
    ("a fixed tensor", lambda m, h: F.conv2d(h, m.fixed)),
]


@pytest.mark.parametrize("label,fn", REFUSED, ids=[r[0] for r in REFUSED])
def test_what_cannot_be_done_exactly_raises(label, fn):
    model = Op(fn, buffer=label == "a fixed tensor").double().eval()
    with pytest.raises((NotImplementedError, ValueError, ZeroDivisionError)):
        lm = R.LinearModel(model, (2, 4, 4))
        lm.total(lm.theta, 1.0)


def test_refused_modules():
    for mod in (nn.ReLU6(), nn.Hardswish(), nn.Upsample(scale_factor=2, mode="bilinear"),
                nn.ConstantPad2d(1, 0.5), nn.MaxPool2d(2, return_indices=True)):
        model = nn.Sequential(nn.Conv2d(2, 2, 1), mod).double().eval()
        with pytest.raises(NotImplementedError):
            R.LinearModel(model, (2, 4, 4)).total(R.theta(model), 1.0)


# --------------------------------------------------------------------------------------------
# (a) again, on torchvision's models that use these operations


def _max_pools_to_avg(model: nn.Module) -> nn.Module:
    """Each nn.MaxPool2d replaced by the AvgPool2d with the same windows (ceil_mode kept)."""
    for mod in list(model.modules()):
        for name, child in list(mod.named_children()):
            if isinstance(child, nn.MaxPool2d):
                setattr(mod, name, nn.AvgPool2d(child.kernel_size, child.stride, child.padding,
                                                ceil_mode=child.ceil_mode))
    return model


@pytest.mark.parametrize("name", ["shufflenet_v2_x0_5", "mnasnet0_5", "googlenet",
                                  "squeezenet1_1"])
def test_g1_on_torchvision_models_with_positive_parameters(name):
    """ShuffleNet (channel shuffle, chunk, cat, x.mean([2, 3])), MnasNet (mean), GoogLeNet and
    SqueezeNet (ceil_mode pools, cat), their max-pools made average pools with the same
    windows, every parameter positive and BatchNorm's running mean 0 (so a, b > 0): the
    model is its own linear model."""
    models = pytest.importorskip("torchvision.models")
    torch.manual_seed(0)
    kwargs = {"aux_logits": False, "init_weights": False} if name == "googlenet" else {}
    model = _max_pools_to_avg(getattr(models, name)(**kwargs))
    model = positive(model)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.1)                      # keep the sums moderate
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.zero_()
                m.running_var.fill_(1.0)
    shape = (3, 32, 32)
    lm = R.LinearModel(model, shape)
    with torch.no_grad():
        want = float(model(ones(shape)).sum())
        got = float(lm.total(lm.theta, 1.0))
    assert got == pytest.approx(want, rel=1e-12)
