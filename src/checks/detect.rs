//! Which test suites a project shows: a well-known file's presence picks one
//! of the fixed commands below, never adds a command. Project files are read
//! like any tool reads them: through the gate (a symlink cannot lead outside
//! the root, a secret is never opened) and the non-blocking open (a FIFO
//! named `pyproject.toml` must not hang start-up); folders are walked by the
//! one walker (ignore rules, skip list, deny-list).

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::ControlFlow;
use std::time::Duration;

use super::{Check, PRIMARY_CHECK};
use crate::security::{PathGate, ResolvedPath};
use crate::walk::{self, EntryKind};

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

/// The detected suites, named `tests` (the first) and `tests-<ecosystem>`.
pub fn detect(gate: &PathGate, timeout: Duration) -> BTreeMap<String, Check> {
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
/// deep, the first entries only). Only names are looked at; no file is
/// opened.
fn pytest_file_under_tests(gate: &PathGate) -> Option<String> {
    present(gate, "tests")?;
    let tests = gate.resolve("tests").ok().filter(|dir| dir.real.is_dir())?;
    let mut seen = 0;
    let mut found = None;
    let options = walk::WalkOptions::default();
    let walked = walk::walk_sorted(gate, &tests, Some(TESTS_FOLDER_DEPTH), &options, |entry| {
        seen += 1;
        let name = entry.relative.rsplit('/').next().unwrap_or_default();
        if entry.kind == EntryKind::File
            && name.ends_with(".py")
            && (name.starts_with("test_") || name.ends_with("_test.py"))
        {
            found = Some(entry.relative);
            return ControlFlow::Break(());
        }
        if seen >= TESTS_FOLDER_ENTRIES {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    walked.ok().and(found)
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

/// A regular file in the project, seen through the gate.
fn project_file(gate: &PathGate, name: &str) -> Option<ResolvedPath> {
    present(gate, name)?;
    gate.resolve(name).ok().filter(|file| file.real.is_file())
}

/// Whether anything is at `name` in the root: one look beneath the root
/// handle. Most probes miss, and a miss then costs no resolution (which
/// reads every folder above the root for symlinks) before the server can
/// answer `initialize`.
fn present(gate: &PathGate, name: &str) -> Option<()> {
    gate.entry_stat(&gate.root().join(name)).ok().map(|_| ())
}

/// The start of a project file.
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::{argv, gate, project};
    use super::*;

    fn detected(files: &[(&str, &str)]) -> BTreeMap<String, Vec<String>> {
        let dir = project(files);
        detect(&gate(dir.path()), Duration::from_secs(60))
            .into_iter()
            .map(|(name, check)| (name, check.argv))
            .collect()
    }

    /// A FIFO named `pyproject.toml` is skipped, not waited on, and a
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
            let _ = sender.send(detect(&gate(&root), Duration::from_secs(60)));
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

    /// Test files are found by the one walker: ignored and denied folders
    /// show nothing, and only a few levels are looked at.
    #[test]
    fn test_files_are_found_through_the_walker() {
        assert!(
            detected(&[(".gitignore", "tests/old/\n"), ("tests/old/test_a.py", "")]).is_empty()
        );
        assert!(detected(&[("tests/node_modules/test_a.py", "")]).is_empty());
        assert!(detected(&[("tests/a/b/c/test_deep.py", "")]).is_empty());
        assert_eq!(detected(&[("tests/a/b/test_d.py", "")]).len(), 1);
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
}
