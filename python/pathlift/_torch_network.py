"""A PyTorch module's network (private; re-exported by pathlift.torch): :class:`TorchNetwork`,
a :class:`pathlift.LayerNetwork` tied to its module whose ``weights`` are the module's current
theta, and the functions that make one or read theta: from_torch, layer_graph_from_torch,
theta_from_torch, supports, load_theta."""

from __future__ import annotations

from typing import Any, List, NamedTuple, Tuple, Union

import numpy as np
from torch import nn

from ._pathlift import LayerGraph, LayerNetwork, Network, UnsupportedModelError
from ._torch_fx import import_model, raise_problems
from ._torch_trace import InputShape, Traced, check_types, refuse_training_mode
from ._torch_params import TorchParameters


class TorchNetwork(LayerNetwork):
    """The network of a PyTorch module (:func:`from_torch`): a :class:`pathlift.LayerNetwork`
    whose theta follows the module. ``net.weights`` is the module's **current** theta (a new
    read-only float64 array at each read: the parameters, each eval-mode BatchNorm's gamma and
    beta slots holding a and b from its current gamma, beta and running statistics), so every
    pathlift function called on the network without theta -- ``pathlift.path_norm(net)``,
    ``pathlift.kernel_diagonal(net)``, ``pathlift.jacobian(net)``, ... -- answers for the
    weights the module has now, after any number of optimizer steps.

    The structure (layers, shapes, which parameter sits where) is the module's at from_torch:
    when the module's structure changes (a submodule or parameter tensor replaced, added or
    removed, a parameter of another shape), reading theta raises NetworkError asking to call
    from_torch again; attributes changed in place (a stride, forward itself) are not seen. The
    network is the module's eval-mode function whatever mode the module is in (Dropout the
    identity, BatchNorm the affine map of its running statistics): made in eval mode, it serves
    a training loop after ``model.train()``; path_cond and enorm, which rescale the module in
    place, refuse it while a BatchNorm of the module is in training mode.

    ``net.module`` is the module; ``net.input_shape`` one sample's shape. The layer graph
    (``net.layer_graph``) carries the current theta; the unrolled DAG (``net.unrolled()``) is
    made once and carries no weights (theta is the module's: pass ``net.weights``). Pickles as
    its module, input shape and max_memory (from_torch again when loaded).
    """

    def __init__(self, module: nn.Module, graph: LayerGraph, params: TorchParameters,
                 input_shape: Tuple[int, ...], *, max_memory: int = 0):
        super().__init__(graph, max_memory=max_memory)
        self._module = module
        self._params = params
        self._input_shape = tuple(input_shape)

    @property
    def module(self) -> nn.Module:
        """The PyTorch module this network follows."""
        return self._module

    @property
    def input_shape(self) -> Tuple[int, ...]:
        """One sample's shape, without the batch dimension."""
        return self._input_shape

    @property
    def theta_layout(self) -> TorchParameters:
        """Where theta's entries are in the module's parameters (after checking that the module
        kept its structure): what reads and writes theta."""
        self._params.check(self._module)
        return self._params

    @property
    def weights(self) -> np.ndarray:
        """The module's current theta (float64, read-only, d entries)."""
        theta = self.theta_layout.theta()
        theta.flags.writeable = False
        return theta

    @property
    def has_weights(self) -> bool:
        return True

    @property
    def layer_graph(self) -> LayerGraph:
        """The layer graph, with the module's current theta as its weights."""
        graph = super().layer_graph
        return LayerGraph(graph.input_shape, graph.layers, graph.outputs, graph.num_params,
                          self.weights)

    def __repr__(self) -> str:
        text = super().__repr__().replace("<pathlift.LayerNetwork:", "<pathlift.TorchNetwork of "
                                          f"{type(self._module).__name__}:", 1)
        return text[:-1] + ", weights: the module's parameters>"

    def __reduce__(self) -> Any:
        return (_restore, (self._module, self._input_shape, self.max_memory))


def _restore(module: nn.Module, input_shape: Tuple[int, ...], max_memory: int) -> TorchNetwork:
    return from_torch(module, input_shape, max_memory=max_memory)


class Support(NamedTuple):
    """What :func:`supports` answers: ``ok`` and the list of ``problems`` (each a sentence
    naming the layer or operation). Unpacks as ``ok, problems = pathlift.supports(m)``;
    ``bool(result)`` is ``ok``."""

    ok: bool
    problems: List[str]

    def __bool__(self) -> bool:
        return self.ok


def layer_graph_from_torch(model: nn.Module, input_shape: InputShape = None) -> LayerGraph:
    """The :class:`pathlift.LayerGraph` of a model (one Layer per operation, weights =
    :func:`theta_from_torch`), made by a :class:`pathlift.LayerGraphBuilder`: what
    :func:`from_torch` holds. Arguments and errors as from_torch."""
    imported = import_model(model, input_shape, with_weights=True,
                            what="pathlift.layer_graph_from_torch")
    raise_problems(model, imported.problems, imported.unsupported)
    assert imported.graph is not None
    return imported.graph


def from_torch(model: nn.Module, input_shape: InputShape = None, *,
               max_memory: int = 0) -> TorchNetwork:
    """The DAG ReLU network of a PyTorch model (eval mode) as a :class:`TorchNetwork`, a
    :class:`pathlift.LayerNetwork` tied to the module: ``net.weights`` is the module's current
    theta (:func:`theta_from_torch`: ``model.parameters()`` flattened, BatchNorm's gamma/beta
    standing for a/b), read at each use, so that ``pathlift.path_norm(net)`` and every other
    function called without theta answer for the module's weights now. ``net.d`` is the number
    of parameter entries; ``net.module`` the module.

    model: any module that ``torch.fx`` traces into the supported operations (see the
    ``pathlift.torch`` module docstring): MLPs, CNNs (LeNet, VGG, torchvision's ResNets,
    DenseNets, Inception), skip connections, weight sharing, in-place operations.
    input_shape: one sample's shape without the batch dimension, positive integers, e.g.
    ``(3, 32, 32)`` (ValueError naming an entry that is not); by default ``(in_features,)`` of
    the first Linear the input reaches (else ValueError, one line saying what to pass: ``pass
    input_shape=(1, H, W)`` when the input reaches a Conv2d of 1 channel). max_memory: bytes the
    unrolled network may take when it is unrolled (0: half of physical RAM).

    The model is described per layer (:func:`layer_graph_from_torch`); nothing is unrolled
    here. The path-free functions run on the layer graph; every other function unrolls it in
    C++ on first use and keeps the DAG (``net.unrolled()``). Raises
    :class:`pathlift.UnsupportedModelError` (a ValueError) listing every unsupported operation
    (Sigmoid, Tanh, a product, a forward hook, weight_norm or a parametrization, an in-place
    operation on a view read afterwards, ...) or, alone, the BatchNorms and Dropouts in training
    mode (``_torch_trace.refuse_training_mode``: call model.eval() first), NetworkError for
    layers whose shapes do not fit, ValueError for an input_shape that is not positive
    integers, TypeError for something that is not a module.
    """
    imported = import_model(model, input_shape)
    raise_problems(model, imported.problems, imported.unsupported)
    assert imported.graph is not None and imported.params is not None
    return TorchNetwork(model, imported.graph, imported.params, imported.input_shape,
                        max_memory=max_memory)


def parameters_of(model: nn.Module, what: str) -> TorchParameters:
    """The layout of theta for a model, after refusing what from_torch refuses whatever the
    input shape (the model traced once, its BatchNorms found); ``what`` starts the message of
    a refusal for training mode."""
    refuse_training_mode(model, what)
    problems, batch_norms = check_types(Traced(model))
    raise_problems(model, problems, unsupported=True)
    return TorchParameters(model, batch_norms)


def theta_from_torch(model: nn.Module, input_shape: InputShape = None) -> np.ndarray:
    """theta for ``from_torch(model)``: a new float64 numpy array,
    ``torch.cat([p.flatten() for p in model.parameters()])`` except that each BatchNorm's
    weight/bias positions hold a = weight / sqrt(running_var + eps) and
    b = bias - a running_mean. Equal to ``from_torch(model).weights`` (at the same moment).

    The model is traced to find its BatchNorms and to refuse what from_torch refuses whatever
    the input shape: :class:`pathlift.UnsupportedModelError` listing the unsupported
    operations, or naming the BatchNorms and Dropouts in training mode. input_shape is accepted
    for symmetry with from_torch and does not change theta. A from_torch network is accepted
    too (no trace).
    """
    del input_shape
    if isinstance(model, TorchNetwork):
        return model.theta_layout.theta()
    return parameters_of(model, "pathlift.theta_from_torch").theta()


def load_theta(model: Union[nn.Module, TorchNetwork], theta: Any) -> None:
    """Writes theta (d numbers: a numpy array, a sequence or a tensor, e.g. from
    :func:`theta_from_torch` or a pathlift computation) into the model's parameters, in place
    under ``torch.no_grad()``, each parameter keeping its dtype and device: the inverse of
    theta_from_torch. A BatchNorm's a and b become gamma = a sqrt(running_var + eps) and
    beta = b + gamma running_mean / sqrt(running_var + eps) for its current running
    statistics (which are not changed). ``model``: a module (traced once for its BatchNorms)
    or a from_torch network (its module). ValueError for a theta that is not d finite numbers
    or whose value for a parameter is not finite in that parameter's dtype (1e300 for float32,
    1e5 for float16: the entry, the parameter and the range named; nothing written), TypeError
    for entries that are not real numbers; what theta_from_torch raises for an unsupported
    model."""
    params = model.theta_layout if isinstance(model, TorchNetwork) else \
        parameters_of(model, "pathlift.load_theta")
    params.load(theta)


def supports(model: Any, input_shape: InputShape = None) -> Support:
    """Whether :func:`from_torch` can import the model, without raising: a
    :class:`Support` ``(ok, problems)``, problems listing every unsupported operation and
    every broken layer rule (the lines of from_torch's error). The layer graph is built and
    its shapes checked, but nothing is unrolled."""
    try:
        imported = import_model(model, input_shape)
    except (ValueError, TypeError) as e:
        return Support(False, [f"{type(e).__name__}: {e}" if not isinstance(
            e, UnsupportedModelError) else str(e)])
    return Support(not imported.problems, list(imported.problems))


# What a training-loop face (path_norm, kernel_diagonal, PathSGD, ...) says to a module in
# training mode: its network made once in eval mode keeps describing that function.
IN_A_LOOP = ("call model.eval() first; in a training loop, make the network once in eval "
             "mode (net = pathlift.from_torch(model.eval()), then model.train()) and pass net, "
             "which follows the parameters and running statistics")


def network_of(model: Any, input_shape: InputShape = None, *,
               what: str = "this function") -> TorchNetwork:
    """A module's network for the training-loop functions: a from_torch network as it is (no
    trace, whatever its module's mode), a module traced now as from_torch traces it (refused in
    training mode by :func:`refuse_training_mode`, the message starting with ``what`` and
    saying how to make the network for a training loop); TypeError otherwise, saying what to
    use for a pathlift network."""
    if isinstance(model, TorchNetwork):
        return model
    if isinstance(model, nn.Module):
        refuse_training_mode(model, what, IN_A_LOOP)
        return from_torch(model, input_shape)
    if isinstance(model, (LayerNetwork, Network)):
        raise TypeError(
            f"{what} takes a torch.nn.Module or its pathlift.from_torch network, got a "
            f"pathlift {type(model).__name__}: for a pathlift network and a theta of one's own, "
            "use pathlift.path_norm(net, theta, s) (numbers) or "
            "pathlift.torch.PathNormFunction.apply(net, theta_tensor, s) (a differentiable "
            "tensor)")
    raise TypeError(f"{what} takes a torch.nn.Module or its pathlift.from_torch network, got "
                    f"{type(model).__name__}")

