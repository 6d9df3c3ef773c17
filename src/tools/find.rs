//! `find_project_files`: glob over file paths.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Status, ToolError};
use crate::glob::{PathGlob, below};
use crate::index::TreeModel;
use crate::security::PathGate;
use crate::walk::{self, EntryKind};

pub const DEFAULT_MAX_RESULTS: usize = 200;
pub const MAX_RESULTS_CAP: usize = 1000;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct FindInput {
    /// Glob such as `**/*.rs`, `*.py` or `src/*.{ts,tsx}`. `*` and `?` never cross `/`, `**` does, `{a,b}` alternates. Without a `/` it matches the file name at any depth; with a `/` it matches the path relative to `path`.
    pub pattern: String,
    /// Folder to search under, relative to the project root; `.` (the default) is the root.
    #[serde(default = "default_path")]
    pub path: String,
    /// Maximum number of paths to return.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = MAX_RESULTS_CAP))]
    pub max_results: usize,
}

fn default_path() -> String {
    ".".to_string()
}
fn default_max_results() -> usize {
    DEFAULT_MAX_RESULTS
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FindOutput {
    pub status: Status,
    pub pattern: String,
    /// The folder searched, relative to the project root.
    pub path: String,
    /// Matching file paths relative to the project root, sorted.
    pub files: Vec<String>,
    /// Number of paths returned.
    pub count: usize,
    /// True when more files matched than were returned.
    pub truncated: bool,
}

impl FindInput {
    pub fn log_params(&self) -> String {
        format!(
            "pattern={:?} path={:?} max_results={}",
            self.pattern, self.path, self.max_results
        )
    }
}

impl FindOutput {
    pub fn log_summary(&self) -> String {
        format!("count={} truncated={}", self.count, self.truncated)
    }
}

pub fn find(
    gate: &PathGate,
    model: &TreeModel,
    input: &FindInput,
) -> Result<FindOutput, ToolError> {
    let glob = PathGlob::new(&input.pattern)?;
    let max_results = input.max_results.clamp(1, MAX_RESULTS_CAP);
    let start = gate.resolve(&input.path)?;
    if !start.real.is_dir() {
        return Err(ToolError::invalid(format!(
            "'{}' is not a directory; give a folder to search under",
            start.relative
        )));
    }
    let entries = match model.entries(&start, None) {
        Some(entries) => entries,
        None => walk::walk(gate, &start, None)
            .map_err(|error| ToolError::io(&start.relative, &error))?,
    };
    let mut files: Vec<String> = entries
        .into_iter()
        .filter(|entry| entry.kind == EntryKind::File)
        .filter(|entry| glob.is_match(below(&start.relative, &entry.relative)))
        .map(|entry| entry.relative)
        .collect();
    let truncated = files.len() > max_results;
    files.truncate(max_results);
    Ok(FindOutput {
        status: Status::Success,
        pattern: input.pattern.clone(),
        path: start.relative,
        count: files.len(),
        files,
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, PathGate) {
        crate::tools::temp_project(&[
            ("demo_app/models.py", "x"),
            ("demo_app/services.py", "x"),
            ("tests/test_services.py", "x"),
            ("setup.py", "x"),
            ("src/a.ts", "x"),
            ("src/b.tsx", "x"),
            ("src/deep/c.ts", "x"),
            (".env", "x"),
            ("certs/server.pem", "x"),
        ])
    }

    fn run(gate: &PathGate, pattern: &str, path: &str) -> Vec<String> {
        find(
            gate,
            &TreeModel::off(),
            &FindInput {
                pattern: pattern.into(),
                path: path.into(),
                max_results: 200,
            },
        )
        .unwrap()
        .files
    }

    #[test]
    fn glob_semantics() {
        let (_d, gate) = project();
        assert_eq!(
            run(&gate, "**/*.py", "."),
            vec![
                "demo_app/models.py",
                "demo_app/services.py",
                "setup.py",
                "tests/test_services.py"
            ]
        );
        assert_eq!(
            run(&gate, "*.py", "demo_app"),
            vec!["demo_app/models.py", "demo_app/services.py"]
        );
        assert_eq!(
            run(&gate, "src/*.{ts,tsx}", "."),
            vec!["src/a.ts", "src/b.tsx"]
        );
        assert_eq!(run(&gate, "*.ts", "src"), vec!["src/a.ts", "src/deep/c.ts"]);
        assert_eq!(run(&gate, "deep/*.ts", "src"), vec!["src/deep/c.ts"]);
        assert_eq!(
            run(&gate, "test_?ervices.py", "."),
            vec!["tests/test_services.py"]
        );
    }

    #[test]
    fn secrets_are_never_found() {
        let (_d, gate) = project();
        assert!(
            run(&gate, "*", ".")
                .iter()
                .all(|f| f != ".env" && !f.ends_with(".pem"))
        );
        assert!(run(&gate, ".env", ".").is_empty());
    }

    #[test]
    fn truncation() {
        let (_d, gate) = project();
        let out = find(
            &gate,
            &TreeModel::off(),
            &FindInput {
                pattern: "**/*".into(),
                path: ".".into(),
                max_results: 2,
            },
        )
        .unwrap();
        assert_eq!(out.count, 2);
        assert!(out.truncated);
    }
}
