#!/usr/bin/env python3
"""Reads `search_rank --tune … --grid …` output (stdin or a file) and
applies the criterion issue 35's ranking rules were chosen by
(docs/search-figures.md, "A tool's name said whole"): the best mean over
the tune sets of (@1 + @5 + share@5) / 3, among the points that cost no
tune set more than 0.01 of its own mean against the baseline point, and
only if it beats the baseline's mean by more than --min-gain (0.002: about
a query of the smaller sets; less is noise, and the baseline stays).

  search_rank --cache DIR $(TUNE SETS) --grid lex_rank=0,0.005,0.01 > g.out
  grid.py g.out [--base lex_rank=0] [--unseen stbt,mbt,mbst] [--top 15] [--drop 0.01] [--min-gain 0.002]

Prints one line per point, best mean first: the mean, the mean of the
--unseen sets (tune sets no earlier choice or model saw), the set that lost
most against the baseline and by how much, the gridded knobs and each set's
mean; `*` marks the point the criterion chooses. The baseline is the point
whose knobs match --base (default: the first point). Fetches nothing,
needs only the standard library."""
import argparse
import json
import sys


def same(value, written):
    """Whether a point's knob `value` is the --base value `written`."""
    if isinstance(value, bool):
        return written.lower() in (("1", "true") if value else ("0", "false"))
    try:
        return float(value) == float(written)
    except (TypeError, ValueError):
        return str(value) == written


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file", nargs="?", default="-")
    p.add_argument("--base", default="", help="KNOB=V,... of the baseline point")
    p.add_argument("--unseen", default="stbt,mbt,mbst")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--drop", type=float, default=0.01, help="most a tune set may lose")
    p.add_argument("--min-gain", type=float, default=0.002, help="least gain over the baseline")
    a = p.parse_args()
    lines = sys.stdin if a.file == "-" else open(a.file)
    points = {}  # knobs (sorted JSON) -> {set: mean}
    for line in lines:
        if not line.startswith('{"set"'):
            continue
        row = json.loads(line)
        if row.get("role") != "tune" or row["ranker"] != "muster":
            continue
        key = json.dumps(row["knobs"], sort_keys=True)
        points.setdefault(key, {})[row["set"]] = (
            row["recall_at_1"] + row["recall_at_5"] + row["share_at_5"]) / 3
    if not points:
        sys.exit("no tune rows of ranker muster: run search_rank with --tune and --grid")
    keys = list(points)
    knobs = {k: json.loads(k) for k in keys}
    varied = sorted({n for k in keys for n, v in knobs[k].items() if v != knobs[keys[0]][n]})
    want = dict(kv.split("=", 1) for kv in a.base.split(",") if kv)
    matches = [k for k in keys if all(same(knobs[k].get(n), v) for n, v in want.items())] if want else keys[:1]
    if len(matches) != 1:
        sys.exit(f"{len(matches)} points match --base {a.base}: name one point (every gridded knob)")
    base = matches[0]
    unseen = [s for s in a.unseen.split(",") if s]
    rows = []
    for k in keys:
        sets = points[k]
        if set(sets) != set(points[base]):
            sys.exit(f"point {k} lacks sets of the baseline's: rerun the grid whole")
        mean = sum(sets.values()) / len(sets)
        seen = [sets[s] for s in unseen if s in sets]
        change = {s: sets[s] - points[base][s] for s in sets}
        worst = min(change, key=lambda s: (change[s], s))
        rows.append((mean, sum(seen) / len(seen) if seen else float("nan"), worst, change[worst], k))
    base_mean = sum(points[base].values()) / len(points[base])
    allowed = [r for r in rows if r[3] >= -a.drop - 1e-12 and r[0] > base_mean + a.min_gain]
    chosen = max(allowed, key=lambda r: (r[0], r[4]))[4] if allowed else base
    for mean, seen, worst, lost, k in sorted(rows, key=lambda r: (-r[0], r[4]))[:a.top]:
        mark = "*" if k == chosen else " "
        gridded = " ".join(f"{n}={knobs[k][n]}" for n in varied)
        sets = " ".join(f"{s}={v:.3f}" for s, v in points[k].items())
        print(f"{mark} {mean:.4f} unseen {seen:.4f} worst {worst} {lost:+.3f}  {gridded}  {sets}")
    kept = " (kept: no point clears the criterion)" if chosen == base else ""
    print(f"  baseline {base_mean:.4f}{kept}: " + " ".join(f"{n}={knobs[base][n]}" for n in varied))


main()
