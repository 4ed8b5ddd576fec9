#!/usr/bin/env python3
"""Extracts public tool-retrieval sets from fetched git repositories into
muster's eval shape, fetching nothing: each set becomes OUT/<set>/tools.jsonl
({"name", "description", "inputSchema"}), OUT/<set>/<split>.jsonl
({"query", "expect": [names]}) and OUT/<set>/LICENSE (copied from the repo).

  extract.py OUT --seal SEAL_GIT_DIR --gorilla GORILLA_GIT_DIR --metatool METATOOL_GIT_DIR \
      [--mcp SNAPSHOT_DIR]... [--livemcp DIR] [--toolbench DIR] [--bfcl GORILLA_GIT_DIR] \
      [--mcptoolbench DIR] [--mcpbench DIR LISTINGS_DIR] [--restbench DIR]

SEAL_GIT_DIR is a clone (or bare git dir) of github.com/fairyshine/Seal-Tools
(Apache-2.0); GORILLA_GIT_DIR one of github.com/ShishirPatil/gorilla
(Apache-2.0). Sets written:

- seal: the 4,076 tools of Seal-Tools_Dataset/tool.jsonl; splits dev,
  test_in_domain and test_out_domain, single-tool queries only (the tool the
  query's one call names).
- apibench-hf: APIBench's Hugging Face APIs (data/api/huggingface_api.jsonl,
  one tool per distinct api_name: its domain, functionality and
  description); split eval from data/apibench/huggingface_eval.json (the
  instruction text before "###Output", expecting its api_name), and train
  from huggingface_train.json when the repository holds it.
- metatool: MetaTool's plugin benchmark (github.com/HowieHwong/MetaTool,
  MIT; the "plugin tools and thousands of single-tool queries" issue 22
  quotes): the 199 tools of dataset/plugin_des.json (name → description)
  and the single-tool queries of dataset/data/all_clean_data.csv (Query,
  Tool). A query listed more than once (50 of them, 11 with different
  tools) becomes one row expecting every tool it was listed with. Split by
  the SHA-256 of the query text: tune (first byte < 77, ~30 %) and test
  (the rest, held out), each file in hash order, so its first N lines are a
  deterministic sample.
- mcp: the tools of real MCP servers' snapshots (--mcp, each DIR's *.json,
  `{"tools": [...]}` as `muster discover` writes them), named
  mcp.<file stem>.<tool>, the tool's title and annotations.title before
  its description as the deferred index reads them. No queries: a
  cross-domain set (another set's queries over these tools) for the
  control tool's load floor.
- bfcl (--bfcl, a gorilla clone): the Berkeley Function-Calling
  Leaderboard's multiple-function categories, a tune set for issue 35
  (see bfcl()).
- mcptoolbench (--mcptoolbench, an MCPToolBenchPP clone): 428 imperative
  asks over the 43 tools of three real MCP servers, a report set (see
  mcptoolbench()).
- mcpbench (--mcpbench, an MCP-Bench clone and its servers' listings):
  long requests over 28 real MCP servers, each expecting several tools
  (see mcpbench()).
- restbench (--restbench, a RestGPT clone): real requests over the TMDB
  and Spotify REST APIs, each expecting the operations that solve it, a
  report set (see restbench()).
"""
import argparse, csv, hashlib, io, json, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from extract_common import git_dir, show, write  # noqa: E402




JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean",
              "list": "array", "dict": "object"}


def seal(repo, out):
    g = git_dir(repo)
    out = os.path.join(out, "seal")
    os.makedirs(out, exist_ok=True)
    tools, names = [], set()
    for line in show(g, "Seal-Tools_Dataset/tool.jsonl").splitlines():
        t = json.loads(line)
        name = t["api_name"]
        if name in names:
            continue
        names.add(name)
        props = {
            p: {"type": JSON_TYPES.get(v.get("type"), "string"), "description": v.get("description", "")}
            for p, v in (t.get("parameters") or {}).items()
        }
        tools.append({
            "name": name,
            "description": t.get("api_description", ""),
            "inputSchema": {"type": "object", "properties": props, "required": t.get("required") or []},
        })
    write(out, "tools.jsonl", tools)
    for split in ["dev", "test_in_domain", "test_out_domain"]:
        rows, multi = [], []
        for line in show(g, f"Seal-Tools_Dataset/{split}.jsonl").splitlines():
            q = json.loads(line)
            apis = {c["api"] for c in q["calling"]}
            if len(apis) == 1 and apis <= names:
                rows.append({"query": q["query"], "expect": sorted(apis)})
            elif len(apis) > 1 and apis <= names:
                multi.append({"query": q["query"], "expect": sorted(apis)})
        write(out, f"{split}.jsonl", rows)
        write(out, f"{split}_multi.jsonl", multi)
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write("From https://github.com/fairyshine/Seal-Tools (Seal-Tools_Dataset/), "
                "under the Apache License 2.0 below.\n\n" + show(g, "LICENSE"))


def hf_name(api_name):
    return re.sub(r"[^A-Za-z0-9_-]+", "_", api_name).strip("_")[:64]


def apibench(repo, out):
    g = git_dir(repo)
    out = os.path.join(out, "apibench-hf")
    os.makedirs(out, exist_ok=True)
    tools, names = [], {}
    for line in show(g, "data/api/huggingface_api.jsonl").splitlines():
        t = json.loads(line)
        name = hf_name(t["api_name"])
        if name in names.values():
            continue
        names[t["api_name"]] = name
        parts = [t.get("functionality"), t.get("domain"), t.get("description")]
        text = ". ".join(" ".join(x) if isinstance(x, list) else str(x) for x in parts if x)
        tools.append({"name": name, "description": text})
    write(out, "tools.jsonl", tools)
    for split in ["eval", "train"]:
        rows = []
        try:
            text = show(g, f"data/apibench/huggingface_{split}.json")
        except subprocess.CalledProcessError:
            print(f"apibench-hf: no huggingface_{split}.json in {repo} (a snapshot may leave large files out)")
            continue
        for q in json.loads("[" + ",".join(text.splitlines()) + "]"):
            api = (q.get("api_data") or {}).get("api_name")
            if api not in names:
                continue
            text = q["code"].split("###Output")[0].replace("###Instruction:", "").strip()
            rows.append({"query": text, "expect": [names[api]]})
        write(out, f"{split}.jsonl", rows)
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write("From https://github.com/ShishirPatil/gorilla (data/api, data/apibench), "
                "under the Apache License 2.0 below.\n\n" + show(g, "LICENSE"))


def metatool(repo, out):
    g = git_dir(repo)
    out = os.path.join(out, "metatool")
    os.makedirs(out, exist_ok=True)
    described = json.loads(show(g, "dataset/plugin_des.json"))
    write(out, "tools.jsonl", [{"name": n, "description": d} for n, d in described.items()])
    expect, rows, unknown = {}, 0, {}
    for row in csv.DictReader(io.StringIO(show(g, "dataset/data/all_clean_data.csv"))):
        query, tool = row["Query"].strip(), row["Tool"].strip()
        rows += 1
        if tool not in described:
            unknown[tool] = unknown.get(tool, 0) + 1
            continue
        if query:
            expect.setdefault(query, set()).add(tool)
    digest = lambda q: hashlib.sha256(q.encode()).digest()
    splits = {"tune": [], "test": []}
    for query in sorted(expect, key=lambda q: (digest(q), q)):
        split = "tune" if digest(query)[0] < 77 else "test"
        splits[split].append({"query": query, "expect": sorted(expect[query])})
    for split, qs in splits.items():
        write(out, f"{split}.jsonl", qs)
    multi = {"tune": [], "test": []}
    seen = set()
    for row in json.loads(show(g, "dataset/data/multi_tool_query_golden.json")):
        query, want = row["query"].strip(), sorted(set(row["tool"]))
        if not query or query in seen or not all(t in described for t in want):
            continue
        seen.add(query)
        multi["tune" if digest(query)[0] < 77 else "test"].append({"query": query, "expect": want})
    for split, qs in multi.items():
        qs.sort(key=lambda r: (digest(r["query"]), r["query"]))
        write(out, f"multi_{split}.jsonl", qs)
    print(f"metatool: multi-tool queries tune {len(multi['tune'])}, test {len(multi['test'])}")
    dropped = sum(unknown.values())
    print(f"metatool: {len(described)} tools, {rows} query rows, {dropped} naming an unknown tool dropped"
          f" {sorted(unknown.items())}, {len(expect)} distinct queries:"
          f" tune {len(splits['tune'])}, test {len(splits['test'])}")
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write("From https://github.com/HowieHwong/MetaTool (dataset/plugin_des.json, "
                "dataset/data/all_clean_data.csv), under the MIT License below.\n\n" + show(g, "LICENSE"))


def mcp(dirs, out):
    out = os.path.join(out, "mcp")
    os.makedirs(out, exist_ok=True)
    tools = []
    for d in dirs:
        for file in sorted(os.listdir(d)):
            if not file.endswith(".json"):
                continue
            server = file[: -len(".json")]
            for t in json.load(open(os.path.join(d, file)))["tools"]:
                titles = []
                for title in [t.get("title"), (t.get("annotations") or {}).get("title")]:
                    if isinstance(title, str) and title.strip() and title.strip() not in titles:
                        titles.append(title.strip())
                text = ". ".join(titles + [t.get("description") or ""]) if titles else t.get("description") or ""
                tools.append({"name": f"mcp.{server}.{t['name']}", "description": text,
                              "inputSchema": t.get("inputSchema")})
    write(out, "tools.jsonl", tools)
    print(f"mcp: {len(tools)} tools from {', '.join(dirs)}")


def server_key(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def livemcp(repo, out):
    """LiveMCPBench (github.com/icip-cas/LiveMCPBench, Apache-2.0): the 527
    tools of the 70 servers of tools/LiveMCPTool/tools.json, named
    mcp.<server>.<tool> (the server's name made a key), each server's
    description after the tool's as `server: ...`; and the 95 annotated
    tasks of annotated_data/all_annotations.json two ways: `tasks` (the
    Question, expecting every tool its annotation lists: multi-tool) and
    `steps` (each step of a task whose annotation lists as many steps as
    tools, expecting the tool in the same place; a tool name several
    servers offer expects each of them). Never tuned on."""
    g = git_dir(repo)
    out = os.path.join(out, "livemcp")
    os.makedirs(out, exist_ok=True)
    tools, by_tool = [], {}
    for server in json.loads(show(g, "tools/LiveMCPTool/tools.json")):
        key = server_key(server["name"])
        for listing in server["tools"].values():
            for t in listing["tools"]:
                name = f"mcp.{key}.{t['name']}"
                if any(x["name"] == name for x in tools):
                    continue
                tools.append({"name": name, "description": t.get("description") or "",
                              "inputSchema": t.get("inputSchema")})
                by_tool.setdefault(t["name"], []).append(name)
    write(out, "tools.jsonl", tools)
    tasks, steps = [], []
    for task in json.loads(show(g, "annotated_data/all_annotations.json")):
        meta = task["Annotator Metadata"]
        listed = lambda text: [re.sub(r"^\d+\.\s*", "", l).strip() for l in text.split("\n") if l.strip()]
        want = [by_tool.get(t, []) for t in listed(meta["Tools"])]
        expect = sorted({n for names in want for n in names})
        if expect:
            tasks.append({"query": task["Question"], "expect": expect})
        said = listed(meta["Steps"])
        if len(said) == len(want):
            steps.extend({"query": q, "expect": sorted(w)} for q, w in zip(said, want) if w)
    write(out, "tasks.jsonl", tasks)
    write(out, "steps.jsonl", steps)
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write("From https://github.com/icip-cas/LiveMCPBench (tools/LiveMCPTool/tools.json, "
                "annotated_data/all_annotations.json), under the license below.\n\n" + show(g, "LICENSE"))
    print(f"livemcp: {len(tools)} tools, {len(tasks)} tasks, {len(steps)} steps")


def mcptoolbench(repo, out):
    """MCPToolBench++ (github.com/mcp-tool-bench/MCPToolBenchPP; the
    repository carries no licence file, so nothing of it is committed or
    redistributed: the set is built here and read in place): the single-call
    queries of its browser and file-system categories (data/browser/
    browser_0724_single_v3.json, data/file_system/filesystem_0723_single.json:
    428 imperative asks such as "Click the button within the iframe
    identified by #embedFrame") over the union of the tools those queries
    were offered (43: the Playwright and Puppeteer servers' 32 and the
    reference file-system server's 11), named mcp.<server>.<tool>; each
    query expects its labelled tool and the `similar_tools` the label lists
    (puppeteer_click beside playwright_click). The other categories'
    files are not in the snapshot (search, map, pay) or offer one tool
    (finance). Never tuned on."""
    g = git_dir(repo)
    out = os.path.join(out, "mcptoolbench")
    os.makedirs(out, exist_ok=True)
    tools, rows = {}, []
    for path in ["data/browser/browser_0724_single_v3.json",
                 "data/file_system/filesystem_0723_single.json"]:
        for item in json.loads(show(g, path)):
            server_of = {t: server_key(s) for s, ts in item["mcp_tools_dict"].items() for t in ts}
            for t in item["tools"]:
                name = f"mcp.{server_of[t['name']]}.{t['name']}"
                tools.setdefault(name, {"name": name, "description": t.get("description") or "",
                                        "inputSchema": t.get("input_schema")})
            expect = set()
            for label in item["function_call_label"]:
                for x in [label] + (label.get("similar_tools") or []):
                    expect.add(f"mcp.{server_key(x['mcp_server'])}.{x['name']}")
            rows.append({"query": item["query"], "expect": sorted(expect)})
    missing = {e for r in rows for e in r["expect"]} - set(tools)
    assert not missing, missing
    write(out, "tools.jsonl", [tools[n] for n in sorted(tools)])
    write(out, "test.jsonl", rows)
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write("From https://github.com/mcp-tool-bench/MCPToolBenchPP, which carries no licence "
                "file: for local measurement only, not redistributed.\n")
    print(f"mcptoolbench: {len(tools)} tools, {len(rows)} queries")


METHODS = ("get", "post", "put", "patch", "delete")


def openapi_tools(spec, server):
    """One tool per operation of an OpenAPI document, as an agent platform
    that turns a spec into tools names it: `<server>.<operationId>`, its
    summary and description, and its path, query and JSON-body parameters
    ($refs to components resolved one level) as the input schema. Returns
    {(METHOD, path): tool}."""
    def deref(x):
        while isinstance(x, dict) and "$ref" in x:
            node = spec
            for part in x["$ref"].lstrip("#/").split("/"):
                node = node[part]
            x = node
        return x
    tools = {}
    for path, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            props, required = {}, []
            for prm in [deref(x) for x in shared + op.get("parameters", [])]:
                if prm.get("in") not in ("path", "query"):
                    continue
                schema = dict(deref(prm.get("schema") or {}))
                schema["description"] = (prm.get("description") or schema.get("description") or "").strip()
                props[prm["name"]] = schema
                if prm.get("required"):
                    required.append(prm["name"])
            body = deref(op.get("requestBody") or {}).get("content", {}).get("application/json", {})
            for k, v in deref(deref(body.get("schema") or {})).get("properties", {}).items():
                props.setdefault(k, deref(v))
            parts = [x.strip() for x in [op.get("summary") or "", op.get("description") or ""] if x.strip()]
            text = " ".join(x if x[-1] in ".!?:" or x is parts[-1] else x + "." for x in parts)
            schema = {"type": "object", "properties": props}
            if required:
                schema["required"] = sorted(set(required))
            tools[(method.upper(), path)] = {"name": f"{server}.{op['operationId']}",
                                             "description": text, "inputSchema": schema}
    return tools


def restbench(repo, out):
    """RestBench (github.com/Yifan-Song793/RestGPT, MIT): real users'
    requests over two real REST APIs, TMDB (100, datasets/tmdb.json) and
    Spotify (57, datasets/spotify.json), each labelled with the calls that
    solve it ("GET /search/person", then "GET /person/{person_id}/
    movie_credits"): 2.3 calls on average, mostly of one API. The catalog
    is both specs' operations together (specs/*_oas.json: 54 + 40, see
    openapi_tools), so a request must find its API's operations beside the
    other's; each request expects every operation its solution lists. A
    request whose solution names a call neither spec has ("GET /track/{id}"
    where Spotify's is /tracks/{id}) is left out, not guessed. A report
    set: never tuned on."""
    g = git_dir(repo)
    out = os.path.join(out, "restbench")
    os.makedirs(out, exist_ok=True)
    tools, rows, dropped = {}, [], []
    for server in ["tmdb", "spotify"]:
        ops = openapi_tools(json.loads(show(g, f"specs/{server}_oas.json")), server)
        tools.update({t["name"]: t for t in ops.values()})
        # A label names a path parameter as it likes ("/person/{movie_id}/...").
        ops = {(m, re.sub(r"\{[^}]*\}", "{}", p)): t for (m, p), t in ops.items()}
        for item in json.loads(show(g, f"datasets/{server}.json")):
            keys = [(c.split()[0].upper(), re.sub(r"\{[^}]*\}", "{}", c.split()[1]))
                    for c in item["solution"]]
            if any(k not in ops for k in keys):
                dropped.append(item["solution"])
                continue
            expect = []
            for k in keys:
                if ops[k]["name"] not in expect:
                    expect.append(ops[k]["name"])
            rows.append({"query": item["query"], "expect": expect})
    write(out, "tools.jsonl", [tools[n] for n in sorted(tools)])
    write(out, "test.jsonl", rows)
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write(show(g, "LICENSE"))
    print(f"restbench: {len(tools)} tools, {len(rows)} queries "
          f"({len(dropped)} dropped, naming a call neither spec has: {dropped})")


def mcpbench(repo, listings, out):
    """MCP-Bench (github.com/Accenture/mcp-bench, Apache-2.0 by its README;
    no licence file, so nothing of it is committed: the set is built here
    and read in place): the 104 tasks of tasks/mcpbench_tasks_*_runner_
    format.json over the tools of its 28 servers. The repository holds the
    servers' code, not their listings: LISTINGS is a directory of
    `{"server": display name, "tools": [...]}` files, each the `tools/list`
    of one server started from mcp_servers/commands.json
    (scripts/search-eval/mcpbench/list_tools.py records them). Tools are named
    mcp.<server>.<tool> (the display name made a key); a task's query is its
    fuzzy_description (the request in a user's words, naming no tool) and
    it expects every tool of the task's servers its task_description names
    (`Wikipedia:get_article` or a bare `convert_batch`). Tasks naming no
    tool are left out. Split by the SHA-256 of the query: tune (first byte
    < 128) and report; `tasks` holds all."""
    g = git_dir(repo)
    out = os.path.join(out, "mcpbench")
    os.makedirs(out, exist_ok=True)
    tools, of_server = [], {}
    for file in sorted(os.listdir(listings)):
        if not file.endswith(".json"):
            continue
        listing = json.load(open(os.path.join(listings, file)))
        key = server_key(listing["server"])
        for t in listing["tools"]:
            name = f"mcp.{key}.{t['name']}"
            tools.append({"name": name, "description": t.get("description") or "",
                          "inputSchema": t.get("inputSchema")})
            of_server.setdefault(listing["server"], []).append(t["name"])
    rows, step_rows = [], []
    for split in ["single", "multi_2server", "multi_3server"]:
        data = json.loads(show(g, f"tasks/mcpbench_tasks_{split}_runner_format.json"))
        for group in data["server_tasks"]:
            for task in group["tasks"]:
                said = task["task_description"]
                expect = sorted(
                    f"mcp.{server_key(s)}.{t}" for s in group["servers"] for t in of_server.get(s, [])
                    if re.search(r"(?<![A-Za-z0-9_\-])" + re.escape(t) + r"(?![A-Za-z0-9_\-])", said))
                if expect:
                    rows.append({"query": task["fuzzy_description"].strip(), "expect": expect})
                for step in steps(said, group["servers"], of_server):
                    step["task"] = task["fuzzy_description"].strip()
                    step_rows.append(step)
    rows.sort(key=lambda r: hashlib.sha256(r["query"].encode()).digest())
    tune = [r for r in rows if hashlib.sha256(r["query"].encode()).digest()[0] < 128]
    in_tune = lambda r: hashlib.sha256(r.pop("task").encode()).digest()[0] < 128
    step_tune, step_report = [], []
    for r in step_rows:
        (step_tune if in_tune(r) else step_report).append(r)
    write(out, "steps_tune.jsonl", step_tune)
    write(out, "steps_report.jsonl", step_report)
    write(out, "tools.jsonl", tools)
    write(out, "tasks.jsonl", rows)
    write(out, "tune.jsonl", tune)
    write(out, "report.jsonl", [r for r in rows if r not in tune])
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write("From https://github.com/Accenture/mcp-bench (Apache-2.0 by its README; no licence "
                "file): for local measurement only, not redistributed.\n")
    print(f"mcpbench: {len(tools)} tools of {len(of_server)} servers, {len(rows)} tasks "
          f"({len(tune)} tune), {len(step_rows)} steps ({len(step_tune)} tune)")


def steps(said, servers, of_server):
    """The steps of an MCP-Bench task description ("2) Retrieve gene
    annotation for BRAF with BioMCP:gene_getter (gene_id_or_symbol=...)")
    that name exactly one tool, each with the tool's name, its server's
    name, arguments, identifiers and quoted values taken out ("Retrieve
    gene annotation for BRAF with"; four words at least), expecting that
    tool. Written by someone who knew the
    tool, as LiveMCPBench's steps are: a tune set for telling a server's
    tools apart, the steps of a task in the same half as the task."""
    names = {f"mcp.{server_key(s)}.{t}": (s, t) for s in servers for t in of_server.get(s, [])}
    out = []
    for piece in re.split(r"(?:^|\s)(?:\d+[.)]|[a-z][.)]|[ivx]+[.)]|•)\s|(?<=[.;:])\s+(?=[A-Z])|\n", said):
        named = [n for n, (s, t) in names.items()
                 if re.search(r"(?<![A-Za-z0-9_\-])" + re.escape(t) + r"(?![A-Za-z0-9_\-])", piece or "")]
        if len(named) != 1:
            continue
        server, tool = names[named[0]]
        text = re.sub(re.escape(server) + r"\s*:\s*", " ", piece, flags=re.I)
        text = re.sub(r"(?<![A-Za-z0-9_\-])" + re.escape(tool) + r"(?![A-Za-z0-9_\-])", " ", text)
        text = re.sub(r"\([^()]*\)|\[[^\]]*\]|\{[^{}]*\}|<[^>]*>|\"[^\"]*\"|“[^”]*”|`[^`]*`"
                      r"|\w+\s*=\s*\S+", " ", text)
        # Identifiers (brand_name, tokenAddress) are argument names: out.
        text = " ".join(w for w in text.split() if not re.search(r"_|[a-z][A-Z]", w))
        text = text.strip(" ,;:.")
        if len(text.split()) >= 4:
            out.append({"query": text, "expect": [named[0]]})
    return out


def toolbench(repo, out):
    """StableToolBench's solvable test queries (github.com/THUNLP-MT/StableToolBench,
    Apache-2.0; solvable_queries/test_instruction/G*.json): 765 real-style
    user requests over RapidAPI services, each expecting its "relevant
    APIs" (2.35 on average), over the union of the APIs the queries list
    (2,479). A service is a server: its API named mcp.<service>.<api>
    (both made keys), described by its api_description, its required and
    optional parameters an input schema. Never tuned on."""
    g = git_dir(repo)
    out = os.path.join(out, "toolbench")
    os.makedirs(out, exist_ok=True)
    tools, names = [], {}
    rows = []
    for group in ["G1_instruction", "G1_category", "G1_tool", "G2_instruction", "G2_category", "G3_instruction"]:
        for q in json.loads(show(g, f"solvable_queries/test_instruction/{group}.json")):
            for a in q["api_list"]:
                pair = (a["tool_name"], a["api_name"])
                if pair in names:
                    continue
                name = f"mcp.{server_key(a['tool_name']) or 'x'}.{server_key(a['api_name']) or 'x'}"
                while name in names.values():
                    name += "_"
                names[pair] = name
                props = {}
                for p in (a.get("required_parameters") or []) + (a.get("optional_parameters") or []):
                    props[p["name"]] = {"type": str(p.get("type") or "string").lower(),
                                        "description": p.get("description") or ""}
                required = [p["name"] for p in a.get("required_parameters") or []]
                tools.append({"name": name, "description": a.get("api_description") or "",
                              "inputSchema": {"type": "object", "properties": props, "required": required}})
            want = sorted({names[tuple(r)] for r in q["relevant APIs"] if tuple(r) in names})
            if want:
                rows.append({"query": q["query"], "expect": want, "group": group})
    write(out, "tools.jsonl", tools)
    write(out, "test.jsonl", rows)
    # Halves by the SHA-256 of the request (first byte < 128: tune), each in
    # file order: a tune half for rules only a set with services can tell,
    # and the other half to report them on (docs/search.md, 2026-12-06).
    half = lambda r: hashlib.sha256(r["query"].encode()).digest()[0] < 128
    write(out, "test_tune.jsonl", [r for r in rows if half(r)])
    write(out, "test_report.jsonl", [r for r in rows if not half(r)])
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write("From https://github.com/THUNLP-MT/StableToolBench (solvable_queries/test_instruction), "
                "under the license below.\n\n" + show(g, "LICENSE"))
    print(f"toolbench: {len(tools)} tools, {len(rows)} queries, "
          f"{sum(len(r['expect']) for r in rows) / max(len(rows), 1):.2f} expected each")


def bfcl(repo, out):
    """The Berkeley Function-Calling Leaderboard's multiple-function
    categories (github.com/ShishirPatil/gorilla,
    berkeley-function-call-leaderboard/bfcl_eval/data, Apache-2.0):
    BFCL_v4_{live_multiple,live_parallel_multiple,multiple,parallel_multiple}.
    Tools: the union of every question's candidate functions (a name listed
    with different descriptions keeps its first), named as written
    (`ChaDri.change_drink`, `triangle_properties.get`: the part before the
    last `.` is the namespace); queries: the user turns of the question,
    expecting the names of its ground truth. Splits `live` (live_multiple
    and live_parallel_multiple: 1,075 user-contributed requests) and
    `synthetic` (multiple and parallel_multiple). A tune set (issue 35),
    never reported."""
    g = git_dir(repo)
    base = "berkeley-function-call-leaderboard/bfcl_eval/data"
    out = os.path.join(out, "bfcl")
    os.makedirs(out, exist_ok=True)
    tools, seen = [], set()
    splits = {"live": ["live_multiple", "live_parallel_multiple"],
              "synthetic": ["multiple", "parallel_multiple"]}
    for split, cats in splits.items():
        rows = []
        for cat in cats:
            answers = {}
            for line in show(g, f"{base}/possible_answer/BFCL_v4_{cat}.json").splitlines():
                a = json.loads(line)
                answers[a["id"]] = sorted({n for call in a["ground_truth"] for n in call})
            for line in show(g, f"{base}/BFCL_v4_{cat}.json").splitlines():
                q = json.loads(line)
                for f in q["function"]:
                    if f["name"] in seen:
                        continue
                    seen.add(f["name"])
                    params = f.get("parameters") or {}
                    props = {k: {"type": JSON_TYPES.get(v.get("type"), v.get("type") or "string"),
                                 "description": v.get("description") or ""}
                             for k, v in (params.get("properties") or {}).items()}
                    tools.append({"name": f["name"], "description": f.get("description") or "",
                                  "inputSchema": {"type": "object", "properties": props,
                                                  "required": params.get("required") or []}})
                turns = [m["content"] for turn in q["question"] for m in turn if m.get("role") == "user"]
                expect = answers.get(q["id"], [])
                if turns and expect:
                    rows.append({"query": "\n".join(turns), "expect": expect})
        write(out, f"{split}.jsonl", rows)
        print(f"bfcl {split}: {len(rows)} queries")
    write(out, "tools.jsonl", tools)
    with open(os.path.join(out, "LICENSE"), "w") as f:
        f.write("From https://github.com/ShishirPatil/gorilla (berkeley-function-call-leaderboard/"
                "bfcl_eval/data), under the license below.\n\n" + show(g, "LICENSE"))
    print(f"bfcl: {len(tools)} tools")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--seal")
    p.add_argument("--gorilla")
    p.add_argument("--metatool")
    p.add_argument("--mcp", action="append", default=[])
    p.add_argument("--livemcp")
    p.add_argument("--toolbench")
    p.add_argument("--bfcl", help="a gorilla clone, for the BFCL tune set")
    p.add_argument("--mcptoolbench", help="an MCPToolBenchPP clone, a report set")
    p.add_argument("--mcpbench", nargs=2, metavar=("MCP_BENCH_CLONE", "LISTINGS_DIR"),
                   help="an MCP-Bench clone and its servers' listings, a multi-server task set")
    p.add_argument("--restbench", help="a RestGPT clone, for RestBench (a report set)")
    a = p.parse_args()
    if a.restbench:
        restbench(a.restbench, a.out)
    if a.bfcl:
        bfcl(a.bfcl, a.out)
    if a.mcptoolbench:
        mcptoolbench(a.mcptoolbench, a.out)
    if a.mcpbench:
        mcpbench(*a.mcpbench, a.out)
    if a.toolbench:
        toolbench(a.toolbench, a.out)
    if a.livemcp:
        livemcp(a.livemcp, a.out)
    if a.seal:
        seal(a.seal, a.out)
    if a.gorilla:
        apibench(a.gorilla, a.out)
    if a.metatool:
        metatool(a.metatool, a.out)
    if a.mcp:
        mcp(a.mcp, a.out)


main()
