#!/usr/bin/python3
"""Writing the sparse Jacobian, timed (issue 18): `pathlift jacobian -o J.npz` beside `-o J.mtx`.

For each format, the best and the median of --reps runs of the CLI (.mtx: one):

  compute     the seconds the command reports ("... s to compute": the Jacobian alone)
  write       from opening J.<format>.tmp to renaming it J.<format>: the CRC-32 pass and the
              writing, seen by strace (when it is installed)
  rest        the command's wall time minus compute: start-up, loading, writing, freeing
  cpu         user + system seconds of the command (all threads), for a machine shared with
              other work, where wall times vary
  size        the file's size
  read        reading the file back in Python: scipy.sparse.load_npz, scipy.io.mmread (once)

and, for scale, a plain write of as many bytes from one Python buffer after each .npz run (what
the disk, through the page cache, allows at that moment; the .npz's rest should be close to
it, plus start-up and the CRC-32 pass).

The two files are then checked to hold the same matrix, bit for bit.

Usage: /usr/bin/python3 bench/write_bench.py [--build build] [--ff 5,64,64,64,2] [--reps 3]
       [--dir DIR] [--no-mtx]
"""

import argparse
import os
import pathlib
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.io
import scipy.sparse

ROOT = pathlib.Path(__file__).resolve().parents[1]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"), help="build directory (cli/pathlift)")
    ap.add_argument("--ff", default="5,64,64,64,2", help="feed-forward widths (--ff of the CLI)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where the files go (default: a temporary folder)")
    ap.add_argument("--no-mtx", action="store_true", help="skip the (slow) .mtx write and read")
    return ap.parse_args()


STRACE = shutil.which("strace")


def run_cli(cli, ff, out, folder):
    """(wall, compute, write, cpu) seconds of `pathlift jacobian --ff ff -o out`; write is the
    time from opening OUT.tmp to renaming it OUT (CRC-32 and writing), seen by strace, or None
    without strace."""
    trace = folder / "trace.txt"
    prefix = [STRACE, "-f", "--seccomp-bpf", "-ttt", "-e", "trace=openat,rename", "-o",
              str(trace)] if STRACE else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*prefix, cli, "jacobian", "--ff", ff, "-o", out], capture_output=True,
                          text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"pathlift failed: {proc.stderr}")
    compute = float(re.search(r"\(([0-9.]+) s to compute\)", proc.stderr).group(1))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    write = None
    if STRACE:
        stamps = [float(line.split()[1]) for line in trace.read_text().splitlines()
                  if f'"{out}.tmp"' in line]
        write = stamps[-1] - stamps[0]
    return wall, compute, write, cpu


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    args = parse_args()
    cli = str(pathlib.Path(args.build) / "cli" / "pathlift")
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        folder = pathlib.Path(folder)
        print(f"pathlift jacobian --ff {args.ff} -o J.<format> on {os.cpu_count()} cores: "
              f"best (median) of {args.reps} runs, .mtx once")
        print(f"{'':12}{'compute s':>16}{'write s':>16}{'rest s':>16}{'cpu s':>16}"
              f"{'size MB':>9}{'read s':>8}")
        matrices = {}
        plain_times = []
        formats = [("npz", scipy.sparse.load_npz, args.reps)]
        if not args.no_mtx:
            formats.append(("mtx", lambda f: scipy.io.mmread(f).tocsr(), 1))
        for name, reader, reps in formats:
            out = folder / f"J.{name}"
            runs = []
            for _ in range(reps):
                runs.append(run_cli(cli, args.ff, str(out), folder))
                if name == "npz":  # a plain write of as many bytes, under the same load
                    block = np.ones(os.path.getsize(out), dtype=np.uint8)
                    plain_times.append(timed(lambda: (folder / "plain.bin").write_bytes(block))[0])
            compute = [c for _, c, _, _ in runs]
            write = [w for _, _, w, _ in runs if w is not None] or [float("nan")]
            rest = [w - c for w, c, _, _ in runs]
            cpu = [u for _, _, _, u in runs]
            read, matrices[name] = timed(lambda: reader(str(out)))
            print(f"J.{name:10}" + "".join(
                f"{min(v):8.3f} ({statistics.median(v):5.3f})" for v in (compute, write, rest, cpu))
                + f"{os.path.getsize(out) / 1e6:9.1f}{read:8.2f}")
        print(f"{'plain write':12}{'':16}"
              f"{min(plain_times):8.3f} ({statistics.median(plain_times):5.3f})")
        if "mtx" in matrices:
            a, b = matrices["npz"], matrices["mtx"]
            same = (a.shape == b.shape and np.array_equal(a.indptr, b.indptr)
                    and np.array_equal(a.indices, b.indices) and np.array_equal(a.data, b.data))
            print("same matrix in .npz and .mtx:", same)
            if not same:
                sys.exit(1)


if __name__ == "__main__":
    main()
