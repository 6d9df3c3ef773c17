//! The six tools. Each module takes plain Rust inputs and returns a plain
//! output struct (serialized as the tool's `structuredContent`) or a
//! [`ToolError`], whose one-line message tells the model what was wrong and
//! what is allowed.

pub mod check;
pub mod docs;
pub mod find;
pub mod list;
pub mod read;
pub mod search;

use crate::security::PathError;

/// `success`; `error` only when a check did not run to its end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Status {
    #[default]
    Success,
    Error,
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Path(#[from] PathError),
    /// Input that is well-typed but not acceptable (a bad range, regex …).
    #[error("{0}")]
    Invalid(String),
    /// An I/O failure on a path the gate accepted.
    #[error("cannot read '{path}': {message}")]
    Io { path: String, message: String },
}

/// A bad glob is bad input like any other.
impl From<crate::glob::GlobError> for ToolError {
    fn from(error: crate::glob::GlobError) -> Self {
        Self::Invalid(error.to_string())
    }
}

impl ToolError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    pub fn io(path: &str, error: &std::io::Error) -> Self {
        Self::Io {
            path: crate::security::shown_path(path),
            message: error.to_string(),
        }
    }
}

/// Cuts `text` to at most `max_chars` characters, on a character boundary.
/// Returns the cut text and whether anything was removed.
pub fn cut_chars(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((byte_index, _)) => (&text[..byte_index], true),
        None => (text, false),
    }
}

/// Test fixture shared by the tool modules: a temporary project root
/// holding `files` (path, content), and its gate.
#[cfg(test)]
pub(crate) fn temp_project<T: AsRef<[u8]>>(
    files: &[(&str, T)],
) -> (tempfile::TempDir, crate::security::PathGate) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dunce::canonicalize(dir.path()).expect("canonical temp dir");
    for (path, content) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create folders");
        std::fs::write(path, content).expect("write fixture");
    }
    let gate = crate::security::PathGate::new(root, &[]).expect("gate");
    (dir, gate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_chars_respects_boundaries() {
        assert_eq!(cut_chars("héllo", 2), ("hé", true));
        assert_eq!(cut_chars("héllo", 5), ("héllo", false));
        assert_eq!(cut_chars("", 3), ("", false));
        assert_eq!(cut_chars("日本語", 1), ("日", true));
    }
}
