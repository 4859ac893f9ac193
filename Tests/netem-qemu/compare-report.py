#!/usr/bin/env python3
"""Turns compare.sh's raw samples (DIR/raw.csv) into DIR/report.md, report.json and report.csv.

Each cell's value is the median of its runs. ratio = linkcond / real, so a ratio above 1 means linkcond is slower
(times) or faster (bulk Mbit/s). Targets, from issue 10: time to last byte within ±20 % of real, bulk throughput
within ±25 %; the request after idle counts as a time to last byte.
An entry with at least 10 runs a side also gets a 90 % bootstrap interval of its ratio of medians: a lossy link's
runs are bimodal (a loss early in slow start or not), so 30 runs' median moves by more than the target from one
set of runs to the next. Outside the target with an interval that reaches into it is "undecided": these runs cannot
tell, more can. Outside with the whole interval outside is a miss.
Usage: compare-report.py DIR "NOTE"
"""
import csv
import json
import random
import statistics
import sys
from collections import defaultdict

TRANSFERS = [
    ("fetch_10000", "10 KB", "ms", 0.20),
    ("fetch_100000", "100 KB", "ms", 0.20),
    ("fetch_1000000", "1 MB", "ms", 0.20),
    ("idle_100000", "100 KB after 2 s idle", "ms", 0.20),
    ("bulk_mbit", "bulk", "Mbit/s", 0.25),
]
LATENCY = [("idle", "idle"), ("loaded_p50", "loaded p50"), ("loaded_p90", "loaded p90"), ("loaded_mbit", "download Mbit/s")]


BOOTSTRAP_ROUNDS = 2000
MIN_RUNS_FOR_INTERVAL = 10


def ratio_interval(real, link, seed):
    """The 5th and 95th percentiles of median(link) / median(real) over bootstrap resamples of both sides."""
    generator = random.Random(seed)
    ratios = sorted(statistics.median(generator.choices(link, k=len(link)))
                    / statistics.median(generator.choices(real, k=len(real))) for _ in range(BOOTSTRAP_ROUNDS))
    return ratios[int(0.05 * BOOTSTRAP_ROUNDS)], ratios[int(0.95 * BOOTSTRAP_ROUNDS) - 1]


def verdict_of(ratio, interval, tolerance):
    if abs(ratio - 1) <= tolerance:
        return "pass"
    if interval is not None and interval[0] <= 1 + tolerance and interval[1] >= 1 - tolerance:
        return "undecided"
    return "fail"


def number(text):
    value = float(text)
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def main():
    directory, note = sys.argv[1], sys.argv[2]
    samples = defaultdict(list)
    with open(f"{directory}/raw.csv") as raw:
        for row in csv.DictReader(raw):
            if row["value"] in ("", "nan"):
                continue
            key = (row["side"], row["rate_mbit"], row["rtt_ms"], row["loss_pct"], row["metric"])
            samples[key].append(float(row["value"]))
    median = {key: statistics.median(values) for key, values in samples.items()}
    runs = {key: len(values) for key, values in samples.items()}

    cells = sorted({(k[1], k[2], k[3]) for k in median if not k[4].startswith("latency:")},
                   key=lambda c: tuple(float(x) for x in c))
    rows = []
    for rate, rtt, loss in cells:
        for metric, label, unit, tolerance in TRANSFERS:
            real = median.get(("real", rate, rtt, loss, metric))
            link = median.get(("linkcond", rate, rtt, loss, metric))
            ratio = link / real if real and link is not None else None
            shaped = rate != "0"
            real_samples = samples.get(("real", rate, rtt, loss, metric), [])
            link_samples = samples.get(("linkcond", rate, rtt, loss, metric), [])
            interval = None
            if ratio is not None and min(len(real_samples), len(link_samples)) >= MIN_RUNS_FOR_INTERVAL:
                interval = ratio_interval(real_samples, link_samples, seed=f"{rate} {rtt} {loss} {metric}")
            verdict = "" if ratio is None or not shaped else verdict_of(ratio, interval, tolerance)
            rows.append({
                "rate_mbit": rate, "rtt_ms": rtt, "loss_pct": loss, "metric": metric, "label": label, "unit": unit,
                "real": real, "linkcond": link, "ratio": ratio, "tolerance": tolerance, "verdict": verdict,
                "ratio_interval_low": interval[0] if interval else None, "ratio_interval_high": interval[1] if interval else None,
                "runs_real": runs.get(("real", rate, rtt, loss, metric), 0),
                "runs_linkcond": runs.get(("linkcond", rate, rtt, loss, metric), 0),
                "real_ping_ms": median.get(("real", rate, rtt, loss, "ping")),
            })
    latency = {}
    for (side, rate, rtt, _, metric), value in median.items():
        if metric.startswith("latency:"):
            _, queue, statistic = metric.split(":")
            entry = latency.setdefault((queue, side), {"queue": queue, "side": side, "rate_mbit": rate, "rtt_ms": rtt})
            entry[statistic] = value
    latency = [latency[key] for key in sorted(latency, key=lambda k: (k[0] != "fifo", k[0], k[1] != "real"))]

    with open(f"{directory}/report.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0].keys()) if rows else ["metric"])
        writer.writeheader()
        writer.writerows(rows)
    with open(f"{directory}/report.json", "w") as out:
        json.dump({"note": note, "cells": rows, "working_latency": latency}, out, indent=1)

    judged = [r for r in rows if r["verdict"]]
    passed = sum(r["verdict"] == "pass" for r in judged)
    undecided = sum(r["verdict"] == "undecided" for r in judged)
    excess = sorted(r["real_ping_ms"] - float(r["rtt_ms"]) for r in rows
                    if r["metric"] == "fetch_10000" and r["rate_mbit"] != "0" and r["real_ping_ms"] is not None)
    floor = next((r["real_ping_ms"] for r in rows if r["rate_mbit"] == "0" and r["real_ping_ms"] is not None), None)
    sanity = ""
    if excess:
        sanity = (f"Guest timing: ICMP ping exceeds the configured RTT by {statistics.median(excess):.1f} ms median "
                  f"({excess[0]:.1f} to {excess[-1]:.1f} ms; a 98-byte ping frame takes 1.5 ms to serialise both ways "
                  f"at 1 Mbit/s)" + (f"; unshaped, a ping takes {floor:.1f} ms." if floor is not None else "."))
    lines = [f"Real Linux TCP (CUBIC over netem, qemu) vs linkcond, same client and server ({note}).",
             "Each entry: real / linkcond (ratio linkcond ÷ real), ✓ within target (time ±20 %, bulk ±25 %), ✗ outside, "
             "≈ outside but undecided (with 10 or more runs a side, the 90 % bootstrap interval of the ratio reaches "
             "into the target).",
             f"{passed} of {len(judged)} shaped entries within target"
             + (f", {undecided} undecided." if undecided else "."), sanity, ""]
    header = "| Mbit/s | RTT ms | loss % | guest ping ms | " + " | ".join(f"{label} ({unit})" for _, label, unit, _ in TRANSFERS) + " |"
    lines += [header, "|" + "---|" * (4 + len(TRANSFERS))]
    for rate, rtt, loss in cells:
        entries = [r for r in rows if (r["rate_mbit"], r["rtt_ms"], r["loss_pct"]) == (rate, rtt, loss)]
        ping = entries[0]["real_ping_ms"]
        name = ("unshaped floor", "–", "–") if rate == "0" else (rate, rtt, loss)
        text = []
        for r in entries:
            if r["real"] is None or r["linkcond"] is None:
                text.append("–")
                continue
            mark = {"pass": " ✓", "fail": " ✗", "undecided": " ≈", "": ""}[r["verdict"]]
            text.append(f"{number(r['real'])} / {number(r['linkcond'])} ({r['ratio']:.2f}{mark})")
        lines.append(f"| {name[0]} | {name[1]} | {name[2]} | {number(ping) if ping is not None else '–'} | " + " | ".join(text) + " |")
    spread = [(cell, metric, label, unit) for cell in cells if cell[0] != "0" for metric, label, unit, _ in TRANSFERS
              if min(runs.get((side,) + cell + (metric,), 0) for side in ("real", "linkcond")) >= 10]
    if spread:
        lines += ["", "Spread, for entries with at least 10 runs a side: on a lossy link one run differs from the next "
                  "by more than the targets on both sides, so compare the quantiles, not only the medians.", "",
                  "| Mbit/s | RTT ms | loss % | transfer | side | runs | p10 | p25 | p50 | p75 | p90 | ratio of medians (90 % interval) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for (rate, rtt, loss), metric, label, unit in spread:
            row = next(r for r in rows if (r["rate_mbit"], r["rtt_ms"], r["loss_pct"], r["metric"]) == (rate, rtt, loss, metric))
            for side in ("real", "linkcond"):
                values = sorted(samples[(side, rate, rtt, loss, metric)])
                quantiles = [values[min(len(values) - 1, int(p * len(values)))] for p in (0.1, 0.25, 0.5, 0.75, 0.9)]
                ratio = (f"{row['ratio']:.2f} ({row['ratio_interval_low']:.2f}–{row['ratio_interval_high']:.2f})"
                         if side == "linkcond" and row["ratio_interval_low"] is not None else "")
                lines.append(f"| {rate} | {rtt} | {loss} | {label} ({unit}) | {side} | {len(values)} | "
                             + " | ".join(number(q) for q in quantiles) + f" | {ratio} |")
    if latency:
        lines += ["", "Working latency: 1-byte request/response round trips on a second connection while a download "
                  "fills the link (ms; loaded = after the first quarter of the run).", "",
                  "| queue | side | Mbit/s | RTT ms | idle ms | loaded p50 ms | loaded p90 ms | download Mbit/s |", "|---|---|---|---|---|---|---|---|"]
        for e in latency:
            values = " | ".join(number(e[m]) if m in e else "–" for m, _ in LATENCY)
            lines.append(f"| {e['queue']} | {e['side']} | {e['rate_mbit']} | {e['rtt_ms']} | {values} |")
    with open(f"{directory}/report.md", "w") as out:
        out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
