//! `cargo bench --bench instant`: instant search on one long-lived server
//! session, against ripgrep and fd in the same run and against the scan (a
//! second server with `[index] enabled = false`), on the corpus and on its
//! tenfold copy. `benches/run.sh` prepares both corpora and runs this after
//! the `search` bench; docs/performance.md explains the method and the
//! targets.
//!
//! Per corpus: the first search right after start (and the scan server's);
//! the time until the server logs "index ready"; after an idle pause, N
//! distinct rare identifiers and N distinct regexes with a literal (never
//! the same query twice, so no result cache can help), each timed on the
//! indexed server, on the scan server and with ripgrep, and each answer
//! checked equal to the scan's; `find **/*.c` before and after the model is
//! ready against fd; a list of a ~40-entry folder; peak RSS against the
//! bytes indexed.
//!
//! Settings come from the environment:
//! - `BENCH_CORPUS`: the corpus (default `target/bench-corpus`).
//! - `BENCH_CORPUS_10X`: its tenfold copy (default `target/bench-corpus-10x`,
//!   skipped when missing).
//! - `BENCH_QUERIES`: distinct queries of each kind (default 20).
//! - `BENCH_READY_SECS`: how long to wait for "index ready" (default 300).
//! - `BENCH_IDLE_SECS`: the idle pause before the repeat queries (default 2).
//! - `BENCH_RG`, `BENCH_FD`: the ripgrep and fd binaries (default `rg`, and
//!   `fdfind` or `fd`).
//! - `BENCH_SERVER`: another build of the server to measure (default: this
//!   one's).

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

struct Settings {
    corpora: Vec<Corpus>,
    queries: usize,
    ready_wait: Duration,
    idle: Duration,
    rg: String,
    fd: String,
    threads: usize,
}

struct Corpus {
    label: &'static str,
    path: PathBuf,
    /// ripgrep divided by ours, at the median, for rare literals.
    literal_target: f64,
}

/// Regexes with a literal: ripgrep divided by ours, at the median.
const REGEX_TARGET: f64 = 30.0;

fn main() {
    let settings = settings();
    println!("mcp-project-helper instant-search benchmark");
    println!("server {}", support::server_binary());
    println!(
        "rg {} / fd {} (-j {}); load average {}",
        tool_version(&settings.rg),
        tool_version(&settings.fd),
        settings.threads,
        load_average()
    );
    let mut met = 0;
    let mut total = 0;
    for corpus in &settings.corpora {
        let (good, all) = bench_corpus(&settings, corpus);
        met += good;
        total += all;
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
    let mut corpora = vec![Corpus {
        label: "corpus",
        path: path_from("BENCH_CORPUS", "target/bench-corpus"),
        literal_target: 100.0,
    }];
    let tenfold = path_from("BENCH_CORPUS_10X", "target/bench-corpus-10x");
    if tenfold.is_dir() {
        corpora.push(Corpus {
            label: "10x corpus",
            path: tenfold,
            literal_target: 300.0,
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
        rg: std::env::var("BENCH_RG").unwrap_or_else(|_| "rg".to_string()),
        fd,
        threads: std::thread::available_parallelism()
            .map(|n| n.get().clamp(1, 12))
            .unwrap_or(2),
    }
}

/// A search query and what ripgrep says about it.
struct Probe {
    text: String,
    regex: bool,
}

/// Prints one corpus's table; returns (targets met, targets).
fn bench_corpus(settings: &Settings, corpus: &Corpus) -> (usize, usize) {
    let root = dunce::canonicalize(&corpus.path).unwrap_or_else(|error| {
        panic!(
            "corpus {} is not usable ({error}); run benches/run.sh to create it",
            corpus.path.display()
        )
    });
    let (files, bytes) = corpus_size(&root);
    println!(
        "\n== {}: {} ({files} files, {:.1} MB)",
        corpus.label,
        root.display(),
        bytes as f64 / 1e6
    );
    let (literals, regexes) = pick_queries(settings, &root);
    let list_folder = folder_with_about_40_entries(&root);

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
    let first_query = json!({"query": literals[0].text, "max_results": MAX_HITS});
    let (scan_first, _) = scan.timed_call("search_project_files", &first_query);

    // The indexed server: its first search right after start.
    let mut ours = Session::start_logged(&root, &[]);
    ours.initialize();
    let ours_start_kib = ours.rss_kib();
    let (ours_first, first_answer) = ours.timed_call("search_project_files", &first_query);
    let scan_answer = scan.call_tool("search_project_files", &first_query);
    let mut differences = Vec::new();
    compare(
        &mut differences,
        &literals[0].text,
        &first_answer,
        &scan_answer,
    );
    let find_arguments = json!({"pattern": FIND_PATTERN, "max_results": FIND_MAX_RESULTS});
    let ready_before_find = ours.log_line("index ready").is_some();
    let (find_before, find_answer) = ours.timed_call("find_project_files", &find_arguments);
    let scan_find_answer = scan.call_tool("find_project_files", &find_arguments);
    compare(
        &mut differences,
        FIND_PATTERN,
        &find_answer,
        &scan_find_answer,
    );

    let ready = wait_until_ready(&ours, settings.ready_wait, has_index);
    std::thread::sleep(settings.idle);

    let literal_rows = time_queries(
        settings,
        &root,
        &mut ours,
        &mut scan,
        &literals,
        &mut differences,
    );
    let regex_rows = time_queries(
        settings,
        &root,
        &mut ours,
        &mut scan,
        &regexes,
        &mut differences,
    );

    let find_after = median(
        (0..FIND_RUNS)
            .map(|_| {
                let (time, answer) = ours.timed_call("find_project_files", &find_arguments);
                compare(&mut differences, FIND_PATTERN, &answer, &scan_find_answer);
                time
            })
            .collect(),
    );
    let scan_find = median(
        (0..FIND_RUNS)
            .map(|_| scan.timed_call("find_project_files", &find_arguments).0)
            .collect(),
    );
    let fd = median((0..FIND_RUNS).map(|_| run_fd(settings, &root)).collect());
    let list_arguments = json!({"path": list_folder.0, "depth": 1});
    let list = median(
        (0..LIST_RUNS)
            .map(|_| ours.timed_call("list_project_directory", &list_arguments).0)
            .collect(),
    );
    let scan_list = median(
        (0..LIST_RUNS)
            .map(|_| scan.timed_call("list_project_directory", &list_arguments).0)
            .collect(),
    );
    let peak_kib = ours.peak_rss_kib();
    let scan_peak_kib = scan.peak_rss_kib();

    // The table.
    let mut verdicts = Vec::new();
    let mb = |kib: u64| (kib * 1024) as f64 / 1e6;
    println!(
        "{:<34} {:>12} {:>12} {:>12} {:>9}  target",
        "measure", "ours", "scan", "rg / fd", "ratio"
    );
    let first_met = ours_first <= scan_first.mul_f64(1.2);
    verdicts.push(first_met);
    println!(
        "{:<34} {:>9.1} ms {:>9.1} ms {:>12} {:>9.2}  ≤ the scan (±20 % noise) {}",
        "first search after start",
        ms(ours_first),
        ms(scan_first),
        "",
        ours_first.as_secs_f64() / scan_first.as_secs_f64(),
        mark(first_met)
    );
    match &ready {
        Some((after, line)) => {
            let met = corpus.literal_target > 100.0 || *after <= Duration::from_secs(5);
            if corpus.literal_target <= 100.0 {
                verdicts.push(met);
            }
            println!(
                "{:<34} {:>10.2} s {:>12} {:>12} {:>9}  ≤ 5 s on the 250 MB tree {}",
                "index ready after spawn",
                after.as_secs_f64(),
                "",
                "",
                "",
                if corpus.literal_target > 100.0 {
                    "(no target)"
                } else {
                    mark(met)
                }
            );
            println!("   log: {}", line.trim());
        }
        None => println!(
            "{:<34} {:>12}  (no \"index ready\" log line{})",
            "index ready after spawn",
            "never",
            if has_index {
                format!(" within {} s", settings.ready_wait.as_secs())
            } else {
                String::new()
            }
        ),
    }
    for (label, rows, target) in [
        ("rare literals", &literal_rows, corpus.literal_target),
        ("regexes with a literal", &regex_rows, REGEX_TARGET),
    ] {
        let column = |pick: fn(&Timing) -> Duration, percent| {
            percentile(rows.iter().map(pick).collect(), percent)
        };
        let (ours_50, scan_50, rg_50) = (
            column(|t| t.ours, 50),
            column(|t| t.scan, 50),
            column(|t| t.rg, 50),
        );
        let speedup = rg_50.as_secs_f64() / ours_50.as_secs_f64();
        let met = speedup >= target;
        verdicts.push(met);
        println!(
            "{:<34} {:>9.2} ms {:>9.1} ms {:>9.1} ms {:>8.1}x  ≥ {target}x faster than rg {}",
            format!("{label}, {} distinct, p50", rows.len()),
            ms(ours_50),
            ms(scan_50),
            ms(rg_50),
            speedup,
            mark(met)
        );
        let (ours_90, scan_90, rg_90) = (
            column(|t| t.ours, 90),
            column(|t| t.scan, 90),
            column(|t| t.rg, 90),
        );
        println!(
            "{:<34} {:>9.2} ms {:>9.1} ms {:>9.1} ms {:>8.1}x",
            format!("{label}, p90"),
            ms(ours_90),
            ms(scan_90),
            ms(rg_90),
            rg_90.as_secs_f64() / ours_90.as_secs_f64()
        );
        let hits: u64 = rows.iter().map(|t| t.hits).sum();
        let rg_lines: u64 = rows.iter().map(|t| t.rg_lines).sum();
        println!("   hits: ours {hits}, rg {rg_lines} lines");
    }
    let find_before_met = find_before <= fd;
    let find_after_met = find_after.as_secs_f64() <= 0.2 * fd.as_secs_f64();
    verdicts.extend([find_before_met, find_after_met]);
    println!(
        "{:<34} {:>9.1} ms {:>9.1} ms {:>9.1} ms {:>8.2}x  ≤ 1.0x fd {}{}",
        format!("find {FIND_PATTERN} before ready"),
        ms(find_before),
        ms(scan_find),
        ms(fd),
        find_before.as_secs_f64() / fd.as_secs_f64(),
        mark(find_before_met),
        if ready_before_find {
            " (the model was already ready)"
        } else {
            ""
        }
    );
    println!(
        "{:<34} {:>9.1} ms {:>9.1} ms {:>9.1} ms {:>8.2}x  ≤ 0.2x fd {}",
        format!("find {FIND_PATTERN}, ready, p50"),
        ms(find_after),
        ms(scan_find),
        ms(fd),
        find_after.as_secs_f64() / fd.as_secs_f64(),
        mark(find_after_met)
    );
    let list_met = list <= Duration::from_millis(1);
    verdicts.push(list_met);
    println!(
        "{:<34} {:>9.2} ms {:>9.2} ms {:>12} {:>9}  ≤ 1 ms {}",
        format!("list {} ({} entries), p50", list_folder.0, list_folder.1),
        ms(list),
        ms(scan_list),
        "",
        "",
        mark(list_met)
    );
    let peak_share = (peak_kib * 1024) as f64 / bytes as f64;
    let rss_met = peak_share <= 0.30 && (corpus.literal_target > 100.0 || mb(peak_kib) <= 100.0);
    verdicts.push(rss_met);
    println!(
        "{:<34} {:>9.1} MB {:>9.1} MB {:>12} {:>8.1}%  ≤ 30 % of the bytes indexed{} {}",
        "peak RSS (VmHWM)",
        mb(peak_kib),
        mb(scan_peak_kib),
        "",
        peak_share * 100.0,
        if corpus.literal_target > 100.0 {
            ""
        } else {
            ", ≤ 100 MB"
        },
        mark(rss_met)
    );
    let idle_met = mb(ours_start_kib) <= 10.0;
    verdicts.push(idle_met);
    println!(
        "{:<34} {:>9.1} MB {:>9.1} MB {:>12} {:>9}  ≤ 10 MB {}",
        "RSS after initialize",
        mb(ours_start_kib),
        mb(scan_idle_kib),
        "",
        "",
        mark(idle_met)
    );
    // The first search, the find before ready, and the finds after.
    let answers = literal_rows.len() + regex_rows.len() + 2 + FIND_RUNS;
    let equal_met = differences.is_empty();
    verdicts.push(equal_met);
    println!(
        "answers equal to the scan's: {} of {answers} {}",
        answers - differences.len(),
        mark(equal_met)
    );
    for difference in &differences {
        println!("   DIFFERENT {difference}");
    }
    let met = verdicts.iter().filter(|met| **met).count();
    (met, verdicts.len())
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
    differences: &mut Vec<String>,
) -> Vec<Timing> {
    probes
        .iter()
        .enumerate()
        .map(|(index, probe)| {
            let arguments = json!({
                "query": probe.text, "regex": probe.regex, "max_results": MAX_HITS
            });
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
            compare(differences, &probe.text, &ours_answer, &scan_answer);
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

/// Notes a difference between the indexed answer and the scan's.
fn compare(differences: &mut Vec<String>, query: &str, ours: &Value, scan: &Value) {
    if ours != scan {
        let show = |value: &Value| {
            let text = value.to_string();
            text.chars().take(400).collect::<String>()
        };
        differences.push(format!(
            "{query:?}\n     ours: {}\n     scan: {}",
            show(ours),
            show(scan)
        ));
    }
}

/// Waits for the server's "index ready" line; returns the time from spawn
/// to it and the line.
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
        if !has_index || started.elapsed() >= wait {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `FIND_PATTERN` with fd, with the find tool's rules: hidden files, the
/// skip list and deny-list excluded, ignore files without a git repository.
fn run_fd(settings: &Settings, root: &Path) -> Duration {
    let mut command = Command::new(&settings.fd);
    command
        .args(["--hidden", "--no-ignore-parent", "--type", "f", "--glob"])
        .args(["-j", &settings.threads.to_string()]);
    for glob in EXCLUDES {
        command.args(["-E", glob.trim_start_matches('!').trim_end_matches('/')]);
    }
    command
        .args([FIND_PATTERN.trim_start_matches("**/"), "."])
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn().expect("start fd (set BENCH_FD)");
    count_lines(child.stdout.take().expect("fd stdout"));
    let _ = child.wait();
    started.elapsed()
}

/// Rare identifiers and regexes built from them, taken from files spread
/// over the corpus and kept when ripgrep finds them on 1 to `MAX_HITS`
/// lines; each text once.
fn pick_queries(settings: &Settings, root: &Path) -> (Vec<Probe>, Vec<Probe>) {
    let mut sources: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| {
            entry.file_type().is_file() && entry.path().extension().is_some_and(|e| e == "rs")
        })
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
        _ => format!(r"(?:fn|struct|enum|type|let|const|static)?\s*{word}\b"),
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
