//! Real host CLIs from the npm registry (Claude Code, Codex, Gemini CLI,
//! mcpb), pinned in `tests/support/hosts/package.json` and installed by
//! `.ci/run` with `npm ci --prefix tests/support/hosts`.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::repo_dir;

/// The folder holding the CLIs' launchers: `MCP_HOST_CLI_DIR`, else the
/// pinned install's `node_modules/.bin`.
pub fn cli_dir() -> PathBuf {
    std::env::var_os("MCP_HOST_CLI_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_dir().join("tests/support/hosts/node_modules/.bin"))
}

/// The host CLI `name`, or `None` (after saying so) when it is missing
/// outside CI. Under `CI=true` a missing CLI is a failure.
pub fn host_cli(name: &str) -> Option<PathBuf> {
    let file = if cfg!(windows) {
        format!("{name}.cmd")
    } else {
        name.to_string()
    };
    let path = cli_dir().join(file);
    if path.is_file() {
        return Some(path);
    }
    let message = format!(
        "host CLI `{name}` not found at {}: run `npm ci --prefix tests/support/hosts` (as .ci/run does) or set MCP_HOST_CLI_DIR",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}");
    }
    // Written past the test harness's capture, so a skip is visible in a
    // plain `cargo test` run.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
    None
}

/// Runs `command` and returns stdout and stderr together, killing it if it
/// outlives `limit` (a CLI that hangs must fail its test, not the suite).
pub fn output_within(mut command: Command, limit: Duration) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("out");
    let out = std::fs::File::create(&out_path).expect("out file");
    command.stdout(out.try_clone().expect("clone")).stderr(out);
    let mut child = command.spawn().expect("start the CLI");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "CLI ran longer than {limit:?}:\n{}",
                std::fs::read_to_string(&out_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(&out_path).unwrap_or_default()
}
