#!/usr/bin/python3
"""Draws training steps of a devmap trace (coordinator --trace FILE) as a PNG:
one row per track (the coordinator, then each worker), each slice a bar
coloured by kind, the micro-batch written on op slices, arrows from each
send to its receive. The picture in docs/TRACING.md is made with it.

Usage: bench/trace_picture.py TRACE OUT.png [--steps A:B]
Needs matplotlib (Debian's python3-matplotlib, for /usr/bin/python3).
"""

import argparse
import json

from require import require

require("matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

COLOURS = {
    "forward": "#4e79a7",
    "backward": "#f28e2b",
    "sum": "#59a14f",
    "optimizer": "#e15759",
    "send": "#76b7b2",
    "recv": "#d3d3d3",
    "slot_wait": "#bab0ac",
    "feed": "#9c755f",
    "wait": "#e8e8e8",
}
LABELS = {
    "forward": "forward",
    "backward": "backward",
    "sum": "gradient sum",
    "optimizer": "optimizer",
    "send": "send",
    "recv": "receive (wait)",
    "slot_wait": "wait for a slot",
    "feed": "coordinator: feed",
    "wait": "coordinator: wait",
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("out")
    p.add_argument("--steps", default="2:2", help="A:B, training steps to draw (default 2:2)")
    args = p.parse_args()
    a, b = (int(x) for x in args.steps.split(":"))
    with open(args.trace, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    chosen = [
        e for e in events
        if e["ph"] == "X" and e["args"].get("phase") == "train" and a <= e["args"]["step"] <= b
    ]
    if not chosen:
        raise SystemExit(f"{args.trace}: no training steps {a}..{b}")
    t0 = min(e["ts"] for e in chosen if e["cat"] != "feed")
    pids = sorted(names)
    row = {pid: len(pids) - 1 - i for i, pid in enumerate(pids)}
    fig, ax = plt.subplots(figsize=(10, 0.75 * len(pids) + 1.2), dpi=90)
    sends, recvs = {}, {}
    for e in chosen:
        if e["cat"] == "step":
            continue
        x = (e["ts"] - t0) / 1e3
        w = e["dur"] / 1e3
        y = row[e["pid"]]
        ax.barh(y, w, left=x, height=0.6, color=COLOURS.get(e["cat"], "#cccccc"), edgecolor="none")
        m = e["args"].get("micro_batch")
        if e["cat"] in ("forward", "backward") and m is not None and w > 1.2:
            ax.text(x + w / 2, y, str(m), ha="center", va="center", fontsize=7, color="white")
        if e["cat"] in ("send", "recv"):
            key = (e["name"].split(" ", 1)[1], e["args"]["step"], m)
            (sends if e["cat"] == "send" else recvs).setdefault(key, []).append((x + w, y, x + w))
    for key, ends in recvs.items():
        for k, (xr, yr, _) in enumerate(ends):
            if key in sends and k < len(sends[key]):
                xs, ys, _ = sends[key][k]
                ax.annotate("", xy=(xr, yr), xytext=(xs, ys),
                            arrowprops=dict(arrowstyle="->", color="#555555", lw=0.6, alpha=0.7))
    ax.set_yticks([row[p] for p in pids])
    ax.set_yticklabels([names[p] for p in pids])
    ax.set_xlabel("ms from the first worker's start of step %d" % a)
    title = f"training step {a}" if a == b else f"training steps {a}-{b}"
    ax.set_title(f"{title}: micro-batch number on each op slice, arrows from send to receive", fontsize=10)
    used = {e["cat"] for e in chosen if e["cat"] in COLOURS}
    ax.legend(handles=[Patch(color=COLOURS[c], label=LABELS[c]) for c in COLOURS if c in used],
              loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=5, fontsize=8, frameon=False)
    # The feed of a step happens while the step before it runs: clipped.
    span = max((e["ts"] + e["dur"] - t0) / 1e3 for e in chosen)
    ax.set_xlim(-0.01 * span, 1.01 * span)
    fig.tight_layout()
    fig.savefig(args.out)


if __name__ == "__main__":
    main()
