//! get_docs through the real binary, to the SPEC: Markdown under the docs
//! root split into sections at headings; with a query the matching sections,
//! best first; without one, one entry per file; caps on results and
//! snippets; `--docs` moves the docs root.

use crate::common::{self, Server, TempProject, demo_root};
use serde_json::{Value, json};

fn sample_project() -> TempProject {
    let project = TempProject::new();
    let architecture =
        std::fs::read_to_string(demo_root().join("docs/architecture.md")).expect("demo docs");
    project
        .write("docs/architecture.md", architecture)
        .write(
            "docs/guide.md",
            "# Guide\n\nHow to get started.\n\n## Install\n\nRun cargo install; a widget appears.\n\n\
             ## Widget\n\nThe widget is configured per widget file; every widget has a name.\n",
        )
        .write("docs/sub/deep.md", "# Deep\n\nNested page about widgets.\n")
        .write("docs/notes.txt", "widget in a text file\n")
        .write("README.md", "# Readme\n\nwidget outside the docs root\n");
    project
}

/// `(file, heading)` of every result.
fn hits(out: &Value) -> Vec<(String, String)> {
    out["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results array: {out}"))
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["heading"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_query_finds_the_matching_section() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server.ok("get_docs", json!({"query": "whitelist"})).await;
    assert_eq!(out["query"], "whitelist");
    let first = &out["results"][0];
    assert_eq!(first["file"], "architecture.md");
    assert_eq!(first["heading"], "Whitelist");
    let snippet = first["snippet"].as_str().unwrap();
    assert!(snippet.contains("run_project_check"), "{snippet}");
    assert_eq!(out["count"], out["results"].as_array().unwrap().len());
    assert_eq!(out["truncated"], false);
    server.stop().await;
}

#[tokio::test]
async fn matching_ignores_case() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let lower = server.ok("get_docs", json!({"query": "security"})).await;
    let upper = server.ok("get_docs", json!({"query": "SECURITY"})).await;
    assert_eq!(hits(&lower), hits(&upper));
    assert_eq!(
        hits(&lower)[0],
        ("architecture.md".into(), "Security".into())
    );
    server.stop().await;
}

#[tokio::test]
async fn best_matches_come_first_and_only_markdown_in_the_docs_root_counts() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server.ok("get_docs", json!({"query": "widget"})).await;
    let found = hits(&out);
    assert_eq!(found[0], ("guide.md".into(), "Widget".into()), "{found:?}");
    assert!(
        found.contains(&("guide.md".into(), "Install".into())),
        "{found:?}"
    );
    assert!(
        found.contains(&("sub/deep.md".into(), "Deep".into())),
        "{found:?}"
    );
    assert_eq!(
        found.len(),
        3,
        "README.md is outside the docs root, notes.txt is not Markdown: {found:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn without_a_query_there_is_one_entry_per_file() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server.ok("get_docs", json!({})).await;
    let files: Vec<String> = hits(&out).into_iter().map(|(file, _)| file).collect();
    assert_eq!(files, vec!["architecture.md", "guide.md", "sub/deep.md"]);
    assert_eq!(out["count"], 3);
    assert_eq!(out["truncated"], false);
    server.stop().await;
}

#[tokio::test]
async fn no_match_is_an_empty_success() {
    let project = sample_project();
    let server = Server::start(&project.root).await;
    let out = server
        .ok("get_docs", json!({"query": "no-such-word-anywhere"}))
        .await;
    assert_eq!(out["results"], json!([]));
    assert_eq!(out["count"], 0);
    assert_eq!(out["truncated"], false);
    server.stop().await;
}

#[tokio::test]
async fn snippets_are_capped_at_800_characters() {
    let project = TempProject::new();
    let body = "zebra ".repeat(1000);
    project.write(
        "docs/long.md",
        format!("# Long\n\n{body}\n\n## Wide\n\n{}\n", "é".repeat(2000)),
    );
    let server = Server::start(&project.root).await;
    let out = server.ok("get_docs", json!({"query": "zebra"})).await;
    assert_eq!(
        hits(&out),
        vec![("long.md".to_string(), "Long".to_string())]
    );
    let snippet = out["results"][0]["snippet"].as_str().unwrap();
    // 800 characters, plus at most one marker character for the cut.
    assert!(
        snippet.chars().count() <= 801,
        "{} chars",
        snippet.chars().count()
    );
    assert!(snippet.contains("zebra zebra"));

    let out = server.ok("get_docs", json!({"query": "wide"})).await;
    let snippet = out["results"][0]["snippet"].as_str().unwrap();
    assert!(
        snippet.chars().count() <= 801,
        "{} chars",
        snippet.chars().count()
    );
    server.stop().await;
}

#[tokio::test]
async fn max_results_defaults_to_10_and_is_capped_at_50() {
    let project = TempProject::new();
    let text: String = (1..=60)
        .map(|i| format!("## Part {i}\n\nzebra number {i}\n\n"))
        .collect();
    project.write("docs/many.md", text);
    let server = Server::start(&project.root).await;

    let out = server.ok("get_docs", json!({"query": "zebra"})).await;
    assert_eq!(out["count"], 10);
    assert_eq!(out["truncated"], true);

    let out = server
        .ok("get_docs", json!({"query": "zebra", "max_results": 500}))
        .await;
    assert_eq!(out["count"], 50);
    assert_eq!(out["truncated"], true);

    let out = server
        .ok("get_docs", json!({"query": "zebra", "max_results": 3}))
        .await;
    assert_eq!(out["count"], 3);
    server.stop().await;
}

#[tokio::test]
async fn headings_inside_code_fences_do_not_split_sections() {
    let project = TempProject::new();
    project.write(
        "docs/setup.md",
        "# Setup\n\nInstall it:\n\n```sh\n# fetch the zebra tool\ncurl example\n```\n\nDone.\n",
    );
    let server = Server::start(&project.root).await;
    let out = server.ok("get_docs", json!({"query": "zebra"})).await;
    assert_eq!(
        hits(&out),
        vec![("setup.md".to_string(), "Setup".to_string())]
    );
    server.stop().await;
}

#[tokio::test]
async fn the_docs_flag_moves_the_docs_root() {
    let project = sample_project();
    // Inside the root: documents also get their project path (outside it,
    // tests/it/gate.rs).
    let elsewhere = project.root.join("handbook");
    common::write_file(
        &elsewhere.join("ops.md"),
        b"# Ops\n\n## Widget rotation\n\nTurn each widget.\n",
    );
    let docs = elsewhere.to_string_lossy().into_owned();
    let server = Server::start_with(&project.root, &["--docs", &docs], &[]).await;
    let out = server.ok("get_docs", json!({"query": "widget"})).await;
    assert_eq!(
        hits(&out),
        vec![("ops.md".to_string(), "Widget rotation".to_string())]
    );
    assert_eq!(out["results"][0]["path"], "handbook/ops.md");
    server.stop().await;
}

#[tokio::test]
async fn a_missing_docs_folder_is_explained() {
    let project = TempProject::new();
    project.write("src/main.rs", "fn main() {}\n");
    let server = Server::start(&project.root).await;
    let result = server.call("get_docs", json!({"query": "x"})).await;
    if result.is_error == Some(true) {
        // The message names the folder it looked for, or the flag to set.
        let message = common::text_of(&result);
        let location = project.root.join("docs").to_string_lossy().into_owned();
        assert!(
            message.contains(&location) || message.contains("--docs"),
            "{message}"
        );
    } else {
        let out = result.structured_content.expect("structuredContent");
        assert_eq!(out["count"], 0);
        assert_eq!(out["results"], json!([]));
    }
    server.stop().await;
}
