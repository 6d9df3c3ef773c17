//! `list_project_directory`: entries under a folder, down to a depth.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{JsonBudget, Status, ToolError};
use crate::cancel::Cancel;
use crate::corpus::{Corpus, Pick};
use crate::walk::{EntryKind, WalkOptions};

pub const MAX_DEPTH: u32 = 5;
pub const DEFAULT_MAX_ENTRIES: usize = 500;
pub const MAX_ENTRIES_CAP: usize = 2000;
/// Largest answer as JSON text (escapes counted in full): the tool's
/// declared size hint. A listing that would outgrow it is cut, `truncated`.
pub const MAX_RESULT_CHARS: usize = 400_000;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ListInput {
    /// Folder relative to the project root, `/`-separated; `.` (the default) is the root.
    #[serde(default = "super::root_path")]
    pub path: String,
    /// How many levels to descend (1 = direct children only).
    #[serde(default = "default_depth")]
    #[schemars(range(min = 1, max = MAX_DEPTH))]
    pub depth: u32,
    /// Maximum number of entries to return.
    #[serde(default = "default_max_entries")]
    #[schemars(range(min = 1, max = MAX_ENTRIES_CAP))]
    pub max_entries: usize,
    /// Also list what .gitignore/.ignore or the built-in skip list (node_modules, target, .venv …) hide. Secrets stay hidden.
    #[serde(default)]
    pub include_ignored: bool,
}

fn default_depth() -> u32 {
    1
}
fn default_max_entries() -> usize {
    DEFAULT_MAX_ENTRIES
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct ListEntry {
    /// The entry's own name.
    pub name: String,
    /// Path relative to the project root.
    pub path: String,
    /// `file`, `dir`, `symlink` (reported, never followed) or `other` (FIFO, socket, device).
    #[serde(rename = "type")]
    pub kind: EntryKind,
    /// Size in bytes, for files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListOutput {
    pub status: Status,
    /// The listed folder, relative to the project root.
    pub path: String,
    /// Entries sorted by path.
    pub entries: Vec<ListEntry>,
    /// Number of entries returned.
    pub count: usize,
    /// True when more entries existed than were returned.
    pub truncated: bool,
}

impl ListInput {
    pub fn log_params(&self) -> String {
        format!(
            "path={:?} depth={} max_entries={} include_ignored={}",
            self.path, self.depth, self.max_entries, self.include_ignored
        )
    }
}

impl ListOutput {
    pub fn log_summary(&self) -> String {
        format!("count={} truncated={}", self.count, self.truncated)
    }
}

pub fn list(
    corpus: &Corpus<'_>,
    input: &ListInput,
    cancel: &Cancel,
) -> Result<ListOutput, ToolError> {
    let depth = input.depth.clamp(1, MAX_DEPTH) as usize;
    let max_entries = input.max_entries.clamp(1, MAX_ENTRIES_CAP);
    let start = corpus.gate().resolve(&input.path)?;
    if !start.real.is_dir() {
        return Err(ToolError::invalid(format!(
            "'{}' is not a directory; use read_project_file to read a file",
            start.relative
        )));
    }
    let options = WalkOptions {
        include_ignored: input.include_ignored,
        cancel: cancel.clone(),
    };
    // One more than a page shows whether the answer is cut.
    let pick = Pick {
        keep: &|_, _| true,
        wanted: max_entries.saturating_add(1),
    };
    let found = corpus
        .entries(&start, Some(depth), &options, &pick)
        .map_err(|error| ToolError::io(&start.relative, &error))?;
    ToolError::check_cancel(cancel)?;
    let mut output = ListOutput {
        status: Status::Success,
        path: start.relative,
        entries: Vec::new(),
        count: 0,
        truncated: false,
    };
    let mut budget = JsonBudget::new(MAX_RESULT_CHARS, &output);
    let listed = found.into_iter().map(|entry| ListEntry {
        name: entry
            .relative
            .rsplit('/')
            .next()
            .unwrap_or(&entry.relative)
            .to_string(),
        path: entry.relative,
        kind: entry.kind,
        size: entry.size,
    });
    output.truncated = budget.fill(listed, max_entries, &mut output.entries);
    output.count = output.entries.len();
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::PathGate;

    fn project() -> (tempfile::TempDir, PathGate) {
        crate::tools::temp_project(&[
            ("a/b/c/d.txt", "hello"),
            ("a/x.txt", "hello"),
            ("top.txt", "hello"),
            (".env", "hello"),
            ("node_modules/m.js", "hello"),
        ])
    }

    fn input(path: &str, depth: u32, max_entries: usize) -> ListInput {
        ListInput {
            path: path.into(),
            depth,
            max_entries,
            include_ignored: false,
        }
    }

    fn list(gate: &PathGate, input: &ListInput) -> Result<ListOutput, ToolError> {
        super::list(&Corpus::walked(gate), input, &Cancel::never())
    }

    #[test]
    fn include_ignored_shows_skipped_folders_but_not_secrets() {
        let (_d, gate) = project();
        let mut all = input(".", 1, 500);
        all.include_ignored = true;
        let out = list(&gate, &all).unwrap();
        let paths: Vec<_> = out.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, vec!["a", "node_modules", "top.txt"]);
    }

    #[test]
    fn hostile_names_stay_within_the_size_hint() {
        let name = crate::tools::COSTLY_NAME_CHAR.repeat(250);
        let files: Vec<(String, &str)> = (0..MAX_ENTRIES_CAP)
            .map(|i| (format!("{i:04}{name}"), ""))
            .collect();
        let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
        let (_d, gate) = crate::tools::temp_project(&refs);
        let out = list(&gate, &input(".", 1, MAX_ENTRIES_CAP)).unwrap();
        let written = serde_json::to_string(&out).unwrap();
        assert!(written.len() <= MAX_RESULT_CHARS, "{}", written.len());
        assert!(out.truncated && out.count > 0);
    }

    #[test]
    fn lists_direct_children_sorted() {
        let (_d, gate) = project();
        let out = list(&gate, &input(".", 1, 500)).unwrap();
        let paths: Vec<_> = out.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, vec!["a", "top.txt"]);
        assert_eq!(out.entries[1].size, Some(5));
        assert_eq!(out.entries[0].kind, EntryKind::Dir);
        assert_eq!(out.count, 2);
        assert!(!out.truncated);
        assert_eq!(out.path, ".");
    }

    #[test]
    fn depth_and_truncation() {
        let (_d, gate) = project();
        let out = list(&gate, &input("a", 5, 500)).unwrap();
        let paths: Vec<_> = out.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, vec!["a/b", "a/b/c", "a/b/c/d.txt", "a/x.txt"]);
        assert_eq!(out.entries[2].name, "d.txt");
        let out = list(&gate, &input("a", 5, 2)).unwrap();
        assert_eq!(out.count, 2);
        assert!(out.truncated);
    }

    #[test]
    fn a_file_is_not_a_directory() {
        let (_d, gate) = project();
        let error = list(&gate, &input("top.txt", 1, 10)).unwrap_err();
        assert!(error.to_string().contains("not a directory"));
    }
}
