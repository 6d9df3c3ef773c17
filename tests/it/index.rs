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
        let fifo = std::ffi::CString::new(root.join("pipe.txt").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    }
    project
}

/// The indexed server (debug log in `log`) and a scanning one.
async fn two_servers(project: &TempProject) -> (Server, Server) {
    let outside = project.outside();
    let log = outside.join("indexed.log");
    let no_index = outside.join("no-index.toml");
    std::fs::write(&no_index, "[index]\nenabled = false\n").unwrap();
    let indexed = Server::start_with(
        &project.root,
        &["--log-level", "debug", "--log-file", log.to_str().unwrap()],
        &[],
    )
    .await;
    let scanning = Server::start_with(
        &project.root,
        &["--config", no_index.to_str().unwrap()],
        &[],
    )
    .await;
    wait_for_index(&log).await;
    (indexed, scanning)
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
    // such files are always candidates; let most of the tree settle so the
    // index really narrows.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (indexed, scanning) = two_servers(&project).await;
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
    indexed.stop().await;
    scanning.stop().await;
}

#[tokio::test]
async fn unicode_case_folding_matches_with_the_index() {
    let project = generated_tree(200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (indexed, scanning) = two_servers(&project).await;
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
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let log = std::fs::read_to_string(&polite_log).unwrap_or_default();
    assert!(
        !log.contains("index ready"),
        "built before `initialized`:\n{log}"
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
