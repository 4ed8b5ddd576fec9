#!/usr/bin/env python3
"""Would offering a top tool's prerequisite help? Measured on dumps before
building it (issue 35; docs/search.md, RestBench). Fetches nothing.

  search_rank --cache DIR --report LABEL=TOOLS_DIR:TUNE_QUERIES ... --dump DUMP
  prerequisite.py DATA_DIR DUMP [--top N]

A tool's prerequisite: for a parameter named `<entity>_id` (or `id`,
the entity then read from the tool's name), a tool of the same server
(the name before its last `.`) that finds or lists things (a name or
first description word among search, find, list, lookup, query,
discover, browse), mentions the entity in its name or first 12
description words, and takes no id of that entity itself: the search
that yields the `person_id` that `GET /person/{person_id}/movie_credits`
needs. For each query of the dump, each of the `shipped` ranking's top N
tools (default 1) with a prerequisite not already in the top 5 has it
inserted right after it. Prints per set @1, @5 and share@5 before and
after, and how many rankings changed. Run it on tune sets only."""
import argparse, collections, json, re

FINDS = {"search", "find", "list", "lookup", "query", "discover", "browse"}
GENERIC = {"get", "fetch", "retrieve", "details", "detail", "info", "information",
           "by", "the", "a", "of", "for", "data"}


def words(s):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", s)
    return [w.lower().rstrip("s") if len(w) > 3 else w.lower()
            for w in re.split(r"[^A-Za-z0-9]+", s) if w]


def server(name):
    return name.rsplit(".", 1)[0] if "." in name else None


def entities(tool):
    """The entity word sets of a tool's id parameters."""
    out = []
    for p in ((tool.get("inputSchema") or {}).get("properties") or {}):
        w = words(p)
        if w and w[-1] in ("id", "ids", "i"):
            e = set(w[:-1]) or {x for x in words(tool["name"].rsplit(".", 1)[-1]) if x not in GENERIC}
            if e:
                out.append(e)
    return out


def prerequisites(path):
    tools = {t["name"]: t for t in map(json.loads, open(path))}
    by_server = collections.defaultdict(list)
    for n in tools:
        by_server[server(n)].append(n)
    pre = {}
    for n, t in tools.items():
        if server(n) is None:
            continue
        for e in entities(t):
            for m in sorted(by_server[server(n)]):
                if m == n:
                    continue
                name = set(words(m.rsplit(".", 1)[-1]))
                desc = words(tools[m].get("description") or "")
                if not (name & FINDS or (desc and desc[0] in FINDS)):
                    continue
                if e & (name | set(desc[:12])) and e not in entities(tools[m]):
                    pre.setdefault(n, []).append(m)
    return pre


def scores(expect, top):
    return (bool(top) and top[0] in expect, any(e in top[:5] for e in expect),
            len(set(expect) & set(top[:5])) / min(len(expect), 5))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("dump")
    p.add_argument("--top", type=int, default=1)
    a = p.parse_args()
    catalogs, sums = {}, collections.defaultdict(lambda: [0.0] * 8)
    for row in map(json.loads, open(a.dump)):
        name = row["tools"].rstrip("/").rsplit("/", 1)[-1]
        if name not in catalogs:
            catalogs[name] = prerequisites(f"{a.data}/{name}/tools.jsonl")
        pre, top = catalogs[name], row["shipped"]
        new = list(top)
        for t in top[:a.top]:
            options = sorted(pre.get(t, []), key=lambda m: top.index(m) if m in top else 99)
            if not options or options[0] in new[:5]:
                continue
            if options[0] in new:
                new.remove(options[0])
            new.insert(new.index(t) + 1, options[0])
        s = sums[row["set"]]
        for i, x in enumerate(scores(row["expect"], top) + scores(row["expect"], new)):
            s[i] += x
        s[6] += 1
        s[7] += new != top
    for name, s in sums.items():
        n = s[6]
        print(json.dumps({"set": name, "queries": int(n), "changed": int(s[7]),
                          "before": [round(x / n, 3) for x in s[:3]],
                          "after": [round(x / n, 3) for x in s[3:6]]}))


main()
