"""The command line the bench scripts share: --threads, their own integer options, seed 0."""
import argparse

import torch


def parse_args(doc: str, torch_threads: bool = True, **ints: int) -> argparse.Namespace:
    """Parses a bench script's command line (its description: the first line of `doc`).

    ``--threads N`` (0: the default count) sets torch's threads when ``torch_threads`` (a
    script that passes N to pathlift says False); each keyword is an integer option
    ``--name`` with that default. Seeds torch with 0 before the script draws anything.
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0)
    for name, default in ints.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    args = parser.parse_args()
    if torch_threads and args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    return args
