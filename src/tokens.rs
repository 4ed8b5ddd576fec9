//! Token counting: what one tool definition costs in the model's context.
//!
//! Providers do not send the JSON of a tool to the model; they render it as
//! text first. For OpenAI chat models that text is a TypeScript-like
//! declaration inside a `functions` namespace:
//!
//! ```text
//! # Tools
//!
//! ## functions
//!
//! namespace functions {
//!
//! // Get the current weather in a given location
//! type get_current_weather = (_: {
//! // The city and state, e.g. San Francisco, CA
//! location: string,
//! // The unit of temperature to return
//! unit?: "celsius" | "fahrenheit",
//! }) => any;
//!
//! } // namespace functions
//! ```
//!
//! muster renders each definition that way and counts it with the OpenAI
//! encodings, built on first use from OpenAI's rank files ([`bpe`]): the
//! counts are tiktoken's (`tests/tokenizer.rs` proves it against
//! tiktoken-rs), and a run builds only the encoding it counts with.
//! A tool's cost is the tokens of its own block (from its `//` description
//! line to the blank line after `=> any;`). The namespace wrapper is paid
//! once per request, whatever the number of tools, and is reported as
//! [`Encoding::wrapper_tokens`]; the plan counts it against the token cap as
//! soon as one tool is offered.
//!
//! The wrapper constant is calibrated on the one public, API-measured case:
//! the OpenAI cookbook's `get_current_weather` tool with its two messages
//! measured 105 prompt tokens on gpt-4 (`cl100k_base`) and 101 on gpt-4o
//! (`o200k_base`). The test `cookbook_weather_example_matches_the_api`
//! reproduces both numbers exactly. Nested objects, `const` and `enum`
//! follow the API-measured cases docs/count.md lists (hmarr/openai-chat-tokens
//! reproduces all of its 36): a nested object's properties are indented two
//! spaces per level and shown without their descriptions, and a `const`
//! beside a `type` is shown as the type.
//!
//! Counting is the one costly step of a plan (building the tokenizer
//! alone takes longer than the rest of a run), so counts are kept in a
//! [`TokenCache`] keyed by the rendered text, and the tokenizer is built
//! only when some definition has no cached count.
//!
//! This module only counts; it never decides what fits.

mod bpe;
pub mod cache;
mod prefix;

pub use bpe::SCAN_MERGE_MAX;
pub use cache::TokenCache;
pub use prefix::{Prefix, SAMPLE_BYTES};

pub use crate::contract::Provider;
use crate::schema::Schema;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt::Write as _;

/// Names the rendering counts are taken of; part of every cache key. Change
/// it whenever [`render_function`] or the counting changes what a
/// definition costs, so counts of the old rendering are not reused.
pub const RENDERING: &str = "openai-tools-v4";

/// [`RENDERING`] for Anthropic's billing: the tool as the JSON object the
/// request sends ([`render_anthropic_tool`]), counted with a proxy
/// encoding. A separate tag keeps the two providers' counts apart in the
/// cache.
pub const RENDERING_ANTHROPIC: &str = "anthropic-tool-json-v2";

/// The tool-use system prompt Anthropic adds to a request with tools and
/// `tool_choice` `auto` or `none` on its current models (Claude 4.x and
/// Sonnet 3.7): the planner's wrapper under `[tokens] provider =
/// "anthropic"`. `count::anthropic` holds the whole per-model table.
pub const ANTHROPIC_TOOL_SYSTEM_PROMPT: u32 = 346;

/// One tool definition to count.
#[derive(Debug, Clone, Copy)]
pub struct Definition<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Description as offered.
    pub description: &'a str,
    /// Input schema as offered.
    pub input_schema: &'a Schema,
}

/// The tokenizer a count uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Encoding {
    /// gpt-4o and later OpenAI models.
    #[default]
    O200kBase,
    /// gpt-4 and gpt-3.5-turbo.
    Cl100kBase,
}

/// Schemas nested deeper than this render as `any`: the model sees no more
/// structure, and a hostile schema cannot exhaust the stack.
const MAX_RENDER_DEPTH: usize = 32;

impl Encoding {
    /// Parses `o200k_base` or `cl100k_base`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "o200k_base" => Some(Self::O200kBase),
            "cl100k_base" => Some(Self::Cl100kBase),
            _ => None,
        }
    }

    /// The encoding's tiktoken name.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    /// The tokenizer, built on first use (it takes longer than the rest
    /// of a run) and then shared.
    fn tokenizer(self) -> &'static bpe::Tokenizer {
        #[cfg(test)]
        tests::TOKENIZER_ASKED.with(|n| n.set(n.get() + 1));
        match self {
            Self::O200kBase => bpe::o200k_base(),
            Self::Cl100kBase => bpe::cl100k_base(),
        }
    }

    /// Tokens of `text` with no special tokens recognised: tiktoken's
    /// `encode_ordinary` length, which `tests/tokenizer.rs` checks on every
    /// definition in the test data and on generated text.
    pub fn count_text(self, text: &str) -> u32 {
        u32::try_from(self.tokenizer().count(text)).unwrap_or(u32::MAX)
    }

    /// Tokens one tool definition costs: its rendered block.
    pub fn count_definition(self, name: &str, description: &str, input_schema: &Value) -> u32 {
        self.count_text(&render_function(name, description, input_schema))
    }

    /// Tokens of each definition, in order, as
    /// [`Encoding::count_definition`] counts them. A count `cache` holds for
    /// the same definition, rendering and encoding is taken from it; the
    /// others are rendered and counted on every core and added to it.
    /// Nothing builds the tokenizer unless some definition is missing from
    /// the cache, and nothing is rendered for a definition it holds.
    ///
    /// # Example
    /// ```
    /// use muster::schema::Schema;
    /// use muster::tokens::{Definition, Encoding, TokenCache};
    /// let schema = serde_json::json!({"type": "object"});
    /// let held = Schema::new(&schema);
    /// let now = Definition { name: "now", description: "The time.", input_schema: &held };
    /// let mut cache = TokenCache::in_memory();
    /// let cold = Encoding::O200kBase.count_definitions(&[now], &mut cache);
    /// let warm = Encoding::O200kBase.count_definitions(&[now], &mut cache);
    /// assert_eq!(cold, warm);
    /// assert_eq!(cold[0], Encoding::O200kBase.count_definition("now", "The time.", &schema));
    /// ```
    pub fn count_definitions(
        self,
        definitions: &[Definition<'_>],
        cache: &mut TokenCache,
    ) -> Vec<u32> {
        self.count_definitions_for(Provider::Openai, definitions, cache)
    }

    /// [`Encoding::count_definitions`] as `provider` renders each
    /// definition ([`render_for`]); the cache key holds the provider's
    /// rendering tag.
    pub fn count_definitions_for(
        self,
        provider: Provider,
        definitions: &[Definition<'_>],
        cache: &mut TokenCache,
    ) -> Vec<u32> {
        let rendering = rendering_of(provider);
        let mut counts = vec![0; definitions.len()];
        let mut missing = Vec::new();
        for (i, d) in definitions.iter().enumerate() {
            let key = cache::key(
                self.name(),
                rendering,
                d.name,
                d.description,
                d.input_schema,
            );
            match cache.get(&key) {
                Some(tokens) => counts[i] = tokens,
                None => missing.push((i, key)),
            }
        }
        // Each missing definition is rendered by the thread that counts it
        // and dropped once counted: 100,000 rendered texts held at once
        // took 31 MB.
        let fresh = self.count_each(missing.len(), |m| {
            Cow::Owned(render_for(provider, &definitions[missing[m].0]))
        });
        for ((i, key), tokens) in missing.iter().zip(fresh) {
            counts[*i] = tokens;
            cache.insert(*key, tokens);
        }
        counts
    }

    /// Tokens of each text, in order: [`Encoding::count_text`] of each,
    /// counted on every core ([`Encoding::count_each`]).
    pub fn count_texts(self, texts: &[&str]) -> Vec<u32> {
        self.count_each(texts.len(), |i| Cow::Borrowed(texts[i]))
    }

    /// [`Encoding::count_texts`] on at most `threads` threads.
    pub fn count_texts_on(self, texts: &[&str], threads: usize) -> Vec<u32> {
        self.count_each_on(texts.len(), threads, |i| Cow::Borrowed(texts[i]))
    }

    /// [`Encoding::count_text`] of `text(i)` for each `i` below `n`, in
    /// order, counted on every core.
    fn count_each<'t>(self, n: usize, text: impl Fn(usize) -> Cow<'t, str> + Sync) -> Vec<u32> {
        self.count_each_on(n, crate::parallel::cores(), text)
    }

    /// [`Encoding::count_each`] on at most `threads` threads (one when
    /// fewer than 64 texts are asked for: starting threads would cost
    /// more). Threads take texts one at a time from a shared counter, so a
    /// few large ones do not leave a core idle, and each thread remembers
    /// the count of every piece it has met ([`Pieces`]).
    fn count_each_on<'t>(
        self,
        n: usize,
        threads: usize,
        text: impl Fn(usize) -> Cow<'t, str> + Sync,
    ) -> Vec<u32> {
        // Nothing to count: never build the tokenizer (a run whose counts
        // are all cached must not pay for it).
        if n == 0 {
            return Vec::new();
        }
        let threads = if n < 64 { 1 } else { threads };
        crate::parallel::map_indices(
            n,
            threads,
            || Pieces::new(self),
            |pieces, i| pieces.count(&text(i)),
        )
    }

    /// Tokens the tool section costs once, however many tools it holds: the
    /// namespace header and footer and the message framing around them.
    ///
    /// A constant per encoding, so a run whose counts are all cached builds
    /// no tokenizer; `wrapper_tokens_are_the_counted_wrapper` checks it
    /// against a fresh count.
    pub fn wrapper_tokens(self) -> u32 {
        match self {
            Self::O200kBase => 11,
            Self::Cl100kBase => 12,
        }
    }

    /// What the tool section costs once under `provider`'s billing:
    /// [`Encoding::wrapper_tokens`] for OpenAI, the tool-use system prompt
    /// ([`ANTHROPIC_TOOL_SYSTEM_PROMPT`]) for Anthropic.
    pub fn wrapper_tokens_for(self, provider: Provider) -> u32 {
        match provider {
            Provider::Openai => self.wrapper_tokens(),
            Provider::Anthropic => ANTHROPIC_TOOL_SYSTEM_PROMPT,
        }
    }

    /// The wrapper's tokens counted afresh, less the overlap.
    #[cfg(test)]
    fn counted_wrapper_tokens(self) -> u32 {
        let text = format!("{WRAPPER_HEAD}{WRAPPER_TAIL}");
        self.count_text(&text)
            .saturating_sub(self.wrapper_overlap())
    }

    /// The provider appends the tool section to the system message, so the
    /// line breaks where the two meet merge into fewer tokens than counting
    /// the pieces apart gives. Calibrated on the cookbook measurement (see
    /// the module docs): 1 token for `cl100k_base`, 2 for `o200k_base`.
    #[cfg(test)]
    fn wrapper_overlap(self) -> u32 {
        match self {
            Self::O200kBase => 2,
            Self::Cl100kBase => 1,
        }
    }
}

/// Counts texts as [`Encoding::count_text`] does, remembering the tokens of
/// each pre-tokenized piece. The encodings split text with their regular
/// expression and encode each piece on its own, so a text's count is the
/// sum of its pieces' counts; definitions repeat most pieces (`string`,
/// ` the`, `?:`), and looking one up costs less than encoding it again.
/// `tests/tokenizer.rs` checks batches counted this way against tiktoken.
struct Pieces {
    tokenizer: &'static bpe::Tokenizer,
    known: rustc_hash::FxHashMap<Box<str>, u32>,
}

impl Pieces {
    fn new(encoding: Encoding) -> Self {
        Self {
            tokenizer: encoding.tokenizer(),
            known: rustc_hash::FxHashMap::default(),
        }
    }

    fn count(&mut self, text: &str) -> u32 {
        // The OpenAI encodings do not normalize (no NFC), so the pieces are
        // split from the text as given, as `Tokenizer::count` splits them.
        let mut total = 0u32;
        for piece in self.tokenizer.split(text) {
            let tokens = match self.known.get(piece) {
                Some(&tokens) => tokens,
                None => {
                    let tokens = self.tokenizer.count_piece(piece.as_bytes());
                    let tokens = u32::try_from(tokens).unwrap_or(u32::MAX);
                    self.known.insert(piece.into(), tokens);
                    tokens
                }
            };
            total = total.saturating_add(tokens);
        }
        total
    }
}

/// The wrapper [`Encoding::wrapper_tokens`] is the count of.
#[cfg(test)]
const WRAPPER_HEAD: &str = "# Tools\n\n## functions\n\nnamespace functions {\n\n";
#[cfg(test)]
const WRAPPER_TAIL: &str = "} // namespace functions";

/// The tag of the rendering `provider` bills: part of every cached
/// count's key.
pub fn rendering_of(provider: Provider) -> &'static str {
    match provider {
        Provider::Openai => RENDERING,
        Provider::Anthropic => RENDERING_ANTHROPIC,
    }
}

/// The text of `d` as `provider` bills it ([`rendering_of`] names the
/// rendering).
pub fn render_for(provider: Provider, d: &Definition<'_>) -> String {
    match provider {
        Provider::Openai => render_function(d.name, d.description, &d.input_schema.value()),
        Provider::Anthropic => anthropic_tool_text(d.name, d.description, d.input_schema.text()),
    }
}

/// One tool as an Anthropic request sends it: compact JSON of `name`,
/// `description` (when not empty) and `input_schema`.
pub fn render_anthropic_tool(name: &str, description: &str, input_schema: &Value) -> String {
    anthropic_tool_text(name, description, &input_schema.to_string())
}

/// [`render_anthropic_tool`] with the schema already written as compact
/// JSON: the object's members are written in order around it, as
/// serde_json writes the object whole.
fn anthropic_tool_text(name: &str, description: &str, input_schema: &str) -> String {
    let mut out = String::with_capacity(48 + name.len() + description.len() + input_schema.len());
    out.push_str("{\"name\":");
    out.push_str(&Value::from(name).to_string());
    if !description.is_empty() {
        out.push_str(",\"description\":");
        out.push_str(&Value::from(description).to_string());
    }
    out.push_str(",\"input_schema\":");
    out.push_str(input_schema);
    out.push('}');
    out
}

/// The request shape a definition is rendered for: the public measurements of the two bill
/// nested objects differently (docs/count.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `tools` (every current client): nested properties flat, each with its description, as
    /// the 2024 `tools` measurements bill them.
    Tools,
    /// The legacy `functions`: nested properties indented two spaces per level without their
    /// descriptions, as the 2023 `functions` measurements bill them.
    Functions,
}

/// Renders one tool the way OpenAI chat models are shown it when the request sends `tools`
/// (what the planner counts: every current client sends `tools`).
pub fn render_function(name: &str, description: &str, input_schema: &Value) -> String {
    render_function_as(Shape::Tools, name, description, input_schema)
}

/// [`render_function`] for the request shape `shape`.
///
/// Definitions under `$defs` (or `definitions`) are rendered once each, before the function,
/// as named types (`type richTextRequest = {…};`), and a reference `#/$defs/NAME` as `NAME`. No
/// public measurement shows how OpenAI renders them, so a count of such a schema is an
/// estimate (`count` notes it `references`); before, the definitions were left out and a
/// reference rendered as `any`, which billed a `$defs` schema at a fraction of what it sends.
pub fn render_function_as(
    shape: Shape,
    name: &str,
    description: &str,
    input_schema: &Value,
) -> String {
    let mut r = Renderer {
        out: String::with_capacity(256 + description.len()),
        budget: MAX_RENDER_NODES,
        shape,
    };
    if !description.is_empty() {
        r.comment(description);
    }
    for key in ["$defs", "definitions"] {
        if let Some(defs) = input_schema.get(key).and_then(Value::as_object) {
            for (def, schema) in defs {
                let _ = write!(r.out, "type {def} = ");
                r.ty(schema, 1, 0);
                r.out.push_str(";\n");
            }
        }
    }
    let has_properties = input_schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if has_properties {
        let _ = writeln!(r.out, "type {name} = (_: {{");
        r.properties(input_schema, 0, 0);
        r.out.push_str("\n}) => any;\n\n");
    } else {
        let _ = write!(r.out, "type {name} = () => any;\n\n");
    }
    r.out
}

/// Schema nodes rendered per tool at most; past it, nodes render as `any`.
/// Keeps a schema built to multiply (a type list naming `object` twice at
/// every level, say) from costing more than a large honest one.
const MAX_RENDER_NODES: usize = 20_000;

struct Renderer {
    out: String,
    budget: usize,
    shape: Shape,
}

impl Renderer {
    fn comment(&mut self, text: &str) {
        for line in text.lines() {
            self.out.push_str("// ");
            self.out.push_str(line);
            self.out.push('\n');
        }
    }

    /// Spends one node of the budget; false once it is gone.
    fn spend(&mut self) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        true
    }

    /// The properties of an object schema, one entry per property, each
    /// entry's first line indented by `indent` spaces (a nested object's own
    /// lines carry their deeper indent; its closing brace none).
    /// For `functions`, descriptions are shown for the top level's
    /// properties only and nested properties are indented, as the 2023
    /// measurements bill them; for `tools`, every property's description is
    /// shown and nothing is indented, as the 2024 measurements bill them
    /// (docs/count.md).
    fn properties(&mut self, schema: &Value, depth: usize, indent: usize) {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (i, (key, prop)) in properties.iter().enumerate() {
            if i > 0 {
                self.out.push('\n');
            }
            if (indent == 0 || self.shape == Shape::Tools)
                && let Some(desc) = prop.get("description").and_then(Value::as_str)
            {
                self.comment(desc);
            }
            self.indent(indent);
            self.out.push_str(key);
            if !required.contains(&key.as_str()) {
                self.out.push('?');
            }
            self.out.push_str(": ");
            self.ty(prop, depth + 1, indent);
            self.out.push(',');
            if let Some(default) = prop.get("default") {
                let _ = write!(self.out, " // default: {default}");
            }
        }
    }

    /// A nested object type: its properties two spaces deeper than the
    /// property that holds it.
    fn object(&mut self, schema: &Value, depth: usize, indent: usize) {
        self.out.push_str("{\n");
        let deeper = match self.shape {
            Shape::Functions => indent + 2,
            Shape::Tools => indent,
        };
        self.properties(schema, depth, deeper);
        self.out.push_str("\n}");
    }

    fn indent(&mut self, indent: usize) {
        for _ in 0..indent {
            self.out.push(' ');
        }
    }

    /// A property's type. A typed schema renders as its type: a `const`
    /// beside a type is billed as the type, and an `enum` shows its values
    /// for string and number types. Literals render only where no type is
    /// given.
    fn ty(&mut self, schema: &Value, depth: usize, indent: usize) {
        if depth > MAX_RENDER_DEPTH || !self.spend() {
            self.out.push_str("any");
            return;
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let named = ["#/$defs/", "#/definitions/"]
                .iter()
                .find_map(|prefix| reference.strip_prefix(prefix))
                .filter(|name| !name.contains('/'));
            self.out.push_str(named.unwrap_or("any"));
            return;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(variants) = schema.get(key).and_then(Value::as_array) {
                self.join(variants.iter(), |r, v| r.ty(v, depth + 1, indent));
                return;
            }
        }
        let ty = schema.get("type");
        let literal_type = match ty {
            None => true,
            Some(Value::String(t)) => matches!(t.as_str(), "string" | "integer" | "number"),
            Some(_) => true,
        };
        if literal_type && let Some(values) = schema.get("enum").and_then(Value::as_array) {
            self.join(values.iter(), |r, v| {
                let _ = write!(r.out, "{v}");
            });
            return;
        }
        if ty.is_none()
            && let Some(value) = schema.get("const")
        {
            let _ = write!(self.out, "{value}");
            return;
        }
        match ty {
            Some(Value::String(t)) => self.named(t, schema, depth, indent),
            Some(Value::Array(types)) => {
                // A type named twice renders once.
                let mut names: Vec<&str> = Vec::new();
                for t in types.iter().filter_map(Value::as_str) {
                    if !names.contains(&t) {
                        names.push(t);
                    }
                }
                self.join(names.into_iter(), |r, t| r.named(t, schema, depth, indent));
            }
            _ if schema.get("properties").is_some() => self.object(schema, depth, indent),
            _ => self.out.push_str("any"),
        }
    }

    fn named(&mut self, name: &str, schema: &Value, depth: usize, indent: usize) {
        match name {
            "string" => self.out.push_str("string"),
            "integer" | "number" => self.out.push_str("number"),
            "boolean" => self.out.push_str("boolean"),
            "null" => self.out.push_str("null"),
            "array" => {
                match schema.get("items") {
                    Some(items) if items.is_object() => self.ty(items, depth + 1, indent),
                    _ => self.out.push_str("any"),
                }
                self.out.push_str("[]");
            }
            "object" if schema.get("properties").is_some() => self.object(schema, depth, indent),
            "object" => self.out.push_str("object"),
            _ => self.out.push_str("any"),
        }
    }

    fn join<T>(&mut self, items: impl Iterator<Item = T>, mut each: impl FnMut(&mut Self, T)) {
        for (i, item) in items.enumerate() {
            if i > 0 {
                self.out.push_str(" | ");
            }
            each(self, item);
        }
    }
}

/// How often this thread has asked for a tokenizer (tests only): a run
/// whose counts are all cached must not.
#[cfg(test)]
pub(crate) fn tokenizer_asked() -> usize {
    tests::TOKENIZER_ASKED.with(std::cell::Cell::get)
}

#[cfg(test)]
mod tests;
