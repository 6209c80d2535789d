"""The progress of long calls (EngineOptions.progress): a callable hears every phase and its
fraction, ending at 1; False is silent; None draws the CLI's display on a terminal only; an
exception in the callback never breaks the computation."""

import io
import pathlib
import sys

import numpy as np
import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"


def record():
    calls = []
    return calls, lambda phase, fraction: calls.append((phase, fraction))


def test_a_callable_hears_the_phases_up_to_their_end(pl):
    net = pl.feed_forward(5, [32, 32, 32], 2)
    theta = pl.normal_weights(net.d, 0)
    calls, progress = record()
    phi = pl.path_lifting(net, theta, progress=progress)
    np.testing.assert_array_equal(phi, pl.path_lifting(net, theta, progress=False))
    assert calls and calls[-1] == ("computing Phi", 1.0)
    fractions = [f for _, f in calls]
    assert all(-1 <= f <= 1 for f in fractions) and fractions == sorted(fractions)

    calls, progress = record()
    pl.rank(net, theta, progress=progress)
    assert {phase for phase, _ in calls}  # the certificate's phases, each named


def test_the_layer_dp_and_unrolling_report(pl):
    net = pl.load_model(DATA / "lenet5.onnx")
    calls, progress = record()
    pl.kernel_diagonal(net, progress=progress)
    assert calls[-1][1] == 1.0 and all(0 <= f <= 1 for _, f in calls)
    calls, progress = record()
    net.unrolled(progress=progress)
    assert calls[-1] == ("unrolling the layer graph", 1.0)


def test_a_dag_pass_without_fractions_reports_running_then_done(pl):
    """A DAG's one-pass DPs (the path-free functions of path_free.hpp) have no fractions: the
    phase is heard running with its extent unknown, then done, as on a layer graph."""
    net = pl.feed_forward(5, [16, 16], 2)
    theta = pl.normal_weights(net.d, 2)
    for call, phase in [(lambda p: pl.kernel_trace(net, theta, progress=p), "trace(K)"),
                        (lambda p: pl.kernel_diagonal(net, theta, progress=p), "diag(K)"),
                        (lambda p: pl.path_norm(net, theta, 1, progress=p), "path-norm")]:
        calls, progress = record()
        call(progress)
        assert calls == [(phase, -1.0), (phase, 1.0)]


def test_a_failing_callback_does_not_break_the_call(pl):
    net = pl.feed_forward(5, [16, 16], 2)
    theta = pl.normal_weights(net.d, 1)

    def broken(phase, fraction):
        raise RuntimeError("the display broke")

    hooks = []
    old = sys.unraisablehook
    sys.unraisablehook = hooks.append
    try:
        J = pl.jacobian(net, theta, progress=broken)
    finally:
        sys.unraisablehook = old
    assert J.shape == (pl.count_paths_total(net), net.d)
    assert len(hooks) == 1 and "the display broke" in str(hooks[0].exc_value)
    with pytest.raises(TypeError, match="progress must be None, False or a callable"):
        pl.path_lifting(net, theta, progress="yes")


def test_the_terminal_display(monkeypatch):
    from pathlift import _progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    assert isinstance(_progress.display("jacobian", None), _progress.TerminalProgress)
    bar = _progress.TerminalProgress("jacobian", delay=0)
    bar("computing dPhi", 0.5)
    bar("", -1)
    bar.close()
    text = stream.getvalue()
    assert "jacobian: computing dPhi   50%" in text and text.endswith("\r\x1b[K")
    quiet = Terminal()
    quiet.isatty = lambda: False
    monkeypatch.setattr(sys, "stderr", quiet)
    assert _progress.display("jacobian", None) is None  # not a terminal: nothing drawn
    assert _progress.display("jacobian", False) is None
