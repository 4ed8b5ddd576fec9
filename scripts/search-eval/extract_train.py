#!/usr/bin/env python3
"""Extracts training-only tool-retrieval sets (pairs for `finetune.py`,
never ranked as tune or report sets) from fetched git repositories, in
extract.py's shape: OUT/<set>/tools.jsonl ({"name", "description"}) and
OUT/<set>/<split>.jsonl ({"query", "expect": [names]}). Fetches nothing.

  extract_train.py OUT [--toolalpaca TOOLALPACA_GIT_DIR] [--ultratool ULTRATOOL_GIT_DIR]

- toolalpaca (github.com/tangqiaoyu/ToolAlpaca, Apache-2.0): the
  functions of the real and simulated evaluation APIs (data/eval_real.json,
  data/eval_simulated.json; the training file is absent from the
  snapshot), named API.Function, each described by its first line; split
  eval: each instruction expects the functions its golden answer calls.
  Public APIs (Nager.Date, ...): none is a tool of a tune or report set.
- ultratool (github.com/JoeYing1019/UltraTool, no licence file: used for
  measurement only, not for weights that ship): the 1,000 English test
  questions (data/English-dataset/test.json) over the tools each lists
  (22 domains; a name met twice keeps its first description); split
  questions (each expects every tool it lists) and steps (a plan step
  that calls a tool, its numbering cut, expects that tool).
"""
import argparse, ast, json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from extract_common import git_dir, show, write  # noqa: E402


def value(v):
    """A field the file holds either as JSON or as a Python literal's text."""
    return ast.literal_eval(v) if isinstance(v, str) else v


def toolalpaca(repo, out):
    g = git_dir(repo)
    tools, rows = {}, []
    for split in ("eval_real", "eval_simulated"):
        for api in json.loads(show(g, f"data/{split}.json")):
            prefix = re.sub(r"[^A-Za-z0-9]+", "_", api["Name"]).strip("_")
            funcs = value(api["Function_Description"])
            for func, desc in funcs.items():
                if func == "components":
                    continue
                name = f"{prefix}.{func}"
                tools.setdefault(name, {"name": name, "description": desc.split("\n")[0].strip()})
            for q, gold in zip(value(api["Instructions"]), value(api["Golden_Answers"])):
                expect = []
                for step in gold:
                    name = f"{prefix}.{step['Action']}"
                    if name in tools and name not in expect:
                        expect.append(name)
                if expect:
                    rows.append({"query": q.strip(), "expect": expect})
    d = os.path.join(out, "toolalpaca")
    os.makedirs(d, exist_ok=True)
    write(d, "tools.jsonl", [tools[n] for n in sorted(tools)])
    write(d, "eval.jsonl", rows)
    with open(os.path.join(d, "LICENSE"), "w") as f:
        f.write(show(g, "LICENSE"))
    print(f"toolalpaca: {len(tools)} tools, {len(rows)} queries")


def ultratool(repo, out):
    g = git_dir(repo)
    tools, questions, steps = {}, [], []
    for line in show(g, "data/English-dataset/test.json").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        names = []
        for t in item.get("tools") or []:
            name = t.get("name")
            if not name or not isinstance(name, str):
                continue
            tools.setdefault(name, {"name": name, "description": (t.get("description") or "").strip()})
            names.append(name)
        if names:
            questions.append({"query": item["question"].strip(), "expect": list(dict.fromkeys(names))})
        for step in item.get("plan") or []:
            call = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(", step.get("tool") or "")
            if call and call.group(1) in names:
                text = re.sub(r"^\s*[\d.]+\s*", "", step.get("step") or "").strip()
                if text:
                    steps.append({"query": text, "expect": [call.group(1)]})
    d = os.path.join(out, "ultratool")
    os.makedirs(d, exist_ok=True)
    write(d, "tools.jsonl", [tools[n] for n in sorted(tools)])
    write(d, "questions.jsonl", questions)
    write(d, "steps.jsonl", steps)
    print(f"ultratool: {len(tools)} tools, {len(questions)} questions, {len(steps)} steps")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--toolalpaca")
    p.add_argument("--ultratool")
    a = p.parse_args()
    if a.toolalpaca:
        toolalpaca(a.toolalpaca, a.out)
    if a.ultratool:
        ultratool(a.ultratool, a.out)


main()
