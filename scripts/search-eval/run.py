#!/usr/bin/env python3
"""Recall@1 / recall@5 of muster's search and of a plain BM25 on the
extracted sets, in one run: muster through `examples/search_eval.rs` (BM25F
mixed with the encoder, and `--lexical`, BM25F alone), and
rank_bm25's BM25Okapi (k1 1.5, b 0.75) over name + description with
snowball stemming and English stop words, the baseline issue 22 names.
Fetches nothing. Needs `pip install rank_bm25 snowballstemmer`.

  run.py EVAL_DIR [MUSTER_EVAL_BIN]

EVAL_DIR is extract.py's OUT. MUSTER_EVAL_BIN defaults to
target/release/examples/search_eval (cargo build --release --example search_eval).
Prints one line per (set, split, ranker)."""
import json, os, re, subprocess, sys

from rank_bm25 import BM25Okapi
import snowballstemmer

STOP = set("""a about above after again against all am an and any are as at be because been
before being below between both but by can did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them themselves
then there these they this those through to too under until up very was we were what when where
which while who whom why will with you your yours yourself yourselves""".split())
stem = snowballstemmer.stemmer("english").stemWords

SPLITS = {"seal": ["dev", "test_in_domain", "test_out_domain"], "apibench-hf": ["eval"]}


def words(text):
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return stem([w for w in re.split(r"[^a-z0-9]+", text.lower()) if w and w not in STOP])


def lines(path):
    return [json.loads(l) for l in open(path)]


def bm25(set_dir, split):
    tools = lines(os.path.join(set_dir, "tools.jsonl"))
    bm = BM25Okapi([words(t["name"] + " " + t.get("description", "")) for t in tools])
    queries = lines(os.path.join(set_dir, f"{split}.jsonl"))
    at1 = at5 = 0
    for q in queries:
        scores = bm.get_scores(words(q["query"]))
        top = sorted(range(len(tools)), key=lambda i: (-scores[i], i))[:5]
        names = [tools[i]["name"] for i in top]
        at1 += names[0] in q["expect"]
        at5 += any(n in q["expect"] for n in names)
    n = max(len(queries), 1)
    return round(at1 / n, 3), round(at5 / n, 3), len(queries), len(tools)


def main():
    root = sys.argv[1]
    binary = sys.argv[2] if len(sys.argv) > 2 else "target/release/examples/search_eval"
    for name, splits in SPLITS.items():
        set_dir = os.path.join(root, name)
        if not os.path.isdir(set_dir):
            continue
        for split in splits:
            if not os.path.exists(os.path.join(set_dir, f"{split}.jsonl")):
                continue
            run = lambda *flags: json.loads(subprocess.run([binary, set_dir, split, *flags], check=True,
                                                           capture_output=True, text=True).stdout)
            mixed, lexical = run(), run("--lexical")
            b1, b5, nq, nt = bm25(set_dir, split)
            print(f"{name:12} {split:16} {nq:4} queries {nt:5} tools | muster mixed @1 {mixed['recall_at_1']:.3f} @5 {mixed['recall_at_5']:.3f}"
                  f" | muster BM25F @1 {lexical['recall_at_1']:.3f} @5 {lexical['recall_at_5']:.3f} | bm25 @1 {b1:.3f} @5 {b5:.3f}")


main()
