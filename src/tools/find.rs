//! `find_project_files`: glob over file paths.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{JsonBudget, Status, ToolError};
use crate::cancel::Cancel;
use crate::corpus::{Corpus, Pick};
use crate::glob::{PathGlob, below};
use crate::walk::{EntryKind, WalkOptions};

pub const DEFAULT_MAX_RESULTS: usize = 200;
pub const MAX_RESULTS_CAP: usize = 1000;
/// Largest answer as JSON text (escapes counted in full): the tool's
/// declared size hint. A list that would outgrow it is cut, `truncated`.
pub const MAX_RESULT_CHARS: usize = 300_000;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct FindInput {
    /// Glob such as `**/*.rs`, `*.py` or `src/*.{ts,tsx}`. `*` and `?` never cross `/`, `**` does, `{a,b}` alternates. Without a `/` it matches the file name at any depth; with a `/` it matches the path relative to `path`.
    #[schemars(length(max = crate::glob::MAX_GLOB_CHARS))]
    pub pattern: String,
    /// Folder to search under, relative to the project root; `.` (the default) is the root.
    #[serde(default = "super::root_path")]
    pub path: String,
    /// Maximum number of paths to return.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = MAX_RESULTS_CAP))]
    pub max_results: usize,
    /// Also find files that .gitignore/.ignore or the built-in skip list (node_modules, target, .venv …) exclude. Secrets stay excluded.
    #[serde(default)]
    pub include_ignored: bool,
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
            "pattern={:?} path={:?} max_results={} include_ignored={}",
            self.pattern, self.path, self.max_results, self.include_ignored
        )
    }
}

impl FindOutput {
    pub fn log_summary(&self) -> String {
        format!("count={} truncated={}", self.count, self.truncated)
    }
}

pub fn find(
    corpus: &Corpus<'_>,
    input: &FindInput,
    cancel: &Cancel,
) -> Result<FindOutput, ToolError> {
    let glob = PathGlob::new(&input.pattern)?;
    let max_results = input.max_results.clamp(1, MAX_RESULTS_CAP);
    let start = corpus.gate().resolve(&input.path)?;
    if !start.real.is_dir() {
        return Err(ToolError::invalid(format!(
            "'{}' is not a directory; give a folder to search under",
            start.relative
        )));
    }
    let options = WalkOptions {
        include_ignored: input.include_ignored,
        cancel: cancel.clone(),
    };
    let keep = |relative: &str, kind| {
        kind == EntryKind::File && glob.is_match(below(&start.relative, relative))
    };
    // One more than a page shows whether the answer is cut.
    let pick = Pick {
        keep: &keep,
        wanted: max_results.saturating_add(1),
    };
    let matching: Vec<String> = corpus
        .entries(&start, None, &options, &pick)
        .map_err(|error| ToolError::io(&start.relative, &error))?
        .into_iter()
        .map(|entry| entry.relative)
        .collect();
    ToolError::check_cancel(cancel)?;
    let mut output = FindOutput {
        status: Status::Success,
        pattern: input.pattern.clone(),
        path: start.relative,
        files: Vec::new(),
        count: 0,
        truncated: false,
    };
    let mut budget = JsonBudget::new(MAX_RESULT_CHARS, &output);
    output.truncated = budget.fill(matching.into_iter(), max_results, &mut output.files);
    output.count = output.files.len();
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::PathGate;

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

    fn find(gate: &PathGate, input: &FindInput) -> Result<FindOutput, ToolError> {
        super::find(&Corpus::walked(gate), input, &Cancel::never())
    }

    fn run(gate: &PathGate, pattern: &str, path: &str) -> Vec<String> {
        find(
            gate,
            &FindInput {
                pattern: pattern.into(),
                path: path.into(),
                max_results: 200,
                include_ignored: false,
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
            &FindInput {
                pattern: "**/*".into(),
                path: ".".into(),
                max_results: 2,
                include_ignored: false,
            },
        )
        .unwrap();
        assert_eq!(out.count, 2);
        assert!(out.truncated);
    }

    #[test]
    fn hostile_names_stay_within_the_size_hint() {
        let name = crate::tools::COSTLY_NAME_CHAR.repeat(250);
        let files: Vec<(String, &str)> = (0..MAX_RESULTS_CAP)
            .map(|i| (format!("{i:04}{name}"), ""))
            .collect();
        let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
        let (_d, gate) = crate::tools::temp_project(&refs);
        let out = find(
            &gate,
            &FindInput {
                pattern: "*".into(),
                path: ".".into(),
                max_results: MAX_RESULTS_CAP,
                include_ignored: false,
            },
        )
        .unwrap();
        let written = serde_json::to_string(&out).unwrap();
        assert!(written.len() <= MAX_RESULT_CHARS, "{}", written.len());
        assert!(out.count > 0);
        // Control characters escape to six characters each and overflow
        // the answer; Windows refuses them in names, and nothing it allows
        // in one needs an escape.
        assert_eq!(out.truncated, cfg!(not(windows)), "{}", out.count);
    }

    #[test]
    fn include_ignored_finds_skipped_files_but_not_secrets() {
        let (_d, gate) = crate::tools::temp_project(&[
            ("node_modules/m.js", "x"),
            ("build/out.js", "x"),
            (".gitignore", "build/\n"),
            ("a.js", "x"),
            ("id_rsa.js", "x"),
        ]);
        let mut input = FindInput {
            pattern: "*.js".into(),
            path: ".".into(),
            max_results: 10,
            include_ignored: false,
        };
        assert_eq!(find(&gate, &input).unwrap().files, vec!["a.js"]);
        input.include_ignored = true;
        assert_eq!(
            find(&gate, &input).unwrap().files,
            vec!["a.js", "build/out.js", "node_modules/m.js"]
        );
    }
}
