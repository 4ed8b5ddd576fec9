#!/usr/bin/env python3
"""The dense encoder's weights and its reference, from the upstream files.

  encoder.py export SRC_DIR OUT_FILE
      Read all-MiniLM-L6-v2's model.safetensors (f32) from SRC_DIR and
      write the compact file muster loads (models/minilm-l6-v2/model.bin):
      every matrix int8 with one f32 scale per row (the word embeddings at
      64 levels: requantize_words), vectors f32 (format below).
  encoder.py reference SRC_DIR TEXTS.jsonl OUT.jsonl [--from-bin FILE]
      Tokenize each {"text": ...} with the upstream tokenizer.json (the
      `tokenizers` package) and embed it with a numpy forward pass (BERT,
      mean pooling, L2 norm), from the f32 safetensors or, with --from-bin,
      from muster's int8 file. Writes {"text", "ids", "vector"} lines.

Needs numpy, and `tokenizers` for `reference`. Fetches nothing.

model.bin: b"MUSTENC1", then u32 LE header fields: vocab, hidden, layers,
heads, intermediate, positions; then tensors in a fixed order, each matrix
as rows × (f32 scale, cols × i8) and each vector as f32:
  word_embeddings [vocab × hidden] (matrix)
  position_embeddings + token_type_embeddings[0] [positions × hidden] (matrix)
  embeddings LayerNorm weight, bias (vectors)
  per layer: query, key, value, attention output (matrix [hidden × hidden]
  + bias), attention LayerNorm weight, bias; intermediate (matrix
  [intermediate × hidden] + bias); output (matrix [hidden × intermediate]
  + bias); output LayerNorm weight, bias.
"""
import json, math, struct, sys

import numpy as np

POSITIONS = 256  # sentence-transformers' max_seq_length for this model
MAGIC = b"MUSTENC1"


def safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}[meta["dtype"]]
        out[name] = np.frombuffer(data[a:b], dtype=dtype).reshape(meta["shape"])
    return out


def tensors(w, layers):
    """(kind, array) in the file's order."""
    e = "embeddings."
    yield "m", w[e + "word_embeddings.weight"]
    yield "m", w[e + "position_embeddings.weight"][:POSITIONS] + w[e + "token_type_embeddings.weight"][0]
    yield "v", w[e + "LayerNorm.weight"]
    yield "v", w[e + "LayerNorm.bias"]
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name in ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"]:
            yield "m", w[p + name + ".weight"]
            yield "v", w[p + name + ".bias"]
        yield "v", w[p + "attention.output.LayerNorm.weight"]
        yield "v", w[p + "attention.output.LayerNorm.bias"]
        for name in ["intermediate.dense", "output.dense"]:
            yield "m", w[p + name + ".weight"]
            yield "v", w[p + name + ".bias"]
        yield "v", w[p + "output.LayerNorm.weight"]
        yield "v", w[p + "output.LayerNorm.bias"]


def quantize(m):
    m = m.astype(np.float32)
    scale = np.abs(m).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round(m / scale[:, None]), -127, 127).astype(np.int8)
    return scale.astype(np.float32), q


# The word embeddings (the largest tensor, 30,522 x 384) keep 64 levels,
# not 255: each int8 row is requantized to -32..31 with the scale, a
# multiple of 1/64 of the int8 step, that keeps the row closest (least
# squared error). Still stored as int8, so model.bin's format and
# muster's reader do not change, and the zlib-compressed file
# (model.bin.z) is 2.6 MB smaller (issue 34). The search is not measurably
# worse: docs/build.md, "Six-bit word embeddings". Exact arithmetic on
# integers and multiples of 1/64, so the same file on any machine.
WORD_LEVELS = (-32, 31)
WORD_STEPS = np.arange(64, 321) / 64.0  # 1.0 .. 5.0 int8 steps per level


def requantize_words(scale, q):
    q8 = q.astype(np.float64)
    lo, hi = WORD_LEVELS
    best_err = np.full(q8.shape[0], np.inf)
    best = np.zeros(q8.shape[0])
    for c in WORD_STEPS:
        err = ((q8 - np.clip(np.round(q8 / c), lo, hi) * c) ** 2).sum(axis=1)
        better = err < best_err
        best_err[better] = err[better]
        best[better] = c
    q6 = np.clip(np.round(q8 / best[:, None]), lo, hi).astype(np.int8)
    return (scale * best.astype(np.float32)).astype(np.float32), q6


def export(src, out):
    w = safetensors(f"{src}/model.safetensors")
    cfg = json.load(open(f"{src}/config.json"))
    dims = [cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"],
            cfg["num_attention_heads"], cfg["intermediate_size"], POSITIONS]
    with open(out, "wb") as f:
        f.write(MAGIC + struct.pack("<6I", *dims))
        for i, (kind, a) in enumerate(tensors(w, cfg["num_hidden_layers"])):
            if kind == "v":
                f.write(a.astype("<f4").tobytes())
            else:
                scale, q = quantize(a)
                if i == 0:
                    scale, q = requantize_words(scale, q)
                for r in range(a.shape[0]):
                    f.write(scale[r:r + 1].astype("<f4").tobytes() + q[r].tobytes())


def load_bin(path):
    """muster's file, dequantized, as the same dict of names as safetensors."""
    data = open(path, "rb").read()
    assert data[:8] == MAGIC
    vocab, hidden, layers, heads, inter, positions = struct.unpack("<6I", data[8:32])
    pos = 32
    shapes = [("m", vocab, hidden), ("m", positions, hidden), ("v", hidden), ("v", hidden)]
    for _ in range(layers):
        shapes += [("m", hidden, hidden), ("v", hidden)] * 4 + [("v", hidden)] * 2
        shapes += [("m", inter, hidden), ("v", inter), ("m", hidden, inter), ("v", hidden), ("v", hidden), ("v", hidden)]
    arrays = []
    for s in shapes:
        if s[0] == "v":
            arrays.append(np.frombuffer(data[pos:pos + 4 * s[1]], dtype="<f4")); pos += 4 * s[1]
        else:
            rows, cols = s[1], s[2]
            raw = np.frombuffer(data[pos:pos + rows * (4 + cols)], dtype=np.uint8).reshape(rows, 4 + cols); pos += rows * (4 + cols)
            scale = raw[:, :4].copy().view("<f4")[:, 0]
            arrays.append(raw[:, 4:].copy().view(np.int8).astype(np.float32) * scale[:, None])
    assert pos == len(data)
    # Rebuild the safetensors names (token type already folded in: zero it).
    names = list(names_in_order(layers))
    w = dict(zip(names, arrays))
    w["embeddings.token_type_embeddings.weight"] = np.zeros((2, hidden), np.float32)
    return w, layers, heads


def names_in_order(layers):
    e = "embeddings."
    yield e + "word_embeddings.weight"
    yield e + "position_embeddings.weight"
    yield e + "LayerNorm.weight"
    yield e + "LayerNorm.bias"
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name in ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"]:
            yield p + name + ".weight"
            yield p + name + ".bias"
        yield p + "attention.output.LayerNorm.weight"
        yield p + "attention.output.LayerNorm.bias"
        for name in ["intermediate.dense", "output.dense"]:
            yield p + name + ".weight"
            yield p + name + ".bias"
        yield p + "output.LayerNorm.weight"
        yield p + "output.LayerNorm.bias"


def layer_norm(x, g, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


ERF = np.vectorize(math.erf)


def embed(w, layers, heads, ids):
    x = w["embeddings.word_embeddings.weight"][ids].astype(np.float64)
    x = x + w["embeddings.position_embeddings.weight"][: len(ids)] + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    n, h = x.shape
    d = h // heads
    lin = lambda x, name: x @ w[name + ".weight"].T.astype(np.float64) + w[name + ".bias"]
    for i in range(layers):
        p = f"encoder.layer.{i}."
        q, k, v = (lin(x, p + "attention.self." + t).reshape(n, heads, d).transpose(1, 0, 2) for t in ["query", "key", "value"])
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, h)
        x = layer_norm(x + lin(ctx, p + "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        inter = lin(x, p + "intermediate.dense")
        inter = 0.5 * inter * (1.0 + ERF(inter / math.sqrt(2.0)))
        x = layer_norm(x + lin(inter, p + "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    v = x.mean(0)
    return v / np.linalg.norm(v)


def reference(src, texts, out, from_bin=None):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(f"{src}/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(POSITIONS)
    if from_bin:
        w, layers, heads = load_bin(from_bin)
    else:
        w = safetensors(f"{src}/model.safetensors")
        cfg = json.load(open(f"{src}/config.json"))
        layers, heads = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    with open(out, "w") as f:
        for line in open(texts):
            text = json.loads(line)["text"]
            ids = tok.encode(text).ids
            vec = embed(w, layers, heads, ids)
            f.write(json.dumps({"text": text, "ids": ids, "vector": [round(float(x), 6) for x in vec]}) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "reference":
        fb = sys.argv[sys.argv.index("--from-bin") + 1] if "--from-bin" in sys.argv else None
        reference(sys.argv[2], sys.argv[3], sys.argv[4], fb)
