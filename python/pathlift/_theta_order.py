"""The permutation between the theta orders of two imports of one architecture (private;
re-exported as pathlift.theta_permutation).

Each importer orders theta its own way: ``from_torch`` by ``model.parameters()``,
``from_onnx`` by the file's initializers (with the exporter's aliases and constant-folded
tensors placed by the ONNX importer's rule, docs/layers.md#onnx). Both describe the same
layers in the same (execution) order, each layer naming where its parameter blocks start in
theta: pairing the layers that have parameters, in order, pairs the blocks. Only what the
bindings expose is used (layer kinds and offsets), not the parameters' names, which the ONNX
importer does not keep.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from ._pathlift import LayerGraph, Network

# (layer name, kind, [(block start, block size) of the weight, then of the bias]) per layer
# that has parameters, in layer order.
_Blocks = List[Tuple[str, str, List[Tuple[int, int]]]]


def _graph(net: Any, which: str) -> LayerGraph:
    if isinstance(net, LayerGraph):
        return net
    graph = getattr(net, "layer_graph", None)
    if isinstance(graph, LayerGraph):
        return graph
    what = "a pathlift.Network (a DAG, without layers)" if isinstance(net, Network) else \
        type(net).__name__
    raise TypeError(f"theta_permutation: {which} must be a LayerNetwork (from_torch, from_onnx, "
                    f"load_model of a layers file) or a LayerGraph, got {what}")


def _blocks(graph: LayerGraph) -> _Blocks:
    """The parameter blocks of a layer graph: theta is cut at every offset a layer names (a
    block ends where the next one starts, the last at num_params)."""
    starts = sorted({o for layer in graph.layers for o in (layer.weight_offset,
                                                         layer.bias_offset) if o >= 0})
    ends = dict(zip(starts, [*starts[1:], int(graph.num_params)]))
    out: _Blocks = []
    for layer in graph.layers:
        offsets = [o for o in (layer.weight_offset, layer.bias_offset) if o >= 0]
        if offsets:
            out.append((layer.name, layer.kind, [(o, ends[o] - o) for o in offsets]))
    return out


def theta_permutation(net: Any, reference: Any) -> np.ndarray:
    """The permutation ``p`` (int64, d entries) between the theta orders of two imports of one
    architecture: ``net.weights[p]`` is theta in ``reference``'s order, and
    ``reference_theta[np.argsort(p)]`` is theta in ``net``'s. For ``net =
    pathlift.from_onnx(path)`` and ``reference = pathlift.from_torch(model)``,
    ``onnx_theta[p]`` is in ``model.parameters()`` order (pathlift.theta_from_torch's, what
    load_theta writes) whatever order the ONNX importer chose (docs/python.md#pytorch).

    Both: LayerNetworks (a from_torch network, a from_onnx one, a layers file) or LayerGraphs.
    Their layers with parameters are paired in order, block by block (a weight, a bias), and a
    block read by several layers (weight sharing) must pair with one block. ValueError naming
    the first pair of layers that differ (kind, blocks or their sizes), or when d or the count
    of such layers differs (an ONNX export in eval mode folds each BatchNorm into the
    convolution before it: another network, no permutation); TypeError for a DAG Network.
    Complexity: O(layers + d).
    """
    g, r = _graph(net, "net"), _graph(reference, "reference")
    d = int(r.num_params)
    if int(g.num_params) != d:
        raise ValueError(f"theta_permutation: net has d = {int(g.num_params)} parameters and "
                         f"reference d = {d}: not the same architecture (an ONNX export in eval "
                         "mode, for one, folds each BatchNorm into the convolution before it: "
                         "export with training=torch.onnx.TrainingMode.PRESERVE)")
    mine, theirs = _blocks(g), _blocks(r)
    if len(mine) != len(theirs):
        raise ValueError(f"theta_permutation: net has {len(mine)} layers with parameters and "
                         f"reference {len(theirs)}: not the same architecture")
    p = np.full(d, -1, dtype=np.int64)
    paired: Dict[int, int] = {}  # reference block start -> net block start
    for (name, kind, blocks), (ref_name, ref_kind, ref_blocks) in zip(mine, theirs):
        sizes, ref_sizes = [n for _, n in blocks], [n for _, n in ref_blocks]
        if kind != ref_kind or sizes != ref_sizes:
            raise ValueError(
                f"theta_permutation: layer '{name}' of net ({kind}, parameter blocks of "
                f"{sizes} entries) pairs with layer '{ref_name}' of reference ({ref_kind}, "
                f"{ref_sizes}): not the same architecture, or layers in another order")
        for (start, n), (ref_start, _) in zip(blocks, ref_blocks):
            if paired.setdefault(ref_start, start) != start:
                raise ValueError(
                    f"theta_permutation: the parameter block of layer '{ref_name}' of "
                    f"reference at theta[{ref_start}] is shared, and its readers pair with "
                    f"blocks at theta[{paired[ref_start]}] and theta[{start}] of net")
            p[ref_start: ref_start + n] = np.arange(start, start + n)
    if (p < 0).any():
        raise ValueError(f"theta_permutation: theta[{int(np.flatnonzero(p < 0)[0])}] of "
                         "reference is in no layer's parameter block")
    unused = np.flatnonzero(np.bincount(p, minlength=d) != 1)
    if unused.size:
        raise ValueError(f"theta_permutation: theta[{int(unused[0])}] of net is not paired with "
                         "exactly one entry of reference: the layers do not cut theta the same "
                         "way")
    return p
