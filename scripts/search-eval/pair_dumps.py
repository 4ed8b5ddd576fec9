#!/usr/bin/env python3
"""Pairs two dumps of `examples/search_rank.rs --dump FILE` over the same
report sets (two builds, e.g. two encoder arithmetics): writes the first
dump's rows, each with the second's `shipped` ranking as `current`, so

  pair_dumps.py NEW CURRENT OUT
  compare.py OUT --rankers shipped,current

gives the paired bootstrap interval of new − current per set and metric
(docs/search-cost.md, "8-bit inputs to the linear layers")."""
import json
import sys


def main():
    new, cur, out = sys.argv[1:4]
    old = {}
    for line in open(cur):
        r = json.loads(line)
        old[(r["set"], r["i"])] = r
    with open(out, "w") as f:
        for line in open(new):
            r = json.loads(line)
            o = old[(r["set"], r["i"])]
            assert o["query"] == r["query"], (r["set"], r["i"])
            r["current"] = o["shipped"]
            f.write(json.dumps(r) + "\n")


main()
