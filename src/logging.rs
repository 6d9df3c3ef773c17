//! Log lines go to stderr and, when configured, are appended to a file.
//! stdout belongs to the protocol and is never written here.
//!
//! Every field of every record is cut to [`FIELD_CHARS`] characters (with
//! the full size noted) and has its control characters escaped, here and
//! nowhere else: a 16 MB input makes a short log line, and a newline in a
//! client's input cannot forge a second line.

use std::fmt::{self, Write as _};
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::Arc;

use tracing::field::Field;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::{self, Writer};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt as layers};

use crate::config::{Config, OpenError, open_regular_file};

/// The longest a logged field may be, in characters.
pub const FIELD_CHARS: usize = 400;

pub fn init(config: &Config) -> Result<(), String> {
    let level = LevelFilter::from_level(config.log_level.as_tracing());
    // Libraries speak only of problems: rmcp's debug records can carry whole
    // messages (file contents), which the log must never hold.
    let filter = Targets::new()
        .with_default(level.min(LevelFilter::WARN))
        .with_target(env!("CARGO_CRATE_NAME"), level);
    let stderr = layers::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .fmt_fields(bounded_fields())
        .with_filter(filter.clone());
    let file = match &config.log_file {
        Some(path) => Some(
            layers::layer()
                .with_writer(Arc::new(open_log_file(path)?))
                .with_ansi(false)
                .with_target(false)
                .fmt_fields(bounded_fields())
                .with_filter(filter),
        ),
        None => None,
    };
    tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .try_init()
        .map_err(|error| format!("cannot start logging: {error}"))
}

/// Opens the log file for appending: a regular file only (a FIFO would
/// block or stall logging, a terminal or `/dev/stdout` could reach the
/// protocol stream), never blocking, and never the file stdout is.
fn open_log_file(path: &Path) -> Result<std::fs::File, String> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|error| format!("cannot create log folder {}: {error}", parent.display()))?;
    }
    let file = open_regular_file(path, OpenOptions::new().create(true).append(true)).map_err(
        |error| match error {
            OpenError::NotRegular(kind) => format!(
                "log file {} is not a regular file ({kind}); --log-file and MCP_PROJECT_HELPER_LOG_FILE must name a regular file, never stdout (log lines also go to stderr)",
                path.display()
            ),
            OpenError::Io(error) => format!("cannot open log file {}: {error}", path.display()),
        },
    )?;
    if is_stdout(&file) {
        return Err(format!(
            "log file {} is the same file as stdout, which carries only the protocol; choose another file (log lines also go to stderr)",
            path.display()
        ));
    }
    Ok(file)
}

/// True when `file` is the very file (device and inode) behind fd 1.
#[cfg(unix)]
fn is_stdout(file: &std::fs::File) -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let Ok(stdout) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return false;
    };
    match (std::fs::File::from(stdout).metadata(), file.metadata()) {
        (Ok(stdout), Ok(log)) => stdout.dev() == log.dev() && stdout.ino() == log.ino(),
        _ => false,
    }
}

/// Windows: stdout is a pipe when a client runs the server, and a pipe is
/// refused as not a regular file.
#[cfg(not(unix))]
fn is_stdout(_file: &std::fs::File) -> bool {
    false
}

/// Formats `name=value` pairs (the message bare), each value bounded.
fn bounded_fields() -> impl for<'writer> format::FormatFields<'writer> + 'static {
    format::debug_fn(
        |writer: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug| {
            if field.name() != "message" {
                write!(writer, "{}=", field.name())?;
            }
            let mut bounded = Bounded::new(writer, FIELD_CHARS);
            write!(bounded, "{value:?}")?;
            bounded.finish()
        },
    )
    .delimited(" ")
}

/// Passes on the first `limit` characters written to it, control
/// characters escaped, and counts the rest; `finish` notes the full size.
struct Bounded<'a, W: fmt::Write> {
    inner: &'a mut W,
    limit: usize,
    chars: usize,
    bytes: usize,
}

impl<'a, W: fmt::Write> Bounded<'a, W> {
    fn new(inner: &'a mut W, limit: usize) -> Self {
        Self {
            inner,
            limit,
            chars: 0,
            bytes: 0,
        }
    }

    fn finish(self) -> fmt::Result {
        if self.chars > self.limit {
            write!(self.inner, "…({} bytes)", self.bytes)?;
        }
        Ok(())
    }
}

impl<W: fmt::Write> fmt::Write for Bounded<'_, W> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.bytes += text.len();
        for character in text.chars() {
            self.chars += 1;
            if self.chars > self.limit {
                // Counted only: the size is in `bytes`.
                continue;
            }
            if character.is_control() {
                write!(self.inner, "{}", character.escape_default())?;
            } else {
                self.inner.write_char(character)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounded(text: &str, limit: usize) -> String {
        let mut out = String::new();
        let mut writer = Bounded::new(&mut out, limit);
        writer.write_str(text).expect("write");
        writer.finish().expect("finish");
        out
    }

    #[test]
    fn short_fields_pass_unchanged() {
        assert_eq!(bounded("path=\"src\"", 400), "path=\"src\"");
    }

    #[test]
    fn long_fields_are_cut_with_their_full_size() {
        let huge = "é".repeat(8 * 1024 * 1024);
        let out = bounded(&huge, 400);
        assert!(out.starts_with(&"é".repeat(400)));
        assert!(
            out.ends_with(&format!("…({} bytes)", huge.len())),
            "{}",
            &out[800..]
        );
        assert!(out.chars().count() < 430);
    }

    #[test]
    fn control_characters_cannot_start_a_new_line() {
        let out = bounded("a\nINFO forged\r\u{1b}[31m", 400);
        assert!(!out.contains('\n') && !out.contains('\r') && !out.contains('\u{1b}'));
        assert!(out.contains("\\n"));
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_refused_as_log_files() {
        let error = open_log_file(Path::new("/dev/null")).unwrap_err();
        assert!(error.contains("not a regular file (a device)"), "{error}");
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("log.fifo");
        crate::test_support::make_fifo(&fifo);
        let error = open_log_file(&fifo).unwrap_err();
        assert!(error.contains("not a regular file"), "{error}");
        assert!(open_log_file(&dir.path().join("logs/server.log")).is_ok());
    }
}
