//! `cargo bench --bench symbols_server -- TREE`: the symbols tools through
//! the real server on a large C tree (u-boot), with the index ready.
//!
//! 1. `find_symbol_definitions` for distinct function names (never the
//!    same name twice), p50 and p90, against universal-ctags' way of
//!    answering the same question on a fresh tree: `ctags -R` over the tree,
//!    then a look-up of the name in its tags.
//! 2. The characters an agent receives for ten "where is X implemented and
//!    what does it call" tasks, two ways:
//!    - symbols: `find_symbol_definitions(X)`, the outline of the file of
//!      its first function definition, and a read of that definition's
//!      lines (its body shows what it calls);
//!    - search: `search_project_files(X)` (the defaults: content, 50
//!      matches) and a read of that same whole file (every page), the file
//!      handed to it for free: the search route is never charged for
//!      reading a wrong file.
//!
//! A character count is the length of the tool's JSON answer, which is what
//! the server sends as the text the model reads.
//!
//! The server runs with `--log-level debug` and a private index cache (a
//! temporary `--config` with `[index] cache_dir`), and the bench waits for
//! its "index ready" line. Settings from the environment:
//! - `BENCH_SERVER`: another build of the server (default: this one's).
//! - `BENCH_CTAGS`: the ctags binary (default `ctags`).
//! - `BENCH_NAMES`: how many names to time (default 40).
//! - `BENCH_READY_SECS`: how long to wait for "index ready" (default 900).

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Session, load_average, ms, percentile};

/// The tasks: u-boot functions an agent is asked about, from start-up,
/// environment, images, commands, driver model, network, file systems,
/// USB and MMC.
const TASKS: &[&str] = &[
    "board_init_r",
    "env_import",
    "fit_image_load",
    "run_command_list",
    "dm_init_and_scan",
    "net_loop",
    "fat_read_file",
    "usb_init",
    "mmc_init",
    "bootm_run_states",
];

fn main() {
    let tree: PathBuf = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with("--"))
        .map(PathBuf::from)
        .expect("usage: cargo bench --bench symbols_server -- TREE (e.g. a u-boot checkout)");
    let tree = tree.canonicalize().expect("the tree exists");
    let ctags = std::env::var("BENCH_CTAGS").unwrap_or_else(|_| "ctags".to_string());
    let wanted: usize = setting("BENCH_NAMES", 40);
    let ready_wait = Duration::from_secs(setting("BENCH_READY_SECS", 900));
    println!("symbols server bench on {}", tree.display());
    println!("load average before: {}", load_average());

    // ctags on the fresh tree: the whole tags file, then one look-up.
    let scratch = tempfile::tempdir().expect("temp dir");
    let tags_file = scratch.path().join("tags");
    let started = Instant::now();
    let status = Command::new(&ctags)
        .args(["-R", "--fields=+nK", "-f"])
        .arg(&tags_file)
        .arg(&tree)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|error| panic!("cannot run {ctags}: {error}"));
    let ctags_time = started.elapsed();
    assert!(status.success(), "ctags -R failed: {status}");
    let tags = std::fs::read_to_string(&tags_file).expect("read the tags file");
    let names = pick_names(&tags, wanted);
    let lookups: Vec<Duration> = names
        .iter()
        .map(|name| {
            let started = Instant::now();
            let prefix = format!("{name}\t");
            let found = tags
                .lines()
                .filter(|line| line.starts_with(&prefix))
                .count();
            assert!(found > 0, "{name} is in the tags");
            started.elapsed()
        })
        .collect();
    let lookup = percentile(lookups, 50);
    println!(
        "ctags -R: {:.0} ms for {} tags; a look-up in them p50 {:.2} ms",
        ms(ctags_time),
        tags.lines().count(),
        ms(lookup)
    );

    let config = scratch.path().join("config.toml");
    let cache = scratch.path().join("index-cache");
    std::fs::write(
        &config,
        format!("[index]\ncache_dir = {:?}\n", cache.to_string_lossy()),
    )
    .expect("write the config");
    let config_arg = config.to_string_lossy().into_owned();
    let mut server = Session::start_logged(&tree, &["--config", &config_arg]);
    server.initialize();
    let waiting = Instant::now();
    let (ready_at, ready_line) = loop {
        if let Some(ready) = server.log_line("index ready") {
            break ready;
        }
        assert!(
            waiting.elapsed() < ready_wait,
            "no \"index ready\" within {ready_wait:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    println!(
        "index ready {:.1} s after start: {ready_line}",
        (ready_at - server.spawned).as_secs_f64()
    );

    let mut times = Vec::with_capacity(names.len());
    for name in &names {
        let (time, answer) = server.timed_call("find_symbol_definitions", &json!({ "name": name }));
        assert!(
            answer["count"].as_u64().is_some_and(|count| count > 0),
            "{name}: {answer}"
        );
        times.push(time);
    }
    let p50 = percentile(times.clone(), 50);
    let p90 = percentile(times.clone(), 90);
    let baseline = ctags_time + lookup;
    println!(
        "find_symbol_definitions, {} distinct names: p50 {:.1} ms, p90 {:.1} ms, max {:.1} ms \
         (target p50 <= 50 ms); ctags -R + look-up {:.0} ms; ratio {:.4} (target <= 0.1)",
        names.len(),
        ms(p50),
        ms(p90),
        ms(*times.iter().max().expect("names")),
        ms(baseline),
        p50.as_secs_f64() / baseline.as_secs_f64()
    );

    println!();
    println!("| task | definition | symbols route (chars) | search route (chars) | ratio |");
    println!("|---|---|---|---|---|");
    let (mut symbols_total, mut search_total) = (0usize, 0usize);
    for name in TASKS {
        let Some((file, line, symbols_chars)) = symbols_route(&mut server, name) else {
            println!("| `{name}` | no function definition | - | - | - |");
            continue;
        };
        let search_chars = search_route(&mut server, name, &file);
        symbols_total += symbols_chars;
        search_total += search_chars;
        println!(
            "| `{name}` | {file}:{line} | {symbols_chars} | {search_chars} | {:.1} % |",
            100.0 * symbols_chars as f64 / search_chars as f64
        );
    }
    println!(
        "| all | | {symbols_total} | {search_total} | {:.1} % |",
        100.0 * symbols_total as f64 / search_total.max(1) as f64
    );
    println!("load average after: {}", load_average());
}

fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// `wanted` distinct function names spread over the tags file, each
/// defined in a `.c` file, the tasks' names first.
fn pick_names(tags: &str, wanted: usize) -> Vec<String> {
    let functions: BTreeSet<&str> = tags
        .lines()
        .filter(|line| !line.starts_with('!'))
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let name = fields.next()?;
            let file = fields.next()?;
            // The kind field, spelled out by `--fields=+K`.
            let is_function = fields.any(|field| field == "function" || field == "kind:function");
            (is_function && file.ends_with(".c") && name.len() >= 6).then_some(name)
        })
        .collect();
    let mut names: Vec<String> = TASKS
        .iter()
        .filter(|task| functions.contains(**task))
        .map(|task| task.to_string())
        .collect();
    let step = (functions.len() / wanted.max(1)).max(1);
    for name in functions.iter().step_by(step) {
        if names.len() >= wanted {
            break;
        }
        if !names.iter().any(|known| known == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The length of a tool's answer as the model reads it.
fn chars(answer: &Value) -> usize {
    answer.to_string().chars().count()
}

/// Definitions, the outline of the first function's file, and that
/// function's lines: (file, line, characters received).
fn symbols_route(server: &mut Session, name: &str) -> Option<(String, u64, usize)> {
    let found = server.call_tool("find_symbol_definitions", &json!({ "name": name }));
    let definition = found["definitions"]
        .as_array()?
        .iter()
        .find(|definition| definition["kind"] == "function")?
        .clone();
    let file = definition["file"].as_str()?.to_string();
    let (line, end_line) = (
        definition["line"].as_u64()?,
        definition["end_line"].as_u64()?,
    );
    let outline = server.call_tool("outline_project_file", &json!({ "path": file }));
    let body = server.call_tool(
        "read_project_file",
        &json!({ "path": file, "start_line": line, "end_line": end_line }),
    );
    Some((file, line, chars(&found) + chars(&outline) + chars(&body)))
}

/// A search for the name, then the whole file, page after page.
fn search_route(server: &mut Session, name: &str, file: &str) -> usize {
    let mut total = chars(&server.call_tool("search_project_files", &json!({ "query": name })));
    let mut start_line = 1u64;
    loop {
        let page = server.call_tool(
            "read_project_file",
            &json!({ "path": file, "start_line": start_line }),
        );
        total += chars(&page);
        let last = page["end_line"].as_u64().unwrap_or(0);
        let lines = page["total_lines"].as_u64().unwrap_or(0);
        if last == 0 || last >= lines {
            return total;
        }
        start_line = last + 1;
    }
}
