//! stderr's one writer: logging threads hand it their lines and never wait
//! for the pipe.
//!
//! A host that pipes stderr and never reads it fills the pipe (64 KiB on
//! Linux, the lines of a hundred or so calls), and a write to a full pipe
//! blocks: the thread logging a call's line, and with it the answers of
//! every later call, would wait forever. So lines go to a bounded queue
//! that one thread writes out; a line that finds the queue full is dropped
//! and counted, and the count is written before the next line that gets
//! through. The log file (`--log-file`) is written directly and keeps every
//! line.

use std::io::{self, Write as _};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

/// Lines the queue holds at most. A line's fields are bounded
/// (`FIELD_CHARS` each: a line stays under 8 KiB), so the queue holds
/// under 8 MiB.
const QUEUE_LINES: usize = 1024;

/// The most the writer puts into one write call: the lines waiting, whole.
const BATCH_BYTES: usize = 64 * 1024;

/// The queue's sending end; `None` when its thread could not be started
/// (lines are then written by the thread that logs them).
static QUEUE: OnceLock<Option<SyncSender<Vec<u8>>>> = OnceLock::new();
/// Lines queued and not yet written.
static UNWRITTEN: AtomicUsize = AtomicUsize::new(0);
/// Lines dropped since the last one written.
static DROPPED: AtomicUsize = AtomicUsize::new(0);

/// Hands `line` (one whole formatted line) to the writer, or drops it when
/// the queue is full.
pub(super) fn write(line: &[u8]) {
    let Some(queue) = QUEUE.get_or_init(start_writer) else {
        write_now(line);
        return;
    };
    UNWRITTEN.fetch_add(1, Ordering::AcqRel);
    match queue.try_send(line.to_vec()) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            UNWRITTEN.fetch_sub(1, Ordering::AcqRel);
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
        Err(TrySendError::Disconnected(line)) => {
            UNWRITTEN.fetch_sub(1, Ordering::AcqRel);
            write_now(&line);
        }
    }
}

/// The longest [`flush`] waits in all, however slowly stderr is read.
const FLUSH_AT_MOST: Duration = Duration::from_secs(5);

/// Waits until every queued line is written, giving up once no line has
/// been written for `stalled` (or after [`FLUSH_AT_MOST`]): an exiting
/// process writes its last lines to a reader that keeps reading, however
/// busy the machine, and leaves at once when nobody reads them.
pub(super) fn flush(stalled: Duration) {
    let started = Instant::now();
    let mut last_progress = started;
    let mut left = UNWRITTEN.load(Ordering::Acquire);
    while left > 0 && last_progress.elapsed() < stalled && started.elapsed() < FLUSH_AT_MOST {
        std::thread::sleep(Duration::from_millis(1));
        let now_left = UNWRITTEN.load(Ordering::Acquire);
        if now_left < left {
            last_progress = Instant::now();
        }
        left = now_left;
    }
}

fn start_writer() -> Option<SyncSender<Vec<u8>>> {
    let (sender, receiver) = mpsc::sync_channel(QUEUE_LINES);
    std::thread::Builder::new()
        .name("stderr".into())
        .spawn(move || write_out(&receiver))
        .ok()?;
    Some(sender)
}

/// The writer thread: the lines waiting, whole, a batch per write call,
/// each batch after the count of lines dropped before it.
fn write_out(lines: &Receiver<Vec<u8>>) {
    let mut batch = Vec::new();
    while let Ok(line) = lines.recv() {
        let mut taken = 1;
        batch.extend_from_slice(&line);
        while batch.len() < BATCH_BYTES
            && let Ok(line) = lines.try_recv()
        {
            taken += 1;
            batch.extend_from_slice(&line);
        }
        let dropped = DROPPED.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let note = format!(
                "mcp-project-helper: {dropped} log lines dropped: stderr was not read as fast as they came (a --log-file keeps every line)\n"
            );
            batch.splice(0..0, note.into_bytes());
        }
        write_now(&batch);
        batch.clear();
        UNWRITTEN.fetch_sub(taken, Ordering::AcqRel);
    }
}

/// Writes `bytes` (whole lines) to stderr with one write call, on this
/// thread.
fn write_now(bytes: &[u8]) {
    // A line that cannot be written has nowhere to be reported.
    let _ = io::stderr().lock().write_all(bytes);
}
