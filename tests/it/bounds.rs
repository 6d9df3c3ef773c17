//! Every call bounded: input sizes refused before any work,
//! deep offsets that keep no skipped results, reads that stop at what they
//! return, results within the size hint each tool declares (escapes
//! counted), cancellation that stops the work, and ignored files on
//! request. All against the real binary over stdio.

#[cfg(unix)]
use std::sync::Arc;
#[cfg(unix)]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(unix)]
use std::time::Duration;

#[cfg(unix)]
use crate::common::{RawServer, wait_for_index};
use crate::common::{Server, TempProject, strings, text_of};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

/// The declared `anthropic/maxResultSizeChars` of every tool, by name.
async fn size_hints(server: &Server) -> Vec<(String, u64)> {
    let tools = server.client.list_all_tools().await.expect("tools/list");
    tools
        .into_iter()
        .map(|tool| {
            let hint = tool
                .meta
                .as_ref()
                .and_then(|meta| meta.0.get("anthropic/maxResultSizeChars"))
                .and_then(Value::as_u64)
                .unwrap_or_else(|| panic!("{} declares no size hint", tool.name));
            (tool.name.to_string(), hint)
        })
        .collect()
}

/// Length as a host counts it: UTF-16 code units of the JSON text.
fn host_chars(text: &str) -> u64 {
    text.encode_utf16().count() as u64
}

/// Both the structuredContent (as JSON text) and the text copy fit `hint`.
fn assert_within(tool: &str, result: &CallToolResult, hint: u64) {
    assert_ne!(result.is_error, Some(true), "{tool}: {}", text_of(result));
    let structured = result
        .structured_content
        .as_ref()
        .expect("structuredContent");
    let structured_chars = host_chars(&structured.to_string());
    let text_chars = host_chars(&text_of(result));
    assert!(
        structured_chars <= hint && text_chars <= hint,
        "{tool}: structuredContent {structured_chars} and text {text_chars} chars against a hint of {hint}"
    );
}

fn hint_of(hints: &[(String, u64)], tool: &str) -> u64 {
    hints
        .iter()
        .find(|(name, _)| name == tool)
        .map(|(_, hint)| *hint)
        .unwrap_or_else(|| panic!("{tool} not listed"))
}

/// `field` (kB) of /proc/PID/status, such as `VmRSS` or `VmHWM`.
#[cfg(target_os = "linux")]
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"))
}

/// CPU time (user + system, in clock ticks) the process has used.
#[cfg(target_os = "linux")]
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command name, which is in parentheses.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

#[cfg(unix)]
use crate::common::call_request as call;
#[cfg(target_os = "linux")]
use crate::common::cancel_notification as cancel;

// Finding 4 and input sizes: refused before any work, naming the limit.

#[tokio::test]
async fn oversized_inputs_are_refused_before_any_work() {
    let project = TempProject::new();
    project
        .write("a.py", "x = 1\n")
        .write("docs/guide.md", "# Guide\n");
    let server = Server::start(&project.root).await;
    // A megabyte of `*` took ~860 MB and panicked inside globset.
    let stars = "*".repeat(1 << 20);
    let message = server
        .err("find_project_files", json!({"pattern": stars}))
        .await;
    assert!(message.contains("at most 1024 characters"), "{message}");
    assert!(message.len() < 500, "the refusal does not echo the input");
    let message = server
        .err("search_project_files", json!({"query": "x", "glob": stars}))
        .await;
    assert!(message.contains("at most 1024 characters"), "{message}");
    // Short but wildcard-heavy globs are refused as well.
    let message = server
        .err("find_project_files", json!({"pattern": "*".repeat(200)}))
        .await;
    assert!(message.contains("at most 64"), "{message}");
    let long = "q".repeat(5000);
    for (tool, arguments) in [
        ("search_project_files", json!({"query": long})),
        ("get_docs", json!({"query": long})),
        ("run_project_check", json!({"check_name": long})),
    ] {
        let message = server.err(tool, arguments).await;
        assert!(
            message.contains("is 5000 characters long") && message.contains("at most"),
            "{tool}: {message}"
        );
    }
    // A regex whose compiled form is too large is refused, not built.
    let message = server
        .err(
            "search_project_files",
            json!({"query": r"\w{1000}\w{1000}\w{1000}", "regex": true}),
        )
        .await;
    assert!(message.contains("invalid regex"), "{message}");
    let found = server
        .ok("find_project_files", json!({"pattern": "*.py"}))
        .await;
    assert_eq!(strings(&found["files"]), vec!["a.py"]);
    server.stop().await;
}

// Finding 5: a large offset keeps nothing it skips.

#[cfg(target_os = "linux")]
#[tokio::test]
async fn deep_offsets_are_capped_and_keep_no_skipped_results() {
    let project = TempProject::new();
    let lines: String = (1..=2000).map(|i| format!("a line {i}\n")).collect();
    for i in 0..100 {
        project.write(&format!("f{i:03}.txt"), &lines);
    }
    let mut server = RawServer::start(&project.root, &[]);
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    server
        .send(&call(
            1,
            "search_project_files",
            json!({"query": "a", "offset": 1_000_000_000, "context_lines": 10}),
        ))
        .await;
    let answer = server.recv_id(&json!(1)).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let message = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("maximum of 10000"), "{message}");

    // The deepest page allowed: 10,000 results skipped, none of them kept.
    server
        .send(&call(
            2,
            "search_project_files",
            json!({"query": "a", "offset": 10_000, "context_lines": 10, "max_results": 200}),
        ))
        .await;
    let answer = server.recv_id(&json!(2)).await;
    let out = &answer["result"]["structuredContent"];
    assert_eq!(out["matches"][0]["file"], "f005.txt", "{out}");
    assert_eq!(out["matches"][0]["line"], 1);
    assert_eq!(out["matches"][0]["after"].as_array().unwrap().len(), 10);
    assert_eq!(out["truncated"], true);
    let peak_mib = status_kib(pid, "VmHWM") / 1024;
    assert!(peak_mib < 200, "peak RSS {peak_mib} MiB");
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

// Finding 7: a read stops at what it returns.

#[cfg(unix)]
fn sparse_project(length: u64) -> TempProject {
    let project = TempProject::new();
    let head = format!("first\n{}", "text\n".repeat(1000));
    project.write("huge.log", head);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(project.root.join("huge.log"))
        .expect("open");
    file.set_len(length).expect("extend sparsely");
    project
}

#[cfg(unix)]
#[tokio::test]
async fn reading_line_one_of_a_huge_sparse_file_returns_at_once() {
    // 1 TiB of holes: reading it all would take many minutes.
    let project = sparse_project(1 << 40);
    let mut server = RawServer::start(&project.root, &[]);
    server.initialize("2025-06-18").await;
    server
        .send(&call(
            1,
            "read_project_file",
            json!({"path": "huge.log", "end_line": 1}),
        ))
        .await;
    let answer = server.recv_id(&json!(1)).await;
    let out = &answer["result"]["structuredContent"];
    assert_eq!(out["content"], "first\n", "{answer}");
    assert_eq!(out["size"], 1u64 << 40);
    assert_eq!(out["total_lines_partial"], true);
    assert_eq!(out["total_lines"], 1001);
    // And the server leaves as soon as its client does.
    let (rest, code) = server.finish().await;
    assert_eq!((rest.as_str(), code), ("", Some(0)));
}

#[cfg(unix)]
#[tokio::test]
async fn a_file_that_keeps_growing_is_read_and_returns() {
    let project = sparse_project(1 << 20);
    let path = project.root.join("huge.log");
    let done = Arc::new(AtomicBool::new(false));
    let grower = {
        let done = done.clone();
        std::thread::spawn(move || {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .expect("open");
            // Grows by a gigabyte of holes at a time, without using disk.
            while !done.load(Ordering::Relaxed) {
                let length = file.metadata().expect("metadata").len();
                if length > 1 << 42 {
                    break;
                }
                file.set_len(length + (1 << 30)).expect("grow");
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let server = Server::start(&project.root).await;
    let out = server
        .ok("read_project_file", json!({"path": "huge.log"}))
        .await;
    done.store(true, Ordering::Relaxed);
    grower.join().expect("grower");
    assert!(out["content"].as_str().unwrap().starts_with("first\n"));
    assert_eq!(out["truncated"], true);
    assert_eq!(out["total_lines_partial"], true);
    server.stop().await;
}

// Finding 8: every result fits its declared size hint, escapes included.

fn control_text(length: usize) -> String {
    "\u{1}".repeat(length)
}

#[tokio::test]
async fn every_result_fits_the_size_hint_its_tool_declares() {
    let project = TempProject::new();
    // 300 KB of \x01: each is six characters in JSON.
    project.write("ctl.txt", format!("a{}", control_text(300_000)));
    // 200 matches with 10 lines of context, all control characters.
    let line = format!("m{}\n", control_text(400));
    project.write("many.txt", line.repeat(400));
    // Names of control characters: 2000 entries, each path escaped.
    // Windows refuses those in names: DEL there (nothing Windows allows in
    // a name needs an escape); the answers must fit all the same.
    let name = if cfg!(windows) {
        "\u{7f}".repeat(200)
    } else {
        control_text(200)
    };
    for i in 0..2000 {
        project.write(&format!("names/{i:04}{name}"), "");
    }
    let section = format!("# {}\n\n{}\n", control_text(3000), control_text(3000));
    project.write("docs/ctl.md", section.repeat(60));
    // Signatures of backslashes and quotes, two characters each in JSON.
    let escaped = "\\\"".repeat(100);
    let functions: String = (0..2000)
        .map(|i| format!("fn f{i}() {{ \"{escaped}\" }}\n"))
        .collect();
    project.write("sig.rs", functions);
    let defined: String = (0..300)
        .map(|_| format!("def x(): return \"{escaped}\"\n"))
        .collect();
    project.write("defs.py", defined);
    let config = project.outside().join("helper.toml");
    #[cfg(unix)]
    let noise = "[checks]\nnoise = [\"sh\", \"-c\", \"head -c 100000 /dev/zero | tr '\\\\0' '\\\\1'; head -c 100000 /dev/zero | tr '\\\\0' '\\\\1' >&2\"]\n".to_string();
    // Windows: about 100 KB on each stream from a `.cmd` check (cmd.exe
    // cannot print control characters).
    #[cfg(windows)]
    let noise = {
        let line = "x".repeat(50);
        let script = format!(
            "@echo off\r\nfor /l %%i in (1,1,2000) do @echo {line}\r\n\
             for /l %%i in (1,1,2000) do @echo {line} 1>&2\r\n"
        );
        std::fs::write(project.outside().join("noise.cmd"), script).expect("noise.cmd");
        format!(
            "[checks.noise]\nargv = [\"noise\"]\nenv = {{ PATH = '{};{}' }}\n",
            dunce::simplified(&project.outside()).display(),
            std::env::var("PATH").unwrap_or_default()
        )
    };
    std::fs::write(&config, noise).expect("config");
    let server =
        Server::start_with(&project.root, &["--config", config.to_str().unwrap()], &[]).await;
    let hints = size_hints(&server).await;
    let calls = [
        ("read_project_file", json!({"path": "ctl.txt"})),
        (
            "search_project_files",
            json!({"query": "m", "path": "many.txt", "context_lines": 10, "max_results": 200}),
        ),
        (
            "list_project_directory",
            json!({"path": "names", "max_entries": 2000}),
        ),
        (
            "find_project_files",
            json!({"pattern": "*", "path": "names", "max_results": 1000}),
        ),
        ("get_docs", json!({"query": "\u{1}", "max_results": 50})),
        ("outline_project_file", json!({"path": "sig.rs"})),
        (
            "find_symbol_definitions",
            json!({"name": "x", "max_results": 200}),
        ),
        ("run_project_check", json!({"check_name": "noise"})),
    ];
    for (tool, arguments) in calls {
        let result = server.call(tool, arguments.clone()).await;
        assert_within(tool, &result, hint_of(&hints, tool));
        let structured = result.structured_content.expect("structured");
        if tool != "run_project_check" {
            assert!(
                structured
                    .get("count")
                    .is_none_or(|count| count.as_u64() > Some(0)),
                "{tool}({arguments}) returned nothing: {structured}"
            );
        }
    }
    server.stop().await;
}

// Finding 10: a hostile .gitignore costs neither gigabytes nor seconds.

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_hostile_gitignore_is_bounded_and_compiled_once() {
    let project = TempProject::new();
    // 2.2 MB, 100,000 globs; its first 1000 lines are honored, the rest not.
    let mut rules = String::from("first-ignored.txt\n");
    for i in 0..100_000 {
        rules.push_str(&format!("d{i}/**/x*{i}.tmp\n"));
    }
    rules.push_str("late-ignored.txt\n");
    project
        .write(".gitignore", &rules)
        .write("first-ignored.txt", "x\n")
        .write("late-ignored.txt", "x\n")
        .write("src/a.rs", "fn a() {}\n");
    let mut server = RawServer::start(&project.root, &[]);
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    // Four concurrent finds, then four more: each once took 1.3 GB and
    // seconds; the honored part is compiled once and shared.
    for round in 0..2u64 {
        for n in 0..4u64 {
            server
                .send(&call(
                    100 + 10 * round + n,
                    "find_project_files",
                    json!({"pattern": "*"}),
                ))
                .await;
        }
        // Answers come in any order.
        let mut answered = Vec::new();
        while answered.len() < 4 {
            let answer = server.recv().await;
            if answer.get("method").is_some() {
                continue;
            }
            let files = strings(&answer["result"]["structuredContent"]["files"]);
            assert_eq!(
                files,
                vec![".gitignore", "late-ignored.txt", "src/a.rs"],
                "the honored first line hides its file; the cut-off last line does not"
            );
            answered.push(answer["id"].clone());
        }
    }
    let peak_mib = status_kib(pid, "VmHWM") / 1024;
    assert!(peak_mib < 200, "peak RSS {peak_mib} MiB");
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

// Cancellation stops the work, not only the answer.

#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelled_searches_stop_working() {
    cancelled_searches_stop_working_on(Written::LongBefore).await;
}

/// Files written right before the server starts have stamps too new to
/// trust when the build reads them: the background indexes them once they
/// settle, before it says "index ready", so that no call starts that work
/// afterwards.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelled_searches_stop_working_on_files_written_right_before_the_start() {
    cancelled_searches_stop_working_on(Written::RightBefore).await;
}

#[cfg(target_os = "linux")]
#[derive(PartialEq)]
enum Written {
    LongBefore,
    RightBefore,
}

#[cfg(target_os = "linux")]
async fn cancelled_searches_stop_working_on(written: Written) {
    let project = word_project();
    match written {
        // Stamps older than the clock tick, so the build indexes every file.
        Written::LongBefore => crate::common::let_stamps_settle().await,
        // Stamps the build cannot trust when it reads them, on any machine
        // however slow: modified "later" than the walk, as a write within
        // a tick of it looks (a stamp seen unchanged a tick after it was
        // first seen is trusted).
        Written::RightBefore => {
            let ahead = std::time::SystemTime::now() + Duration::from_secs(3600);
            for i in 0..200 {
                let path = project.root.join(format!("d{}/f{i:03}.txt", i % 20));
                let file = std::fs::File::options().write(true).open(path).unwrap();
                file.set_modified(ahead).unwrap();
            }
        }
    }
    // The index is built first: its work in the background is not the
    // searches' and must not be counted as theirs.
    let (mut server, pid) = indexed_server(&project).await;
    // Ready means quiet: no work is left for a call to start.
    let before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = cpu_ticks(pid) - before;
    assert!(
        idle <= 2,
        "{idle} ticks of work after \"index ready\", no call made"
    );
    let cost =
        cost_of_cancelled_word_counts(&mut server, pid, Cancelled::RightBehindEachCall).await;
    // Twelve full searches would cost twelve times one; stopped ones cost
    // a little each. Generous: a quarter of what they would cost.
    assert!(
        cost.twelve_cancelled < 3 * cost.one_call + 10,
        "12 cancelled searches used {} ticks; one full search uses {}",
        cost.twelve_cancelled,
        cost.one_call
    );
    // And little in absolute terms: 0.3 CPU-s (Linux counts 100 ticks a
    // second), whatever one search costs.
    assert!(
        cost.twelve_cancelled <= 30,
        "12 cancelled searches and what they left to do used {} ticks",
        cost.twelve_cancelled
    );
    finish_with_no_late_answers(server).await;
}

/// Cancels that come while twelve searches run (not right behind each
/// call) stop every one of them: none runs on to its end while the
/// others hold the cores.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn searches_cancelled_while_they_run_stop_at_once() {
    let project = word_project();
    crate::common::let_stamps_settle().await;
    let (mut server, pid) = indexed_server(&project).await;
    let cost = cost_of_cancelled_word_counts(&mut server, pid, Cancelled::WhileTheyRun).await;
    assert!(
        cost.twelve_cancelled <= 30 && cost.twelve_cancelled < 3 * cost.one_call + 10,
        "12 searches cancelled while they ran used {} ticks after the cancels; \
         one full search uses {}",
        cost.twelve_cancelled,
        cost.one_call
    );
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

/// A session served from the cache scrubs its segments in idle time (here
/// on a fast pace), once through every id; after that, with no calls and
/// no changes, the server does no work at all.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_idle_server_stops_working_once_its_scrub_has_looked_at_every_file() {
    let project = TempProject::new();
    for i in 0..300 {
        project.write(
            &format!("d{}/f{i:03}.txt", i % 10),
            format!("word{i} text\n"),
        );
    }
    crate::common::let_stamps_settle().await;
    let writer_log = project.outside().join("writer.log");
    let mut writer = RawServer::start(
        &project.root,
        &[
            "--log-level",
            "debug",
            "--log-file",
            writer_log.to_str().unwrap(),
        ],
    );
    writer.initialize("2025-06-18").await;
    wait_for_index(&writer_log).await;
    writer.finish().await;

    let log = project.outside().join("server.log");
    let mut server = RawServer::start_with(
        &project.root,
        &["--log-level", "debug", "--log-file", log.to_str().unwrap()],
        &[("MCP_PROJECT_HELPER_SCRUB_MS", "20")],
    );
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    wait_for_index(&log).await;
    assert!(
        crate::common::log_holds(&log, "segments used: 300 files unchanged", Duration::ZERO).await,
        "the session was served from the cache:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let last_round = "the scrub's last round, every one of 300 ids looked at";
    assert!(
        crate::common::log_holds(&log, last_round, Duration::from_secs(60)).await,
        "the scrub looked at every id:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    // Its last round's reads end at once; then nothing is left to do.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = cpu_ticks(pid) - before;
    assert!(idle <= 2, "{idle} ticks of work in 2 s of idle time");
    server.finish().await;
}

/// When the twelve calls of [`cost_of_cancelled_calls`] are cancelled.
#[cfg(target_os = "linux")]
enum Cancelled {
    /// Each right after it is sent.
    RightBehindEachCall,
    /// All once they run, side by side.
    WhileTheyRun,
}

/// CPU ticks of one call of `tool` run to its end, and of twelve more
/// cancelled (from the cancels on), with what they left to do.
#[cfg(target_os = "linux")]
struct CancelCost {
    one_call: u64,
    twelve_cancelled: u64,
}

#[cfg(target_os = "linux")]
async fn cost_of_cancelled_calls(
    server: &mut RawServer,
    pid: u32,
    tool: &str,
    arguments: Value,
    cancelled: Cancelled,
    check_full_answer: impl FnOnce(&Value),
) -> CancelCost {
    let before = cpu_ticks(pid);
    server.send(&call(1, tool, arguments.clone())).await;
    check_full_answer(&server.recv_id(&json!(1)).await);
    let one_call = cpu_ticks(pid) - before;

    let mut before = cpu_ticks(pid);
    match cancelled {
        Cancelled::RightBehindEachCall => {
            for id in 10..22 {
                server.send(&call(id, tool, arguments.clone())).await;
                server.send(&cancel(id)).await;
            }
        }
        Cancelled::WhileTheyRun => {
            for id in 10..22 {
                server.send(&call(id, tool, arguments.clone())).await;
            }
            // The calls are under way: a twentieth of their work is done.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while cpu_ticks(pid) < before + (one_call * 12 / 20).max(2)
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            before = cpu_ticks(pid);
            for id in 10..22 {
                server.send(&cancel(id)).await;
            }
        }
    }
    // Then a call that must be answered: the server is not kept busy.
    server
        .send(&call(99, "list_project_directory", json!({})))
        .await;
    let answer = server.recv_id(&json!(99)).await;
    assert_eq!(answer["result"]["structuredContent"]["status"], "success");
    // Long enough for twelve uncancelled calls to finish on two cores.
    tokio::time::sleep(Duration::from_millis((one_call * 10 * 12).max(2000))).await;
    CancelCost {
        one_call,
        twelve_cancelled: cpu_ticks(pid) - before,
    }
}

/// [`cost_of_cancelled_calls`] of searches in a [`word_project`] that count
/// the word on every line: each reads the whole tree and handles every line.
#[cfg(target_os = "linux")]
async fn cost_of_cancelled_word_counts(
    server: &mut RawServer,
    pid: u32,
    cancelled: Cancelled,
) -> CancelCost {
    cost_of_cancelled_calls(
        server,
        pid,
        "search_project_files",
        json!({"query": "word", "output_mode": "count", "max_results": 200}),
        cancelled,
        |answer| assert_eq!(answer["result"]["structuredContent"]["count"], 200),
    )
    .await
}

/// 200 files of 2,000 lines, a word on every line: a search that counts it
/// reads the whole tree and handles every line.
#[cfg(target_os = "linux")]
fn word_project() -> TempProject {
    let project = TempProject::new();
    let text: String = (0..2000)
        .map(|i| format!("word{i} other words on a line\n"))
        .collect();
    for i in 0..200 {
        project.write(&format!("d{}/f{i:03}.txt", i % 20), &text);
    }
    project
}

/// A server on `project`, initialized, once its index is ready (so that the
/// build's work is not counted as a call's); its process id.
#[cfg(target_os = "linux")]
async fn indexed_server(project: &TempProject) -> (RawServer, u32) {
    let log = project.outside().join("server.log");
    let log_args = ["--log-level", "debug", "--log-file", log.to_str().unwrap()];
    let mut server = RawServer::start(&project.root, &log_args);
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    wait_for_index(&log).await;
    (server, pid)
}

/// Ends the server and checks that none of the cancelled calls (ids 10 to
/// 21) was answered after the fact.
#[cfg(target_os = "linux")]
async fn finish_with_no_late_answers(server: RawServer) {
    let (rest, code) = server.finish().await;
    assert_eq!(code, Some(0));
    for id in 10..22 {
        assert!(
            !rest.contains(&format!("\"id\":{id},")),
            "cancelled call {id} answered after the fact: {rest}"
        );
    }
}

/// A reference lookup parses every file that holds the name: cancelled, it
/// stops parsing.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelled_reference_lookups_stop_working() {
    let project = TempProject::new();
    // The name in a comment only: every file is parsed, none gives a use.
    let source: String = (0..1000)
        .map(|i| format!("/* needle */ static int f{i}(int x) {{ return g(x) + {i}; }}\n"))
        .collect();
    for i in 0..100 {
        project.write(&format!("d{}/f{i:03}.c", i % 10), &source);
    }
    crate::common::let_stamps_settle().await;
    let (mut server, pid) = indexed_server(&project).await;
    let lookup = json!({"name": "needle"});
    let cost = cost_of_cancelled_calls(
        &mut server,
        pid,
        "find_symbol_references",
        lookup,
        Cancelled::RightBehindEachCall,
        |answer| {
            assert_eq!(
                answer["result"]["structuredContent"]["count"], 0,
                "{answer}"
            );
        },
    )
    .await;
    assert!(
        cost.twelve_cancelled < 3 * cost.one_call + 10,
        "12 cancelled lookups used {} ticks; one full lookup uses {}",
        cost.twelve_cancelled,
        cost.one_call
    );
    finish_with_no_late_answers(server).await;
}

#[tokio::test]
async fn ignored_files_on_request_and_a_note_when_a_search_path_is_ignored() {
    let project = TempProject::new();
    project
        .write(".gitignore", "scripts/*\n")
        .write("scripts/w.py", "needle = 1\n")
        .write("node_modules/pkg/index.js", "needle()\n")
        .write("src/a.py", "other\n")
        .write(".env", "needle=secret\n")
        .write(".git/config", "needle\n");
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "path": "scripts"}),
        )
        .await;
    assert_eq!(out["count"], 0);
    let note = out["note"].as_str().expect("a note");
    assert!(note.contains("include_ignored: true"), "{note}");

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "include_ignored": true, "output_mode": "files_with_matches"}),
        )
        .await;
    assert_eq!(
        strings(&out["files"]),
        vec!["node_modules/pkg/index.js", "scripts/w.py"],
        "secrets and .git stay hidden"
    );
    assert!(out.get("note").is_none());
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "other", "path": "src"}),
        )
        .await;
    assert!(out.get("note").is_none());
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "absent", "path": "src"}),
        )
        .await;
    assert!(out.get("note").is_none(), "{out}");

    let found = server
        .ok(
            "find_project_files",
            json!({"pattern": "*", "include_ignored": true}),
        )
        .await;
    let files = strings(&found["files"]);
    assert!(files.contains(&"scripts/w.py".to_string()), "{files:?}");
    assert!(!files.iter().any(|f| f == ".env" || f.starts_with(".git/")));
    let listed = server
        .ok(
            "list_project_directory",
            json!({"include_ignored": true, "depth": 2}),
        )
        .await;
    let paths: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert!(paths.contains(&"node_modules/pkg"), "{paths:?}");
    assert!(!paths.iter().any(|p| *p == ".git" || *p == ".env"));
    server.stop().await;
}

// A soak: 200 pipelined calls of every tool, cancellations mixed in.

#[cfg(target_os = "linux")]
#[tokio::test]
async fn soak_every_tool_pipelined_with_cancellations() {
    let project = TempProject::new();
    for i in 0..50 {
        project.write(
            &format!("src/m{i:02}.rs"),
            format!("fn f{i}() {{ let needle = {i}; }}\n").repeat(20),
        );
    }
    project.write("docs/guide.md", "# Guide\n\nThe needle section.\n");
    let config = project.outside().join("helper.toml");
    std::fs::write(&config, "[checks]\nquick = [\"true\"]\n").expect("config");
    let mut server = RawServer::start(&project.root, &["--config", config.to_str().unwrap()]);
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    let calls = [
        (
            "search_project_files",
            json!({"query": "needle", "context_lines": 2}),
        ),
        ("read_project_file", json!({"path": "src/m01.rs"})),
        ("list_project_directory", json!({"depth": 3})),
        ("find_project_files", json!({"pattern": "**/*.rs"})),
        ("outline_project_file", json!({"path": "src/m02.rs"})),
        ("find_symbol_definitions", json!({"name": "f3"})),
        ("get_docs", json!({"query": "needle"})),
        ("run_project_check", json!({"check_name": "quick"})),
    ];
    let mut rss_after_rounds = Vec::new();
    for first_id in [1000u64, 2000, 3000] {
        // Every tool in turn; every seventh call cancelled right after it
        // is sent. rmcp drops the answer of a call whose cancellation
        // arrived before it finished, so a cancelled call is answered at
        // most once, and an uncancelled one exactly once.
        let mut cancelled = Vec::new();
        for n in 0..200u64 {
            let id = first_id + n;
            let (tool, arguments) = &calls[(n as usize) % calls.len()];
            server.send(&call(id, tool, arguments.clone())).await;
            if n % 7 == 3 {
                server.send(&cancel(id)).await;
                cancelled.push(id);
            }
        }
        let mut answers: std::collections::BTreeMap<u64, usize> = Default::default();
        let wanted: Vec<u64> = (first_id..first_id + 200)
            .filter(|id| !cancelled.contains(id))
            .collect();
        while !wanted.iter().all(|id| answers.contains_key(id)) {
            let message = server.recv().await;
            if message.get("method").is_some() {
                continue;
            }
            let id = message["id"].as_u64().expect("numeric id");
            assert!(
                message.get("result").is_some(),
                "call {id} failed at the protocol level: {message}"
            );
            *answers.entry(id).or_default() += 1;
        }
        // A marker call after the batch catches late answers to cancelled
        // calls before the counts are checked.
        server
            .send(&call(first_id + 999, "list_project_directory", json!({})))
            .await;
        loop {
            let message = server.recv().await;
            if message["id"] == first_id + 999 {
                break;
            }
            if let Some(id) = message["id"].as_u64() {
                *answers.entry(id).or_default() += 1;
            }
        }
        for (id, times) in &answers {
            assert_eq!(*times, 1, "call {id} answered {times} times");
            assert!(
                (first_id..first_id + 200).contains(id),
                "unknown id {id} answered"
            );
        }
        rss_after_rounds.push(status_kib(pid, "VmRSS"));
    }
    let (first, last) = (rss_after_rounds[0], rss_after_rounds[2]);
    assert!(
        last < first * 2 + 20 * 1024,
        "RSS grew from {first} to {last} KiB over the rounds: {rss_after_rounds:?}"
    );
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

// Over the memory limit the model is dropped, and its memory goes back to
// the system: the process holds what a server without an index holds.

/// A project whose index outgrows an 8 MB limit: 300 files of 32 KB of
/// base-36 identifiers (some 20,000 distinct trigrams a file).
#[cfg(target_os = "linux")]
fn over_the_limit_project() -> TempProject {
    let project = TempProject::new();
    for file in 0..300u64 {
        let text = random_identifiers(0x9e37_79b9_7f4a_7c15 + file);
        project.write(&format!("d{}/f{file:03}.txt", file % 12), &text);
    }
    project
}

/// The search every memory test sends: it reads every file.
#[cfg(target_os = "linux")]
fn search_every_file() -> Value {
    json!({"query": "id_0", "output_mode": "count"})
}

/// What a server without an index answers to [`search_every_file`] on
/// `project`, and its `field` of /proc/PID/status after that search.
#[cfg(target_os = "linux")]
async fn scanning_baseline(project: &TempProject, field: &str) -> (Value, u64) {
    let off = project.outside().join("off.toml");
    std::fs::write(&off, "[index]\nenabled = false\n").expect("config");
    let mut scanning = RawServer::start(&project.root, &["--config", off.to_str().unwrap()]);
    let pid = scanning.child.id().expect("pid");
    scanning.initialize("2025-06-18").await;
    scanning
        .send(&call(1, "search_project_files", search_every_file()))
        .await;
    let answer = scanning.recv_id(&json!(1)).await;
    let kib = status_kib(pid, field);
    scanning.finish().await;
    (answer, kib)
}

/// A server on `project` with the operator config `config` and a debug
/// log, initialized: the server, its pid and its log's path.
#[cfg(target_os = "linux")]
async fn logged_server(
    project: &TempProject,
    config: &str,
) -> (RawServer, u32, std::path::PathBuf) {
    let outside = project.outside();
    let config_path = outside.join("config.toml");
    std::fs::write(&config_path, config).expect("config");
    let log = outside.join("server.log");
    let args = [
        "--config",
        config_path.to_str().unwrap(),
        "--log-level",
        "debug",
        "--log-file",
        log.to_str().unwrap(),
    ];
    let mut server = RawServer::start(&project.root, &args);
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    (server, pid, log)
}

/// Polls `pid`'s VmRSS until it is below `bound_kib` or `deadline`
/// passes; returns the last figure.
#[cfg(target_os = "linux")]
async fn rss_settles_below(pid: u32, bound_kib: u64, deadline: Duration) -> u64 {
    let until = tokio::time::Instant::now() + deadline;
    loop {
        let rss = status_kib(pid, "VmRSS");
        if rss < bound_kib || tokio::time::Instant::now() >= until {
            return rss;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_model_over_the_memory_limit_gives_its_memory_back() {
    let project = over_the_limit_project();
    crate::common::let_stamps_settle().await;
    // The baseline: the same tree served without an index, after a search
    // read every file.
    let (_, baseline_kib) = scanning_baseline(&project, "VmRSS").await;
    // Kept in memory: lists written to disk would keep the model within
    // the limit (the next test).
    let (mut server, pid, log) =
        logged_server(&project, "[index]\nmax_memory_mb = 8\npersist = false\n").await;
    let fell_back = crate::common::log_holds(
        &log,
        "searches scan the tree",
        crate::common::INDEX_DEADLINE,
    )
    .await;
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        fell_back,
        "the model never fell back to the scan; log:\n{log_text}"
    );
    // The same search, answered by the scan now.
    server
        .send(&call(1, "search_project_files", search_every_file()))
        .await;
    server.recv_id(&json!(1)).await;
    let limit_kib = 8 * 1024;
    // Some slack for the allocator's own bookkeeping and the log's buffers.
    let bound_kib = baseline_kib + limit_kib / 2 + 4 * 1024;
    let peak_kib = status_kib(pid, "VmHWM");
    let rss_kib = rss_settles_below(pid, bound_kib, Duration::from_secs(10)).await;
    assert!(
        rss_kib < bound_kib,
        "after the fallback the process holds {rss_kib} KiB (peak {peak_kib} KiB), more than a \
         server without an index ({baseline_kib} KiB) plus half the 8 MB limit and 4 MB: the \
         dropped model's memory was kept, not given back"
    );
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_index_larger_than_the_memory_limit_is_built_on_disk_within_it() {
    let project = over_the_limit_project();
    crate::common::let_stamps_settle().await;
    // Anonymous memory: the binary's own pages (file-backed) differ with
    // the code a server runs, not with what it holds.
    let (scanned, baseline_kib) = scanning_baseline(&project, "RssAnon").await;
    let cache = project.outside().join("cache");
    let config = format!(
        "[index]\nmax_memory_mb = 8\ncache_dir = {:?}\n",
        cache.to_str().unwrap()
    );
    let (mut server, pid, log) = logged_server(&project, &config).await;
    // The build's peak, sampled until the index is ready.
    let mut peak_kib = 0;
    let ready_by = tokio::time::Instant::now() + crate::common::INDEX_DEADLINE;
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains(crate::common::INDEX_READY)
        && tokio::time::Instant::now() < ready_by
    {
        peak_kib = peak_kib.max(status_kib(pid, "RssAnon"));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !log_text.contains("searches scan the tree"),
        "the model fell back: {log_text}"
    );
    assert!(
        log_text.contains("index cache: wrote segments"),
        "the lists went to disk: {log_text}"
    );
    server
        .send(&call(1, "search_project_files", search_every_file()))
        .await;
    let indexed = server.recv_id(&json!(1)).await;
    assert_eq!(
        indexed["result"]["structuredContent"],
        scanned["result"]["structuredContent"]
    );
    let peak_kib = peak_kib.max(status_kib(pid, "RssAnon"));
    let limit_kib = 8 * 1024;
    assert!(
        peak_kib < baseline_kib + limit_kib,
        "the indexed server's anonymous memory peaked at {peak_kib} KiB: more than a server \
         without an index ({baseline_kib} KiB after a scan) plus the 8 MB limit"
    );
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

/// Text of about 32 KB of identifiers that share few trigrams, different
/// for each `seed`.
#[cfg(target_os = "linux")]
fn random_identifiers(mut state: u64) -> String {
    let mut text = String::with_capacity(33_000);
    while text.len() < 32_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut n = state;
        text.push_str("id_");
        while n > 0 {
            text.push(char::from_digit((n % 36) as u32, 36).unwrap_or('z'));
            n /= 36;
        }
        text.push(' ');
    }
    text
}

/// `pid`'s anonymous memory once it holds steady (the background indexing
/// done): two samples half a second apart within 256 KiB, or the last
/// sample after 15 s.
#[cfg(target_os = "linux")]
async fn steady_anon_kib(pid: u32) -> u64 {
    let until = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut last = status_kib(pid, "RssAnon");
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = status_kib(pid, "RssAnon");
        if now.abs_diff(last) < 256 || tokio::time::Instant::now() >= until {
            return now;
        }
        last = now;
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn churn_on_the_same_files_gives_its_memory_back() {
    let project = over_the_limit_project();
    crate::common::let_stamps_settle().await;
    let cache = project.outside().join("cache");
    let config = format!(
        "[index]\nmax_memory_mb = 64\ncache_dir = {:?}\n",
        cache.to_str().unwrap()
    );
    let (mut server, pid, log) = logged_server(&project, &config).await;
    crate::common::wait_for_index(&log).await;
    // Each round rewrites the same 100 files with new content, and a
    // search makes the model see it (the background then indexes it).
    let mut after_first_round = 0;
    let mut id = 0;
    for round in 0..8u64 {
        for file in 0..100u64 {
            let text = random_identifiers(0x5eed_0000 + round * 1000 + file);
            project.write(&format!("d{}/f{file:03}.txt", file % 12), &text);
        }
        id += 1;
        server
            .send(&call(
                id,
                "search_project_files",
                json!({"query": "id_0", "output_mode": "count"}),
            ))
            .await;
        server.recv_id(&json!(id)).await;
        crate::common::let_stamps_settle().await;
        id += 1;
        server
            .send(&call(
                id,
                "search_project_files",
                json!({"query": "id_1", "output_mode": "count"}),
            ))
            .await;
        server.recv_id(&json!(id)).await;
        if round == 0 {
            after_first_round = steady_anon_kib(pid).await;
        }
    }
    // What the last round's files hold is what the first round's held:
    // the rounds between gave theirs back.
    let bound_kib = after_first_round + 4 * 1024;
    let settled = {
        let until = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let rss = status_kib(pid, "RssAnon");
            if rss < bound_kib || tokio::time::Instant::now() >= until {
                break rss;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    assert!(
        settled < bound_kib,
        "after eight rounds of rewriting the same 100 files the server holds {settled} KiB of \
         anonymous memory, against {after_first_round} KiB after the first: churn kept memory"
    );
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

// The symbol tools: one parse budget per call, parse memory bounded,
// cancellation that does not wait for a tree to be freed.

/// `bytes` of C++ whose `<` may open a template or compare, on every
/// token: the parser keeps several readings alive, and its state grows to
/// over 3 KB per byte of the file.
#[cfg(target_os = "linux")]
fn ambiguous_cpp(first_line: &str, bytes: usize) -> String {
    let mut source = format!("{first_line}\nint x = ");
    while source.len() < bytes {
        source.push_str("a<b<c<d<");
    }
    source.push_str(";\n");
    source
}

/// The server's peak resident memory so far, in MiB.
#[cfg(target_os = "linux")]
fn peak_mib(pid: u32) -> u64 {
    status_kib(pid, "VmHWM") / 1024
}

/// The documented bound on what all parses hold at once (512 MiB), with
/// room for the allocator's own overhead.
#[cfg(target_os = "linux")]
const PARSE_PEAK_BOUND_MIB: u64 = 640;

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_definitions_call_over_large_ambiguous_cpp_stays_within_its_budget() {
    let project = TempProject::new();
    for i in 0..12 {
        project.write(
            &format!("src/f{i:02}.cpp"),
            ambiguous_cpp("int wanted_name = 1;", 1 << 20),
        );
    }
    let mut server = RawServer::start(&project.root, &[]);
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    server
        .send(&call(1, "list_project_directory", json!({})))
        .await;
    server.recv_id(&json!(1)).await;
    let before = peak_mib(pid);
    let started = std::time::Instant::now();
    server
        .send(&call(
            2,
            "find_symbol_definitions",
            json!({"name": "wanted_name"}),
        ))
        .await;
    let answer = server.recv_id(&json!(2)).await;
    let took = started.elapsed();
    let grown = peak_mib(pid).saturating_sub(before);
    eprintln!("twelve 1 MB ambiguous files: answered in {took:?}, peak grew {grown} MiB");
    let result = &answer["result"];
    // Each file's parse passes its 256 MiB share and is named in the note,
    // or the call's ten seconds run out first on a slow machine.
    if result["isError"] == true {
        let message = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(
                "looking up 'wanted_name' ran out of the 10-second parse budget after parsing "
            ) && message.contains("give a narrower path"),
            "{message}"
        );
    } else {
        let out = &result["structuredContent"];
        assert_eq!(out["count"], 0, "{out}");
        let note = out["note"].as_str().unwrap_or_default();
        assert!(
            note.starts_with("12 file(s) holding the name could not be parsed (a parse may hold 1 KiB per byte of its file, at most 256 MiB)"),
            "{out}"
        );
    }
    // One budget for the call: twelve files once took 143.7 s.
    assert!(
        took < 3 * Duration::from_secs(10),
        "the call took {took:?} against a budget of 10 s"
    );
    assert!(
        grown < PARSE_PEAK_BOUND_MIB,
        "the call's parses grew the server's peak by {grown} MiB"
    );
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_outline_of_deeply_nested_python_lists_stays_under_the_memory_bound() {
    let project = TempProject::new();
    let depth = (1 << 20) - 8;
    project.write(
        "nested.py",
        format!("x = {}{}\n", "[".repeat(depth), "]".repeat(depth)),
    );
    // A normal file just under the 2 MiB cap is not refused.
    let mut normal = String::new();
    let mut i = 0;
    while normal.len() < (2 << 20) - 100 {
        normal.push_str(&format!(
            "def f{i}(a, b):\n    return [a, b, {{'k': {i}}}]\n\n"
        ));
        i += 1;
    }
    project.write("normal.py", &normal);
    let mut server = RawServer::start(&project.root, &[]);
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    server
        .send(&call(1, "list_project_directory", json!({})))
        .await;
    server.recv_id(&json!(1)).await;
    let before = peak_mib(pid);
    server
        .send(&call(
            2,
            "outline_project_file",
            json!({"path": "nested.py"}),
        ))
        .await;
    let answer = server.recv_id(&json!(2)).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "cannot outline 'nested.py': its syntax tree needs more than 256 MiB (a parse may hold 1 KiB per byte of its file, at most 256 MiB); use search_project_files or read_project_file with a line range"
    );
    let grown = peak_mib(pid).saturating_sub(before);
    eprintln!("2 MB of nested lists: peak grew {grown} MiB");
    // It once took 1.56 GB.
    assert!(
        grown < PARSE_PEAK_BOUND_MIB / 2,
        "the outline grew the server's peak by {grown} MiB"
    );
    server
        .send(&call(
            3,
            "outline_project_file",
            json!({"path": "normal.py"}),
        ))
        .await;
    let answer = server.recv_id(&json!(3)).await;
    let out = &answer["result"]["structuredContent"];
    assert_eq!(out["symbols"][0]["name"], "f0", "{answer}");
    assert_eq!(out["truncated"], true, "{out}");
    let (_, code) = server.finish().await;
    assert_eq!(code, Some(0));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelling_a_slow_parse_stops_its_work_at_once() {
    let project = TempProject::new();
    // Seconds of parsing within the memory bound: a call each C++ reads
    // as a declaration or an expression.
    let mut slow = String::from("void f() {\n");
    while slow.len() < (2 << 20) - 100 {
        slow.push_str("  T(x)(y)(z) ;\n");
    }
    slow.push_str("}\n");
    project.write("slow.cpp", &slow);
    crate::common::let_stamps_settle().await;
    // The index is built first: its work is not the parse's.
    let (mut server, pid) = indexed_server(&project).await;
    server
        .send(&call(
            1,
            "outline_project_file",
            json!({"path": "slow.cpp"}),
        ))
        .await;
    // Until the parse is well under way.
    let busy_from = cpu_ticks(pid);
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while cpu_ticks(pid) < busy_from + 100 && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.send(&cancel(1)).await;
    let cancelled = std::time::Instant::now();
    server
        .send(&call(2, "list_project_directory", json!({})))
        .await;
    let answer = server.recv_id(&json!(2)).await;
    let answered = cancelled.elapsed();
    assert_eq!(answer["result"]["structuredContent"]["status"], "success");
    // What the server does once the cancelled parse has stopped: freeing
    // its state on the side, then nothing.
    let after_cancel = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let spent = cpu_ticks(pid) - after_cancel;
    // Freeing what the stopped parse held (at most 256 MiB) takes a
    // fraction of that; a parse going on would take all of it.
    assert!(
        spent < 30,
        "the server used {spent} ticks in the 2 s after a cancelled parse"
    );
    assert!(
        answered < Duration::from_secs(2),
        "the next call was answered {answered:?} after the cancel"
    );
    eprintln!("next call answered {answered:?} after the cancel; {spent} ticks after");
    let (rest, code) = server.finish().await;
    assert_eq!(code, Some(0));
    assert!(
        !rest.contains("\"id\":1,"),
        "cancelled call answered: {rest}"
    );
}

/// On x86_64 Linux the process allocates with jemalloc held to two arenas,
/// giving freed pages back at once (its default keeps them ten seconds: a
/// first build peaks 23 MB higher) and each thread keeping blocks of up to
/// 256 KiB for reuse. jemalloc prints the options it runs with at exit when
/// its environment variable asks for its statistics.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn the_allocator_gives_freed_pages_back_at_once() {
    let output = std::process::Command::new(crate::common::binary())
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .expect("run the binary");
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for option in [
        "opt.narenas: 2\n",
        "opt.dirty_decay_ms: 0 ",
        "opt.muzzy_decay_ms: 0 ",
        "opt.tcache_max: 262144\n",
    ] {
        assert!(
            stderr.contains(option),
            "{option:?} is not among jemalloc's options:\n{stderr}"
        );
    }
}
