//! Assembling a policy: the parts `tools`, `servers`, `settings` and
//! `agents` read (through [`Loader`]) gathered into the [`Inputs`] — the
//! [`Policy`], the listings and the lock — or every problem they found at
//! once. Decides nothing a part decides; it only checks what needs two
//! parts at once (no tools at all, the lock `settings` names).

use super::Inputs;
use super::Policy;
use super::load::Loader;
use super::raw;
use super::settings::Settings;
use crate::error::code;
use crate::error::{Error, ErrorKind, Problem};

impl Loader {
    /// The policy directory's [`Inputs`], or every problem found.
    ///
    /// # Errors
    /// [`ErrorKind::Policy`] with every problem of every file, or
    /// [`ErrorKind::Io`] when the directory is not one.
    pub(super) fn load(mut self) -> Result<Inputs, Error> {
        if !self.root.is_dir() {
            return Err(Error::new(
                ErrorKind::Io,
                Problem::coded(
                    code::POLICY_DIRECTORY_MISSING,
                    format!("policy directory {} does not exist", self.root.display()),
                )
                .help("run from the repository root, or pass --policies DIR"),
            ));
        }
        let muster_toml = self.root.join("muster.toml");
        let muster = self
            .confined(
                Problem::coded(code::OUTSIDE_POLICY_DIRECTORY, "this file").in_file(&muster_toml),
                &muster_toml,
            )
            .then(|| self.read_toml::<raw::MusterFile>(&muster_toml, true))
            .flatten();
        let tools = self.load_tools();
        let (servers, listings) = self.load_servers();
        let profiles = self.load_profiles();
        let (muster_src, muster) = match muster {
            Some((src, file)) => (Some(src), file),
            None => (None, raw::MusterFile::default()),
        };
        let settings = self.settings(muster_src.as_ref(), muster, &tools, &servers);
        if tools.is_empty() && servers.is_empty() && self.problems.is_empty() {
            self.problems.push(
                Problem::coded(code::NO_TOOLS, "the policy defines no tools")
                    .in_file(self.root.join("tools"))
                    .help("add [[tool]] tables to tools/*.toml or [[mcp]] servers to mcp/*.toml"),
            );
        }
        if settings.lock_explicit && !settings.lock.file.exists() {
            self.problems.push(
                Problem::coded(code::FILE_MISSING, format!(
                    "the lock file {} named by [lock] file does not exist",
                    settings.lock.file.display()
                ))
                .in_file(self.root.join("muster.toml"))
                .help("correct the path, or create the lock with `muster lock` after reviewing the snapshots"),
            );
        }
        // The lock muster finds by itself follows the rule for links; one
        // `[lock] file` names is the explicit setting and may be anywhere.
        let file = &settings.lock.file;
        let lock_confined = settings.lock_explicit
            || self.confined(
                Problem::coded(code::OUTSIDE_POLICY_DIRECTORY, "the lock file").in_file(file),
                file,
            );
        let lock_entries = if lock_confined && settings.lock.file.exists() {
            match crate::lock::Lock::read(&settings.lock.file) {
                Ok(lock) => Some(lock),
                Err(err) => {
                    self.problems.extend(err.problems().iter().cloned());
                    None
                }
            }
        } else {
            None
        };
        if !self.problems.is_empty() {
            return Err(Error::many(ErrorKind::Policy, self.problems));
        }
        let Settings {
            caps,
            encoding,
            provider,
            deferral,
            calls,
            lock,
            results,
            lock_explicit: _,
            names,
            groups,
            agents,
            default_agent,
            current_versions,
            auth,
        } = settings;
        let policy = Policy {
            root: self.root,
            caps,
            encoding,
            provider,
            deferral,
            calls,
            lock,
            results,
            names,
            groups,
            agents,
            default_agent,
            current_versions,
            tools,
            servers,
            profiles,
            auth,
        };
        Ok(Inputs {
            policy,
            listings,
            lock: lock_entries,
        })
    }
}
