//! The nine tools. Each module takes plain Rust inputs and returns a plain
//! output struct (serialized as the tool's `structuredContent`) or a
//! [`ToolError`], whose one-line message tells the model what was wrong and
//! what is allowed.

pub mod check;
pub mod definitions;
pub mod docs;
pub mod find;
pub mod list;
pub mod outline;
pub mod read;
pub mod references;
pub mod search;

use crate::cancel::Cancel;
use crate::security::PathError;

/// Longest `query` (search, get_docs) accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 1024;
/// Longest `check_name` accepted, in characters.
pub const MAX_CHECK_NAME_CHARS: usize = 128;

/// The default `path` of the tools that take a folder: the project root.
pub(crate) fn root_path() -> String {
    ".".to_string()
}

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
    /// The client cancelled the call; rmcp sends no answer for it.
    #[error("the request was cancelled")]
    Cancelled,
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

    /// Refuses a text input over `max_chars` characters (as JSON Schema's
    /// `maxLength` counts) before any work is done with it.
    pub fn check_size(field: &str, value: &str, max_chars: usize) -> Result<(), Self> {
        // Four bytes per character at most: short inputs need no count.
        if value.len() > max_chars && value.chars().count() > max_chars {
            return Err(Self::Invalid(format!(
                "{field} is {} characters long; at most {max_chars} characters are allowed",
                value.chars().count()
            )));
        }
        Ok(())
    }

    /// `Cancelled` once the client has cancelled the call.
    pub fn check_cancel(cancel: &Cancel) -> Result<(), Self> {
        if cancel.is_cancelled() {
            Err(Self::Cancelled)
        } else {
            Ok(())
        }
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

/// Length of `value` as JSON text, in UTF-16 code units as hosts count a
/// string: escapes count in full (a `\u0001` is 6), and so does every byte
/// of a non-ASCII character, which over-counts and never under-counts.
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing to a counter cannot fail, and the outputs serialize infallibly.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// JSON characters a list in a result may still take: a result is built
/// from a skeleton (the output with empty lists) plus items that fit.
#[derive(Debug, Clone, Copy)]
pub struct JsonBudget {
    left: usize,
}

impl JsonBudget {
    /// What `max_chars` leaves after `skeleton`, with room for `count` and
    /// `truncated` growing and a `note`.
    pub fn new<T: serde::Serialize + ?Sized>(max_chars: usize, skeleton: &T) -> Self {
        const SLACK: usize = 512;
        Self {
            left: max_chars.saturating_sub(json_len(skeleton) + SLACK),
        }
    }

    /// Takes `item` (plus its comma) from the budget; false, taking
    /// nothing, when it does not fit.
    pub fn take<T: serde::Serialize + ?Sized>(&mut self, item: &T) -> bool {
        let cost = json_len(item) + 1;
        if cost > self.left {
            return false;
        }
        self.left -= cost;
        true
    }

    /// Moves `items` into `out` in order while they fit, at most `max`;
    /// true when any were left out (the answer is `truncated`).
    pub fn fill<T: serde::Serialize>(
        &mut self,
        items: impl ExactSizeIterator<Item = T>,
        max: usize,
        out: &mut Vec<T>,
    ) -> bool {
        let total = items.len();
        for item in items.take(max) {
            if !self.take(&item) {
                break;
            }
            out.push(item);
        }
        total > out.len()
    }
}

/// Width of one byte of UTF-8 text once it is a JSON string, counted as
/// [`json_len`] does: control characters escape to `\uXXXX` (or two
/// characters for `\n`, `\t` …), `"` and `\` to two.
pub fn json_byte_width(byte: u8) -> usize {
    match byte {
        b'\n' | b'\t' | b'\r' | 0x08 | 0x0c | b'"' | b'\\' => 2,
        0..0x20 | 0x7f => 6,
        _ => 1,
    }
}

/// Test fixture shared by the tool modules: a character that costs the
/// most in a JSON answer and is allowed in a file name. Windows refuses
/// control characters in names, so there it is DEL, which needs no escape
/// (nothing Windows allows in a name does).
#[cfg(test)]
pub(crate) const COSTLY_NAME_CHAR: &str = if cfg!(windows) { "\u{7f}" } else { "\u{1}" };

/// Test fixture shared by the tool modules: a temporary project root
/// holding `files` (path, content), and its gate.
#[cfg(test)]
pub(crate) fn temp_project<T: AsRef<[u8]>>(
    files: &[(&str, T)],
) -> (tempfile::TempDir, crate::security::PathGate) {
    let (dir, root) = crate::security::temp_root(files);
    let gate = crate::security::PathGate::new(root, &[]).expect("gate");
    (dir, gate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_widths_bound_what_serde_writes() {
        let text = "a\u{1}\"\\\n\t\u{7f}é😀";
        let by_bytes: usize = text.bytes().map(json_byte_width).sum::<usize>() + 2;
        let written = serde_json::to_string(text).unwrap();
        assert_eq!(json_len(text), written.len());
        assert!(
            by_bytes >= written.encode_utf16().count(),
            "{by_bytes} {written}"
        );
        assert!(json_len(text) >= written.encode_utf16().count());
        assert_eq!(json_len("\u{1}"), 8);
    }

    #[test]
    fn budgets_take_what_fits() {
        let mut budget = JsonBudget::new(600, &Vec::<String>::new());
        assert!(budget.take("x".repeat(60).as_str()));
        assert!(!budget.take("x".repeat(60).as_str()));
        assert!(budget.take("x"));
    }

    #[test]
    fn oversized_inputs_name_the_limit() {
        let error = ToolError::check_size("query", &"x".repeat(2000), 1024).unwrap_err();
        assert_eq!(
            error.to_string(),
            "query is 2000 characters long; at most 1024 characters are allowed"
        );
        assert!(ToolError::check_size("query", "ok", 1024).is_ok());
    }

    #[test]
    fn cut_chars_respects_boundaries() {
        assert_eq!(cut_chars("héllo", 2), ("hé", true));
        assert_eq!(cut_chars("héllo", 5), ("héllo", false));
        assert_eq!(cut_chars("", 3), ("", false));
        assert_eq!(cut_chars("日本語", 1), ("日", true));
    }
}
