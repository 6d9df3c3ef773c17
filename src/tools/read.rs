//! `read_project_file`: one UTF-8 text file, optionally a line range.

use std::io::{BufRead, BufReader};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Status, ToolError, json_byte_width};
use crate::cancel::Cancel;
use crate::corpus::searchable::{SNIFF_BYTES, looks_binary};
use crate::security::PathGate;

/// Content is capped at 200 KiB.
pub const MAX_CONTENT_BYTES: usize = 200 * 1024;
/// Content is also capped at this width as JSON text, escapes counted in
/// full: 200 KiB of control characters would be 1.2 million characters.
pub const MAX_CONTENT_WIDTH: usize = 2 * MAX_CONTENT_BYTES;
/// Bytes a read looks at, from the start of the file: it stops once it has
/// what it returns and has counted the lines within this much.
pub const MAX_SCAN_BYTES: u64 = 64 * 1024 * 1024;
/// Largest answer as JSON text: the content plus a path and a few numbers.
pub const MAX_RESULT_CHARS: usize = MAX_CONTENT_WIDTH + 100 * 1024;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReadInput {
    /// File path relative to the project root, with `/` separators, e.g. `src/main.rs`.
    pub path: String,
    /// First line to return, 1-based and inclusive. Omit to start at line 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "line_number_schema")]
    pub start_line: Option<u64>,
    /// Last line to return, 1-based and inclusive. Omit to read to the end (content is capped in size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "line_number_schema")]
    pub end_line: Option<u64>,
}

/// A plain `integer` (not `["integer", "null"]`): clients that convert
/// string arguments by the declared type, such as the MCP Inspector CLI,
/// only recognise the plain form. Omitting the field means "no limit".
fn line_number_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer", "minimum": 1})
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReadOutput {
    pub status: Status,
    /// The file's path relative to the project root.
    pub file: String,
    /// The requested lines, with their line endings.
    pub content: String,
    /// The whole file's size in bytes.
    pub size: u64,
    /// True when the content was cut at the size cap; read on with a higher `start_line`.
    pub truncated: bool,
    /// First line returned (1-based).
    pub start_line: u64,
    /// Last line returned (1-based); less than `start_line` for an empty file.
    pub end_line: u64,
    /// Number of lines in the whole file (see total_lines_partial).
    pub total_lines: u64,
    /// Present (true) when the file goes on past the first 64 MiB: total_lines then counts only the lines within them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub total_lines_partial: bool,
}

impl ReadInput {
    pub fn log_params(&self) -> String {
        format!(
            "path={:?} start_line={:?} end_line={:?}",
            self.path, self.start_line, self.end_line
        )
    }
}

impl ReadOutput {
    pub fn log_summary(&self) -> String {
        format!(
            "size={} lines={}-{} total_lines={} truncated={}",
            self.size, self.start_line, self.end_line, self.total_lines, self.truncated
        )
    }
}

pub fn read(gate: &PathGate, input: &ReadInput, cancel: &Cancel) -> Result<ReadOutput, ToolError> {
    if input.path.trim().is_empty() {
        return Err(ToolError::invalid(
            "path is empty; give a file path relative to the project root, e.g. 'src/main.rs'",
        ));
    }
    let start = input.start_line.unwrap_or(1);
    if start == 0 {
        return Err(ToolError::invalid(
            "start_line must be 1 or more (lines are 1-based)",
        ));
    }
    if let Some(end) = input.end_line
        && end < start
    {
        return Err(ToolError::invalid(format!(
            "end_line {end} is before start_line {start}; give end_line >= start_line"
        )));
    }
    let resolved = gate.resolve(&input.path)?;
    let relative = resolved.relative;
    let file = gate
        .open_file(&resolved.real)
        .map_err(|error| ToolError::io(&relative, &error))?;
    let size = file
        .metadata()
        .map_err(|error| ToolError::io(&relative, &error))?
        .len();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = reader
        .fill_buf()
        .map_err(|error| ToolError::io(&relative, &error))?;
    if looks_binary(&head[..head.len().min(SNIFF_BYTES)]) {
        return Err(ToolError::invalid(format!(
            "'{relative}' is a binary file (NUL byte or invalid UTF-8 near the start); only UTF-8 text files can be read"
        )));
    }
    let lines = collect_lines(reader, start, input.end_line, &relative, cancel)?;
    if lines.partial && start > lines.total {
        return Err(ToolError::invalid(format!(
            "start_line {start} lies past the first {} MiB of '{relative}', which hold {} lines; reads reach at most that far into a file",
            MAX_SCAN_BYTES / (1024 * 1024),
            lines.total
        )));
    }
    if lines.total > 0 && start > lines.total {
        return Err(ToolError::invalid(format!(
            "start_line {start} is past the end of '{relative}', which has {} lines",
            lines.total
        )));
    }
    Ok(ReadOutput {
        status: Status::Success,
        file: relative,
        content: lines.content,
        size,
        truncated: lines.truncated,
        start_line: start,
        end_line: lines.last_returned.unwrap_or(start.saturating_sub(1)),
        total_lines: lines.total,
        total_lines_partial: lines.partial,
    })
}

struct Lines {
    content: String,
    /// Lines counted (all of them unless `partial`).
    total: u64,
    last_returned: Option<u64>,
    truncated: bool,
    /// The file goes on past [`MAX_SCAN_BYTES`].
    partial: bool,
}

/// Streams the file in buffer-sized chunks: keeps the bytes of lines
/// `start..=end` up to the content caps, then only counts lines, and stops
/// at the end of the file or after [`MAX_SCAN_BYTES`], whichever is first.
/// So neither a huge (or sparse, or growing) file nor a single enormous
/// line costs more than the caps in memory, or more than the scan in time.
fn collect_lines(
    mut reader: impl BufRead,
    start: u64,
    end: Option<u64>,
    relative: &str,
    cancel: &Cancel,
) -> Result<Lines, ToolError> {
    let wanted = |line: u64| line >= start && end.is_none_or(|end| line <= end);
    let mut kept: Vec<u8> = Vec::new();
    let mut width = 0usize;
    let mut line = 1u64;
    let mut last_returned = None;
    let mut truncated = false;
    let mut ends_with_newline = true;
    let mut scanned = 0u64;
    loop {
        ToolError::check_cancel(cancel)?;
        if scanned >= MAX_SCAN_BYTES {
            return Ok(Lines {
                content: utf8_prefix(kept),
                total: line - 1,
                last_returned,
                truncated,
                partial: true,
            });
        }
        let chunk = reader
            .fill_buf()
            .map_err(|error| ToolError::io(relative, &error))?;
        if chunk.is_empty() {
            break;
        }
        let budget = usize::try_from(MAX_SCAN_BYTES - scanned).unwrap_or(usize::MAX);
        let chunk = &chunk[..chunk.len().min(budget)];
        let mut position = 0;
        while position < chunk.len() {
            let newline = memchr::memchr(b'\n', &chunk[position..]).map(|i| position + i + 1);
            let segment_end = newline.unwrap_or(chunk.len());
            if wanted(line) && !truncated {
                let segment = &chunk[position..segment_end];
                let mut taken = 0;
                let room = MAX_CONTENT_BYTES - kept.len();
                for &byte in segment.iter().take(room) {
                    let next = width + json_byte_width(byte);
                    if next > MAX_CONTENT_WIDTH {
                        break;
                    }
                    width = next;
                    taken += 1;
                }
                kept.extend_from_slice(&segment[..taken]);
                truncated = taken < segment.len();
                // A line counts as returned once any of its bytes are in.
                if taken > 0 {
                    last_returned = Some(line);
                }
            }
            if newline.is_some() {
                line += 1;
            }
            position = segment_end;
        }
        ends_with_newline = chunk.last() == Some(&b'\n');
        let consumed = chunk.len();
        reader.consume(consumed);
        scanned += consumed as u64;
    }
    let total = if ends_with_newline { line - 1 } else { line };
    Ok(Lines {
        content: utf8_prefix(kept),
        total,
        last_returned,
        truncated,
        partial: false,
    })
}

/// Decodes kept bytes; a character cut by the cap is dropped, any other
/// invalid byte becomes U+FFFD.
fn utf8_prefix(mut bytes: Vec<u8>) -> String {
    if let Err(error) = std::str::from_utf8(&bytes)
        && error.error_len().is_none()
    {
        bytes.truncate(error.valid_up_to());
    }
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &[u8])]) -> (tempfile::TempDir, PathGate) {
        crate::tools::temp_project(files)
    }

    fn read(gate: &PathGate, input: &ReadInput) -> Result<ReadOutput, ToolError> {
        super::read(gate, input, &Cancel::never())
    }

    fn input(path: &str, start: Option<u64>, end: Option<u64>) -> ReadInput {
        ReadInput {
            path: path.into(),
            start_line: start,
            end_line: end,
        }
    }

    #[test]
    fn reads_whole_file() {
        let (_d, gate) = project(&[("a/b.txt", b"one\ntwo\nthree\n")]);
        let out = read(&gate, &input("a/b.txt", None, None)).unwrap();
        assert_eq!(out.file, "a/b.txt");
        assert_eq!(out.content, "one\ntwo\nthree\n");
        assert_eq!((out.start_line, out.end_line, out.total_lines), (1, 3, 3));
        assert_eq!(out.size, 14);
        assert!(!out.truncated);
    }

    #[test]
    fn reads_a_range_and_clamps_the_end() {
        let (_d, gate) = project(&[("f.txt", b"1\n2\n3\n4\n5")]);
        let out = read(&gate, &input("f.txt", Some(2), Some(3))).unwrap();
        assert_eq!(out.content, "2\n3\n");
        assert_eq!((out.start_line, out.end_line, out.total_lines), (2, 3, 5));
        let out = read(&gate, &input("f.txt", Some(4), Some(99))).unwrap();
        assert_eq!(out.content, "4\n5");
        assert_eq!(out.end_line, 5);
    }

    #[test]
    fn bad_ranges_are_errors() {
        let (_d, gate) = project(&[("f.txt", b"1\n2\n")]);
        assert!(read(&gate, &input("f.txt", Some(0), None)).is_err());
        assert!(read(&gate, &input("f.txt", Some(3), Some(2))).is_err());
        let error = read(&gate, &input("f.txt", Some(5), None)).unwrap_err();
        assert!(error.to_string().contains("has 2 lines"), "{error}");
    }

    #[test]
    fn empty_file_is_fine() {
        let (_d, gate) = project(&[("empty.txt", b"")]);
        let out = read(&gate, &input("empty.txt", None, None)).unwrap();
        assert_eq!(
            (out.content.as_str(), out.total_lines, out.end_line),
            ("", 0, 0)
        );
    }

    #[test]
    fn binary_and_directories_are_refused() {
        let (_d, gate) = project(&[
            ("bin.dat", b"abc\0def"),
            ("bad.txt", b"ok \xff\xfe"),
            ("d/x", b"x"),
        ]);
        assert!(
            read(&gate, &input("bin.dat", None, None))
                .unwrap_err()
                .to_string()
                .contains("binary")
        );
        assert!(read(&gate, &input("bad.txt", None, None)).is_err());
        assert!(
            read(&gate, &input("d", None, None))
                .unwrap_err()
                .to_string()
                .contains("directory")
        );
    }

    #[test]
    fn large_content_is_cut_on_a_char_boundary() {
        let text = "é".repeat(MAX_CONTENT_BYTES); // 2 bytes each, no newline
        let (_d, gate) = project(&[("big.txt", text.as_bytes())]);
        let out = read(&gate, &input("big.txt", None, None)).unwrap();
        assert!(out.truncated);
        assert!(out.content.len() <= MAX_CONTENT_BYTES);
        assert!(out.content.chars().all(|c| c == 'é'));
        assert_eq!(out.total_lines, 1);
    }

    #[test]
    fn control_characters_are_cut_by_their_escaped_width() {
        let text = format!("a{}", "\u{1}".repeat(MAX_CONTENT_BYTES));
        let (_d, gate) = project(&[("ctl.txt", text.as_bytes())]);
        let out = read(&gate, &input("ctl.txt", None, None)).unwrap();
        assert!(out.truncated);
        let written = serde_json::to_string(&out).unwrap();
        assert!(written.len() <= MAX_RESULT_CHARS, "{}", written.len());
        assert!(written.len() > MAX_CONTENT_WIDTH / 2);
    }

    #[test]
    fn a_huge_sparse_file_is_read_only_as_far_as_needed() {
        // Text past the sniffed start, then a hole of NULs.
        let text = format!("first\n{}", "x\n".repeat(SNIFF_BYTES));
        let (_d, gate) = project(&[("sparse.txt", text.as_bytes())]);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(gate.root().join("sparse.txt"))
            .unwrap();
        file.set_len(4 * MAX_SCAN_BYTES).unwrap();
        let out = read(&gate, &input("sparse.txt", Some(1), Some(1))).unwrap();
        assert_eq!(out.content, "first\n");
        assert!(out.total_lines_partial);
        assert_eq!(out.total_lines, 1 + SNIFF_BYTES as u64);
        let beyond = Some(SNIFF_BYTES as u64 + 5);
        let error = read(&gate, &input("sparse.txt", beyond, None)).unwrap_err();
        assert!(error.to_string().contains("first 64 MiB"), "{error}");
        let json =
            serde_json::to_value(read(&gate, &input("sparse.txt", Some(1), Some(1))).unwrap())
                .unwrap();
        assert_eq!(json["total_lines_partial"], true);
        let small = project(&[("s.txt", b"x\n")]);
        let json =
            serde_json::to_value(read(&small.1, &input("s.txt", None, None)).unwrap()).unwrap();
        assert!(json.get("total_lines_partial").is_none());
    }

    #[test]
    fn a_cancelled_read_stops() {
        let (_d, gate) = project(&[("f.txt", b"1\n")]);
        let cancel = Cancel::never();
        cancel.cancel();
        let error = super::read(&gate, &input("f.txt", None, None), &cancel).unwrap_err();
        assert!(matches!(error, ToolError::Cancelled));
    }

    #[cfg(unix)]
    #[test]
    fn fifo_is_refused_without_blocking() {
        let (_d, gate) = project(&[]);
        let fifo = gate.root().join("pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let error = read(&gate, &input("pipe", None, None)).unwrap_err();
        assert!(error.to_string().contains("special file"), "{error}");
    }
}
