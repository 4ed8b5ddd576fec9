//! What every fuzz target shares: the properties an error must keep, the
//! bundled policies and plan to check against, and a scratch directory.
//!
//! Each target feeds one untrusted input muster reads to the library and
//! holds it to three rules: no panic, no hang (libFuzzer's `-timeout`), and a
//! refusal is an [`Error`] whose every problem names the file it is about.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use muster::catalog::{Catalog, Selection};
use muster::policy::Inputs;
use muster::{Error, plan};

/// The repository's bundled `policies/`.
pub fn bundled_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies")
}

/// The bundled policy with its snapshots and lock, loaded once.
pub fn bundled() -> &'static Inputs {
    static INPUTS: OnceLock<Inputs> = OnceLock::new();
    INPUTS.get_or_init(|| Inputs::load(&bundled_dir()).expect("the bundled policy loads"))
}

/// `muster plan --format json` over the bundled policy's default agent.
pub fn bundled_plan_json() -> &'static str {
    static PLAN: OnceLock<String> = OnceLock::new();
    PLAN.get_or_init(|| plan_json(bundled()).expect("the bundled policy plans"))
}

/// The plan JSON of `inputs`' default agent, as the binary prints it.
///
/// # Errors
/// When the catalog cannot be built.
pub fn plan_json(inputs: &Inputs) -> Result<String, Error> {
    let catalog = Catalog::build(inputs, &Selection::default())?;
    let plan = plan::plan(&catalog, catalog.caps);
    Ok(plan.to_json_string())
}

/// A directory kept for the whole run, for targets that read from files:
/// in memory (`/dev/shm`) where there is one, as a file written per input
/// to a busy disk costs more than the parse.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .expect("a scratch directory")
    })
    .path()
}

/// Asserts that `err` carries at least one problem and that each names a
/// file accepted by `names_ok`.
pub fn assert_names_file(err: &Error, names_ok: impl Fn(&Path) -> bool) {
    assert!(
        !err.problems().is_empty(),
        "an error without problems: {err:?}"
    );
    for problem in err.problems() {
        let file = problem
            .file
            .as_deref()
            .unwrap_or_else(|| panic!("a problem that names no file: {problem:?}"));
        assert!(names_ok(file), "a problem names {file:?}: {problem:?}");
        // Rendering must not panic either.
        let _ = problem.to_string();
    }
    let _ = err.to_string();
}

/// Asserts that every problem of `err` names exactly `path`.
pub fn assert_names(err: &Error, path: &Path) {
    assert_names_file(err, |file| file == path);
}
