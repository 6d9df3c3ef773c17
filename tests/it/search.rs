//! search_project_files through the real binary, to the SPEC: substring and
//! regex matching, case, glob and path filters, context lines, the three
//! output modes, paging, caps, and every kind of file it must skip.

use crate::common::{Server, TempProject, hit, matches, strings};
use serde_json::json;

const TWO_MIB: usize = 2 * 1024 * 1024;

fn sample_project() -> TempProject {
    let project = TempProject::new();
    project
        .write(
            "a/one.py",
            "import os\ndef find_needle(hay):\n    return hay.index('needle')\n\nNEEDLE = 'loud'\n",
        )
        .write("a/two.rs", "fn needle() -> u8 {\n    0\n}\n")
        .write(
            "b/three.txt",
            "nothing here\na.c literal dot\nabc regex only\n",
        )
        .write(".github/ci.yml", "name: needle-ci\n");
    project
}

#[tokio::test]
async fn default_is_a_case_sensitive_substring_sorted_by_path_then_line() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("search_project_files", json!({"query": "needle"}))
        .await;
    assert_eq!(out["query"], "needle");
    assert_eq!(out["path"], ".");
    assert_eq!(
        matches(&out),
        vec![
            hit(".github/ci.yml", 1, "name: needle-ci"),
            hit("a/one.py", 2, "def find_needle(hay):"),
            hit("a/one.py", 3, "    return hay.index('needle')"),
            hit("a/two.rs", 1, "fn needle() -> u8 {"),
        ]
    );
    assert_eq!(out["count"], 4);
    assert_eq!(out["truncated"], false);
    server.stop().await;
}

#[tokio::test]
async fn case_insensitive_search() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "case_sensitive": false}),
        )
        .await;
    assert_eq!(out["count"], 5);
    assert!(matches(&out).contains(&hit("a/one.py", 5, "NEEDLE = 'loud'")));

    let out = server
        .ok("search_project_files", json!({"query": "NEEDLE"}))
        .await;
    assert_eq!(matches(&out), vec![hit("a/one.py", 5, "NEEDLE = 'loud'")]);
    server.stop().await;
}

#[tokio::test]
async fn substring_is_literal_and_regex_is_opt_in() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("search_project_files", json!({"query": "a.c"}))
        .await;
    assert_eq!(
        matches(&out),
        vec![hit("b/three.txt", 2, "a.c literal dot")]
    );

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "a.c", "regex": true}),
        )
        .await;
    assert_eq!(
        matches(&out),
        vec![
            hit("b/three.txt", 2, "a.c literal dot"),
            hit("b/three.txt", 3, "abc regex only")
        ]
    );

    let out = server
        .ok(
            "search_project_files",
            json!({"query": r"fn \w+\(", "regex": true}),
        )
        .await;
    assert_eq!(
        matches(&out),
        vec![hit("a/two.rs", 1, "fn needle() -> u8 {")]
    );

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "^needle", "regex": true, "case_sensitive": false}),
        )
        .await;
    assert_eq!(matches(&out), vec![hit("a/one.py", 5, "NEEDLE = 'loud'")]);

    // A regex metacharacter is fine as a literal...
    let out = server
        .ok("search_project_files", json!({"query": "("}))
        .await;
    assert_eq!(out["count"], 3);
    // ...and a tool error as a broken regex.
    let message = server
        .err("search_project_files", json!({"query": "(", "regex": true}))
        .await;
    assert!(message.to_lowercase().contains("regex"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn glob_and_path_narrow_the_files() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "glob": "*.py"}),
        )
        .await;
    assert_eq!(
        matches(&out)
            .iter()
            .map(|m| m.0.as_str())
            .collect::<Vec<_>>(),
        vec!["a/one.py", "a/one.py"]
    );

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "glob": "a/*.rs"}),
        )
        .await;
    assert_eq!(
        matches(&out),
        vec![hit("a/two.rs", 1, "fn needle() -> u8 {")]
    );

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "glob": "**/*.{yml,rs}"}),
        )
        .await;
    assert_eq!(out["count"], 2);

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "path": "a", "glob": "*.rs"}),
        )
        .await;
    assert_eq!(out["path"], "a");
    assert_eq!(
        matches(&out),
        vec![hit("a/two.rs", 1, "fn needle() -> u8 {")]
    );

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "path": "b"}),
        )
        .await;
    assert_eq!(out["count"], 0);
    assert_eq!(out["matches"], json!([]));
    assert_eq!(out["truncated"], false);

    let message = server
        .err(
            "search_project_files",
            json!({"query": "needle", "glob": "a/[x"}),
        )
        .await;
    assert!(message.contains("glob"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn context_lines_add_before_and_after() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "find_needle", "context_lines": 1}),
        )
        .await;
    assert_eq!(out["count"], 1);
    let found = &out["matches"][0];
    assert_eq!(found["line"], 2);
    assert_eq!(strings(&found["before"]), vec!["import os"]);
    assert_eq!(
        strings(&found["after"]),
        vec!["    return hay.index('needle')"]
    );

    // Ten lines asked, fewer exist: the arrays stop at the file's edges.
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "find_needle", "context_lines": 10}),
        )
        .await;
    let found = &out["matches"][0];
    assert_eq!(strings(&found["before"]), vec!["import os"]);
    assert_eq!(
        strings(&found["after"]),
        vec!["    return hay.index('needle')", "", "NEEDLE = 'loud'"]
    );
    server.stop().await;
}

#[tokio::test]
async fn output_mode_files_with_matches_and_count() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "output_mode": "files_with_matches"}),
        )
        .await;
    assert_eq!(
        strings(&out["files"]),
        vec![".github/ci.yml", "a/one.py", "a/two.rs"]
    );
    assert_eq!(out["count"], 3);
    assert_eq!(out["truncated"], false);

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "output_mode": "count"}),
        )
        .await;
    assert_eq!(
        out["counts"],
        json!([
            {"file": ".github/ci.yml", "count": 1},
            {"file": "a/one.py", "count": 2},
            {"file": "a/two.rs", "count": 1}
        ])
    );
    assert_eq!(out["count"], 3);

    let message = server
        .err(
            "search_project_files",
            json!({"query": "needle", "output_mode": "lines"}),
        )
        .await;
    assert!(
        message.contains("output_mode") || message.contains("files_with_matches"),
        "{message}"
    );
    server.stop().await;
}

#[tokio::test]
async fn offset_pages_through_the_results() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let all = matches(
        &server
            .ok("search_project_files", json!({"query": "needle"}))
            .await,
    );
    assert_eq!(all.len(), 4);

    let first = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "max_results": 2}),
        )
        .await;
    assert_eq!(matches(&first), all[..2]);
    assert_eq!(first["count"], 2);
    assert_eq!(first["truncated"], true);

    let middle = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "max_results": 2, "offset": 1}),
        )
        .await;
    assert_eq!(matches(&middle), all[1..3]);
    assert_eq!(middle["truncated"], true);

    let last = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "max_results": 2, "offset": 2}),
        )
        .await;
    assert_eq!(matches(&last), all[2..]);
    assert_eq!(last["truncated"], false);

    let past = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "offset": 10}),
        )
        .await;
    assert_eq!(past["count"], 0);
    assert_eq!(past["truncated"], false);

    let files = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "output_mode": "files_with_matches", "offset": 1, "max_results": 1}),
        )
        .await;
    assert_eq!(strings(&files["files"]), vec!["a/one.py"]);
    assert_eq!(files["truncated"], true);
    server.stop().await;
}

#[tokio::test]
async fn max_results_defaults_to_50_and_is_capped_at_200() {
    let project = TempProject::new();
    let text: String = (1..=300).map(|i| format!("hit {i}\n")).collect();
    project.write("many.txt", &text);
    let server = Server::start(&project.root).await;

    let out = server
        .ok("search_project_files", json!({"query": "hit"}))
        .await;
    assert_eq!(out["count"], 50);
    assert_eq!(out["truncated"], true);

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "hit", "max_results": 1000}),
        )
        .await;
    assert_eq!(out["count"], 200);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["matches"][199]["line"], 200);
    assert_eq!(out["matches"][199]["text"], "hit 200");

    let out = server
        .ok(
            "search_project_files",
            json!({"query": "hit", "offset": 250, "max_results": 200}),
        )
        .await;
    assert_eq!(out["count"], 50);
    assert_eq!(out["matches"][0]["line"], 251);
    assert_eq!(out["truncated"], false);
    server.stop().await;
}

#[tokio::test]
async fn long_lines_are_cut_to_300_characters() {
    let project = TempProject::new();
    let ascii = format!("0123456789needle{}", "x".repeat(2000));
    let wide = format!("needle{}", "é".repeat(1000));
    project.write("long.txt", format!("{ascii}\n{wide}\nshort needle\n"));
    let server = Server::start(&project.root).await;
    let out = server
        .ok("search_project_files", json!({"query": "needle"}))
        .await;
    assert_eq!(out["count"], 3);
    for found in out["matches"].as_array().unwrap() {
        let text = found["text"].as_str().unwrap();
        // 300 characters, plus at most one marker character for the cut.
        assert!(
            text.chars().count() <= 301,
            "{} chars",
            text.chars().count()
        );
    }
    let first = out["matches"][0]["text"].as_str().unwrap();
    assert!(first.starts_with("0123456789needle"), "{first}");
    let second = out["matches"][1]["text"].as_str().unwrap();
    assert!(second.starts_with("needleé"), "{second}");
    assert_eq!(out["matches"][2]["text"], "short needle");
    server.stop().await;
}

#[tokio::test]
async fn skips_binary_huge_ignored_skip_listed_and_denied_files() {
    let project = sample_project();
    project
        .write("bin/zero.dat", b"needle\0binary")
        .write("bin/latin1.txt", b"needle caf\xe9\n")
        .write(".venv/lib/x.py", "needle")
        .write("app/__pycache__/x.py", "needle")
        .write("node_modules/m/x.js", "needle")
        .write("target/debug/x.rs", "needle")
        .write("pkg.egg-info/PKG-INFO", "needle")
        .write("ignored/x.txt", "needle")
        .write("scratch/x.txt", "needle")
        .write(".gitignore", "ignored/\n")
        .write(".ignore", "scratch/\n")
        .write(".env", "needle=1\n")
        .write("config/.env.local", "needle=1\n")
        .write("keys/server.pem", "needle")
        .write("keys/server.key", "needle")
        .write("id_rsa", "needle")
        .write("id_ed25519.pub", "needle");
    let mut huge = "needle\n".to_string();
    huge.push_str(&"z".repeat(TWO_MIB));
    project.write("big/huge.txt", &huge);
    let mut limit = "needle at the limit\n".to_string();
    limit.push_str(&"z".repeat(TWO_MIB - limit.len()));
    assert_eq!(limit.len(), TWO_MIB);
    project.write("big/limit.txt", &limit);
    std::fs::create_dir_all(project.root.join(".git")).unwrap();
    std::fs::write(project.root.join(".git/config"), "needle").unwrap();

    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "needle", "output_mode": "files_with_matches"}),
        )
        .await;
    assert_eq!(
        strings(&out["files"]),
        vec![".github/ci.yml", "a/one.py", "a/two.rs", "big/limit.txt"],
        "only text files of at most 2 MiB that no rule excludes"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_missing_path_is_explained() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let message = server
        .err(
            "search_project_files",
            json!({"query": "needle", "path": "nope"}),
        )
        .await;
    assert!(message.contains("does not exist"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn unicode_lines_and_queries() {
    let project = TempProject::new();
    project.write("i18n.txt", "Größe: 5\nSTRASSE\n日本語のテキスト\n");
    let server = Server::start(&project.root).await;
    let out = server
        .ok("search_project_files", json!({"query": "öß"}))
        .await;
    assert_eq!(matches(&out), vec![hit("i18n.txt", 1, "Größe: 5")]);
    let out = server
        .ok("search_project_files", json!({"query": "本語"}))
        .await;
    assert_eq!(matches(&out), vec![hit("i18n.txt", 3, "日本語のテキスト")]);
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "GRÖSSE", "case_sensitive": false}),
        )
        .await;
    assert_eq!(out["count"], 0, "ß is not ss");
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "GRÖ", "case_sensitive": false}),
        )
        .await;
    assert_eq!(matches(&out), vec![hit("i18n.txt", 1, "Größe: 5")]);
    let out = server
        .ok(
            "search_project_files",
            json!({"query": "strasse", "case_sensitive": false}),
        )
        .await;
    assert_eq!(matches(&out), vec![hit("i18n.txt", 2, "STRASSE")]);
    server.stop().await;
}

/// In a UTF-8 file with a byte-order mark, the match and its context lines
/// come from the same text (the file less its mark), with the index on and
/// off, in a small file and deep into a large one whose bytes past the
/// binary sniff are not all UTF-8.
#[tokio::test]
async fn context_lines_of_a_file_with_a_byte_order_mark() {
    let project = TempProject::new();
    project.write(
        "small.txt",
        "\u{FEFF}before 1\nbefore 2\nmatch_small\nafter 1\nafter 2\n",
    );
    let mut large = b"\xEF\xBB\xBF".to_vec();
    for line in 0..6_000 {
        if line == 1_000 {
            large.extend_from_slice(b"bad \xFF\xFE byte\n");
        }
        large.extend_from_slice(format!("line {line}\n").as_bytes());
        if line == 4_000 {
            large.extend_from_slice(b"match_large\n");
        }
    }
    project.write("large.txt", &large);
    let no_index = project.outside().join("no-index.toml");
    std::fs::write(&no_index, "[index]\nenabled = false\n").unwrap();
    let indexed = Server::start(&project.root).await;
    let scanning = Server::start_with(
        &project.root,
        &["--config", no_index.to_str().unwrap()],
        &[],
    )
    .await;
    /// A query, its context lines, and the first match expected.
    struct Case {
        query: &'static str,
        lines: u64,
        file: &'static str,
        line: u64,
        text: &'static str,
        before: &'static [&'static str],
        after: &'static [&'static str],
    }
    let cases = [
        Case {
            query: "match_small",
            lines: 2,
            file: "small.txt",
            line: 3,
            text: "match_small",
            before: &["before 1", "before 2"],
            after: &["after 1", "after 2"],
        },
        Case {
            query: "line 0",
            lines: 1,
            file: "large.txt",
            line: 1,
            text: "line 0",
            before: &[],
            after: &["line 1"],
        },
        Case {
            query: "match_large",
            lines: 2,
            file: "large.txt",
            line: 4_003,
            text: "match_large",
            before: &["line 3999", "line 4000"],
            after: &["line 4001", "line 4002"],
        },
        Case {
            query: "bad ",
            lines: 1,
            file: "large.txt",
            line: 1_001,
            text: "bad \u{FFFD}\u{FFFD} byte",
            before: &["line 999"],
            after: &["line 1000"],
        },
    ];
    for server in [&indexed, &scanning] {
        for case in &cases {
            let out = server
                .ok(
                    "search_project_files",
                    json!({"query": case.query, "context_lines": case.lines}),
                )
                .await;
            let first = &out["matches"][0];
            let query = case.query;
            assert_eq!(first["file"], case.file, "{query}: {out}");
            assert_eq!(first["line"], case.line, "{query}: {out}");
            assert_eq!(first["text"], case.text, "{query}: {out}");
            assert_eq!(strings(&first["before"]), case.before, "{query}: {out}");
            assert_eq!(strings(&first["after"]), case.after, "{query}: {out}");
        }
    }
    indexed.stop().await;
    scanning.stop().await;
}
