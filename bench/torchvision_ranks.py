#!/usr/bin/python3
"""Certified ranks of torchvision's ReLU networks at ImageNet size (docs/rank.md#table).

Each model is built as ``torch_recipes.torchvision_model`` does (random init under
``torch.manual_seed(seed)``, random BatchNorm statistics, float64, eval mode), imported with
``pathlift.from_torch`` at 3x224x224 (inception_v3: 3x299x299) and ranked with
``pathlift.rank(net, enumerate=False)``: rank(B) = d - h_sym by the symmetry theorem (h_sym
computed on the layer graph, never unrolled), rank(dPhi) at the model's weights by the diagonal
identity (no weight is 0). The import and the rank are timed separately; the table gives d, h
(hidden nodes of the unrolled DAG), h_sym, rank(B), rank(dPhi), the status, and, for each model,
h_sym at 3x64x64 too (equal when the smaller input keeps every kernel tap in use).

Usage::

    PYTHONPATH=build/python /usr/bin/python3 bench/torchvision_ranks.py \\
        [--models resnet18,resnet34] [--threads 2] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

BENCH = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

DEFAULT = ["resnet18", "resnet34", "resnet50", "vgg11", "densenet121", "inception_v3",
           "googlenet", "squeezenet1_1", "shufflenet_v2_x0_5", "mnasnet0_5"]
EXTRA = {"googlenet": {"aux_logits": False, "init_weights": False},
         "inception_v3": {"aux_logits": False, "init_weights": False}}
SHAPES = {"inception_v3": (3, 299, 299)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(DEFAULT))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--markdown", type=pathlib.Path)
    args = ap.parse_args()
    import pathlift
    from torch_recipes import torchvision_model

    rows = ["| model | input | d | h | h_sym | rank(B) = rank(dPhi) | status | h_sym at 64 | "
            "import | rank |", "|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(rows), flush=True)
    for name in args.models.split(","):
        model = torchvision_model(name, args.seed, **EXTRA.get(name, {}))
        shape = SHAPES.get(name, (3, 224, 224))
        t = time.perf_counter()
        net = pathlift.from_torch(model, input_shape=shape)
        t_import = time.perf_counter() - t
        t = time.perf_counter()
        rep = pathlift.rank(net, enumerate=False, threads=args.threads)
        t_rank = time.perf_counter() - t
        assert rep["rank_B"] == rep["expected"] and rep["rank_J_exact"] == rep["expected"]
        try:
            small = pathlift.rescaling_symmetry_dimension(
                pathlift.from_torch(model, input_shape=(3, 64, 64) if name != "inception_v3"
                                    else (3, 107, 107))).h_sym
        except Exception as e:  # a model refusing the smaller input
            small = f"({type(e).__name__})"
        row = (f"| {name} | {'x'.join(map(str, shape))} | {rep['d']:,} | {rep['h']:,} | "
               f"{rep['h_sym']:,} | {rep['rank_B']:,} | {rep['status']} | "
               f"{small if isinstance(small, str) else format(small, ',')} | "
               f"{t_import:.1f} s | {t_rank:.2f} s |")
        rows.append(row)
        print(row, flush=True)
    if args.markdown:
        args.markdown.write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
