"""The PyTorch bridge: PyTorch models as pathlift networks and back.

``from_torch(model, input_shape)`` traces the model with ``torch.fx`` (nested modules
included), describes it **per layer** as a :class:`pathlift.LayerGraph` (built by a
:class:`pathlift.LayerGraphBuilder`) and returns a :class:`TorchNetwork`: a
:class:`pathlift.LayerNetwork` tied to the module, whose ``weights`` are the module's current
theta, so that every pathlift function called on it without theta answers for the weights the
module has now. The path-free functions run on the graph; the others unroll it in C++ into the
DAG on first use: one node per tensor entry that needs one, one edge per weight use. Nothing is
done per tensor entry in Python.

Parameters. theta is ``torch.cat([p.flatten() for p in model.parameters()])`` in float64
(``theta_from_torch(model)``), except that each eval-mode BatchNorm's ``weight`` and ``bias``
positions hold ``a = weight / sqrt(running_var + eps)`` and ``b = bias - a * running_mean``,
the per-channel affine map ``y = a x + b`` it computes. Column k of ``pathlift.jacobian(net,
theta)`` is the derivative with respect to entry k of that vector; ``net.d`` is the number of
parameter entries. Each layer names where its parameter blocks start in theta (the position
of the tensor in ``model.parameters()``): a module called twice is two layers with the same
offsets (weight sharing: several edges carry one parameter). Operations without parameters
are **fixed edges** inside the network, not entries of theta: an identity skip
(``relu(conv(x) + x)``: weight 1, -1 for a subtraction), average pooling (weight 1/k),
max pooling (weight 1 into a *max node*). A parameter used by no operation is refused.
``load_theta(model, theta)`` writes a theta back into the parameters (the inverse).

The mapping, module by module (functional forms in parentheses):

* ``nn.Linear`` (``F.linear`` of parameters): a ``linear`` layer, on a flat ``(F,)`` input;
* ``nn.Conv1d`` / ``nn.Conv2d`` (any stride, dilation, groups; padding ``"same"`` when
  symmetric; ``padding_mode`` zeros, reflect, replicate or circular): a ``conv`` layer (the
  non-zero modes as ``gather`` layers before it); ``nn.ConvTranspose1d/2d`` (the forward's
  ``output_size`` too, choosing output_padding as PyTorch does): ``conv_transpose``;
* ``nn.MaxPool1d/2d`` (``F.max_pool2d``), ``nn.AvgPool1d/2d`` (``F.avg_pool2d``,
  ``count_include_pad`` either way), ``nn.AdaptiveAvgPool1d/2d`` (``F.adaptive_avg_pool2d``):
  pooling layers (``ceil_mode`` either way, no ``divisor_override``); ``x.mean([2, 3])`` and
  ``x.sum([2, 3])`` over every spatial dim: a global pool;
* ``nn.BatchNorm1d/2d`` in eval mode, with affine parameters and running statistics: a
  ``batch_norm`` layer ``y = a x + b`` (a, b as above);
* ``nn.ReLU`` (``F.relu``, ``torch.relu``, ``.relu()``), ``nn.LeakyReLU`` (``F.leaky_relu``):
  an ``activation`` layer;
* ``+`` / ``-`` of tensors (``torch.add``, ``+=``, ``.add()``): ``add`` / ``sub`` layers, the
  sum kept pending until a layer needs node values (no node of its own);
* ``torch.cat`` along a non-batch dimension: ``concat``; ``nn.Flatten`` / ``torch.flatten(x,
  1)`` / ``x.flatten(1)`` / ``x.view(x.size(0), -1)`` / ``x.reshape(batch, -1)``: ``flatten``
  (no node, no edge); ``nn.Identity`` and ``nn.Dropout`` in eval mode: nothing;
* ``chunk``, ``split``, slices of non-batch dims, channel shuffles (``view`` / ``transpose`` /
  ``permute`` back to a shape a layer holds), nearest ``nn.Upsample`` / ``F.interpolate``,
  ``F.pad`` / pad modules in reflect, replicate or circular mode: ``gather`` layers (copies of
  entries, no node, no edge); ``x * c``, ``x / c`` for a number: ``scale`` (a fixed weight);
  ``torch.clamp(x, min=0)``: a ReLU;
* linear and bilinear ``nn.Upsample`` / ``F.interpolate``: ``interpolate`` (PyTorch's
  weights); GroupSort and MaxMin (``sort`` of grouped channels, ``torch.max`` / ``torch.min``
  of two tensors): ``group_sort``; k-max pooling (``unfold`` then ``topk`` / ``kthvalue``):
  ``k_max_pool``;
* in-place forms (``nn.ReLU(inplace=True)``, ``.relu_()``, ``+=``, ``.add_()``): exactly, the
  change seen by every later reader of the tensor and of its aliases; one on a view (a slice,
  a piece of a chunk, a reshape) is refused by name when the tensor or another view sharing
  the changed entries is read after it.

Node names (from the unroller): input entries ``x[i]`` (``x[c,h,w]`` for a tensor input, in
row-major order: the data columns), ``<layer>[c,h,w]`` for a layer's entries, ``<layer>.bias``
for a bias node, outputs ``y0, y1, ...`` last (the model's outputs flattened and
concatenated). Layer names are module paths (``layer1.0.conv1``; a second call of a module
is ``<path>_2``, the builder's rule for a name taken) and fx node names for functions.

Training mode: the network is the model's eval-mode function, so every face taking a module
(here and in pathlift) refuses one holding a BatchNorm, or a Dropout with p > 0, in training
mode, with one message naming each such module and the remedy (``model.eval()`` first; the
training-mode symmetry of a BatchNorm is not supported): ``_torch_trace.refuse_training_mode``.

Anything else -- Sigmoid, Tanh, a product, a constant added, a forward hook or pre-hook
(torch.fx does not run them; backward hooks are accepted), ``weight_norm``, ``spectral_norm``
or a ``torch.nn.utils.parametrize`` parametrization (a weight computed at each call: the
message says what to remove) -- raises :class:`pathlift.UnsupportedModelError` (a ValueError)
listing **every** unsupported operation at once; :func:`supports` answers the
same question without raising. ``to_torch`` maps a feed-forward network back to an
``nn.Sequential``.

In a training loop: ``path_norm(net, s)``, a differentiable path-norm tensor (a penalty in a
loss; not :func:`pathlift.path_norm`, which gives numbers for any network and theta),
``kernel_diagonal(net)``, the ``PathSGD`` optimizer, ``theta_tensor(net)`` (theta with gradients
to the parameters), ``PathNormFunction`` and ``to_torch_sparse(J)`` (a scipy CSR matrix as a
torch sparse CSR tensor); each takes the module too (traced at each call). Copies computing the
same function: ``rescale(model, lambdas)`` (along a rescaling orbit) and
``fold_batchnorm(model)`` (each BatchNorm folded into the Conv or Linear before it).
Balancing before training: ``path_cond(model)`` and ``enorm(model)`` rescale it in place
(docs/balance.md); ``conservation_laws(model)``: what gradient flow of any loss conserves, one
quantity per unit or channel class (docs/dynamics.md); ``functional_dimension(model, X)``: the
rank of the batch Jacobian on X, certified (docs/functional-dimension.md). Certificates:
``lipschitz_bound(model, model2)`` bounds how far a pruned or quantized copy
moves on any input (the path-metric, docs/path_metric.md); ``generalization_bound(model, loader)``
is the path-norm toolkit's bound on the expected test loss, n and B read from the training set
(docs/generalization.md).

The modules, each importing only those before it: ``_torch_params`` (theta <-> parameters),
``_torch_trace`` (torch.fx, in-place operations), ``_torch_fx`` (the layers),
``_torch_network`` (TorchNetwork, from_torch, ...), ``_torch_autograd``, ``_torch_metric``,
``_torch_bound``,
``_torch_rescale``, ``_torch_conservation``, ``_torch_functional_dimension``,
``_torch_sequential`` (to_torch); this module re-exports them.
"""

from ._pathlift import UnsupportedModelError
from ._torch_autograd import (PathNormFunction, PathSGD, kernel_diagonal, path_norm,
                              theta_tensor, to_torch_sparse)
from ._torch_trace import InputShape
from ._torch_network import (Support, TorchNetwork, from_torch, layer_graph_from_torch,
                             load_theta, supports, theta_from_torch)
from ._torch_kernel import TorchKernelOperator, kernel_operator
from ._torch_bound import TrainingSetBound, generalization_bound
from ._torch_metric import lipschitz_bound
from ._torch_rescale import enorm, fold_batchnorm, path_cond, rescale
from ._torch_conservation import conservation_laws
from ._torch_functional_dimension import functional_dimension
from ._torch_sequential import to_torch

__all__ = ["from_torch", "theta_from_torch", "layer_graph_from_torch", "supports", "Support",
           "to_torch", "UnsupportedModelError", "path_norm", "PathNormFunction",
           "kernel_diagonal", "PathSGD", "theta_tensor", "to_torch_sparse", "rescale",
           "load_theta", "fold_batchnorm", "TorchNetwork", "InputShape", "lipschitz_bound",
           "path_cond", "enorm", "kernel_operator", "TorchKernelOperator",
           "generalization_bound", "TrainingSetBound", "conservation_laws",
           "functional_dimension"]
