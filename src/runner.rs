//! The one process runner. It starts a program without a shell, in a given
//! directory, with stdin closed, the server's environment plus extras; drains
//! stdout and stderr concurrently while keeping only the end of each; and
//! ends the whole process tree on exit, timeout or cancellation.
//!
//! A tree is a process group on Unix and a Job object on Windows, so
//! grandchildren (`sh -c 'sleep 100 & sleep 100'`) die with their parent.
//! A process group misses what left it (`setsid`, a double fork), so on
//! Linux the server process (see [`init_server_process`]) is also a child
//! subreaper that claims every child: whatever a check detached re-parents
//! to the server, and when a run ends every child of the server that is not
//! the program of a run still going is killed and reaped, round after round
//! until none is left.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use process_wrap::tokio::CommandWrap;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

/// How often `on_tick` is called while the program runs.
const TICK: Duration = Duration::from_secs(1);
/// How long to wait for the killed tree to be reaped and for the pipes to
/// close. Only a process that left the tree (e.g. with `setsid`) and kept a
/// pipe open can make this wait; the output captured so far is returned.
const SETTLE: Duration = Duration::from_secs(3);
/// Bytes read from a pipe at once.
const READ_CHUNK: usize = 64 * 1024;
/// Longest "last line" handed to `on_tick`.
const LAST_LINE_CHARS: usize = 200;

/// What to run. `program` is already resolved (see `tools::check`).
#[derive(Debug, Clone, Copy)]
pub struct RunRequest<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    pub cwd: &'a Path,
    /// Added to (or overriding) the inherited environment.
    pub env: &'a BTreeMap<String, String>,
    pub timeout: Duration,
    /// Characters kept from the end of each stream.
    pub output_chars: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The program exited by itself; `None` when a signal ended it.
    Exited {
        code: Option<i32>,
    },
    TimedOut,
    Cancelled,
}

/// The end of one output stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub text: String,
    /// More was written than `text` holds.
    pub truncated: bool,
}

#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub ending: Ending,
    pub stdout: Captured,
    pub stderr: Captured,
    pub duration: Duration,
}

/// Runs `request` until the program exits, the timeout passes or
/// `cancelled` completes; in every case the whole tree is killed before this
/// returns. `on_tick(elapsed, last_output_line)` is called once at the start
/// and then about once a second. An error means the program could not be
/// started.
pub async fn run(
    request: RunRequest<'_>,
    cancelled: impl Future<Output = ()>,
    mut on_tick: impl FnMut(Duration, Option<String>),
) -> io::Result<RunOutcome> {
    let mut command = CommandWrap::with_new(request.program, |command| {
        command
            .args(request.args)
            .current_dir(request.cwd)
            .envs(request.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    });
    tree::prepare(&mut command);

    let started = Instant::now();
    let (mut child, guard) = tree::spawn(&mut command)?;

    let streams = Streams::new(request.output_chars);
    let stdout_task = child
        .stdout()
        .take()
        .map(|pipe| tokio::spawn(drain(pipe, streams.clone(), Stream::Stdout)));
    let stderr_task = child
        .stderr()
        .take()
        .map(|pipe| tokio::spawn(drain(pipe, streams.clone(), Stream::Stderr)));

    let deadline = tokio::time::sleep(request.timeout);
    tokio::pin!(deadline);
    tokio::pin!(cancelled);
    on_tick(Duration::ZERO, None);
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + TICK, TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    let ending = loop {
        tokio::select! {
            // Waits for the program itself (the tree's root); what it left
            // behind is killed below. `Child::wait` is cancel-safe.
            status = child.inner_mut().wait() => break Ending::Exited { code: exit_code(status) },
            () = &mut deadline => break Ending::TimedOut,
            () = &mut cancelled => break Ending::Cancelled,
            _ = ticker.tick() => on_tick(started.elapsed(), streams.last_line()),
        }
    };
    let duration = started.elapsed();

    tree::kill_and_reap(&mut child).await;
    guard.disarm();
    // What the program detached (and the pipes it may hold) goes too.
    let _ = tokio::task::spawn_blocking(tree::kill_orphans).await;
    for task in [stdout_task, stderr_task].into_iter().flatten() {
        settle(task).await;
    }
    let (stdout, stderr) = streams.finish();
    Ok(RunOutcome {
        ending,
        stdout,
        stderr,
        duration,
    })
}

/// Kills every process tree that is still running, and on Linux every
/// process a check detached. For server shutdown: `std::process::exit` does
/// not run destructors. (On Windows the Job objects are closed with the
/// process, which kills their trees.)
pub fn kill_running_trees() {
    tree::kill_all();
}

/// Prepares the server process; the server binary calls this once at
/// start-up, before it reads anything. On Linux:
/// - the process is made non-dumpable, so a check running as the same user
///   cannot open the server's files through `/proc/<ppid>/fd` (its stdout,
///   which carries the protocol, above all);
/// - it becomes a child subreaper and claims every child process: orphans
///   of a check re-parent here and are killed when the check ends. Only a
///   process that spawns nothing but runs of this runner may claim them.
///
/// Elsewhere it does nothing (see docs/security.md for what remains).
pub fn init_server_process() {
    tree::init_server_process();
}

fn exit_code(status: io::Result<ExitStatus>) -> Option<i32> {
    status.ok().and_then(|status| status.code())
}

/// Waits for a drain task; gives up after [`SETTLE`] (the pipe is held by a
/// process outside the tree) and keeps what was read so far.
async fn settle(task: JoinHandle<()>) {
    let abort = task.abort_handle();
    if tokio::time::timeout(SETTLE, task).await.is_err() {
        abort.abort();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout = 1,
    Stderr = 2,
}

/// Both capture buffers, shared between the drain tasks and the ticker.
#[derive(Debug, Clone)]
struct Streams {
    stdout: Arc<Mutex<OutputTail>>,
    stderr: Arc<Mutex<OutputTail>>,
    /// Which stream wrote last (0: none yet), for the progress message.
    last_writer: Arc<AtomicU8>,
}

impl Streams {
    fn new(max_chars: usize) -> Self {
        Self {
            stdout: Arc::new(Mutex::new(OutputTail::new(max_chars))),
            stderr: Arc::new(Mutex::new(OutputTail::new(max_chars))),
            last_writer: Arc::new(AtomicU8::new(0)),
        }
    }

    fn tail(&self, stream: Stream) -> MutexGuard<'_, OutputTail> {
        let tail = match stream {
            Stream::Stdout => &self.stdout,
            Stream::Stderr => &self.stderr,
        };
        // A panic while holding the lock cannot leave the buffer invalid.
        tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, stream: Stream, bytes: &[u8]) {
        self.tail(stream).push(bytes);
        self.last_writer.store(stream as u8, Ordering::Relaxed);
    }

    fn last_line(&self) -> Option<String> {
        let stream = match self.last_writer.load(Ordering::Relaxed) {
            1 => Stream::Stdout,
            2 => Stream::Stderr,
            _ => return None,
        };
        self.tail(stream).last_line()
    }

    fn finish(&self) -> (Captured, Captured) {
        (
            self.tail(Stream::Stdout).captured(),
            self.tail(Stream::Stderr).captured(),
        )
    }
}

async fn drain(mut pipe: impl AsyncRead + Unpin, streams: Streams, stream: Stream) {
    let mut buffer = vec![0u8; READ_CHUNK];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => streams.push(stream, &buffer[..read]),
        }
    }
}

/// Keeps the last `max_chars` characters of a byte stream, decoded as UTF-8
/// (invalid bytes become U+FFFD). Memory stays below about twice the limit
/// however much is written: the front is dropped whenever the text grows
/// past `2 * max_chars`.
#[derive(Debug)]
pub struct OutputTail {
    max_chars: usize,
    text: String,
    /// Characters in `text`.
    chars: usize,
    /// An incomplete UTF-8 sequence at the end of the last chunk.
    pending: Vec<u8>,
    truncated: bool,
}

impl OutputTail {
    pub fn new(max_chars: usize) -> Self {
        Self {
            max_chars,
            text: String::new(),
            chars: 0,
            pending: Vec::new(),
            truncated: false,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let joined;
        let mut rest = if self.pending.is_empty() {
            bytes
        } else {
            let mut buffer = std::mem::take(&mut self.pending);
            buffer.extend_from_slice(bytes);
            joined = buffer;
            &joined[..]
        };
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    self.append(text);
                    return;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    // from_utf8 vouched for this prefix.
                    self.append(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(invalid) => {
                            self.append("\u{FFFD}");
                            rest = &after[invalid..];
                        }
                        None => {
                            self.pending = after.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    fn append(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.text.push_str(text);
        self.chars += text.chars().count();
        if self.chars > 2 * self.max_chars {
            self.keep_last(self.max_chars);
        }
    }

    fn keep_last(&mut self, max_chars: usize) {
        if self.chars <= max_chars {
            return;
        }
        let drop = self.chars - max_chars;
        let cut = self
            .text
            .char_indices()
            .nth(drop)
            .map_or(self.text.len(), |(index, _)| index);
        self.text.drain(..cut);
        self.chars = max_chars;
        self.truncated = true;
    }

    /// The last non-blank line (after the last `\r`, so progress bars show
    /// their latest state), shortened for a progress message.
    pub fn last_line(&self) -> Option<String> {
        let line = self.text.trim_end().rsplit('\n').next()?;
        let line = line.rsplit('\r').next()?.trim();
        if line.is_empty() {
            return None;
        }
        Some(line.chars().take(LAST_LINE_CHARS).collect())
    }

    /// The kept end of the stream; an incomplete sequence at the very end
    /// counts as one invalid character.
    pub fn captured(&mut self) -> Captured {
        if !self.pending.is_empty() {
            self.pending.clear();
            self.append("\u{FFFD}");
        }
        self.keep_last(self.max_chars);
        Captured {
            text: self.text.clone(),
            truncated: self.truncated,
        }
    }
}

#[cfg(unix)]
mod tree {
    //! Unix: the program leads a new process group; killing the group kills
    //! the tree. On Linux a server process also kills what left the group
    //! (see `kill_orphans`).

    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Mutex, MutexGuard};
    use std::time::{Duration, Instant};

    use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
    use rustix::io::Errno;
    use rustix::process::{Pid, Signal, WaitOptions};

    /// Process groups started and not yet reaped, by guard id. The group id
    /// is also the pid of the run's program, a child of this process.
    static RUNNING: Mutex<Option<HashMap<u64, i32>>> = Mutex::new(None);
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    /// Set by `init_server_process`: every child of this process that is
    /// not a running program is a leftover of a run.
    static CLAIMS_ALL_CHILDREN: AtomicBool = AtomicBool::new(false);
    /// How long a sweep keeps killing leftovers that keep appearing (a
    /// process that forks as fast as it is killed).
    const SWEEP_LIMIT: Duration = Duration::from_secs(2);

    pub fn init_server_process() {
        #[cfg(target_os = "linux")]
        {
            use rustix::process::{DumpableBehavior, set_dumpable_behavior};
            if let Err(error) = set_dumpable_behavior(DumpableBehavior::NotDumpable) {
                tracing::warn!(
                    error = %std::io::Error::from(error),
                    "cannot make the server non-dumpable; a check may open the server's files through /proc"
                );
            }
            if become_subreaper() {
                CLAIMS_ALL_CHILDREN.store(true, Ordering::SeqCst);
            }
        }
    }

    /// Orphaned members of a group re-parent to this process, so killing
    /// the group reaps them too instead of leaving zombies under an init
    /// that does not reap. True when this process is a subreaper.
    #[cfg(target_os = "linux")]
    fn become_subreaper() -> bool {
        static RESULT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *RESULT.get_or_init(|| {
            let made = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
            if let Err(error) = made {
                tracing::warn!(
                    error = %std::io::Error::from(error),
                    "cannot become a child subreaper; what a check detaches from its process group may outlive it"
                );
            }
            made.is_ok()
        })
    }

    pub fn prepare(command: &mut CommandWrap) {
        #[cfg(target_os = "linux")]
        become_subreaper();
        command.wrap(ProcessGroup::leader());
        #[cfg(target_os = "linux")]
        die_with_the_server(command);
    }

    /// The program gets SIGKILL if the server dies without cleaning up
    /// (SIGKILL, a crash): the one part of a tree that can be protected
    /// then, since only a direct child can ask for a parent-death signal.
    /// The signal follows the spawning *thread*; runs are spawned from the
    /// async runtime's worker threads, which live as long as the server.
    #[cfg(target_os = "linux")]
    fn die_with_the_server(command: &mut CommandWrap) {
        let server = rustix::process::getpid();
        // SAFETY: `pre_exec` has no safe form. The hook runs in the child
        // between fork and exec, allocates nothing and makes only
        // async-signal-safe system calls (prctl, getppid).
        unsafe {
            command.command_mut().pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
                // The server died before the signal was armed.
                if rustix::process::getppid() != Some(server) {
                    return Err(Errno::SRCH.into());
                }
                Ok(())
            });
        }
    }

    fn running() -> MutexGuard<'static, Option<HashMap<u64, i32>>> {
        RUNNING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn kill_group(pgid: i32) {
        if let Some(group) = Pid::from_raw(pgid) {
            // Fails only when the group is gone already.
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
    }

    /// Reaps the killed members of `pgid` that are our children, so none is
    /// left as a zombie. Bounded: SIGKILL cannot be ignored, so they die at
    /// once.
    fn reap_group(pgid: i32, deadline: Instant) {
        let Some(group) = Pid::from_raw(pgid) else {
            return;
        };
        while Instant::now() < deadline {
            match rustix::process::waitpgid(group, WaitOptions::NOHANG) {
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Ok(Some(_)) | Err(Errno::INTR) => {}
                // ECHILD: nothing of ours is left in the group.
                Err(_) => return,
            }
        }
    }

    /// Registers a running group so that shutdown (or dropping the run
    /// future) kills it, and so that sweeps spare its program.
    pub struct Guard {
        id: Option<u64>,
    }

    /// Starts the program and registers its group in one step: a sweep
    /// running meanwhile must not take the new program for a leftover.
    pub fn spawn(command: &mut CommandWrap) -> std::io::Result<(Box<dyn ChildWrapper>, Guard)> {
        let mut running = running();
        let child = command.spawn()?;
        let Some(pgid) = child.id().and_then(|pid| i32::try_from(pid).ok()) else {
            return Ok((child, Guard { id: None }));
        };
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        running.get_or_insert_with(HashMap::new).insert(id, pgid);
        Ok((child, Guard { id: Some(id) }))
    }

    impl Guard {
        /// The tree was killed and reaped: nothing left to do.
        pub fn disarm(mut self) {
            if let Some(id) = self.id.take()
                && let Some(map) = running().as_mut()
            {
                map.remove(&id);
            }
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            let pgid = self
                .id
                .take()
                .and_then(|id| running().as_mut().and_then(|map| map.remove(&id)));
            if let Some(pgid) = pgid {
                kill_group(pgid);
                kill_orphans();
            }
        }
    }

    pub fn kill_all() {
        let groups: Vec<i32> = running()
            .as_mut()
            .map(|map| map.drain().map(|(_, pgid)| pgid).collect())
            .unwrap_or_default();
        for &pgid in &groups {
            kill_group(pgid);
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        for pgid in groups {
            reap_group(pgid, deadline);
        }
        kill_orphans();
    }

    /// Kills what is left of the group and reaps it.
    pub async fn kill_and_reap(child: &mut Box<dyn ChildWrapper>) {
        // The group may already be empty (ESRCH): nothing to kill then.
        let _ = child.start_kill();
        let _ = tokio::time::timeout(super::SETTLE, child.wait()).await;
    }

    /// In a server process (Linux, subreaper): kills and reaps every child
    /// that is not the program of a running tree, round after round, since
    /// each killed process hands its own children to us. Orphans cannot be
    /// told apart once re-parented; the server runs one check at a time, so
    /// they all belong to the run that just ended (were runs to overlap, an
    /// orphan would die when any run ends, never later than its own).
    /// Elsewhere it does nothing.
    pub fn kill_orphans() {
        if !CLAIMS_ALL_CHILDREN.load(Ordering::SeqCst) {
            return;
        }
        let deadline = Instant::now() + SWEEP_LIMIT;
        loop {
            let killed = {
                // Held for the round, so no program starts unregistered.
                let running = running();
                let spared: Vec<i32> = running
                    .as_ref()
                    .map(|map| map.values().copied().collect())
                    .unwrap_or_default();
                let leftovers: Vec<i32> = children::of(std::process::id())
                    .into_iter()
                    .filter(|pid| !spared.contains(pid))
                    .collect();
                // Each pid is our child and unreaped, so it cannot have been
                // reused.
                for pid in leftovers.iter().filter_map(|&pid| Pid::from_raw(pid)) {
                    let _ = rustix::process::kill_process(pid, Signal::KILL);
                }
                leftovers
            };
            if killed.is_empty() {
                return;
            }
            for pid in killed {
                reap(pid, deadline);
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    "processes left by a check kept appearing for {}s; giving up on the rest",
                    SWEEP_LIMIT.as_secs()
                );
                return;
            }
        }
    }

    /// Waits for the killed child `pid` to be gone, until `deadline`.
    fn reap(pid: i32, deadline: Instant) {
        let Some(child) = Pid::from_raw(pid) else {
            return;
        };
        loop {
            let done = match rustix::process::waitpid(Some(child), WaitOptions::NOHANG) {
                Ok(None) | Err(Errno::INTR) => false,
                Ok(Some(_)) | Err(_) => true,
            };
            if done || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The child processes of a process, read from `/proc`.
    pub(super) mod children {
        /// Pids whose parent is `parent` (empty where `/proc` is missing).
        pub fn of(parent: u32) -> Vec<i32> {
            let Ok(entries) = std::fs::read_dir("/proc") else {
                return Vec::new();
            };
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&pid| {
                    std::fs::read(format!("/proc/{pid}/stat"))
                        .ok()
                        .and_then(|stat| parent_of(&stat))
                        == Some(parent)
                })
                .collect()
        }

        /// The parent pid in a `/proc/<pid>/stat` line: the field after the
        /// state, which follows the command name in parentheses (a name may
        /// itself hold `)` and spaces, so the last `)` ends it).
        pub fn parent_of(stat: &[u8]) -> Option<u32> {
            let after_name = stat.iter().rposition(|&byte| byte == b')')? + 1;
            let rest = std::str::from_utf8(stat.get(after_name..)?).ok()?;
            let mut fields = rest.split_ascii_whitespace();
            let _state = fields.next()?;
            fields.next()?.parse().ok()
        }
    }
}

#[cfg(windows)]
mod tree {
    //! Windows: the program runs in a Job object; terminating the job kills
    //! the tree, and closing its handle (also when the server exits) does
    //! too.

    use process_wrap::tokio::{ChildWrapper, CommandWrap, JobObject, KillOnDrop};

    pub fn init_server_process() {}

    pub fn prepare(command: &mut CommandWrap) {
        command.wrap(JobObject);
        command.wrap(KillOnDrop);
    }

    pub struct Guard;

    pub fn spawn(command: &mut CommandWrap) -> std::io::Result<(Box<dyn ChildWrapper>, Guard)> {
        Ok((command.spawn()?, Guard))
    }

    impl Guard {
        pub fn disarm(self) {}
    }

    pub fn kill_all() {}

    /// The Job object holds every descendant (none may break away), so
    /// nothing is left outside it.
    pub fn kill_orphans() {}

    pub async fn kill_and_reap(child: &mut Box<dyn ChildWrapper>) {
        let _ = child.start_kill();
        // Wait for the program itself only: the job's own wait can block on
        // completion messages that never come.
        let _ = tokio::time::timeout(super::SETTLE, child.inner_mut().wait()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(max_chars: usize, chunks: &[&[u8]]) -> Captured {
        let mut tail = OutputTail::new(max_chars);
        for chunk in chunks {
            tail.push(chunk);
        }
        tail.captured()
    }

    #[test]
    fn short_output_is_kept_whole() {
        let result = captured(10, &[b"abc", b"def"]);
        assert_eq!(result.text, "abcdef");
        assert!(!result.truncated);
    }

    #[test]
    fn exact_limit_is_not_truncated() {
        let result = captured(6, &[b"abc", b"def"]);
        assert_eq!(result.text, "abcdef");
        assert!(!result.truncated);
    }

    #[test]
    fn keeps_the_end_on_a_character_boundary() {
        let result = captured(3, &["aé日本".as_bytes(), "語x".as_bytes()]);
        assert_eq!(result.text, "本語x");
        assert!(result.truncated);
    }

    #[test]
    fn multibyte_characters_split_across_chunks_survive() {
        let bytes = "日本".as_bytes();
        let result = captured(10, &[&bytes[..1], &bytes[1..4], &bytes[4..]]);
        assert_eq!(result.text, "日本");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let result = captured(10, &[b"a\xffb", b"\xe6"]);
        assert_eq!(result.text, "a\u{FFFD}b\u{FFFD}");
    }

    #[test]
    fn memory_stays_bounded_for_a_flood() {
        let mut tail = OutputTail::new(100);
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..160 {
            tail.push(&chunk);
            assert!(tail.text.len() <= 2 * 100 + chunk.len());
        }
        tail.push(b"the end\n");
        let result = tail.captured();
        assert_eq!(result.text.chars().count(), 100);
        assert!(result.text.ends_with("the end\n"));
        assert!(result.truncated);
    }

    #[test]
    fn last_line_skips_blank_lines_and_carriage_returns() {
        let mut tail = OutputTail::new(1000);
        tail.push(b"collecting\n 10%\r 55%\r\n\n");
        assert_eq!(tail.last_line().as_deref(), Some("55%"));
        assert_eq!(OutputTail::new(10).last_line(), None);
    }

    #[cfg(unix)]
    mod processes {
        use super::*;

        fn sh(script: &str) -> Vec<String> {
            vec!["-c".to_string(), script.to_string()]
        }

        async fn run_sh(
            script: &str,
            timeout: Duration,
            cancelled: impl Future<Output = ()>,
        ) -> (RunOutcome, usize) {
            let args = sh(script);
            let env = BTreeMap::from([("RUNNER_TEST".to_string(), "extra".to_string())]);
            let cwd = std::env::temp_dir();
            let request = RunRequest {
                program: Path::new("/bin/sh"),
                args: &args,
                cwd: &cwd,
                env: &env,
                timeout,
                output_chars: 1000,
            };
            let mut ticks = 0;
            let outcome = run(request, cancelled, |_, _| ticks += 1)
                .await
                .expect("sh starts");
            (outcome, ticks)
        }

        fn is_gone(pid: i32) -> bool {
            rustix::process::Pid::from_raw(pid)
                .is_none_or(|pid| rustix::process::test_kill_process(pid).is_err())
        }

        #[tokio::test]
        async fn reports_exit_code_streams_and_extra_env() {
            let (outcome, ticks) = run_sh(
                "echo out $RUNNER_TEST; echo err >&2; exit 3",
                Duration::from_secs(30),
                std::future::pending(),
            )
            .await;
            assert_eq!(outcome.ending, Ending::Exited { code: Some(3) });
            assert_eq!(outcome.stdout.text, "out extra\n");
            assert_eq!(outcome.stderr.text, "err\n");
            assert!(ticks >= 1, "the first tick comes at the start");
        }

        #[tokio::test]
        async fn stdin_is_closed() {
            let (outcome, _) = run_sh(
                "cat; echo read-all",
                Duration::from_secs(30),
                std::future::pending(),
            )
            .await;
            assert_eq!(outcome.stdout.text, "read-all\n");
        }

        #[tokio::test]
        async fn timeout_kills_and_reaps_the_grandchild() {
            let (outcome, _) = run_sh(
                "sleep 60 & echo $!; sleep 60",
                Duration::from_secs(1),
                std::future::pending(),
            )
            .await;
            assert_eq!(outcome.ending, Ending::TimedOut);
            let grandchild: i32 = outcome.stdout.text.trim().parse().expect("pid printed");
            assert!(is_gone(grandchild), "grandchild {grandchild} survived");
        }

        #[tokio::test]
        async fn cancellation_kills_the_tree() {
            let (outcome, _) = run_sh(
                "sleep 60 & echo $!; sleep 60",
                Duration::from_secs(60),
                tokio::time::sleep(Duration::from_secs(1)),
            )
            .await;
            assert_eq!(outcome.ending, Ending::Cancelled);
            let grandchild: i32 = outcome.stdout.text.trim().parse().expect("pid printed");
            assert!(is_gone(grandchild), "grandchild {grandchild} survived");
        }

        #[tokio::test]
        async fn leftovers_are_killed_when_the_program_exits() {
            let (outcome, _) = run_sh(
                "sleep 60 >/dev/null 2>&1 & echo $!",
                Duration::from_secs(60),
                std::future::pending(),
            )
            .await;
            assert_eq!(outcome.ending, Ending::Exited { code: Some(0) });
            let grandchild: i32 = outcome.stdout.text.trim().parse().expect("pid printed");
            assert!(
                is_gone(grandchild),
                "background process {grandchild} survived"
            );
        }

        #[test]
        fn parent_pid_is_read_past_any_command_name() {
            use super::super::tree::children::parent_of;
            assert_eq!(parent_of(b"42 (sleep) S 7 42 42 0 -1"), Some(7));
            assert_eq!(parent_of(b"42 (a) b) (c d) Z 1234 1 1"), Some(1234));
            assert_eq!(parent_of(b"42 (x"), None);
            assert_eq!(parent_of(b""), None);
        }

        #[cfg(target_os = "linux")]
        #[test]
        fn this_process_is_listed_as_its_parents_child() {
            let parent = std::os::unix::process::parent_id();
            let me = i32::try_from(std::process::id()).expect("pid fits");
            assert!(super::super::tree::children::of(parent).contains(&me));
        }

        #[tokio::test]
        async fn a_missing_program_is_an_error_not_a_panic() {
            let env = BTreeMap::new();
            let cwd = std::env::temp_dir();
            let request = RunRequest {
                program: Path::new("/definitely/not/a/program"),
                args: &[],
                cwd: &cwd,
                env: &env,
                timeout: Duration::from_secs(5),
                output_chars: 10,
            };
            assert!(
                run(request, std::future::pending(), |_, _| {})
                    .await
                    .is_err()
            );
        }
    }
}
