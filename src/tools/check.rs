//! `run_project_check`: runs one check from the operator's whitelist.
//!
//! The whitelist is built from two sources the operator owns: checks
//! detected from well-known project files (a file's presence can only pick
//! one of the fixed commands below, never add a command), and the operator
//! config, which adds, replaces or removes checks by name. Programs are
//! resolved with `which` when a check runs; processes go through
//! [`crate::runner`]. One check runs at a time per server.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Status, ToolError};
use crate::config::{CheckSetting, Config};
use crate::runner::{self, Ending, RunRequest};
use crate::security::{PathGate, ResolvedPath};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CheckInput {
    /// Name of a whitelisted check, e.g. `tests`.
    pub check_name: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckOutput {
    /// `success` when the check ran to its end (whether it passed or not),
    /// `error` when it timed out.
    pub status: Status,
    pub check_name: String,
    /// Why the check did not run to its end (only with `status: error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The program's exit code; null when it timed out or a signal ended it.
    pub exit_code: Option<i32>,
    /// `exit_code == 0`.
    pub passed: bool,
    pub duration_ms: u64,
    /// The last characters the check wrote to stdout.
    pub stdout: String,
    /// The last characters the check wrote to stderr.
    pub stderr: String,
    /// stdout or stderr was longer than what is returned.
    pub truncated: bool,
}

/// How a call ended, when the check could be started.
#[derive(Debug, Clone)]
pub enum CheckEnd {
    /// The check ran to its end; `passed` says how it went.
    Completed(CheckOutput),
    /// The timeout killed it: `status: "error"`, with the output so far.
    TimedOut(CheckOutput),
    /// The client cancelled the call; the tree was killed.
    Cancelled,
}

/// One progress report: `elapsed_seconds` counts from the start of the
/// call (waiting included), so it only grows.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckProgress {
    pub elapsed_seconds: f64,
    pub message: String,
}

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

/// The checks offered for one project root.
#[derive(Debug, Clone)]
pub struct CheckCatalog {
    root: PathBuf,
    checks: BTreeMap<String, Check>,
    output_chars: usize,
}

/// The name of the primary test suite; further detected suites are called
/// `tests-<ecosystem>`.
pub const PRIMARY_CHECK: &str = "tests";

/// Project files larger than this are not read for detection.
const DETECTION_READ_LIMIT: u64 = 1024 * 1024;
/// How deep and how wide detection looks for `test_*.py` under `tests/`.
const TESTS_FOLDER_DEPTH: usize = 3;
const TESTS_FOLDER_ENTRIES: usize = 2_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ecosystem {
    Cargo,
    Go,
    Python,
    Npm,
}

/// Detection order: when several ecosystems are found, the first one's
/// suite is `tests`. npm comes last because a package.json is often only
/// tooling next to the real project.
const ECOSYSTEMS: [Ecosystem; 4] = [
    Ecosystem::Cargo,
    Ecosystem::Go,
    Ecosystem::Python,
    Ecosystem::Npm,
];

impl Ecosystem {
    fn suffix(self) -> &'static str {
        match self {
            Self::Cargo => "cargo",
            Self::Go => "go",
            Self::Python => "python",
            Self::Npm => "npm",
        }
    }

    fn argv(self) -> Vec<String> {
        let argv: &[&str] = match self {
            Self::Cargo => &["cargo", "test"],
            Self::Go => &["go", "test", "./..."],
            Self::Python => &["python", "-m", "pytest", "-q"],
            Self::Npm => &["npm", "test"],
        };
        argv.iter().map(|arg| arg.to_string()).collect()
    }

    /// The project file that shows this ecosystem's test suite, if any.
    fn evidence(self, gate: &PathGate) -> Option<String> {
        match self {
            Self::Cargo => project_file(gate, "Cargo.toml").map(|_| "Cargo.toml".into()),
            Self::Go => project_file(gate, "go.mod").map(|_| "go.mod".into()),
            Self::Python => python_evidence(gate),
            Self::Npm => npm_has_test_script(gate).then(|| "package.json (scripts.test)".into()),
        }
    }
}

fn python_evidence(gate: &PathGate) -> Option<String> {
    let mentions =
        |file: &str, needle: &str| read_small(gate, file).is_some_and(|text| text.contains(needle));
    if project_file(gate, "pytest.ini").is_some() {
        return Some("pytest.ini".into());
    }
    for (file, needle) in [
        ("pyproject.toml", "pytest"),
        ("setup.cfg", "pytest"),
        ("tox.ini", "[pytest]"),
    ] {
        if mentions(file, needle) {
            return Some(file.into());
        }
    }
    if project_file(gate, "conftest.py").is_some() {
        return Some("conftest.py".into());
    }
    pytest_file_under_tests(gate)
}

/// A `test_*.py` or `*_test.py` file in the `tests` folder (a few levels
/// deep). Only names are looked at; no file is opened.
fn pytest_file_under_tests(gate: &PathGate) -> Option<String> {
    let tests = gate.resolve("tests").ok().filter(|dir| dir.real.is_dir())?;
    walkdir::WalkDir::new(&tests.real)
        .max_depth(TESTS_FOLDER_DEPTH)
        .into_iter()
        .take(TESTS_FOLDER_ENTRIES)
        .filter_map(Result::ok)
        .find(|entry| {
            let name = entry.file_name().to_string_lossy();
            entry.file_type().is_file()
                && name.ends_with(".py")
                && (name.starts_with("test_") || name.ends_with("_test.py"))
        })
        .and_then(|entry| gate.relative_of(entry.path()))
}

/// package.json has a real `scripts.test` (not npm init's placeholder,
/// which always fails).
fn npm_has_test_script(gate: &PathGate) -> bool {
    let Some(text) = read_small(gate, "package.json") else {
        return false;
    };
    let Ok(package) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    package["scripts"]["test"]
        .as_str()
        .is_some_and(|script| !script.trim().is_empty() && !script.contains("no test specified"))
}

/// A regular file in the project, seen through the gate: detection reads
/// project files like any tool does, so a symlink cannot lead it outside
/// the root and a secret is never opened.
fn project_file(gate: &PathGate, name: &str) -> Option<ResolvedPath> {
    gate.resolve(name).ok().filter(|file| file.real.is_file())
}

/// The start of a project file, opened as the tools open files: a FIFO
/// named `pyproject.toml` must not hang start-up.
fn read_small(gate: &PathGate, name: &str) -> Option<String> {
    let file = project_file(gate, name)?;
    let opened = gate.open_file(&file.real).ok()?;
    let mut bytes = Vec::new();
    opened
        .take(DETECTION_READ_LIMIT)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The detected suites, named `tests` (the first) and `tests-<ecosystem>`.
fn detect(gate: &PathGate, timeout: Duration) -> BTreeMap<String, Check> {
    ECOSYSTEMS
        .iter()
        .filter_map(|&ecosystem| ecosystem.evidence(gate).map(|file| (ecosystem, file)))
        .enumerate()
        .map(|(index, (ecosystem, file))| {
            let name = if index == 0 {
                PRIMARY_CHECK.to_string()
            } else {
                format!("{PRIMARY_CHECK}-{}", ecosystem.suffix())
            };
            let check = Check {
                argv: ecosystem.argv(),
                timeout,
                env: BTreeMap::new(),
                origin: format!("detected from {file}"),
            };
            (name, check)
        })
        .collect()
}

impl CheckCatalog {
    /// Detected checks merged with the operator config: a configured name
    /// replaces a detected one, `name = false` removes it.
    pub fn detect(config: &Config, gate: &PathGate) -> Self {
        let mut checks = detect(gate, config.limits.check_timeout);
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

    pub fn names(&self) -> Vec<String> {
        self.checks.keys().cloned().collect()
    }

    /// `(name, command line)` for each check, for the input schema.
    pub fn summaries(&self) -> Vec<(String, String)> {
        self.checks
            .iter()
            .map(|(name, check)| (name.clone(), display_command(&check.argv)))
            .collect()
    }

    /// The check called `name`; an unknown name is an error listing the
    /// known ones.
    pub fn get(&self, name: &str) -> Result<&Check, ToolError> {
        self.checks.get(name).ok_or_else(|| {
            let name = shown(name);
            if self.checks.is_empty() {
                ToolError::invalid(format!(
                    "unknown check '{name}': no checks are offered for this project (none detected, none configured)"
                ))
            } else {
                ToolError::invalid(format!(
                    "unknown check '{name}': known checks are {}",
                    self.names().join(", ")
                ))
            }
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
        resolve_program(&self.root, program, path_var.as_deref())
    }

    /// Runs the check called `name`: unknown names and missing programs are
    /// refused before anything is spawned; then it waits for its turn (one
    /// check at a time), runs, and reports progress about once a second.
    pub async fn run(
        &self,
        name: &str,
        mut on_progress: impl FnMut(CheckProgress),
        cancelled: impl Future<Output = ()>,
    ) -> Result<CheckEnd, ToolError> {
        let check = self.get(name)?;
        let program = self
            .resolve(check)
            .map_err(|reason| ToolError::invalid(format!("check '{name}' cannot run: {reason}")))?;
        let mut clock = ProgressClock::new();
        let mut report = |message: String| {
            on_progress(CheckProgress {
                elapsed_seconds: clock.next(),
                message,
            })
        };
        tokio::pin!(cancelled);

        let Some(_turn) = turn::wait(name, &mut report, cancelled.as_mut()).await else {
            return Ok(CheckEnd::Cancelled);
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
            ToolError::invalid(format!(
                "check '{name}' could not start {}: {error}",
                program.display()
            ))
        })?;

        let mut output = CheckOutput {
            status: Status::Success,
            check_name: name.to_string(),
            error: None,
            exit_code: None,
            passed: false,
            duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
            truncated: outcome.stdout.truncated || outcome.stderr.truncated,
            stdout: outcome.stdout.text,
            stderr: outcome.stderr.text,
        };
        Ok(match outcome.ending {
            Ending::Exited { code } => {
                output.exit_code = code;
                output.passed = code == Some(0);
                CheckEnd::Completed(output)
            }
            Ending::TimedOut => {
                output.status = Status::Error;
                output.error = Some(format!(
                    "check timed out after {}s",
                    check.timeout.as_secs()
                ));
                CheckEnd::TimedOut(output)
            }
            Ending::Cancelled => CheckEnd::Cancelled,
        })
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

/// One check at a time per server (a server is one process). Waiters queue
/// in arrival order and report that they wait.
mod turn {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Mutex;
    use std::time::Duration;

    use tokio::sync::MutexGuard;

    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    /// The name of the check holding the turn, for waiting messages.
    static HOLDER: Mutex<Option<String>> = Mutex::new(None);

    pub struct Turn {
        _guard: MutexGuard<'static, ()>,
    }

    impl Drop for Turn {
        fn drop(&mut self) {
            *holder() = None;
        }
    }

    fn holder() -> std::sync::MutexGuard<'static, Option<String>> {
        HOLDER
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits for the turn; `None` when cancelled while waiting.
    pub async fn wait(
        name: &str,
        report: &mut impl FnMut(String),
        mut cancelled: Pin<&mut impl Future<Output = ()>>,
    ) -> Option<Turn> {
        let guard = match TURN.try_lock() {
            Ok(guard) => guard,
            Err(_) => {
                // Pinned once so that the place in the queue is kept.
                let lock = TURN.lock();
                tokio::pin!(lock);
                let mut ticker = tokio::time::interval(Duration::from_secs(1));
                loop {
                    tokio::select! {
                        guard = &mut lock => break guard,
                        () = &mut cancelled => return None,
                        _ = ticker.tick() => {
                            let running = holder().clone().unwrap_or_else(|| "another check".into());
                            report(format!(
                                "waiting: '{running}' is running and one check runs at a time; '{name}' starts when it ends"
                            ));
                        }
                    }
                }
            }
        };
        *holder() = Some(name.to_string());
        Some(Turn { _guard: guard })
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

/// `python`/`python3` as a program name marks a Python check.
fn is_python(program: &str) -> bool {
    matches!(program, "python" | "python3")
}

/// The project's own interpreters, most preferred first.
fn venv_interpreters(root: &Path) -> Vec<PathBuf> {
    let inside: &[&str] = if cfg!(windows) {
        &["Scripts", "python.exe"]
    } else {
        &["bin", "python"]
    };
    [".venv", "venv"]
        .iter()
        .map(|venv| {
            inside
                .iter()
                .fold(root.join(venv), |path, part| path.join(part))
        })
        .collect()
}

/// Finds the program of a check:
/// - `python`/`python3`: the project's `.venv`/`venv` interpreter, else
///   `python3`, else `python` on PATH;
/// - a name with a path separator: that file, relative to the root;
/// - any other name: the absolute PATH entries (with PATHEXT on Windows).
///
/// Relative PATH entries are ignored so that the project directory cannot
/// shadow a program.
fn resolve_program(
    root: &Path,
    program: &str,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, String> {
    let dirs: Vec<PathBuf> = path_var
        .map(|value| {
            std::env::split_paths(value)
                .filter(|dir| dir.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    if is_python(program) {
        let venvs = venv_interpreters(root);
        if let Some(found) = venvs.iter().find_map(|candidate| find_exact(candidate)) {
            return Ok(found);
        }
        if let Some(found) = ["python3", "python"]
            .iter()
            .find_map(|name| find_on_path(name, &dirs))
        {
            return Ok(found);
        }
        let venvs = venvs
            .iter()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(" and ");
        return Err(format!(
            "no Python interpreter found for '{program}': looked for {venvs}, then python3 and python on PATH ({})",
            describe_search(&dirs)
        ));
    }
    if program.contains('/') || program.contains('\\') || Path::new(program).is_absolute() {
        let candidate = root.join(program);
        return find_exact(&candidate).ok_or_else(|| {
            format!(
                "program '{program}' was not found at {} (or is not executable)",
                candidate.display()
            )
        });
    }
    find_on_path(program, &dirs).ok_or_else(|| {
        format!(
            "program '{program}' was not found on PATH ({})",
            describe_search(&dirs)
        )
    })
}

fn find_on_path(program: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    let list = std::env::join_paths(dirs).ok()?;
    which::WhichConfig::new()
        .system_cwd(false)
        .custom_path_list(list)
        .binary_name(program.into())
        .first_result()
        .ok()
}

/// An absolute path, executable (on Windows also with a PATHEXT extension).
fn find_exact(path: &Path) -> Option<PathBuf> {
    which::WhichConfig::new()
        .system_cwd(false)
        .binary_name(path.as_os_str().to_owned())
        .first_result()
        .ok()
}

fn describe_search(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "PATH is empty or has only relative entries, which are ignored".to_string();
    }
    let listed = dirs
        .iter()
        .map(|dir| dir.display().to_string())
        .collect::<Vec<_>>()
        .join(if cfg!(windows) { ";" } else { ":" });
    if cfg!(windows) {
        let extensions =
            std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".to_string());
        format!("searched {listed} with extensions {extensions}")
    } else {
        format!("searched {listed}")
    }
}

/// `mcp-project-helper checks`: the checks that would be offered, each
/// with its program or why it is unavailable.
pub fn print_catalog(config: &Config) -> ExitCode {
    let gate = match config
        .root_or_working_dir()
        .and_then(|root| PathGate::new(root, &config.deny_globs).map_err(|e| e.to_string()))
    {
        Ok(gate) => gate,
        Err(error) => {
            eprintln!("mcp-project-helper: {error}");
            return ExitCode::from(2);
        }
    };
    let catalog = CheckCatalog::detect(config, &gate);
    // A closed stdout (`checks | head`) is not worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), catalog.report().as_bytes());
    ExitCode::SUCCESS
}

impl CheckCatalog {
    /// The text `checks` prints.
    fn report(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let root = self.root.display();
        if self.checks.is_empty() {
            let _ = writeln!(
                out,
                "No checks are offered for {root}: no Cargo.toml, go.mod, pytest setup or package.json test script was found, and the operator config adds none."
            );
            return out;
        }
        let _ = writeln!(out, "Checks offered for {root}:");
        for (name, check) in &self.checks {
            let _ = writeln!(out, "\n{name}: {}", display_command(&check.argv));
            let _ = writeln!(out, "  from:    {}", check.origin);
            match self.resolve(check) {
                Ok(program) => {
                    let _ = writeln!(out, "  program: {}", program.display());
                }
                Err(reason) => {
                    let _ = writeln!(out, "  unavailable: {reason}");
                }
            }
            let _ = writeln!(out, "  timeout: {}s", check.timeout.as_secs());
            if !check.env.is_empty() {
                let keys = check.env.keys().cloned().collect::<Vec<_>>().join(", ");
                let _ = writeln!(out, "  env:     {keys}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CheckSpec, Limits};

    fn config_with(checks: BTreeMap<String, CheckSetting>) -> Config {
        Config {
            root: None,
            docs_root: None,
            log_file: None,
            log_level: crate::config::LogLevel::Info,
            checks,
            limits: Limits::default(),
            deny_globs: Vec::new(),
        }
    }

    fn gate(root: &Path) -> PathGate {
        PathGate::new(dunce::canonicalize(root).expect("canonical root"), &[]).expect("gate")
    }

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, content) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, content).expect("write");
        }
        dir
    }

    fn detected(files: &[(&str, &str)]) -> BTreeMap<String, Vec<String>> {
        let dir = project(files);
        let catalog = CheckCatalog::detect(&config_with(BTreeMap::new()), &gate(dir.path()));
        catalog
            .checks
            .into_iter()
            .map(|(name, check)| (name, check.argv))
            .collect()
    }

    /// Detection reads project files through the gate and the tools' open:
    /// a FIFO named `pyproject.toml` is skipped, not waited on, and a
    /// `package.json` that links outside the root is not read.
    #[cfg(unix)]
    #[test]
    fn detection_never_blocks_on_special_files_nor_follows_links_out() {
        let dir = project(&[("tests/test_x.py", "")]);
        let outside = project(&[("package.json", r#"{"scripts":{"test":"jest"}}"#)]);
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pyproject.toml"))
            .status()
            .expect("mkfifo");
        assert!(status.success());
        std::os::unix::fs::symlink(
            outside.path().join("package.json"),
            dir.path().join("package.json"),
        )
        .expect("symlink");
        let root = dir.path().to_path_buf();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let catalog = CheckCatalog::detect(&config_with(BTreeMap::new()), &gate(&root));
            let _ = sender.send(catalog.checks);
        });
        let checks = receiver
            .recv_timeout(Duration::from_secs(10))
            .expect("detection returned instead of blocking on the FIFO");
        let found: Vec<(&str, &str)> = checks
            .iter()
            .map(|(name, check)| (name.as_str(), check.origin.as_str()))
            .collect();
        assert_eq!(found, [("tests", "detected from tests/test_x.py")]);
    }

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    #[test]
    fn nothing_is_detected_in_an_empty_folder() {
        assert!(detected(&[]).is_empty());
    }

    #[test]
    fn each_ecosystem_alone_is_tests() {
        type Files<'a> = &'a [(&'a str, &'a str)];
        let cases: [(Files, &[&str]); 8] = [
            (&[("Cargo.toml", "[package]")], &["cargo", "test"]),
            (&[("go.mod", "module x")], &["go", "test", "./..."]),
            (&[("pytest.ini", "")], &["python", "-m", "pytest", "-q"]),
            (
                &[("pyproject.toml", "[tool.pytest.ini_options]\n")],
                &["python", "-m", "pytest", "-q"],
            ),
            (
                &[("setup.cfg", "[tool:pytest]\n")],
                &["python", "-m", "pytest", "-q"],
            ),
            (
                &[("tests/unit/test_models.py", "")],
                &["python", "-m", "pytest", "-q"],
            ),
            (
                &[("package.json", r#"{"scripts":{"test":"jest"}}"#)],
                &["npm", "test"],
            ),
            (&[("conftest.py", "")], &["python", "-m", "pytest", "-q"]),
        ];
        for (files, expected) in cases {
            let found = detected(files);
            assert_eq!(found.len(), 1, "{files:?}: {found:?}");
            assert_eq!(found["tests"], argv(expected), "{files:?}");
        }
    }

    #[test]
    fn files_without_pytest_or_a_test_script_detect_nothing() {
        assert!(detected(&[("pyproject.toml", "[project]\nname = \"x\"\n")]).is_empty());
        assert!(detected(&[("setup.cfg", "[metadata]\nname = x\n")]).is_empty());
        assert!(detected(&[("tests/helpers.py", "")]).is_empty());
        assert!(detected(&[("package.json", r#"{"scripts":{"build":"tsc"}}"#)]).is_empty());
        assert!(
            detected(&[(
                "package.json",
                r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#
            )])
            .is_empty()
        );
        assert!(detected(&[("package.json", "not json")]).is_empty());
    }

    #[test]
    fn several_ecosystems_get_suffixed_names() {
        let found = detected(&[
            ("Cargo.toml", "[package]"),
            ("pyproject.toml", "[tool.pytest.ini_options]"),
            ("package.json", r#"{"scripts":{"test":"vitest"}}"#),
        ]);
        assert_eq!(
            found.keys().collect::<Vec<_>>(),
            ["tests", "tests-npm", "tests-python"]
        );
        assert_eq!(found["tests"], argv(&["cargo", "test"]));
        assert_eq!(found["tests-python"][0], "python");
    }

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
    mod resolution {
        use super::*;
        use std::os::unix::fs::PermissionsExt;

        fn executable(path: &Path) {
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }

        #[test]
        fn finds_programs_on_path_only_in_absolute_entries() {
            let bin = tempfile::tempdir().expect("bin");
            executable(&bin.path().join("tool"));
            let root = tempfile::tempdir().expect("root");
            executable(&root.path().join("shadow"));
            let path = std::env::join_paths([bin.path(), Path::new(".")]).expect("PATH");

            let found = resolve_program(root.path(), "tool", Some(&path)).expect("found");
            assert_eq!(found, bin.path().join("tool"));
            let error = resolve_program(root.path(), "shadow", Some(&path)).unwrap_err();
            assert!(
                error.contains("program 'shadow' was not found on PATH"),
                "{error}"
            );
            assert!(error.contains(&bin.path().display().to_string()), "{error}");
        }

        #[test]
        fn a_file_that_is_not_executable_is_not_a_program() {
            let bin = tempfile::tempdir().expect("bin");
            std::fs::write(bin.path().join("notes"), "").expect("write");
            let path = bin.path().as_os_str();
            assert!(resolve_program(bin.path(), "notes", Some(path)).is_err());
        }

        #[test]
        fn python_prefers_the_project_venv_then_python3() {
            let bin = tempfile::tempdir().expect("bin");
            executable(&bin.path().join("python3"));
            executable(&bin.path().join("python"));
            let path = bin.path().as_os_str();
            let root = tempfile::tempdir().expect("root");

            let found = resolve_program(root.path(), "python", Some(path)).expect("found");
            assert_eq!(found, bin.path().join("python3"));

            executable(&root.path().join("venv/bin/python"));
            let found = resolve_program(root.path(), "python", Some(path)).expect("found");
            assert_eq!(found, root.path().join("venv/bin/python"));

            // .venv wins over venv, and the path is not canonicalized, so a
            // symlinked interpreter still finds its virtualenv.
            std::fs::create_dir_all(root.path().join(".venv/bin")).expect("mkdir");
            std::os::unix::fs::symlink(
                bin.path().join("python3"),
                root.path().join(".venv/bin/python"),
            )
            .expect("symlink");
            let found = resolve_program(root.path(), "python3", Some(path)).expect("found");
            assert_eq!(found, root.path().join(".venv/bin/python"));
        }

        #[test]
        fn python_falls_back_to_python_and_explains_where_it_looked() {
            let bin = tempfile::tempdir().expect("bin");
            let root = tempfile::tempdir().expect("root");
            let path = bin.path().as_os_str();
            let error = resolve_program(root.path(), "python", Some(path)).unwrap_err();
            assert!(error.contains(".venv/bin/python"), "{error}");
            assert!(error.contains("python3 and python on PATH"), "{error}");

            executable(&bin.path().join("python"));
            let found = resolve_program(root.path(), "python", Some(path)).expect("found");
            assert_eq!(found, bin.path().join("python"));
        }

        #[test]
        fn paths_with_separators_are_relative_to_the_root() {
            let root = tempfile::tempdir().expect("root");
            executable(&root.path().join("scripts/check.sh"));
            let found = resolve_program(root.path(), "scripts/check.sh", None).expect("found");
            assert_eq!(found, root.path().join("scripts/check.sh"));
            let error = resolve_program(root.path(), "./missing.sh", None).unwrap_err();
            assert!(error.contains("was not found at"), "{error}");
        }

        #[test]
        fn an_empty_path_is_explained() {
            let root = tempfile::tempdir().expect("root");
            let error = resolve_program(root.path(), "cargo", None).unwrap_err();
            assert!(error.contains("PATH is empty"), "{error}");
        }

        #[test]
        fn a_check_env_path_is_used_for_resolution() {
            let bin = tempfile::tempdir().expect("bin");
            executable(&bin.path().join("only-here"));
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
            let catalog = CheckCatalog::detect(&config, &gate(root.path()));
            let check = catalog.get("custom").expect("custom");
            assert_eq!(
                catalog.resolve(check).expect("found"),
                bin.path().join("only-here")
            );
            let report = catalog.report();
            assert!(report.contains("custom: only-here"), "{report}");
            assert!(report.contains("program: "), "{report}");
        }
    }
}
