//! The checks offered for one project root, and running one of them.
//!
//! The whitelist comes from two sources the operator owns: checks detected
//! from well-known project files ([`detect`]) and the operator config, which
//! adds, replaces or removes checks by name. Programs are resolved when a
//! check runs ([`program`]); processes go through [`crate::runner`]; one
//! check runs at a time per server ([`turn`]).

mod detect;
mod program;
mod turn;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::{CheckSetting, Config};
use crate::runner::{self, RunOutcome, RunRequest};
use crate::security::PathGate;

/// The name of the primary test suite; further detected suites are called
/// `tests-<ecosystem>`.
pub const PRIMARY_CHECK: &str = "tests";

/// One offered check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub argv: Vec<String>,
    pub timeout: Duration,
    /// Added to the environment the server was started with.
    pub env: BTreeMap<String, String>,
    /// Where the check came from, e.g. `detected from Cargo.toml`.
    pub origin: String,
}

/// Why a check was not started; the message is what the model reads.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CheckRefused(String);

/// One progress report: `elapsed_seconds` counts from the start of the
/// call (waiting included), so it only grows.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckProgress {
    pub elapsed_seconds: f64,
    pub message: String,
}

/// A check that was started, and how it ended (exited, timed out or
/// cancelled: see [`runner::Ending`]).
#[derive(Debug)]
pub struct CheckRun {
    pub outcome: RunOutcome,
    pub timeout: Duration,
}

/// The checks offered for one project root.
#[derive(Debug, Clone)]
pub struct CheckCatalog {
    root: PathBuf,
    checks: BTreeMap<String, Check>,
    output_chars: usize,
}

impl CheckCatalog {
    /// Detected checks merged with the operator config: a configured name
    /// replaces a detected one, `name = false` removes it.
    pub fn detect(config: &Config, gate: &PathGate) -> Self {
        let mut checks = detect::detect(gate, config.limits.check_timeout);
        for (name, setting) in &config.checks {
            match setting {
                CheckSetting::Disabled => {
                    checks.remove(name);
                }
                CheckSetting::Defined(spec) => {
                    let check = Check {
                        argv: spec.argv.clone(),
                        timeout: spec.timeout.unwrap_or(config.limits.check_timeout),
                        env: spec.env.clone(),
                        origin: "operator config".to_string(),
                    };
                    checks.insert(name.clone(), check);
                }
            }
        }
        Self {
            root: gate.root().to_path_buf(),
            checks,
            output_chars: config.limits.output_chars,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn names(&self) -> Vec<String> {
        self.checks.keys().cloned().collect()
    }

    /// The checks by name, sorted.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Check)> {
        self.checks.iter()
    }

    /// `(name, command line)` for each check, for the input schema.
    pub fn summaries(&self) -> Vec<(String, String)> {
        self.checks
            .iter()
            .map(|(name, check)| (name.clone(), display_command(&check.argv)))
            .collect()
    }

    /// The check called `name`; an unknown name is refused with the known
    /// ones.
    pub fn get(&self, name: &str) -> Result<&Check, CheckRefused> {
        self.checks.get(name).ok_or_else(|| {
            let name = shown(name);
            CheckRefused(if self.checks.is_empty() {
                format!(
                    "unknown check '{name}': no checks are offered for this project (none detected, none configured)"
                )
            } else {
                format!(
                    "unknown check '{name}': known checks are {}",
                    self.names().join(", ")
                )
            })
        })
    }

    /// Where the check's program is, or why it cannot be found.
    pub fn resolve(&self, check: &Check) -> Result<PathBuf, String> {
        let Some(program) = check.argv.first() else {
            return Err("its argv is empty".to_string());
        };
        let path_var = check
            .env
            .get("PATH")
            .map(OsString::from)
            .or_else(|| std::env::var_os("PATH"));
        program::resolve_program(&self.root, program, path_var.as_deref())
    }

    /// Runs the check called `name`: unknown names and missing programs are
    /// refused before anything is spawned; then it waits for its turn (one
    /// check at a time), runs, and reports progress about once a second.
    /// `None` when cancelled while waiting for the turn.
    pub async fn run(
        &self,
        name: &str,
        mut on_progress: impl FnMut(CheckProgress),
        cancelled: impl Future<Output = ()>,
    ) -> Result<Option<CheckRun>, CheckRefused> {
        let check = self.get(name)?;
        let program = self
            .resolve(check)
            .map_err(|reason| CheckRefused(format!("check '{name}' cannot run: {reason}")))?;
        let mut clock = ProgressClock::new();
        let mut report = |message: String| {
            on_progress(CheckProgress {
                elapsed_seconds: clock.next(),
                message,
            })
        };
        tokio::pin!(cancelled);

        let Some(_turn) = turn::wait(name, &mut report, cancelled.as_mut()).await else {
            return Ok(None);
        };

        let command = display_command(&check.argv);
        let request = RunRequest {
            program: &program,
            args: check.argv.get(1..).unwrap_or_default(),
            cwd: &self.root,
            env: &check.env,
            timeout: check.timeout,
            output_chars: self.output_chars,
        };
        let outcome = runner::run(request, cancelled, |elapsed, last_line| {
            report(last_line.unwrap_or_else(|| {
                format!("running '{name}' ({command}), {}s", elapsed.as_secs())
            }));
        })
        .await
        .map_err(|error| {
            CheckRefused(format!(
                "check '{name}' could not start {}: {error}",
                program.display()
            ))
        })?;
        Ok(Some(CheckRun {
            outcome,
            timeout: check.timeout,
        }))
    }
}

/// Seconds since the call started, in milliseconds, strictly increasing
/// (MCP asks progress to grow with every notification).
struct ProgressClock {
    started: Instant,
    last: f64,
}

impl ProgressClock {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            last: -1.0,
        }
    }

    fn next(&mut self) -> f64 {
        let now = self.started.elapsed().as_millis() as f64 / 1000.0;
        self.last = if now > self.last {
            now
        } else {
            self.last + 0.001
        };
        self.last
    }
}

/// A client-sent name for a one-line message: escaped and shortened.
fn shown(name: &str) -> String {
    const MAX_CHARS: usize = 64;
    let mut text: String = name
        .chars()
        .take(MAX_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    if name.chars().count() > MAX_CHARS {
        text.push('…');
    }
    text
}

/// The argv as a readable command line (for display only; nothing is ever
/// run through a shell).
pub fn display_command(argv: &[String]) -> String {
    argv.iter()
        .map(|arg| {
            let plain = !arg.is_empty()
                && arg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
            if plain {
                arg.clone()
            } else {
                format!("{arg:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Fixtures shared by the checks' unit tests (and the `checks` report's).
#[cfg(test)]
pub(crate) mod fixtures {
    use std::collections::BTreeMap;
    use std::path::Path;

    use crate::config::{CheckSetting, Config, Limits};
    use crate::security::PathGate;

    pub fn config_with(checks: BTreeMap<String, CheckSetting>) -> Config {
        Config {
            root: None,
            docs_root: None,
            config_file: None,
            log_file: None,
            log_level: crate::config::LogLevel::Info,
            checks,
            limits: Limits::default(),
            deny_globs: Vec::new(),
            index: Default::default(),
        }
    }

    pub fn gate(root: &Path) -> PathGate {
        PathGate::new(dunce::canonicalize(root).expect("canonical root"), &[]).expect("gate")
    }

    pub fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, content) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, content).expect("write");
        }
        dir
    }

    pub fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    /// A catalog with one configured check, `custom`, whose program
    /// `only-here` exists only on the PATH the check sets. Returns the
    /// temporary folders (to keep), the catalog and the program's path.
    #[cfg(unix)]
    pub fn catalog_with_own_path() -> (
        [tempfile::TempDir; 2],
        super::CheckCatalog,
        std::path::PathBuf,
    ) {
        use crate::config::CheckSpec;
        use std::os::unix::fs::PermissionsExt;
        let bin = tempfile::tempdir().expect("bin");
        let program = bin.path().join("only-here");
        std::fs::write(&program, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let root = tempfile::tempdir().expect("root");
        let mut config = config_with(BTreeMap::new());
        config.checks.insert(
            "custom".to_string(),
            CheckSetting::Defined(CheckSpec {
                argv: argv(&["only-here"]),
                timeout: None,
                env: BTreeMap::from([("PATH".to_string(), bin.path().display().to_string())]),
            }),
        );
        let catalog = super::CheckCatalog::detect(&config, &gate(root.path()));
        ([bin, root], catalog, program)
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{argv, config_with, gate, project};
    use super::*;
    use crate::config::{CheckSpec, Limits};

    #[test]
    fn the_demo_project_offers_tests() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo_project");
        let catalog = CheckCatalog::detect(&config_with(BTreeMap::new()), &gate(&root));
        assert_eq!(catalog.names(), ["tests"]);
        assert_eq!(
            catalog.summaries(),
            [("tests".to_string(), "python -m pytest -q".to_string())]
        );
    }

    #[test]
    fn operator_config_adds_replaces_and_removes() {
        let dir = project(&[("Cargo.toml", ""), ("go.mod", "")]);
        let mut settings = BTreeMap::new();
        settings.insert("tests-go".to_string(), CheckSetting::Disabled);
        settings.insert(
            "tests".to_string(),
            CheckSetting::Defined(CheckSpec {
                argv: argv(&["cargo", "nextest", "run"]),
                timeout: Some(Duration::from_secs(300)),
                env: BTreeMap::from([("RUST_BACKTRACE".to_string(), "1".to_string())]),
            }),
        );
        settings.insert(
            "lint".to_string(),
            CheckSetting::Defined(CheckSpec {
                argv: argv(&["cargo", "clippy"]),
                timeout: None,
                env: BTreeMap::new(),
            }),
        );
        let catalog = CheckCatalog::detect(&config_with(settings), &gate(dir.path()));
        assert_eq!(catalog.names(), ["lint", "tests"]);
        let tests = catalog.get("tests").expect("tests");
        assert_eq!(tests.argv, argv(&["cargo", "nextest", "run"]));
        assert_eq!(tests.timeout, Duration::from_secs(300));
        assert_eq!(tests.origin, "operator config");
        assert_eq!(
            catalog.get("lint").expect("lint").timeout,
            Limits::default().check_timeout
        );
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let dir = project(&[("Cargo.toml", "")]);
        let catalog = CheckCatalog::detect(&config_with(BTreeMap::new()), &gate(dir.path()));
        let message = catalog.get("lint").unwrap_err().to_string();
        assert_eq!(message, "unknown check 'lint': known checks are tests");
        let empty = CheckCatalog::detect(&config_with(BTreeMap::new()), &gate(project(&[]).path()));
        assert!(
            empty
                .get("tests")
                .unwrap_err()
                .to_string()
                .contains("no checks are offered")
        );
        let long = format!("a\nb{}", "x".repeat(500));
        let message = catalog.get(&long).unwrap_err().to_string();
        assert!(message.starts_with("unknown check 'a\\nbxxx"), "{message}");
        assert!(message.contains("…'"), "{message}");
        assert!(message.len() < 200, "{message}");
    }

    #[test]
    fn commands_display_with_quotes_only_where_needed() {
        assert_eq!(
            display_command(&argv(&["sh", "-c", "sleep 1; echo 'hi'"])),
            r#"sh -c "sleep 1; echo 'hi'""#
        );
        assert_eq!(
            display_command(&argv(&["go", "test", "./..."])),
            "go test ./..."
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_check_env_path_is_used_for_resolution() {
        let (_folders, catalog, program) = fixtures::catalog_with_own_path();
        let check = catalog.get("custom").expect("custom");
        assert_eq!(catalog.resolve(check).expect("found"), program);
    }
}
