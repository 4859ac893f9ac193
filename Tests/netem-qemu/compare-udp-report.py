#!/usr/bin/env python3
"""Turns compare.sh --udp's raw samples (DIR/raw.csv) into DIR/report.md and report.csv.

Each run is one flood of 1200-byte datagrams at LOAD times the cell's rate; its delivered rate is the payload that
arrived after the first datagram, over the span from the first arrival to the last. Both sides count frames (netem's
rate; linkcond's `bandwidth.counts = frames`), so the link carries R x 1200/1242 of payload. The two columns of
predictions say what each order of loss and rate delivers: loss drawn as a datagram enters (netem's
`netem_enqueue`) thins the offered flow before the rate, so an overloaded link stays full; loss drawn after the
rate thins what the full link delivered.
Usage: compare-udp-report.py DIR "NOTE"
"""
import csv
import statistics
import sys
from collections import defaultdict

DATAGRAM_BYTES = 1200
FRAME_BYTES = DATAGRAM_BYTES + 42


HEADER = ["| Mbit/s | RTT ms | loss % | offered × rate | real | linkcond | ratio | loss at entry predicts "
          "| loss after the rate predicts | real arrived | linkcond arrived | n |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
COLUMNS = ["rate_mbit", "rtt_ms", "loss_pct", "load", "real_mbit", "linkcond_mbit", "ratio", "entry_prediction_mbit",
           "departure_prediction_mbit", "real_arrived", "linkcond_arrived", "runs"]


def median(values):
    return statistics.median(values) if values else float("nan")


def rows_of(raw_path):
    """One row per cell and load, in COLUMNS' order, from a raw.csv of UDP floods."""
    runs = defaultdict(dict)
    with open(raw_path) as raw:
        for row in csv.DictReader(raw):
            metric, load = row["metric"].split(":")
            key = (row["side"], float(row["rate_mbit"]), float(row["rtt_ms"]), float(row["loss_pct"]), float(load))
            runs[key, row["run"]][metric] = float(row["value"])
    delivered = defaultdict(list)
    arrived = defaultdict(list)
    for (key, _), values in runs.items():
        if {"udp_sent", "udp_received", "udp_span_ms"} <= values.keys() and values["udp_span_ms"] > 0:
            bits = (values["udp_received"] - 1) * DATAGRAM_BYTES * 8
            delivered[key].append(bits / values["udp_span_ms"] / 1000)
            arrived[key].append(values["udp_received"] / values["udp_sent"])
    rows = []
    for rate, rtt, loss, load in sorted({key[1:] for key in delivered}):
        capacity = rate * DATAGRAM_BYTES / FRAME_BYTES
        offered = rate * load
        kept = 1 - loss / 100
        real = delivered.get(("real", rate, rtt, loss, load), [])
        model = delivered.get(("linkcond", rate, rtt, loss, load), [])
        ratio = median(model) / median(real) if real and model else float("nan")
        rows.append([rate, rtt, loss, load, median(real), median(model), ratio, min(offered * kept, capacity),
                     min(offered, capacity) * kept, median(arrived.get(("real", rate, rtt, loss, load), [])),
                     median(arrived.get(("linkcond", rate, rtt, loss, load), [])), min(len(real), len(model))])
    return rows


def markdown_table(rows):
    """HEADER and one markdown line per row of rows_of."""
    return HEADER + [f"| {rate:g} | {rtt:g} | {loss:g} | {load:g} | {real:.2f} | {model:.2f} | {ratio:.3f} | "
                     f"{entry:.2f} | {departure:.2f} | {100 * real_arrived:.1f} % | {100 * model_arrived:.1f} % | {n} |"
                     for rate, rtt, loss, load, real, model, ratio, entry, departure, real_arrived, model_arrived, n
                     in rows]


def main() -> None:
    directory, note = sys.argv[1], sys.argv[2]
    rows = rows_of(f"{directory}/raw.csv")
    lines = [f"UDP floods through the link: {note}.", "",
             "Delivered payload Mbit/s (median of the runs; n runs a side), the share of sent datagrams that arrived, "
             "and what each order of loss and rate predicts.", ""] + markdown_table(rows)
    with open(f"{directory}/report.md", "w") as out:
        out.write("\n".join(lines) + "\n")
    with open(f"{directory}/report.csv", "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        writer.writerows(rows)


if __name__ == "__main__":
    main()
