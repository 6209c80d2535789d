"""PyTorch in the training loop (issue 18): pathlift.torch.path_norm is differentiable (gradcheck,
and its gradient is torch autograd of pathnorm-pytorch's recipe), kernel_diagonal is pathcond's
diagonal, PathSGD's step is the manual Path-SGD update and is invariant under neuron rescaling
(plain SGD's is not), to_torch_sparse(J) multiplies like J, and examples/path_training.py runs.
The references are bench/torch_recipes.py's recipes, written without pathlift.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_torch_autograd.py
"""
import copy
import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

ROOT = pathlib.Path(__file__).resolve().parents[2]

import torch_recipes as R  # noqa: E402


def mlp(sizes=(4, 5, 3, 2), seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    layers = []
    for i in range(len(sizes) - 1):
        layers += [nn.Linear(sizes[i], sizes[i + 1]), nn.ReLU()]
    return nn.Sequential(*layers[:-1]).to(dtype)


def grads(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy()


# --- the differentiable path-norm -----------------------------------------------------------


@pytest.mark.parametrize("s", [1.0, 2.0, 0.5, 3.0])
def test_gradcheck(pl_net_theta, pt, s):
    net, theta = pl_net_theta
    t = theta.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: pt.PathNormFunction.apply(net, x, s), (t,))


@pytest.fixture
def pl_net_theta(pathlift_module):
    model = mlp((3, 4, 2))
    return pathlift_module.from_torch(model), \
        torch.from_numpy(pathlift_module.theta_from_torch(model))


@pytest.mark.parametrize("s", [1.0, 2.0, 0.7])
def test_gradient_is_autograd_of_the_recipe_on_a_3_layer_mlp(pathlift_module, pt, s):
    model = mlp((6, 8, 7, 3), seed=1)
    norm = pt.path_norm(model, s)
    norm.backward()
    lm = R.LinearModel(model.eval(), (6,))
    assert norm.item() == pytest.approx(R.path_norm_recipe(lm, s=s), rel=1e-12)
    np.testing.assert_allclose(grads(model), R.path_norm_gradient_recipe(lm, s=s),
                               rtol=1e-10, atol=1e-14)


def test_gradient_reaches_batch_norm_gamma_and_beta(pathlift_module, pt):
    """Through a = gamma / sqrt(var + eps), b = beta - a mean: the reference feeds the recipe's
    linear model with a and b computed from gamma and beta by torch, independently of
    theta_tensor."""
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2)).double()
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
        model[1].weight.uniform_(0.5, 1.5)
        model[1].bias.uniform_(-1, 1)
    # A training loop: the network made once in eval mode is the eval-mode function whatever
    # the module's mode (the module itself in training mode is refused: test_first_hour.py).
    net = pathlift_module.from_torch(model.eval())
    model.train()
    norm = pt.path_norm(net, 2.0)
    norm.backward()
    assert model.training and model[1].training
    mine = grads(model)
    lm = R.LinearModel(copy.deepcopy(model).eval(), (3,))
    params = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
    bn = model[1]
    a = params[2] / torch.sqrt(bn.running_var + bn.eps)
    b = params[3] - a * bn.running_mean
    blocks = [params[0].reshape(-1), params[1], a, b, params[4].reshape(-1), params[5]]
    (lm.total([x.abs() ** 2 for x in blocks], 2.0) ** 0.5).backward()
    np.testing.assert_allclose(mine, torch.cat([p.grad.reshape(-1) for p in params]).numpy(),
                               rtol=1e-10)
    assert np.abs(mine[12:20]).min() > 0  # gamma and beta got gradients


def test_dtype_device_and_the_network_that_follows_the_module(pathlift_module, pt):
    """A module is traced at each call (no cache: a changed architecture is seen at once); its
    from_torch network is not traced again and reads theta at each call, and refuses once the
    module's structure changed."""
    pl = pathlift_module
    model = mlp((4, 6, 2), dtype=torch.float32)
    n1 = pt.path_norm(model, 1.0)
    assert n1.dtype == torch.float32 and n1.shape == () and n1.device == model[0].weight.device
    n1.backward()
    assert model[0].weight.grad.dtype == torch.float32
    net = pl.from_torch(model)
    assert pt.path_norm(net, 2.0).item() == pt.path_norm(model, 2.0).item()
    with torch.no_grad():  # theta is read at each call
        model[0].weight.mul_(2.0)
    theta = pl.theta_from_torch(model)
    for m in (model, net):
        assert pt.path_norm(m, 1.0).item() == pytest.approx(
            pl.path_norm(pl.from_torch(model), theta, 1.0).norm, rel=1e-6)
    model[2] = nn.Linear(6, 3)  # another architecture: a module is traced anew
    assert pt.path_norm(model, 1.0).item() == pytest.approx(
        R.path_norm_recipe(copy.deepcopy(model).double().eval(), (4,), s=1.0), rel=1e-6)
    for call in (lambda: pt.path_norm(net, 1.0), lambda: pt.kernel_diagonal(net),
                 lambda: pl.path_norm(net), lambda: net.weights):
        with pytest.raises(pl.NetworkError, match=r"module changed .*call "
                                                  r"pathlift\.from_torch\(model\) again"):
            call()
    assert not hasattr(pl._torch_autograd, "_STRUCTURES")  # no global cache


def test_s_below_one_needs_nonzero_weights(pt):
    model = mlp((3, 4, 2))
    with torch.no_grad():
        model[0].weight[1, 2] = 0.0
    norm = pt.path_norm(model, 0.5)
    with pytest.raises(ValueError, match=r"not differentiable at theta\[5\] = 0"):
        norm.backward()


# --- kernel diagonal, PathSGD ----------------------------------------------------------------


def test_kernel_diagonal_is_pathconds_diagonal(pt):
    model = mlp((5, 6, 4, 3), seed=3)
    diag = pt.kernel_diagonal(model)
    assert not diag.requires_grad and diag.dtype == torch.float64
    np.testing.assert_allclose(diag.numpy(),
                               R.kernel_diagonal_recipe(model.eval(), (5,)), rtol=1e-12)
    blocks = pt.kernel_diagonal(model, per_parameter=True)
    assert [b.shape for b in blocks] == [p.shape for p in model.parameters()]
    assert torch.equal(torch.cat([b.reshape(-1) for b in blocks]), diag)


def loss_of(model, seed=5):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(16, model[0].in_features, generator=g, dtype=torch.float64)
    y = torch.randn(16, model[-1].out_features, generator=g, dtype=torch.float64)
    return ((model(X) - y) ** 2).mean()


def test_one_path_sgd_step_is_the_manual_update(pt):
    model = mlp((5, 6, 4, 3), seed=4)
    before = [p.detach().clone() for p in model.parameters()]
    gamma = torch.from_numpy(R.kernel_diagonal_recipe(copy.deepcopy(model).eval(), (5,)))
    opt = pt.PathSGD(model, lr=0.1)
    loss_of(model).backward()
    g = grads(model)
    opt.step()
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    expected = torch.cat([p.reshape(-1) for p in before]) - 0.1 * torch.from_numpy(g) / gamma
    torch.testing.assert_close(after, expected, rtol=1e-13, atol=1e-15)


def rescaled(model, layer, neuron, lam):
    """A copy with hidden neuron `neuron` after Linear `layer` rescaled by lam: its in-weights and
    bias times lam, its out-weights divided by lam (the same function, by positive
    homogeneity of ReLU)."""
    other = copy.deepcopy(model)
    with torch.no_grad():
        other[layer].weight[neuron] *= lam
        other[layer].bias[neuron] *= lam
        other[layer + 2].weight[:, neuron] /= lam
    return other


@pytest.mark.parametrize("layer,neuron", [(0, 1), (2, 3)])
def test_path_sgd_is_invariant_under_neuron_rescaling(pt, layer, neuron):
    model = mlp((5, 6, 4, 3), seed=6)
    X = torch.randn(32, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(9))

    def after_steps(m, make_opt, steps=3):
        opt = make_opt(m)
        for _ in range(steps):
            opt.zero_grad()
            loss_of(m).backward()
            opt.step()
        return m(X).detach()

    for make_opt, invariant in ((lambda m: pt.PathSGD(m, lr=0.05), True),
                                (lambda m: pt.PathSGD(m, lr=0.05, momentum=0.9), True),
                                (lambda m: torch.optim.SGD(m.parameters(), lr=0.05), False)):
        a = after_steps(copy.deepcopy(model), make_opt)
        b = after_steps(rescaled(model, layer, neuron, 4.0), make_opt)
        gap = (a - b).abs().max().item()
        assert (gap < 1e-12) if invariant else (gap > 1e-3), (make_opt, gap)


def test_a_parameter_on_no_live_path_is_not_updated(pt):
    model = mlp((4, 5, 3), seed=7)
    with torch.no_grad():
        model[2].weight[:, 1] = 0.0  # hidden neuron 1 feeds nothing: its in-weights have gamma 0
    assert (pt.kernel_diagonal(model, per_parameter=True)[0][1] == 0).all()
    before = model[0].weight.detach().clone()
    opt = pt.PathSGD(model, lr=0.1)
    loss_of(model).backward()
    opt.step()
    assert torch.equal(model[0].weight[1], before[1])
    assert not torch.equal(model[0].weight[0], before[0])
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_path_sgd_refuses_bad_arguments(pt):
    model = mlp()
    for kwargs in ({"lr": 0.0}, {"lr": float("nan")}, {"lr": 0.1, "momentum": -1.0},
                   {"lr": 0.1, "eps": -1e-3}):
        with pytest.raises(ValueError, match="PathSGD"):
            pt.PathSGD(model, **kwargs)
    with pytest.raises(TypeError):
        pt.PathSGD(list(model.parameters()), lr=0.1)


# --- torch sparse ------------------------------------------------------------------------------


def test_to_torch_sparse_multiplies_like_the_matrix(pathlift_module):
    pl = pathlift_module
    model = mlp((4, 5, 3, 2), seed=8)
    net = pl.from_torch(model)
    theta = pl.theta_from_torch(model)
    V = np.random.default_rng(0).standard_normal((net.d, 3))
    for J in (pl.jacobian(net, theta),                           # writable: values shared
              pl.jacobian(pl.enumerate_paths(net), theta),       # read-only: values copied
              pl.jacobian(net, theta, dtype=np.float32),
              pl.skeleton(net)):
        T = pl.to_torch_sparse(J)
        assert T.layout == torch.sparse_csr and T.shape == J.shape
        assert T.crow_indices().dtype == torch.int64 and T.col_indices().dtype == torch.int64
        assert T.dtype == (torch.float32 if J.dtype == np.float32 else torch.float64)
        # (CSR times a 1-D vector needs a PyTorch built with MKL; a d x k matrix does not)
        got = (T @ torch.from_numpy(V).to(T.dtype)).numpy()
        single = J.dtype == np.float32
        np.testing.assert_allclose(got, J @ V, rtol=1e-5 if single else 1e-12,
                                   atol=1e-6 if single else 1e-15)
    J = pl.jacobian(net, theta)
    assert pl.to_torch_sparse(J).values().data_ptr() == J.data.ctypes.data
    with pytest.raises(TypeError, match="scipy.sparse"):
        pl.to_torch_sparse(J.toarray())


# --- the example --------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_the_training_example_runs(build_dir, tmp_path, model):
    if importlib.util.find_spec("sklearn") is None:
        pytest.skip("scikit-learn is not installed (Debian: python3-sklearn)")
    out = tmp_path / "training.png"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(build_dir / "python"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "path_training.py"),
                           "--epochs", "2", "--model", model, "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for method in ("sgd ", "sgd+penalty", "path-sgd", "pathcond+sgd"):
        assert method in proc.stdout
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
