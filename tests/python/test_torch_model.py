"""A PyTorch network that follows its model (issue 28): from_torch's TorchNetwork reads theta from
its module at each use, so every pathlift function called on it without theta answers for the
module's current weights (after an optimizer step, after doubling every weight), checked against
the same call given theta_from_torch(model) and against references written without pathlift
(bench/torch_recipes.py, the module's own outputs, identities of Phi). Also: in-place operations
traced exactly or refused by name, theta <-> parameters (load_theta, fold_batchnorm), the
training-loop functions without a trace, the two path_norm functions' errors, and the package's
import graph.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_torch_model.py
"""
import ast
import copy
import pathlib
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

ROOT = pathlib.Path(__file__).resolve().parents[2]

import torch_recipes as R  # noqa: E402
from test_cnn import prepare, tiny_resnet  # noqa: E402


def outputs(model, X):
    with torch.no_grad():
        return model(X.clone()).reshape(X.shape[0], -1).numpy()


# --- in-place operations: traced exactly, or refused by name ----------------------------------


class Net(nn.Module):
    """forward = fn(self.m, x) with the layers in a ModuleDict (each case its own layers)."""

    def __init__(self, fn, **layers):
        super().__init__()
        self.m = nn.ModuleDict(layers)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.m, x)


def L(i, o):
    return nn.Linear(i, o)


def _relu_method(m, x):
    h = m["fc"](x)
    h.relu_()  # not reassigned: torch.fx's dead-code elimination dropped it
    return m["fc2"](h)


def _torch_relu_(m, x):
    h = m["fc"](x)
    torch.relu_(h)
    return m["fc2"](h)


def _functional_inplace(m, x):
    h = m["fc"](x)
    F.relu(h, inplace=True)
    F.leaky_relu(h, 0.2, True)  # inplace given by position
    return m["fc2"](h)


def _module_inplace(m, x):
    h = m["fc"](x)
    m["act"](h)
    return m["fc2"](h)


def _add_(m, x):
    h = m["fc"](x)
    h.add_(m["fc3"](x))
    return m["fc2"](h)


def _iadd_alias(m, x):
    h = m["fc"](x)
    g = h
    h += m["fc3"](x)  # changes g too
    return m["fc2"](g)


def _aliases(m, x):
    h = m["fc"](x)
    g = m["id"](h)
    a = m["drop"](g).contiguous().detach()
    h.relu_()  # seen through g and a: the same tensor
    return m["fc2"](a) + m["fc3"](g)


def _chain(m, x):
    h = m["fc"](x)
    h.relu_()
    h -= m["fc3"](x)
    m["act"](h)
    return m["fc2"](h) + m["fc4"](h)


def _same_shape_view(m, x):
    h = m["fc"](x)
    v = h.view(h.size(0), -1)  # a view of the same shape sees the change
    h.relu_()
    return m["fc2"](v)


def _after_the_last_read(m, x):
    h = m["fc"](x)
    out = m["fc2"](h)
    h.relu_()  # nothing reads h afterwards: no effect
    return out


def _result_and_target(m, x):
    h = m["fc"](x)
    y = h.relu_()
    return m["fc2"](h) + m["fc3"](y)


def _the_input(m, x):
    x.relu_()
    return m["fc2"](m["fc"](x))


def _on_a_view(m, x):
    v = m["conv"](x).flatten(1)
    v.relu_()
    return m["lin"](v)


def _cat_before(m, x):
    h = m["fc"](x)
    c = torch.cat([h, h], 1)  # a new tensor: keeps the values before the change
    h.relu_()
    return m["fc2"](c) + m["fc3"](h)


def _flat():
    return dict(fc=L(4, 5), fc2=L(5, 3))


def _flat3():
    return dict(fc=L(4, 5), fc3=L(4, 5), fc2=L(5, 3))


EXACT = {
    "relu_": (_relu_method, _flat, (4,)),
    "torch.relu_": (_torch_relu_, _flat, (4,)),
    "F.relu(inplace=True)": (_functional_inplace, _flat, (4,)),
    "ReLU(inplace=True)": (_module_inplace,
                           lambda: dict(fc=L(4, 5), act=nn.ReLU(inplace=True), fc2=L(5, 3)), (4,)),
    "add_": (_add_, _flat3, (4,)),
    "+= on an alias": (_iadd_alias, _flat3, (4,)),
    "Identity, Dropout, contiguous, detach": (
        _aliases, lambda: dict(fc=L(4, 5), id=nn.Identity(), drop=nn.Dropout(0.3), fc2=L(5, 3),
                               fc3=L(5, 3)), (4,)),
    "relu_, -=, ReLU(inplace=True)": (
        _chain, lambda: dict(fc=L(4, 5), fc3=L(4, 5), act=nn.ReLU(inplace=True), fc2=L(5, 3),
                             fc4=L(5, 3)), (4,)),
    "view of the same shape": (_same_shape_view, _flat, (4,)),
    "after the last read": (_after_the_last_read, _flat, (4,)),
    "result and target": (_result_and_target, lambda: dict(fc=L(4, 5), fc2=L(5, 3),
                                                           fc3=L(5, 3)), (4,)),
    "the input": (_the_input, _flat, (4,)),
    "in place on a view": (_on_a_view, lambda: dict(conv=nn.Conv2d(1, 2, 2), lin=L(8, 3)),
                           (1, 3, 3)),
    "cat before": (_cat_before, lambda: dict(fc=L(4, 5), fc2=L(10, 3), fc3=L(5, 3)), (4,)),
}


@pytest.mark.parametrize("name", list(EXACT))
def test_in_place_operations_compute_what_the_module_computes(pl, name):
    fn, layers, shape = EXACT[name]
    torch.manual_seed(0)
    model = Net(fn, **layers()).double().eval()
    net = pl.from_torch(model, input_shape=shape)
    X = torch.randn(8, *shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    got = pl.forward(net, None, X.reshape(8, -1).numpy()).outputs
    np.testing.assert_allclose(got, outputs(model, X), rtol=1e-12, atol=1e-12)


def _view_then_inplace(m, x):
    h = m["conv"](x)
    v = h.flatten(1)
    h.relu_()  # v, of another shape, would see it
    return m["lin"](v)


def _inplace_on_view_base_read(m, x):
    h = m["conv"](x)
    v = torch.flatten(h, 1)
    v.relu_()  # h would see it
    return m["lin"](h.flatten(1))


def _pow_(m, x):
    h = m["fc"](x)
    h.pow_(2.0)
    return m["fc2"](h)


def _ipow_alias(m, x):
    h = m["fc"](x)
    g = h
    h **= 2
    return m["fc2"](g)


def _clamp_(m, x):
    h = m["fc"](x)
    h.clamp_(min=0, max=1)  # clamp_(min=0) is a ReLU in place (test_torch_coverage.py)
    return m["fc2"](h)


def _setitem(m, x):
    h = m["fc"](x)
    h[:, 0] = 0.0
    return m["fc2"](h)


_CONV = (lambda: dict(conv=nn.Conv2d(1, 2, 2), lin=L(8, 3)), (1, 3, 3))
REFUSED = {
    "view, then in place": (
        _view_then_inplace, *_CONV,
        r"tensor method \.relu_\(\) \(node 'relu_'\) modifies in place a tensor whose view of "
        r"another shape or order \(tensor method \.flatten\(\) \(node 'flatten'\)\) is read "
        r"afterwards \(by node 'm_lin'\): not supported"),
    "in place on a view, base read": (
        _inplace_on_view_base_read, *_CONV,
        r"tensor method \.relu_\(\) \(node 'relu_'\) modifies in place a tensor whose view of "
        r"another shape or order \(layer Conv2d at 'm.conv'\) is read afterwards"),
    "pow_": (_pow_, _flat, (4,), r"tensor method \.pow_\(\) \(node 'pow_'\): not supported"),
    "**= on an alias": (_ipow_alias, _flat, (4,), r"operation ipow \(node 'ipow'\): not supported"),
    "clamp_": (_clamp_, _flat, (4,), r"tensor method \.clamp_\(\) \(node 'clamp_'\): a clamp "
                                     r"with max=1 \(ReLU6-like\) is not positively homogeneous"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_in_place_operations_refused_by_name(pl, name):
    fn, layers, shape, message = REFUSED[name]
    model = Net(fn, **layers()).double().eval()
    with pytest.raises(pl.UnsupportedModelError, match=message) as info:
        pl.from_torch(model, input_shape=shape)
    assert "1 problem\n" in str(info.value)  # the refusal alone: no parameter called unused
    assert not pl.supports(model, input_shape=shape).ok


def test_an_item_assignment_is_refused(pl):
    """h[:, 0] = 0 changes h in place: refused (torch 1.13's fx cannot trace it; a later fx
    records operator.setitem, an in-place operation, refused by name), never dropped."""
    with pytest.raises(pl.UnsupportedModelError, match=r"operation setitem \(node 'setitem'\): "
                       r"not supported|torch\.fx cannot trace Net: .*item assignment"):
        pl.from_torch(Net(_setitem, **_flat()).double().eval(), input_shape=(4,))


def test_a_refused_layers_parameters_are_not_called_unused(pl):
    """One problem per cause: a refused layer (an unsupported module with parameters, a
    supported one with an unsupported attribute) is named; neither its parameters nor those of
    the layers after it are reported as unused, nor the output as missing."""
    for model, problem in (
            (nn.Sequential(nn.Conv2d(1, 2, 3), nn.LayerNorm([2, 1, 1]), nn.Flatten(),
                           nn.Linear(2, 2)),
             r"layer LayerNorm at '1': not supported"),
            (nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(),
                           nn.AvgPool2d(3, divisor_override=2), nn.Flatten(), nn.Linear(2, 2)),
             r"layer AvgPool2d at '2': divisor_override is not supported")):
        with pytest.raises(pl.UnsupportedModelError,
                           match=rf"1 problem\n  - {problem}\nsupported: ") as info:
            pl.from_torch(model, input_shape=(1, 3, 3))
        assert "not used" not in str(info.value)
        assert pl.supports(model, (1, 3, 3)).problems == [info.value.args[0].splitlines()[1][4:]]


def test_non_homogeneous_activations_say_why(pl):
    """ReLU6, GELU, sigmoid and tanh (module, function, method) are refused as not positively
    homogeneous, not merely "not supported"; a supported activation beside them is not."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.six = nn.Linear(3, 3), nn.ReLU6()

        def forward(self, x):
            y = torch.nn.functional.gelu(self.lin(x)).sigmoid() + torch.tanh(x)
            return self.six(torch.relu(y))

    problems = pl.supports(Net().eval(), (3,)).problems
    assert len(problems) == 4, problems
    for where in ("node 'gelu'", "method .sigmoid()", "node 'tanh'", "layer ReLU6 at 'six'"):
        assert any(where in p and p.endswith("not positively homogeneous (f(a x) = a f(x) fails "
                                             "for some a > 0): the path-lifting describes networks "
                                             "of ReLU, leaky ReLU, identity and max-pooling "
                                             "neurons")
                   for p in problems), (where, problems)


def test_torchvision_blocks_in_place(pl):
    """torchvision's BasicBlock: ReLU(inplace=True) and `out += identity`, each kept (one add
    layer per block), the network computing what the module computes."""
    model = prepare(tiny_resnet(), 3)
    graph = pl.layer_graph_from_torch(model, (3, 4, 4))
    assert [layer.kind for layer in graph.layers].count("add") == 2
    net = pl.from_torch(model, (3, 4, 4))
    X = torch.randn(8, 3, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    got = pl.forward(net, None, X.reshape(8, -1).numpy()).outputs
    np.testing.assert_allclose(got, outputs(model, X), rtol=1e-12, atol=1e-13)


# --- the network follows its module -----------------------------------------------------------


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.bn = nn.BatchNorm2d(2)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.bn(self.conv(x)))), 1))


SHAPE = (1, 4, 4)


def references(model):
    """What a researcher computes without pathlift at the module's current weights (float64)."""
    lm = R.LinearModel(copy.deepcopy(model).eval(), SHAPE)
    return dict(norm1=R.path_norm_recipe(lm, s=1.0), norm2=R.path_norm_recipe(lm, s=2.0),
                gradient=R.path_norm_gradient_recipe(lm, s=2.0),
                magnitude=np.abs(lm.theta.numpy() * R.l1_gradient_recipe(lm)),
                diagonal=R.kernel_diagonal_recipe(lm), lm=lm)


def check_every_function(pl, model, net, before):
    """Every function called on net without theta equals the call given theta_from_torch
    explicitly, and an independent reference."""
    theta = pl.theta_from_torch(model)
    assert not np.array_equal(theta, before)
    np.testing.assert_array_equal(net.weights, theta)
    ref = references(model)
    rel = dict(rtol=1e-11, atol=0)
    for s, key in ((1.0, "norm1"), (2.0, "norm2")):
        got = pl.path_norm(net, s=s).norm
        assert got == pl.path_norm(net, theta, s).norm
        assert got == pytest.approx(ref[key], rel=1e-12)
    g = pl.path_norm_gradient(net, s=2.0)
    np.testing.assert_array_equal(g, pl.path_norm_gradient(net, theta, 2.0))
    np.testing.assert_allclose(g, ref["gradient"], rtol=1e-10, atol=1e-14)
    mag = pl.path_magnitude(net)
    np.testing.assert_array_equal(mag, pl.path_magnitude(net, theta))
    np.testing.assert_allclose(mag, ref["magnitude"], rtol=1e-10, atol=1e-14)
    diag = pl.kernel_diagonal(net)
    np.testing.assert_array_equal(diag, pl.kernel_diagonal(net, theta))
    np.testing.assert_allclose(diag, ref["diagonal"], **rel)
    assert pl.kernel_trace(net) == pl.kernel_trace(net, theta) == pytest.approx(
        ref["diagonal"].sum(), rel=1e-12)
    v = np.random.default_rng(0).standard_normal(net.d)
    kv = pl.kernel_matvec(net, None, v)
    np.testing.assert_array_equal(kv, pl.kernel_matvec(net, theta, v))
    np.testing.assert_allclose(kv, R.kernel_matvec_recipe(ref["lm"], v=v), rtol=1e-10,
                               atol=1e-12 * np.abs(kv).max())
    J = pl.jacobian(net)
    np.testing.assert_array_equal(J.toarray(), pl.jacobian(net, theta).toarray())
    eig = pl.kernel_top_eigenvalues(net, None, 2)
    np.testing.assert_array_equal(eig.values, pl.kernel_top_eigenvalues(net, theta, 2).values)
    dense = J.toarray()
    np.testing.assert_allclose(eig.values, np.linalg.eigvalsh(dense.T @ dense)[::-1][:2],
                               rtol=1e-9)
    phi = pl.path_lifting(net)
    np.testing.assert_array_equal(phi, pl.path_lifting(net, theta))
    dag = net.unrolled()
    w = np.where(dag.params >= 0, theta[np.maximum(dag.params, 0)], dag.fixed_weights)
    paths = pl.enumerate_paths(net)
    np.testing.assert_allclose(phi, [np.prod(w[paths.path(p)]) for p in range(len(paths))],
                               rtol=1e-13)
    # Euler's identity for the products of parameters: J theta = (parameters on p) Phi_p
    np.testing.assert_allclose(J @ theta, np.asarray(pl.skeleton(net).sum(1)).ravel() * phi,
                               rtol=1e-12, atol=1e-14)
    X = torch.randn(5, *SHAPE, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    f = outputs(model.eval(), X)
    out = pl.forward(net, None, X.reshape(5, -1).numpy()).outputs
    np.testing.assert_array_equal(out, pl.forward(net, theta, X.reshape(5, -1).numpy()).outputs)
    np.testing.assert_allclose(out, f, rtol=1e-12, atol=1e-13)
    lin = pl.linearize(net, None, X.reshape(5, -1).numpy())
    np.testing.assert_allclose((lin.L @ phi).reshape(f.shape), f, rtol=1e-12, atol=1e-13)
    r, explicit = pl.rank(net), pl.rank(net, theta)
    assert r.keys() == explicit.keys()
    assert all(np.array_equal(r[k], explicit[k]) for k in r if k != "timings"), \
        [k for k in r if not np.array_equal(r[k], explicit[k])]
    assert r["rank_B"] == r["expected"] and r["rank_J"] == r["expected"]
    counts = pl.count_paths(net)  # the structure only
    assert counts.paths == len(paths) and counts.nnz == paths.nnz
    return r


def test_every_function_follows_the_module(pl):
    torch.manual_seed(0)
    model = prepare(SmallCNN(), 4)
    net = pl.from_torch(model, input_shape=SHAPE)
    assert isinstance(net, pl.torch.TorchNetwork) and isinstance(net, pl.LayerNetwork)
    assert net.module is model and net.input_shape == SHAPE and net.has_weights
    theta0 = pl.theta_from_torch(model)
    np.testing.assert_array_equal(net.weights, theta0)
    assert not net.weights.flags.writeable
    rank0 = pl.rank(net)
    # an optimizer step in training mode (BatchNorm's running statistics move too)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    X = torch.randn(16, *SHAPE, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    model(X).pow(2).mean().backward()
    opt.step()
    model.eval()
    rank1 = check_every_function(pl, model, net, theta0)
    assert rank1["rank_J_tolerance"] != rank0["rank_J_tolerance"]  # rank's theta moved too
    theta1 = pl.theta_from_torch(model)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    check_every_function(pl, model, net, theta1)
    graph = net.layer_graph  # carries the current theta
    np.testing.assert_array_equal(graph.weights, pl.theta_from_torch(model))
    assert net.unrolled().weights is None  # the DAG: no stale copy of theta
    back = pickle.loads(pickle.dumps(net))
    assert isinstance(back, pl.torch.TorchNetwork) and back.module is not model
    np.testing.assert_array_equal(back.weights, net.weights)


def test_doubling_every_weight_scales_the_path_norm(pl):
    """A bias-free L-layer MLP: doubling every weight multiplies every path product, hence the
    L1 path-norm, by 2^L; the network answers for the doubled weights."""
    torch.manual_seed(1)
    model = nn.Sequential(L(6, 8), nn.ReLU(), L(8, 8), nn.ReLU(), L(8, 4)).double()
    for m in model:
        if isinstance(m, nn.Linear):
            m.bias = None
    net = pl.from_torch(model)
    before = pl.path_norm(net).norm
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    assert pl.path_norm(net).norm == pytest.approx(8 * before, rel=1e-13)


def test_a_changed_structure_is_refused(pl, pt):
    def fresh():
        torch.manual_seed(2)
        model = prepare(SmallCNN(), 6)
        return model, pl.from_torch(model, input_shape=SHAPE)

    def replace_parameter(m):
        m.fc.weight = nn.Parameter(m.fc.weight.detach().clone())

    def reshape_parameter(m):
        m.fc.weight.data = torch.zeros(3, 8, 1, dtype=torch.float64)

    def replace_module(m):
        m.pool = nn.AvgPool2d(2)

    for change, why in ((replace_parameter, "its parameter tensors were replaced"),
                        (reshape_parameter, r"parameter 'fc.weight' has shape \(3, 8, 1\), was "
                                            r"\(3, 8\)"),
                        (replace_module, "its submodules were replaced")):
        model, net = fresh()
        change(model)
        for call in (lambda: net.weights, lambda: pl.path_norm(net), lambda: pl.jacobian(net),
                     lambda: pt.path_norm(net), lambda: pl.theta_from_torch(net)):
            with pytest.raises(pl.NetworkError, match=rf"module changed since its network was "
                               rf"made \({why}.*call pathlift\.from_torch\(model\) again"):
                call()
    model, net = fresh()
    with torch.no_grad():  # values, the mode, the running statistics: not the structure
        model.fc.weight.add_(1.0)
        model.bn.running_var.mul_(2.0)
    model.train()
    np.testing.assert_array_equal(net.weights, pl.theta_from_torch(model.eval()))


# --- theta <-> parameters ----------------------------------------------------------------------


def test_load_theta_restores_the_function(pl, pt):
    model = prepare(SmallCNN(), 7)
    X = torch.randn(6, *SHAPE, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    f, theta = outputs(model, X), pl.theta_from_torch(model)
    gamma = model.bn.weight.detach().clone()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, dtype=p.dtype))
    assert np.abs(outputs(model, X) - f).max() > 1e-3
    pt.load_theta(model, theta)
    np.testing.assert_allclose(outputs(model, X), f, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.bn.weight.detach(), gamma, rtol=1e-14)  # gamma, not a
    np.testing.assert_allclose(pl.theta_from_torch(model), theta, rtol=1e-14, atol=1e-15)
    net = pl.from_torch(model, SHAPE)  # a network's form, and a tensor theta
    pt.load_theta(net, torch.from_numpy(2 * theta))
    np.testing.assert_allclose(net.weights, 2 * theta, rtol=1e-14, atol=1e-15)
    with pytest.raises(ValueError, match=f"d = {net.d} numbers"):
        pt.load_theta(model, theta[:-1])
    with pytest.raises(ValueError, match=r"theta\[2\] is not finite"):
        pt.load_theta(model, np.where(np.arange(net.d) == 2, np.nan, theta))


def test_load_theta_keeps_dtype_and_device(pl, pt):
    model = nn.Sequential(L(3, 4), nn.BatchNorm1d(4), nn.ReLU(), L(4, 2)).eval()
    theta = pl.theta_from_torch(model)
    pt.load_theta(model, theta * 3)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    np.testing.assert_allclose(pl.theta_from_torch(model), theta * 3, rtol=1e-6)


class FoldMe(nn.Module):
    """Conv (no bias) + BN, Conv (bias) + BN, Linear + BatchNorm1d: folded; a BN after a ReLU
    and one whose conv output is read twice: kept."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 3, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(3)
        self.c2 = nn.Conv2d(3, 3, 3, padding=1)
        self.b2 = nn.BatchNorm2d(3)
        self.c3 = nn.Conv2d(3, 3, 1)
        self.b3 = nn.BatchNorm2d(3)
        self.after_relu = nn.BatchNorm2d(3)
        self.fc = nn.Linear(3 * 4 * 4, 5)
        self.b4 = nn.BatchNorm1d(5)
        self.out = nn.Linear(5, 2)

    def forward(self, x):
        h = torch.relu(self.b1(self.c1(x)))
        h = self.after_relu(torch.relu(self.b2(self.c2(h))))
        z = self.c3(h)
        h = torch.relu(self.b3(z) + z)
        return self.out(torch.relu(self.b4(self.fc(torch.flatten(h, 1)))))


def test_fold_batchnorm(pl, pt):
    model = prepare(FoldMe(), 8)
    folded = pt.fold_batchnorm(model)
    assert isinstance(model.b1, nn.BatchNorm2d)  # the model is unchanged
    kept = [name for name, m in folded.named_modules() if isinstance(m, nn.BatchNorm2d)]
    assert kept == ["b3", "after_relu"]
    assert all(isinstance(getattr(folded, n), nn.Identity) for n in ("b1", "b2", "b4"))
    X = torch.randn(6, 2, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    np.testing.assert_allclose(outputs(folded, X), outputs(model, X), rtol=1e-12, atol=1e-12)
    theta = pl.theta_from_torch(folded)
    assert theta.size == pl.theta_from_torch(model).size - 2 * (3 + 3 + 5) + 3  # c1 got a bias
    assert [n for n, _ in folded.named_parameters()][:2] == ["c1.weight", "c1.bias"]
    kept_bn = {id(p) for n in kept for p in getattr(folded, n).parameters()}
    plain = torch.cat([p.detach().reshape(-1) for p in folded.parameters()]).numpy()
    slots = np.concatenate([np.full(p.numel(), id(p) in kept_bn) for p in folded.parameters()])
    np.testing.assert_array_equal(theta[~slots], plain[~slots])  # only kept BNs hold a, b
    net = pl.from_torch(folded, input_shape=(2, 4, 4))
    np.testing.assert_allclose(pl.forward(net, None, X.reshape(6, -1).numpy()).outputs,
                               outputs(model, X), rtol=1e-12, atol=1e-12)
    resnet = pt.fold_batchnorm(prepare(tiny_resnet(), 9))  # every BatchNorm follows a conv
    assert not any(isinstance(m, nn.BatchNorm2d) for m in resnet.modules())
    lambdas = np.ones(pl.from_torch(resnet, (3, 4, 4)).unrolled().h)
    np.testing.assert_array_equal(pl.theta_from_torch(pt.rescale(resnet, lambdas, (3, 4, 4))),
                                  pl.theta_from_torch(resnet))


# --- the training loop: a network, no trace ----------------------------------------------------


def test_training_functions_take_the_network_without_tracing(pl, pt, monkeypatch):
    model = nn.Sequential(L(4, 6), nn.ReLU(), L(6, 3)).double()
    net = pl.from_torch(model)
    opt = pt.PathSGD(model, lr=0.05)
    assert isinstance(opt.network, pt.TorchNetwork) and opt.network.module is model

    def no_trace(*args, **kwargs):
        raise AssertionError("traced")

    monkeypatch.setattr(torch.fx.Tracer, "trace", no_trace)
    X = torch.randn(8, 4, dtype=torch.float64)
    for _ in range(2):
        opt.zero_grad()
        (model(X).pow(2).mean() + 1e-3 * pt.path_norm(net, 1.0)).backward()
        opt.step()
    theta = pl.theta_from_torch(net)
    assert pt.path_norm(net, 2.0).item() == pytest.approx(pl.path_norm(net, theta, 2.0).norm,
                                                          rel=1e-15)
    np.testing.assert_array_equal(pt.kernel_diagonal(net).numpy(),
                                  pl.kernel_diagonal(net, theta))
    np.testing.assert_array_equal(pt.theta_tensor(net).detach().numpy(), theta)
    with pytest.raises(pl.UnsupportedModelError, match="traced"):
        pt.path_norm(model)  # a module is traced at each call


# --- the two path_norm functions ---------------------------------------------------------------


def test_the_two_path_norms_refuse_the_other_ones_arguments(pl, pt):
    model = nn.Sequential(L(3, 4), nn.ReLU(), L(4, 2)).double()
    net = pl.from_torch(model)
    with pytest.raises(TypeError, match=r"got a torch\.nn\.Module: pathlift\.from_torch\(model\)"):
        pl.path_norm(model)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        pl.kernel_diagonal(model)
    with pytest.raises(ValueError, match=r"^theta must be a 1-D vector of d numbers, got the "
                                         r"number 2\.0: to give the exponent, write "
                                         r"path_norm\(net, s=2\.0\)$"):
        pl.path_norm(net, 2.0)
    with pytest.raises(TypeError, match=r"pathlift\.torch\.path_norm takes a torch\.nn\.Module "
                                        r"or its pathlift\.from_torch network, got a pathlift "
                                        r"Network: .*pathlift\.path_norm\(net, theta, s\)"):
        pt.path_norm(pl.feed_forward(3, [4], 2))
    with pytest.raises(TypeError, match="got a pathlift LayerNetwork"):
        pt.kernel_diagonal(pl.LayerNetwork(net.layer_graph))
    with pytest.raises(TypeError, match=r"s must be a number, got ndarray: theta is read from "
                                        r"the module's parameters"):
        pt.path_norm(net, pl.theta_from_torch(model))
    assert pt.path_norm(net, 2).item() == pytest.approx(pl.path_norm(net, s=2).norm, rel=1e-15)


# --- the package's import graph ----------------------------------------------------------------


PACKAGE = ROOT / "python" / "pathlift"


def relative_imports(path):
    """(module imported, inside a function) for each relative import of a package file."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom) and child.level == 1:
                names = [child.module] if child.module else \
                    [a.name for a in child.names if (PACKAGE / f"{a.name}.py").exists()]
                found.extend((n.split(".")[0], inner) for n in names)
            visit(child, inner)

    visit(tree, False)
    return found


def test_the_package_imports_form_no_cycle():
    """python/pathlift's modules import each other in layers: no cycle, no function-level
    import of a package module (the way a cycle hides), nothing imports pathlift.torch (the
    facade) but the package's lazy __getattr__."""
    graph = {}
    for path in sorted(PACKAGE.glob("*.py")):
        name = path.stem
        imports = relative_imports(path)
        graph[name] = {n for n, _ in imports if (PACKAGE / f"{n}.py").exists()}
        if name.startswith("_torch") or name == "torch":
            assert not [n for n, inner in imports if inner], f"{name}: a function-level import"
            assert "torch" not in graph[name], f"{name} imports the facade pathlift.torch"
    assert graph["torch"] >= {"_torch_network", "_torch_autograd", "_torch_rescale"}
    state = {}

    def visit(n, stack):
        state[n] = "open"
        for m in graph.get(n, ()):
            assert state.get(m) != "open", f"import cycle: {' -> '.join(stack + [n, m])}"
            if m not in state:
                visit(m, stack + [n])
        state[n] = "done"

    for n in graph:
        if n not in state:
            visit(n, [])
