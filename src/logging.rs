//! Log lines go to stderr and, when configured, are appended to a file.
//! stdout belongs to the protocol and is never written here.
//!
//! Every field of every record is cut to [`FIELD_CHARS`] characters (with
//! the full size noted) and has its control characters escaped, here and
//! nowhere else: a 16 MB input makes a short log line, and a newline in a
//! client's input cannot forge a second line.
//!
//! A call's own line goes to stderr after its answer ([`after_answer`]): a
//! host reads stderr as it comes, and a line written first woke its reader
//! before the answer was out, 0.1-0.2 ms more a call (docs/performance.md,
//! "Per call").
//!
//! stderr lines are written by one thread of their own ([`stderr`]), so a
//! host that never reads stderr costs log lines, never answers.

mod stderr;

use std::cell::Cell;
use std::fmt::{self, Write as _};
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::Field;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
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
        .with_writer(Destination::Stderr)
        .with_ansi(false)
        .with_target(false)
        .fmt_fields(bounded_fields())
        .with_filter(filter.clone());
    let file = match &config.log_file {
        Some(path) => Some(
            layers::layer()
                .with_writer(Destination::File(Arc::new(open_log_file(path)?)))
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

/// Lines held back at most; past that they are written at once, so that
/// answers the client never receives (a cancelled request's) cannot pile
/// them up.
const MAX_HELD_LINES: usize = 64;

thread_local! {
    /// Set while this thread logs a line that waits for an answer.
    // Already `const`; the Windows target's newer clippy flags it anyway
    // (rust-clippy issue 17566).
    #[allow(clippy::missing_const_for_thread_local)]
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Lines waiting for the next answer, in the order they were logged.
static HELD: Mutex<Vec<(Destination, Vec<u8>)>> = Mutex::new(Vec::new());
/// Whether [`HELD`] may hold a line: spares every other line the lock.
static ANY_HELD: AtomicBool = AtomicBool::new(false);

/// Logs what `log` logs to stderr once the next message is on stdout (see
/// [`release_held`]) instead of before: a call logs its outcome this way
/// just before its answer is written. The log file gets the line at once:
/// writing a file wakes nobody, and whoever reads it after an answer finds
/// that answer's line there.
pub fn after_answer(log: impl FnOnce()) {
    HOLDING.set(true);
    log();
    HOLDING.set(false);
}

/// Writes the lines held back, in order. Called after each line written to
/// stdout, before any stderr line not held back, and before the process
/// exits.
pub fn release_held() {
    if !ANY_HELD.load(Ordering::Acquire) {
        return;
    }
    let Ok(mut held) = HELD.lock() else {
        return;
    };
    for (destination, line) in held.drain(..) {
        destination.write(&line);
    }
    ANY_HELD.store(false, Ordering::Release);
}

/// Writes the lines held back and waits until stderr's writer has written
/// every line, or has written none for `stalled`: called before the
/// process exits.
pub fn flush(stalled: std::time::Duration) {
    release_held();
    stderr::flush(stalled);
}

/// Where log lines go: stderr, and the log file when there is one.
#[derive(Clone)]
enum Destination {
    Stderr,
    File(Arc<File>),
    /// Stands for stderr in tests: a stream someone reads as it comes.
    #[cfg(test)]
    Captured(Arc<Mutex<Vec<u8>>>),
}

impl Destination {
    /// One line, one write call: tracing hands over a whole formatted line.
    fn write(&self, line: &[u8]) {
        match self {
            Destination::Stderr => stderr::write(line),
            // A log line that cannot be written has nowhere to be reported.
            Destination::File(file) => {
                let _ = (&**file).write_all(line);
            }
            #[cfg(test)]
            Destination::Captured(text) => {
                if let Ok(mut text) = text.lock() {
                    text.extend_from_slice(line);
                }
            }
        }
    }

    /// Writes `line` now, or holds it while this thread is in
    /// [`after_answer`] if a reader is woken by it; a stderr line written
    /// now goes after those held.
    fn write_or_hold(&self, line: &[u8]) {
        if matches!(self, Destination::File(_)) {
            self.write(line);
            return;
        }
        if HOLDING.get()
            && let Ok(mut held) = HELD.lock()
            && held.len() < MAX_HELD_LINES
        {
            held.push((self.clone(), line.to_vec()));
            ANY_HELD.store(true, Ordering::Release);
            return;
        }
        release_held();
        self.write(line);
    }
}

/// The writer tracing formats one line into, per line.
struct LineWriter<'a>(&'a Destination);

impl io::Write for LineWriter<'_> {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        self.0.write_or_hold(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Destination {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter(self)
    }
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

    /// One test: the held lines are the process's, shared by every thread.
    #[test]
    fn a_calls_stderr_line_waits_for_the_answer_and_keeps_its_order() {
        let captured = Arc::new(Mutex::new(Vec::new()));
        let stderr = Destination::Captured(captured.clone());
        let stderr_text = || String::from_utf8(captured.lock().expect("captured").clone());
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("server.log");
        let file = Destination::File(Arc::new(File::create(&path).expect("log file")));
        let file_text = || std::fs::read_to_string(&path).expect("read log");
        // As tracing writes one event: the stderr layer, then the file's.
        let log = |line: &str| {
            stderr.write_or_hold(line.as_bytes());
            file.write_or_hold(line.as_bytes());
        };

        after_answer(|| log("call 1\n"));
        assert_eq!(stderr_text().unwrap(), "", "held until the answer is out");
        assert_eq!(
            file_text(),
            "call 1\n",
            "a file wakes nobody: written at once"
        );
        release_held();
        assert_eq!(stderr_text().unwrap(), "call 1\n");
        release_held();
        assert_eq!(stderr_text().unwrap(), "call 1\n", "written once");

        // A line not held goes after those held before it.
        after_answer(|| log("call 2\n"));
        log("index ready\n");
        assert_eq!(stderr_text().unwrap(), "call 1\ncall 2\nindex ready\n");
        assert_eq!(file_text(), stderr_text().unwrap());

        // Answers that never come (cancelled requests) hold only so many.
        for call in 0..=MAX_HELD_LINES {
            after_answer(|| log(&format!("held {call}\n")));
        }
        let written = stderr_text().unwrap();
        assert_eq!(written.lines().count(), 3 + MAX_HELD_LINES + 1, "{written}");
        assert!(
            written.ends_with(&format!("held {MAX_HELD_LINES}\n")),
            "{written}"
        );
        assert_eq!(file_text(), written);
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
