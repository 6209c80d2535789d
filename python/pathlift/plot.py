"""Plots of a network's paths, drawn with matplotlib (docs/plots.md).

- :func:`length_histogram`: how many paths have each length, by dynamic programming (any size;
  a :class:`~pathlift.LayerNetwork` is not unrolled).
- :func:`kernel_spectrum`: the largest eigenvalues of the path kernel ``K = dPhi^T dPhi``
  (Lanczos on kernel products), and for small ``d`` the whole spectrum with its drop at
  ``rank K = d - h`` (Theorem 1, Corollary 2).
- :func:`network_paths`: a small network drawn in layers, every path a line through its nodes
  coloured by ``|Phi_p|`` (log scale), the strongest on top.

Each function takes an optional ``ax`` (a new figure's Axes when ``None``), returns the Axes and
never calls ``plt.show()``: it works headless (the Agg backend). matplotlib is imported with this
module, not by ``import pathlift``. Where ``theta`` is ``None`` the network's stored weights are
used, else ``pathlift.normal_weights(d, 0)``, as the command-line tool does.

Example::

    import matplotlib.pyplot as plt, pathlift, pathlift.plot
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    net = pathlift.builtin_network("ff:3,5,4,2")
    pathlift.plot.length_histogram(net, ax=axes[0])
    pathlift.plot.kernel_spectrum(net, ax=axes[1])
    pathlift.plot.network_paths(net, ax=axes[2])
    fig.savefig("paths.png")
"""

import math
from typing import Any, List, Optional, Sequence, Tuple

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.ticker import MaxNLocator

from . import _pathlift

#: network_paths draws at most this many paths unless told otherwise: beyond, the lines cover
#: each other and the picture says nothing.
MAX_DRAWN_PATHS = 2000

#: kernel_spectrum(full=None) computes the whole spectrum (the dense d x d kernel and its
#: eigenvalues, O(d^3)) of a Network with at most this many parameters.
FULL_SPECTRUM_MAX_D = 1000

# Beyond this log10 a count is no longer a double: the histogram plots log10 instead.
_LOG10_DOUBLE_LIMIT = 300.0


def _axes(ax: Optional[Axes]) -> Axes:
    if ax is None:
        _, ax = plt.subplots()
    return ax


def _theta(net: Any, theta: Any) -> np.ndarray:
    if theta is not None:
        return np.asarray(theta, dtype=np.float64)
    if net.has_weights:
        return np.asarray(net.weights, dtype=np.float64)
    return _pathlift.normal_weights(net.d, 0)


def _log10(count: Any) -> float:
    """log10 of a count: an int (exact) or a pathlift.Count (beyond 64 bits); -inf for 0."""
    if isinstance(count, _pathlift.Count):
        return count.log10
    return math.log10(count) if count > 0 else -math.inf


def _format_count(count: Any, tex: bool = False) -> str:
    if isinstance(count, int) and count < 10**15:
        return f"{count:,}"
    exponent = f"{_log10(count):.2f}"
    return f"$10^{{{exponent}}}$" if tex else f"10^{exponent}"


def length_histogram(net: Any, ax: Optional[Axes] = None) -> Axes:
    """Bars: the number of paths of each length (edges on the path), from
    ``pathlift.count_paths(net).length_histogram`` (dynamic programming, no path enumerated;
    a LayerNetwork stays a layer graph). The y axis is logarithmic; when a count is beyond a
    double (10^300 and more) the bars are the counts' log10 on a linear axis. Lengths with no
    path have no bar.
    """
    ax = _axes(ax)
    counts = _pathlift.count_paths(net)
    per_length = counts.length_histogram[1:]  # entry 0 (length 0) is always 0
    lengths = np.arange(1, len(per_length) + 1)
    log10s = [_log10(c) for c in per_length]
    if max(log10s, default=-math.inf) < _LOG10_DOUBLE_LIMIT:
        ax.bar(lengths, [float(c) for c in per_length], width=0.8)
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.5)
        ax.set_ylabel("paths")
    else:
        ax.bar(lengths, [max(x, 0.0) for x in log10s], width=0.8)
        ax.set_ylabel("log10(paths)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("path length (edges)")
    ax.set_title(f"P = {_format_count(counts.paths, tex=True)} paths by length")
    return ax


def kernel_spectrum(net: Any, theta: Any = None, k: int = 10, ax: Optional[Axes] = None, *,
                    full: Optional[bool] = None) -> Axes:
    """The eigenvalues of the path kernel ``K = dPhi^T dPhi`` (d x d), largest first, on a log
    scale: the ``k`` largest from ``pathlift.kernel_top_eigenvalues`` (Lanczos on kernel
    products, no dense matrix; its status is in the legend when not converged), and with
    ``full`` all ``d`` of them from the dense ``pathlift.kernel`` (``numpy.linalg.eigvalsh``;
    their absolute values, so that the ones zero to rounding show below the dashed line at
    ``d eps lambda_max``). ``full=None``: full for a Network with ``d <= FULL_SPECTRUM_MAX_D``
    (a LayerNetwork would be unrolled: ask for it). With one parameter per edge and no zero
    weight, ``rank K = d - h`` (Theorem 1, Corollary 2): a dotted line marks it.
    """
    ax = _axes(ax)
    theta = _theta(net, theta)
    d = net.d
    top = _pathlift.kernel_top_eigenvalues(net, theta, min(k, d))
    if full is None:
        full = isinstance(net, _pathlift.Network) and d <= FULL_SPECTRUM_MAX_D
    if full:
        eig = np.linalg.eigvalsh(_pathlift.kernel(net, theta))[::-1]
        ax.plot(np.arange(1, d + 1), np.abs(eig), ".", color="0.6", markersize=3,
                label=f"all {d} eigenvalues, $|\\lambda_i|$", zorder=1)
        ax.axhline(d * np.finfo(np.float64).eps * max(eig[0], 0.0), color="0.4", ls="--",
                   lw=0.8, label=r"rounding: $d\,\varepsilon\,\lambda_1$")
        if net.one_parameter_per_edge and np.all(theta != 0):
            ax.axvline(d - net.h, color="C3", ls=":", lw=1.2,
                       label=f"d - h = {d - net.h} = rank K (Theorem 1)")
    label = f"top {len(top.values)} (Lanczos)" if not top.dense else f"top {len(top.values)}"
    if top.status != "converged":
        label += f", {top.status}"
    ax.plot(np.arange(1, len(top.values) + 1), top.values, "o", color="C0", markersize=5,
            label=label, zorder=2)
    ax.set_yscale("log")
    ax.set_xlabel("index i (largest first)")
    ax.set_ylabel(r"eigenvalue $\lambda_i$ of $K = d\Phi^T d\Phi$")
    ax.set_title(f"path kernel spectrum, d = {d}")
    ax.legend(fontsize="small")
    return ax


def _columns(net: Any) -> np.ndarray:
    """x of each node: its longest distance from an input; an input (a bias in particular) sits
    one column before the first node it feeds, so that no line crosses empty columns for it."""
    n = net.num_nodes
    sources = np.asarray(net.sources)
    targets = np.asarray(net.targets)
    out_edges: List[List[int]] = [[] for _ in range(n)]
    for e, s in enumerate(sources):
        out_edges[s].append(e)
    depth = np.zeros(n, dtype=np.int64)
    for v in net.topological_order:
        for e in out_edges[v]:
            depth[targets[e]] = max(depth[targets[e]], depth[v] + 1)
    has_in = np.zeros(n, dtype=bool)
    has_in[targets] = True
    for v in range(n):
        if not has_in[v] and out_edges[v]:
            depth[v] = min(depth[targets[e]] for e in out_edges[v]) - 1
    return depth


def _layout(net: Any) -> np.ndarray:
    """(num_nodes, 2) positions: columns from _columns, nodes of a column spread vertically in
    node order with the bias nodes at the bottom, each column centred on y = 0."""
    x = _columns(net)
    is_bias = np.zeros(net.num_nodes, dtype=bool)
    is_bias[np.asarray(net.bias, dtype=np.int64)] = True
    pos = np.zeros((net.num_nodes, 2))
    for column in np.unique(x):
        members = sorted(np.flatnonzero(x == column), key=lambda v: (is_bias[v], v))
        for i, v in enumerate(members):
            pos[v] = (column, (len(members) - 1) / 2.0 - i)
    return pos


def _node_sequences(paths: Any, targets: np.ndarray) -> List[np.ndarray]:
    offsets = np.asarray(paths.offsets)
    edges = np.asarray(paths.edges)
    start = np.asarray(paths.start)
    return [np.concatenate(([start[p]], targets[edges[offsets[p]:offsets[p + 1]]]))
            for p in range(len(paths))]


_ROLE_STYLE: Sequence[Tuple[str, str, str]] = (  # (label, marker, colour)
    ("input", "o", "#4c72b0"), ("bias", "s", "#dd8452"), ("hidden", "o", "#8c8c8c"),
    ("output", "D", "#55a868"))


def network_paths(net: Any, theta: Any = None, ax: Optional[Axes] = None, *,
                  max_paths: int = MAX_DRAWN_PATHS, labels: Optional[bool] = None,
                  cmap: str = "viridis", colorbar: bool = True) -> Axes:
    """A small network drawn in layers (x: longest distance from an input; biases one column
    before what they feed, as squares), every path ``p`` (``pathlift.enumerate_paths``) a line
    through its nodes coloured by ``|Phi_p|`` (``pathlift.path_lifting``) on a log colour scale
    (``cmap``, with a colour bar), drawn weakest first so that the strongest are on top. A path
    with ``Phi_p = 0`` (through a zero weight) is light grey, under the others. Paths sharing
    edges overlap there: an edge shows the strongest path through it.

    ``labels``: node names beside the nodes (default: when there are at most 40 nodes).
    Raises ValueError when the network has more than ``max_paths`` paths (counted first, by
    dynamic programming): so many lines say nothing.
    """
    total = _pathlift.count_paths_total(net)
    if isinstance(total, _pathlift.Count) or total > max_paths:
        raise ValueError(
            f"network_paths draws every path: this network has {_format_count(total)} paths, "
            f"more than max_paths = {max_paths:,} (so many lines cover each other; a smaller "
            "network, or a larger max_paths, will do)")
    ax = _axes(ax)
    theta = _theta(net, theta)
    paths = _pathlift.enumerate_paths(net)
    strength = np.abs(_pathlift.path_lifting(paths, theta))
    pos = _layout(net)
    nodes = _node_sequences(paths, np.asarray(net.targets))
    order = np.argsort(strength, kind="stable")

    positive = strength[strength > 0]
    low, high = (positive.min(), positive.max()) if positive.size else (1.0, 1.0)
    if low == high:  # one value: a decade around it so that the colour bar has a range
        low, high = low / math.sqrt(10.0), high * math.sqrt(10.0)
    colours = matplotlib.colormaps[cmap].with_extremes(bad="0.85")
    lines = LineCollection([pos[nodes[p]] for p in order], array=strength[order], cmap=colours,
                           norm=matplotlib.colors.LogNorm(vmin=low, vmax=high), linewidths=2.0,
                           capstyle="round", joinstyle="round", zorder=1)
    ax.add_collection(lines)
    if colorbar:
        ax.figure.colorbar(lines, ax=ax, label=r"$|\Phi_p|$")

    roles = np.asarray(net.roles)
    is_bias = np.zeros(net.num_nodes, dtype=bool)
    is_bias[np.asarray(net.bias, dtype=np.int64)] = True
    for label, marker, colour in _ROLE_STYLE:
        members = is_bias if label == "bias" else (roles == label) & ~is_bias
        if members.any():
            ax.scatter(pos[members, 0], pos[members, 1], s=90, marker=marker, c=colour,
                       edgecolors="white", linewidths=1.0, zorder=3, label=label)
    if labels is None:
        labels = net.num_nodes <= 40
    if labels:
        for v, name in enumerate(net.nodes):
            ax.annotate(name, xy=tuple(pos[v]), xytext=(0, 9), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, zorder=4)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, frameon=False,
              fontsize="small")
    ax.set_xlim(pos[:, 0].min() - 0.4, pos[:, 0].max() + 0.4)
    ax.set_ylim(pos[:, 1].min() - 0.6, pos[:, 1].max() + 0.8)
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(f"{len(paths):,} paths coloured by " + r"$|\Phi_p|$")
    return ax
