//! The tree model changes speed only: with the index, search, find and list
//! give exactly the answers of a server that scans (`[index] enabled =
//! false`), on a generated tree of 10,000 files with hostile corners
//! (symlinks, a FIFO, binary, huge, byte-order-mark, ignored and denied
//! files) and for literal, regex and case-insensitive queries with every
//! option.

use std::time::Duration;

use crate::common::{self, Server, TempProject, matches, wait_for_index};
use serde_json::{Value, json};

const WORDS: &[&str] = &[
    "apply",
    "discount",
    "needle",
    "haystack",
    "zebra",
    "fn main()",
    "let x = 1;",
    "a.b",
    "(x)",
    "Kelvin",
    "\u{212A}elvin",
    "cla\u{17F}s",
    "class",
    "naïve",
    "ÄÖÜ",
    "foo_bar",
    "FooBar",
    "FOO_BAR_HAYSTACK",
    "use std;",
];

#[cfg(not(windows))]
const OFFSETS: [usize; 4] = [0, 0, 3, 17];
#[cfg(not(windows))]
const MAX_RESULTS: [usize; 3] = [5, 50, 200];
#[cfg(not(windows))]
const CONTEXT: [usize; 3] = [0, 0, 2];

/// A small pseudo-random generator, so a failure repeats.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }

    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.next() % items.len()]
    }
}

fn generated_tree(files: usize) -> TempProject {
    let project = TempProject::new();
    let mut rng = Lcg(2026);
    let extensions = ["rs", "py", "txt", "md"];
    for i in 0..files {
        let mut text = String::new();
        for line in 0..(1 + rng.next() % 5) {
            for _ in 0..(rng.next() % 4) {
                text.push_str(rng.pick(WORDS));
                text.push(' ');
            }
            text.push_str(&format!("ident_{i}_{line}\n"));
        }
        let path = format!(
            "m{}/s{}/f{i}.{}",
            i % 20,
            (i / 20) % 10,
            extensions[i % extensions.len()]
        );
        project.write(&path, text);
    }
    // Large files get long-gram filters in the index as well as trigrams.
    for k in 0..4 {
        let mut text = String::new();
        let mut line = 0;
        while text.len() < 80 * 1024 {
            for _ in 0..(rng.next() % 6) {
                text.push_str(rng.pick(WORDS));
                text.push(' ');
            }
            text.push_str(&format!("ident_{}_{line}\n", 7 * k + line % 5));
            line += 1;
        }
        project.write(&format!("large/l{k}.rs"), text);
    }
    project
        .write(
            "huge.txt",
            format!("needle\n{}", "x".repeat(2 * 1024 * 1024)),
        )
        .write("bin/blob.bin", b"needle\0ident_1_0\n")
        .write("bom.txt", "\u{FEFF}needle with a byte-order mark\n")
        .write(".gitignore", "ignored_dir/\n*.log\n")
        .write("ignored_dir/x.rs", "needle ident_2_0\n")
        .write("keep.log", "needle\n")
        .write(".env", "needle=secret\n")
        .write("unicode/kelvin.txt", "\u{212A}elvin scale\n")
        .write("unicode/longs.txt", "a cla\u{17F}s act\n");
    #[cfg(unix)]
    {
        let root = &project.root;
        std::os::unix::fs::symlink(root.join("m0/s0/f0.rs"), root.join("link_to_file")).unwrap();
        std::os::unix::fs::symlink(project.outside(), root.join("link_out")).unwrap();
        std::os::unix::fs::symlink(root, root.join("m1/loop")).unwrap();
        // Files with several names: across folders, and one in a skipped
        // folder, which the change feed does not watch.
        std::fs::create_dir_all(root.join("node_modules")).unwrap();
        std::fs::hard_link(root.join("m2/s0/f2.txt"), root.join("m7/s1/f2_again.txt")).unwrap();
        std::fs::hard_link(
            root.join("m3/s0/f3.md"),
            root.join("node_modules/linked.rs"),
        )
        .unwrap();
        let fifo = std::ffi::CString::new(root.join("pipe.txt").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    }
    project
}

async fn same_answer(indexed: &Server, scanning: &Server, tool: &str, arguments: Value) -> Value {
    let with_index = indexed.call(tool, arguments.clone()).await;
    let without = scanning.call(tool, arguments.clone()).await;
    assert_eq!(with_index.is_error, without.is_error, "{tool}({arguments})");
    assert_eq!(
        with_index.structured_content, without.structured_content,
        "{tool}({arguments}) differs with the index"
    );
    assert_eq!(common::text_of(&with_index), common::text_of(&without));
    with_index.structured_content.unwrap_or(Value::Null)
}

// Not under Windows' test run: a 10,000-file tree, where Wine answers each
// file open with a round trip to wineserver (see tools_list_find.rs).
#[cfg(not(windows))]
#[tokio::test]
async fn indexed_answers_equal_scanned_answers() {
    let project = generated_tree(10_000);
    // Stamps younger than the file system's clock tick are not trusted and
    // such files are always candidates; let the tree settle so the index
    // really narrows.
    common::let_stamps_settle().await;
    let (indexed, scanning) = common::indexed_and_scanning_servers(&project).await;
    let mut rng = Lcg(8);
    let literals: Vec<String> = (0..12)
        .map(|_| format!("ident_{}_0", rng.next() % 10_000))
        .chain(
            [
                "needle",
                "a.b",
                "(x)",
                "fn",
                "x",
                "Kelvin",
                "KELVIN",
                "CLASS",
                "naïve",
                "ÄÖÜ",
                "ident_99",
                "use std;",
                "nowhere_at_all",
                "byte-order mark",
                // The large files' filters keep the case of these:
                // each case-sensitive form rules out the others.
                "FOO_BAR_HAYSTACK",
                "foo_bar_haystack",
                "Foo_Bar_Haystack",
            ]
            .map(String::from),
        )
        .collect();
    let regexes = [
        r"ident_1\d+_0",
        r"fn \w+",
        r"(needle|zebra) ",
        r"[Kk]elvin",
        r"\w+",
        r".",
        r"^use ",
        r"x{2,}",
        r"hay(stack)?",
        r"cla[sſ]s",
        r"ident_(12|345)_\d",
        r"(?i)foo_?bar",
        r"\bapply\b",
        r"ÄÖ|naï",
        r"\bFOO_\w+_HAYSTACK",
        r"foo_bar_hay\w*",
    ];
    let globs = [None, Some("*.rs"), Some("m1/**/*.py"), Some("*.{txt,md}")];
    let paths = [".", "m3", "m3/s2", "unicode", "ignored_dir", "m1/loop"];
    let modes = ["content", "files_with_matches", "count"];
    let mut queries: Vec<(String, bool)> = literals.into_iter().map(|q| (q, false)).collect();
    queries.extend(regexes.iter().map(|q| (q.to_string(), true)));
    for (query, regex) in &queries {
        for _ in 0..2 {
            let mut arguments = json!({
                "query": query,
                "regex": regex,
                "case_sensitive": rng.next().is_multiple_of(2),
                "output_mode": rng.pick(&modes),
                "offset": OFFSETS[rng.next() % 4],
                "max_results": MAX_RESULTS[rng.next() % 3],
                "context_lines": CONTEXT[rng.next() % 3],
                "path": paths[rng.next() % paths.len()],
            });
            if let Some(glob) = globs[rng.next() % globs.len()] {
                arguments["glob"] = json!(glob);
            }
            same_answer(&indexed, &scanning, "search_project_files", arguments).await;
        }
    }
    for pattern in ["**/*.rs", "*.txt", "f1*", "*"] {
        for path in [".", "m2", "unicode"] {
            let arguments = json!({"pattern": pattern, "path": path, "max_results": 1000});
            same_answer(&indexed, &scanning, "find_project_files", arguments).await;
        }
    }
    for (path, depth) in [(".", 1), (".", 3), ("m4", 2), ("bin", 5)] {
        let arguments = json!({"path": path, "depth": depth, "max_entries": 2000});
        same_answer(&indexed, &scanning, "list_project_directory", arguments).await;
    }
    // Changes the change feed sees only in part: a write through a name in
    // a skipped folder, and two folders exchanged.
    #[cfg(target_os = "linux")]
    {
        let root = &project.root;
        std::fs::write(
            root.join("node_modules/linked.rs"),
            "rewritten_through_a_link\n",
        )
        .unwrap();
        exchange(&root.join("m5"), &root.join("m6"));
        std::fs::write(root.join("m5/s0/after.rs"), "made_after_the_exchange\n").unwrap();
        for query in [
            "rewritten_through_a_link",
            "made_after_the_exchange",
            "ident_5_0",
            "ident_6_1",
        ] {
            let arguments = json!({"query": query, "max_results": 200});
            same_answer(&indexed, &scanning, "search_project_files", arguments).await;
        }
        for pattern in ["m5/**/*.rs", "m6/**", "**/linked*"] {
            let arguments = json!({"pattern": pattern, "max_results": 1000});
            same_answer(&indexed, &scanning, "find_project_files", arguments).await;
        }
        let arguments = json!({"path": "m5", "depth": 3, "max_entries": 2000});
        same_answer(&indexed, &scanning, "list_project_directory", arguments).await;
    }
    indexed.stop().await;
    scanning.stop().await;
}

/// `renameat2(RENAME_EXCHANGE)`: each path takes the other's place at once.
#[cfg(target_os = "linux")]
fn exchange(a: &std::path::Path, b: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: both paths are NUL-terminated C strings.
    let result = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(result, 0, "{}", std::io::Error::last_os_error());
}

#[tokio::test]
async fn unicode_case_folding_matches_with_the_index() {
    let project = generated_tree(200);
    common::let_stamps_settle().await;
    let (indexed, scanning) = common::indexed_and_scanning_servers(&project).await;
    for (query, file, text) in [
        ("kelvin scale", "unicode/kelvin.txt", "\u{212A}elvin scale"),
        ("KELVIN SCALE", "unicode/kelvin.txt", "\u{212A}elvin scale"),
        ("CLASS ACT", "unicode/longs.txt", "a cla\u{17F}s act"),
    ] {
        let arguments = json!({"query": query, "case_sensitive": false});
        let out = same_answer(&indexed, &scanning, "search_project_files", arguments).await;
        assert_eq!(
            matches(&out),
            vec![(file.to_string(), 1, text.to_string())],
            "{query}"
        );
    }
    // Case-sensitive, the folded forms do not match.
    let out = same_answer(
        &indexed,
        &scanning,
        "search_project_files",
        json!({"query": "kelvin scale"}),
    )
    .await;
    assert_eq!(out["count"], 0);
    indexed.stop().await;
    scanning.stop().await;
}

/// How long a test watches for a build that must not start.
const NO_BUILD_WITHIN: Duration = Duration::from_millis(1500);

/// The build waits for the session: not during the handshake (the
/// `initialize` answer is as quick as without an index), but as soon as the
/// client says `initialized`, or at the first call of a client that never
/// says it.
#[tokio::test]
async fn the_build_starts_once_the_session_is_up() {
    let project = generated_tree(50);
    // A server logging to `name` in the outside folder, past `initialize`
    // (and nothing more).
    let started = async |name: &str| {
        let log = project.outside().join(name);
        let args = ["--log-level", "debug", "--log-file", log.to_str().unwrap()];
        let mut server = common::RawServer::start(&project.root, &args);
        server
            .send(&json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "raw-test", "version": "1"}}
            }))
            .await;
        server.recv_id(&json!(0)).await;
        (server, log)
    };

    let (mut polite, polite_log) = started("polite.log").await;
    // That something does not happen can only be seen over a while: long
    // enough for a build of 50 files to finish, had it started.
    assert!(
        !common::log_holds(&polite_log, common::INDEX_READY, NO_BUILD_WITHIN).await,
        "built before `initialized`:\n{}",
        std::fs::read_to_string(&polite_log).unwrap_or_default()
    );
    polite
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    wait_for_index(&polite_log).await;
    polite.finish().await;

    // A client that goes straight to a call: the call starts the build.
    let (mut hasty, hasty_log) = started("hasty.log").await;
    hasty
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "search_project_files",
                                  "arguments": {"query": "needle"}}}))
        .await;
    let answer = hasty.recv_id(&json!(1)).await;
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    wait_for_index(&hasty_log).await;
    hasty.finish().await;
}

/// Folders nested deeper than a client's path may go (256 names): the
/// model holds, lists and finds them as the scan does, before and after a
/// change at the bottom.
// Paths of 900 bytes: beyond what Windows takes without long-path support.
#[cfg(unix)]
#[tokio::test]
async fn a_tree_deeper_than_client_paths_answers_as_the_scan() {
    const LEVELS: usize = 300;
    let project = TempProject::new();
    let mut deep = String::new();
    for level in 0..LEVELS {
        deep.push_str(&format!("d{}/", level % 10));
        if level % 50 == 49 {
            project.write(
                &format!("{deep}at_{level}.txt"),
                format!("deep_token {level}\n"),
            );
        }
    }
    project.write("top.txt", "deep_token top\n");
    #[cfg(unix)]
    beyond_path_max(&project.root.join("far"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (indexed, scanning) = common::indexed_and_scanning_servers(&project).await;
    let compare = async |round: &str| {
        let search = json!({"query": "deep_token", "max_results": 200});
        let out = same_answer(&indexed, &scanning, "search_project_files", search).await;
        let find = json!({"pattern": "**/*.txt", "max_results": 1000});
        let found = same_answer(&indexed, &scanning, "find_project_files", find).await;
        let list = json!({"depth": 20, "max_entries": 2000});
        same_answer(&indexed, &scanning, "list_project_directory", list).await;
        let list = json!({"path": "d0/d1/d2", "depth": 20, "max_entries": 2000});
        same_answer(&indexed, &scanning, "list_project_directory", list).await;
        (
            round.to_string(),
            out["count"].clone(),
            found["count"].clone(),
        )
    };
    let before = compare("before").await;
    // Six files in the deep folders, the top one, and the five of `far`
    // whose paths fit in 4,096 bytes: no walk reaches those below.
    assert_eq!(before.1, json!(12), "{before:?}");
    // A change at the bottom, below the 256th folder.
    project.write(&format!("{deep}bottom.txt"), "deep_token bottom\n");
    let after = compare("after").await;
    assert_ne!(before.1, after.1, "{before:?} {after:?}");
    indexed.stop().await;
    scanning.stop().await;
}

/// Folders below `top` whose paths outgrow what the system takes in one
/// path (4,096 bytes), made one level at a time, a file at every tenth.
#[cfg(unix)]
fn beyond_path_max(top: &std::path::Path) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    std::fs::create_dir_all(top).unwrap();
    let name = std::ffi::CString::new("n".repeat(80)).unwrap();
    let mut folder = std::fs::File::open(top).map(OwnedFd::from).unwrap();
    for level in 0..70 {
        // SAFETY: `folder` is an open directory and `name` a C string.
        let fd = unsafe {
            assert_eq!(libc::mkdirat(folder.as_raw_fd(), name.as_ptr(), 0o755), 0);
            libc::openat(
                folder.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY,
            )
        };
        assert!(fd >= 0);
        // SAFETY: `fd` was just opened and is owned by nothing else.
        folder = unsafe { OwnedFd::from_raw_fd(fd) };
        if level % 10 == 9 {
            let file = std::ffi::CString::new("f.txt").unwrap();
            // SAFETY: as above.
            let fd = unsafe {
                libc::openat(
                    folder.as_raw_fd(),
                    file.as_ptr(),
                    libc::O_WRONLY | libc::O_CREAT,
                    0o644,
                )
            };
            assert!(fd >= 0);
            // SAFETY: `fd` was just opened and is owned by nothing else.
            let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
            std::io::Write::write_all(&mut file, format!("deep_token far {level}\n").as_bytes())
                .unwrap();
        }
    }
}

/// Bytes read so far by the threads of process `pid` other than the
/// model's own ("index-build", "index-background", "index-changes"): what
/// tool calls read.
#[cfg(target_os = "linux")]
fn read_by_calls(pid: u32) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks") {
        let task = task.expect("task").path();
        let name = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if name.starts_with("index-") {
            continue;
        }
        let io = std::fs::read_to_string(task.join("io")).unwrap_or_default();
        total += io
            .lines()
            .find_map(|line| line.strip_prefix("rchar: "))
            .and_then(|value| value.parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}

/// After a bulk change (a branch switch), a call does not re-read the
/// changed files for the index: they are candidates the searcher verifies
/// until the background re-indexes them, so `find` reads no file at all
/// and a search gives the scan's answer.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn calls_after_a_bulk_change_leave_re_indexing_to_the_background() {
    const FILES: usize = 3_000;
    let project = generated_tree(FILES);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = project.outside().join("indexed.log");
    let args = ["--log-level", "debug", "--log-file", log.to_str().unwrap()];
    let mut server = common::RawServer::start(&project.root, &args);
    server.initialize("2025-06-18").await;
    let pid = server.child.id().expect("pid");
    wait_for_index(&log).await;
    let padding = "appended line to make the change worth reading\n".repeat(60);
    let (mut appended, mut changed) = (0, 0);
    for entry in walkdir_files(&project.root).into_iter().filter(|path| {
        let name = path.file_name().unwrap().to_string_lossy();
        name.starts_with('f') && !path.to_string_lossy().contains("ignored_dir")
    }) {
        let mut text = std::fs::read_to_string(&entry).unwrap();
        text.push_str(&padding);
        text.push_str(&format!(
            "bulk_{}\n",
            entry.file_stem().unwrap().to_string_lossy()
        ));
        std::fs::write(&entry, text).unwrap();
        appended += padding.len();
        changed += 1;
    }
    let call = |id: u64, tool: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}})
    };
    let before = read_by_calls(pid);
    server
        .send(&call(
            1,
            "find_project_files",
            json!({"pattern": "**/f1*.rs"}),
        ))
        .await;
    let answer = server.recv_id(&json!(1)).await;
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    let read = read_by_calls(pid) - before;
    // The call reads the change notifications (a few dozen bytes per
    // change) and its request, not the files.
    let notifications = changed * 256 + 64 * 1024;
    assert!(notifications < appended / 4);
    assert!(
        read < notifications as u64,
        "find read {read} bytes after {appended} bytes were appended to {changed} files"
    );
    // The changed files are verified by the searcher meanwhile.
    server
        .send(&call(
            2,
            "search_project_files",
            json!({"query": "bulk_f1003"}),
        ))
        .await;
    let answer = server.recv_id(&json!(2)).await;
    let files: Vec<&str> = answer["result"]["structuredContent"]["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|hit| hit["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["m3/s0/f1003.md"], "{answer}");
    server.finish().await;
}

/// Every regular file below `dir`, symlinks not followed.
#[cfg(target_os = "linux")]
fn walkdir_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files
}

/// A bulk change while no call runs, of more files than the kernel's queue
/// of changes holds unread (`fs.inotify.max_queued_events`), is collected
/// as it happens: no change is lost, and the background indexes the files
/// before any call asks.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_bulk_change_while_no_call_runs_is_followed_as_it_happens() {
    let project = generated_tree(50);
    let log = project.outside().join("bulk.log");
    let args = ["--log-level", "debug", "--log-file", log.to_str().unwrap()];
    let server = Server::start_with(&project.root, &args, &[]).await;
    wait_for_index(&log).await;
    let queued = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
        .unwrap_or(16_384);
    // Each new file queues at least CREATE, MODIFY and CLOSE_WRITE.
    let files = queued / 2 + 64;
    std::fs::create_dir(project.root.join("bulk")).unwrap();
    for index in 0..files {
        let path = project.root.join(format!("bulk/{index}.txt"));
        std::fs::write(path, format!("bulk_word_{index}\n")).unwrap();
        if index % 500 == 499 {
            // A checkout's pace (about 20,000 files a second), far above
            // what the queue holds unread.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // The background reads them with no call made: their layers are
    // written to the cache once it has nothing left to read.
    let stored = "index cache: wrote segments";
    let stores_before = std::fs::read_to_string(&log)
        .unwrap()
        .matches(stored)
        .count();
    common::eventually("the background stored the new files' layers", || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.matches(stored).count() > stores_before)
    })
    .await;
    let last = format!("bulk_word_{}", files - 1);
    let found = matches(
        &server
            .ok("search_project_files", json!({"query": last}))
            .await,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, format!("bulk/{}.txt", files - 1));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("change notifications were lost"),
        "the queue overflowed:\n{text}"
    );
    server.stop().await;
}

/// The server's own log file inside the project is hidden from every tool,
/// and the lines the index's work writes to it start no more work.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_log_file_inside_the_project_is_hidden_and_starts_no_work() {
    let project = generated_tree(50);
    std::fs::create_dir(project.root.join("logs")).unwrap();
    // A name the project's ignore files (`*.log`) do not hide.
    let log = project.root.join("logs/server [1].out");
    let args = ["--log-level", "debug", "--log-file", log.to_str().unwrap()];
    let server = Server::start_with(&project.root, &args, &[]).await;
    wait_for_index(&log).await;
    let listed = server
        .ok("list_project_directory", json!({"path": "logs"}))
        .await;
    assert_eq!(listed["entries"], json!([]), "{listed}");
    server
        .err_saying(
            "read_project_file",
            json!({"path": "logs/server [1].out"}),
            "deny-list",
        )
        .await;
    // Quiet from now on: nothing changes but the log itself.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let quiet = std::fs::read_to_string(&log).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let later = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        later.lines().count(),
        quiet.lines().count(),
        "the log kept growing while nothing changed:\n{}",
        &later[quiet.len()..]
    );
    server.stop().await;
}
