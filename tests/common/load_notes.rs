//! The control tool's load notes as the tests read them back from its JSON
//! answer (docs/session.md): the fields the load-decision tests judge.

use serde::Deserialize;

/// One note of a load answer.
#[derive(Debug, Deserialize, PartialEq)]
pub struct Note {
    pub code: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub options: Vec<Choice>,
    #[serde(default)]
    pub kinds: Vec<String>,
}

/// One option of a `choose` note.
#[derive(Debug, Deserialize, PartialEq)]
pub struct Choice {
    pub name: String,
    pub loaded: bool,
    #[serde(default)]
    pub offered: bool,
}
