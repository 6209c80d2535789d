#!/usr/bin/python3
"""Which of torchvision's classification models pathlift imports, and its L1 path-norm beside
the PyTorch recipe's (bench/torch_recipes.py, written without pathlift).

For every model of ``torchvision.models.list_models(module=torchvision.models)`` (torchvision
>= 0.14; else the public lower-case builders of ``torchvision.models``), one **child process**
builds it with ``weights=None`` (googlenet, inception_v3: ``aux_logits=False,
init_weights=False``) under ``torch.manual_seed(seed)``, random BatchNorm statistics
(``torch_recipes.torchvision_model``), float64, eval mode, and at 3x224x224 (inception_v3:
3x299x299):

* times ``pathlift.from_torch(model, shape)`` -- the import: torch.fx trace, layer graph and
  theta, a ``LayerNetwork`` that is never unrolled; on refusal it keeps the exception's class
  and the first line of its message;
* on acceptance, times the L1 path-norm ``pathlift.path_norm(net, theta, 1.0, threads=T)``
  (the layer-graph function) and the recipe's ``path_norm_recipe`` (its torch.fx trace not
  timed), and their relative difference (norms beyond float64: the recipe's is inf, pathlift's
  log10 is given instead).

A child per model, so that a crash, a memory blow-up or a timeout (``--timeout``, default
300 s) costs one row only; the peak memory is the child's ``ru_maxrss`` (``os.wait4``, so it is
measured for children that crash or are killed too). The parent prints a markdown table
(and writes it to ``--markdown FILE``).

With ``--balance``, each accepted model is balanced instead of normed: ``pathlift.path_cond``
and ``pathlift.enorm`` on its theta (the layer graph, never unrolled), each with its
iterations, whether it converged (stationarity within the default tolerance 1e-10), the
stationarity and the seconds (issue 51: every torchvision ReLU model in seconds).

Usage::

    PYTHONPATH=build/python nice /usr/bin/python3 bench/torchvision_zoo.py \\
        [--models resnet18,alexnet] [--threads 2] [--timeout 300] [--markdown FILE] \\
        [--skip-recipe-above PARAMS] [--balance]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

BENCH = pathlib.Path(__file__).resolve().parent
MARK = "@@zoo "        # the child's result lines on stdout start with this

# builder arguments beyond weights=None
EXTRA: Dict[str, Dict[str, Any]] = {
    "googlenet": {"aux_logits": False, "init_weights": False},
    "inception_v3": {"aux_logits": False, "init_weights": False},
}
SHAPES: Dict[str, tuple] = {"inception_v3": (3, 299, 299)}
DEFAULT_SHAPE = (3, 224, 224)


def classification_models() -> List[str]:
    import torchvision
    from torchvision import models
    if hasattr(models, "list_models"):
        return sorted(models.list_models(module=models))
    del torchvision
    return sorted(n for n, f in vars(models).items()
                  if callable(f) and not isinstance(f, type) and n[:1].islower() and
                  not n.startswith("_") and n not in ("get_model", "get_weight",
                                                      "get_model_weights", "list_models"))


# --------------------------------------------------------------------------------------------
# the child: one model


def _emit(**fields: Any) -> None:
    print(MARK + json.dumps(fields), flush=True)


def _reason(e: BaseException) -> str:
    """The exception's class and the first line of its message; for pathlift's list of
    problems ("  - layer ReLU6 at 'features.0.2': not supported" lines) also the distinct
    problems, their places left out (at most 3)."""
    lines = str(e).strip().splitlines()
    out = f"{type(e).__name__}: {lines[0] if lines else ''}".strip()
    kinds: List[str] = []
    for ln in lines[1:]:
        if ln.startswith("  - "):
            kind = re.sub(r" at '[^']*'", "", ln[4:].strip())
            if kind not in kinds:
                kinds.append(kind)
    if kinds:
        out += " (" + "; ".join(kinds[:3]) + ("; ..." if len(kinds) > 3 else "") + ")"
    return out


def child(name: str, threads: int, seed: int, skip_recipe_above: Optional[int],
          balance: bool = False) -> int:
    import torch
    torch.set_num_threads(threads)
    sys.path.insert(0, str(BENCH))
    import torch_recipes as R

    import pathlift
    import pathlift.torch as pt

    shape = SHAPES.get(name, DEFAULT_SHAPE)
    t = time.perf_counter()
    model = R.torchvision_model(name, seed, weights=None, **EXTRA.get(name, {}))
    params = sum(p.numel() for p in model.parameters())
    _emit(stage="built", params=params, shape=list(shape), build_s=time.perf_counter() - t)

    t = time.perf_counter()
    try:
        net = pt.from_torch(model, shape)
    except Exception as e:      # UnsupportedModelError (a ValueError), or anything else
        _emit(stage="import", accepted=False, import_s=time.perf_counter() - t,
              reason=_reason(e))
        return 0
    _emit(stage="import", accepted=True, import_s=time.perf_counter() - t)

    theta = pt.theta_from_torch(model)
    if balance:
        for method in ("path_cond", "enorm"):
            t = time.perf_counter()
            try:
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # reported in the table
                    r = getattr(pathlift, method)(net, theta, threads=threads)
            except Exception as e:
                _emit(stage=method, **{f"{method}_error": _reason(e)})
                continue
            _emit(stage=method, **{f"{method}_s": time.perf_counter() - t,
                                   f"{method}_iterations": r.sweeps,
                                   f"{method}_converged": r.converged,
                                   f"{method}_stationarity": r.stationarity})
        return 0
    t = time.perf_counter()
    res = pathlift.path_norm(net, theta, 1.0, threads=threads)
    _emit(stage="pathlift", pathlift_s=time.perf_counter() - t, norm=float(res.norm),
          log10=float(res.log10))
    del net

    if skip_recipe_above is not None and params > skip_recipe_above:
        _emit(stage="recipe", recipe_s=None, skipped=True)
        return 0
    try:
        lm = R.LinearModel(model, shape)
        t = time.perf_counter()
        value = R.path_norm_recipe(lm, s=1.0)
        _emit(stage="recipe", recipe_s=time.perf_counter() - t, recipe_norm=value)
    except Exception as e:
        _emit(stage="recipe", recipe_s=None, recipe_error=_reason(e))
    return 0


# --------------------------------------------------------------------------------------------
# the parent: a child per model, the table


def run_child(name: str, args: argparse.Namespace) -> Dict[str, Any]:
    """Runs one child; returns its merged result lines plus status, seconds, peak_mib."""
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", name,
           "--threads", str(args.threads), "--seed", str(args.seed)]
    if args.skip_recipe_above is not None:
        cmd += ["--skip-recipe-above", str(args.skip_recipe_above)]
    if args.balance:
        cmd += ["--balance"]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    out: Dict[str, Any] = {"model": name}
    with tempfile.TemporaryFile("w+") as log:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.monotonic() - start > args.timeout:
                timed_out = True
                proc.kill()                 # the child only (it starts no processes)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)   # reaped by wait4
        out["seconds"] = time.monotonic() - start
        out["peak_mib"] = usage.ru_maxrss / 1024.0             # KiB on Linux
        log.seek(0)
        text = log.read()
    for line in text.splitlines():
        if line.startswith(MARK):
            out.update(json.loads(line[len(MARK):]))
    rc = proc.returncode
    if timed_out:
        out["status"] = f"timeout after {args.timeout:g} s"
    elif rc != 0:
        why = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"
        tail = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(MARK)]
        out["status"] = f"crashed ({why})" + (f": {tail[-1].strip()[:200]}" if tail else "")
    else:
        out["status"] = "ok"
    return out


def _s(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def row(r: Dict[str, Any]) -> str:
    params = r.get("params")
    label = r["model"] + (f" ({params / 1e6:.1f} M)" if params is not None else "")
    accepted = r.get("accepted")
    reason = "-"
    if accepted is None:                 # died before or during the import
        acc, reason = "?", r["status"]
    elif not accepted:
        acc, reason = "no", r.get("reason", "")
    else:
        acc = "yes"
    if accepted and r["status"] != "ok":
        reason = r["status"]             # accepted, then a crash or timeout
    pl = r.get("pathlift_s")
    rec = r.get("recipe_s")
    rel = "-"
    if r.get("recipe_error"):
        rel = f"recipe: {r['recipe_error']}"
    elif rec is not None and pl is not None:
        a, b = r["recipe_norm"], r["norm"]
        if math.isfinite(a) and math.isfinite(b) and b != 0:
            rel = f"{abs(a - b) / abs(b):.1e}"
        elif math.isfinite(b):
            rel = f"recipe {a!r}, pathlift {b:.6g}"
        else:
            rel = f"beyond float64 (recipe {a!r}, pathlift 10^{r['log10']:.2f})"
    elif r.get("skipped"):
        rel = "recipe skipped"
    return (f"| {label} | {acc} | {_cell(reason)} | {_s(r.get('import_s'))} | {_s(pl)} | "
            f"{_s(rec)} | {_cell(rel)} | {r['peak_mib']:.0f} |")


def balance_row(r: Dict[str, Any]) -> str:
    params = r.get("params")
    label = r["model"] + (f" ({params / 1e6:.1f} M)" if params is not None else "")
    if not r.get("accepted"):
        return f"| {label} | no | - | - | - | - |"
    cells = []
    for method in ("path_cond", "enorm"):
        if r.get(f"{method}_error"):
            cells += [_cell(r[f"{method}_error"]), "-"]
        elif f"{method}_s" in r:
            conv = "converged" if r[f"{method}_converged"] else "NOT converged"
            cells += [f"{r[f'{method}_iterations']} iterations, {conv}, "
                      f"{r[f'{method}_stationarity']:.1e}", _s(r[f"{method}_s"])]
        else:
            cells += [_cell(r["status"]), "-"]
    return f"| {label} | yes | " + " | ".join(cells) + " |"


BALANCE_HEADER = ("| model | accepted | PathCond | PathCond s | ENorm | ENorm s |\n"
                  "|---|---|---|---:|---|---:|")

HEADER = ("| model | accepted | reason (refused) | import s | L1 norm pathlift s | "
          "L1 norm recipe s | rel. diff | peak MiB |\n|---|---|---|---:|---:|---:|---|---:|")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated subset (default: every classification "
                                     "model of the installed torchvision)")
    ap.add_argument("--threads", type=int, default=2,
                    help="torch and pathlift threads in each child (default 2)")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds per model, the child killed after (default 300)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table to FILE")
    ap.add_argument("--skip-recipe-above", type=int, metavar="PARAMS",
                    help="no recipe for models with more parameters ('-' in its columns)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--balance", action="store_true",
                    help="PathCond and ENorm on each accepted model instead of the L1 norm")
    ap.add_argument("--child", metavar="MODEL", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.threads, args.seed, args.skip_recipe_above, args.balance)

    names = args.models.split(",") if args.models else classification_models()
    import torch
    import torchvision
    rows = []
    print(f"# torchvision {torchvision.__version__}, torch {torch.__version__}, "
          f"{len(names)} models, float64, {args.threads} threads, timeout {args.timeout:g} s",
          file=sys.stderr, flush=True)
    for name in names:
        r = run_child(name, args)
        rows.append(balance_row(r) if args.balance else row(r))
        print(f"{name}: {r['status']}, {r['seconds']:.1f} s  {rows[-1]}", file=sys.stderr,
              flush=True)
    pathlift_version = "?"
    try:
        import pathlift
        pathlift_version = pathlift.__version__
    except Exception:
        pass
    table = (f"torchvision {torchvision.__version__}, torch {torch.__version__}, pathlift "
             f"{pathlift_version}; weights=None, random BatchNorm statistics, float64, eval, "
             f"3x224x224 (inception_v3 3x299x299), {args.threads} threads, one process per "
             f"model (timeout {args.timeout:g} s)\n\n" + (BALANCE_HEADER if args.balance else HEADER) +
             "\n" + "\n".join(rows) + "\n")
    print(table)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
