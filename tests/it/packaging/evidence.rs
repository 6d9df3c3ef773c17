//! Runs `evidence/run.sh --check`: the handshake and the verification
//! requests, replayed by the official Python SDK and the MCP Inspector CLI
//! against the static release binary and the container image, each result
//! checked against its expectation. Fails when any row fails, with the
//! driver's per-row reasons.
//!
//! Needs python3 (with venv), node and npm, and podman (or docker with a
//! running engine). The first run installs the pinned clients into
//! `evidence/.venv` and `evidence/node_modules` and builds the release binary
//! into `target/static`; later runs reuse them. Skips only when no container
//! engine exists at all (as every container test does) or when
//! `MCP_PROJECT_HELPER_SKIP_EVIDENCE=1` is set, and says so; under
//! `CI=true` either is a failure. Linux only: the image and
//! the static binary it holds are Linux x86_64/aarch64.
#![cfg(target_os = "linux")]

use std::path::Path;

use crate::common;
use std::process::Command;

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|output| output.status.success())
}

#[test]
fn every_request_passes_with_both_clients_against_binary_and_image() {
    if std::env::var_os("MCP_PROJECT_HELPER_SKIP_EVIDENCE").is_some_and(|value| value == "1") {
        common::cannot_run(
            "the evidence check",
            "MCP_PROJECT_HELPER_SKIP_EVIDENCE=1 is set; evidence/run.sh --check did not run",
        );
        return;
    }
    let Some(engine) = common::container_engine() else {
        common::cannot_run(
            "the evidence check",
            "neither docker with a running engine nor podman exists, so the image cannot run; \
             install podman and runc (apt-get install -y podman runc)",
        );
        return;
    };
    let missing: Vec<&str> = [
        ("python3", &["--version"][..]),
        ("node", &["--version"][..]),
        ("npm", &["--version"][..]),
    ]
    .into_iter()
    .filter(|(program, args)| !runs(program, args))
    .map(|(program, _)| program)
    .collect();
    assert!(
        missing.is_empty(),
        "the evidence check needs {missing:?} on PATH (Debian: apt-get install -y python3 python3-venv nodejs npm); \
         set MCP_PROJECT_HELPER_SKIP_EVIDENCE=1 to skip it on a machine without them"
    );

    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(repo.join("evidence/run.sh"))
        .arg("--check")
        .current_dir(repo)
        .output()
        .expect("start evidence/run.sh");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stderr_tail: Vec<&str> = stderr.lines().rev().take(60).collect();
    let stderr_tail: Vec<&str> = stderr_tail.into_iter().rev().collect();
    assert!(
        output.status.success(),
        "evidence/run.sh --check failed ({}; container engine: {engine}).\n\
         Per-row results and reasons:\n{stdout}\n\
         Last lines of its stderr (build, installs, driver):\n{}\n\
         Transcripts of this run: target/evidence-check/transcripts/",
        output.status,
        stderr_tail.join("\n")
    );
}
