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
fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

#[cfg(target_os = "linux")]
fn cancel(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
           "params": {"requestId": id, "reason": "test"}})
}

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
    let project = TempProject::new();
    let text: String = (0..2000)
        .map(|i| format!("word{i} other words on a line\n"))
        .collect();
    for i in 0..200 {
        project.write(&format!("d{}/f{i:03}.txt", i % 20), &text);
    }
    // Stamps older than the clock tick, so the build indexes every file:
    // files it cannot vouch for yet are indexed in the background once a
    // call finds them settled, which is not the searches' work either.
    crate::common::let_stamps_settle().await;
    // The index is built first: its work in the background is not the
    // searches' and must not be counted as theirs.
    let log = project.outside().join("server.log");
    let log_args = ["--log-level", "debug", "--log-file", log.to_str().unwrap()];
    let mut server = RawServer::start(&project.root, &log_args);
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    wait_for_index(&log).await;
    // Counting a word on every line: every search reads the whole tree and
    // handles every line.
    let expensive = json!({"query": "word", "output_mode": "count", "max_results": 200});
    let before = cpu_ticks(pid);
    server
        .send(&call(1, "search_project_files", expensive.clone()))
        .await;
    let answer = server.recv_id(&json!(1)).await;
    assert_eq!(answer["result"]["structuredContent"]["count"], 200);
    let one_search = cpu_ticks(pid) - before;

    let before = cpu_ticks(pid);
    for id in 10..22 {
        server
            .send(&call(id, "search_project_files", expensive.clone()))
            .await;
        server.send(&cancel(id)).await;
    }
    // Then a call that must be answered: the server is not kept busy.
    server
        .send(&call(99, "list_project_directory", json!({})))
        .await;
    let answer = server.recv_id(&json!(99)).await;
    assert_eq!(answer["result"]["structuredContent"]["status"], "success");
    // Long enough for twelve uncancelled searches to finish on two cores.
    let settle = Duration::from_millis((one_search * 10 * 12).max(2000));
    tokio::time::sleep(settle).await;
    let after_cancel = cpu_ticks(pid) - before;
    // Twelve full searches would cost twelve times one; stopped ones cost
    // a little each. Generous: a quarter of what they would cost.
    assert!(
        after_cancel < 3 * one_search + 10,
        "12 cancelled searches used {after_cancel} ticks; one full search uses {one_search}"
    );
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
    let source: String = (0..2000)
        .map(|i| format!("/* needle */ static int f{i}(int x) {{ return g(x) + {i}; }}\n"))
        .collect();
    for i in 0..100 {
        project.write(&format!("d{}/f{i:03}.c", i % 10), &source);
    }
    crate::common::let_stamps_settle().await;
    let log = project.outside().join("server.log");
    let log_args = ["--log-level", "debug", "--log-file", log.to_str().unwrap()];
    let mut server = RawServer::start(&project.root, &log_args);
    let pid = server.child.id().expect("pid");
    server.initialize("2025-06-18").await;
    wait_for_index(&log).await;
    let lookup = json!({"name": "needle"});
    let before = cpu_ticks(pid);
    server
        .send(&call(1, "find_symbol_references", lookup.clone()))
        .await;
    let answer = server.recv_id(&json!(1)).await;
    assert_eq!(
        answer["result"]["structuredContent"]["count"], 0,
        "{answer}"
    );
    let one_lookup = cpu_ticks(pid) - before;

    let before = cpu_ticks(pid);
    for id in 10..22 {
        server
            .send(&call(id, "find_symbol_references", lookup.clone()))
            .await;
        server.send(&cancel(id)).await;
    }
    server
        .send(&call(99, "list_project_directory", json!({})))
        .await;
    let answer = server.recv_id(&json!(99)).await;
    assert_eq!(answer["result"]["structuredContent"]["status"], "success");
    let settle = Duration::from_millis((one_lookup * 10 * 12).max(2000));
    tokio::time::sleep(settle).await;
    let after_cancel = cpu_ticks(pid) - before;
    assert!(
        after_cancel < 3 * one_lookup + 10,
        "12 cancelled lookups used {after_cancel} ticks; one full lookup uses {one_lookup}"
    );
    let (rest, code) = server.finish().await;
    assert_eq!(code, Some(0));
    for id in 10..22 {
        assert!(
            !rest.contains(&format!("\"id\":{id},")),
            "cancelled call {id} answered after the fact: {rest}"
        );
    }
}

// Ignored files on request.

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
