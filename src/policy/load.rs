//! Reading a policy directory: the files it holds, each parsed into raw
//! structs that keep spans, and the small value rules every part shares
//! (paths inside the directory, flag names, choices, positive numbers).
//! The parts themselves are read by `tools`, `servers`, `settings` and
//! `agents`, which use this module; `assemble` gathers their problems and
//! builds the [`super::Inputs`] from them.

use super::raw;
use super::{Origin, Profile, UnknownArguments};
use crate::contract::CheckMode;
use crate::error::code;
use crate::error::{LineIndex, Problem};
use crate::input::ReadError;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The problem for a policy subdirectory that exists but cannot be listed.
pub(super) fn unreadable_dir(dir: &Path, sub: &str, err: &std::io::Error) -> Problem {
    Problem::coded(code::FILE_UNREADABLE, format!(
        "cannot read the {sub}/ directory: {err}; its files would be left out"
    ))
    .in_file(dir)
    .help(format!(
        "make {sub}/ a directory readable by the user running muster, or remove it if it should hold nothing"
    ))
}

/// The problem a TOML file that cannot be read as policy is.
fn toml_problem(path: &Path, line: Option<usize>, err: &toml::de::Error) -> Problem {
    let message = err.message().trim().to_string();
    let help = if message.contains("unknown field") {
        "remove the key or correct its spelling; the keys this table accepts are listed above"
    } else {
        "fix the value or the TOML syntax at this line"
    };
    let code = if message.contains("unknown field") {
        code::UNKNOWN_KEY
    } else {
        code::INVALID_TOML
    };
    Problem::coded(code, message)
        .in_file(path)
        .at_line(line)
        .help(help)
}

pub(super) struct Loader {
    pub(super) root: PathBuf,
    /// `root` with its links followed: what every file read must really be
    /// inside (see [`crate::input::outside_real`]).
    real_root: PathBuf,
    pub(super) problems: Vec<Problem>,
    /// Input schemas written alike, configured or listed, held once.
    pub(super) schemas: crate::schema::Shared,
}

/// Text of a policy file and a way to turn byte spans into lines.
pub(super) struct Source {
    pub(super) path: PathBuf,
    lines: std::sync::Arc<LineIndex>,
    /// Where the parsed text starts in the file: spans of a part parsed on
    /// its own count from there.
    base: usize,
}

impl Source {
    pub(super) fn new(path: PathBuf, text: &str) -> Self {
        Self {
            path,
            lines: std::sync::Arc::new(LineIndex::new(text)),
            base: 0,
        }
    }

    /// The same file, for a part of its text starting at byte `base`.
    pub(super) fn part(&self, base: usize) -> Self {
        Self {
            path: self.path.clone(),
            lines: self.lines.clone(),
            base,
        }
    }

    pub(super) fn origin(&self, span: std::ops::Range<usize>) -> Origin {
        Origin {
            file: self.path.clone(),
            line: Some(self.line(span.start)),
        }
    }

    pub(super) fn line(&self, offset: usize) -> usize {
        self.lines.line(self.base + offset)
    }

    pub(super) fn at<T>(&self, spanned: &Spanned<T>) -> Origin {
        self.origin(spanned.span())
    }
}

impl Loader {
    pub(super) fn new(dir: &Path) -> Self {
        Self {
            root: dir.to_path_buf(),
            real_root: std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
            problems: Vec::new(),
            schemas: crate::schema::Shared::default(),
        }
    }

    /// Reads and parses one TOML file; records a problem and returns `None`
    /// when it cannot. A missing optional file is not a problem.
    pub(super) fn read_toml<T: serde::de::DeserializeOwned>(
        &mut self,
        path: &Path,
        optional: bool,
    ) -> Option<(Source, T)> {
        let text = match crate::input::read_text(path) {
            Ok(text) => text,
            Err(ReadError::Missing) if optional => return None,
            Err(err) => {
                self.problems.push(err.problem(path, "file"));
                return None;
            }
        };
        match raw::parse_all::<T>(&text) {
            Ok(value) => Some((Source::new(path.to_path_buf(), &text), value)),
            Err(errors) => {
                let lines = LineIndex::new(&text);
                for err in errors {
                    let line = err.span().map(|s| lines.line(s.start));
                    self.problems.push(toml_problem(path, line, &err));
                }
                None
            }
        }
    }

    /// Parses `text`, a part of `path` that `src` locates in the file;
    /// records every problem (as [`raw::parse_all`] finds them) and returns
    /// `None` when it cannot.
    pub(super) fn parse_toml<T: serde::de::DeserializeOwned>(
        &mut self,
        path: &Path,
        src: &Source,
        text: &str,
    ) -> Option<T> {
        self.parsed_toml(path, src, raw::parse_all::<T>(text))
    }

    /// [`Loader::parse_toml`] for text already parsed.
    pub(super) fn parsed_toml<T>(
        &mut self,
        path: &Path,
        src: &Source,
        parsed: Result<T, Vec<toml::de::Error>>,
    ) -> Option<T> {
        match parsed {
            Ok(value) => Some(value),
            Err(errors) => {
                for err in errors {
                    let line = err.span().map(|s| src.line(s.start));
                    self.problems.push(toml_problem(path, line, &err));
                }
                None
            }
        }
    }

    /// The `*.toml` files of `sub`, in name order. A missing directory has
    /// none; one that cannot be listed is a problem, never an empty set
    /// (a `chmod 000 mcp/` would otherwise plan without its servers).
    pub(super) fn toml_files(&mut self, sub: &str) -> Vec<PathBuf> {
        let dir = self.root.join(sub);
        let entries = match std::fs::read_dir(&dir).and_then(|entries| {
            entries
                .map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<Vec<PathBuf>>>()
        }) {
            Ok(entries) => entries,
            // Nothing there: the part is simply not used. A dangling link is
            // something there that cannot be read.
            Err(err)
                if err.kind() == std::io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(&dir).is_err() =>
            {
                return Vec::new();
            }
            Err(err) => {
                self.problems.push(unreadable_dir(&dir, sub, &err));
                return Vec::new();
            }
        };
        let mut files: Vec<PathBuf> = entries
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        // A .toml entry that is not a readable file (a directory, a dangling
        // or looping link, a FIFO) would silently drop its tools.
        files.retain(|p| match crate::input::regular_file(p) {
            // A file a link leads to from outside the policy directory
            // (the link, or `sub/` itself) is not the policy's.
            Ok(_) => self.confined(Problem::coded(code::OUTSIDE_POLICY_DIRECTORY, "this file").in_file(p), p),
            Err(err) => {
                self.problems.push(
                    Problem::coded(code::NOT_A_FILE, format!("is not a readable file: {err}"))
                        .in_file(p)
                        .help("replace it with a policy file, or rename it so it does not end in .toml"),
                );
                false
            }
        });
        files
    }

    /// The file `named` (written in `src`) points to, when it stays inside
    /// the policy directory, lexically and once links are followed; else a
    /// problem at `at` and `None`.
    pub(super) fn inside(
        &mut self,
        src: &Source,
        named: &str,
        at: &Origin,
        what: &str,
        key: &str,
    ) -> Option<PathBuf> {
        let base = src.path.parent().unwrap_or(Path::new(".")).to_path_buf();
        self.inside_from(&base, named, at, what, key)
    }

    /// [`Self::inside`] for a path written relative to `base`, a directory
    /// inside the policy directory.
    pub(super) fn inside_from(
        &mut self,
        base: &Path,
        named: &str,
        at: &Origin,
        what: &str,
        key: &str,
    ) -> Option<PathBuf> {
        let Some(path) = crate::input::inside(&self.root, base, Path::new(named)) else {
            let problem = self.outside(
                at.coded(
                    code::OUTSIDE_POLICY_DIRECTORY,
                    format!("{what}: {key} {named:?}"),
                ),
                None,
            );
            self.problems.push(problem);
            return None;
        };
        self.confined(
            at.coded(
                code::OUTSIDE_POLICY_DIRECTORY,
                format!("{what}: {key} {named:?}"),
            ),
            &path,
        )
        .then_some(path)
    }

    /// Whether `path` really is inside the policy directory once links are
    /// followed (the one home of that rule is
    /// [`crate::input::outside_real`]); else records `start` (where, and
    /// what names the path) as the problem.
    pub(super) fn confined(&mut self, start: Problem, path: &Path) -> bool {
        match crate::input::outside_real(&self.real_root, path) {
            None => true,
            Some(real) => {
                let problem = self.outside(start, Some(&real));
                self.problems.push(problem);
                false
            }
        }
    }

    /// The problem for a path out of the policy directory, by `..` or an
    /// absolute path, or through a symbolic link leading to `real`: `start`
    /// (where, and what names the path) completed.
    fn outside(&self, start: Problem, real: Option<&Path>) -> Problem {
        let root = self.root.display();
        let (through, help) = match real {
            None => (
                String::new(),
                format!("copy the file into {root} and name it relative to this TOML file"),
            ),
            Some(real) => (
                format!(" (a symbolic link leads to {})", real.display()),
                format!("copy the file into {root} instead of linking to it"),
            ),
        };
        Problem {
            message: format!(
                "{} points outside the policy directory {root}{through}",
                start.message
            ),
            ..start
        }
        .help(help)
    }

    pub(super) fn read_json(&mut self, path: &Path, at: &Origin, tool: &str) -> Option<Value> {
        let text = match crate::input::read_text(path) {
            Ok(text) => text,
            Err(err) => {
                let help = match err {
                    ReadError::Missing => "the path is relative to the TOML file that names it",
                    _ => err.help(),
                };
                self.problems.push(
                    at.coded(
                        err.code(),
                        format!(
                            "tool {tool:?}: cannot read schema file {}: {err}",
                            path.display()
                        ),
                    )
                    .help(help),
                );
                return None;
            }
        };
        match serde_json::from_str(&text) {
            Ok(value) => Some(value),
            Err(err) => {
                self.problems.push(
                    Problem::coded(
                        code::INVALID_JSON,
                        format!("tool {tool:?}: schema file is not valid JSON: {err}"),
                    )
                    .in_file(path)
                    .at_line(Some(err.line())),
                );
                None
            }
        }
    }

    pub(super) fn unknown_arguments(
        &mut self,
        src: &Source,
        value: &Spanned<String>,
        subject: &str,
    ) -> Option<UnknownArguments> {
        self.choice(
            src,
            value,
            UnknownArguments::parse,
            &format!("{subject}: unknown_arguments"),
            "use \"refuse\", \"drop\" or \"pass\"",
        )
    }

    pub(super) fn check_mode(
        &mut self,
        src: &Source,
        value: &Spanned<String>,
        subject: &str,
    ) -> Option<CheckMode> {
        self.choice(
            src,
            value,
            CheckMode::parse,
            &format!("{subject}: check"),
            "use \"lenient\" (the argument-check record's rules) or \"strict\" (validate against the whole input schema)",
        )
    }

    /// `value` read by `parse`, or a problem saying `key = value` is not
    /// one of the choices `help` lists.
    fn choice<T>(
        &mut self,
        src: &Source,
        value: &Spanned<String>,
        parse: impl Fn(&str) -> Option<T>,
        key: &str,
        help: &str,
    ) -> Option<T> {
        let parsed = parse(value.get_ref());
        if parsed.is_none() {
            self.problems.push(
                src.at(value)
                    .coded(
                        code::NOT_A_CHOICE,
                        format!("{key} = {:?} is not a choice", value.get_ref()),
                    )
                    .help(help),
            );
        }
        parsed
    }

    pub(super) fn flag_name(&mut self, src: &Source, flag: &Spanned<String>) -> Option<String> {
        let name = flag.get_ref();
        if name.trim().is_empty() || name.chars().any(char::is_whitespace) {
            self.problems.push(src.at(flag).coded(
                code::NAME_INVALID,
                format!("flag name {name:?} is empty or has spaces"),
            ));
            return None;
        }
        Some(name.clone())
    }

    pub(super) fn load_profiles(&mut self) -> BTreeMap<String, Profile> {
        let mut profiles = BTreeMap::new();
        for path in self.toml_files("flags") {
            let Some((src, file)) = self.read_toml::<raw::FlagsFile>(&path, false) else {
                continue;
            };
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let flags = file
                .flags
                .iter()
                .filter_map(|f| self.flag_name(&src, f))
                .collect();
            profiles.insert(
                name,
                Profile {
                    flags,
                    origin: Origin {
                        file: path.clone(),
                        line: None,
                    },
                },
            );
        }
        profiles
    }

    pub(super) fn positive(
        &mut self,
        src: &Source,
        value: &Spanned<i64>,
        key: &str,
    ) -> Option<u32> {
        self.whole_from(
            src,
            value,
            key,
            1,
            "use a whole number from 1 to 4294967295",
        )
    }

    /// A whole number written at `key`, from `min` to `u32::MAX`; past it,
    /// `out-of-range` with `help`, and `None`.
    pub(super) fn whole_from(
        &mut self,
        src: &Source,
        value: &Spanned<i64>,
        key: &str,
        min: u32,
        help: &str,
    ) -> Option<u32> {
        match u32::try_from(*value.get_ref()) {
            Ok(v) if v >= min => Some(v),
            _ => {
                self.problems.push(
                    src.at(value)
                        .coded(
                            code::OUT_OF_RANGE,
                            format!("{key} = {} is out of range", value.get_ref()),
                        )
                        .help(help),
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Root reads a `chmod 000` directory, so the integration tests cannot
    /// make one; the mapping of a refused listing is pinned here.
    #[test]
    fn a_directory_that_cannot_be_listed_is_a_problem_naming_it() {
        let err = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let dir = Path::new("policies/mcp");
        let problem = unreadable_dir(dir, "mcp", &err);
        assert_eq!(problem.file.as_deref(), Some(dir));
        assert!(problem.help.is_some());
        assert!(
            problem
                .message
                .starts_with("cannot read the mcp/ directory")
        );
    }
}
