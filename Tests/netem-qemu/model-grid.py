#!/usr/bin/env python3
"""The TCP model in virtual time against the stored real Linux samples, over the accuracy grid.

The model's side comes from `linkcond-bench --model-grid` (one seed per run, no sockets, no clock), so it is the same
on every machine and takes seconds. The real side pools every stored guest run that measured a cell's input with
the loss drawn per segment on the router (see REAL_FETCHES and REAL_BULK).

Targets (issue 38): each entry's median within ±10 % of real's. For lossy cells with 30 or more real runs (about
three a decile; with 10, p10 and p90 are the extreme runs), the deciles p10…p90 within ±15 % of real's, and where
loss spreads the real times (p90 at least 1.2 × p10) a two-sample Kolmogorov-Smirnov test not rejecting at 5 %.
Where the real times sit at one value, the guest's emulation offset of a millisecond or two alone makes KS reject
however alike the two are, and the deciles say all there is.

A decile is an estimate too: where a few per cent of runs pay a retransmission timeout or a lost handshake, p90 sits
at the edge of that cliff, and a few runs more or fewer past it move p90 by half. So each decile carries a 90 %
interval from its order statistics on both sides (`decile_bounds`); a spread whose deciles leave ±15 % while every
decile's interval still reaches it, and whose KS test passes, is undecided, as a median is: more runs decide it.

Loss is drawn at random on both sides, so a few dozen real runs may have met noticeably fewer or more losses than
the rate gives. For lossy cells whose real runs recorded the server's counters, the report also weights the model's
runs to the real runs' retransmissions (`matched_table`): the model's TCP given the same luck, beside the plain
ratio. It explains an entry; it does not change a verdict.

Usage:
  model-grid.py [--bench PATH] [--runs N] [--cells LIST] [--frames] [--lines TEXT] [--store DIR]
      runs the model, N seeds a cell (1000 unless given), and prints the report (--frames: each cell's rate
      counted in frames, as the guest's netem is given it, instead of payload); --store DIR also writes
      DIR/raw.csv.gz (the transfers), DIR/frames.csv.gz (the same, counting frames), DIR/guest-rtt.csv.gz (the
      same, each cell at the round trip the guest's pings measured, which its emulation lengthens),
      DIR/counters.csv.gz (the counters of the cells the guest recorded counters for, of the first
      STORED_COUNTER_RUNS seeds) and DIR/report.md, the report of what it stored
  model-grid.py --from DIR        the report of a stored run
  model-grid.py --check [--bench PATH]
      the reduced set CI runs on every commit: CHECK_CELLS at 30 runs; exits 1 when an entry that met its target
      with the same seeds in the stored run (Tests/netem-qemu/model-grid/raw.csv.gz) misses it now, naming it.
Python 3 standard library only.
"""
import csv
import gzip
import importlib.util
import math
import os
import statistics
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STORED = os.path.join(HERE, "model-grid")

spec = importlib.util.spec_from_file_location("compare_report", os.path.join(HERE, "compare-report.py"))
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)

MEDIAN_TOLERANCE = 0.10
DECILE_TOLERANCE = 0.15
KS_LEVEL = 0.05
# The normal quantile of the deciles' two-sided 90 % intervals (`decile_bounds`).
DECILE_INTERVAL_Z = 1.645
MIN_RUNS_FOR_SPREAD = 30
# The counters stored of each cell: enough to weigh the model's runs by their losses, without storing megabytes.
STORED_COUNTER_RUNS = 200
SPREAD_FOR_KS = 1.2

TRANSFERS = [
    ("fetch_10000", "10 KB"),
    ("fetch_100000", "100 KB"),
    ("fetch_1000000", "1 MB"),
    ("idle_100000", "100 KB after 2 s idle"),
    ("bulk_mbit", "bulk"),
]
# The fetches made on a fresh connection: without loss the model takes one time for them.
FRESH_FETCHES = ("fetch_10000", "fetch_100000")

# Real fetch samples: grid-today/fresh holds the pooled real runs of every cell, cells-10-10-50 a later boot's
# runs of four cells (hystart-exits holds the HyStart counters the guest logged around the 1 MB fetches of
# several of these runs), lossless-10runs ten runs of each lossless cell, counters-20runs twenty 1 MB fetches (and
# requests after idle) of four lossy cells with the server's counters, handshake-100 a hundred 10 KB and 100 KB
# fetches of the three 10 Mbit/s, 2 % cells with the counters, mb-40 and mb-50 forty more 1 MB fetches each at
# 10 Mbit/s, 2 %, 200 and 50 ms, mb-200-05 forty at 10 Mbit/s, 200 ms, 0.5 %, mb-three-cells forty at each of
# 10/200/0, 10/50/0.5 and 10/50/2, mb-two-cells forty at each of 10/200/0.5 and 10/10/2, and small-100b a hundred
# more 10 KB and 100 KB fetches at each of 10/50/2 and 10/10/2 with the counters; small-300 and the sameboot-* runs
# say in their sources.md what they add. Loss there is drawn per segment on the router, as the grid does now.
REAL_FETCHES = [
    "grid-today/fresh", "grid-today/cells-10-10-50", "lossless-10runs", "counters-20runs", "bulk5-drained",
    "bulk-counters", "handshake-100", "mb-40", "mb-50", "hystart-exits", "mb-200-05", "mb-three-cells",
    "mb-two-cells", "small-100b", "small-300", "sameboot-10k", "sameboot-100k", "sameboot-200", "sameboot-1m",
    "sameboot-100k-10", "sameboot-100k-200-05",
]
# The boots that measured the guest's own timing beside their lossy runs (`same_boot_table`): lossless cells in the
# same boot, or both sides' counters around each fetch, which tell the fetches that met no loss. The last group
# pools every boot with both sides' counters.
WITH_CLIENT_COUNTERS = ["handshake-100", "small-100b", "small-300", "sameboot-10k", "sameboot-100k", "sameboot-200",
                        "sameboot-100k-10", "sameboot-100k-200-05"]
SAME_BOOT = [["sameboot-10k"], ["sameboot-100k"], ["sameboot-100k-10"], ["sameboot-200"], ["sameboot-1m"],
             ["sameboot-100k-200-05"], WITH_CLIENT_COUNTERS]
# Real bulk samples, by length of the download. Lossless cells come from model-v2-full and bulk5-drained only: the
# other model-v2 runs drew loss in pairs on the sender, exec runs reuse stored real samples, and lossless-10runs'
# later bulk runs shared the link with the previous run's queue.
REAL_BULK = {
    "router-loss-1mbit": 10, "router-loss-10mbit": 10, "router-loss-bulk10": 20, "router-loss-10-200-05": 20,
    "model-v2-full": 20, "bulk5-drained": 20, "bulk-counters": 20, "bulk-15": 20, "bulk-200-05": 20,
}

# The guest's ping: an 84-byte echo in a 98-byte frame, serialised by the bottleneck's netem rate each way. Its
# round trip less that is the one the guest's TCP sees, longer than the cell's by the emulation (table:emulation).
PING_FRAME_BYTES = 98

# The per-commit set: one cell per rate and round trip, lossy where the spread matters.
CHECK_CELLS = "1/10/0.5,1/50/2,1/200/0.5,10/10/0.5,10/50/2,10/200/0.5"
CHECK_RUNS = 30
# The matched medians (`matched_table`): the entries they cover, and the real runs with counters a cell needs.
MATCHED = [("fetch_1000000", "1 MB"), ("idle_100000", "100 KB after 2 s idle")]
MATCHED_BY = "counter:fetch_1000000:RetransSegs"
MIN_RUNS_FOR_MATCHING = 20


def cell_order(cell):
    """A cell's place in every table: by rate, round trip and loss, as numbers."""
    return tuple(float(x) for x in cell)


def cell_key(row):
    return (row["rate_mbit"], row["rtt_ms"], row["loss_pct"])


def stored_rows(run):
    """The rows of a stored run's raw.csv, or of its raw.csv.gz where the counters made it large."""
    path = os.path.join(HERE, run, "raw.csv")
    with (open(path) if os.path.exists(path) else gzip.open(path + ".gz", "rt")) as raw:
        yield from csv.DictReader(raw)


def real_samples(runs, prefixes=("fetch_", "idle_", "counter:")):
    """{(cell, metric): [values]} of the real rows of stored `runs` whose metric starts with one of `prefixes`."""
    real = defaultdict(list)
    for run in runs:
        for row in stored_rows(run):
            if row["side"] == "real" and row["metric"].startswith(prefixes) and row["value"] not in ("", "nan"):
                real[(cell_key(row), row["metric"])].append(float(row["value"]))
    return real


def pooled_real():
    """{(cell, metric): [values]} of the real side; a cell's bulk samples from the length most runs used."""
    real = real_samples(REAL_FETCHES)
    bulk = defaultdict(list)
    for run, seconds in REAL_BULK.items():
        for row in stored_rows(run):
            if row["side"] != "real" or row["metric"] != "bulk_mbit" or row["value"] in ("", "nan"):
                continue
            if run == "model-v2-full" and row["loss_pct"] != "0":
                continue
            bulk[(cell_key(row), seconds)].append(float(row["value"]))
    for cell in {c for c, _ in bulk}:
        lengths = [(len(bulk[(cell, s)]), s) for s in (20, 10) if (cell, s) in bulk]
        count, seconds = max(lengths)
        real[(cell, "bulk_mbit")] = bulk[(cell, seconds)]
        real[(cell, "bulk_seconds")] = [seconds]
    return real


def real_runs(runs=REAL_FETCHES):
    """{cell: [{metric: value}]}: each stored real run's samples together, so that a fetch's time and its counters
    stay paired (pooled_real keeps each metric's values apart)."""
    return runs_by_cell({**row, "run": f"{run}/{row['run']}"} for run in runs for row in stored_rows(run)
                        if row["side"] == "real" and row["value"] not in ("", "nan"))


def model_runs(*paths):
    """{cell: [{metric: value}]}: each model run's samples together, from one or more --model-grid files."""
    def rows(path):
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as raw:
            yield from csv.DictReader(raw)
    return runs_by_cell(row for path in paths for row in rows(path))


def runs_by_cell(rows):
    """{cell: [{metric: value}]}: the rows grouped by cell and run."""
    runs = defaultdict(dict)
    for row in rows:
        runs[(cell_key(row), row["run"])][row["metric"]] = float(row["value"])
    cells = defaultdict(list)
    for (cell, _), samples in runs.items():
        cells[cell].append(samples)
    return cells


def weighted_median(points):
    """The median of (value, weight) pairs."""
    points = sorted(points)
    half, total = sum(w for _, w in points) / 2, 0
    for value, weight in points:
        total += weight
        if total >= half:
            return value


def retransmission_class(model):
    """A function giving a run's class by MATCHED_BY: its count, where counts beyond the model's 10th and 90th
    percentiles share a class with them, as the model's runs thin out there."""
    counts = sorted(run[MATCHED_BY] for run in model)
    low, high = counts[int(0.1 * (len(counts) - 1))], counts[int(0.9 * (len(counts) - 1))]
    return lambda run: min(max(run[MATCHED_BY], low), high)


def matched_median(real, model, metric):
    """The model's median of `metric` with its runs weighted to the real runs' distribution of MATCHED_BY: each
    real run stands for the model's runs of its `retransmission_class`. None when a real run's class has no model
    runs."""
    class_of = retransmission_class(model)
    classes = defaultdict(list)
    for run in model:
        classes[class_of(run)].append(run[metric])
    points = []
    for run in real:
        values = classes.get(class_of(run))
        if not values:
            return None
        points += [(value, 1 / len(values)) for value in values]
    return weighted_median(points)


def matched_table(real, model):
    """For cells with MIN_RUNS_FOR_MATCHING real runs that recorded MATCHED_BY: the real runs' and the model's mean
    retransmissions, and for each MATCHED entry the ratio of medians over those runs, plain and with the model's
    runs matched to the real runs' retransmissions (`matched_median`). Loss is drawn at random on both sides, and a
    few dozen real runs may draw noticeably fewer or more losses than the rate gives; the matched ratio is the
    model's TCP given the same luck."""
    lines = ["| Mbit/s | RTT ms | loss % | runs | RetransSegs, real / model | "
             + " | ".join(f"{label}, plain | {label}, matched" for _, label in MATCHED) + " |",
             "|---|---|---|---|---|" + "---|---|" * len(MATCHED)]
    complete = lambda run: MATCHED_BY in run and all(metric in run for metric, _ in MATCHED)
    for cell in sorted(real, key=cell_order):
        counted = list(filter(complete, real[cell]))
        runs = list(filter(complete, model.get(cell, [])))
        if cell[2] == "0" or len(counted) < MIN_RUNS_FOR_MATCHING or not runs:
            continue
        out = []
        for metric, _ in MATCHED:
            real_median = statistics.median(run[metric] for run in counted)
            matched = matched_median(counted, runs, metric)
            out += [f"{statistics.median(run[metric] for run in runs) / real_median:.2f}",
                    "–" if matched is None else f"{matched / real_median:.2f}"]
        retransmitted = (f"{statistics.mean(run[MATCHED_BY] for run in counted):.2f} / "
                         f"{statistics.mean(run[MATCHED_BY] for run in runs):.2f}")
        lines.append(f"| {cell[0]} | {cell[1]} | {cell[2]} | {len(counted)} | {retransmitted} | " + " | ".join(out) + " |")
    return "\n".join(lines) if len(lines) > 2 else None


def class_table(real, model, cell, metric):
    """One cell's `metric`, real against model, per `retransmission_class`: a difference of the plain medians splits
    into the losses each side drew (the runs per class) and the time a transfer takes given them (the medians)."""
    complete = lambda run: MATCHED_BY in run and metric in run
    counted = [run for run in real.get(cell, []) if complete(run)]
    runs = [run for run in model.get(cell, []) if complete(run)]
    if not counted or not runs:
        return None
    class_of = retransmission_class(runs)
    low, high = min(map(class_of, runs)), max(map(class_of, runs))
    lines = ["| RetransSegs | real runs | real median ms | model runs | model median ms | model ÷ real |",
             "|---|---|---|---|---|---|"]
    def row(label, real_values, model_values):
        median = lambda values: f"{statistics.median(values):.0f}" if values else "–"
        ratio = (f"{statistics.median(model_values) / statistics.median(real_values):.2f}"
                 if real_values and model_values else "–")
        lines.append(f"| {label} | {len(real_values)} | {median(real_values)} | {len(model_values)} | "
                     f"{median(model_values)} | {ratio} |")
    for value in sorted({class_of(run) for run in counted + runs}):
        label = f"{'≤ ' if value == low and low > 0 else '≥ ' if value == high else ''}{value:g}"
        row(label, [run[metric] for run in counted if class_of(run) == value],
            [run[metric] for run in runs if class_of(run) == value])
    row("all", [run[metric] for run in counted], [run[metric] for run in runs])
    return "\n".join(lines)


def mode_table(real, real_runs_of_cell, model_samples, cell, metric, split):
    """A two-mode entry's `metric` split at `split` ms, the gap between its modes: each set's share of runs below
    it and the median within each mode. Where the share is near a half, the plain median falls in whichever mode
    holds a run more, and these say more than it does."""
    complete = lambda run: metric in run and MATCHED_BY in run
    sets = [("real, every run", real.get((cell, metric), [])),
            ("real, runs with counters", [run[metric] for run in real_runs_of_cell if complete(run)]),
            ("real, runs without counters", [run[metric] for run in real_runs_of_cell
                                             if metric in run and MATCHED_BY not in run]),
            ("model", model_samples.get((cell, metric), []))]
    lines = [f"| runs of | runs | below {split:g} ms | median | median below | median above |",
             "|---|---|---|---|---|---|"]
    for label, values in sets:
        if not values:
            continue
        below, above = [v for v in values if v < split], [v for v in values if v >= split]
        median = lambda part: f"{statistics.median(part):.0f}" if part else "–"
        lines.append(f"| {label} | {len(values)} | {100 * len(below) / len(values):.1f} % | {median(values)} | "
                     f"{median(below)} | {median(above)} |")
    return "\n".join(lines)


def guest_round_trips():
    """{cell: ms}: each cell's round trip as the guest had it, the median of its stored pings less their own
    serialisation at the guest's netem rate (the payload rate in 1514-byte frames per 1448 payload bytes). A ping
    stored in two runs (a run composed from another's samples) counts once."""
    pings = defaultdict(list)
    for run in dict.fromkeys(REAL_FETCHES + list(REAL_BULK)):
        for row in stored_rows(run):
            if row["side"] == "real" and row["metric"] == "ping" and row["value"] not in ("", "nan"):
                pings[cell_key(row)].append(row["value"])
    trips = {}
    for cell, values in pings.items():
        if cell[0] == "0":
            continue
        wire = float(cell[0]) * 1e6 * 1514 / 1448
        ping = statistics.median(float(value) for value in set(values))
        trips[cell] = round(ping - 2 * PING_FRAME_BYTES * 8 / wire * 1000, 2)
    return trips


def at_guest_round_trips(bench, runs, trips):
    """The model's rows with each cell at its round trip as the guest had it (`guest_round_trips`)."""
    text = lambda ms: str(int(ms)) if ms == int(ms) else str(ms)
    return run_model(bench, runs, ",".join(f"{c[0]}/{text(ms)}/{c[2]}" for c, ms in sorted(trips.items())), None)


def guest_samples(path):
    """The samples of a stored guest-rtt run under each cell's grid name, and {cell: the round trip it ran at}: a
    cell's stored round trip is the grid's nearest (10, 50 or 200 ms)."""
    samples, trips = defaultdict(list), {}
    for (cell, metric), values in model_samples(path).items():
        nominal = min(("10", "50", "200"), key=lambda grid: abs(float(grid) - float(cell[1])))
        named = (cell[0], nominal, cell[2])
        samples[(named, metric)] = values
        trips[named] = float(cell[1])
    return samples, trips


def guest_round_trip_table(found, trips):
    """The medians table with each cell's guest round trip beside it."""
    return medians_table(found, ("guest's round trip ms", {cell: f"{ms:.1f}" for cell, ms in trips.items()}))


def model_samples(path, runs=None):
    """{(cell, metric): [values]} of a --model-grid run's raw.csv, its first `runs` runs when given."""
    samples = defaultdict(list)
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as raw:
        for row in csv.DictReader(raw):
            if runs is None or int(row["run"]) <= runs:
                samples[(cell_key(row), row["metric"])].append(float(row["value"]))
    return samples


def ks_p_value(a, b):
    """Two-sample Kolmogorov-Smirnov: the asymptotic p-value of the largest gap between the samples' CDFs."""
    a, b = sorted(a), sorted(b)
    n, m = len(a), len(b)
    i = j = 0
    gap = 0.0
    while i < n and j < m:
        value = min(a[i], b[j])
        while i < n and a[i] == value:
            i += 1
        while j < m and b[j] == value:
            j += 1
        gap = max(gap, abs(i / n - j / m))
    effective = math.sqrt(n * m / (n + m))
    scaled = (effective + 0.12 + 0.11 / effective) * gap
    if scaled < 0.3:
        return 1.0
    return max(0.0, min(1.0, 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * scaled * scaled) for k in range(1, 101))))


def deciles(values):
    ordered = sorted(values)
    return [statistics.quantiles(ordered, n=10, method="inclusive")[k] for k in range(9)]


def decile_bounds(values):
    """[(low, high)] for p10…p90: the order statistics that hold the true decile with about 90 % confidence, free
    of any assumed distribution (the count of runs below a decile is binomial; its normal approximation)."""
    ordered = sorted(values)
    n = len(ordered)
    bounds = []
    for k in range(1, 10):
        below, half = n * k / 10, DECILE_INTERVAL_Z * math.sqrt(n * k / 10 * (1 - k / 10))
        low, high = max(0, math.floor(below - half) - 1), min(n - 1, math.ceil(below + half))
        bounds.append((ordered[low], ordered[high]))
    return bounds


def spread_verdict(real, model, ratios, p):
    """pass: every decile ratio within ±15 % and KS not rejecting; undecided: KS not rejecting and each decile
    outside ±15 % has intervals on both sides (`decile_bounds`) that still reach it; fail otherwise."""
    if p is not None and p < KS_LEVEL:
        return "fail"
    if all(abs(x - 1) <= DECILE_TOLERANCE for x in ratios):
        return "pass"
    reach = all(m_low / r_high <= 1 + DECILE_TOLERANCE and m_high / r_low >= 1 - DECILE_TOLERANCE
                for (r_low, r_high), (m_low, m_high) in zip(decile_bounds(real), decile_bounds(model)))
    return "undecided" if reach else "fail"


def spreads_for_ks(values):
    """Whether the times spread enough for KS to compare them (p90 at least SPREAD_FOR_KS × p10, either way round);
    where they sit at one value, a millisecond's offset alone makes KS reject."""
    ordered = deciles(values)
    low, high = ordered[0], ordered[-1]
    return max(high / low, low / high) >= SPREAD_FOR_KS


def entry(real, model, cell, metric):
    """The verdicts of one entry: median ratio, and for lossy cells with enough runs the deciles and KS."""
    model_metric = metric
    if metric == "bulk_mbit":
        seconds = real.get((cell, "bulk_seconds"), [20])[0]
        model_metric = f"bulk_mbit_{seconds}s"
    r, m = real.get((cell, metric)), model.get((cell, model_metric))
    if not r or not m:
        return None
    ratio = statistics.median(m) / statistics.median(r)
    interval = report.ratio_interval(r, m, seed=f"{cell} {metric}") if min(len(r), len(m)) >= 10 else None
    result = {"real": r, "model": m, "ratio": ratio, "verdict": report.verdict_of(ratio, interval, MEDIAN_TOLERANCE)}
    if cell[2] != "0" and len(r) >= MIN_RUNS_FOR_SPREAD and len(m) >= MIN_RUNS_FOR_SPREAD:
        ratios = [x / y for x, y in zip(deciles(m), deciles(r))]
        p = ks_p_value(r, m) if spreads_for_ks(r) else None
        result["deciles"] = (min(ratios), max(ratios))
        result["ks"] = p
        result["spread"] = spread_verdict(r, m, ratios, p)
    return result


def entries(real, model):
    cells = sorted({c for c, _ in model}, key=cell_order)
    return {(cell, metric): e for cell in cells for metric, _ in TRANSFERS if (e := entry(real, model, cell, metric))}


MARK = {"pass": "✓", "fail": "✗", "undecided": "≈"}


def medians_table(found, column=None):
    """The ratio of medians of every entry; `column` (a heading and {cell: text}) adds one after the cell's."""
    heading, extra = column or (None, {})
    lines = ["| Mbit/s | RTT ms | loss % | " + (f"{heading} | " if heading else "")
             + " | ".join(label for _, label in TRANSFERS) + " |",
             "|---|---|---|" + ("---|" if heading else "") + "---|" * len(TRANSFERS)]
    for cell in sorted({c for c, _ in found}, key=cell_order):
        out = [extra[cell]] if heading else []
        for metric, _ in TRANSFERS:
            e = found.get((cell, metric))
            out.append("–" if e is None else f"{e['ratio']:.2f} {MARK[e['verdict']]} ({len(e['real'])})")
        lines.append(f"| {cell[0]} | {cell[1]} | {cell[2]} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def spread_table(found):
    lines = ["| Mbit/s | RTT ms | loss % | " + " | ".join(label for _, label in TRANSFERS) + " |",
             "|---|---|---|" + "---|" * len(TRANSFERS)]
    for cell in sorted({c for c, _ in found if c[2] != "0"}, key=cell_order):
        out = []
        for metric, _ in TRANSFERS:
            out.append(spread_text(found.get((cell, metric))))
        lines.append(f"| {cell[0]} | {cell[1]} | {cell[2]} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def spread_text(e):
    """An entry's spread verdict as the tables show it: lowest–highest decile ratio, KS p (or narrow), mark."""
    if e is None or "deciles" not in e:
        return "–"
    low, high = e["deciles"]
    ks = "narrow" if e["ks"] is None else f"p {e['ks']:.2f}"
    return f"{low:.2f}–{high:.2f}, {ks} {MARK[e['spread']]}"


def with_guest_timing(real, model):
    """{(cell, metric): [values]}: each lossy entry's model times with the guest's own timing added, where the
    same rate, round trip and transfer without loss show it alone. There the network's part is one value, so the
    lossless real runs less the model's lossless median are what the guest adds (its emulation, scheduling and
    probe); model run i gets the i-th of those residuals, cycling, so the model keeps its number of runs. Only
    where the lossless real runs are narrow (p90 under SPREAD_FOR_KS × p10) and number 10 or more."""
    shifted = {}
    for (cell, metric), values in model.items():
        lossless = (cell[0], cell[1], "0")
        r0, m0 = real.get((lossless, metric)), model.get((lossless, metric))
        if cell[2] == "0" or metric.startswith(("bulk", "counter:")) or not r0 or not m0 or len(r0) < 10:
            continue
        if spreads_for_ks(r0):
            continue
        center = statistics.median(m0)
        residuals = sorted(value - center for value in r0)
        shifted[(cell, metric)] = [value + residuals[i % len(residuals)] for i, value in enumerate(values)]
    return shifted


def with_own_timing(runs, at_guest):
    """{(cell, metric): [values]}: the model at the guest's round trip (`at_guest`, from `guest_samples`) with the
    guest's timing of the same cell's fetches that met no loss added: those where neither the server nor the client
    retransmitted, by the counters around each. Their times less the model's for a fetch without loss are what the
    guest adds in that very cell; model run i gets the i-th, cycling. Only fetches on a fresh connection, where every
    model run without loss takes one time (its fastest), and where MIN_RUNS_FOR_SPREAD real fetches met no loss."""
    shifted = {}
    for cell, cell_runs in runs.items():
        for metric in FRESH_FETCHES:
            values = at_guest.get((cell, metric))
            clean = sorted(r[metric] for r in cell_runs if metric in r
                           and r.get(f"counter:{metric}:RetransSegs") == 0
                           and r.get(f"counter:{metric}:client.RetransSegs") == 0)
            if cell[2] == "0" or not values or len(clean) < MIN_RUNS_FOR_SPREAD:
                continue
            fastest = min(values)
            residuals = [value - fastest for value in clean]
            shifted[(cell, metric)] = [value + residuals[i % len(residuals)] for i, value in enumerate(values)]
    return shifted


def same_boot_table(groups, model, at_guest):
    """The lossy entries of boots (or pools of boots, `groups` of run names) that measured their own timing,
    against the model: plain; with the boot's lossless runs of the same rate, round trip and transfer as the
    guest's timing (`with_guest_timing`), which then comes from the same emulation as the lossy runs, as the pooled
    table's cannot promise; and at the guest's round trip, where each recovery's extra round trip is the guest's,
    with the timing of the same cell's fetches that met no loss (`with_own_timing`)."""
    lines = ["| boot | Mbit/s | RTT ms | loss % | transfer | real runs | plain | with the boot's lossless timing "
             "| at the guest's round trip, with the cell's timing |",
             "|---|---|---|---|---|---|---|---|---|"]
    labels = dict(TRANSFERS)
    for group in groups:
        real = real_samples(group, prefixes=("fetch_", "idle_"))
        sides = (model, with_guest_timing(real, model), with_own_timing(real_runs(group), at_guest))
        name = f"`{group[0]}/`" if len(group) == 1 else f"{len(group)} boots pooled"
        for cell, metric in sorted((key for key in real if key[0][2] != "0"), key=lambda key: cell_order(key[0])):
            out = []
            for side in sides:
                e = entry(real, side, cell, metric) if (cell, metric) in side else None
                out.append("–" if e is None or "deciles" not in e else f"{e['ratio']:.2f}; {spread_text(e)}")
            lines.append(f"| {name} | {cell[0]} | {cell[1]} | {cell[2]} | {labels[metric]} | "
                         f"{len(real[(cell, metric)])} | " + " | ".join(out) + " |")
    return "\n".join(lines)


COUNTERS = ["TCPOrigDataSent", "RetransSegs", "TCPSackRecovery", "TCPTimeouts", "TCPLossProbes"]


def figure(value):
    """A mean counter: whole above 100, three significant digits below."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def counters_table(real, model):
    """Mean per fetch of the server's counters, real / model, for the fetches whose counters the guest recorded."""
    keys = sorted({(cell, metric.rsplit(":", 1)[0]) for cell, metric in real if metric.startswith("counter:")
                   and metric.rsplit(":", 1)[1] in COUNTERS and (cell, metric) in model},
                  key=lambda k: (cell_order(k[0]), k[1]))
    if not keys:
        return None
    lines = ["| Mbit/s | RTT ms | loss % | fetch | runs | " + " | ".join(COUNTERS) + " |",
             "|---|---|---|---|---|" + "---|" * len(COUNTERS)]
    for cell, prefix in keys:
        out = []
        for name in COUNTERS:
            r, m = real.get((cell, f"{prefix}:{name}")), model.get((cell, f"{prefix}:{name}"))
            out.append("–" if not r or not m else f"{figure(statistics.mean(r))} / {figure(statistics.mean(m))}")
        runs = len(real.get((cell, f"{prefix}:{COUNTERS[0]}"), []))
        transfer = prefix.split(":")[1]
        label = {"fetch_1000000": "1 MB, then 100 KB after idle", "fetch_100000": "100 KB", "fetch_10000": "10 KB"}.get(
            transfer, transfer.replace("bulk_", "bulk, ").replace("s", " s"))
        lines.append(f"| {cell[0]} | {cell[1]} | {cell[2]} | {label} | {runs} | " + " | ".join(out) + " |")
    return "\n".join(lines)


HYSTART = "counter:fetch_1000000:TCPHystart"


def hystart_exits(samples, cell):
    """The HyStart exit of each 1 MB fetch of a cell: ("train" or "delay", window), or None when a loss ended slow
    start first. The four counters of one fetch sit at the same index of their lists."""
    train, train_cwnd, delay, delay_cwnd = (samples.get((cell, HYSTART + name), []) for name in
                                            ("TrainDetect", "TrainCwnd", "DelayDetect", "DelayCwnd"))
    return [("train", int(tc)) if t else ("delay", int(dc)) if d else None
            for t, tc, d, dc in zip(train, train_cwnd, delay, delay_cwnd)]


def hystart_table(real, model):
    """How HyStart ended slow start in each cell's 1 MB fetches, real / model: how many fetches ended it by ACK train
    and by delay, with the window at the exit (the median, and the range when it varies by more than two)."""
    cells = sorted({cell for cell, metric in real if metric.startswith(HYSTART)}, key=cell_order)
    if not cells:
        return None
    def describe(exits, kind):
        windows = sorted(e[1] for e in exits if e and e[0] == kind)
        if not windows:
            return "–"
        median = f"{statistics.median(windows):.0f}"
        return f"{len(windows)} at {median}" + (f" ({windows[0]}–{windows[-1]})" if windows[-1] > windows[0] + 2 else "")
    lines = ["| Mbit/s | RTT ms | loss % | fetches | ACK train, real | ACK train, model | delay, real | delay, model |",
             "|---|---|---|---|---|---|---|---|"]
    for cell in cells:
        r, m = hystart_exits(real, cell), hystart_exits(model, cell)
        if not r or not m:
            continue
        lines.append(f"| {cell[0]} | {cell[1]} | {cell[2]} | {len(r)} / {len(m)} | {describe(r, 'train')} | "
                     f"{describe(m, 'train')} | {describe(r, 'delay')} | {describe(m, 'delay')} |")
    return "\n".join(lines)


def summary(found):
    medians = [e["verdict"] for e in found.values()]
    return (f"Medians: {medians.count('pass')} of {len(medians)} within ±10 %, {medians.count('undecided')} undecided, "
            f"{medians.count('fail')} outside. " + spread_summary(found))


def spread_summary(found):
    spreads = [e["spread"] for e in found.values() if "spread" in e]
    return (f"Spreads: {spreads.count('pass')} of {len(spreads)} lossy entries with 30 or more real runs have their "
            f"deciles within ±15 % and, where the real times spread, KS p ≥ 0.05; {spreads.count('undecided')} "
            f"undecided.")


def run_model(bench, runs, cells, lines, frames=False):
    arguments = [bench, "--model-grid", "--runs", str(runs)] + (["--frames"] if frames else [])
    if cells:
        arguments += ["--cells", cells]
    if lines:
        arguments += ["--lines", lines]
    result = subprocess.run(arguments, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"model-grid.py: {' '.join(arguments)} exited with {result.returncode}: {result.stderr.strip()}")
    return result.stdout


def main():
    arguments = sys.argv[1:]
    options = {"--bench": os.path.join(ROOT, ".build", "release", "linkcond-bench"), "--runs": "1000"}
    flags = set()
    while arguments:
        name = arguments.pop(0)
        if name in ("--check", "--frames"):
            flags.add(name)
        elif name in ("--bench", "--runs", "--cells", "--lines", "--store", "--from") and arguments:
            options[name] = arguments.pop(0)
        else:
            sys.exit(f"model-grid.py: unknown or incomplete option {name}; see the usage in the file's docstring")
    real = pooled_real()
    if "--check" in flags:
        sys.exit(check(real, options["--bench"]))
    if "--from" in options:
        path = os.path.join(options["--from"], "raw.csv.gz")
        if not os.path.exists(path):
            path = os.path.join(options["--from"], "raw.csv")
    else:
        text = run_model(options["--bench"], options["--runs"], options.get("--cells"), options.get("--lines"),
                         frames="--frames" in flags)
        directory = os.path.join(ROOT, ".build", "model-grid")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, "raw.csv")
        with open(path, "w") as raw:
            raw.write(text)
        if "--store" in options:
            store(options["--store"], text, real,
                  run_model(options["--bench"], options["--runs"], options.get("--cells"), options.get("--lines"),
                            frames=True),
                  at_guest_round_trips(options["--bench"], options["--runs"], guest_round_trips()))
    if "--store" in options:
        path = os.path.join(options["--store"], "raw.csv.gz")
    model = model_samples(path)
    found = entries(real, model)
    # A fresh run's file holds its counters; a stored run keeps them beside it, of fewer runs.
    counted = [p for p in (path, os.path.join(os.path.dirname(path), "counters.csv.gz")) if os.path.exists(p)]
    counter_samples = {key: values for p in counted for key, values in model_samples(p).items()}
    parts = [summary(found), "Ratio of medians, model ÷ real (real runs):", medians_table(found),
             "Lossy cells: model ÷ real at p10…p90 (lowest–highest) and the KS p-value:", spread_table(found)]
    counters = counters_table(real, counter_samples)
    if counters:
        parts += ["The server's counters, mean per fetch, real / model:", counters]
    exits = hystart_table(real, counter_samples)
    if exits:
        parts += ["HyStart's exits in the 1 MB fetches, real / model:", exits]
    matched = matched_table(real_runs(), model_runs(*counted))
    if matched:
        parts += ["The lossy cells' real runs with counters, model ÷ real, plain and matched to their retransmissions:",
                  matched]
    timed = entries(real, with_guest_timing(real, model))
    parts += ["Lossy cells with the guest's own timing, from its lossless runs, added to the model's times:",
              spread_summary(timed), spread_table(timed)]
    guest = os.path.join(options.get("--store", options.get("--from", "")), "guest-rtt.csv.gz")
    if os.path.exists(guest):
        samples, trips = guest_samples(guest)
        at_guest = entries(real, samples)
        parts += ["The model at each cell's round trip as the guest had it (its ping less the ping's serialisation):",
                  summary(at_guest), guest_round_trip_table(at_guest, trips)]
    text = "\n\n".join(parts)
    print(text)
    if "--store" in options:
        with open(os.path.join(options["--store"], "report.md"), "w") as out:
            out.write(text + "\n")


def store(directory, text, real, frames_text, guest_text):
    """Writes DIR/raw.csv.gz (the transfers), DIR/frames.csv.gz (the same counting frames), DIR/guest-rtt.csv.gz
    (the same at the guest's round trips) and DIR/counters.csv.gz (the counters of the cells whose real side has
    them, of the first STORED_COUNTER_RUNS runs), compressed without a time stamp."""
    os.makedirs(directory, exist_ok=True)
    counted = {",".join(cell) for cell, metric in real if metric.startswith("counter:")}
    header = text.splitlines()[0]
    def rows(text, keep):
        return header + "\n" + "".join(line + "\n" for line in text.splitlines()[1:] if keep(line))
    def is_counter(line):
        return ",counter:" in line
    parts = {
        "raw.csv.gz": rows(text, lambda line: not is_counter(line)),
        "frames.csv.gz": rows(frames_text, lambda line: not is_counter(line)),
        "guest-rtt.csv.gz": rows(guest_text, lambda line: not is_counter(line)),
        "counters.csv.gz": rows(text, lambda line: is_counter(line) and ",".join(line.split(",")[1:4]) in counted
                                and int(line.split(",")[5]) <= STORED_COUNTER_RUNS),
    }
    for name, content in parts.items():
        with gzip.GzipFile(os.path.join(directory, name), "wb", mtime=0) as stored:
            stored.write(content.encode())


def check(real, bench):
    """1 when an entry of CHECK_CELLS that met a target in the stored run's same seeds misses it now."""
    import tempfile
    stored = entries(real, model_samples(os.path.join(STORED, "raw.csv.gz"), runs=CHECK_RUNS))
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as raw:
        raw.write(run_model(bench, CHECK_RUNS, CHECK_CELLS, None))
    now = entries(real, model_samples(raw.name))
    os.unlink(raw.name)
    failures = []
    for key, e in now.items():
        before = stored.get(key)
        if before and before["verdict"] == "pass" and e["verdict"] == "fail":
            failures.append(f"{key[0]} {key[1]}: median ratio {e['ratio']:.2f}, was {before['ratio']:.2f}")
        if before and before.get("spread") == "pass" and e.get("spread") == "fail":
            low, high = e["deciles"]
            ks = "narrow" if e["ks"] is None else f"KS p {e['ks']:.2f}"
            failures.append(f"{key[0]} {key[1]}: deciles {low:.2f}–{high:.2f}, {ks}")
    print(f"model-grid check: {len(now)} entries of {CHECK_CELLS} at {CHECK_RUNS} runs; {len(failures)} moved out of target")
    for failure in failures:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    main()
