#!/usr/bin/env python3
"""Plots what `collc bench --json FILE` wrote: per-op latency against message size on log axes, one
line per collc variant and NCCL's two (plain buffers, symmetric windows) per NCCL collective.

    scripts/plot-bench.py BENCH.json OUT.png

`collc bench --plot OUT.png` runs this very script (it travels inside the tool). Exit status: 0 the
plot was written, 2 bad arguments or input, 3 matplotlib is not installed.
"""
import json
import sys


def size_label(nbytes):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return str(nbytes)


def series(points):
    """(xs, ys) of the points that have a time, sorted by size."""
    points = sorted((x, y) for x, y in points if y is not None)
    return [x for x, _ in points], [y for _, y in points]


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    source, target = argv[1], argv[2]
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display on the GPU machine
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError as error:
        print(f"plot-bench: matplotlib is not installed for {sys.executable} ({error}); install it "
              f"(python3 -m pip install matplotlib, or apt-get install python3-matplotlib) or plot "
              f"{source} on another machine", file=sys.stderr)
        return 3
    try:
        with open(source) as f:
            data = json.load(f)
        header, rows, nccl = data["header"], data["rows"], data["nccl"]
    except (OSError, ValueError, KeyError) as error:
        print(f"plot-bench: cannot read {source}: {error}", file=sys.stderr)
        return 2

    variants = {}  # variant -> [(bytes, us)], in the order the benchmark ran them
    for row in rows:
        variants.setdefault(row["variant"], []).append((row["bytes"], row["us_per_op"]))
    fig, ax = plt.subplots(figsize=(10, 6.5))
    sizes = set()
    for variant, points in variants.items():
        xs, ys = series(points)
        sizes.update(xs)
        if xs:
            ax.plot(xs, ys, marker="o", markersize=4, linewidth=1.5, label=f"collc {variant}")
    # NCCL's same collective per kind (older files have no "collective": AllReduce).
    collectives = {}  # NCCL call -> its points, in the order the benchmark ran them
    for point in nccl:
        collectives.setdefault(point.get("collective", "ncclAllReduce"), []).append(point)
    for index, (call, points) in enumerate(collectives.items()):
        name = "NCCL" if len(collectives) == 1 else f"NCCL {call}"
        # Dark colours, apart from the collc variants' default cycle.
        color = ("black", "dimgray", "saddlebrown", "darkred", "navy", "darkgreen")[index % 6]
        for key, style, label in (("plain_us", "s--", f"{name}, plain buffers"),
                                  ("symmetric_us", "^:", f"{name}, symmetric windows")):
            xs, ys = series((p["bytes"], p.get(key)) for p in points)
            sizes.update(xs)
            if xs:
                ax.plot(xs, ys, style, color=color, markersize=5, linewidth=1.5, label=label)
    if not sizes:
        print(f"plot-bench: {source} holds no timed result to plot", file=sys.stderr)
        return 2

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    # Plain numbers on the time axis; between decades only 2, 3 and 5 x 10^k, to stay legible.
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
        lambda y, _: f"{y:g}" if f"{y:.0e}"[0] in "235" else ""))
    ticks = sorted(sizes)
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks], rotation=45)
    ax.set_xlabel("message size (bytes per rank)")
    ax.set_ylabel("µs per operation (CUDA graph, median replay)")
    ax.set_title(f"{header['kind']} {header['dtype']} {header['op']}, {header['nranks']} ranks, "
                 f"{header['gpu']} ({header['processes']})\n"
                 f"collc {header['collc_version']} ({header['git_commit']}), "
                 f"NCCL {header['nccl_version']}, {header['date']}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(target, dpi=120)
    print(f"plot-bench: wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
