#!/usr/bin/env python3
"""Recall@1 / recall@5 of muster's search and of a plain BM25 on the
extracted sets, and the tuning of the encoder mix, in one run. Fetches
nothing. Needs `pip install rank_bm25 snowballstemmer`.

  run.py EVAL_DIR [--bin BIN] [--tune-sample N] [--test-sample N]
         [--pick-dir DIR] [--raw FILE] [--check N] [--from-raw FILE]

EVAL_DIR is extract.py's OUT. BIN defaults to
target/release/examples/search_eval (cargo build --release --example
search_eval). One process of BIN scores every set (each distinct text
encoded once):
- TUNE sets, the mix's grid (alpha x cosine floor x normalization) chosen on
  the mean of recall@1 and @5 over them: MetaTool tune (first
  --tune-sample queries, default 2,000; 0 for all) and Seal-Tools dev;
- REPORT sets, never tuned on: MetaTool test (first --test-sample, default
  3,000; 0 for all), Seal-Tools test_in_domain and test_out_domain, APIBench-HF eval;
- with --pick-dir, the top 10 per query by the chosen mix (lexical score and
  cosine apart) for MetaTool test, Seal-Tools test_in_domain and
  cross-domain asks: APIBench-HF and Seal-Tools queries over MetaTool's
  tools, MetaTool queries over the real MCP servers' tools (set mcp).

Plain BM25 is rank_bm25's BM25Okapi (k1 1.5, b 0.75) over name +
description with snowball stemming and English stop words, the baseline
issue 22 names, on the same queries. Prints the grid, the chosen points
and one table row per set; --raw keeps BIN's JSON lines."""
import argparse, json, os, re, subprocess, time

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


def words(text):
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return stem([w for w in re.split(r"[^a-z0-9]+", text.lower()) if w and w not in STOP])


def lines(path):
    return [json.loads(l) for l in open(path)]


def bm25(tools_dir, queries_file, limit):
    tools = lines(os.path.join(tools_dir, "tools.jsonl"))
    bm = BM25Okapi([words(t["name"] + " " + t.get("description", "")) for t in tools])
    queries = lines(queries_file)[:limit or None]
    at1 = at5 = share5 = 0
    for q in queries:
        scores = bm.get_scores(words(q["query"]))
        top = sorted(range(len(tools)), key=lambda i: (-scores[i], i))[:5]
        names = [tools[i]["name"] for i in top]
        at1 += names[0] in q["expect"]
        at5 += any(n in q["expect"] for n in names)
        share5 += sum(n in q["expect"] for n in names) / min(max(len(q["expect"]), 1), 5)
    n = max(len(queries), 1)
    return round(at1 / n, 3), round(at5 / n, 3), round(share5 / n, 3)


def spec(label, root, tools, queries, limit=None):
    tools_dir, queries_file = os.path.join(root, tools), os.path.join(root, queries)
    if not (os.path.exists(os.path.join(tools_dir, "tools.jsonl")) and os.path.exists(queries_file)):
        return None
    return label, tools_dir, queries_file, limit


def arg(s):
    label, tools_dir, queries_file, limit = s
    return f"{label}={tools_dir}:{queries_file}" + (f":{limit}" if limit else "")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--bin", default="target/release/examples/search_eval")
    p.add_argument("--tune-sample", type=int, default=2000)
    p.add_argument("--test-sample", type=int, default=3000)
    p.add_argument("--pick-dir")
    p.add_argument("--raw")
    p.add_argument("--from-raw", help="read BIN's JSON lines from this file (a --raw of an earlier run) instead of running BIN")
    p.add_argument("--model", help="BIN's --model: minilm or static (default: the library's)")
    for flag in ("--alphas", "--floors", "--norms"):
        p.add_argument(flag, help=f"BIN's {flag} (the grid)")
    p.add_argument("--check", type=int, default=0,
                   help="compare the example's mix with the library's on the first N tune queries")
    a = p.parse_args()
    r = a.root
    tune = [spec("metatool/tune", r, "metatool", "metatool/tune.jsonl", a.tune_sample),
            spec("seal/dev", r, "seal", "seal/dev.jsonl")]
    report = [spec("metatool/test", r, "metatool", "metatool/test.jsonl", a.test_sample),
              spec("seal/test_in_domain", r, "seal", "seal/test_in_domain.jsonl"),
              spec("seal/test_out_domain", r, "seal", "seal/test_out_domain.jsonl"),
              spec("apibench-hf/eval", r, "apibench-hf", "apibench-hf/eval.jsonl"),
              spec("livemcp/steps", r, "livemcp", "livemcp/steps.jsonl"),
              spec("livemcp/tasks", r, "livemcp", "livemcp/tasks.jsonl")]
    pick = [report[0], report[1],
            spec("cross/apibench-hf-on-metatool", r, "metatool", "apibench-hf/eval.jsonl"),
            spec("cross/metatool-on-mcp", r, "mcp", "metatool/test.jsonl", a.test_sample),
            spec("cross/seal-on-metatool", r, "metatool", "seal/test_in_domain.jsonl")]
    tune, report, pick = ([s for s in x if s] for x in (tune, report, pick))
    cmd = [a.bin] + (["--check", str(a.check)] if a.check else [])
    cmd += ["--model", a.model] if a.model else []
    for flag in ("alphas", "floors", "norms"):
        cmd += [f"--{flag}", getattr(a, flag)] if getattr(a, flag) else []
    cmd += [x for s in tune for x in ("--tune", arg(s))]
    cmd += [x for s in report for x in ("--report", arg(s))]
    if a.pick_dir:
        cmd += ["--pick-dir", a.pick_dir] + [x for s in pick for x in ("--pick", arg(s))]
    started = time.time()
    raw = open(a.raw, "w") if a.raw else None
    rows = []
    if a.from_raw:
        cmd = ["cat", a.from_raw]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        for line in proc.stdout:
            rows.append(json.loads(line))
            if raw:
                raw.write(line)
                raw.flush()
    if proc.returncode:
        raise SystemExit(f"{a.bin} exited {proc.returncode}")
    print(f"{a.bin}: {time.time() - started:.0f} s")

    print("\nGrid on the tune sets (recall@1 / @5; mean = mean of the four):")
    sets = [s[0] for s in tune]
    grid = {}
    for row in rows:
        if row.get("role") == "tune" and row.get("ranker") == "mix":
            key = (row["norm"], row["alpha"], row["floor"])
            grid.setdefault(key, {})[row["set"]] = (row["recall_at_1"], row["recall_at_5"])
    print("| norm | alpha | floor | " + " | ".join(sets) + " | mean |")
    print("|---|---|---|" + "---|" * len(sets) + "---|")
    for (norm, alpha, floor), per in grid.items():
        mean = sum(sum(per[s]) / 2 for s in sets) / len(sets)
        cells = " | ".join(f"{per[s][0]:.3f} / {per[s][1]:.3f}" for s in sets)
        print(f"| {norm} | {alpha} | {floor} | {cells} | {mean:.4f} |")
    for row in rows:
        if "chosen" in row or "winner" in row or "check" in row or "pick" in row:
            print(json.dumps(row))

    print("\nPer set (recall@1 / @5 / share of the expected tools in the top 5):")
    chosen = [row["chosen"] for row in rows if "tune_mean" in row]
    label = lambda p: f"mix {p['norm']} a={p['alpha']} f={p['floor']}"
    points = chosen + [p for p in ({"norm": "abs", "alpha": 0.8, "floor": 0.1},) if p not in [
        {k: c[k] for k in ("norm", "alpha", "floor")} for c in chosen]]
    print("| set | role | queries | tools | plain BM25 | BM25F | " + " | ".join(label(p) for p in points) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(points))
    for role, specs in (("tune", tune), ("report", report)):
        for s in specs:
            mine = [row for row in rows if row.get("set") == s[0] and row.get("role") == role]
            b1, b5, bs = bm25(s[1], s[2], s[3])
            lex = next(row for row in mine if row["ranker"] == "bm25f")
            cells = []
            for pt in points:
                m = next((row for row in mine if row["ranker"] == "mix" and all(row[k] == pt[k] for k in ("norm", "alpha", "floor"))), None)
                cells.append(f"{m['recall_at_1']:.3f} / {m['recall_at_5']:.3f} / {m['share_at_5']:.3f}" if m else "")
            print(f"| {s[0]} | {role} | {lex['queries']} | {lex['tools']} | {b1:.3f} / {b5:.3f} / {bs:.3f} | "
                  f"{lex['recall_at_1']:.3f} / {lex['recall_at_5']:.3f} / {lex['share_at_5']:.3f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
