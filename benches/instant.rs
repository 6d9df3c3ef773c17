//! `cargo bench --bench instant`: instant search as sessions meet it, on any
//! corpus and its tenfold distinct copy, every figure side by side with
//! ripgrep and fd in the same run and every answer checked against the scan
//! (a second server with `[index] enabled = false`). `benches/run.sh`
//! prepares the corpora and runs this after the `search` bench;
//! docs/performance.md explains the method and the targets.
//!
//! Per corpus:
//! - the first build, no index on disk: the first search, sent right after
//!   `initialize` while the build runs (the median of 5 fresh sessions),
//!   against ripgrep run just before each, and the time to "index ready";
//! - the index in use: N distinct rare identifiers and N distinct regexes
//!   with a literal (never the same query twice, so no result cache can
//!   help), each timed on the indexed server, on the scan server and with
//!   ripgrep; `find **/*.c` and a list of a ~40-entry folder;
//! - memory: peak RSS and the highest anonymous memory against the corpus's
//!   bytes, and the cache's size on disk against the bytes indexed;
//! - the file list (the server's debug log line) against `fd -u -t f`;
//! - a restart: a second server on the unchanged tree sent the first 10
//!   rare identifiers right after `initialize`, one after the other;
//! - a tree changed while no server ran: on a scratch copy of the corpus,
//!   indexed by one session, then 1 % of its files edited, some added and
//!   some deleted, and a new session asked from its first call.
//!
//! Settings come from the environment:
//! - `BENCH_CORPUS`: the corpus (default `target/bench-corpus`; `/none` for
//!   the tenfold corpus alone).
//! - `BENCH_CORPUS_10X`: its tenfold distinct copy (default
//!   `target/bench-corpus-10x`, skipped when missing).
//! - `BENCH_QUERIES`: distinct queries of each kind (default 20).
//! - `BENCH_READY_SECS`: how long to wait for "index ready" (default 300).
//! - `BENCH_IDLE_SECS`: the idle pause before the repeat queries (default 2).
//! - `BENCH_CHANGED`: `0` skips the changed-tree session (it copies the
//!   corpus into `target/` and indexes the copy).
//! - `BENCH_RG`, `BENCH_FD`: the ripgrep and fd binaries (default `rg`, and
//!   `fdfind` or `fd`).
//! - `BENCH_SERVER`: another build of the server to measure (default: this
//!   one's).
//! - `BENCH_LOAD`: a folder that a second CPU-bound process (`rg -j 1` over
//!   it, in a loop) searches while the first search of the first build and
//!   ripgrep's run it is compared with are timed, as on an agent's machine
//!   where a build or another session competes for the cores.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{
    EXCLUDES, Session, corpus_size, count_lines, load_average, mark, median, ms, percentile,
    run_rg, tool_version,
};

/// Matches fewer lines than this: both engines read the whole tree, and
/// every answer fits in one page (`max_results`).
const MAX_HITS: u64 = 200;
const FIND_PATTERN: &str = "**/*.c";
const FIND_MAX_RESULTS: u64 = 1000;
const LIST_RUNS: usize = 50;
const FIND_RUNS: usize = 11;
const FD_RUNS: usize = 5;
/// Rare identifiers the restarted server is sent.
const RESTART_QUERIES: usize = 10;
/// Fresh sessions whose first search is timed, each beside an rg run.
const FIRST_ROUNDS: usize = 5;
/// Queries are taken from files with these extensions.
const SOURCE_EXTENSIONS: &[&str] = &[
    "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "rs", "py", "go", "java", "js", "mjs", "jsx", "ts",
    "tsx", "rb", "cs", "kt", "swift", "php", "scala",
];

struct Settings {
    corpora: Vec<Corpus>,
    queries: usize,
    ready_wait: Duration,
    idle: Duration,
    changed: bool,
    rg: String,
    fd: String,
    threads: usize,
    load: Option<PathBuf>,
}

struct Corpus {
    label: &'static str,
    path: PathBuf,
    tenfold: bool,
}

impl Corpus {
    /// ripgrep divided by ours, at the median, for rare literals.
    fn literal_target(&self) -> f64 {
        if self.tenfold { 300.0 } else { 100.0 }
    }

    /// The same for regexes with a literal.
    fn regex_target(&self) -> f64 {
        if self.tenfold { 100.0 } else { 30.0 }
    }

    fn ready_target(&self) -> Duration {
        Duration::from_secs(if self.tenfold { 90 } else { 5 })
    }

    /// Peak RSS, in MB (the issue's: 100 on u-boot, 200 on its tenfold).
    fn peak_target(&self) -> f64 {
        if self.tenfold { 200.0 } else { 100.0 }
    }
}

fn main() {
    let settings = settings();
    println!("mcp-project-helper instant-search benchmark");
    println!("server {}", support::server_binary());
    println!(
        "rg {} / fd {} (rg -j {}); load average {}",
        tool_version(&settings.rg),
        tool_version(&settings.fd),
        settings.threads,
        load_average()
    );
    if let Some(folder) = &settings.load {
        println!(
            "first searches timed under load: rg -j 1 over {} in a loop",
            folder.display()
        );
    }
    let mut met = 0;
    let mut total = 0;
    for corpus in &settings.corpora {
        let table = bench_corpus(&settings, corpus);
        met += table.met;
        total += table.total;
    }
    println!("\nload average at the end {}", load_average());
    println!("{met} of {total} targets met");
}

fn settings() -> Settings {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path_from = |name: &str, default: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .unwrap_or_else(|| manifest.join(default))
    };
    let number = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    let mut corpora = Vec::new();
    let corpus = path_from("BENCH_CORPUS", "target/bench-corpus");
    // `/none` measures the tenfold corpus alone.
    if corpus != Path::new("/none") {
        corpora.push(Corpus {
            label: "corpus",
            path: corpus,
            tenfold: false,
        });
    }
    let tenfold = path_from("BENCH_CORPUS_10X", "target/bench-corpus-10x");
    if tenfold.is_dir() {
        corpora.push(Corpus {
            label: "10x corpus",
            path: tenfold,
            tenfold: true,
        });
    }
    let fd = std::env::var("BENCH_FD").unwrap_or_else(|_| {
        if Command::new("fdfind").arg("--version").output().is_ok() {
            "fdfind".to_string()
        } else {
            "fd".to_string()
        }
    });
    Settings {
        corpora,
        queries: number("BENCH_QUERIES", 20).max(1) as usize,
        ready_wait: Duration::from_secs(number("BENCH_READY_SECS", 300)),
        idle: Duration::from_secs(number("BENCH_IDLE_SECS", 2)),
        changed: number("BENCH_CHANGED", 1) != 0,
        rg: std::env::var("BENCH_RG").unwrap_or_else(|_| "rg".to_string()),
        fd,
        threads: std::thread::available_parallelism()
            .map(|n| n.get().clamp(1, 12))
            .unwrap_or(2),
        load: std::env::var_os("BENCH_LOAD").map(PathBuf::from),
    }
}

/// A second CPU-bound process: `rg` searching a folder on one thread, again
/// and again, until dropped.
struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    runner: Option<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(rg: &str, folder: Option<&Path>) -> Option<Load> {
        let folder = folder?.to_path_buf();
        let rg = rg.to_string();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let runner = std::thread::spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                let status = Command::new(&rg)
                    .args(["-j", "1", "-c", "-u", "no such text zq8x"])
                    .arg(&folder)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                if status.is_err() {
                    return;
                }
            }
        });
        // Until the load runs at full speed.
        std::thread::sleep(Duration::from_millis(500));
        Some(Load {
            stop,
            runner: Some(runner),
        })
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(runner) = self.runner.take() {
            let _ = runner.join();
        }
    }
}

/// A search query.
#[derive(Clone)]
struct Probe {
    text: String,
    regex: bool,
}

impl Probe {
    fn arguments(&self) -> Value {
        json!({"query": self.text, "regex": self.regex, "max_results": MAX_HITS})
    }
}

/// Prints the rows of one corpus and counts the targets met.
#[derive(Default)]
struct Table {
    met: usize,
    total: usize,
}

impl Table {
    /// One figure: ours, what it is compared with, the ratio, the target
    /// and, when the row has a target, met or MISSED.
    fn row(&mut self, measure: &str, ours: String, other: String, target: &str, met: Option<bool>) {
        let verdict = match met {
            Some(met) => {
                self.total += 1;
                self.met += usize::from(met);
                mark(met)
            }
            None => "",
        };
        println!("{measure:<44} {ours:>14} {other:>30}  {target} {verdict}");
    }
}

/// Every answer of ours compared with the scan's.
#[derive(Default)]
struct Answers {
    compared: usize,
    differences: Vec<String>,
}

impl Answers {
    fn compare(&mut self, query: &str, ours: &Value, scan: &Value) {
        self.compared += 1;
        if ours != scan {
            let show = |value: &Value| value.to_string().chars().take(400).collect::<String>();
            self.differences.push(format!(
                "{query:?}\n     ours: {}\n     scan: {}",
                show(ours),
                show(scan)
            ));
        }
    }

    fn print(&self, label: &str, table: &mut Table) {
        table.row(
            label,
            format!(
                "{} of {}",
                self.compared - self.differences.len(),
                self.compared
            ),
            String::new(),
            "all equal",
            Some(self.differences.is_empty()),
        );
        for difference in &self.differences {
            println!("   DIFFERENT {difference}");
        }
    }
}

fn bench_corpus(settings: &Settings, corpus: &Corpus) -> Table {
    let root = dunce::canonicalize(&corpus.path).unwrap_or_else(|error| {
        panic!(
            "corpus {} is not usable ({error}); run benches/run.sh to create it",
            corpus.path.display()
        )
    });
    // fd's first listing of the tree in this run, before anything else
    // walks it: the coldest figure this run can take without dropping the
    // machine's caches.
    let (fd_cold, fd_entries) = run_fd_all(settings, &root);
    let (files, bytes) = corpus_size(&root);
    println!(
        "\n== {}: {} ({files} files, {:.1} MB; load average {})",
        corpus.label,
        root.display(),
        bytes as f64 / 1e6,
        load_average()
    );
    let fd_warm = median(
        (0..FD_RUNS)
            .map(|_| run_fd_all(settings, &root).0)
            .collect(),
    );
    let (literals, regexes) = pick_queries(settings, &root);
    println!(
        "   {} rare identifiers and {} regexes, e.g. {:?}, {:?}",
        literals.len(),
        regexes.len(),
        literals[0].text,
        regexes[0].text
    );
    let list_folder = folder_with_about_40_entries(&root);
    let mut answers = Answers::default();

    // The scan server: the same binary with the index switched off.
    let config = support::scan_config();
    let config_arg = config.path().to_string_lossy().into_owned();
    let mut scan = Session::start_logged(&root, &["--config", &config_arg]);
    let has_index = scan.try_initialize();
    if !has_index {
        println!("   (this build has no [index] key: both servers scan)");
        scan = Session::start(&root);
        scan.initialize();
    }
    std::thread::sleep(Duration::from_millis(200));
    let scan_idle_kib = scan.peak_rss_kib();
    let first_query = literals[0].arguments();
    let (scan_first, _) = scan.timed_call("search_project_files", &first_query);
    // The indexed server's first build: no index on disk, its first search
    // right after `initialize`, while the build runs; ripgrep on the same
    // query just before each, in the same page-cache state and under the
    // same load. Medians of rounds taken in turn: one sample of each, apart,
    // met the load in different phases.
    let load = Load::start(&settings.rg, settings.load.as_deref());
    let mut rg_firsts = Vec::new();
    let mut ours_firsts = Vec::new();
    let mut first_build = None;
    for _ in 0..FIRST_ROUNDS {
        // The previous round's session ends first: its build would compete
        // with this round's ripgrep and first search (and write into the
        // cache this round clears).
        drop(first_build.take());
        rg_firsts.push(
            run_rg(
                &settings.rg,
                settings.threads,
                &root,
                &literals[0].text,
                false,
            )
            .0,
        );
        support::clear_index_cache();
        let mut session = Session::start_logged(&root, &[]);
        session.initialize();
        let start_kib = session.rss_kib();
        let (took, answer) = session.timed_call("search_project_files", &first_query);
        ours_firsts.push(took);
        // The last round's session goes on as the first build.
        first_build = Some((session, start_kib, answer));
    }
    let rounds = |times: &[Duration]| {
        times
            .iter()
            .map(|time| format!("{:.0}", ms(*time)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let first_rounds = format!(
        "   rounds (ms): ours {}, rg {}",
        rounds(&ours_firsts),
        rounds(&rg_firsts)
    );
    let (rg_first, ours_first) = (median(rg_firsts), median(ours_firsts));
    let (mut ours, ours_start_kib, first_answer) =
        first_build.expect("FIRST_ROUNDS is at least one");
    drop(load);
    let scan_answer = scan.call_tool("search_project_files", &first_query);
    answers.compare(&literals[0].text, &first_answer, &scan_answer);
    let find_arguments = json!({"pattern": FIND_PATTERN, "max_results": FIND_MAX_RESULTS});
    let ready_before_find = ours.log_line("index ready").is_some();
    let (find_before, find_answer) = ours.timed_call("find_project_files", &find_arguments);
    let scan_find_answer = scan.call_tool("find_project_files", &find_arguments);
    answers.compare(FIND_PATTERN, &find_answer, &scan_find_answer);

    let ready = wait_until_ready(&ours, settings.ready_wait, has_index);
    let file_list = log_number(&ours, "file list of", "ready in ");
    let walk = log_number(&ours, "walked", "entries in ");
    std::thread::sleep(settings.idle);

    let literal_rows = time_queries(
        settings,
        &root,
        &mut ours,
        &mut scan,
        &literals,
        &mut answers,
    );
    let regex_rows = time_queries(
        settings,
        &root,
        &mut ours,
        &mut scan,
        &regexes,
        &mut answers,
    );

    let find_after = median(
        (0..FIND_RUNS)
            .map(|_| {
                let (time, answer) = ours.timed_call("find_project_files", &find_arguments);
                answers.compare(FIND_PATTERN, &answer, &scan_find_answer);
                time
            })
            .collect(),
    );
    let scan_find = median(
        (0..FIND_RUNS)
            .map(|_| scan.timed_call("find_project_files", &find_arguments).0)
            .collect(),
    );
    let fd_find = median(
        (0..FIND_RUNS)
            .map(|_| run_fd_find(settings, &root))
            .collect(),
    );
    let list_arguments = json!({"path": list_folder.0, "depth": 1});
    let list = median(
        (0..LIST_RUNS)
            .map(|_| ours.timed_call("list_project_directory", &list_arguments).0)
            .collect(),
    );
    let peak_kib = ours.peak_rss_kib();
    let anon_peak_kib = ours.anon_peak_kib();
    let anon_kib = ours.anon_kib();
    let scan_peak_kib = scan.peak_rss_kib();
    let cache = cache_folder(&ours).map(|folder| (dir_bytes(&folder), folder));
    let bytes_indexed = ready
        .as_ref()
        .and_then(|(_, line)| number_after(line, "files indexed, "));
    let gave_up = ours
        .log_line("searches scan the tree")
        .map(|(_, line)| line);
    // The session ends before the next one starts, as a restart would.
    drop(ours);

    let restart = restart_session(settings, &root, &literals, &mut scan, &mut answers);
    drop(scan);
    let changed = settings
        .changed
        .then(|| changed_tree(settings, &root, &literals, &regexes));

    let mut table = Table::default();
    let mb = |kib: u64| (kib * 1024) as f64 / 1e6;
    println!(
        "{:<44} {:>14} {:>30}  target",
        "measure", "ours", "compared with (ratio)"
    );
    println!("-- first build, no index on disk");
    let first_ratio = ours_first.as_secs_f64() / rg_first.as_secs_f64();
    table.row(
        "first search, during the build",
        format!("{:.1} ms", ms(ours_first)),
        format!("rg {:.1} ms ({first_ratio:.2}x)", ms(rg_first)),
        "≤ 1.0x rg",
        Some(first_ratio <= 1.0),
    );
    println!("{first_rounds}");
    table.row(
        "first search of the scan server",
        format!("{:.1} ms", ms(scan_first)),
        format!(
            "ours/scan {:.2}x",
            ours_first.as_secs_f64() / scan_first.as_secs_f64()
        ),
        "",
        None,
    );
    match &ready {
        Some((after, line)) => {
            let target = corpus.ready_target();
            table.row(
                "index ready after spawn",
                format!("{:.2} s", after.as_secs_f64()),
                String::new(),
                &format!("≤ {} s", target.as_secs()),
                Some(*after <= target),
            );
            println!("   log: {}", message(line));
        }
        None => table.row(
            "index ready after spawn",
            "never".to_string(),
            String::new(),
            &format!("≤ {} s", corpus.ready_target().as_secs()),
            Some(false),
        ),
    }
    if let Some(line) = &gave_up {
        println!("   log: {}", message(line));
    }

    println!("-- the index in use");
    for (label, rows, target) in [
        ("rare identifiers", &literal_rows, corpus.literal_target()),
        ("regexes with a literal", &regex_rows, corpus.regex_target()),
    ] {
        let column = |pick: fn(&Timing) -> Duration, percent| {
            percentile(rows.iter().map(pick).collect(), percent)
        };
        for percent in [50, 90] {
            let (ours, scan, rg) = (
                column(|t| t.ours, percent),
                column(|t| t.scan, percent),
                column(|t| t.rg, percent),
            );
            let speedup = rg.as_secs_f64() / ours.as_secs_f64();
            let (target, met) = if percent == 50 {
                (
                    format!("≥ {target}x faster than rg"),
                    Some(speedup >= target),
                )
            } else {
                (String::new(), None)
            };
            table.row(
                &format!("{label}, {} distinct, p{percent}", rows.len()),
                format!("{:.2} ms", ms(ours)),
                format!("rg {:.1} ms ({speedup:.1}x)", ms(rg)),
                &format!("{target} (scan {:.1} ms)", ms(scan)),
                met,
            );
        }
        let hits: u64 = rows.iter().map(|t| t.hits).sum();
        let rg_lines: u64 = rows.iter().map(|t| t.rg_lines).sum();
        println!("   hits: ours {hits}, rg {rg_lines} lines");
    }
    table.row(
        &format!("find {FIND_PATTERN} before ready"),
        format!("{:.1} ms", ms(find_before)),
        format!(
            "fd {:.1} ms ({:.2}x)",
            ms(fd_find),
            find_before.as_secs_f64() / fd_find.as_secs_f64()
        ),
        if ready_before_find {
            "≤ 1.0x fd (the index was already ready)"
        } else {
            "≤ 1.0x fd"
        },
        Some(find_before <= fd_find),
    );
    table.row(
        &format!("find {FIND_PATTERN}, ready, p50"),
        format!("{:.1} ms", ms(find_after)),
        format!(
            "fd {:.1} ms ({:.2}x)",
            ms(fd_find),
            find_after.as_secs_f64() / fd_find.as_secs_f64()
        ),
        &format!("≤ 0.2x fd (scan {:.1} ms)", ms(scan_find)),
        Some(find_after.as_secs_f64() <= 0.2 * fd_find.as_secs_f64()),
    );
    table.row(
        &format!("list {} ({} entries), p50", list_folder.0, list_folder.1),
        format!("{:.2} ms", ms(list)),
        String::new(),
        "≤ 1 ms",
        Some(list <= Duration::from_millis(1)),
    );

    println!("-- memory and disk");
    let share = |kib: u64| {
        format!(
            "{:.1} % of the corpus",
            (kib * 1024) as f64 / bytes as f64 * 100.0
        )
    };
    table.row(
        "peak RSS (VmHWM)",
        format!("{:.1} MB", mb(peak_kib)),
        share(peak_kib),
        &format!(
            "≤ {:.0} MB (scan server {:.1} MB)",
            corpus.peak_target(),
            mb(scan_peak_kib)
        ),
        Some(mb(peak_kib) <= corpus.peak_target()),
    );
    table.row(
        "anonymous memory (RssAnon), highest",
        format!("{:.1} MB", mb(anon_peak_kib)),
        share(anon_peak_kib),
        &format!("(at the end {:.1} MB)", mb(anon_kib)),
        None,
    );
    table.row(
        "RSS after initialize",
        format!("{:.1} MB", mb(ours_start_kib)),
        String::new(),
        &format!("≤ 10 MB (scan server {:.1} MB)", mb(scan_idle_kib)),
        Some(mb(ours_start_kib) <= 10.0),
    );
    match &cache {
        // An empty folder: the server gave up before it wrote a segment.
        Some((on_disk, folder)) if *on_disk > 0 => {
            let indexed = bytes_indexed.unwrap_or(bytes);
            let share = *on_disk as f64 / indexed as f64;
            table.row(
                "index cache on disk",
                format!("{:.1} MB", *on_disk as f64 / 1e6),
                format!(
                    "{:.1} % of {:.1} MB indexed",
                    share * 100.0,
                    indexed as f64 / 1e6
                ),
                "≤ 30 %",
                Some(share <= 0.30),
            );
            println!("   folder: {}", folder.display());
        }
        _ => table.row(
            "index cache on disk",
            "no segment".to_string(),
            String::new(),
            "≤ 30 %",
            Some(false),
        ),
    }

    println!("-- file list against fd -u -t f ({fd_entries} entries)");
    table.row(
        "fd -u -t f, first listing in this run",
        format!("{:.1} ms", ms(fd_cold)),
        format!("warm p50 {:.1} ms", ms(fd_warm)),
        "(cold-ish)",
        None,
    );
    for (label, list_ms) in [
        ("file list, first build", file_list),
        ("  of which the walk", walk),
        ("file list, restart", restart.file_list),
        ("  of which the walk", restart.walk),
    ] {
        // The walk's line explains the list's time; the target is the list's.
        let judged = !label.starts_with(' ');
        match list_ms {
            Some((entries, list_ms)) => {
                let ratio = list_ms as f64 / ms(fd_warm);
                table.row(
                    &format!("{label} ({entries} entries)"),
                    format!("{list_ms} ms"),
                    format!("fd {:.1} ms ({ratio:.2}x)", ms(fd_warm)),
                    &format!(
                        "{}(cold-ish fd {:.2}x)",
                        if judged { "≤ 1.5x fd " } else { "" },
                        list_ms as f64 / ms(fd_cold)
                    ),
                    judged.then_some(ratio <= 1.5),
                );
            }
            None => table.row(
                label,
                "no log line".to_string(),
                String::new(),
                "≤ 1.5x fd",
                judged.then_some(false),
            ),
        }
    }

    println!("-- restart on the unchanged tree");
    let rg_times: Vec<Duration> = literal_rows
        .iter()
        .take(restart.times.len())
        .map(|t| t.rg)
        .collect();
    let first_ratio = restart.times[0].as_secs_f64() / literal_rows[0].rg.as_secs_f64();
    table.row(
        "restart: the very first search",
        format!("{:.2} ms", ms(restart.times[0])),
        format!("rg {:.1} ms ({first_ratio:.2}x)", ms(literal_rows[0].rg)),
        if corpus.tenfold {
            "≤ 1.0x rg"
        } else {
            "(≤ 1.0x rg is the tenfold's target)"
        },
        corpus.tenfold.then_some(first_ratio <= 1.0),
    );
    let restart_p50 = percentile(restart.times.clone(), 50);
    let rg_p50 = percentile(rg_times, 50);
    let speedup = rg_p50.as_secs_f64() / restart_p50.as_secs_f64();
    table.row(
        &format!("restart: {} distinct, p50", restart.times.len()),
        format!("{:.2} ms", ms(restart_p50)),
        format!("rg {:.1} ms ({speedup:.1}x)", ms(rg_p50)),
        "≥ 100x faster than rg",
        Some(speedup >= 100.0),
    );
    table.row(
        "restart: peak RSS / highest RssAnon",
        format!("{:.1} MB", mb(restart.peak_kib)),
        format!("anon {:.1} MB", mb(restart.anon_peak_kib)),
        "",
        None,
    );
    match &restart.ready {
        Some((after, line)) => {
            table.row(
                "restart: index ready after spawn",
                format!("{:.2} s", after.as_secs_f64()),
                String::new(),
                "",
                None,
            );
            println!("   log: {}", message(line));
        }
        None => table.row(
            "restart: index ready after spawn",
            "never".to_string(),
            String::new(),
            "",
            None,
        ),
    }
    match &restart.segment_line {
        Some(line) => println!("   log: {}", message(line)),
        None => println!("   (no segment used: the restart built its index again)"),
    }

    if let Some(changed) = &changed {
        println!("-- a tree changed while no server ran (a copy of the corpus)");
        println!(
            "   {} files: {} edited, {} added, {} deleted after the first session ended",
            changed.files, changed.edited, changed.added, changed.deleted
        );
        table.row(
            "changed: the first call",
            format!("{:.1} ms", ms(changed.first)),
            format!("scan {:.1} ms", ms(changed.first_scan)),
            "",
            None,
        );
        match changed.sweep_ms {
            Some(sweep) => table.row(
                "changed: the sweep (stat of the file list)",
                format!("{sweep} ms"),
                String::new(),
                "reported",
                None,
            ),
            None => table.row(
                "changed: the sweep",
                "no segment used".to_string(),
                String::new(),
                "reported",
                None,
            ),
        }
        for line in &changed.log {
            println!("   log: {}", message(line));
        }
        changed.before_ready.print(
            "changed: answers equal to the scan's, from the first call",
            &mut table,
        );
        changed
            .after_ready
            .print("changed: the same once ready", &mut table);
    }
    println!("-- every answer");
    answers.print("answers equal to the scan's", &mut table);
    table
}

/// The second session's figures.
struct Restart {
    /// Each rare identifier's time, in the order sent.
    times: Vec<Duration>,
    ready: Option<(Duration, String)>,
    /// The log line that says which segment was used and what the sweep found.
    segment_line: Option<String>,
    file_list: Option<(u64, u64)>,
    /// The walk's share of the file list (its own log line).
    walk: Option<(u64, u64)>,
    peak_kib: u64,
    anon_peak_kib: u64,
}

/// Starts a second server on `root` (the first one's index on disk) and
/// sends it the first rare identifiers right after its handshake, one as
/// soon as the previous answer arrived, each checked against the scan's.
fn restart_session(
    settings: &Settings,
    root: &Path,
    literals: &[Probe],
    scan: &mut Session,
    answers: &mut Answers,
) -> Restart {
    let mut second = Session::start_logged(root, &[]);
    second.initialize();
    let probes = &literals[..literals.len().min(RESTART_QUERIES)];
    let mut times = Vec::with_capacity(probes.len());
    let mut found = Vec::with_capacity(probes.len());
    for probe in probes {
        let (time, answer) = second.timed_call("search_project_files", &probe.arguments());
        times.push(time);
        found.push(answer);
    }
    for (probe, answer) in probes.iter().zip(&found) {
        let scan_answer = scan.call_tool("search_project_files", &probe.arguments());
        answers.compare(&probe.text, answer, &scan_answer);
    }
    let ready = wait_until_ready(&second, settings.ready_wait, true);
    Restart {
        times,
        ready,
        segment_line: second.log_line("files unchanged").map(|(_, line)| line),
        file_list: log_number(&second, "file list of", "ready in "),
        walk: log_number(&second, "walked", "entries in "),
        peak_kib: second.peak_rss_kib(),
        anon_peak_kib: second.anon_peak_kib(),
    }
}

/// The changed-tree session's figures.
struct Changed {
    files: usize,
    edited: usize,
    added: usize,
    deleted: usize,
    first: Duration,
    first_scan: Duration,
    sweep_ms: Option<u64>,
    /// What the restarted server logged about the segment and the sweep.
    log: Vec<String>,
    before_ready: Answers,
    after_ready: Answers,
}

/// Copies `root` to a scratch folder under `target/`, lets one session
/// index it, changes the copy while no server runs, and asks a new session
/// every query from its first call on, each answer checked against a scan
/// server's on the changed copy. The copy is removed at the end.
fn changed_tree(
    settings: &Settings,
    root: &Path,
    literals: &[Probe],
    regexes: &[Probe],
) -> Changed {
    let scratch = tempfile::Builder::new()
        .prefix("bench-changed-")
        .tempdir_in(Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
        .expect("scratch folder under target/");
    let copy = dunce::canonicalize(scratch.path()).expect("scratch folder");
    let status = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", root.display()))
        .arg(&copy)
        .status()
        .expect("run cp");
    assert!(status.success(), "copying the corpus failed: {status}");
    // The server leaves files changed within its doubt window out of the
    // segment; the copy, like a real tree, is older than that.
    std::thread::sleep(Duration::from_secs(2));

    let mut first = Session::start_logged(&copy, &[]);
    first.initialize();
    if wait_until_ready(&first, settings.ready_wait, true).is_none() {
        println!("   (the first session on the copy never logged \"index ready\")");
    }
    drop(first);

    let change = change_tree(settings, &copy, literals);
    let mut probes: Vec<Probe> = literals.to_vec();
    probes.extend(change.markers.iter().cloned());
    probes.extend(regexes.iter().take(5).cloned());

    let config = support::scan_config();
    let config_arg = config.path().to_string_lossy().into_owned();
    let mut scan = Session::start_with(&copy, &["--config", &config_arg]);
    scan.initialize();
    let mut second = Session::start_logged(&copy, &[]);
    second.initialize();
    let mut times = Vec::with_capacity(probes.len());
    let mut found = Vec::with_capacity(probes.len());
    for probe in &probes {
        let (time, answer) = second.timed_call("search_project_files", &probe.arguments());
        times.push(time);
        found.push(answer);
    }
    let mut before_ready = Answers::default();
    let mut scan_answers = Vec::with_capacity(probes.len());
    let mut first_scan = Duration::ZERO;
    for (probe, answer) in probes.iter().zip(&found) {
        let (time, scan_answer) = scan.timed_call("search_project_files", &probe.arguments());
        if scan_answers.is_empty() {
            first_scan = time;
        }
        before_ready.compare(&probe.text, answer, &scan_answer);
        scan_answers.push(scan_answer);
    }
    wait_until_ready(&second, settings.ready_wait, true);
    let mut after_ready = Answers::default();
    for (probe, scan_answer) in probes.iter().zip(&scan_answers) {
        let answer = second.call_tool("search_project_files", &probe.arguments());
        after_ready.compare(&probe.text, &answer, scan_answer);
    }
    let segment_line = second.log_line("files unchanged").map(|(_, line)| line);
    let log = [
        "files unchanged",
        "index: serving from the cache",
        "index ready",
    ]
    .iter()
    .filter_map(|needle| second.log_line(needle).map(|(_, line)| line))
    .collect();
    drop(second);
    drop(scan);
    Changed {
        files: change.files,
        edited: change.edited,
        added: change.added,
        deleted: change.deleted,
        first: times[0],
        first_scan,
        sweep_ms: segment_line
            .as_deref()
            .and_then(|line| number_after(line, "(sweep ")),
        log,
        before_ready,
        after_ready,
    }
}

/// What [`change_tree`] did.
struct Change {
    files: usize,
    edited: usize,
    added: usize,
    deleted: usize,
    /// Queries for the text the changes wrote.
    markers: Vec<Probe>,
}

/// Changes the tree at `copy` as a day of work would between sessions: 1 %
/// of the source files get a marker line appended, 0.1 % are deleted and
/// as many added (copies of a neighbour holding a marker); and around the
/// rare identifiers the queries look for: one file of every fourth is
/// rewritten with the identifier replaced (same size), one of every fourth
/// deleted, one of every fourth copied under a new name.
fn change_tree(settings: &Settings, copy: &Path, literals: &[Probe]) -> Change {
    let mut sources: Vec<PathBuf> = walkdir::WalkDir::new(copy)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file() && is_source(entry.path()))
        .map(|entry| entry.into_path())
        .collect();
    sources.sort();
    let mut change = Change {
        files: corpus_size(copy).0,
        edited: 0,
        added: 0,
        deleted: 0,
        markers: Vec::new(),
    };
    for (index, probe) in literals.iter().enumerate() {
        let Some(file) = files_with(settings, copy, &probe.text).into_iter().next() else {
            continue;
        };
        match index % 4 {
            0 => {
                let Ok(text) = std::fs::read_to_string(&file) else {
                    continue;
                };
                let text = text.replace(&probe.text, &rot13(&probe.text));
                std::fs::write(&file, text).expect("rewrite a file of the copy");
                change.edited += 1;
            }
            1 => {
                std::fs::remove_file(&file).expect("delete a file of the copy");
                change.deleted += 1;
            }
            2 => {
                let name = format!(
                    "bench_added_copy_{index}.{}",
                    file.extension().and_then(|e| e.to_str()).unwrap_or("txt")
                );
                std::fs::copy(&file, file.with_file_name(name)).expect("add a file to the copy");
                change.added += 1;
            }
            _ => {}
        }
    }
    let mut edit_markers = Vec::new();
    let mut add_markers = Vec::new();
    for (index, file) in sources.iter().enumerate() {
        if index % 100 == 50 {
            let marker = format!("benchEditMarker{:06}", edit_markers.len());
            let Ok(mut data) = std::fs::read(file) else {
                continue;
            };
            data.extend_from_slice(format!("\n/* {marker} */\n").as_bytes());
            std::fs::write(file, data).expect("edit a file of the copy");
            edit_markers.push(marker);
            change.edited += 1;
        } else if index % 1000 == 333 {
            if std::fs::remove_file(file).is_ok() {
                change.deleted += 1;
            }
        } else if index % 1000 == 667 {
            let marker = format!("benchAddedMarker{:06}", add_markers.len());
            let Ok(mut data) = std::fs::read(file) else {
                continue;
            };
            data.extend_from_slice(format!("\n/* {marker} */\n").as_bytes());
            let name = format!(
                "bench_added_{}.{}",
                add_markers.len(),
                file.extension().and_then(|e| e.to_str()).unwrap_or("txt")
            );
            std::fs::write(file.with_file_name(name), data).expect("add a file to the copy");
            add_markers.push(marker);
            change.added += 1;
        }
    }
    let spread = |markers: &[String], count: usize| -> Vec<Probe> {
        let step = (markers.len() / count).max(1);
        markers
            .iter()
            .step_by(step)
            .take(count)
            .map(|marker| Probe {
                text: marker.clone(),
                regex: false,
            })
            .collect()
    };
    change.markers = spread(&edit_markers, 10);
    change.markers.extend(spread(&add_markers, 5));
    change.markers.push(Probe {
        text: r"benchEditMarker0000\d\b".to_string(),
        regex: true,
    });
    change
}

fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}

/// The files ripgrep finds `text` in (as a fixed string), with the
/// search's semantics, sorted.
fn files_with(settings: &Settings, root: &Path, text: &str) -> Vec<PathBuf> {
    let mut command = Command::new(&settings.rg);
    command.args([
        "--no-config",
        "--hidden",
        "--no-ignore-parent",
        "--no-require-git",
        "--no-ignore-global",
        "--no-ignore-exclude",
        "--max-filesize",
        "2M",
        "--files-with-matches",
        "--fixed-strings",
    ]);
    for glob in EXCLUDES {
        command.args(["-g", glob]);
    }
    let output = command
        .args(["-e", text, "."])
        .current_dir(root)
        .stderr(Stdio::null())
        .output()
        .expect("start rg (set BENCH_RG)");
    let mut files: Vec<PathBuf> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| root.join(line))
        .collect();
    files.sort();
    files
}

struct Timing {
    ours: Duration,
    scan: Duration,
    rg: Duration,
    hits: u64,
    rg_lines: u64,
}

/// Each query once on each engine (the order rotating), never repeated.
fn time_queries(
    settings: &Settings,
    root: &Path,
    ours: &mut Session,
    scan: &mut Session,
    probes: &[Probe],
    answers: &mut Answers,
) -> Vec<Timing> {
    probes
        .iter()
        .enumerate()
        .map(|(index, probe)| {
            let arguments = probe.arguments();
            let mut ours_run = None;
            let mut scan_run = None;
            let mut rg_run = None;
            for step in 0..3 {
                match (index + step) % 3 {
                    0 => ours_run = Some(ours.timed_call("search_project_files", &arguments)),
                    1 => scan_run = Some(scan.timed_call("search_project_files", &arguments)),
                    _ => {
                        rg_run = Some(run_rg(
                            &settings.rg,
                            settings.threads,
                            root,
                            &probe.text,
                            probe.regex,
                        ))
                    }
                }
            }
            let (ours_time, ours_answer) = ours_run.expect("ran");
            let (scan_time, scan_answer) = scan_run.expect("ran");
            let (rg_time, rg_lines) = rg_run.expect("ran");
            answers.compare(&probe.text, &ours_answer, &scan_answer);
            Timing {
                ours: ours_time,
                scan: scan_time,
                rg: rg_time,
                hits: ours_answer["count"].as_u64().unwrap_or(0),
                rg_lines,
            }
        })
        .collect()
}

/// Waits for the server's "index ready" line; returns the time from spawn
/// to it and the line. Gives up when the server logs that it scans instead.
fn wait_until_ready(
    session: &Session,
    wait: Duration,
    has_index: bool,
) -> Option<(Duration, String)> {
    let started = Instant::now();
    loop {
        if let Some((at, line)) = session.log_line("index ready") {
            return Some((at - session.spawned, line));
        }
        if !has_index
            || started.elapsed() >= wait
            || session.log_line("searches scan the tree").is_some()
        {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The log's message, without the timestamp and level in front of it.
fn message(line: &str) -> &str {
    ["index ready", "index cache", "index:"]
        .iter()
        .filter_map(|start| line.find(start))
        .min()
        .map_or(line.trim(), |at| line[at..].trim())
}

/// The number that follows `before` in `line`.
fn number_after(line: &str, before: &str) -> Option<u64> {
    let rest = &line[line.find(before)? + before.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// From the first log line holding `needle`: the number after `needle` and
/// the one after `then` (the file list's entries and milliseconds).
fn log_number(session: &Session, needle: &str, then: &str) -> Option<(u64, u64)> {
    let (_, line) = session.log_line(needle)?;
    Some((
        number_after(&line, &format!("{needle} "))?,
        number_after(&line, then)?,
    ))
}

/// The root's folder in the index cache, from the debug log line that
/// names it.
fn cache_folder(session: &Session) -> Option<PathBuf> {
    let lines = session.log.as_ref()?.lock().ok()?;
    lines.iter().find_map(|(_, line)| {
        let path = PathBuf::from(line[line.find("index cache: ")? + 13..].trim());
        path.is_dir().then_some(path)
    })
}

/// The bytes of the files below `folder`.
fn dir_bytes(folder: &Path) -> u64 {
    corpus_size(folder).1
}

fn is_source(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e))
}

/// `fd -u -t f` over the whole tree: its time and the entries it printed.
fn run_fd_all(settings: &Settings, root: &Path) -> (Duration, u64) {
    let mut command = Command::new(&settings.fd);
    command.args(["-u", "-t", "f"]);
    run_counted(command, root)
}

/// `FIND_PATTERN` with fd, with the find tool's rules: hidden files, the
/// skip list and deny-list excluded, ignore files without a git repository.
fn run_fd_find(settings: &Settings, root: &Path) -> Duration {
    let mut command = Command::new(&settings.fd);
    command
        .args(["--hidden", "--no-ignore-parent", "--type", "f", "--glob"])
        .args(["-j", &settings.threads.to_string()]);
    for glob in EXCLUDES {
        command.args(["-E", glob.trim_start_matches('!').trim_end_matches('/')]);
    }
    command.args([FIND_PATTERN.trim_start_matches("**/"), "."]);
    run_counted(command, root).0
}

/// Runs `command` in `root`, reading its output through a pipe as a client
/// would; its time (start included) and output lines.
fn run_counted(mut command: Command, root: &Path) -> (Duration, u64) {
    command
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn().expect("start fd (set BENCH_FD)");
    let lines = count_lines(child.stdout.take().expect("fd stdout"));
    let _ = child.wait();
    (started.elapsed(), lines)
}

/// Rare identifiers and regexes built from them, taken from source files
/// (of any common language) spread over the corpus and kept when ripgrep
/// finds them on 1 to `MAX_HITS` lines; each text once.
fn pick_queries(settings: &Settings, root: &Path) -> (Vec<Probe>, Vec<Probe>) {
    let mut sources: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file() && is_source(entry.path()))
        .map(|entry| entry.into_path())
        .collect();
    sources.sort();
    let wanted = settings.queries;
    let step = (sources.len() / (wanted * 8)).max(1);
    // Words already tried, and query texts already kept.
    let mut seen = BTreeSet::new();
    let mut kept = BTreeSet::new();
    let mut literals = Vec::new();
    let mut regexes = Vec::new();
    for source in sources.iter().step_by(step) {
        if literals.len() >= wanted && regexes.len() >= wanted {
            break;
        }
        let Ok(text) = std::fs::read_to_string(source) else {
            continue;
        };
        for word in identifiers(&text) {
            if !seen.insert(word.to_string()) {
                continue;
            }
            let probe = if literals.len() < wanted && (literals.len() <= regexes.len()) {
                Probe {
                    text: word.to_string(),
                    regex: false,
                }
            } else if regexes.len() < wanted {
                Probe {
                    text: regex_around(word, regexes.len()),
                    regex: true,
                }
            } else {
                break;
            };
            let (_, lines) = run_rg(
                &settings.rg,
                settings.threads,
                root,
                &probe.text,
                probe.regex,
            );
            if (1..MAX_HITS).contains(&lines) && kept.insert(probe.text.clone()) {
                if probe.regex {
                    regexes.push(probe);
                } else {
                    literals.push(probe);
                }
            }
            // One query per file, so that they spread over the tree.
            break;
        }
    }
    assert!(
        !literals.is_empty() && !regexes.is_empty(),
        "no rare identifiers found in {}",
        root.display()
    );
    (literals, regexes)
}

/// Identifiers of 14 to 40 characters, starting with a letter, with a
/// lower-case letter and a digit or underscore or capital inside: names
/// rare enough to be worth a search.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| {
            (14..=40).contains(&word.len())
                && word.starts_with(|c: char| c.is_ascii_alphabetic())
                && word.bytes().any(|b| b.is_ascii_lowercase())
                && word
                    .bytes()
                    .skip(1)
                    .any(|b| b == b'_' || b.is_ascii_uppercase() || b.is_ascii_digit())
        })
        .skip(3)
}

/// A regex with a literal part, in one of three shapes.
fn regex_around(word: &str, index: usize) -> String {
    let cut = word.len() - 3;
    match index % 3 {
        0 => format!(r"\b{word}\s*[(<:={{]"),
        1 => format!(r"{}\w*", &word[..cut]),
        _ => format!(r"(?:struct|enum|static|const|int|void|fn|def|func)?\s*{word}\b"),
    }
}

/// A folder of the corpus with about 40 entries (the one closest to 40
/// among the top three levels), and its entry count.
fn folder_with_about_40_entries(root: &Path) -> (String, usize) {
    let mut best: Option<(usize, String, usize)> = None;
    for entry in walkdir::WalkDir::new(root)
        .min_depth(1)
        .max_depth(3)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_dir())
    {
        let Ok(children) = std::fs::read_dir(entry.path()) else {
            continue;
        };
        let count = children.count();
        let distance = count.abs_diff(40);
        if best.as_ref().is_none_or(|(d, ..)| distance < *d) {
            let relative = entry
                .path()
                .strip_prefix(root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            best = Some((distance, relative, count));
        }
    }
    best.map(|(_, path, count)| (path, count))
        .unwrap_or_else(|| (".".to_string(), 0))
}
