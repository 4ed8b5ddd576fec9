#!/usr/bin/env python3
"""muster's ranking against the baselines issue 35 names, with paired
bootstrap intervals, from a dump of `examples/search_rank.rs --dump FILE`.
Fetches nothing. Needs `pip install rank_bm25 snowballstemmer numpy`.

  compare.py DUMP [--resamples 2000] [--seed 35] [--rankers muster,single]

Per report set and per metric (recall@1, recall@5, share of the expected
tools in the top 5 of at most 5), the mean of:
- muster (the dump's `muster` ranking: the library at the chosen knobs) and
  `shipped` (the library before the change, when dumped);
- stemmed BM25: rank_bm25's BM25Okapi (k1 1.5, b 0.75) over name +
  description, snowball stemming, English stop words (run.py's);
- MiniLM alone: the cosine of the whole query's vector to each tool's
  (the dump's `minilm`);
- RRF: reciprocal rank fusion of stemmed BM25 and MiniLM (k = 60, their
  top 100 each);
and the difference muster − each baseline (and − the second of --rankers,
the change's own effect) with its paired bootstrap 95 %
interval (queries resampled with replacement, the same resample for both
rankers; percentile interval). An interval that excludes 0 is a
difference the set's size can tell apart."""
import argparse, json, os, re

import numpy as np
from rank_bm25 import BM25Okapi

# The stemmed BM25 words are run.py's, so the baseline is the one its tables report.
from run import words  # noqa: E402


def figures(expect, ranked):
    top5 = ranked[:5]
    hit = [n in expect for n in top5]
    return (float(bool(ranked) and ranked[0] in expect), float(any(hit)),
            sum(hit) / min(max(len(expect), 1), 5))


def rrf(*rankings, k=60, depth=100, limit=10):
    score = {}
    for ranking in rankings:
        for r, name in enumerate(ranking[:depth]):
            score[name] = score.get(name, 0.0) + 1.0 / (k + r + 1)
    return [n for n, _ in sorted(score.items(), key=lambda x: (-x[1], x[0]))][:limit]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dump")
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--seed", type=int, default=35)
    p.add_argument("--rankers", default="muster,single")
    a = p.parse_args()
    rows = [json.loads(l) for l in open(a.dump)]
    sets = []
    for r in rows:
        if r["set"] not in sets:
            sets.append(r["set"])
    ours = a.rankers.split(",")
    rng = np.random.default_rng(a.seed)
    metrics = ["@1", "@5", "share@5"]
    print("| set | queries | metric | " + " | ".join(ours) + " | stemmed BM25 | MiniLM | RRF | "
          + " | ".join(f"{ours[0]} − {b}" for b in ("BM25", "MiniLM", "RRF") + tuple(ours[1:2])) + " |")
    print("|---|---|---|" + "---|" * (len(ours) + 6 + len(ours[1:2])))
    for label in sets:
        mine = [r for r in rows if r["set"] == label]
        tools = [json.loads(l) for l in open(os.path.join(mine[0]["tools"], "tools.jsonl"))]
        bm = BM25Okapi([words(t["name"] + " " + t.get("description", "")) for t in tools])
        per = {name: [] for name in ours + ["bm25", "minilm", "rrf"]}
        for r in mine:
            scores = bm.get_scores(words(r["query"]))
            order = sorted(range(len(tools)), key=lambda i: (-scores[i], i))[:100]
            lexical = [tools[i]["name"] for i in order]
            for name in ours:
                per[name].append(figures(r["expect"], r[name]))
            per["bm25"].append(figures(r["expect"], lexical))
            per["minilm"].append(figures(r["expect"], r["minilm"]))
            per["rrf"].append(figures(r["expect"], rrf(lexical, r["minilm"])))
        arr = {k: np.array(v) for k, v in per.items()}
        n = len(mine)
        idx = rng.integers(0, n, size=(a.resamples, n))
        for m, metric in enumerate(metrics):
            cells = [f"{arr[name][:, m].mean():.3f}" for name in ours + ["bm25", "minilm", "rrf"]]
            for base in ("bm25", "minilm", "rrf") + tuple(ours[1:2]):
                diff = arr[ours[0]][:, m] - arr[base][:, m]
                boot = diff[idx].mean(axis=1)
                lo, hi = np.percentile(boot, [2.5, 97.5])
                cells.append(f"{diff.mean():+.3f} [{lo:+.3f}, {hi:+.3f}]")
            print(f"| {label} | {n} | {metric} | " + " | ".join(cells) + " |")


main()
