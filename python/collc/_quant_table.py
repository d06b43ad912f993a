"""The options, paths and tables of `python -m collc.bench_quant` (AllReduce + residual add +
RMSNorm + quantization, fused and not): what it runs and how it reports, without torch, so that
they are tested on a machine without it."""

import argparse
import csv
import io

DEFAULT_HIDDEN = (4096, 5120, 8192)
DEFAULT_TOKENS = (1, 8, 32, 64, 128)
# The ways one step is made, in the table's order: (key, what it runs).
PATHS = (
    ("fused", "collc: fused_add_rms_norm_quant, one kernel"),
    ("nccl", "NCCL all_reduce (torch.distributed) + add + rms_norm + quantization (torch)"),
    ("collc_ar", "collc all_reduce + add + rms_norm + quantization (torch)"),
    ("collc_norm", "collc fused_add_rms_norm (quant off) + quantization (torch)"),
    ("symm", "torch symmetric memory one_shot_all_reduce + add + rms_norm + quantization (torch)"),
)
PATH_KEYS = tuple(key for key, _ in PATHS)
# The ratios' denominator: the unfused step engines run.
BASELINE = "nccl"
SHARED_WARNING = ("RANKS SHARE ONE GPU: a smoke test of correctness and of the benchmark itself. "
                  "Its timings are NOT speeds (the ranks' kernels take turns on one GPU); compare "
                  "nothing with them.")


def int_list(text):
    """'4096,8192' -> (4096, 8192); every entry a positive integer."""
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got "
                                         f"{text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m collc.bench_quant",
        description="AllReduce + residual add + RMSNorm + quantization: collc's fused kernel "
                    "against NCCL + torch ops, collc's unfused parts and torch's symmetric memory, "
                    "one process per rank, in CUDA graphs.")
    parser.add_argument("--hidden", type=int_list, default=DEFAULT_HIDDEN,
                        help="row lengths, comma-separated (default 4096,5120,8192)")
    parser.add_argument("--tokens", type=int_list, default=DEFAULT_TOKENS,
                        help="rows per call, comma-separated (default 1,8,32,64,128)")
    parser.add_argument("--dtype", choices=("bf16", "f16"), default="bf16")
    parser.add_argument("--quant", default="all",
                        help="quantizations, comma-separated, or 'all': those the installed collc "
                             "offers (fp8 always; fp8_per_token and nvfp4 where offered)")
    parser.add_argument("--paths", default=",".join(PATH_KEYS),
                        help=f"paths to run, comma-separated (default all: {','.join(PATH_KEYS)})")
    parser.add_argument("--calls", type=int, default=20, help="calls captured per graph")
    parser.add_argument("--iters", type=int, default=20, help="replays per timed round")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds; the median is kept")
    parser.add_argument("--scale", type=float, default=0.01, help="the static FP8 scale")
    parser.add_argument("--global-scale", type=float, default=600.0,
                        help="NVFP4's global scale (default 600: blocks whose amax is over "
                             "448 * 6 / 600 take the largest block scale)")
    parser.add_argument("--compile-epilogue", action="store_true",
                        help="the torch epilogue (add, rms_norm, quantization) through "
                             "torch.compile instead of eager torch ops")
    parser.add_argument("--smoke", action="store_true",
                        help="a short run for ranks that share one GPU: correctness and the "
                             "benchmark's own workings, timings that are not speeds")
    parser.add_argument("--csv", help="write the results here as CSV (rank 0)")
    parser.add_argument("--markdown", help="write the table here as markdown (rank 0)")
    return parser


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    args.paths = tuple(p for p in args.paths.split(",") if p)
    unknown = [p for p in args.paths if p not in PATH_KEYS]
    if unknown or not args.paths:
        parser.error(f"--paths: unknown {', '.join(unknown) or '(none given)'}; "
                     f"known: {', '.join(PATH_KEYS)}")
    for name in ("calls", "iters", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.scale <= 0:
        parser.error("--scale must be positive")
    if args.global_scale <= 0:
        parser.error("--global-scale must be positive")
    if args.smoke:
        # Few replays: on a shared GPU each flag exchange waits for a time slice.
        args.calls, args.iters, args.rounds = min(args.calls, 4), min(args.iters, 4), min(
            args.rounds, 3)
    return args


def chosen_quants(asked, offered):
    """The quantizations to run and, for each one asked for but not offered, why it is not:
    ([names], {name: reason})."""
    if asked == "all":
        return list(offered), {}
    names = [q for q in asked.split(",") if q]
    run = [q for q in names if q in offered]
    missing = {q: f"the installed collc does not offer quant={q!r} (it offers "
                  f"{', '.join(offered)})" for q in names if q not in offered}
    return run, missing


class Results:
    """Microseconds per call, or why a path did not run, per (quant, hidden, tokens, path)."""

    def __init__(self):
        self.us = {}
        self.skipped = {}

    def put(self, quant, hidden, tokens, path, us):
        self.us[(quant, hidden, tokens, path)] = us

    def skip(self, quant, hidden, tokens, path, reason):
        self.skipped[(quant, hidden, tokens, path)] = reason

    def shapes(self):
        keys = set(self.us) | set(self.skipped)
        return sorted({k[:3] for k in keys}, key=lambda s: (s[0], s[1], s[2]))

    def ratio(self, quant, hidden, tokens, path):
        """path's time over the baseline's (below 1: faster than the baseline), or None."""
        us = self.us.get((quant, hidden, tokens, path))
        base = self.us.get((quant, hidden, tokens, BASELINE))
        if us is None or not base:
            return None
        return us / base

    def reasons(self):
        """Each distinct reason a path was skipped, with the paths and quants it covers."""
        out = {}
        for (quant, _, _, path), reason in self.skipped.items():
            out.setdefault(reason, set()).add(f"{path} ({quant})")
        return out


def _cell(value, digits):
    return "—" if value is None else f"{value:.{digits}f}"


def markdown(results, paths, title, notes=()):
    """The table: one row per (quant, hidden, tokens); us per call of each path, then each path's
    ratio to the baseline; a path that did not run shows a dash, its reason listed below."""
    ratio_paths = [p for p in paths if p != BASELINE]
    head = (["quant", "hidden", "tokens"] + [f"{p} µs" for p in paths] +
            [f"{p} / {BASELINE}" for p in ratio_paths])
    lines = [f"### {title}", ""]
    lines += [f"> {note}" for note in notes]
    if notes:
        lines.append("")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(" --- " for _ in head) + "|")
    for quant, hidden, tokens in results.shapes():
        cells = [quant, str(hidden), str(tokens)]
        cells += [_cell(results.us.get((quant, hidden, tokens, p)), 2) for p in paths]
        cells += [_cell(results.ratio(quant, hidden, tokens, p), 3) for p in ratio_paths]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Paths: " + "; ".join(f"`{k}`: {what}" for k, what in PATHS if k in paths) + ".")
    for reason, where in sorted(results.reasons().items()):
        lines.append(f"- not run, {', '.join(sorted(where))}: {reason}")
    return "\n".join(lines) + "\n"


def csv_text(results, paths, meta):
    """One line per (quant, hidden, tokens, path): us per call (empty where skipped), the ratio to
    the baseline, the reason it was skipped, and `meta`'s columns (world size, dtype, shared)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = list(meta)
    writer.writerow(["quant", "hidden", "tokens", "path", "us_per_call", f"ratio_to_{BASELINE}",
                     "skipped"] + names)
    for quant, hidden, tokens in results.shapes():
        for path in paths:
            key = (quant, hidden, tokens, path)
            us = results.us.get(key)
            ratio = results.ratio(*key)
            writer.writerow([quant, hidden, tokens, path, "" if us is None else f"{us:.3f}",
                             "" if ratio is None else f"{ratio:.4f}",
                             results.skipped.get(key, "")] + [meta[n] for n in names])
    return out.getvalue()
