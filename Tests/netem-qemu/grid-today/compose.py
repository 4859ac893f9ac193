# The grid with today's build: each fetch entry's linkcond side from the runs in this directory (see sources.md),
# each real side pooled from the stored runs; the bulk column from the stored runs with the most bulk runs.
import os
here = os.path.dirname(os.path.abspath(__file__))
import csv, statistics, sys, importlib.util
spec = importlib.util.spec_from_file_location('rep', here + '/../compare-report.py')
rep = importlib.util.module_from_spec(spec); spec.loader.exec_module(rep)
base = here + '/../'
fresh = {}
newer_cells = {('10', '10', '0'), ('10', '10', '2'), ('10', '50', '0'), ('10', '50', '2')}
def load(path, keep):
    for r in csv.DictReader(open(path)):
        if r['value'] in ('', 'nan') or r['rate_mbit'] == '0': continue
        cell = (r['rate_mbit'], r['rtt_ms'], r['loss_pct'])
        if keep(cell, r['side']): fresh.setdefault(cell + (r['metric'], r['side']), []).append(float(r['value']))
load(here + '/fresh/raw.csv', lambda c, side: side == 'real' or c not in newer_cells)
load(here + '/cells-10-10-50/raw.csv', lambda c, side: c in newer_cells)
load(here + '/cell-10-10-2-linkcond/raw.csv', lambda c, side: side == 'linkcond' and c == ('10', '10', '2'))
bulk_sources = {'model-v2-full': None, 'router-loss-1mbit': None, 'router-loss-10mbit': None, 'router-loss-bulk10': None, 'router-loss-10-200-05': None}
bulk = {}
for name in bulk_sources:
    for r in csv.DictReader(open(base + name + '/raw.csv')):
        if r['metric'] != 'bulk_mbit' or r['rate_mbit'] == '0' or r['value'] in ('', 'nan'): continue
        if name == 'model-v2-full' and r['loss_pct'] != '0': continue
        bulk.setdefault((name, r['rate_mbit'], r['rtt_ms'], r['loss_pct'], r['side']), []).append(float(r['value']))
cells = sorted({k[:3] for k in fresh}, key=lambda c: tuple(float(x) for x in c))
count = {}
print('| Mbit/s | RTT ms | loss % | 10 KB | 100 KB | 1 MB | 100 KB after 2 s idle | bulk |')
print('|---|---|---|---|---|---|---|---|')
short = {'model-v2-full': 'a', 'router-loss-1mbit': 'b', 'router-loss-10mbit': 'c', 'router-loss-bulk10': 'd', 'router-loss-10-200-05': 'f'}
for cell in cells:
    out = []
    for metric, label, unit, tol in rep.TRANSFERS:
        if metric == 'bulk_mbit':
            best = None
            for name in bulk_sources:
                real = bulk.get((name,) + cell + ('real',)); link = bulk.get((name,) + cell + ('linkcond',))
                if real and link and (best is None or min(len(real), len(link)) > best[0]): best = (min(len(real), len(link)), name, real, link)
            if best is None: out.append('–'); continue
            n, name, real, link = best; tag = f'{n}{short[name]}'
        else:
            real = fresh.get(cell + (metric, 'real')); link = fresh.get(cell + (metric, 'linkcond'))
            if not real or not link: out.append('–'); continue
            n = min(len(real), len(link)); tag = f'{len(real)}/{len(link)}'
        ratio = statistics.median(link) / statistics.median(real)
        interval = rep.ratio_interval(real, link, seed=f'{cell} {metric}') if n >= 10 else None
        v = rep.verdict_of(ratio, interval, tol)
        count[v] = count.get(v, 0) + 1
        out.append(f"{ratio:.2f} {{'pass': '✓', 'fail': '✗', 'undecided': '≈'}}[v] ({tag})".replace("{'pass': '✓', 'fail': '✗', 'undecided': '≈'}[v]", {'pass': '✓', 'fail': '✗', 'undecided': '≈'}[v]))
    print(f'| {cell[0]} | {cell[1]} | {cell[2]} | ' + ' | '.join(out) + ' |')
print(count, file=sys.stderr)
