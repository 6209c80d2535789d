"""No wrong number from pathlift.torch (issue 50, round 3): each case computes what the PyTorch
module computes (checked against the module's own forward pass or autograd), or is refused by a
Python exception naming the culprit -- the module and the hook, the in-place operation, the
argument, the parameter, the entry -- never a bare KeyError, never a silently wrong number.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_torch_round3.py
"""
import copy
import inspect
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
global_hooks = torch.nn.modules.module


def mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Sequential(nn.Linear(6, 5), nn.ReLU()),
                         nn.Linear(5, 3)).double().eval()


def assert_computes_the_module(pl, model, shape, n=7):
    """from_torch(model) computes model(X) on random inputs."""
    net = pl.from_torch(model, input_shape=shape)
    X = torch.randn(n, *shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = model(X.clone()).reshape(n, -1).numpy()
    got = pl.forward(net, None, X.reshape(n, -1).numpy()).outputs
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    return net


def assert_refused(pl, model, shape, *messages):
    """from_torch, supports and theta_from_torch refuse the model, naming each message."""
    with pytest.raises(pl.UnsupportedModelError) as info:
        pl.from_torch(model, input_shape=shape)
    for message in messages:
        assert message in str(info.value), (message, str(info.value))
    problems = pl.supports(model, input_shape=shape).problems
    assert all(any(m in p for p in problems) for m in messages), problems
    return str(info.value)


# --- 1. forward hooks and pre-hooks: torch.fx does not run them --------------------------------


def double_output(module, inputs, out):
    return out * 2


def shift_input(module, inputs):
    return (inputs[0] + 1,)


def _hooked(where, kind):
    model = mlp()
    module = {"leaf": model[0], "container": model[2], "model": model}[where]
    if kind == "hook":
        module.register_forward_hook(double_output)
    else:
        module.register_forward_pre_hook(shift_input)
    return model


@pytest.mark.parametrize("where,path", [("leaf", "module '0' (Linear)"),
                                        ("container", "module '2' (Sequential)"),
                                        ("model", "the model (Sequential)")])
@pytest.mark.parametrize("kind,words", [("hook", "a forward hook (double_output, "
                                                 "register_forward_hook)"),
                                        ("pre-hook", "a forward pre-hook (shift_input, "
                                                     "register_forward_pre_hook)")])
def test_forward_hooks_are_refused_naming_the_module_and_the_hook(pl, where, path, kind, words):
    model = _hooked(where, kind)
    with torch.no_grad():  # the hook changes what the module computes
        X = torch.randn(3, 4, dtype=torch.float64)
        assert not torch.equal(model(X), mlp()(X))
    text = assert_refused(pl, model, (4,), f"{path} has {words}: pathlift does not run hooks")
    assert "not used" not in text  # the hooked module's parameters are not called unused
    with pytest.raises(pl.UnsupportedModelError, match="forward"):
        pl.theta_from_torch(model)


@pytest.mark.parametrize("register,words", [
    ("register_module_forward_hook", "a global forward hook (double_output, torch.nn.modules."
                                     "module.register_module_forward_hook) is registered"),
    ("register_module_forward_pre_hook", "a global forward pre-hook (shift_input, torch.nn."
                                         "modules.module.register_module_forward_pre_hook)")])
def test_global_forward_hooks_are_refused(pl, register, words):
    if not hasattr(global_hooks, register):
        pytest.skip(f"this torch has no {register}")
    hook = shift_input if "pre" in register else double_output
    handle = getattr(global_hooks, register)(hook)
    try:
        assert_refused(pl, mlp(), (4,), words)
    finally:
        handle.remove()
    assert_computes_the_module(pl, mlp(), (4,))  # removed: imported again


def test_backward_hooks_do_not_change_the_outputs_and_are_accepted(pl):
    model = mlp()
    model[0].register_full_backward_hook(lambda m, grad_in, grad_out: None)
    model[3].register_backward_hook(lambda m, grad_in, grad_out: None)
    assert_computes_the_module(pl, model, (4,))


# --- 2. in-place operations on views ----------------------------------------------------------


class Views(nn.Module):
    """forward = fn(self, x); a: 4 -> 4, b: 4 -> 2 (reads all of h), c: 2 -> 2 (reads a half),
    each made when fn uses it (every parameter must be used)."""

    def __init__(self, fn, uses="abc"):
        super().__init__()
        torch.manual_seed(0)
        self.a = nn.Linear(4, 4)
        if "b" in uses:
            self.b = nn.Linear(4, 2)
        if "c" in uses:
            self.c = nn.Linear(2, 2)
        self.act = nn.ReLU(inplace=True)
        self.fn = fn

    def forward(self, x):
        return self.fn(self, x)


def _slice_relu_base_read(s, x):
    h = s.a(x)
    h[:, :2].relu_()
    return s.b(h)


def _piece_mul_base_read(s, x):
    h = s.a(x)
    p, q = h.chunk(2, dim=1)
    p.mul_(3)
    return s.b(h) + s.c(q)


def _split_piece_base_read(s, x):
    h = s.a(x)
    p, q = torch.split(h, 2, 1)
    p.add_(q)
    return s.b(h) + s.c(p)


def _module_in_place_on_a_slice(s, x):
    h = s.a(x)
    s.act(h[:, 1:3])
    return s.b(h)


def _base_changed_slice_read(s, x):
    h = s.a(x)
    p = h[:, :2]
    h.relu_()
    return s.c(p) + s.b(h)


def _flatten_slice_base_read(s, x):
    h = s.a(x)
    h.flatten(1)[:, 1:].relu_()
    return s.b(h)


def _narrow_relu_base_read(s, x):
    h = s.a(x)
    h.narrow(1, 0, 2).relu_()  # an unsupported view: refused, not dropped
    return s.b(h)


VIEW_REFUSED = {
    "h[:, :2].relu_()": (_slice_relu_base_read, "tensor method .relu_() (node 'relu_') modifies "
                         "in place a tensor whose view of another shape or order (layer Linear "
                         "at 'a') is read afterwards (by node 'b')"),
    "chunk, p.mul_(3)": (_piece_mul_base_read, "tensor method .mul_() (node 'mul_') modifies "
                         "in place a tensor whose view of another shape or order (layer Linear "
                         "at 'a') is read afterwards (by node 'b')"),
    "torch.split, p.add_(q)": (_split_piece_base_read, "tensor method .add_() (node 'add_') "
                               "modifies in place a tensor whose view of another shape or order"),
    "ReLU(inplace=True) on a slice": (_module_in_place_on_a_slice, "layer ReLU at 'act' "
                                      "modifies in place a tensor whose view of another shape"),
    "slice, then the tensor": (_base_changed_slice_read, "tensor method .relu_() (node "
                               "'relu_') modifies in place a tensor whose view of another shape "
                               "or order (operation getitem (node 'getitem')) is read "
                               "afterwards (by node 'c')"),
    "a slice of a flatten": (_flatten_slice_base_read, "tensor method .relu_() (node 'relu_') "
                             "modifies in place a tensor whose view of another shape or order"),
    "narrow": (_narrow_relu_base_read, "tensor method .narrow() (node 'narrow'): not supported"),
}


@pytest.mark.parametrize("name", list(VIEW_REFUSED))
def test_in_place_operations_on_views_are_refused_by_name(pl, name):
    fn, message = VIEW_REFUSED[name]
    model = Views(fn, uses="abc" if "s.c(" in inspect.getsource(fn) else "ab").double().eval()
    text = assert_refused(pl, model, (4,), message)
    assert "1 problem\n" in text


def _piece_relu_pieces_read(s, x):
    h = s.a(x)
    p, q = h.chunk(2, 1)
    p.relu_()  # changes h too, but nothing reads h: the pieces are read
    q.mul_(2)
    return s.b(torch.cat([p, q], 1)) + s.c(q)


def _piece_changed_other_piece_read(s, x):
    h = s.a(x)
    p, q = torch.split(h, 2, 1)
    p.mul_(3)
    return s.c(q) + s.c(p)


def _slice_changed_slice_read(s, x):
    p = s.a(x)[:, 1:3]
    s.act(p)
    return s.c(p)


def _changed_then_sliced(s, x):
    h = s.a(x)
    h.relu_()
    return s.c(h[:, 1:3]) + s.b(h)


def _full_view_changed(s, x):
    h = s.a(x)
    h.view(h.size(0), -1).relu_()  # the same entries in the same order
    return s.b(h)


VIEW_EXACT = {"pieces changed, pieces read": _piece_relu_pieces_read,
              "one piece changed, the other read": _piece_changed_other_piece_read,
              "a slice changed and read": _slice_changed_slice_read,
              "sliced after the change": _changed_then_sliced,
              "a view of the same entries": _full_view_changed}


@pytest.mark.parametrize("name", list(VIEW_EXACT))
def test_in_place_operations_on_views_read_exactly_compute_the_module(pl, name):
    fn = VIEW_EXACT[name]
    uses = "a" + "".join(k for k in "bc" if f"s.{k}(" in inspect.getsource(fn))
    assert_computes_the_module(pl, Views(fn, uses).double().eval(), (4,))


# --- 3. ConvTranspose's output_size ------------------------------------------------------------


class Up(nn.Module):
    def __init__(self, size, dims=2):
        super().__init__()
        torch.manual_seed(0)
        conv = nn.Conv2d if dims == 2 else nn.Conv1d
        transpose = nn.ConvTranspose2d if dims == 2 else nn.ConvTranspose1d
        self.down = conv(2, 3, 3, stride=2)
        self.up = transpose(3, 2, 3, stride=2)  # from 4: 9 or 10 (output_padding 0 or 1)
        self.size = size

    def forward(self, x):
        h = self.down(x)
        size = x.size() if self.size == "x.size()" else self.size
        return self.up(h, output_size=size)


@pytest.mark.parametrize("size", [[10, 10], [9, 10], [1, 2, 10, 9], "x.size()"])
def test_conv_transpose_output_size_is_applied(pl, size):
    # from 10 x 10, down to 4 x 4, up to 9 (output_padding 0) or 10 (output_padding 1)
    assert_computes_the_module(pl, Up(size).double().eval(), (2, 10, 10))  # outputs' count too


def test_conv_transpose_output_size_1d_and_positional(pl):
    class Positional(Up):
        def forward(self, x):
            return self.up(self.down(x), [10])

    assert_computes_the_module(pl, Up([9], dims=1).double().eval(), (2, 10))
    assert_computes_the_module(pl, Up("x.size()", dims=1).double().eval(), (2, 10))
    assert_computes_the_module(pl, Positional(None, dims=1).double().eval(), (2, 10))


def test_an_output_size_out_of_range_is_refused_naming_it(pl):
    model = Up([12, 12]).double().eval()
    with pytest.raises(ValueError):  # PyTorch refuses it too
        model(torch.zeros(1, 2, 9, 9, dtype=torch.float64))
    assert_refused(pl, model, (2, 9, 9), "layer ConvTranspose2d at 'up': output_size [12, 12]: "
                   "requested an output size of [12, 12], but valid sizes range from [9, 9] "
                   "to [10, 10]")


# --- 4. weight_norm, spectral_norm, parametrizations -------------------------------------------


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(0, 1)


def _weight_norm():
    model = mlp()
    torch.nn.utils.weight_norm(model[2][0])
    return model


def _spectral_norm():
    model = mlp()
    torch.nn.utils.spectral_norm(model[0])
    return model.eval()


def _parametrized():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 3)).double().eval()
    torch.nn.utils.parametrize.register_parametrization(model[0], "weight", Symmetric())
    return model


@pytest.mark.parametrize("make,messages", [
    (_weight_norm, ["module '2.0' (Linear) has weight_norm on 'weight'",
                    "call torch.nn.utils.remove_weight_norm(module) first"]),
    (_spectral_norm, ["module '0' (Linear) has spectral_norm on 'weight'",
                      "call torch.nn.utils.remove_spectral_norm(module) first"]),
    (_parametrized, ["module '0' (ParametrizedLinear) has a parametrized 'weight' "
                     "(torch.nn.utils.parametrize: Symmetric;",
                     "call torch.nn.utils.parametrize.remove_parametrizations(module, 'weight', "
                     "leave_parametrized=True) first"])],
    ids=["weight_norm", "spectral_norm", "parametrize"])
def test_computed_weights_are_refused_saying_what_to_do(pl, pt, make, messages):
    model = make()
    text = assert_refused(pl, model, (4,), *messages)
    assert "1 problem\n" in text
    for refused in (pl.theta_from_torch, lambda m: pt.load_theta(m, np.zeros(3))):
        with pytest.raises(pl.UnsupportedModelError, match=re.escape(messages[0])):
            refused(model)


def test_computed_weights_removed_as_the_message_says_import(pl):
    model = _weight_norm()
    torch.nn.utils.remove_weight_norm(model[2][0])
    assert_computes_the_module(pl, model, (4,))
    model = _parametrized()
    torch.nn.utils.parametrize.remove_parametrizations(model[0], "weight",
                                                       leave_parametrized=True)
    assert_computes_the_module(pl, model, (4,))


class Doubled(nn.Module):
    def forward(self, X):
        return 2 * X


def _conv_bn():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU()).double().eval()
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    return model


@pytest.mark.parametrize("change,message", [
    (lambda m: m[1].register_forward_hook(double_output),
     "module '1' (BatchNorm2d) has a forward hook (double_output"),
    (lambda m: m[0].register_forward_pre_hook(shift_input),
     "module '0' (Conv2d) has a forward pre-hook (shift_input"),
    (lambda m: torch.nn.utils.parametrize.register_parametrization(m[0], "weight", Doubled()),
     "module '0' (ParametrizedConv2d) has a parametrized 'weight'")],
    ids=["hook on the BatchNorm", "pre-hook on the conv", "parametrized conv"])
def test_fold_batchnorm_refuses_what_the_trace_does_not_see(pt, change, message):
    """Folding a BatchNorm into a conv whose weight is computed, or past a hook, would change
    the function: refused by name."""
    model = _conv_bn()
    change(model)
    with pytest.raises(pt.UnsupportedModelError, match="cannot fold the BatchNorms of "
                       rf"Sequential exactly: .*{re.escape(message)}"):
        pt.fold_batchnorm(model)
    folded = pt.fold_batchnorm(_conv_bn())  # without: folded, the same function
    X = torch.randn(4, 2, 5, 5, dtype=torch.float64)
    assert isinstance(folded[1], nn.Identity)
    torch.testing.assert_close(folded(X), _conv_bn()(X), rtol=1e-12, atol=1e-12)


def test_a_plain_tensor_weight_is_refused_naming_it(pl):
    model = mlp()
    w = model[3].weight.detach().clone()
    del model[3].weight
    model[3].weight = w  # a plain tensor attribute, not a parameter
    assert_refused(pl, model, (4,), "layer Linear at '3': its weight is a plain tensor, not a "
                                    "parameter")


# --- 5. load_theta: finite in the parameters' dtype, numbers only -----------------------------


@pytest.mark.parametrize("dtype,value,words", [
    (torch.float32, 1e300, "dtype float32 (finite range +-3.40282e+38)"),
    (torch.float16, 1e5, "dtype float16 (finite range +-65504)"),
    (torch.bfloat16, 1e39, "dtype bfloat16")])
def test_load_theta_refuses_what_the_parameters_dtype_cannot_hold(pl, pt, dtype, value, words):
    model = mlp().to(dtype)
    before = [p.detach().clone() for p in model.parameters()]
    theta = pl.theta_from_torch(model)
    k = 30  # 0.weight has 24 entries, 0.bias 6: entry 0 of 2.0.weight
    theta[k] = value
    with pytest.raises(ValueError) as info:
        pt.load_theta(model, theta)
    assert f"theta[{k}] = {value:.6g} is not finite as entry 0 of parameter '2.0.weight', of " \
           f"{words}" in str(info.value)
    assert "nothing was written" in str(info.value)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))
    theta[k] = 1.5  # in range: written
    pt.load_theta(model, theta)
    assert float(model[2][0].weight[0, 0]) == 1.5


def test_load_theta_refuses_a_batch_norm_slot_that_overflows(pl, pt):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2)).eval()
    with torch.no_grad():
        model[1].running_var.fill_(1e30)  # gamma = a std: a = 1e30 gives gamma 1e45
    theta = pl.theta_from_torch(model)
    theta[16] = 1e30  # a of channel 0 (Linear: 12 + 4 entries before)
    with pytest.raises(ValueError, match=r"theta\[16\] = 1e\+30 \(gamma or beta 1e\+45 by its "
                       r"batch norm's running statistics\) is not finite as entry 0 of "
                       r"parameter '1.weight', of dtype float32"):
        pt.load_theta(model, theta)


@pytest.mark.parametrize("last,words", [
    ("1.0", r"theta\[0\] = '1.0' \(dtype <U3\)"), ("x", r"theta\[82\] = 'x' \(dtype <U32\)"),
    (object(), r"theta\[82\] = <object object at"), (None, r"theta\[82\] = None")])
def test_load_theta_refuses_what_is_not_numbers(pt, last, words):
    model = mlp()
    before = [p.detach().clone() for p in model.parameters()]
    d = sum(p.numel() for p in model.parameters())  # 83
    theta = ["1.0"] * d if last == "1.0" else [1.0] * (d - 1) + [last]
    with pytest.raises(TypeError, match=rf"theta must be real numbers, got {words}"):
        pt.load_theta(model, theta)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))


# --- 6. torch.flatten after a channel shuffle: the method's path ------------------------------


class Shuffle(nn.Module):
    def __init__(self, spelling):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(4, 4, 1)
        self.fc = nn.Linear(4 * 3 * 3, 2)
        self.spelling = spelling

    def forward(self, x):
        y = self.conv(x)
        n = y.size(0)
        y = y.view(n, 2, 2, 3, 3).transpose(1, 2)  # the channel shuffle, before its view back
        flat = {"torch.flatten(y, 1)": lambda: torch.flatten(y, 1),
                "torch.flatten(y, start_dim=1)": lambda: torch.flatten(y, start_dim=1),
                "torch.flatten(input=y, start_dim=1)": lambda: torch.flatten(input=y,
                                                                             start_dim=1),
                "y.flatten(1)": lambda: y.flatten(1),
                "y.reshape(n, -1)": lambda: y.reshape(n, -1)}[self.spelling]()
        return self.fc(flat)


@pytest.mark.parametrize("spelling", ["torch.flatten(y, 1)", "torch.flatten(y, start_dim=1)",
                                      "torch.flatten(input=y, start_dim=1)", "y.flatten(1)",
                                      "y.reshape(n, -1)"])
def test_flatten_of_a_channel_shuffle_in_every_spelling(pl, spelling):
    assert_computes_the_module(pl, Shuffle(spelling).double().eval(), (4, 3, 3))


# --- 7. PathSGD with non-finite gradients ------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_path_sgd_refuses_a_non_finite_gradient_and_changes_nothing(pt, bad, momentum):
    model = mlp()
    opt = pt.PathSGD(model, lr=0.1, momentum=momentum)
    X = torch.randn(5, 4, dtype=torch.float64)
    model(X).sum().backward()
    opt.step()  # a good step: the momentum buffers exist
    opt.zero_grad()
    model(X).sum().backward()
    model[2][0].bias.grad[3] = bad
    before = copy.deepcopy(model.state_dict())
    buffers = {k: v["momentum_buffer"].clone() for k, v in enumerate(opt.state.values())}
    with pytest.raises(ValueError, match=rf"PathSGD: the gradient of parameter '2.0.bias' is "
                       rf"not finite \(entry 3: {bad}\): no parameter was changed"):
        opt.step()
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(torch.equal(buffers[k], v["momentum_buffer"])
               for k, v in enumerate(opt.state.values())) if momentum else True


# --- 8. input shapes are positive integers -----------------------------------------------------


@pytest.mark.parametrize("shape,entry", [((4.5,), "entry 0 (4.5)"), ((True,), "entry 0 (True)"),
                                         ((4, 0), "entry 1 (0)"), ((-4,), "entry 0 (-4)"),
                                         ((float("nan"),), "entry 0 (nan)"),
                                         ((4.0,), "entry 0 (4.0)"), (("4",), "entry 0 ('4')"),
                                         (4.5, "got 4.5"), (True, "got True"), ((), "no entry"),
                                         ("4", "got '4'")])
def test_an_input_shape_that_is_not_positive_integers_is_refused(pl, pt, shape, entry):
    for function in (lambda: pl.from_torch(mlp(), shape),
                     lambda: pt.PathSGD(mlp(), lr=0.1, input_shape=shape)):
        with pytest.raises(ValueError, match="input_shape must be one sample's shape, positive "
                           "integers") as info:
            function()
        assert entry in str(info.value)
    support = pl.supports(mlp(), shape)
    assert not support.ok and entry in support.problems[0]


@pytest.mark.parametrize("shape", [(4,), [4], 4, np.int64(4), (np.int32(4),), np.array([4]),
                                   torch.Size([4])])
def test_integer_input_shapes_are_accepted(pl, shape):
    net = pl.from_torch(mlp(), shape)
    assert net.input_shape == (4,) and all(type(s) is int for s in net.input_shape)
