//! The real host CLIs, offline, against the real binary: Claude Code
//! (`claude mcp get`, which starts the server and reports "Connected"),
//! Gemini CLI (`gemini mcp list`, which connects too) and Codex CLI
//! (`codex mcp list` / `get`, which only parse the config). No login is
//! needed for any of these.
//!
//! The CLIs come from the npm registry, pinned in
//! `tests/support/hosts/package.json` and installed by `.ci/run` with
//! `npm ci` into `tests/support/hosts/node_modules` (or set
//! `MCP_HOST_CLI_DIR` to a folder holding `claude`, `codex`, `gemini`).
//! A missing CLI fails the test under `CI=true` and is reported as
//! SKIPPED on stderr otherwise.
//!
//! Every run gets its own HOME and a scratch git repository, so nothing is
//! written to the user's settings or to this repository. The server's log
//! (`MCP_PROJECT_HELPER_LOG_FILE`, passed through by the hosts, or the
//! config's own `--log-file`) says which root it served.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::host_cli::{host_cli, output_within};
use crate::common::{SETTINGS_ENV, binary, cli_command, copy_dir, demo_root, repo_dir};

/// A scratch git repository with a subfolder, a HOME of its own, and the
/// server log file every run appends to.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        let sandbox = Sandbox { dir };
        std::fs::create_dir_all(sandbox.repo().join("src/deep")).expect("mkdir");
        std::fs::create_dir_all(sandbox.home()).expect("mkdir home");
        let git = Command::new("git")
            .args(["init", "-q"])
            .current_dir(sandbox.repo())
            .status()
            .expect("git is installed");
        assert!(git.success(), "git init");
        sandbox
    }

    /// The repository top, canonical (macOS's /tmp is a symlink).
    fn repo(&self) -> PathBuf {
        let repo = self.dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir repo");
        dunce::canonicalize(repo).expect("canonical repo")
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// Runs `program args` in `cwd` the way a user would, with this
    /// sandbox's HOME and the built binary first on PATH (as an install
    /// puts it on PATH). Returns stdout and stderr together.
    fn run(&self, program: &Path, args: &[&str], cwd: &Path) -> String {
        let mut path = vec![binary().parent().expect("bin dir").to_path_buf()];
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .env("PATH", std::env::join_paths(path).expect("PATH"))
            .env("HOME", self.home())
            .env("USERPROFILE", self.home())
            .env("CODEX_HOME", self.home().join(".codex"))
            .env("MCP_PROJECT_HELPER_LOG_FILE", self.log())
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("NO_COLOR", "1")
            .env_remove("CLAUDE_PROJECT_DIR")
            .stdin(Stdio::null());
        for name in SETTINGS_ENV {
            if name != "MCP_PROJECT_HELPER_LOG_FILE" {
                command.env_remove(name);
            }
        }
        output_within(command, Duration::from_secs(180))
    }

    /// The roots the server logged at start-up, in order.
    fn served_roots(&self) -> Vec<String> {
        served_roots(&self.log())
    }
}

fn served_roots(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|line| line.contains("serving MCP on stdio"))
        .filter_map(|line| line.split(" root=").nth(1))
        .filter_map(|rest| rest.split(" docs=").next())
        .map(str::to_string)
        .collect()
}

/// `mcp-project-helper config ARGS` run in `cwd`: the document block.
fn config_document(args: &[&str], cwd: &Path) -> String {
    let output = cli_command(&["config"])
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run config");
    assert!(output.status.success(), "config {args:?} failed");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let (_, document) = text.split_once("\n\n").expect("a document block");
    document.to_string()
}

/// The `claude mcp add` line `config claude-code` prints for this shell.
#[cfg(unix)]
fn claude_mcp_add_line(args: &[&str], cwd: &Path) -> String {
    let output = cli_command(&["config"])
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run config");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    text.lines()
        .find(|line| line.starts_with("claude mcp add "))
        .expect("a claude mcp add line")
        .to_string()
}

fn claude_settings(sandbox: &Sandbox) {
    // Project servers from .mcp.json need approval; a settings file in the
    // user's HOME gives it (the project's own settings do not).
    sandbox.write(
        &sandbox.home().join(".claude/settings.json"),
        r#"{"enableAllProjectMcpServers": true}"#,
    );
}

fn assert_connected(output: &str, what: &str) {
    assert!(
        output.contains("Connected") && !output.contains("Failed"),
        "{what}: not connected:\n{output}"
    );
}

#[test]
fn claude_code_connects_with_the_checked_in_mcp_json_from_the_top_and_from_src() {
    let Some(claude) = host_cli("claude") else {
        return;
    };
    // A scratch copy of this repository's layout: .mcp.json, demo_project,
    // a src/ folder; the config's own --log-file lands in the copy.
    let sandbox = Sandbox::new();
    let repo = sandbox.repo();
    std::fs::copy(repo_dir().join(".mcp.json"), repo.join(".mcp.json")).expect("copy");
    copy_dir(&demo_root(), &repo.join("demo_project"));
    claude_settings(&sandbox);

    for cwd in [repo.clone(), repo.join("src"), repo.join("src/deep")] {
        let output = sandbox.run(&claude, &["mcp", "get", "project-helper"], &cwd);
        assert_connected(&output, &format!("claude mcp get from {}", cwd.display()));
    }
    let roots = served_roots(&repo.join("target/mcp-project-helper.log"));
    let demo = repo.join("demo_project").display().to_string();
    assert!(roots.len() >= 3, "one start per run: {roots:?}");
    assert!(roots.iter().all(|root| *root == demo), "{roots:?}");
}

/// `git ARGS` in `repo`, which must succeed; its stdout.
fn git(repo: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(args)
        .current_dir(repo)
        .output()
        .expect("git is installed");
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn a_claude_code_session_with_the_checked_in_config_leaves_git_status_clean() {
    let Some(claude) = host_cli("claude") else {
        return;
    };
    // A committed copy of the repository's layout with its real .gitignore.
    let sandbox = Sandbox::new();
    let repo = sandbox.repo();
    for file in [".mcp.json", ".gitignore"] {
        std::fs::copy(repo_dir().join(file), repo.join(file)).expect("copy");
    }
    copy_dir(&demo_root(), &repo.join("demo_project"));
    std::fs::write(repo.join("src/deep/lib.rs"), "// code\n").expect("write");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "layout"]);
    claude_settings(&sandbox);
    for cwd in [repo.clone(), repo.join("src/deep")] {
        let output = sandbox.run(&claude, &["mcp", "get", "project-helper"], &cwd);
        assert_connected(&output, &format!("claude mcp get from {}", cwd.display()));
    }
    assert!(
        repo.join("target/mcp-project-helper.log").is_file(),
        "the server logged"
    );
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "git status is clean"
    );
}

#[test]
fn claude_code_serves_the_intended_folder_from_a_subfolder_of_an_archive_copy() {
    let Some(claude) = host_cli("claude") else {
        return;
    };
    // A downloaded source archive: the layout without .git.
    let sandbox = Sandbox::new();
    let repo = sandbox.repo();
    std::fs::remove_dir_all(repo.join(".git")).expect("rm .git");
    std::fs::copy(repo_dir().join(".mcp.json"), repo.join(".mcp.json")).expect("copy");
    copy_dir(&demo_root(), &repo.join("demo_project"));
    claude_settings(&sandbox);
    let output = sandbox.run(
        &claude,
        &["mcp", "get", "project-helper"],
        &repo.join("src/deep"),
    );
    assert_connected(&output, "claude mcp get from src/deep of an archive copy");
    let roots = served_roots(&repo.join("target/mcp-project-helper.log"));
    let demo = repo.join("demo_project").display().to_string();
    assert_eq!(roots, [demo]);
}

#[test]
fn claude_code_project_and_user_snippets_serve_the_intended_folder() {
    let Some(claude) = host_cli("claude") else {
        return;
    };
    let sandbox = Sandbox::new();
    let repo = sandbox.repo();
    claude_settings(&sandbox);

    // Project scope: `config claude-code` into .mcp.json; from a subfolder
    // the server still serves the repository top.
    let document = config_document(&["claude-code"], &repo);
    sandbox.write(&repo.join(".mcp.json"), &document);
    let output = sandbox.run(
        &claude,
        &["mcp", "get", "project-helper"],
        &repo.join("src/deep"),
    );
    assert_connected(&output, "project scope from src/deep");
    assert_eq!(sandbox.served_roots(), [repo.display().to_string()]);
    std::fs::remove_file(repo.join(".mcp.json")).expect("rm");

    // User scope: the printed `claude mcp add --scope user` line, run as
    // printed, registers this binary without a root; Claude Code's MCP root
    // (the folder it was started in) decides.
    #[cfg(unix)]
    {
        let line = claude_mcp_add_line(&["claude-code", "--scope", "user"], &repo);
        let line = line.replacen("claude", &claude.display().to_string(), 1);
        let output = sandbox.run(Path::new("/bin/sh"), &["-c", &line], &repo);
        assert!(output.contains("project-helper"), "{output}");
        let output = sandbox.run(
            &claude,
            &["mcp", "get", "project-helper"],
            &repo.join("src"),
        );
        assert_connected(&output, "user scope from src");
        assert!(output.contains("User config"), "{output}");
        let roots = sandbox.served_roots();
        assert_eq!(roots.len(), 2, "{roots:?}");
        // Started without --root, the server begins in the folder Claude
        // Code starts it in (and adopts Claude Code's MCP root, the same
        // folder, once asked): src/.
        assert_eq!(roots[1], repo.join("src").display().to_string());
    }
}

#[test]
fn gemini_cli_connects_with_the_generated_project_and_user_settings() {
    let Some(gemini) = host_cli("gemini") else {
        return;
    };
    let sandbox = Sandbox::new();
    let repo = sandbox.repo();
    // Gemini CLI ignores every MCP server in a folder the user has not
    // trusted; trust the scratch repository the way its prompt would.
    let trusted = serde_json::json!({ repo.display().to_string(): "TRUST_FOLDER" });
    sandbox.write(
        &sandbox.home().join(".gemini/trustedFolders.json"),
        &trusted.to_string(),
    );

    let document = config_document(&["gemini"], &repo);
    sandbox.write(&repo.join(".gemini/settings.json"), &document);
    let output = sandbox.run(&gemini, &["mcp", "list"], &repo);
    assert!(output.contains("project-helper"), "{output}");
    assert_connected(&output, "gemini project scope");
    assert_eq!(sandbox.served_roots(), [repo.display().to_string()]);
    std::fs::remove_file(repo.join(".gemini/settings.json")).expect("rm");

    // User scope: no --root; Gemini CLI starts the server in the folder it
    // runs in.
    let document = config_document(&["gemini", "--scope", "user"], &repo);
    sandbox.write(&sandbox.home().join(".gemini/settings.json"), &document);
    let output = sandbox.run(&gemini, &["mcp", "list"], &repo.join("src"));
    assert_connected(&output, "gemini user scope from src");
    let roots = sandbox.served_roots();
    assert_eq!(
        roots.last().map(String::as_str),
        Some(repo.join("src").display().to_string().as_str()),
        "{roots:?}"
    );
}

#[test]
fn codex_cli_parses_the_generated_project_and_user_config() {
    let Some(codex) = host_cli("codex") else {
        return;
    };
    let sandbox = Sandbox::new();
    let repo = sandbox.repo();
    let this_binary = dunce::canonicalize(binary()).expect("canonical binary");

    // User scope: ~/.codex/config.toml, this binary, no root.
    let user = config_document(&["codex", "--scope", "user"], &repo);
    // Codex reads a project's .codex/config.toml only for a trusted project.
    let trust = format!(
        "\n[projects.{}]\ntrust_level = \"trusted\"\n",
        toml::Value::String(repo.display().to_string())
    );
    sandbox.write(&sandbox.home().join(".codex/config.toml"), &(user + &trust));
    let output = sandbox.run(&codex, &["mcp", "get", "project-helper"], &repo);
    assert!(
        output.contains(&format!("command: {}", this_binary.display())),
        "{output}"
    );
    assert!(
        output.contains("args: -"),
        "no --root in user scope:\n{output}"
    );

    // Project scope: .codex/config.toml at the top, seen from a subfolder,
    // overriding the user entry of the same name.
    let project = config_document(&["codex"], &repo);
    sandbox.write(&repo.join(".codex/config.toml"), &project);
    let output = sandbox.run(&codex, &["mcp", "list"], &repo.join("src"));
    let line = output
        .lines()
        .find(|line| line.starts_with("project-helper"))
        .unwrap_or_else(|| panic!("codex mcp list shows the server:\n{output}"));
    assert!(line.contains("mcp-project-helper"), "{line}");
    assert!(line.contains("--root ."), "{line}");
    assert!(line.contains("enabled"), "{line}");
}

/// The arguments Codex would start: `--root .` from the project file, run
/// in a subfolder, serves the repository top (the same rule every host's
/// relative root follows).
#[test]
fn relative_root_resolves_against_the_repository_top_from_any_subfolder() {
    let sandbox = Sandbox::new();
    let repo = sandbox.repo();
    std::fs::create_dir_all(repo.join("demo")).expect("mkdir");
    for (cwd, root, expected) in [
        (repo.join("src/deep"), ".", repo.clone()),
        (repo.join("src"), "demo", repo.join("demo")),
        (repo.clone(), "src/deep", repo.join("src/deep")),
    ] {
        let output = cli_command(&[])
            .args([
                "config", "cursor", "--scope", "user", "--docker", "--root", root,
            ])
            .current_dir(&cwd)
            .output()
            .expect("run config");
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        let mount = format!(
            "type=bind,source={},target=/project,readonly",
            expected.display()
        );
        assert!(
            text.contains(&serde_json::to_string(&mount).expect("json")),
            "--root {root} from {}:\n{text}",
            cwd.display()
        );
    }

    // `config` without --root names the project file at the top, too.
    let output = cli_command(&[])
        .args(["config", "claude-code"])
        .current_dir(repo.join("src/deep"))
        .output()
        .expect("run config");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let first = text.lines().next().unwrap_or_default();
    let file = repo.join(".mcp.json").display().to_string();
    assert!(first.ends_with(&file), "{text}");

    // Outside any repository the working directory is the base, as before.
    let outside = tempfile::tempdir().expect("tempdir");
    let outside = dunce::canonicalize(outside.path()).expect("canonical");
    std::fs::create_dir_all(outside.join("p")).expect("mkdir");
    let output = cli_command(&[])
        .args([
            "config", "cursor", "--scope", "user", "--docker", "--root", "p",
        ])
        .current_dir(&outside)
        .output()
        .expect("run config");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let mount = format!(
        "type=bind,source={},target=/project,readonly",
        outside.join("p").display()
    );
    assert!(
        text.contains(&serde_json::to_string(&mount).expect("json")),
        "{text}"
    );
}
