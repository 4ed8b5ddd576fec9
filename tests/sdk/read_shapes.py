"""Reads muster's provider formats into each provider's own SDK request types.

Usage: python read_shapes.py FILE...  where each FILE is named *.<format>.json
(openai, openai-responses, anthropic, gemini), as tests/golden/ holds them.
Exits non-zero, naming the file and tool, when an SDK type refuses an item or
an item carries a key the SDK's type does not declare. Run by
tests/providers.rs with MUSTER_SDK_PYTHON set (.ci/run installs the SDKs).
"""

import json
import sys
import typing

from pydantic import TypeAdapter


def declared(typed_dict) -> set:
    keys = set()
    for klass in typed_dict.__mro__:
        keys |= set(getattr(klass, "__annotations__", {}))
    return keys


def only_declared(item: dict, typed_dicts, where: str) -> None:
    allowed = set().union(*(declared(t) for t in typed_dicts))
    extra = set(item) - allowed
    if extra:
        raise SystemExit(f"{where}: keys the SDK does not declare: {sorted(extra)}")


def read_openai(items, where):
    from openai.types.chat import ChatCompletionToolParam
    from openai.types.shared_params import FunctionDefinition

    TypeAdapter(typing.List[ChatCompletionToolParam]).validate_python(items)
    for item in items:
        only_declared(item, [ChatCompletionToolParam], where)
        only_declared(item["function"], [FunctionDefinition], where + " " + item["function"]["name"])


def read_openai_responses(items, where):
    from openai.types.responses import FunctionToolParam, NamespaceToolParam, ToolParam, ToolSearchToolParam

    TypeAdapter(typing.List[ToolParam]).validate_python(items)
    kinds = {"function": FunctionToolParam, "namespace": NamespaceToolParam, "tool_search": ToolSearchToolParam}
    for item in items:
        only_declared(item, [kinds[item["type"]]], where + " " + item.get("name", item["type"]))
        for inner in item.get("tools", []):
            only_declared(inner, [FunctionToolParam], where + " " + inner["name"])


def read_anthropic(items, where):
    from anthropic.types import ToolParam, ToolSearchToolBm25_20251119Param, ToolUnionParam

    TypeAdapter(typing.List[ToolUnionParam]).validate_python(items)
    for item in items:
        kind = ToolSearchToolBm25_20251119Param if "type" in item else ToolParam
        only_declared(item, [kind], where + " " + item["name"])


def read_gemini(items, where):
    from google.genai import types

    # pydantic models with extra="forbid": an unknown key is refused.
    tools = [types.Tool.model_validate(item) for item in items]
    for tool in tools:
        for declaration in tool.function_declarations or []:
            if not declaration.name or declaration.parameters is None:
                raise SystemExit(f"{where}: a declaration without name or parameters")


READERS = {
    "openai": read_openai,
    "openai-responses": read_openai_responses,
    "anthropic": read_anthropic,
    "gemini": read_gemini,
}


def main(paths):
    if not paths:
        raise SystemExit("no files given")
    for path in paths:
        fmt = path.rsplit("/", 1)[-1].split(".")[-2]
        with open(path, encoding="utf-8") as f:
            items = json.load(f)
        READERS[fmt](items, path)
        print(f"ok {path}: {len(items)} item(s) read as {fmt}")


if __name__ == "__main__":
    main(sys.argv[1:])
