//! `muster.toml`'s settings: caps, tokenizer, deferral, call policy and the
//! lock's settings, each with its default. Groups and agents are read by
//! `agents`.

use super::load::{Loader, Source};
use super::{
    Agent, CallPolicy, Caps, ChatsMode, DEFAULT_CONTROL_TOOL, DEFAULT_ITEM_CAP, DEFAULT_TOKEN_CAP,
    Deferral, Group, Loads, LockMode, LockPolicy, ServerDef, ToolDef, UnknownArguments, bad_name,
    bad_name_code, raw,
};
use crate::contract::CheckMode;
use crate::error::code;
use crate::tokens::{Encoding, Provider};
use std::collections::BTreeMap;

/// What `muster.toml` settles, before the policy is assembled.
pub(super) struct Settings {
    pub(super) caps: Caps,
    pub(super) encoding: Encoding,
    pub(super) provider: Provider,
    pub(super) deferral: Deferral,
    pub(super) calls: CallPolicy,
    pub(super) lock: LockPolicy,
    pub(super) results: super::ResultPolicy,
    pub(super) lock_explicit: bool,
    pub(super) names: crate::provider::NamePolicy,
    pub(super) groups: Vec<Group>,
    pub(super) agents: Vec<Agent>,
    pub(super) default_agent: usize,
    pub(super) current_versions: BTreeMap<String, usize>,
    pub(super) auth: Option<super::AuthPolicy>,
}

impl Loader {
    /// `deferral.loads` with `beyond_items` / `beyond_tokens`.
    fn loads(&mut self, src: &Source, d: &raw::RawDeferral) -> Loads {
        let beyond = |loader: &mut Loader, value: &Option<toml::Spanned<i64>>, key: &str| {
            let value = value.as_ref()?;
            match u32::try_from(*value.get_ref()) {
                Ok(v) => Some(v),
                Err(_) => {
                    loader.problems.push(
                        src.at(value)
                            .coded(code::OUT_OF_RANGE, format!(
                                "deferral.{key} = {} is out of range",
                                value.get_ref()
                            ))
                            .help("use a whole number from 0 to 4294967295, or leave it out for no bound"),
                    );
                    None
                }
            }
        };
        let items = beyond(self, &d.beyond_items, "beyond_items");
        let tokens = beyond(self, &d.beyond_tokens, "beyond_tokens");
        let Some(mode) = &d.loads else {
            return Loads::BeyondCaps { items, tokens };
        };
        match mode.get_ref().as_str() {
            "beyond-caps" => Loads::BeyondCaps { items, tokens },
            "within-caps" => {
                for (value, key) in [
                    (&d.beyond_items, "beyond_items"),
                    (&d.beyond_tokens, "beyond_tokens"),
                ] {
                    if let Some(value) = value {
                        self.problems.push(
                            src.at(value)
                                .coded(code::CONFLICT, format!(
                                    "deferral.{key} is set but deferral.loads is \"within-caps\""
                                ))
                                .help(format!(
                                    "remove deferral.{key}, or set deferral.loads = \"beyond-caps\""
                                )),
                        );
                    }
                }
                Loads::WithinCaps
            }
            other => {
                self.problems.push(
                    src.at(mode)
                        .coded(code::NOT_A_CHOICE, format!("deferral.loads {other:?} is not a choice"))
                        .help("use \"within-caps\" (loads stay within the caps; the plan reserves room for them) or \"beyond-caps\" (the default)"),
                );
                Loads::BeyondCaps { items, tokens }
            }
        }
    }

    pub(super) fn settings(
        &mut self,
        src: Option<&Source>,
        file: raw::MusterFile,
        tools: &[ToolDef],
        servers: &[ServerDef],
    ) -> Settings {
        let fallback = Source::new(self.root.join("muster.toml"), "");
        let src = src.unwrap_or(&fallback);
        let mut caps = Caps {
            items: DEFAULT_ITEM_CAP,
            tokens: DEFAULT_TOKEN_CAP,
        };
        if let Some(raw_caps) = &file.caps {
            let raw_caps = raw_caps.get_ref();
            if let Some(items) = &raw_caps.items {
                caps.items = self
                    .positive(src, items, "caps.items")
                    .unwrap_or(caps.items);
            }
            if let Some(tokens) = &raw_caps.tokens {
                caps.tokens = self
                    .positive(src, tokens, "caps.tokens")
                    .unwrap_or(caps.tokens);
            }
        }
        let mut encoding = Encoding::default();
        if let Some(name) = file.tokens.as_ref().and_then(|t| t.encoding.as_ref()) {
            match Encoding::from_name(name.get_ref()) {
                Some(e) => encoding = e,
                None => self.problems.push(
                    src.at(name)
                        .coded(
                            code::NOT_A_CHOICE,
                            format!("tokens.encoding {:?} is not supported", name.get_ref()),
                        )
                        .help("use \"o200k_base\" (gpt-4o and later) or \"cl100k_base\" (gpt-4)"),
                ),
            }
        }
        let mut names = crate::provider::NamePolicy::default();
        if let Some(separator) = file.names.as_ref().and_then(|n| n.separator.as_ref()) {
            match crate::provider::separator_problem(separator.get_ref()) {
                None => names.separator = separator.get_ref().clone(),
                Some(problem) => self.problems.push(
                    src.at(separator)
                        .coded(code::NAME_INVALID, format!(
                            "names.separator {:?} {problem}",
                            separator.get_ref()
                        ))
                        .help("use 1 to 8 characters from a-z, A-Z, 0-9, _ and -, such as \"__\" (the default)"),
                ),
            }
        }
        let provider = self.provider(src, file.tokens.as_ref(), encoding);
        let deferral = match &file.deferral {
            Some(d) => {
                let d = d.get_ref();
                let control_tool = d
                    .control_tool
                    .as_ref()
                    .map(|n| n.get_ref().clone())
                    .unwrap_or_else(|| DEFAULT_CONTROL_TOOL.to_string());
                if let Some(spanned) = &d.control_tool {
                    if control_tool.starts_with("mcp.") {
                        self.problems.push(
                                src.at(spanned)
                                    .coded(code::RESERVED_NAME, format!(
                                        "deferral.control_tool {control_tool:?} uses the reserved prefix \"mcp.\""
                                    ))
                                    .help("discovered tools are named mcp.<server>.<tool>; give the control tool a name of its own"),
                            );
                    }
                    if let Some(problem) = bad_name(&control_tool) {
                        self.problems.push(src.at(spanned).coded(
                            bad_name_code(&control_tool),
                            format!(
                                "deferral.control_tool {:?} {problem}",
                                crate::names::shown(&control_tool)
                            ),
                        ));
                    }
                    if tools.iter().any(|t| t.name == control_tool) {
                        self.problems.push(src.at(spanned).coded(code::CONFLICT, format!(
                            "deferral.control_tool {control_tool:?} is also a configured tool"
                        )).help("give the control tool a name of its own"));
                    }
                }
                let mut deferral = Deferral {
                    enabled: d.enabled,
                    control_tool,
                    ..Deferral::default()
                };
                if let Some(text) = &d.description {
                    deferral.description = text.clone();
                }
                let bounds = [
                    (
                        &d.summary_tokens,
                        "summary_tokens",
                        &mut deferral.summary_tokens,
                    ),
                    (&d.max_loaded, "max_loaded", &mut deferral.max_loaded),
                    (
                        &d.max_loaded_tokens,
                        "max_loaded_tokens",
                        &mut deferral.max_loaded_tokens,
                    ),
                    (&d.per_query, "per_query", &mut deferral.per_query),
                ];
                for (value, key, slot) in bounds {
                    if let Some(value) = value
                        && let Some(v) = self.positive(src, value, &format!("deferral.{key}"))
                    {
                        *slot = v;
                    }
                }
                deferral.loads = self.loads(src, d);
                deferral
            }
            None => Deferral::default(),
        };
        let mut calls = CallPolicy {
            configured_unknown: UnknownArguments::Refuse,
            mcp_unknown: UnknownArguments::Refuse,
            coerce_configured: false,
            coerce_mcp: true,
            configured_check: CheckMode::Lenient,
            mcp_check: CheckMode::Strict,
        };
        if let Some(c) = &file.calls {
            if let Some(u) = &c.unknown_arguments {
                calls.configured_unknown = self
                    .unknown_arguments(src, u, "calls")
                    .unwrap_or(calls.configured_unknown);
            }
            if let Some(u) = &c.mcp_unknown_arguments {
                calls.mcp_unknown = self
                    .unknown_arguments(src, u, "calls")
                    .unwrap_or(calls.mcp_unknown);
            }
            calls.coerce_configured = c.coerce_configured.unwrap_or(calls.coerce_configured);
            calls.coerce_mcp = c.coerce_mcp.unwrap_or(calls.coerce_mcp);
            if let Some(m) = &c.configured_check {
                calls.configured_check = self
                    .check_mode(src, m, "calls.configured_check")
                    .unwrap_or(calls.configured_check);
            }
            if let Some(m) = &c.mcp_check {
                calls.mcp_check = self
                    .check_mode(src, m, "calls.mcp_check")
                    .unwrap_or(calls.mcp_check);
            }
        }
        let mut lock = LockPolicy {
            file: self.root.join("mcp.lock"),
            on_mismatch: LockMode::Cut,
            chats: ChatsMode::Follow,
        };
        let lock_explicit = file.lock.as_ref().is_some_and(|l| l.file.is_some());
        if let Some(l) = &file.lock {
            if let Some(f) = &l.file {
                lock.file = self.root.join(f);
            }
            if let Some(mode) = &l.on_mismatch {
                match mode.get_ref().as_str() {
                    "cut" => lock.on_mismatch = LockMode::Cut,
                    "warn" => lock.on_mismatch = LockMode::Warn,
                    other => self.problems.push(
                        src.at(mode)
                            .coded(
                                code::NOT_A_CHOICE,
                                format!("lock.on_mismatch {other:?} is not a choice"),
                            )
                            .help("use \"cut\" (keep the tool away until reviewed) or \"warn\""),
                    ),
                }
            }
            if let Some(mode) = &l.chats {
                match mode.get_ref().as_str() {
                    "follow" => lock.chats = ChatsMode::Follow,
                    "refuse" => lock.chats = ChatsMode::Refuse,
                    other => self.problems.push(
                        src.at(mode)
                            .coded(code::NOT_A_CHOICE, format!("lock.chats {other:?} is not a choice"))
                            .help("use \"follow\" (open chats are planned again and told the list changed) or \"refuse\" (open chats must start again)"),
                    ),
                }
            }
        }
        let results = self.results(src, file.results.as_ref());
        let groups = self.groups(src, &file.group);
        let (agents, default_agent, current_versions) =
            self.agents(src, &file.agent, servers, encoding);
        let auth = self.auth(src, file.auth.as_ref(), &agents);
        Settings {
            caps,
            encoding,
            provider,
            deferral,
            calls,
            lock,
            results,
            lock_explicit,
            names,
            groups,
            agents,
            default_agent,
            current_versions,
            auth,
        }
    }

    /// `tokens.provider`: whose billing counts follow.
    fn provider(
        &mut self,
        src: &Source,
        tokens: Option<&raw::RawTokens>,
        encoding: Encoding,
    ) -> Provider {
        tokens
            .and_then(|t| t.provider.as_ref())
            .and_then(|name| self.provider_named(src, name, "tokens.provider", encoding))
            .unwrap_or_default()
    }

    /// A provider's name written at `key` (`tokens.provider`, an agent's
    /// `provider`). Anthropic's estimate counts with `o200k_base` as its
    /// proxy, so another encoding beside it is refused.
    pub(super) fn provider_named(
        &mut self,
        src: &Source,
        name: &toml::Spanned<String>,
        key: &str,
        encoding: Encoding,
    ) -> Option<Provider> {
        let Some(provider) = Provider::from_name(name.get_ref()) else {
            self.problems.push(
                src.at(name)
                    .coded(
                        code::NOT_A_CHOICE,
                        format!("{key} {:?} is not supported", name.get_ref()),
                    )
                    .help("use \"openai\" or \"anthropic\""),
            );
            return None;
        };
        if provider == Provider::Anthropic && encoding != crate::count::anthropic::PROXY {
            self.problems.push(
                src.at(name)
                    .coded(
                        code::NOT_A_CHOICE,
                        format!(
                            "{key} \"anthropic\" counts with {} as its proxy, not {}",
                            crate::count::anthropic::PROXY.name(),
                            encoding.name()
                        ),
                    )
                    .help("remove tokens.encoding, or set it to \"o200k_base\""),
            );
        }
        Some(provider)
    }
}
