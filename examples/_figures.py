"""The figure files of the examples: ``with saved_figure(path, figsize=(5, 3.5)) as (fig, ax):``
draw on ``ax``; on leaving the block the figure is laid out, written to ``path`` and closed.

Not an example itself: the scripts here import it (run as ``python3 examples/x.py``, this
folder is on sys.path). matplotlib is imported on the first figure only, with the Agg backend
(files, no display), so that a script needs it only when it draws.
"""
import contextlib


@contextlib.contextmanager
def saved_figure(path, *grid, dpi=None, **subplots):
    """``plt.subplots(*grid, **subplots)`` as ``(fig, axes)``; on leaving the block
    ``fig.tight_layout()``, ``fig.savefig(path, dpi=dpi)`` (None: the figure's dpi) and the
    figure closed (also when the block raises, then nothing is written)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(*grid, **subplots)
    try:
        yield fig, axes
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)
