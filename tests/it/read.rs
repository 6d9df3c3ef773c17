//! read_project_file through the real binary: whole files, line ranges, the
//! 200 KiB cap, and every refusal (folders, missing, binary, special files).

use crate::common::{Server, TempProject};
use serde_json::json;

const CAP: usize = 200 * 1024;

fn sample_project() -> TempProject {
    let project = TempProject::new();
    project
        .write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n")
        .write("notes/no_newline.txt", "one\ntwo\nthree")
        .write("notes/crlf.txt", "a\r\nb\r\n")
        .write("notes/empty.txt", "")
        .write("notes/utf8.txt", "grüße\n日本語\n🦀\n")
        .write(".github/workflows/ci.yml", "on: push\n")
        .write(".env.example", "API_KEY=\n")
        .write("bin/zero.dat", b"text\0more")
        .write("bin/latin1.txt", b"caf\xe9 au lait\n")
        .write(
            "lines.txt",
            (1..=10).map(|i| format!("line {i}\n")).collect::<String>(),
        );
    project
}

#[tokio::test]
async fn reads_a_whole_file_with_its_metadata() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("read_project_file", json!({"path": "src/main.rs"}))
        .await;
    assert_eq!(out["file"], "src/main.rs");
    assert_eq!(out["content"], "fn main() {\n    println!(\"hi\");\n}\n");
    assert_eq!(out["size"], 34);
    assert_eq!(out["truncated"], false);
    assert_eq!(out["start_line"], 1);
    assert_eq!(out["end_line"], 3);
    assert_eq!(out["total_lines"], 3);
    server.stop().await;
}

#[tokio::test]
async fn reads_line_ranges_inclusive_and_clamps_the_end() {
    let project = sample_project();
    let server = Server::start(&project.root).await;

    let out = server
        .ok(
            "read_project_file",
            json!({"path": "lines.txt", "start_line": 3, "end_line": 5}),
        )
        .await;
    assert_eq!(out["content"], "line 3\nline 4\nline 5\n");
    assert_eq!(
        (out["start_line"].clone(), out["end_line"].clone()),
        (json!(3), json!(5))
    );
    assert_eq!(out["total_lines"], 10);
    // size is the whole file's, not the slice's
    assert_eq!(
        out["size"],
        std::fs::metadata(project.root.join("lines.txt"))
            .unwrap()
            .len()
    );

    let out = server
        .ok(
            "read_project_file",
            json!({"path": "lines.txt", "start_line": 9, "end_line": 500}),
        )
        .await;
    assert_eq!(out["content"], "line 9\nline 10\n");
    assert_eq!(out["end_line"], 10);

    let out = server
        .ok(
            "read_project_file",
            json!({"path": "lines.txt", "start_line": 10}),
        )
        .await;
    assert_eq!(out["content"], "line 10\n");

    let out = server
        .ok(
            "read_project_file",
            json!({"path": "lines.txt", "end_line": 1}),
        )
        .await;
    assert_eq!(out["content"], "line 1\n");
    assert_eq!(out["start_line"], 1);

    let out = server
        .ok(
            "read_project_file",
            json!({"path": "lines.txt", "start_line": 4, "end_line": 4}),
        )
        .await;
    assert_eq!(out["content"], "line 4\n");
    server.stop().await;
}

#[tokio::test]
async fn null_range_means_the_whole_file() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "read_project_file",
            json!({"path": "lines.txt", "start_line": null, "end_line": null}),
        )
        .await;
    assert_eq!(out["total_lines"], 10);
    assert_eq!(out["end_line"], 10);
    server.stop().await;
}

#[tokio::test]
async fn bad_ranges_are_tool_errors_that_explain() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let message = server
        .err(
            "read_project_file",
            json!({"path": "lines.txt", "start_line": 0}),
        )
        .await;
    assert!(
        message.contains("start_line") && message.contains("1"),
        "{message}"
    );

    let message = server
        .err(
            "read_project_file",
            json!({"path": "lines.txt", "start_line": 5, "end_line": 4}),
        )
        .await;
    assert!(
        message.contains("end_line") && message.contains("start_line"),
        "{message}"
    );

    let message = server
        .err(
            "read_project_file",
            json!({"path": "lines.txt", "start_line": 11}),
        )
        .await;
    assert!(message.contains("10 lines"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn line_endings_and_unicode_are_kept() {
    let project = sample_project();
    let server = Server::start(&project.root).await;

    let out = server
        .ok("read_project_file", json!({"path": "notes/crlf.txt"}))
        .await;
    assert_eq!(out["content"], "a\r\nb\r\n");
    assert_eq!(out["total_lines"], 2);

    let out = server
        .ok("read_project_file", json!({"path": "notes/no_newline.txt"}))
        .await;
    assert_eq!(out["content"], "one\ntwo\nthree");
    assert_eq!(out["total_lines"], 3);
    assert_eq!(out["end_line"], 3);

    let out = server
        .ok(
            "read_project_file",
            json!({"path": "notes/utf8.txt", "start_line": 2}),
        )
        .await;
    assert_eq!(out["content"], "日本語\n🦀\n");

    let out = server
        .ok("read_project_file", json!({"path": "notes/empty.txt"}))
        .await;
    assert_eq!(out["content"], "");
    assert_eq!(out["size"], 0);
    assert_eq!(out["total_lines"], 0);
    assert_eq!(out["truncated"], false);
    server.stop().await;
}

#[tokio::test]
async fn path_spellings_are_normalized_to_slash_relative() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    for spelling in [
        "src/main.rs",
        "./src/main.rs",
        "src\\main.rs",
        "src/../src/main.rs",
        "src//main.rs",
        " src/main.rs ",
    ] {
        let out = server
            .ok("read_project_file", json!({"path": spelling}))
            .await;
        assert_eq!(out["file"], "src/main.rs", "{spelling:?}");
        assert_eq!(out["total_lines"], 3, "{spelling:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn hidden_files_and_secret_templates_are_readable() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "read_project_file",
            json!({"path": ".github/workflows/ci.yml"}),
        )
        .await;
    assert_eq!(out["content"], "on: push\n");
    let out = server
        .ok("read_project_file", json!({"path": ".env.example"}))
        .await;
    assert_eq!(out["content"], "API_KEY=\n");
    server.stop().await;
}

#[tokio::test]
async fn folders_missing_files_and_empty_paths_are_refused() {
    let project = sample_project();
    let server = Server::start(&project.root).await;

    let message = server
        .err("read_project_file", json!({"path": "src"}))
        .await;
    assert!(message.contains("directory"), "{message}");
    let message = server.err("read_project_file", json!({"path": "."})).await;
    assert!(message.contains("directory"), "{message}");

    let message = server
        .err("read_project_file", json!({"path": "src/nope.rs"}))
        .await;
    assert!(message.contains("does not exist"), "{message}");
    assert!(message.contains("src/nope.rs"), "{message}");

    let message = server.err("read_project_file", json!({"path": ""})).await;
    assert!(message.contains("empty"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn binary_files_are_refused() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let message = server
        .err("read_project_file", json!({"path": "bin/zero.dat"}))
        .await;
    assert!(message.contains("binary"), "{message}");
    let message = server
        .err("read_project_file", json!({"path": "bin/latin1.txt"}))
        .await;
    assert!(message.contains("binary"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn binary_bytes_after_the_first_4_kib_do_not_make_a_file_binary() {
    let project = TempProject::new();
    let mut bytes = "a".repeat(5000).into_bytes();
    bytes.extend_from_slice(b"\n\xff\n");
    project.write("late.txt", &bytes);
    let server = Server::start(&project.root).await;
    let out = server
        .ok("read_project_file", json!({"path": "late.txt"}))
        .await;
    let content = out["content"].as_str().unwrap();
    assert!(content.starts_with(&"a".repeat(5000)));
    assert!(content.contains('\u{FFFD}'), "the invalid byte is replaced");
    assert_eq!(out["total_lines"], 2);
    server.stop().await;
}

#[tokio::test]
async fn content_is_capped_at_200_kib_on_a_char_boundary() {
    let project = TempProject::new();
    // 3-byte characters, so that the cap falls inside a character.
    let text = "語".repeat(CAP / 3 + 100);
    project.write("wide.txt", &text);
    let server = Server::start(&project.root).await;
    let out = server
        .ok("read_project_file", json!({"path": "wide.txt"}))
        .await;
    let content = out["content"].as_str().unwrap();
    assert_eq!(out["truncated"], true);
    assert!(content.len() <= CAP, "{} bytes", content.len());
    assert!(content.len() > CAP - 3, "only the cut character is dropped");
    assert!(text.starts_with(content));
    assert_eq!(out["size"], text.len());
    assert_eq!(out["total_lines"], 1);
    server.stop().await;
}

#[tokio::test]
async fn a_file_of_exactly_200_kib_is_not_truncated() {
    let project = TempProject::new();
    let text = "x".repeat(CAP);
    project.write("exact.txt", &text);
    let server = Server::start(&project.root).await;
    let out = server
        .ok("read_project_file", json!({"path": "exact.txt"}))
        .await;
    assert_eq!(out["truncated"], false);
    assert_eq!(out["content"].as_str().unwrap().len(), CAP);
    server.stop().await;
}

#[tokio::test]
async fn a_truncated_read_can_be_continued_with_a_later_start_line() {
    let project = TempProject::new();
    // 3,000 lines of 101 bytes: the cap falls in the middle of line 2,028.
    let text: String = (1..=3000).map(|i| format!("{i:0>100}\n")).collect();
    project.write("long.txt", &text);
    let server = Server::start(&project.root).await;

    let first = server
        .ok("read_project_file", json!({"path": "long.txt"}))
        .await;
    let content = first["content"].as_str().unwrap();
    assert_eq!(first["truncated"], true);
    assert_eq!(content.len(), CAP);
    assert!(text.starts_with(content));
    assert_eq!(
        first["end_line"], 2028,
        "the last line returned is the partial one"
    );
    assert_eq!(first["total_lines"], 3000);

    let rest = server
        .ok(
            "read_project_file",
            json!({"path": "long.txt", "start_line": 2028}),
        )
        .await;
    assert_eq!(rest["truncated"], false);
    assert_eq!(rest["end_line"], 3000);
    let rest_content = rest["content"].as_str().unwrap();
    assert!(rest_content.starts_with(&format!("{:0>100}\n", 2028)));
    assert!(text.ends_with(rest_content));
    server.stop().await;
}

/// When the cap falls exactly at a line end, `end_line` must name the last
/// line actually in `content`; otherwise a client that reads on from
/// `end_line + 1` silently skips a whole line.
#[tokio::test]
async fn a_cut_exactly_at_a_line_end_reports_the_last_full_line() {
    let project = TempProject::new();
    // 100-byte lines: 2,048 of them fill 200 KiB exactly.
    let text: String = (1..=3000).map(|i| format!("{i:0>99}\n")).collect();
    project.write("even.txt", &text);
    let server = Server::start(&project.root).await;
    let out = server
        .ok("read_project_file", json!({"path": "even.txt"}))
        .await;
    let content = out["content"].as_str().unwrap();
    assert_eq!(out["truncated"], true);
    assert_eq!(content.len(), CAP);
    assert!(content.ends_with('\n'));
    assert_eq!(out["end_line"], 2048);
    server.stop().await;
}

#[tokio::test]
async fn a_range_deep_in_a_large_file_is_returned_exactly() {
    let project = TempProject::new();
    let text: String = (1..=100_000).map(|i| format!("row {i}\n")).collect();
    project.write("big.txt", &text);
    let server = Server::start(&project.root).await;
    let out = server
        .ok(
            "read_project_file",
            json!({"path": "big.txt", "start_line": 99_998, "end_line": 100_000}),
        )
        .await;
    assert_eq!(out["content"], "row 99998\nrow 99999\nrow 100000\n");
    assert_eq!(out["total_lines"], 100_000);
    assert_eq!(out["truncated"], false);
    server.stop().await;
}
