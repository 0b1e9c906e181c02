#!/usr/bin/env python3
"""Reads a devmap trace (coordinator --trace FILE) and reports, per training step:

- each device's busy time and bubble (idle) fraction. Busy is the device's
  STEP slice less its waits for other devices (receive slices and waits for a
  free slot): the definition of coordinator/telemetry/device_busy.h. The step's time is
  from the first worker's STEP slice start to the last one's end;
- the schedule's makespan recomputed from the measured per-action times with
  zero transfer cost: each device replays its actions (op forward/backward,
  gradient sums, optimizer update) in their traced order, each starting when
  the device is free and, for a receive, when the matching send has happened
  (sends and receives themselves take no time); compared with the measured
  step time.

- for a data-parallel run (coordinator "allreduce" slices): each step's
  gradient-sum time across the replicas and the share of it hidden behind
  the backward pass, i.e. the part of the sums that lies before the end of
  the step's last backward slice on this host's workers.

Usage: bench/trace_report.py TRACE [--steps A:B] [--ascii STEP] [--width N]
Standard library only.
"""

import argparse
import collections
import json
import statistics
import sys

WORK = ("forward", "backward", "sum", "optimizer")


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names = {}
    slices = collections.defaultdict(list)  # pid -> X events
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "X":
            slices[e["pid"]].append(e)
    for pid in slices:
        slices[pid].sort(key=lambda e: (e["ts"], -e["dur"]))
    return names, slices


def training_steps(slices):
    """step number -> {pid: [slices of that step on that worker]}"""
    steps = collections.defaultdict(lambda: collections.defaultdict(list))
    for pid, evs in slices.items():
        if pid == 0:
            continue
        for e in evs:
            a = e.get("args", {})
            if a.get("phase") == "train":
                steps[a["step"]][pid].append(e)
    return steps


def busy_of(evs):
    step = sum(e["dur"] for e in evs if e["cat"] == "step")
    waits = sum(e["dur"] for e in evs if e["cat"] in ("recv", "slot_wait"))
    return max(0.0, step - waits)


def gradient_sums(slices, steps):
    """step -> (gradient-sum us, of it before the step's last backward end)"""
    out = {}
    for s, per_pid in steps.items():
        backward_end = max((e["ts"] + e["dur"] for evs in per_pid.values() for e in evs if e["cat"] == "backward"),
                           default=None)
        sums = [e for e in slices.get(0, []) if e["cat"] == "allreduce" and e.get("args", {}).get("step") == s]
        if backward_end is None or not sums:
            continue
        total = sum(e["dur"] for e in sums)
        hidden = sum(max(0.0, min(e["ts"] + e["dur"], backward_end) - e["ts"]) for e in sums)
        out[s] = (total, hidden)
    return out


def window_of(per_pid):
    starts = [e["ts"] for evs in per_pid.values() for e in evs if e["cat"] == "step"]
    ends = [e["ts"] + e["dur"] for evs in per_pid.values() for e in evs if e["cat"] == "step"]
    return (min(starts), max(ends)) if starts else (0.0, 0.0)


def replay(per_pid):
    """Makespan (us) of one step's actions with zero transfer cost."""
    # Each device's actions in traced order: work (duration less nested slot
    # waits), sends (mark a tensor available), receives (wait for it).
    queues = {}
    for pid, evs in per_pid.items():
        acts = []
        waits = [e for e in evs if e["cat"] == "slot_wait"]
        for e in evs:
            c = e["cat"]
            if c in WORK:
                inner = sum(w["dur"] for w in waits if w["ts"] >= e["ts"] and w["ts"] + w["dur"] <= e["ts"] + e["dur"])
                acts.append(("work", max(0.0, e["dur"] - inner), None))
            elif c in ("send", "recv"):
                edge = e["name"].split(" ", 1)[1]
                acts.append((c, 0.0, (edge, e["args"].get("micro_batch", -1))))
        queues[pid] = acts
    sent_count = collections.Counter()
    sent_at = {}  # (edge, micro, k) -> time
    recv_count = collections.defaultdict(collections.Counter)
    clock = {pid: 0.0 for pid in queues}
    pos = {pid: 0 for pid in queues}
    progress = True
    while progress:
        progress = False
        for pid, acts in queues.items():
            while pos[pid] < len(acts):
                kind, dur, key = acts[pos[pid]]
                if kind == "work":
                    clock[pid] += dur
                elif kind == "send":
                    k = sent_count[key]
                    sent_count[key] += 1
                    sent_at[key + (k,)] = clock[pid]
                else:
                    k = recv_count[pid][key]
                    t = sent_at.get(key + (k,))
                    if t is None:
                        break  # its tensor is not sent yet: run another device
                    recv_count[pid][key] += 1
                    clock[pid] = max(clock[pid], t)
                pos[pid] += 1
                progress = True
    if any(pos[p] < len(q) for p, q in queues.items()):
        return None  # a receive without its send (a step cut by the trace range)
    return max(clock.values()) if clock else 0.0


def ascii_timeline(names, per_pid, width):
    start, end = window_of(per_pid)
    span = max(end - start, 1e-9)
    marks = {"forward": "F", "backward": "B", "sum": "+", "optimizer": "O", "send": ">", "recv": ".", "slot_wait": "."}
    lines = []
    for pid in sorted(per_pid):
        row = [" "] * width
        for e in per_pid[pid]:
            m = marks.get(e["cat"])
            if not m:
                continue
            a = int((e["ts"] - start) / span * width)
            b = max(a + 1, int((e["ts"] + e["dur"] - start) / span * width))
            for i in range(max(a, 0), min(b, width)):
                if m == "." and row[i] != " ":
                    continue
                row[i] = m
        lines.append(f"{names.get(pid, pid):>8} |{''.join(row)}|")
    lines.append(f"{'':>8}  0{'':{width - 12}}{span / 1e3:8.2f} ms")
    lines.append("F forward, B backward, + gradient sum, O optimizer, > send, . waiting for a tensor or slot")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--steps", help="A:B, training steps to report (default: all in the trace)")
    p.add_argument("--ascii", type=int, metavar="STEP", help="also draw STEP's timeline as text")
    p.add_argument("--width", type=int, default=100)
    args = p.parse_args()
    names, slices = load(args.trace)
    steps = training_steps(slices)
    if args.steps:
        a, b = (int(x) for x in args.steps.split(":"))
        steps = {s: v for s, v in steps.items() if a <= s <= b}
    if not steps:
        sys.exit(f"{args.trace}: no training steps in this trace")
    devices = sorted({pid for v in steps.values() for pid in v})
    header = "step  step_ms  makespan_ms  ratio  " + "  ".join(f"{names.get(d, d) + ' busy_ms/idle':>20}" for d in devices)
    print(header)
    ratios, totals = [], collections.defaultdict(lambda: [0.0, 0.0])
    for s in sorted(steps):
        per_pid = steps[s]
        start, end = window_of(per_pid)
        wall = end - start
        mk = replay(per_pid)
        cols = []
        for d in devices:
            busy = busy_of(per_pid.get(d, []))
            totals[d][0] += busy
            totals[d][1] += wall
            cols.append(f"{busy / 1e3:11.2f}/{(1 - busy / wall) * 100 if wall > 0 else 0:6.1f}%")
        if mk is not None and mk > 0:
            ratios.append(wall / mk)
        mk_text = f"{mk / 1e3:11.2f}" if mk is not None else f"{'-':>11}"
        ratio_text = f"{wall / mk:5.2f}" if mk else f"{'-':>5}"
        print(f"{s:4d} {wall / 1e3:8.2f} {mk_text}  {ratio_text}  " + "  ".join(f"{c:>20}" for c in cols))
    print()
    for d in devices:
        busy, wall = totals[d]
        print(f"{names.get(d, d)}: busy {busy / 1e6:.3f} s of {wall / 1e6:.3f} s of step time, "
              f"bubble {(1 - busy / wall) * 100 if wall else 0:.1f}%")
    if ratios:
        print(f"measured step time / zero-transfer makespan: median {statistics.median(ratios):.3f} "
              f"over {len(ratios)} steps")
    sums = gradient_sums(slices, steps)
    if sums:
        totals_us = [t for t, _ in sums.values()]
        shares = [h / t for t, h in sums.values() if t > 0]
        print(f"gradient sums across replicas: median {statistics.median(totals_us) / 1e3:.2f} ms per step, "
              f"{statistics.median(shares) * 100:.1f}% of it hidden behind the backward pass "
              f"(median over {len(sums)} steps)")
    if args.ascii is not None:
        if args.ascii not in steps:
            sys.exit(f"step {args.ascii} is not in the trace")
        print()
        print(f"step {args.ascii}:")
        print(ascii_timeline(names, steps[args.ascii], args.width))


if __name__ == "__main__":
    main()
