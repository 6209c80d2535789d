"""pathlift.plot draws what it claims, headless: the histogram's bars are path counts (checked
against closed forms and enumerated paths), the spectrum's points are the kernel's eigenvalues
(checked against dPhi^T dPhi), and the network picture has one line per path, through that
path's nodes, coloured by |Phi_p| computed by brute force; examples/plots.py writes the figures.
"""
import math
import os
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

import pathlift  # noqa: E402
import pathlift.plot  # noqa: E402

from conftest import BUILD, ROOT  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def ff_length_counts(r, widths, q):
    """Paths of a feed-forward network with biases by length, in closed form: from a data
    input through every layer (length L + 1: r * w1 * ... * wL * q), and from the bias of layer
    k (k = 1..L+1, layer L+1 the output) through the layers after it (length L + 2 - k)."""
    sizes = list(widths) + [q]
    counts = {len(widths) + 1: r * math.prod(sizes)}
    for k in range(1, len(sizes) + 1):
        counts[len(sizes) + 1 - k] = counts.get(len(sizes) + 1 - k, 0) + math.prod(sizes[k - 1:])
    return [counts.get(length, 0) for length in range(1, len(widths) + 2)]


def bar_heights(ax):
    return [patch.get_height() for patch in ax.patches]


def test_import_pathlift_does_not_import_matplotlib():
    code = "import sys, pathlift; print('matplotlib' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert out.strip() == "False"


def test_length_histogram_bars_are_the_path_counts_by_length():
    net = pathlift.feed_forward(3, [5, 4], 2)
    ax = pathlift.plot.length_histogram(net)
    assert bar_heights(ax) == [float(c) for c in ff_length_counts(3, [5, 4], 2)]
    assert [p.get_x() + p.get_width() / 2 for p in ax.patches] == [1, 2, 3]
    assert ax.get_yscale() == "log"

    dag = pathlift.random_dag(12, 0.4, 3)  # irregular lengths, parallel edges, inner outputs
    lengths = np.diff(pathlift.enumerate_paths(dag).offsets)
    ax = pathlift.plot.length_histogram(dag, ax=plt.subplots()[1])
    assert bar_heights(ax) == np.bincount(lengths)[1:].astype(float).tolist()


def test_length_histogram_beyond_doubles_plots_log10():
    widths = [16] * 255  # 2 * 16^255 ~ 10^307 paths of length 256: no double holds them
    net = pathlift.builtin_network("ff:2," + ",".join(map(str, widths)) + ",1")
    ax = pathlift.plot.length_histogram(net)
    counts = ff_length_counts(2, widths, 1)
    expected = [math.log10(c) for c in counts]
    assert ax.get_yscale() == "linear" and ax.get_ylabel() == "log10(paths)"
    assert np.allclose(bar_heights(ax), expected, rtol=1e-12)
    assert f"$10^{{{math.log10(sum(counts)):.2f}}}$" in ax.get_title()


def test_length_histogram_of_a_layer_network_is_that_of_its_unrolled_dag():
    graph = pathlift.LayerGraph(
        input_shape=[1, 4, 4],
        layers=[pathlift.Layer("input", "x"),
                pathlift.Layer("conv", "conv", [0], out_channels=2, kernel=[2, 2],
                               weight_offset=0, bias_offset=8),
                pathlift.Layer("activation", "relu", [1], activation="relu"),
                pathlift.Layer("flatten", "flat", [2]),
                pathlift.Layer("linear", "fc", [3], out_features=3, weight_offset=10,
                               bias_offset=64)],
        outputs=[4], num_params=67)
    net = pathlift.LayerNetwork(graph)
    heights = bar_heights(pathlift.plot.length_histogram(net))
    assert not net.is_unrolled
    lengths = np.diff(pathlift.enumerate_paths(pathlift.unroll(graph)).offsets)
    assert heights == np.bincount(lengths)[1:].astype(float).tolist()


def marker_lines(ax, marker):
    return [line for line in ax.get_lines() if line.get_marker() == marker]


def test_kernel_spectrum_points_are_the_eigenvalues_of_dphi_t_dphi():
    net = pathlift.feed_forward(3, [6, 5], 2)
    theta = pathlift.normal_weights(net.d, 4)
    ax = pathlift.plot.kernel_spectrum(net, theta, k=6)
    J = pathlift.jacobian(net, theta, dense=True)
    reference = np.linalg.eigvalsh(J.T @ J)[::-1]
    (top,) = marker_lines(ax, "o")
    assert np.array_equal(top.get_xdata(), np.arange(1, 7))
    assert np.array_equal(top.get_ydata(), pathlift.kernel_top_eigenvalues(net, theta, 6).values)
    assert np.allclose(top.get_ydata(), reference[:6], rtol=1e-9)
    (everything,) = marker_lines(ax, ".")  # full spectrum: d is small
    assert np.allclose(everything.get_ydata(), np.abs(reference), rtol=1e-9,
                       atol=1e-12 * reference[0])
    # What the figure claims: d - h eigenvalues above the rounding line, at the dotted line.
    (rounding,) = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    (rank_line,) = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    above = np.sum(everything.get_ydata() > rounding.get_ydata()[0])
    assert above == rank_line.get_xdata()[0] == net.d - net.h
    assert ax.get_yscale() == "log"


def test_kernel_spectrum_full_only_when_asked_or_small():
    net = pathlift.feed_forward(3, [6, 5], 2)
    ax = pathlift.plot.kernel_spectrum(net, k=3, full=False)
    assert len(marker_lines(ax, ".")) == 0 and len(marker_lines(ax, "o")) == 1
    layered = pathlift.LayerNetwork(pathlift.LayerGraph(
        input_shape=[3], layers=[pathlift.Layer("input", "x"),
                                 pathlift.Layer("linear", "fc", [0], out_features=2,
                                                weight_offset=0, bias_offset=6)],
        outputs=[1], num_params=8, weights=np.arange(1.0, 9.0)))
    ax = pathlift.plot.kernel_spectrum(layered, k=2, ax=plt.subplots()[1])
    assert len(marker_lines(ax, ".")) == 0 and not layered.is_unrolled
    stored = pathlift.kernel_top_eigenvalues(layered, np.arange(1.0, 9.0), 2).values
    assert np.array_equal(marker_lines(ax, "o")[0].get_ydata(), stored)


def brute_force_paths(net, theta):
    """(node names, |Phi_p|) of every path, by depth-first search over the edge list."""
    names = list(net.nodes)
    out = {v: [] for v in range(net.num_nodes)}
    for e, (s, t) in enumerate(net.edges.tolist()):
        out[s].append((e, t))
    outputs = set(net.outputs.tolist())
    found = []

    def walk(v, nodes, phi):
        if v in outputs and len(nodes) > 1:
            found.append((tuple(names[u] for u in nodes), abs(phi)))
        for e, t in out[v]:
            walk(t, nodes + [t], phi * theta[e])

    for v in net.inputs.tolist():
        walk(v, [v], 1.0)
    return found


def drawn_paths(ax):
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    where = {tuple(a.xy): a.get_text() for a in ax.texts}  # node labels sit on their nodes
    return lines, [(tuple(where[tuple(p)] for p in path.vertices), value)
                   for path, value in zip(lines.get_paths(), lines.get_array())]


@pytest.mark.parametrize("name", ["fig1", "ff:3,4,3,2", "random-dag:12,0.4,3"])
def test_network_paths_draws_every_path_through_its_nodes_coloured_by_phi(name):
    net = pathlift.builtin_network(name)
    theta = pathlift.normal_weights(net.d, 7)
    ax = pathlift.plot.network_paths(net, theta)
    lines, drawn = drawn_paths(ax)
    assert len(drawn) == pathlift.count_paths(net).paths
    reference = brute_force_paths(net, theta)
    assert sorted(p for p, _ in drawn) == sorted(p for p, _ in reference)
    for nodes, value in drawn:  # parallel edges give one node sequence several values
        assert min(abs(value - v) for p, v in reference if p == nodes) <= 1e-12 * value
    values = np.asarray(lines.get_array())
    assert np.all(np.diff(values) >= 0)  # weakest first: the strongest on top
    for path in lines.get_paths():  # drawn left to right, each vertex a node marker
        assert np.all(np.diff(path.vertices[:, 0]) > 0)
    markers = np.vstack([c.get_offsets() for c in ax.collections if c is not lines])
    assert {tuple(p) for path in lines.get_paths() for p in path.vertices} <= set(
        map(tuple, markers))
    assert isinstance(lines.norm, matplotlib.colors.LogNorm)
    ax.figure.canvas.draw()
    colours = lines.get_edgecolor()
    assert np.allclose(colours[-1], lines.cmap(lines.norm(values[-1])))
    assert np.allclose(colours[0], lines.cmap(lines.norm(values[0])))


def test_network_paths_marks_biases_and_greys_zero_paths():
    net = pathlift.fig1()
    theta = np.ones(net.d)
    (zero_edge,) = [e for e, (s, t) in enumerate(net.edges.tolist())
                    if (net.nodes[s], net.nodes[t]) == ("a", "d")]
    theta[zero_edge] = 0.0  # path a-d-h has Phi = 0, the four others 1
    ax = pathlift.plot.network_paths(net, theta)
    lines, drawn = drawn_paths(ax)
    assert drawn[0] == (("a", "d", "h"), 0.0)  # drawn first, under the others
    ax.figure.canvas.draw()
    assert np.allclose(lines.get_edgecolor()[0], matplotlib.colors.to_rgba("0.85"))
    assert not np.allclose(lines.get_edgecolor()[1], matplotlib.colors.to_rgba("0.85"))
    (bias,) = [c for c in ax.collections if c.get_label() == "bias"]
    g = [a.xy for a in ax.texts if a.get_text() == "g"][0]
    assert bias.get_offsets().tolist() == [list(g)]


def test_network_paths_refuses_too_many_paths():
    net = pathlift.builtin_network("ff:3,5,4,2")  # 170 paths
    with pytest.raises(ValueError, match=r"has 170 paths, more than max_paths = 100"):
        pathlift.plot.network_paths(net, max_paths=100)
    huge = pathlift.builtin_network("ff:4," + ",".join(["64"] * 14) + ",2")
    with pytest.raises(ValueError, match=r"has 10\^26\.\d\d paths, more than max_paths = 2,000"):
        pathlift.plot.network_paths(huge)
    assert not plt.get_fignums()  # refused before drawing anything


def test_functions_use_the_given_axes_and_the_stored_weights():
    net = pathlift.feed_forward(2, [3], 1).with_weights(np.arange(1.0, 14.0))
    fig, axes = plt.subplots(1, 3)
    assert pathlift.plot.length_histogram(net, ax=axes[0]) is axes[0]
    assert pathlift.plot.kernel_spectrum(net, k=2, ax=axes[1]) is axes[1]
    assert pathlift.plot.network_paths(net, ax=axes[2], colorbar=False) is axes[2]
    assert plt.get_fignums() == [fig.number]
    (lines,) = [c for c in axes[2].collections if isinstance(c, LineCollection)]
    assert np.allclose(sorted(lines.get_array()),
                       sorted(np.abs(pathlift.path_lifting(net, np.arange(1.0, 14.0)))))


def test_example_writes_the_three_figures(tmp_path):
    pytest.importorskip("torchvision")
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), MPLBACKEND="Agg")
    subprocess.run([sys.executable, str(ROOT / "examples" / "plots.py"), "--out-dir",
                    str(tmp_path)], check=True, capture_output=True, env=env, timeout=300)
    for name in ("plot_lengths.png", "plot_spectrum.png", "plot_paths.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 150_000


def test_docs_figures_are_there_and_small():
    for name in ("plot_lengths.png", "plot_spectrum.png", "plot_paths.png"):
        path = ROOT / "docs" / "figures" / name
        assert path.stat().st_size < 150_000, path
        assert f"figures/{name}" in (ROOT / "docs" / "plots.md").read_text()

