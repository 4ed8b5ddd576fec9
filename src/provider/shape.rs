//! The `tools` value each provider's request takes, ready to send: OpenAI
//! Chat Completions, the OpenAI Responses API, the Anthropic Messages API
//! and Gemini's `generateContent`, field for field as `docs/providers.md`
//! lists them.
//!
//! Deferral is expressed the way each provider does it:
//! - **Chat Completions** and **Gemini** have no tool search, so deferred
//!   tools stay behind muster's own control tool, which is offered as a
//!   function like the others;
//! - **Responses**: deferred tools go in `namespace` tools, one per kind
//!   (MCP server or group), every function in them with
//!   `defer_loading: true`, beside the hosted `{"type": "tool_search"}`;
//! - **Anthropic**: deferred tools with `defer_loading: true` beside the
//!   `tool_search_tool_bm25_20251119` server tool.
//!
//! With the provider's own search in the request, muster's control tool is
//! left out: two search tools would compete for the same requests.
//!
//! This module renders what it is given, in the order given; it decides
//! nothing about which tools go where, and keeps every schema exactly as it
//! is held (property order included).

use crate::schema::Schema;
use serde::Serialize;

/// A provider's request shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// OpenAI Chat Completions: `{"type": "function", "function": {...}}`.
    Openai,
    /// OpenAI Responses API function tools: `{"type": "function", "name", ...}`.
    OpenaiResponses,
    /// Anthropic Messages: `{"name", "description", "input_schema"}`.
    Anthropic,
    /// Gemini `generateContent`: one `{"functionDeclarations": [...]}` tool
    /// holding `{"name", "description", "parameters"}` per function.
    Gemini,
}

impl Format {
    /// Every format, in documentation order.
    pub const ALL: [Format; 4] = [
        Format::Openai,
        Format::OpenaiResponses,
        Format::Anthropic,
        Format::Gemini,
    ];

    /// `openai`, `openai-responses`, `anthropic` or `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Openai => "openai",
            Format::OpenaiResponses => "openai-responses",
            Format::Anthropic => "anthropic",
            Format::Gemini => "gemini",
        }
    }

    /// The format called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether the provider searches deferred tools itself, so deferred
    /// tools are sent marked `defer_loading` and muster's control tool is
    /// left out.
    pub fn searches_itself(self) -> bool {
        !matches!(self, Format::Openai | Format::Gemini)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One tool as sent: its provider name, description and input schema.
#[derive(Debug, Clone, Copy)]
pub struct Tool<'a> {
    /// The provider name.
    pub name: &'a str,
    /// The description as offered.
    pub description: &'a str,
    /// The input schema as offered.
    pub input_schema: &'a Schema,
}

/// Deferred tools of one kind (an MCP server, a group, a name's first
/// part): a Responses `namespace`.
#[derive(Debug, Clone)]
pub struct Namespace<'a> {
    /// The kind's name, spelt for providers.
    pub name: String,
    /// What the kind's tools are for (never empty).
    pub description: String,
    /// Its deferred tools, in rank order.
    pub tools: Vec<Tool<'a>>,
}

/// What one request's `tools` hold.
#[derive(Debug, Clone, Default)]
pub struct Offer<'a> {
    /// The offered tools in roster order, muster's control tool included.
    pub offered: Vec<Tool<'a>>,
    /// The provider name of muster's control tool, when it is offered.
    pub control: Option<&'a str>,
    /// Deferred tools by kind, kinds in the rank order of their best tool;
    /// empty when the request should not carry them.
    pub deferred: Vec<Namespace<'a>>,
}

/// The Anthropic server tool that searches deferred tools by words (BM25);
/// muster's control tool takes words too.
pub const ANTHROPIC_SEARCH_TYPE: &str = "tool_search_tool_bm25_20251119";
/// Its name.
pub const ANTHROPIC_SEARCH_NAME: &str = "tool_search_tool_bm25";

#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Chat {
        r#type: &'static str,
        function: ChatFunction<'a>,
    },
    Responses(ResponsesFunction<'a>),
    ResponsesSearch {
        r#type: &'static str,
    },
    ResponsesNamespace {
        r#type: &'static str,
        name: &'a str,
        description: &'a str,
        tools: Vec<ResponsesFunction<'a>>,
    },
    Anthropic(AnthropicTool<'a>),
    AnthropicSearch {
        r#type: &'static str,
        name: &'static str,
    },
    Gemini {
        #[serde(rename = "functionDeclarations")]
        function_declarations: Vec<ChatFunction<'a>>,
    },
}

#[derive(Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Schema,
}

#[derive(Serialize)]
struct ResponsesFunction<'a> {
    r#type: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Schema,
    /// Responses functions are strict unless told otherwise; muster's
    /// schemas are not written for strict mode, and `check` judges calls.
    strict: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    defer_loading: bool,
}

#[derive(Serialize)]
struct AnthropicTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Schema,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    defer_loading: bool,
}

fn responses<'a>(tool: &Tool<'a>, defer_loading: bool) -> ResponsesFunction<'a> {
    ResponsesFunction {
        r#type: "function",
        name: tool.name,
        description: tool.description,
        parameters: tool.input_schema,
        strict: false,
        defer_loading,
    }
}

fn anthropic<'a>(tool: &Tool<'a>, defer_loading: bool) -> AnthropicTool<'a> {
    AnthropicTool {
        name: tool.name,
        description: tool.description,
        input_schema: tool.input_schema,
        defer_loading,
    }
}

/// One tool as an MCP `tools/list` result lists it.
#[derive(Serialize)]
struct McpTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a serde_json::Value>,
    description: &'a str,
    #[serde(rename = "inputSchema")]
    input_schema: &'a Schema,
    #[serde(rename = "outputSchema", skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a serde_json::Value>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<&'a serde_json::Value>,
}

/// `tools` as an MCP `tools/list` result's `tools` value, compact JSON, in
/// the order given: each tool's name, description and input schema as
/// offered, and the `title`, `outputSchema`, `annotations`, `_meta` and
/// `execution` its server listed, unchanged, so a client's confirmation
/// rules (and its task support) see what the server declared.
pub fn render_mcp(tools: &[(Tool<'_>, Option<&crate::catalog::ToolHints>)]) -> String {
    let tools: Vec<McpTool<'_>> = tools
        .iter()
        .map(|(t, hints)| McpTool {
            name: t.name,
            title: hints.and_then(|h| h.title.as_ref()),
            description: t.description,
            input_schema: t.input_schema,
            output_schema: hints.and_then(|h| h.output_schema.as_ref()),
            annotations: hints.and_then(|h| h.annotations.as_ref()),
            meta: hints.and_then(|h| h.meta.as_ref()),
            execution: hints.and_then(|h| h.execution.as_ref()),
        })
        .collect();
    serde_json::to_string(&tools).unwrap_or_else(|_| "[]".into())
}

/// Whether a request in `format` carries `offer`'s deferred tools itself
/// (and leaves muster's control tool out): the provider searches, and
/// something is deferred.
fn native(format: Format, offer: &Offer<'_>) -> bool {
    format.searches_itself() && offer.deferred.iter().any(|n| !n.tools.is_empty())
}

/// Every function a request in `format` sends for `offer`, in the order
/// [`render`] writes them: what a provider's acceptance is judged on.
pub fn sent<'o, 'a>(format: Format, offer: &'o Offer<'a>) -> Vec<&'o Tool<'a>> {
    let native = native(format, offer);
    let mut out: Vec<&Tool<'a>> = offer
        .offered
        .iter()
        .filter(|t| !(native && Some(t.name) == offer.control))
        .collect();
    if native {
        out.extend(offer.deferred.iter().flat_map(|n| n.tools.iter()));
    }
    out
}

/// The `tools` value for `format`, as pretty JSON with a trailing newline.
///
/// Offered tools come first in roster order; with deferred tools and a
/// provider that searches itself, muster's control tool is left out and
/// the provider's search tool and the deferred tools follow.
///
/// # Example
/// ```
/// use muster::provider::shape::{render, Format, Offer, Tool};
/// let schema = serde_json::json!({"type": "object", "properties": {"b": {}, "a": {}}});
/// let schema = muster::schema::Schema::new(&schema);
/// let offer = Offer {
///     offered: vec![Tool { name: "mcp__kb__search", description: "Search.", input_schema: &schema }],
///     ..Offer::default()
/// };
/// let text = render(Format::Anthropic, &offer);
/// assert!(text.contains("\"input_schema\""));
/// ```
pub fn render(format: Format, offer: &Offer<'_>) -> String {
    let native = native(format, offer);
    let offered = offer
        .offered
        .iter()
        .filter(|t| !(native && Some(t.name) == offer.control));
    let mut items: Vec<Item<'_>> = Vec::new();
    match format {
        Format::Openai => items.extend(offered.map(|t| Item::Chat {
            r#type: "function",
            function: ChatFunction {
                name: t.name,
                description: t.description,
                parameters: t.input_schema,
            },
        })),
        Format::OpenaiResponses => {
            items.extend(offered.map(|t| Item::Responses(responses(t, false))));
            if native {
                items.push(Item::ResponsesSearch {
                    r#type: "tool_search",
                });
                for namespace in offer.deferred.iter().filter(|n| !n.tools.is_empty()) {
                    items.push(Item::ResponsesNamespace {
                        r#type: "namespace",
                        name: &namespace.name,
                        description: &namespace.description,
                        tools: namespace.tools.iter().map(|t| responses(t, true)).collect(),
                    });
                }
            }
        }
        Format::Anthropic => {
            items.extend(offered.map(|t| Item::Anthropic(anthropic(t, false))));
            if native {
                items.push(Item::AnthropicSearch {
                    r#type: ANTHROPIC_SEARCH_TYPE,
                    name: ANTHROPIC_SEARCH_NAME,
                });
                for namespace in &offer.deferred {
                    items.extend(
                        namespace
                            .tools
                            .iter()
                            .map(|t| Item::Anthropic(anthropic(t, true))),
                    );
                }
            }
        }
        Format::Gemini => {
            let function_declarations: Vec<ChatFunction<'_>> = offered
                .map(|t| ChatFunction {
                    name: t.name,
                    description: t.description,
                    parameters: t.input_schema,
                })
                .collect();
            // An empty declaration list is not a tool: no tools, no item.
            if !function_declarations.is_empty() {
                items.push(Item::Gemini {
                    function_declarations,
                });
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&items).expect("tools have string keys only");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn offer<'a>(schema: &'a Schema, deferred: bool) -> Offer<'a> {
        let tool = |name| Tool {
            name,
            description: "d",
            input_schema: schema,
        };
        Offer {
            offered: vec![tool("tools__load"), tool("web__search")],
            control: Some("tools__load"),
            deferred: if deferred {
                vec![Namespace {
                    name: "mcp__mail".into(),
                    description: "Mail.".into(),
                    tools: vec![tool("mcp__mail__get")],
                }]
            } else {
                Vec::new()
            },
        }
    }

    fn names(text: &str) -> Vec<String> {
        let v: Value = serde_json::from_str(text).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t.get("name")
                    .or_else(|| t.pointer("/function/name"))
                    .or_else(|| t.get("type"))
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn chat_completions_keeps_the_control_tool_and_sends_no_deferred_tool() {
        let schema = Schema::new(&json!({"type": "object"}));
        let text = render(Format::Openai, &offer(&schema, true));
        assert_eq!(names(&text), ["tools__load", "web__search"]);
    }

    #[test]
    fn providers_that_search_replace_the_control_tool_with_their_own() {
        let schema = Schema::new(&json!({"type": "object"}));
        let text = render(Format::Anthropic, &offer(&schema, true));
        assert_eq!(
            names(&text),
            ["web__search", ANTHROPIC_SEARCH_NAME, "mcp__mail__get"]
        );
        let text = render(Format::OpenaiResponses, &offer(&schema, true));
        assert_eq!(names(&text), ["web__search", "tool_search", "mcp__mail"]);
        // Without deferred tools nothing is searched: the roster as it is.
        let text = render(Format::Anthropic, &offer(&schema, false));
        assert_eq!(names(&text), ["tools__load", "web__search"]);
    }

    /// Issue 21 item 5: muster printed no Gemini shape at all.
    #[test]
    fn gemini_takes_one_tool_of_function_declarations_and_keeps_the_control_tool() {
        let schema = Schema::new(&json!({"type": "object", "properties": {"b": {}, "a": {}}}));
        let text = render(Format::Gemini, &offer(&schema, true));
        let v: Value = serde_json::from_str(&text).unwrap();
        let declarations = v[0]["functionDeclarations"].as_array().unwrap();
        assert_eq!(v.as_array().unwrap().len(), 1);
        let names: Vec<&str> = declarations
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["tools__load", "web__search"]);
        assert_eq!(declarations[0]["description"], "d");
        // The schema as held, property order kept.
        assert!(text.find("\"b\"").unwrap() < text.find("\"a\"").unwrap());
        let empty = render(Format::Gemini, &Offer::default());
        assert_eq!(empty, "[]\n");
    }

    #[test]
    fn the_format_names_round_trip() {
        for format in Format::ALL {
            assert_eq!(Format::from_name(format.name()), Some(format));
        }
        assert_eq!(Format::from_name("gemini"), Some(Format::Gemini));
        assert_eq!(Format::from_name("vertex"), None);
    }
}
