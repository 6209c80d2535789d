"""Sweeps: pathlift's quantities over many checkpoints, locally or on a Dask cluster, one table
(docs/sweeps.md).

``pathlift.sweep(items, quantities)`` returns a pandas DataFrame with one row per item. An item
is a model file (ONNX, pathlift-layers JSON, pathlift-network JSON: its own weights), a
``(model file, theta file)`` pair (theta a ``.npy`` vector), or a :class:`TorchCheckpoint` (a
saved ``state_dict`` and a picklable constructor of its module). Each task loads its item where
it runs, so weights never travel through a scheduler; only the item's description and its row
do. Without a client the items run on a local process pool (processes x threads = cores); with
a ``distributed.Client`` on its cluster. A failed item gives a row whose ``error`` says why; the
others finish. With ``out=`` (``.csv``, or ``.parquet`` where pyarrow is installed) the table
is rewritten as each row arrives and a rerun computes only the items missing from it.

The quantities, by name (one home: ``QUANTITIES``)::

    norm:<s>        the L^s path-norm (s >= 0 or inf): columns norm:<s>, norm:<s>:log10
    kernel_trace    trace of the path kernel K: kernel_trace, kernel_trace:log10
    top_eig:<k>     the k largest eigenvalues of K: top_eig:<k>[0..k-1], top_eig:<k>:status
    rank            the certified rank of dPhi: rank, rank:expected, rank:status
    metric:<ref>    the path-metric to the weights of <ref> (a .npy theta, a model file, or a
                    checkpoint of the same constructor): metric:<ref>, metric:<ref>:log10
    bound:<n>:<B>   the path-norm toolkit's generalization bound for n samples with
                    ||x||_inf <= B: bound:<n>:<B>, its :log10, :coefficient and :D

or a callable ``f(net, theta)`` (picklable, for other processes) returning a number (column
``f.__name__``) or a dict (columns ``f.__name__:key``). Every row also has ``item``, ``d``,
``seconds`` and ``error`` ("" when none).
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union,
                    cast)

import numpy as np

from . import _progress

Row = Dict[str, Any]
# A row's key (never a column) for the importer's warnings on its item, issued again where the
# rows arrive (a worker's own warnings would reach its stderr only).
_WARNINGS = "_warnings"


@dataclass(frozen=True)
class TorchCheckpoint:
    """A PyTorch checkpoint as a sweep item: ``torch.load(path)`` gives a ``state_dict`` (or a
    dict holding one under ``state_key``), ``constructor()`` the module it fits (a picklable
    callable: a class or a top-level function), ``input_shape`` one sample's shape without the
    batch dimension (as :func:`pathlift.from_torch` takes it). The module is loaded in float64
    and eval mode on the worker; theta is :func:`pathlift.theta_from_torch`'s."""

    path: str
    constructor: Callable[[], Any]
    input_shape: Optional[Tuple[int, ...]] = None
    state_key: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", os.fspath(self.path))
        if not callable(self.constructor):
            raise TypeError(f"TorchCheckpoint: constructor must be callable, got "
                            f"{type(self.constructor).__name__}")
        if self.input_shape is not None:
            object.__setattr__(self, "input_shape", tuple(int(s) for s in self.input_shape))


Item = Union[str, "os.PathLike[str]", Tuple[Any, Any], TorchCheckpoint]


# --- the quantities ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Quantity:
    name: str            # the column prefix: the spec as given ("norm:1"), or the callable's name
    kind: str            # norm, kernel_trace, top_eig, rank, metric, callable
    arg: Any = None      # s, k, the reference, the callable


def _known() -> str:
    return ", ".join(QUANTITIES)


QUANTITIES = ("norm:<s>", "kernel_trace", "top_eig:<k>", "rank", "metric:<reference item>",
              "bound:<n>:<B>", "shares:<layer|channel|parameter|node>")


def parse_quantity(spec: Any) -> _Quantity:
    """A quantity from its name (``QUANTITIES``) or a callable; ValueError naming a bad one."""
    if callable(spec):
        name = getattr(spec, "__name__", None) or type(spec).__name__
        return _Quantity(name, "callable", spec)
    if not isinstance(spec, str):
        raise TypeError(f"a quantity is a name or a callable, got {type(spec).__name__}")
    head, _, arg = spec.partition(":")
    if head == "norm":
        try:
            s = float(arg)
        except ValueError:
            raise ValueError(f"quantity {spec!r}: s must be a number >= 0 or inf "
                             f"(norm:1, norm:2, norm:inf)") from None
        if not s >= 0:
            raise ValueError(f"quantity {spec!r}: s must be >= 0 (got {arg})")
        return _Quantity(spec, "norm", s)
    if head == "kernel_trace" and not arg:
        return _Quantity(spec, "kernel_trace")
    if head == "rank" and not arg:
        return _Quantity(spec, "rank")
    if head == "top_eig":
        try:
            k = int(arg)
        except ValueError:
            k = 0
        if k < 1:
            raise ValueError(f"quantity {spec!r}: k must be an integer >= 1 (top_eig:3)")
        return _Quantity(spec, "top_eig", k)
    if head == "metric":
        if not arg:
            raise ValueError(f"quantity {spec!r}: name the reference item (metric:init.npy)")
        return _Quantity(spec, "metric", arg)
    if head == "bound":
        try:
            n_text, b_text = arg.split(":")
            n, b = float(n_text), float(b_text)
        except ValueError:
            raise ValueError(f"quantity {spec!r}: give the training samples n and the input "
                             f"bound B (bound:60000:2.64)") from None
        if not (n > 0 and math.isfinite(n) and n.is_integer() and b >= 0 and math.isfinite(b)):
            raise ValueError(f"quantity {spec!r}: n must be a whole number > 0 and B a finite "
                             "number >= 0")
        return _Quantity(spec, "bound", (n, b))
    if head == "shares":
        if arg not in ("layer", "channel", "parameter", "node"):
            raise ValueError(f"quantity {spec!r}: shares by layer, channel, parameter or node "
                             f"(shares:layer)")
        return _Quantity(spec, "shares", arg)
    raise ValueError(f"unknown quantity {spec!r}; the quantities are {_known()}, or a callable "
                     f"f(net, theta)")


def _columns(q: _Quantity, net: Any, theta: np.ndarray, item: Any, threads: int,
             max_memory: int) -> Row:
    """The row's columns of quantity q on (net, theta)."""
    import pathlift as pl

    if q.kind == "norm":
        r = pl.path_norm(net, theta, q.arg, max_memory=max_memory, threads=threads,
                         progress=False)
        return {q.name: float(r.norm), f"{q.name}:log10": float(r.log10)}
    if q.kind == "kernel_trace":
        t = pl.kernel_trace(net, theta, scaled=True, threads=threads, progress=False)
        return {q.name: float(t.value), f"{q.name}:log10": float(t.log10)}
    if q.kind == "top_eig":
        e = pl.kernel_top_eigenvalues(net, theta, q.arg, max_memory=max_memory, threads=threads,
                                      progress=False)
        row: Row = {f"{q.name}[{i}]": float(v) for i, v in enumerate(e.values)}
        row[f"{q.name}:status"] = e.status
        return row
    if q.kind == "rank":
        k = pl.rank(net, theta, max_memory=max_memory, threads=threads, progress=False)
        return {q.name: int(k["rank_B"]), f"{q.name}:expected": int(k["expected"]),
                f"{q.name}:status": k["status"]}
    if q.kind == "metric":
        theta2 = _reference_theta(q.arg, item, max_memory)
        m = pl.path_metric(net, theta, theta2, max_memory=max_memory, threads=threads,
                           progress=False)
        return {q.name: float(m.value), f"{q.name}:log10": float(m.log10)}
    if q.kind == "bound":
        g = pl.generalization_bound(net, theta, n=q.arg[0], input_bound=q.arg[1],
                                    max_memory=max_memory, threads=threads, progress=False)
        return {q.name: float(g.bound), f"{q.name}:log10": float(g.log10_bound),
                f"{q.name}:coefficient": float(g.coefficient), f"{q.name}:D": int(g.D)}
    if q.kind == "shares":
        shares = pl.path_norm_shares(net, theta, 1.0, by=q.arg, max_memory=max_memory,
                                     threads=threads, progress=False)
        return {f"{q.name}:{name}": float(v) for name, v in zip(shares.names, shares.shares)}
    out = q.arg(net, theta)
    if isinstance(out, dict):
        return {f"{q.name}:{k}": v for k, v in out.items()}
    return {q.name: out}


def _integer_columns(qs: Sequence[_Quantity]) -> List[str]:
    """The columns of whole numbers (d and _columns' int values), written as integers in a CSV
    table even where a failed row leaves them empty."""
    columns = ["d"]
    for q in qs:
        if q.kind == "rank":
            columns += [q.name, f"{q.name}:expected"]
        elif q.kind == "bound":
            columns.append(f"{q.name}:D")
    return columns


def _as_written(table, qs: Sequence[_Quantity]):
    """The table as a CSV file holds it: the integer columns as nullable integers (5, not 5.0
    beside the empty cell of a failed row)."""
    return table.astype({c: "Int64" for c in _integer_columns(qs) if c in table.columns})


def _reference_theta(ref: str, item: Any, max_memory: int) -> np.ndarray:
    """theta of the metric's reference: a .npy vector, a model file's weights, or (for a
    TorchCheckpoint item) a checkpoint of the same constructor."""
    if ref.endswith(".npy"):
        return _read_theta(ref)
    if isinstance(item, TorchCheckpoint) and not ref.endswith((".onnx", ".json")):
        return _load(TorchCheckpoint(ref, item.constructor, item.input_shape, item.state_key),
                     max_memory)[1]
    return _load(ref, max_memory)[1]


# --- the items ---------------------------------------------------------------------------------

def item_key(item: Item) -> str:
    """The item's name in the table's ``item`` column (and what a rerun matches)."""
    if isinstance(item, TorchCheckpoint):
        return item.path
    if isinstance(item, tuple):
        if len(item) != 2:
            raise ValueError(f"a pair item is (model file, theta file), got {len(item)} entries")
        return f"{os.fspath(item[0])}:{os.fspath(item[1])}"
    if isinstance(item, (str, os.PathLike)):
        return os.fspath(item)
    raise TypeError(f"an item is a model file, a (model file, theta file) pair or a "
                    f"TorchCheckpoint, got {type(item).__name__}")


def _read_theta(path: str) -> np.ndarray:
    theta = np.load(path, allow_pickle=False)
    if theta.ndim != 1:
        raise ValueError(f"{path}: theta must be a vector, got shape {theta.shape}")
    return np.ascontiguousarray(theta, dtype=np.float64)


def _load(item: Item, max_memory: int) -> Tuple[Any, np.ndarray]:
    """(net, theta) of an item, read where the task runs."""
    import pathlift as pl

    if isinstance(item, TorchCheckpoint):
        import torch

        from . import torch as pt

        state = torch.load(item.path, map_location="cpu")
        if item.state_key is not None:
            state = state[item.state_key]
        module = item.constructor()
        module.load_state_dict(state)
        module = module.double().eval()
        net = pl.from_torch(module, input_shape=item.input_shape)
        return net, np.asarray(pt.theta_from_torch(module), dtype=np.float64)
    # load_model without its Python warnings: evaluate returns them with the row
    if isinstance(item, tuple):
        net = pl._read_model(os.fspath(item[0]), None, max_memory)
        return net, _read_theta(os.fspath(item[1]))
    net = pl._read_model(os.fspath(item), None, max_memory)
    return net, np.asarray(net.weights, dtype=np.float64)


@dataclass(frozen=True)
class _Task:
    index: int
    item: Item
    quantities: Tuple[_Quantity, ...]
    threads: Optional[int]          # None: the worker's share of its host's cores
    workers_on_host: Dict[str, int]  # with a client: each host's worker count
    max_memory: Optional[int]       # None: the worker's memory limit (0: pathlift's default)


_MALLOC_TUNED = False


def _untrim_malloc() -> None:
    """Undoes, in this process, a small ``MALLOC_TRIM_THRESHOLD_`` (Dask's nanny starts its
    workers with 65536): with it glibc maps every block above 128 KiB afresh and hands it back
    when freed, so each of the engine's large buffers is faulted in again, page by page, and
    kernel_top_eigenvalues took 4x its time on a worker. The thresholds are set to what glibc's
    own adaptive rule reaches (blocks below 32 MiB from the heap, which keeps up to 256 MiB
    free before trimming)."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED or "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        return
    _MALLOC_TUNED = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)   # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # not glibc: nothing to undo
        pass


def _worker_limits(task: _Task) -> Tuple[int, int]:
    """(threads, max_memory) for a task where it runs: a Dask worker's share of its host's
    cores and its memory limit, else the task's."""
    threads, memory = task.threads, task.max_memory
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        worker = None
    cores = os.cpu_count() or 1
    if threads is None:
        share = task.workers_on_host.get(worker.address.rsplit(":", 1)[0], 1) if worker else 1
        threads = max(1, cores // max(1, share))
    if memory is None:
        manager = getattr(worker, "memory_manager", worker)  # Dask >= 2022.11 keeps it there
        memory = int(getattr(manager, "memory_limit", 0) or 0) if worker else 0
    return threads, memory


def evaluate(task: _Task) -> Tuple[int, Row]:
    """The task's row: its item loaded, each quantity's columns, or the error that stopped
    it (never raised: a failed item is a row)."""
    start = time.perf_counter()
    row: Row = {"item": item_key(task.item)}
    try:
        _untrim_malloc()
        threads, memory = _worker_limits(task)
        net, theta = _load(task.item, memory)
        row["d"] = int(net.d)
        if getattr(net, "warnings", None):
            row[_WARNINGS] = list(net.warnings)
        for q in task.quantities:
            row.update(_columns(q, net, theta, task.item, threads, memory))
        row["error"] = ""
    except Exception as e:  # noqa: BLE001 - a failed item is a row saying why
        row["error"] = f"{type(e).__name__}: {e}"
    row["seconds"] = time.perf_counter() - start
    return task.index, row


# --- the table ---------------------------------------------------------------------------------

def _read_table(out: str):
    import pandas as pd

    if not os.path.exists(out):
        return None
    if out.endswith(".parquet"):
        return pd.read_parquet(out)
    table = pd.read_csv(out, float_precision="round_trip", keep_default_na=False,
                        na_values=[""], dtype={"item": str, "error": str})
    table["error"] = table["error"].fillna("") if "error" in table else ""
    return table


def _check_out(out: str) -> None:
    if out.endswith(".parquet"):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ValueError(f"{out}: a .parquet table needs pyarrow, which is not installed "
                             "(Debian 12 does not package it): use a .csv file") from None
    elif not out.endswith(".csv"):
        raise ValueError(f"{out}: the table is written as .csv (or .parquet with pyarrow)")


def _frame(rows: List[Row], order: List[str]):
    """The rows as a DataFrame, in the items' order, columns item, d, the quantities' (in the
    order they first appear), seconds, error."""
    import pandas as pd

    rank = {key: i for i, key in enumerate(order)}
    rows = sorted(rows, key=lambda r: rank.get(r["item"], len(order)))
    columns: List[str] = ["item", "d"]
    for r in rows:
        columns += [c for c in r if c not in columns and c not in ("seconds", "error")]
    columns += ["seconds", "error"]
    table = pd.DataFrame(rows, columns=columns)
    table["error"] = table["error"].fillna("")
    return table


def _write_table(table, out: str, qs: Sequence[_Quantity]) -> None:
    """The whole table, replacing the file at once (an interrupted write leaves the last one)."""
    table = _as_written(table, qs)
    tmp = f"{out}.tmp{os.getpid()}"
    if out.endswith(".parquet"):
        table.to_parquet(tmp, index=False)
    else:
        table.to_csv(tmp, index=False)
    os.replace(tmp, out)


def _has_all(row: Row, qs: Tuple[_Quantity, ...]) -> bool:
    """Whether a row read back holds every quantity asked (a failed row counts as done: its
    error is the answer, unless retried); a row missing one is computed again, whole."""
    if row.get("error"):
        return True
    return all(any(k == q.name or k.startswith((q.name + ":", q.name + "["))
                   for k, v in row.items() if not (isinstance(v, float) and math.isnan(v)))
               for q in qs)


# --- the sweep ---------------------------------------------------------------------------------

def sweep(items: Iterable[Item], quantities: Sequence[Any], *, client: Any = None,
          out: Optional[Union[str, "os.PathLike[str]"]] = None, processes: Optional[int] = None,
          threads: Optional[int] = None, max_memory: Optional[int] = None,
          retry_errors: bool = False, progress: Any = None):
    """Each quantity on each item, one row per item, as a pandas DataFrame (module docstring).

    client: a ``distributed.Client``: the items run on its cluster (each task loads its item on
    the worker, uses that host's cores shared among its workers and the worker's memory limit as
    max_memory); a worker lost mid-task has its tasks rerun by the scheduler. Without a client:
    ``processes`` local processes (default: the cores, at most the items; 1 runs in this
    process), each with ``threads`` = cores / processes unless given. out: a ``.csv`` (or
    ``.parquet`` with pyarrow) file, rewritten as each row arrives; items already in it are not
    computed again (their rows kept; ``retry_errors`` recomputes those with an error).
    max_memory: bytes per task (default: the worker's limit, else pathlift's default). progress:
    None (a line on a terminal), False, or a callable (phase, fraction). Raises ValueError for
    an unknown quantity or a duplicate item before any work."""
    items = list(items)
    qs = tuple(parse_quantity(q) for q in quantities)
    if not qs:
        raise ValueError("name at least one quantity (e.g. ['norm:1', 'norm:2'])")
    keys = [item_key(i) for i in items]
    seen: Dict[str, int] = {}
    for i, key in enumerate(keys):
        if key in seen:
            raise ValueError(f"item {key!r} is given twice (positions {seen[key]} and {i})")
        seen[key] = i
    for name, value in (("processes", processes), ("threads", threads)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    out_path = os.fspath(out) if out is not None else None
    rows: Dict[str, Row] = {}
    if out_path is not None:
        _check_out(out_path)
        previous = _read_table(out_path)
        if previous is not None:
            for r in previous.to_dict("records"):
                if not (retry_errors and r.get("error")) and _has_all(r, qs):
                    rows[str(r["item"])] = r
    todo = [i for i, key in enumerate(keys) if key not in rows]
    display = cast(Optional[Callable[[str, float], None]], _progress.display("sweep", progress))
    done = 0

    warned: set[str] = set()

    def arrived(row: Row) -> None:
        nonlocal done
        for note in row.pop(_WARNINGS, ()):
            if note not in warned:  # once per sweep (every theta file of one --model has it)
                warned.add(note)
                warnings.warn(f"{row['item']}: {note}", stacklevel=4)  # sweep()'s caller
        rows[row["item"]] = row
        done += 1
        if out_path is not None:
            _write_table(_frame(list(rows.values()), keys), out_path, qs)
        if display is not None:
            display(f"{done}/{len(todo)} items", done / max(1, len(todo)))

    try:
        if client is not None:
            _run_on_client(client, items, todo, qs, threads, max_memory, arrived)
        else:
            _run_locally(items, todo, qs, processes, threads, max_memory, arrived)
    finally:
        if display is not None and hasattr(display, "close"):
            display.close()
    return _frame([rows[k] for k in keys if k in rows]
                  + [r for k, r in rows.items() if k not in seen], keys)


def _run_locally(items: List[Item], todo: List[int], qs: Tuple[_Quantity, ...],
                 processes: Optional[int], threads: Optional[int], max_memory: Optional[int],
                 arrived: Callable[[Row], None]) -> None:
    cores = os.cpu_count() or 1
    n = processes if processes is not None else max(1, min(cores, len(todo)))
    per = threads if threads is not None else max(1, cores // n)
    tasks = [_Task(i, items[i], qs, per, {}, max_memory) for i in todo]
    if n == 1:
        for t in tasks:
            arrived(evaluate(t)[1])
        return
    import multiprocessing

    pending = {t.index: t for t in tasks}
    for _attempt in range(3):  # a pool whose process died is rebuilt for what is left
        if not pending:
            return
        context = multiprocessing.get_context("spawn")  # no fork of OpenMP's threads
        with concurrent.futures.ProcessPoolExecutor(max_workers=n, mp_context=context) as pool:
            futures = [pool.submit(evaluate, t) for t in pending.values()]
            try:
                for f in concurrent.futures.as_completed(futures):
                    index, row = f.result()
                    del pending[index]
                    arrived(row)
            except concurrent.futures.process.BrokenProcessPool:
                continue
    for t in pending.values():
        arrived({"item": item_key(t.item), "seconds": math.nan,
                 "error": "a worker process died three times on the items left"})


def _run_on_client(client: Any, items: List[Item], todo: List[int], qs: Tuple[_Quantity, ...],
                   threads: Optional[int], max_memory: Optional[int],
                   arrived: Callable[[Row], None]) -> None:
    from distributed import as_completed

    hosts: Dict[str, int] = {}
    for address in client.scheduler_info()["workers"]:
        host = address.rsplit(":", 1)[0]
        hosts[host] = hosts.get(host, 0) + 1
    futures = {}
    for i in todo:
        task = _Task(i, items[i], qs, threads, hosts, max_memory)
        futures[client.submit(evaluate, task, pure=False)] = i
    for future in as_completed(list(futures)):
        try:
            _, row = future.result()
        except Exception as e:  # noqa: BLE001 - the scheduler gave up on the task
            row = {"item": item_key(items[futures[future]]), "seconds": math.nan,
                   "error": f"{type(e).__name__}: {e}"}
        arrived(row)


# --- the command line (pathlift sweep runs this module) -----------------------------------------

def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        import argparse

        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _one_line_warning(message: Any, *_args: Any, **_kwargs: Any) -> None:
    print(f"warning: {message}", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``pathlift sweep``: exit 0, 1 when an item failed (its row says why), 2 for bad usage
    ("error: ..." on stderr, as every pathlift command); a warning is one "warning: ..." line
    on stderr, as every command prints it."""
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        return _main(argv)


def _main(argv: Optional[Sequence[str]]) -> int:
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            print(f"error: {message} (pathlift sweep --help: the options)", file=sys.stderr)
            raise SystemExit(2)

    ap = Parser(
        prog="pathlift sweep",
        description="Each quantity on each model file (or, with --model, each theta file), one "
                    "row per file, as a CSV table (docs/sweeps.md).")
    ap.add_argument("files", nargs="+", metavar="FILES",
                    help="model files (.onnx, .json), or .npy theta files with --model")
    ap.add_argument("--quantities", required=True,
                    help=f"comma-separated: {_known()} (e.g. norm:1,norm:2,top_eig:3)")
    ap.add_argument("-o", "--output", help="the table (.csv): rewritten as rows arrive, and "
                                           "the rows already in it are not computed again")
    ap.add_argument("--model", help="the architecture the .npy files are weights of")
    ap.add_argument("--scheduler", help="a Dask scheduler's address (tcp://host:8786)")
    ap.add_argument("--workers", type=_positive, help="local processes (default: the cores)")
    ap.add_argument("--threads", type=_positive,
                    help="threads per process (default: cores / processes)")
    ap.add_argument("--retry-errors", action="store_true",
                    help="recompute the rows of --output that carry an error")
    args = ap.parse_intermixed_args(argv)  # files and options in any order
    items: List[Item] = [(args.model, f) if args.model else f for f in args.files]
    quantities = [q for q in args.quantities.split(",") if q]
    client = None
    try:
        for q in quantities:
            parse_quantity(q)
        if args.scheduler:
            from distributed import Client

            client = Client(args.scheduler)
        table = sweep(items, quantities, client=client, out=args.output,
                      processes=args.workers, threads=args.threads,
                      retry_errors=args.retry_errors)
    except (ValueError, TypeError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if client is not None:
            client.close()
    if args.output is None:
        _as_written(table, [parse_quantity(q) for q in quantities]).to_csv(sys.stdout, index=False)
    else:
        print(f"wrote {len(table)} rows to {args.output}", file=sys.stderr)
    failed = int((table["error"] != "").sum())
    if failed:
        print(f"{failed} of {len(table)} items failed (see the error column)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
