//! `cargo bench --bench branch_switch`: the index after a branch switch, as
//! a session meets it, on a real git working tree with history, every
//! search timed beside ripgrep in the same run and its answer checked
//! against a scanning server (`[index] enabled = false`) on the same tree.
//!
//! Three sessions, each printed per phase with the time since the change,
//! each asking the same identifiers in the same order (phases compare like
//! with like; searches before the checkout take theirs from the list's
//! end, so the live session asks none twice):
//! - live: a server indexed on `FROM`, then `git checkout TO` while it
//!   runs; searches from the moment the checkout returns, for
//!   `BENCH_LIVE_SECS`;
//! - between sessions: the server stopped, `git checkout FROM` while none
//!   runs, then a new session asked from its first call on;
//! - every file's change time moved while no server runs (its mode set
//!   again: content and modification time kept), then a new session.
//!
//! The tree is left at `FROM`. Settings from the environment:
//! - `BENCH_GIT_TREE`: the git working tree (required; e.g. a clone of
//!   u-boot with tags v2026.07 and v2026.04).
//! - `BENCH_FROM`, `BENCH_TO`: the two revisions (default v2026.07 and
//!   v2026.04).
//! - `BENCH_LIVE_SECS`: how long each session is asked (default 60).
//! - `BENCH_RG`: the ripgrep binary (default `rg`); `BENCH_SERVER`: another
//!   build of the server to measure.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Session, load_average, mark, median, ms, run_rg, tool_version};

/// Every answer fits one page: answers are compared whole.
const MAX_RESULTS: u64 = 200;
/// Phases of a session, by seconds since the change ended: the first call,
/// then these windows.
const WINDOWS: [(u64, u64); 3] = [(0, 5), (5, 15), (15, u64::MAX)];
/// Searches before the checkout, on the settled index.
const BEFORE_QUERIES: usize = 10;

struct Settings {
    tree: PathBuf,
    from: String,
    to: String,
    live: Duration,
    rg: String,
    threads: usize,
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let Some(tree) = std::env::var_os("BENCH_GIT_TREE").map(PathBuf::from) else {
        println!("branch_switch: set BENCH_GIT_TREE to a git working tree (see benches/run.sh)");
        return;
    };
    let tree = dunce::canonicalize(&tree).expect("BENCH_GIT_TREE is a folder");
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let settings = Settings {
        tree,
        from: env("BENCH_FROM", "v2026.07"),
        to: env("BENCH_TO", "v2026.04"),
        live: Duration::from_secs(env("BENCH_LIVE_SECS", "60").parse().expect("seconds")),
        rg: env("BENCH_RG", "rg"),
        threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    git(&settings.tree, &["checkout", "-q", &settings.from]);
    let changed = git_output(
        &settings.tree,
        &["diff", "--name-only", &settings.from, &settings.to],
    )
    .lines()
    .count();
    println!(
        "branch switch: {} ({} -> {}, {changed} files apart); {}; {} threads; load average {}",
        settings.tree.display(),
        settings.from,
        settings.to,
        tool_version(&settings.rg),
        settings.threads,
        load_average()
    );
    let queries = pick_queries(&settings.tree);
    let (asked, asked_before) = queries.split_at(queries.len().saturating_sub(BEFORE_QUERIES));
    let session_queries = || asked.iter().cloned();
    let config = support::scan_config();
    let config_arg = config.path().to_string_lossy().into_owned();
    let mut scan = Session::start_with(&settings.tree, &["--config", &config_arg]);
    scan.initialize();
    let mut met = Vec::new();

    // Live: indexed on FROM, then the checkout while the server runs.
    support::clear_index_cache();
    let mut ours = Session::start_logged(&settings.tree, &[]);
    ours.initialize();
    wait_for_ready(&ours);
    let mut before_queries = asked_before.iter().cloned();
    let before: Vec<Sample> = (0..BEFORE_QUERIES)
        .map(|_| {
            sample(
                &settings,
                &mut ours,
                &mut scan,
                &mut before_queries,
                Instant::now(),
            )
        })
        .collect();
    print_phase(
        "live, before the checkout",
        &before.iter().collect::<Vec<_>>(),
        None,
    );
    let checkout = Instant::now();
    git(&settings.tree, &["checkout", "-q", &settings.to]);
    let ended = Instant::now();
    println!(
        "\n== live: git checkout {} took {:.1} s while the server ran",
        settings.to,
        (ended - checkout).as_secs_f64()
    );
    let live = ask_for(
        &settings,
        &mut ours,
        &mut scan,
        &mut session_queries(),
        ended,
    );
    met.extend(report(&live, &ours));
    drop(ours);

    // Between sessions: back to FROM while no server runs.
    let checkout = Instant::now();
    git(&settings.tree, &["checkout", "-q", &settings.from]);
    println!(
        "\n== between sessions: git checkout {} took {:.1} s with no server running",
        settings.from,
        checkout.elapsed().as_secs_f64()
    );
    let mut ours = Session::start_logged(&settings.tree, &[]);
    let spawned = ours.spawned;
    ours.initialize();
    let next = ask_for(
        &settings,
        &mut ours,
        &mut scan,
        &mut session_queries(),
        spawned,
    );
    met.extend(report(&next, &ours));
    drop(ours);

    // Every file's change time moved, content and modification time kept.
    let touched = Instant::now();
    let files = move_change_times(&settings.tree);
    println!(
        "\n== change times: {files} files' modes set again in {:.1} s with no server running",
        touched.elapsed().as_secs_f64()
    );
    let mut ours = Session::start_logged(&settings.tree, &[]);
    let spawned = ours.spawned;
    ours.initialize();
    let moved = ask_for(
        &settings,
        &mut ours,
        &mut scan,
        &mut session_queries(),
        spawned,
    );
    met.extend(report(&moved, &ours));
    drop(ours);
    drop(scan);
    git(&settings.tree, &["checkout", "-q", &settings.from]);
    let count = met.iter().filter(|met| **met).count();
    println!("\ntargets met: {count} of {}", met.len());
}

/// One search: ours, then ripgrep and the scanning server on the same
/// query.
struct Sample {
    /// Since the change ended (or the session was spawned).
    at: Duration,
    ours: Duration,
    rg: Duration,
    equal: bool,
    query: String,
}

fn sample(
    settings: &Settings,
    ours: &mut Session,
    scan: &mut Session,
    queries: &mut impl Iterator<Item = String>,
    since: Instant,
) -> Sample {
    let query = queries
        .next()
        .expect("enough distinct identifiers for every search");
    let arguments = json!({"query": query, "max_results": MAX_RESULTS});
    let at = since.elapsed();
    let (took, answer) = ours.timed_call("search_project_files", &arguments);
    let (rg, _) = run_rg(
        &settings.rg,
        settings.threads,
        &settings.tree,
        &query,
        false,
    );
    let expected = scan.call_tool("search_project_files", &arguments);
    Sample {
        at,
        ours: took,
        rg,
        equal: answer == expected,
        query,
    }
}

/// Searches one after the other for the session's length, from `since`.
fn ask_for(
    settings: &Settings,
    ours: &mut Session,
    scan: &mut Session,
    queries: &mut impl Iterator<Item = String>,
    since: Instant,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    while samples.is_empty() || since.elapsed() < settings.live {
        samples.push(sample(settings, ours, scan, queries, since));
    }
    samples
}

fn speedup(sample: &Sample) -> f64 {
    sample.rg.as_secs_f64() / sample.ours.as_secs_f64().max(1e-6)
}

/// Prints one phase: searches, medians, ripgrep over ours (higher is
/// better), the lowest of those and how many searches reach `target`;
/// true when the median ratio reaches it and every answer is right. The
/// median, as the targets are typical speeds: a search whose first 200
/// hits lie in N files reads those N, so against rg's read of the whole
/// tree (38k files on u-boot) it cannot pass 38,000 / N, whatever the
/// index (docs/performance.md, "Known limits").
fn print_phase(label: &str, samples: &[&Sample], target: Option<f64>) -> Option<bool> {
    if samples.is_empty() {
        println!("{label:<34} no search");
        return None;
    }
    let mut sorted: Vec<f64> = samples.iter().map(|sample| speedup(sample)).collect();
    sorted.sort_by(f64::total_cmp);
    let lowest = sorted[0];
    let middle = sorted[sorted.len() / 2];
    let slowest = samples
        .iter()
        .min_by(|a, b| speedup(a).total_cmp(&speedup(b)))
        .map_or(String::new(), |sample| {
            format!(" ({:?}, {:.1} ms)", sample.query, ms(sample.ours))
        });
    let wrong = samples.iter().filter(|sample| !sample.equal).count();
    let verdict = target.map(|target| middle >= target && wrong == 0);
    println!(
        "{label:<34} {:>4} searches  ours {:>8.1} ms  rg {:>7.1} ms  rg/ours median {:>7.1}x lowest {:>7.1}x{slowest}  {} wrong{}",
        samples.len(),
        ms(median(samples.iter().map(|s| s.ours).collect())),
        ms(median(samples.iter().map(|s| s.rg).collect())),
        middle,
        lowest,
        wrong,
        match (target, verdict) {
            (Some(target), Some(met)) => format!(
                "  target >= {target}x: {} ({} of {} searches reach it)",
                mark(met),
                sorted.iter().filter(|ratio| **ratio >= target).count(),
                sorted.len()
            ),
            _ => String::new(),
        }
    );
    for sample in samples.iter().filter(|sample| !sample.equal) {
        println!("   DIFFERENT from the scan: {:?}", sample.query);
    }
    verdict
}

/// The phases of a session against the targets: the first call
/// no slower than ripgrep, 100x from 5 s on, 200x from 15 s on; then its
/// memory and log. The verdicts of the phases with targets.
fn report(samples: &[Sample], session: &Session) -> Vec<bool> {
    let mut met = Vec::new();
    let first = &samples[0];
    met.extend(print_phase(
        &format!("first call (at {:.2} s)", first.at.as_secs_f64()),
        &[first],
        Some(1.0),
    ));
    for (from, to) in WINDOWS {
        let within: Vec<&Sample> = samples[1..]
            .iter()
            .filter(|sample| (from..to).contains(&sample.at.as_secs()))
            .collect();
        let label = match to {
            u64::MAX => format!("{from} s and later"),
            _ => format!("{from}-{to} s"),
        };
        let target = match from {
            0 => None,
            5 => Some(100.0),
            _ => Some(200.0),
        };
        met.extend(print_phase(&label, &within, target));
    }
    println!(
        "peak RSS {:.1} MB, highest RssAnon {:.1} MB",
        session.peak_rss_kib() as f64 / 1024.0,
        session.anon_peak_kib() as f64 / 1024.0
    );
    for needle in ["lost", "files unchanged", "index ready", "wrote segments"] {
        if let Some((at, line)) = session.log_line(needle) {
            let message = line.find("index").map_or(line.as_str(), |i| &line[i..]);
            println!(
                "   log at {:.2} s: {}",
                (at - session.spawned).as_secs_f64(),
                message.trim()
            );
        }
    }
    met
}

/// Waits (up to 10 minutes) for the server's "index ready" line.
fn wait_for_ready(session: &Session) {
    let started = Instant::now();
    while session.log_line("index ready").is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "no \"index ready\" within 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn git(tree: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(tree)
        .args(args)
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?} failed: {status}");
}

fn git_output(tree: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(tree)
        .args(args)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Sets every tracked file's mode to what it is: its change time moves,
/// its content and modification time stay. Returns how many files.
fn move_change_times(tree: &Path) -> usize {
    let listed = git_output(tree, &["ls-files", "-z"]);
    let mut files = 0;
    for relative in listed.split('\0').filter(|name| !name.is_empty()) {
        let path = tree.join(relative);
        let Ok(metadata) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if metadata.is_file() && std::fs::set_permissions(&path, metadata.permissions()).is_ok() {
            files += 1;
        }
    }
    files
}

/// Distinct identifiers, one from each of many files spread over the tree
/// (never the same query twice, so that no result cache helps).
fn pick_queries(tree: &Path) -> Vec<String> {
    let listed = git_output(tree, &["ls-files"]);
    let sources: Vec<&str> = listed
        .lines()
        .filter(|name| name.ends_with(".c") || name.ends_with(".h"))
        .collect();
    let step = (sources.len() / 2000).max(1);
    let mut kept = BTreeSet::new();
    let mut queries = Vec::new();
    for source in sources.iter().step_by(step) {
        let Ok(text) = std::fs::read_to_string(tree.join(source)) else {
            continue;
        };
        if let Some(word) = identifiers(&text).find(|word| !kept.contains(*word)) {
            kept.insert(word.to_string());
            queries.push(word.to_string());
        }
    }
    // Spread over the tree in every phase, not in path order.
    let mut shuffled = Vec::with_capacity(queries.len());
    let stride = 7;
    for start in 0..stride {
        shuffled.extend(queries.iter().skip(start).step_by(stride).cloned());
    }
    shuffled
}

/// Identifiers of 14 to 40 characters with a lower-case letter and an
/// underscore or digit: names rare enough to be worth a search.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| {
            (14..=40).contains(&word.len())
                && word.starts_with(|c: char| c.is_ascii_alphabetic())
                && word.bytes().any(|b| b.is_ascii_lowercase())
                && word.bytes().any(|b| b == b'_' || b.is_ascii_digit())
        })
}
