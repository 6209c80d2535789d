"""The progress display of long calls, as the command line shows it: on a terminal (stderr),
after about a second, one line ``label: phase  42%`` (or the seconds elapsed when the extent is
unknown), cleared when the call ends; nothing when stderr is not a terminal. A function's
``progress`` argument chooses: None (this display), False (none), or a callable
``progress(phase, fraction)`` -- fraction in 0..1, 1 when a phase ends, -1 when its extent is
unknown -- for example a tqdm bar::

    bar = tqdm.tqdm(total=100)
    pathlift.kernel_diagonal(net, progress=lambda phase, f: bar.update(max(0, 100 * f - bar.n)))
"""

from __future__ import annotations

import sys
import time
from typing import Optional


class TerminalProgress:
    """The default display (see the module docstring). Private: pass progress=None."""

    def __init__(self, label: str, delay: float = 1.0):
        self._label = label
        self._start = time.monotonic()
        self._delay = delay
        self._shown = False

    @staticmethod
    def wanted() -> bool:
        stream = sys.stderr
        return stream is not None and hasattr(stream, "isatty") and stream.isatty()

    def __call__(self, phase: str, fraction: float) -> None:
        elapsed = time.monotonic() - self._start
        if elapsed < self._delay:
            return
        if fraction < 0:
            state = f"{elapsed:.0f} s"
        else:
            state = f"{min(fraction, 1.0) * 100:3.0f}%"
        text = f"{self._label}: {phase}  {state}" if phase else f"{self._label}  {state}"
        sys.stderr.write("\r\x1b[K" + text[:200])
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._shown = False


def display(label: str, progress: object) -> Optional[object]:
    """The callable a call reports to: progress itself, a TerminalProgress for None on a
    terminal, else None."""
    if progress is False or progress is None and not TerminalProgress.wanted():
        return None
    if progress is None:
        return TerminalProgress(label)
    if not callable(progress):
        raise TypeError(f"progress must be None, False or a callable (phase, fraction), got "
                        f"{type(progress).__name__}")
    return progress
