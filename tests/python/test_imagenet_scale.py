"""Issue 17: path-free quantities of ImageNet-size CNNs on the layer graph, without unrolling.

pathlift's path-norms, kernel diagonal, K v and path-norm gradient of torchvision's resnet18,
resnet50 and vgg11 at 3x224x224 (unrolled, resnet50 would have 4e9 edges) against the
PyTorch recipes of bench/torch_recipes.py, in float64: pathnorm-pytorch's path-norm (|w|^s,
no ReLU, sum-pools, an all-ones input), pathcond's kernel diagonal (the gradient of the s = 2
model), K v by a double backward, the L1 gradient by autograd. Models: random init under a
fixed seed, random BatchNorm statistics and affine parameters (BatchNorm is not trivial),
eval mode, float64.

The 224 tests are marked ``slow``: about 5 minutes on two cores (12 under load) and 12 GB of
peak memory, most of both in vgg11's K v (d = 133 M: a dozen float64 d-vectors; PyTorch's
double backward). The small models (a LeNet with every kind of pool, a bias-free
dilated/grouped CNN) run in seconds. ``SHAPE`` is the ImageNet input shape.
"""

import json
import math
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"  # on sys.path by conftest

import torch_recipes as R  # noqa: E402

import pathlift  # noqa: E402  (conftest puts <build>/python on sys.path)

SHAPE = (3, 224, 224)
MODELS = (("resnet18", "resnet50", "vgg11") if os.environ.get("PATHLIFT_SLOW_TESTS") == "1"
          else ("resnet18",))
THREADS = 2
RTOL_NORM = 1e-10
RTOL_DIAG = 1e-10
RTOL_MATVEC = 1e-9
RTOL_GRAD = 1e-10
RSS_LIMIT = 2 << 30

slow = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _torch_threads():
    """The recipes on THREADS threads (the machine's cores are shared), restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    yield
    torch.set_num_threads(before)


# --------------------------------------------------------------------------------------------
# helpers


def _rel(actual: float, expected: float) -> float:
    return abs(actual - expected) / abs(expected)


def _norm_value(result) -> float:
    """A PathNorm's norm as a float (a ScaledReal within double's range converts exactly)."""
    return float(result.norm)


def _assert_diagonal(actual, expected, label):
    actual = np.asarray(actual, dtype=np.float64)
    assert actual.shape == expected.shape, label
    zero = expected == 0
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    # entries that are exactly 0 in the recipe: compared absolutely
    assert np.all(np.abs(actual[zero]) <= RTOL_DIAG * scale), \
        f"{label}: {int(np.sum(actual[zero] != 0))} entries nonzero where the recipe has 0"
    rel = np.abs(actual[~zero] - expected[~zero]) / np.abs(expected[~zero])
    worst = int(np.argmax(rel)) if rel.size else 0
    assert rel.size == 0 or rel[worst] <= RTOL_DIAG, \
        (f"{label}: diag K entry {np.flatnonzero(~zero)[worst]}: pathlift "
         f"{actual[~zero][worst]!r}, recipe {expected[~zero][worst]!r}, rel {rel[worst]:.3g}")


def _assert_vector(actual, expected, rtol, label):
    actual = np.asarray(actual, dtype=np.float64)
    err = np.linalg.norm(actual - expected) / np.linalg.norm(expected)
    assert err <= rtol, f"{label}: relative error {err:.3g} in norm (tolerance {rtol:g})"


class Case:
    """One model at one input shape: the module, the recipes' linear model, pathlift's
    network and theta (checked equal to the recipes' theta)."""

    def __init__(self, name, shape):
        self.name, self.shape = name, tuple(shape)
        if name in ("lenet-pools", "lenet-pruned"):
            torch.manual_seed(0)
            self.model = R.randomize_batch_norms(R.LeNetPools()).double().eval()
            if name == "lenet-pruned":
                # exact zeros: half of conv2's weights, and BatchNorm channel 0's gamma (a = 0:
                # every path through conv2's out-channel 0 weights has product 0, so their
                # diagonal entries are exactly 0)
                with torch.no_grad():
                    w = self.model.conv2.weight
                    w.view(-1)[::2] = 0.0
                    self.model.bn2.weight[0] = 0.0
        elif name == "bias-free":
            torch.manual_seed(0)
            self.model = R.BiasFreeConvNet().double().eval()
        else:
            self.model = R.torchvision_model(name, seed=0)
        self.lm = R.LinearModel(self.model, self.shape)
        self.net = pathlift.from_torch(self.model, self.shape)
        np.testing.assert_array_equal(pathlift.theta_from_torch(self.model),
                                      self.lm.theta.numpy())
        self.theta = self.lm.theta.numpy()      # one copy (vgg11: 1 GB)
        self.v = np.random.default_rng(17).standard_normal(self.lm.d)
        self._recipe = {}

    def recipe(self, what):
        """Recipe values; the norms are kept (the 1e300 test reuses L1), the d-vectors are
        recomputed when asked again (vgg11: 1 GB each)."""
        if what not in self._recipe:
            if what == "l1":
                value = R.path_norm_recipe(self.lm, s=1.0)
            elif what == "l2":
                value = R.path_norm_recipe(self.lm, s=2.0)
            elif what == "diag":
                value = R.kernel_diagonal_recipe(self.lm)
            elif what == "kv":
                value = R.kernel_matvec_recipe(self.lm, v=self.v)
            elif what == "grad1":
                value = R.l1_gradient_recipe(self.lm)
            else:
                raise KeyError(what)
            if what not in ("l1", "l2"):
                return value
            self._recipe[what] = value
        return self._recipe[what]


def _check_norms(case):
    for s, key in ((1.0, "l1"), (2.0, "l2")):
        got = pathlift.path_norm(case.net, case.theta, s)
        expected = case.recipe(key)
        assert math.isfinite(expected) and expected > 0, (case.name, s, expected)
        assert _rel(_norm_value(got), expected) <= RTOL_NORM, \
            f"{case.name} L{s:g}: pathlift {_norm_value(got)!r}, recipe {expected!r}"
        assert abs(got.log10 - math.log10(expected)) <= RTOL_NORM / math.log(10) * 1.01


def _check_diagonal(case):
    _assert_diagonal(pathlift.kernel_diagonal(case.net, case.theta), case.recipe("diag"),
                     case.name)


def _check_matvec(case):
    _assert_vector(pathlift.kernel_matvec(case.net, case.theta, case.v), case.recipe("kv"),
                   RTOL_MATVEC, f"{case.name} K v")


def _check_gradient(case):
    got = np.asarray(pathlift.path_norm_gradient(case.net, case.theta, 1.0))
    expected = case.recipe("grad1")
    _assert_vector(got, expected, RTOL_GRAD, f"{case.name} L1 gradient")
    # entry by entry on the entries that carry the norm (the largest first)
    top = np.argsort(-np.abs(expected))[:1000]
    rel = np.abs(got[top] - expected[top]) / np.abs(expected[top])
    assert np.max(rel) <= RTOL_GRAD, f"{case.name}: gradient entry rel error {np.max(rel):.3g}"


# --------------------------------------------------------------------------------------------
# small models: every kind of pool, bias-free and grouped convolutions, a subtraction (fast)


@pytest.fixture(scope="module", params=["lenet-pools", "lenet-pruned", "bias-free"])
def small(request):
    shape = {"bias-free": (3, 16, 16)}.get(request.param, (3, 22, 22))
    return Case(request.param, shape)


def test_small_pruned_has_exact_zeros():
    """The pruned LeNet exercises the exact-zero branches: zero diagonal entries (compared
    absolutely) and zero weights, whose L1 gradient entry is 0 on both sides."""
    case = Case("lenet-pruned", (3, 22, 22))
    diag = case.recipe("diag")
    assert np.sum(diag == 0) >= 6 * 3 * 3      # conv2.weight[0]: 6 in-channels x 3 x 3
    assert np.array_equal(np.asarray(pathlift.kernel_diagonal(case.net, case.theta)) == 0,
                          diag == 0)
    zero = case.theta == 0
    assert zero.sum() > 100
    grad = np.asarray(pathlift.path_norm_gradient(case.net, case.theta, 1.0))
    assert np.all(grad[zero] == 0) and np.all(case.recipe("grad1")[zero] == 0)


def test_small_path_norms(small):
    _check_norms(small)


def test_small_kernel_diagonal(small):
    _check_diagonal(small)


def test_small_kernel_matvec(small):
    _check_matvec(small)


def test_small_path_norm_gradient(small):
    _check_gradient(small)


# --------------------------------------------------------------------------------------------
# ImageNet size: resnet18, resnet50, vgg11 at 3x224x224 (slow)


_LAST = {}


def _case(name):
    """The Case of one model at SHAPE, kept until another model is asked for: one model
    (vgg11: 1 GB of float64 weights, more for its results) is alive at a time, and the tests
    parametrized on one model (indirect) reuse the case and its recipe values."""
    if name not in _LAST:
        _LAST.clear()
        _LAST[name] = Case(name, SHAPE)
    return _LAST[name]


@pytest.fixture(scope="module", params=MODELS)
def imagenet(request):
    """One torchvision model at SHAPE; module scope with params: pytest runs every test of one
    model before building the next."""
    return _case(request.param)


@slow
def test_imagenet_path_norms(imagenet):
    _check_norms(imagenet)


@slow
def test_imagenet_kernel_diagonal(imagenet):
    _check_diagonal(imagenet)


@slow
def test_imagenet_kernel_matvec(imagenet):
    _check_matvec(imagenet)


@slow
@pytest.mark.parametrize("imagenet", ["resnet18"], indirect=True)
def test_imagenet_path_norm_gradient(imagenet):
    _check_gradient(imagenet)


@slow
@pytest.mark.parametrize("imagenet", ["resnet50"], indirect=True)
def test_imagenet_norm_beyond_double(imagenet):
    """resnet50 with its final layer (fc.weight and fc.bias) times 1e300: every path ends
    through exactly one of them, so the L1 path-norm is exactly 1e300 times the original.
    pathlift's log10 is finite and right; the float64 recipe overflows to inf."""
    case = imagenet
    fc_w, fc_b = case.model.fc.weight, case.model.fc.bias
    offsets = {}
    off = 0
    for _, p in case.model.named_parameters():
        offsets[id(p)] = off
        off += p.numel()
    scaled = case.theta.copy()
    for p in (fc_w, fc_b):
        scaled[offsets[id(p)]: offsets[id(p)] + p.numel()] *= 1e300
    got = pathlift.path_norm(case.net, scaled, 1.0)
    assert math.isfinite(got.log10)
    original = case.recipe("l1")
    assert math.isfinite(original)
    expected_log10 = math.log10(1e300) + math.log10(original)
    assert abs(got.log10 - expected_log10) <= RTOL_NORM / math.log(10), \
        (got.log10, expected_log10)
    # the point: the float64 recipe cannot represent it
    assert R.path_norm_recipe(case.lm, s=1.0, theta_=scaled) == math.inf
    assert float(got.norm) == math.inf


_CHILD = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {bench!r})
    import numpy as np, torch
    torch.set_num_threads({threads})
    import pathlift, torch_recipes as R
    model = R.torchvision_model("resnet18", seed=0)
    net = pathlift.from_torch(model, {shape!r})
    theta = pathlift.theta_from_torch(model)
    del model
    unrolled = [getattr(net, "is_unrolled", None)]
    n1 = pathlift.path_norm(net, theta, 1.0).log10
    n2 = pathlift.path_norm(net, theta, 2.0).log10
    diag = pathlift.kernel_diagonal(net, theta)
    kv = pathlift.kernel_matvec(net, theta, np.ones(theta.size))
    unrolled.append(getattr(net, "is_unrolled", None))
    hwm = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    print(json.dumps({{"type": type(net).__name__, "unrolled": unrolled, "vm_hwm": hwm,
                      "l1": n1, "l2": n2, "diag": float(np.sum(diag)),
                      "kv": float(np.sum(kv))}}))
""")


@slow
def test_imagenet_memory_resnet18(build_dir):
    """The path-free calls on resnet18 at 224 in a fresh process: peak resident memory under
    2 GB (the unrolled network alone would take hundreds of GB), and the network is never
    unrolled."""
    code = _CHILD.format(bench=str(BENCH), threads=THREADS, shape=SHAPE)
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS),
               PYTHONPATH=os.pathsep.join([str(build_dir / "python"),
                                           os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["type"] == "TorchNetwork", out  # a LayerNetwork that follows its module
    assert out["unrolled"] == [False, False], out
    assert all(math.isfinite(out[k]) for k in ("l1", "l2", "diag", "kv")), out
    assert 0 < out["vm_hwm"] < RSS_LIMIT, \
        f"peak RSS {out['vm_hwm'] / 2**20:.0f} MiB (limit {RSS_LIMIT / 2**20:.0f} MiB)"
