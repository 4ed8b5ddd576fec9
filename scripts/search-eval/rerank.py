#!/usr/bin/env python3
"""A learned rerank of muster's candidates, measured on dumps before it is
built (issue 35; docs/search-figures.md, "A learned rerank"). Fetches
nothing; needs numpy.

  search_rank --cache DIR --report ... (the tune sets) --dump TUNE_DUMP
  rerank.py fit TUNE_DUMP MODEL.json [--train mt,mtm,sd,sdm,bfl,bfs] [--held stbt,mbt,mbst] \
      [--drop FEATURE,...]
  search_rank --cache DIR --report ... (the report sets) --dump REPORT_DUMP
  rerank.py apply MODEL.json REPORT_DUMP OUT   # then compare.py OUT --rankers rerank,shipped

A query's candidates are the union of three top 10s of the dump: the
shipped mix (`shipped`), BM25F alone (`bm25f`) and MiniLM alone
(`minilm`). Each candidate has eight features:

- 1/rank in the shipped top 10, in BM25F's, in MiniLM's top 100 (0 when
  absent), and ln(1 + MiniLM rank) (5 past 100);
- name coverage: the share of the words of the tool's own name (after its
  last `.`; camelCase, snake and kebab split; a word's first 5 letters;
  without `get`, `the`, `a`, `mcp` and a few more) that the request has;
- description coverage: the share of the request's words found in the
  first 40 words of the tool's description;
- whether it is of the shipped first tool's server (the name before its
  last `.`), and the share of the shipped top 10 of its server.

`fit` trains one linear score by pairwise logistic loss (every expected
candidate against every other candidate of the same query, each set
weighing the same, L2 1e-3, 8,000 full-batch gradient steps of 0.5, from
zero: deterministic) on the --train sets, prints each set's @1 / @5 /
share@5 before and after and the mean over the --held sets (tune sets
the model never saw: the selection criterion), and writes the weights.
`apply` adds the reranked top 10 to each row as `rerank`."""
import argparse, collections, json, math, re

import numpy as np

STOP = {"get", "the", "a", "an", "of", "to", "for", "and", "in", "on", "with", "by", "mcp", "is"}
FEATURES = ["rr_shipped", "rr_bm25f", "rr_minilm", "ln_minilm_rank", "name_cover",
            "description_cover", "first_server", "server_share"]
_catalogs = {}


def words(text):
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [w.lower()[:5] for w in re.split(r"[^A-Za-z0-9]+", text) if w]


def server(name):
    return name.rsplit(".", 1)[0] if "." in name else ""


def catalog(tools_dir):
    if tools_dir not in _catalogs:
        _catalogs[tools_dir] = {t["name"]: t for t in map(json.loads, open(f"{tools_dir}/tools.jsonl"))}
    return _catalogs[tools_dir]


DROPPED = set()


def features(row):
    """The candidates of one dumped query and their feature rows (a
    feature in DROPPED reads 0, to measure what it carries)."""
    query = set(words(row["query"])) - STOP
    shipped, bm25f, minilm = row["shipped"], row["bm25f"], row["minilm"]
    pool = list(dict.fromkeys(shipped[:10] + bm25f[:10] + minilm[:10]))
    first = server(shipped[0]) if shipped else ""
    per_server = collections.Counter(server(x) for x in shipped[:10])
    tools = catalog(row["tools"])

    def rr(ranking, name):
        return 1 / (ranking.index(name) + 1) if name in ranking else 0.0

    rows = []
    for name in pool:
        own = set(words(name.rsplit(".", 1)[-1])) - STOP
        described = set(words(tools.get(name, {}).get("description") or "")[:40]) - STOP
        rows.append([
            rr(shipped[:10], name), rr(bm25f[:10], name), rr(minilm[:100], name),
            math.log1p(minilm.index(name)) if name in minilm else 5.0,
            len(own & query) / len(own) if own else 0.0,
            len(described & query) / (len(query) or 1),
            float(first != "" and server(name) == first),
            per_server[server(name)] / 10,
        ])
    x = np.array(rows)
    for name in DROPPED:
        x[:, FEATURES.index(name)] = 0.0
    return x, pool


def scores(expect, ranking):
    return np.array([ranking[0] in expect if ranking else 0, any(e in ranking[:5] for e in expect),
                     len(set(expect) & set(ranking[:5])) / min(len(expect), 5)], float)


def rerank(weights, row):
    x, pool = features(row)
    order = np.argsort(-(x @ weights), kind="stable")
    return [pool[i] for i in order][:10]


def fit(a):
    by_set = collections.defaultdict(list)
    for row in map(json.loads, open(a.dump)):
        by_set[row["set"]].append(row)
    train, held = a.train.split(","), a.held.split(",")
    diffs, weight = [], []
    for name in train:
        for row in by_set[name]:
            x, pool = features(row)
            y = np.array([p in row["expect"] for p in pool])
            for i in np.where(y)[0]:
                for j in np.where(~y)[0]:
                    diffs.append(x[i] - x[j])
                    weight.append(1 / len(by_set[name]))
    d, w = np.array(diffs), np.array(weight)
    w /= w.sum()
    theta = np.zeros(d.shape[1])
    for _ in range(8000):
        theta -= 0.5 * (-(d * (w / (1 + np.exp(d @ theta)))[:, None]).sum(0) + 1e-3 * theta)
    means = {"before": [], "after": []}
    for name in train + held:
        rows = by_set[name]
        before = sum(scores(r["expect"], r["shipped"]) for r in rows) / len(rows)
        after = sum(scores(r["expect"], rerank(theta, r)) for r in rows) / len(rows)
        print(json.dumps({"set": name, "queries": len(rows), "held": name in held,
                          "before": before.round(3).tolist(), "after": after.round(3).tolist()}))
        if name in held:
            means["before"].append(before.mean())
            means["after"].append(after.mean())
    print(json.dumps({"held_mean_before": round(float(np.mean(means["before"])), 4),
                      "held_mean_after": round(float(np.mean(means["after"])), 4),
                      "weights": dict(zip(FEATURES, theta.round(3).tolist()))}))
    with open(a.model, "w") as f:
        json.dump({"features": FEATURES, "weights": theta.tolist()}, f)


def apply(a):
    theta = np.array(json.load(open(a.model))["weights"])
    with open(a.out, "w") as f:
        for row in map(json.loads, open(a.dump)):
            row["rerank"] = rerank(theta, row)
            f.write(json.dumps(row) + "\n")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit")
    f.add_argument("dump")
    f.add_argument("model")
    f.add_argument("--train", default="mt,mtm,sd,sdm,bfl,bfs")
    f.add_argument("--held", default="stbt,mbt,mbst")
    f.add_argument("--drop", default="", help="features to leave out, comma-separated")
    g = sub.add_parser("apply")
    g.add_argument("model")
    g.add_argument("dump")
    g.add_argument("out")
    a = p.parse_args()
    if a.command == "fit":
        DROPPED.update(x for x in a.drop.split(",") if x)
        assert DROPPED <= set(FEATURES), DROPPED - set(FEATURES)
    fit(a) if a.command == "fit" else apply(a)


main()
