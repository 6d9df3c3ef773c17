//! `cargo bench --bench search`: the search engine against ripgrep over one
//! large real file set, then the server binary's start-up time, small-call
//! round trip and peak memory. `benches/run.sh` prepares the corpus and
//! runs this; docs/performance.md explains the method and the targets.
//!
//! Settings come from the environment:
//! - `BENCH_CORPUS`: folder to search (default `target/bench-corpus`).
//! - `BENCH_RG`: the ripgrep binary (default `rg` on the PATH).
//! - `BENCH_RUNS`: timed runs per measurement (default 11; start-up uses 20,
//!   the read round trip 200).
//!
//! Ripgrep runs with the engine's semantics: the same threads, hidden files
//! searched, `.gitignore`/`.ignore` honoured without a git repository and
//! without parent, global or exclude files, files over 2 MiB skipped, the
//! walker's skip list and the built-in deny-list excluded, line numbers on;
//! its output is read through a pipe and counted, as a client would.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_project_helper::cancel::Cancel;
use mcp_project_helper::config::IndexConfig;
use mcp_project_helper::corpus::Corpus;
use mcp_project_helper::index::TreeModel;
use mcp_project_helper::security::PathGate;
use mcp_project_helper::tools::search::{
    DEFAULT_MAX_RESULTS, MAX_RESULTS_CAP, OutputMode, SearchInput, search,
};
use serde_json::json;
use support::{
    CpuTimes, Session, corpus_size, initialize_request, load_average, mark, median, ms,
    tool_version,
};

#[derive(Clone, Copy, PartialEq)]
enum Goal {
    /// The whole tree must be scanned: ours/rg ≤ 1.2.
    FullScan,
    /// The search may stop after `max_results`: ours/rg well under 1.0,
    /// read as ≤ 0.5.
    EarlyStop,
}

struct Query {
    label: &'static str,
    text: &'static str,
    regex: bool,
    goal: Goal,
}

/// Chosen on the vendored dependency tree: the rare literal and the regex
/// match fewer lines than `max_results`, so both engines read every file.
const QUERIES: &[Query] = &[
    Query {
        label: "rare literal",
        text: "QueryPerformanceCounter",
        regex: false,
        goal: Goal::FullScan,
    },
    Query {
        label: "regex",
        text: r"impl<T: \w+> Drop for \w+",
        regex: true,
        goal: Goal::FullScan,
    },
    Query {
        label: "common word",
        text: "the",
        regex: false,
        goal: Goal::EarlyStop,
    },
];

const STARTUP_RUNS: usize = 20;
const ROUND_TRIP_RUNS: usize = 200;

struct Settings {
    corpus: PathBuf,
    rg: String,
    runs: usize,
    threads: usize,
}

fn main() {
    let settings = settings();
    let gate = PathGate::new(
        dunce::canonicalize(&settings.corpus).unwrap_or_else(|error| {
            panic!(
                "corpus {} is not usable ({error}); run benches/run.sh to create it",
                settings.corpus.display()
            )
        }),
        &[],
    )
    .expect("path gate over the corpus");
    let (files, bytes) = corpus_size(gate.root());
    println!("mcp-project-helper benchmark");
    println!(
        "corpus   {} ({files} files, {:.1} MB)",
        gate.root().display(),
        bytes as f64 / 1e6
    );
    println!(
        "rg       {} (-j {})",
        tool_version(&settings.rg),
        settings.threads
    );
    println!(
        "machine  {} cores, load average {}; medians of {} warm-cache runs",
        settings.threads,
        load_average(),
        settings.runs
    );
    println!("         (ms columns: wall-clock medians; cpu: mean user+system per run)\n");

    let mut verdicts = Vec::new();
    println!(
        "{:<13} {:<28} {:>5} {:>8} {:>8} {:>8}  {:<15} {:>8} {:>8}",
        "search", "query", "hits", "ours ms", "rg ms", "ours/rg", "target", "ours cpu", "rg cpu"
    );
    for query in QUERIES {
        let row = compare(&settings, &gate, query);
        let (target, met) = match query.goal {
            Goal::FullScan => ("≤ 1.2", row.ratio <= 1.2),
            Goal::EarlyStop => ("≪ 1.0 (≤ 0.5)", row.ratio <= 0.5),
        };
        println!(
            "{:<13} {:<28} {:>5} {:>8.1} {:>8.1} {:>8.3}  {:<15} {:>8.1} {:>8.1}",
            query.label,
            format!("{:?}", query.text),
            row.hits,
            ms(row.ours),
            ms(row.rg),
            row.ratio,
            format!("{target} {}", mark(met)),
            ms(row.ours_cpu),
            ms(row.rg_cpu),
        );
        if let Some(note) = row.note {
            println!("              ({note})");
        }
        verdicts.push(met);
    }

    println!("\nserver binary {}", support::server_binary());
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo_project");
    let (cold, baseline) = cold_start(&demo);
    let cold_met = cold <= Duration::from_millis(5);
    println!(
        "cold start to initialize answer   median {:>7.2} ms  (/bin/cat echo {:.2} ms)  target ≤ 5 ms {}",
        ms(cold),
        ms(baseline),
        mark(cold_met)
    );
    let (read_median, read_p90) = read_round_trip(&demo);
    let read_met = read_median <= Duration::from_micros(300);
    println!(
        "read_project_file round trip      median {:>7.3} ms  (p90 {:.3} ms)  target ≤ 0.3 ms {}",
        ms(read_median),
        ms(read_p90),
        mark(read_met)
    );
    let memory = memory_and_mcp_search(&settings, gate.root());
    let megabytes = |kib: u64| (kib * 1024) as f64 / 1e6;
    let idle_met = megabytes(memory.idle_kib) <= 10.0;
    let after_met = megabytes(memory.after_search_kib) <= 40.0;
    println!(
        "peak RSS idle, index off         {:>7.1} MB  target ≤ 10 MB {}",
        megabytes(memory.idle_kib),
        mark(idle_met)
    );
    println!(
        "peak RSS after a scan, index off  {:>7.1} MB  target ≤ 40 MB {}  ({} hits, max_results {MAX_RESULTS_CAP})",
        megabytes(memory.after_search_kib),
        mark(after_met),
        memory.search_hits
    );
    for (label, median) in &memory.mcp_search {
        println!(
            "{label:<33} median {:>7.1} ms through the server, index off (tools/call round trip)",
            ms(*median)
        );
    }
    verdicts.extend([cold_met, read_met, idle_met, after_met]);
    println!("\nload average at the end {}", load_average());
    let missed = verdicts.iter().filter(|met| !**met).count();
    println!(
        "{} of {} targets met",
        verdicts.len() - missed,
        verdicts.len()
    );
}

fn settings() -> Settings {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = std::env::var_os("BENCH_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("target/bench-corpus"));
    let rg = std::env::var("BENCH_RG").unwrap_or_else(|_| "rg".to_string());
    let runs = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(11);
    // The engine uses this many search threads; rg gets the same.
    let threads = std::thread::available_parallelism()
        .map(|n| n.get().clamp(1, 12))
        .unwrap_or(2);
    Settings {
        corpus,
        rg,
        runs,
        threads,
    }
}

struct Row {
    hits: usize,
    ours: Duration,
    rg: Duration,
    ratio: f64,
    /// Mean CPU time per run (user + system, all threads), which a busy
    /// machine disturbs less than the wall time.
    ours_cpu: Duration,
    rg_cpu: Duration,
    note: Option<String>,
}

/// One warm-up each, then `runs` alternating timed runs; medians compared.
fn compare(settings: &Settings, gate: &PathGate, query: &Query) -> Row {
    let input = SearchInput {
        query: query.text.to_string(),
        path: ".".to_string(),
        max_results: DEFAULT_MAX_RESULTS,
        regex: query.regex,
        case_sensitive: true,
        glob: None,
        context_lines: 0,
        output_mode: OutputMode::Content,
        offset: 0,
        include_ignored: false,
    };
    let (_, hits, truncated) = run_ours(gate, &input);
    let (_, rg_lines) = run_rg(settings, query);
    let mut ours = Vec::new();
    let mut rg = Vec::new();
    let (mut ours_cpu, mut rg_cpu) = (Duration::ZERO, Duration::ZERO);
    let mut timed_ours = || {
        let before = CpuTimes::now();
        ours.push(run_ours(gate, &input).0);
        ours_cpu += CpuTimes::now().own - before.own;
    };
    let mut timed_rg = || {
        let before = CpuTimes::now();
        rg.push(run_rg(settings, query).0);
        rg_cpu += CpuTimes::now().children - before.children;
    };
    for run in 0..settings.runs {
        if run % 2 == 0 {
            timed_ours();
            timed_rg();
        } else {
            timed_rg();
            timed_ours();
        }
    }
    let note = match query.goal {
        Goal::FullScan if truncated || hits as u64 != rg_lines => Some(format!(
            "NOT comparable: ours returned {hits} (truncated {truncated}), rg printed {rg_lines} lines"
        )),
        Goal::FullScan => None,
        Goal::EarlyStop => Some(format!(
            "ours stops after {DEFAULT_MAX_RESULTS} hits; rg prints all {rg_lines} matching lines"
        )),
    };
    let (ours, rg) = (median(ours), median(rg));
    let runs = settings.runs as u32;
    Row {
        hits,
        ours,
        rg,
        ratio: ours.as_secs_f64() / rg.as_secs_f64(),
        ours_cpu: ours_cpu / runs,
        rg_cpu: rg_cpu / runs,
        note,
    }
}

fn run_ours(gate: &PathGate, input: &SearchInput) -> (Duration, usize, bool) {
    // The scan itself: no tree model.
    let no_model = TreeModel::new(
        gate,
        &IndexConfig {
            enabled: false,
            max_memory_mb: 1,
            ..IndexConfig::default()
        },
    );
    let started = Instant::now();
    let output =
        search(&Corpus::new(gate, &no_model), input, &Cancel::never()).expect("search succeeds");
    (started.elapsed(), output.count, output.truncated)
}

/// Runs rg and counts its output lines; the time includes starting rg.
fn run_rg(settings: &Settings, query: &Query) -> (Duration, u64) {
    support::run_rg(
        &settings.rg,
        settings.threads,
        &settings.corpus,
        query.text,
        query.regex,
    )
}

/// Spawn to the `initialize` answer, and the same for `/bin/cat` echoing
/// the request (the floor for any process start): medians of
/// [`STARTUP_RUNS`] alternating runs after two warm-ups.
fn cold_start(root: &Path) -> (Duration, Duration) {
    let mut ours = Vec::new();
    let mut cat = Vec::new();
    for run in 0..STARTUP_RUNS + 2 {
        let started = Instant::now();
        let mut session = Session::start(root);
        session.initialize();
        let server = started.elapsed();
        drop(session);
        let echo = cat_echo();
        if run >= 2 {
            ours.push(server);
            cat.push(echo);
        }
    }
    (median(ours), median(cat))
}

fn cat_echo() -> Duration {
    let line = format!("{}\n", initialize_request());
    let started = Instant::now();
    let mut child = Command::new("/bin/cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start /bin/cat");
    let mut stdin = child.stdin.take().expect("cat stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("cat stdout"));
    stdin.write_all(line.as_bytes()).expect("write to cat");
    let mut echo = String::new();
    stdout.read_line(&mut echo).expect("read from cat");
    let elapsed = started.elapsed();
    drop(stdin);
    let _ = child.wait();
    elapsed
}

/// One long-lived session; a ~400-byte file read [`ROUND_TRIP_RUNS`] times
/// after ten warm-ups. Returns the median and the 90th percentile.
fn read_round_trip(root: &Path) -> (Duration, Duration) {
    let mut session = Session::start(root);
    session.initialize();
    let arguments = json!({ "path": "demo_app/models.py" });
    let mut times = Vec::new();
    for run in 0..ROUND_TRIP_RUNS + 10 {
        let started = Instant::now();
        let result = session.call_tool("read_project_file", &arguments);
        let elapsed = started.elapsed();
        assert!(result["content"].as_str().is_some_and(|c| !c.is_empty()));
        if run >= 10 {
            times.push(elapsed);
        }
    }
    times.sort();
    let p90 = times[times.len() * 9 / 10];
    (median(times), p90)
}

struct Memory {
    idle_kib: u64,
    after_search_kib: u64,
    search_hits: u64,
    mcp_search: Vec<(String, Duration)>,
}

/// Peak RSS of a server rooted at the corpus: idle after `initialize`, then
/// after a whole-tree search; then the full-scan queries timed through it.
/// The tree model is switched off: this measures the scan (the model's
/// memory and speed are `benches/instant.rs`'s).
fn memory_and_mcp_search(settings: &Settings, root: &Path) -> Memory {
    let config = support::scan_config();
    let config_arg = config.path().to_string_lossy().into_owned();
    let mut session = Session::start_with(root, &["--config", &config_arg]);
    session.initialize();
    std::thread::sleep(Duration::from_millis(200));
    let idle_kib = session.peak_rss_kib();
    let rare = &QUERIES[0];
    let result = session.call_tool(
        "search_project_files",
        &json!({ "query": rare.text, "max_results": MAX_RESULTS_CAP }),
    );
    let search_hits = result["count"].as_u64().expect("search count");
    assert_eq!(
        result["truncated"],
        json!(false),
        "the search must scan everything"
    );
    let after_search_kib = session.peak_rss_kib();
    let mcp_search = QUERIES
        .iter()
        .filter(|query| query.goal == Goal::FullScan)
        .map(|query| {
            let arguments = json!({ "query": query.text, "regex": query.regex });
            session.call_tool("search_project_files", &arguments);
            let times = (0..settings.runs)
                .map(|_| {
                    let started = Instant::now();
                    session.call_tool("search_project_files", &arguments);
                    started.elapsed()
                })
                .collect();
            (format!("search {}", query.label), median(times))
        })
        .collect();
    Memory {
        idle_kib,
        after_search_kib,
        search_hits,
        mcp_search,
    }
}
