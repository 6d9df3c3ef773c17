//! What the benchmarks share: the server binary driven over stdio with raw
//! JSON-RPC lines, ripgrep run with the search's semantics, the corpus
//! size, and medians, percentiles and machine facts from /proc (Linux only).
#![allow(dead_code)] // each bench uses a different subset

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const SERVER: &str = env!("CARGO_BIN_EXE_mcp-project-helper");

/// The server binary sessions start: `BENCH_SERVER`, else this build's.
pub fn server_binary() -> String {
    std::env::var("BENCH_SERVER").unwrap_or_else(|_| SERVER.to_string())
}

/// The walker's skip list and the built-in deny-list, as ripgrep and fd
/// globs.
pub const EXCLUDES: &[&str] = &[
    "!.git/",
    "!.venv/",
    "!__pycache__/",
    "!node_modules/",
    "!target/",
    "!*.egg-info/",
    "!.env",
    "!.env.*",
    "!*.pem",
    "!*.key",
    "!id_rsa*",
    "!id_ed25519*",
];

/// Runs ripgrep over `corpus` with the search's semantics (see
/// docs/performance.md) and counts its output lines; the time includes
/// starting rg and reading its output through a pipe, as a client would.
pub fn run_rg(rg: &str, threads: usize, corpus: &Path, text: &str, regex: bool) -> (Duration, u64) {
    let mut command = Command::new(rg);
    command
        .args(["--no-config", "-j"])
        .arg(threads.to_string())
        .args([
            "--hidden",
            "--no-ignore-parent",
            "--no-require-git",
            "--no-ignore-global",
            "--no-ignore-exclude",
            "--max-filesize",
            "2M",
            "--line-number",
            "--no-heading",
            "--color",
            "never",
        ]);
    for glob in EXCLUDES {
        command.args(["-g", glob]);
    }
    if !regex {
        command.arg("--fixed-strings");
    }
    command
        .args(["-e", text, "."])
        .current_dir(corpus)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn().expect("start rg (set BENCH_RG)");
    let lines = count_lines(child.stdout.take().expect("rg stdout"));
    let status = child.wait().expect("wait for rg");
    let elapsed = started.elapsed();
    // 0: matches, 1: none; 2 means rg hit an error (it still searched the rest).
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "rg failed with {status}"
    );
    (elapsed, lines)
}

/// Reads a pipe to its end and counts the lines.
pub fn count_lines(mut pipe: impl Read) -> u64 {
    let mut buffer = vec![0u8; 1 << 16];
    let mut lines = 0u64;
    loop {
        match pipe.read(&mut buffer) {
            Ok(0) => return lines,
            Ok(n) => lines += memchr::memchr_iter(b'\n', &buffer[..n]).count() as u64,
            Err(error) => panic!("reading a pipe: {error}"),
        }
    }
}

/// The first line of `program --version`.
pub fn tool_version(program: &str) -> String {
    Command::new(program)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.lines().next().map(str::to_string))
        .unwrap_or_else(|| format!("{program} (version unknown)"))
}

/// Regular files below `root` and their bytes.
pub fn corpus_size(root: &Path) -> (usize, u64) {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .fold((0, 0), |(files, bytes), entry| {
            (
                files + 1,
                bytes + entry.metadata().map_or(0, |meta| meta.len()),
            )
        })
}

pub fn initialize_request() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "bench", "version": "0" }
        }
    })
}

/// Server log lines (stderr, `--log-level debug`) with the time each was
/// read.
pub type LogLines = Arc<Mutex<Vec<(Instant, String)>>>;

/// Where the benchmark's servers keep their index between sessions (never
/// the user's cache folder); [`clear_index_cache`] empties it so that a
/// measurement starts cold.
pub fn index_cache_home() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-index-cache")
}

pub fn clear_index_cache() {
    let _ = std::fs::remove_dir_all(index_cache_home());
}

/// The server binary driven over stdio with raw JSON-RPC lines.
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// When the process was spawned.
    pub spawned: Instant,
    /// Its log, when started with [`Session::start_logged`].
    pub log: Option<LogLines>,
    /// The highest `RssAnon` seen so far (KiB), sampled every 20 ms:
    /// /proc keeps no peak of the anonymous memory.
    anon_peak_kib: Arc<AtomicU64>,
}

impl Session {
    pub fn start(root: &Path) -> Session {
        Self::spawn(root, &[], false)
    }

    /// Starts the server with `args` (its log discarded).
    pub fn start_with(root: &Path, args: &[&str]) -> Session {
        Self::spawn(root, args, false)
    }

    /// Starts the server with `--log-level debug` and `args`, keeping every
    /// log line it writes.
    pub fn start_logged(root: &Path, args: &[&str]) -> Session {
        Self::spawn(root, args, true)
    }

    fn spawn(root: &Path, args: &[&str], logged: bool) -> Session {
        let mut command = Command::new(server_binary());
        command
            .arg("--root")
            .arg(root)
            .args(args)
            .env("XDG_CACHE_HOME", index_cache_home())
            .env_remove("MCP_PROJECT_HELPER_ROOT")
            .env_remove("PROJECT_ROOT")
            .env_remove("MCP_PROJECT_HELPER_CONFIG")
            .env_remove("MCP_PROJECT_HELPER_LOG_FILE")
            .env_remove("MCP_PROJECT_HELPER_LOG_LEVEL")
            .env_remove("MCP_PROJECT_HELPER_WATCH")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if logged {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        if logged {
            command.args(["--log-level", "debug"]);
        }
        let spawned = Instant::now();
        let mut child = command.spawn().expect("start the server binary");
        let log = child.stderr.take().map(|stderr| {
            let lines: LogLines = Arc::default();
            let sink = Arc::clone(&lines);
            // Reads to the end, so that the server never blocks on a full pipe.
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Ok(mut lines) = sink.lock() {
                        lines.push((Instant::now(), line));
                    }
                }
            });
            lines
        });
        let anon_peak_kib = Arc::new(AtomicU64::new(0));
        let peak = Arc::clone(&anon_peak_kib);
        let status = format!("/proc/{}/status", child.id());
        // Ends when the process is reaped (its /proc entry is gone).
        std::thread::spawn(move || {
            while let Ok(text) = std::fs::read_to_string(&status) {
                if let Some(kib) = status_field_kib(&text, "RssAnon:") {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("server stdout"));
        Session {
            child,
            stdin,
            stdout,
            next_id: 1,
            spawned,
            log,
            anon_peak_kib,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("server stdin");
        let mut line = serde_json::to_vec(message).expect("JSON");
        line.push(b'\n');
        stdin.write_all(&line).expect("write to the server");
        stdin.flush().expect("flush to the server");
    }

    /// Reads lines until the response with `id`; `None` when the server
    /// closed stdout first (it exited).
    fn try_response(&mut self, id: u64) -> Option<Value> {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).expect("read the server");
            if read == 0 {
                return None;
            }
            let message: Value = serde_json::from_str(&line).expect("server sent JSON");
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "error answer: {message}");
                return Some(message);
            }
        }
    }

    fn response(&mut self, id: u64) -> Value {
        self.try_response(id).expect("the server closed stdout")
    }

    pub fn initialize(&mut self) {
        assert!(self.try_initialize(), "the server exited before initialize");
    }

    /// False when the server exited instead of answering (a start-up error
    /// such as a config key this build does not know).
    pub fn try_initialize(&mut self) -> bool {
        if self
            .stdin
            .as_mut()
            .map(|stdin| {
                let mut line = serde_json::to_vec(&initialize_request()).expect("JSON");
                line.push(b'\n');
                stdin.write_all(&line).and_then(|()| stdin.flush())
            })
            .is_none_or(|written| written.is_err())
        {
            return false;
        }
        let Some(answer) = self.try_response(0) else {
            return false;
        };
        assert_eq!(answer["result"]["serverInfo"]["name"], "mcp-project-helper");
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        true
    }

    /// A tool call that must succeed; returns its structuredContent.
    pub fn call_tool(&mut self, name: &str, arguments: &Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": { "name": name, "arguments": arguments }
        }));
        let mut answer = self.response(id);
        let result = answer["result"].take();
        assert_ne!(result["isError"], json!(true), "{name} failed: {result}");
        result["structuredContent"].clone()
    }

    /// A tool call timed from sending it to reading its answer.
    pub fn timed_call(&mut self, name: &str, arguments: &Value) -> (Duration, Value) {
        let started = Instant::now();
        let result = self.call_tool(name, arguments);
        (started.elapsed(), result)
    }

    /// VmHWM: the highest resident set size the process has had.
    pub fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM:")
    }

    /// VmRSS: the resident set size now.
    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// RssAnon: the anonymous memory resident now (heap, not mapped files).
    pub fn anon_kib(&self) -> u64 {
        self.status_kib("RssAnon:")
    }

    /// The highest RssAnon sampled since the process started (and now).
    pub fn anon_peak_kib(&self) -> u64 {
        self.anon_peak_kib
            .load(Ordering::Relaxed)
            .max(self.anon_kib())
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc/<pid>/status (Linux only)");
        status_field_kib(&status, field).unwrap_or_else(|| panic!("{field} in /proc/<pid>/status"))
    }

    /// The first log line containing `needle`, with when it was read.
    pub fn log_line(&self, needle: &str) -> Option<(Instant, String)> {
        let lines = self.log.as_ref()?.lock().ok()?;
        lines
            .iter()
            .find(|(_, line)| line.contains(needle))
            .cloned()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closing stdin ends the session; the server exits on EOF.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// A `Field:   1234 kB` line of /proc/<pid>/status, in KiB.
fn status_field_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// CPU time used so far by this process (all its threads, finished ones
/// included) and by its waited-for children, from /proc/self/stat.
pub struct CpuTimes {
    pub own: Duration,
    pub children: Duration,
}

impl CpuTimes {
    pub fn now() -> CpuTimes {
        let stat =
            std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat (Linux only)");
        // Fields after the command name, which ends at the last ')':
        // utime, stime, cutime, cstime are the 12th to 15th.
        let fields: Vec<u64> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .split_whitespace()
            .skip(11)
            .take(4)
            .filter_map(|field| field.parse().ok())
            .collect();
        assert_eq!(fields.len(), 4, "unexpected /proc/self/stat: {stat}");
        let ticks = |n: u64| Duration::from_secs_f64(n as f64 / clock_ticks() as f64);
        CpuTimes {
            own: ticks(fields[0] + fields[1]),
            children: ticks(fields[2] + fields[3]),
        }
    }
}

/// Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux).
fn clock_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100)
    })
}

pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_string())
}

pub fn median(times: Vec<Duration>) -> Duration {
    percentile(times, 50)
}

/// The `percent`-th percentile (nearest rank below) of non-empty `times`.
pub fn percentile(mut times: Vec<Duration>, percent: usize) -> Duration {
    times.sort();
    times[(times.len() * percent / 100).min(times.len() - 1)]
}

pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

pub fn mark(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// A server config with the tree model switched off: that server scans the
/// tree on every search. Keep it alive while the server
/// runs.
pub fn scan_config() -> tempfile::NamedTempFile {
    let config = tempfile::NamedTempFile::new().expect("temp config");
    std::fs::write(config.path(), "[index]\nenabled = false\n").expect("write temp config");
    config
}
