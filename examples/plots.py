"""Draw the figures of docs/plots.md with pathlift.plot.

    PYTHONPATH=build/python /usr/bin/python3 examples/plots.py [--out-dir docs/figures]

writes, in --out-dir:
- plot_lengths.png: how many of torchvision's resnet18's 10^54 paths (at 3x32x32) have each
  length, counted on its layer graph without unrolling it (needs torch and torchvision);
- plot_spectrum.png: the path kernel's eigenvalues for ff:5,16,16,2 (d = 402), the 10 largest
  by Lanczos beside all of them, which drop to rounding after d - h = 370;
- plot_paths.png: every path of the paper's Figure 1 network and of ff:3,5,4,2 coloured by
  |Phi_p|, with weights pathlift.normal_weights(d, 1).
"""
import argparse
import pathlib

import pathlift
import pathlift.plot
from _figures import saved_figure  # switches matplotlib to Agg (files only) at the first figure

DPI = 100


def lengths_figure(path):
    import torchvision  # type: ignore[import]  # Debian's ships no type information

    model = torchvision.models.resnet18().eval()
    net = pathlift.from_torch(model, input_shape=(3, 32, 32))  # a LayerNetwork: not unrolled
    with saved_figure(path, figsize=(7, 4), dpi=DPI) as (fig, ax):
        pathlift.plot.length_histogram(net, ax=ax)
        ax.set_title(f"resnet18 at 3x32x32: {ax.get_title()}")


def spectrum_figure(path):
    net = pathlift.builtin_network("ff:5,16,16,2")
    theta = pathlift.normal_weights(net.d, 0)
    with saved_figure(path, figsize=(7, 4), dpi=DPI) as (fig, ax):
        pathlift.plot.kernel_spectrum(net, theta, k=10, ax=ax, full=True)
        ax.set_title(f"ff:5,16,16,2: {ax.get_title()}")


def paths_figure(path):
    with saved_figure(path, 1, 2, figsize=(11, 4.4), width_ratios=(2, 3), dpi=DPI) as (fig, axes):
        for ax, name in zip(axes, ("fig1", "ff:3,5,4,2")):
            net = pathlift.builtin_network(name)
            pathlift.plot.network_paths(net, pathlift.normal_weights(net.d, 1), ax=ax)
            ax.set_title(f"{name}: {ax.get_title()}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("docs/figures"),
                        help="where the PNG files go (default: docs/figures)")
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, draw in (("plot_lengths.png", lengths_figure),
                       ("plot_spectrum.png", spectrum_figure),
                       ("plot_paths.png", paths_figure)):
        draw(args.out_dir / name)
        print(args.out_dir / name)


if __name__ == "__main__":
    main()
