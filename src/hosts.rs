//! `mcp-project-helper config <host> [--scope project|user] [--docker]`:
//! prints the MCP config snippet one host needs to start this server, and
//! says which file and scope it belongs to.
//!
//! Two kinds of snippet, so the same entry works from any folder:
//! - project scope (a file checked into the project): the command is the
//!   installed `mcp-project-helper` (no one's personal path in a shared
//!   file) and the root is the host's workspace variable, or `.` where the
//!   host has none (a relative root is resolved against the repository top,
//!   see `config::resolve_relative_to_repository`);
//! - user scope (the user's own settings): this binary's absolute path and
//!   no `--root`, so the server takes the project from the host (MCP roots,
//!   else the folder the host starts it in). Hosts that offer neither get
//!   the absolute root: one entry per project.
//!
//! JSON is built with `serde_json` and TOML with `toml`, never by
//! concatenation, so Windows paths come out escaped.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use crate::cli::{ConfigArgs, Host, Scope};
use crate::config::{Config, canonical_dir, resolve_relative_to_repository};

/// The name the server is registered under in every host's config.
pub const SERVER_NAME: &str = "project-helper";

/// The command project-scoped snippets name: the installers put it on PATH.
pub const INSTALLED_COMMAND: &str = "mcp-project-helper";

/// The image the release workflow pushes (`.github/workflows/publish-image.yml`
/// tags `ghcr.io/<repository owner>/mcp-project-helper`).
pub const IMAGE: &str = "ghcr.io/mcp-project-helper/mcp-project-helper:latest";

/// How an editor starts the server: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
}

impl Launch {
    /// `binary`, serving `root` when given (else the host's roots or the
    /// folder it starts the server in).
    pub fn native(binary: &str, root: Option<&str>) -> Self {
        let args = match root {
            Some(root) => vec!["--root".to_string(), root.to_string()],
            None => Vec::new(),
        };
        Self {
            command: binary.to_string(),
            args,
        }
    }

    /// The container image, with `root` mounted read-only at `/project`
    /// (the image's entrypoint passes `--root /project`). `-i` keeps stdin
    /// open for the protocol; the server needs no network.
    pub fn docker(root: &str) -> Self {
        let args = [
            "run",
            "-i",
            "--rm",
            "--network",
            "none",
            "-v",
            &format!("{root}:/project:ro"),
            IMAGE,
        ];
        Self {
            command: "docker".to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }
}

/// The document shape a host's config file uses for stdio servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `{"mcpServers": {name: {command, args}}}`: Claude Code, Claude
    /// Desktop, Cursor, Gemini CLI, Windsurf, Cline, JetBrains.
    McpServers,
    /// `{"servers": {name: {type: "stdio", command, args}}}`: VS Code.
    VscodeServers,
    /// `{"context_servers": {name: {command, args}}}`: Zed's settings.json.
    ZedContextServers,
    /// `[mcp_servers.<name>]` with `command` and `args`: Codex's config.toml.
    CodexToml,
}

/// What one host needs: its document format, and for each scope it has,
/// where the file lives and how the root is given.
struct HostSpec {
    title: &'static str,
    format: Format,
    /// Project scope: the file (relative to the project) and the root
    /// argument (the host's workspace variable, or `.`).
    project: Option<(&'static str, &'static str)>,
    /// User scope: comment lines naming the file per platform.
    user_files: &'static [&'static str],
    /// Whether the server can take the project from the host in user
    /// scope (MCP roots, or the host starts it in the project folder).
    user_finds_project: bool,
    /// A note printed after the file names (how to reload, caveats).
    note: &'static str,
}

fn spec(host: Host) -> HostSpec {
    match host {
        Host::ClaudeCode => HostSpec {
            title: "Claude Code",
            format: Format::McpServers,
            project: Some((".mcp.json", ".")),
            user_files: &[
                "~/.claude.json (top-level mcpServers); `claude mcp add --scope user` writes it",
            ],
            user_finds_project: true,
            note: "Claude Code asks once before it starts servers from a project's .mcp.json; without --root the server serves the folder Claude Code was started in (its MCP root). Check with `claude mcp get project-helper`.",
        },
        Host::ClaudeDesktop => HostSpec {
            title: "Claude Desktop",
            format: Format::McpServers,
            project: None,
            user_files: &[
                "macOS:   ~/Library/Application Support/Claude/claude_desktop_config.json",
                "Windows: %APPDATA%\\Claude\\claude_desktop_config.json",
                "Windows (Microsoft Store / MSIX install): %LOCALAPPDATA%\\Packages\\Claude_pzs8sxrjxfjjc\\LocalCache\\Roaming\\Claude\\claude_desktop_config.json",
                "Settings -> Developer -> Edit Config opens the one your install reads.",
            ],
            user_finds_project: false,
            note: "Claude Desktop has no workspace: each entry serves one folder (add one entry, with its own name, per project), or install the .mcpb bundle. Restart Claude Desktop after editing.",
        },
        Host::Cursor => HostSpec {
            title: "Cursor",
            format: Format::McpServers,
            project: Some((".cursor/mcp.json", "${workspaceFolder}")),
            user_files: &["~/.cursor/mcp.json (Windows: %USERPROFILE%\\.cursor\\mcp.json)"],
            user_finds_project: true,
            note: "Cursor expands ${workspaceFolder}; without --root the server serves the open workspace (Cursor's MCP root).",
        },
        Host::Vscode => HostSpec {
            title: "VS Code",
            format: Format::VscodeServers,
            project: Some((".vscode/mcp.json", "${workspaceFolder}")),
            user_files: &["the user mcp.json: run \"MCP: Open User Configuration\""],
            user_finds_project: true,
            note: "VS Code expands ${workspaceFolder}; without --root the server serves the first workspace folder (VS Code's MCP roots).",
        },
        Host::Codex => HostSpec {
            title: "Codex CLI",
            format: Format::CodexToml,
            project: Some((".codex/config.toml", ".")),
            user_files: &["~/.codex/config.toml (Windows: %USERPROFILE%\\.codex\\config.toml)"],
            user_finds_project: true,
            note: "Codex reads a project's .codex/config.toml only once you trust the project; it starts servers in the folder you run it in. Check with `codex mcp list`.",
        },
        Host::Gemini => HostSpec {
            title: "Gemini CLI",
            format: Format::McpServers,
            project: Some((".gemini/settings.json", ".")),
            user_files: &[
                "~/.gemini/settings.json (Windows: %USERPROFILE%\\.gemini\\settings.json)",
            ],
            user_finds_project: true,
            note: "Gemini CLI reads .gemini/settings.json only when started in that folder, and no MCP server at all in a folder you have not trusted; without --root the server serves the folder Gemini runs in. Check with `gemini mcp list`.",
        },
        Host::Windsurf => HostSpec {
            title: "Windsurf",
            format: Format::McpServers,
            project: None,
            user_files: &[
                "~/.codeium/windsurf/mcp_config.json (Windows: %USERPROFILE%\\.codeium\\windsurf\\mcp_config.json)",
                "Windsurf Settings -> Cascade -> MCP servers -> Edit configuration opens it.",
            ],
            user_finds_project: false,
            note: "Windsurf's documented config is per user and names no workspace variable: each entry serves one folder.",
        },
        Host::Zed => HostSpec {
            title: "Zed",
            format: Format::ZedContextServers,
            project: None,
            user_files: &[
                "Zed's settings.json (command palette: \"zed: open settings file\")",
                "macOS/Linux: ~/.config/zed/settings.json; Windows: %APPDATA%\\Zed\\settings.json",
            ],
            user_finds_project: true,
            note: "Zed starts context servers in the project's folder.",
        },
        Host::Cline => HostSpec {
            title: "Cline",
            format: Format::McpServers,
            project: None,
            user_files: &[
                "cline_mcp_settings.json: Cline's MCP Servers icon -> Configure -> Configure MCP Servers opens it",
            ],
            user_finds_project: false,
            note: "Cline's settings are per user: each entry serves one folder.",
        },
        Host::Jetbrains => HostSpec {
            title: "JetBrains AI Assistant",
            format: Format::McpServers,
            project: None,
            user_files: &[
                "Settings | Tools | AI Assistant | Model Context Protocol (MCP) -> Add -> As JSON",
                "then pick the level (global or current project) in the Level column",
            ],
            user_finds_project: false,
            note: "The entry serves one folder; paste it at the project level to keep it with that project.",
        },
    }
}

/// The scope `config` prints when none is asked for: the project file where
/// the host has one, else the user's settings.
pub fn default_scope(host: Host) -> Scope {
    if spec(host).project.is_some() {
        Scope::Project
    } else {
        Scope::User
    }
}

/// Why a snippet cannot be printed.
#[derive(Debug, thiserror::Error)]
pub enum SnippetError {
    #[error("{host} has no project-scoped MCP config; use --scope user")]
    NoProjectScope { host: &'static str },
    #[error("cannot format the snippet: {0}")]
    Json(#[from] serde_json::Error),
    #[error("cannot format the snippet: {0}")]
    Toml(#[from] toml::ser::Error),
}

/// One stdio server entry, fields in the order the hosts' docs show them.
#[derive(Debug, Serialize)]
struct StdioServer<'a> {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    command: &'a str,
    args: &'a [String],
}

/// The host's config document holding just this server.
pub fn host_document(host: Host, launch: &Launch) -> Result<String, SnippetError> {
    let (key, kind) = match spec(host).format {
        Format::McpServers => ("mcpServers", None),
        Format::VscodeServers => ("servers", Some("stdio")),
        Format::ZedContextServers => ("context_servers", None),
        Format::CodexToml => ("mcp_servers", None),
    };
    let server = StdioServer {
        kind,
        command: &launch.command,
        args: &launch.args,
    };
    let document = BTreeMap::from([(key, BTreeMap::from([(SERVER_NAME, server)]))]);
    Ok(match spec(host).format {
        Format::CodexToml => toml::to_string(&document)?,
        _ => serde_json::to_string_pretty(&document)? + "\n",
    })
}

/// The shells a `claude mcp add` one-liner is quoted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// sh, bash, zsh: single quotes.
    Posix,
    /// PowerShell: single quotes, and `'--'` quoted, because PowerShell
    /// drops a bare `--` before it reaches the npm-installed `claude.ps1`.
    PowerShell,
    /// cmd.exe: double quotes (Windows paths cannot contain `"`).
    Cmd,
}

impl Shell {
    /// The shells to print one-liners for on this platform.
    pub fn for_this_platform() -> &'static [Shell] {
        if cfg!(windows) {
            &[Shell::PowerShell, Shell::Cmd]
        } else {
            &[Shell::Posix]
        }
    }

    fn quote(self, word: &str) -> String {
        let plain = !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=\\".contains(c));
        if word == "--" && self == Shell::PowerShell {
            return "'--'".to_string();
        }
        if plain && !(self == Shell::Posix && word.contains('\\')) {
            return word.to_string();
        }
        match self {
            Shell::Posix => format!("'{}'", word.replace('\'', r"'\''")),
            Shell::PowerShell => format!("'{}'", word.replace('\'', "''")),
            Shell::Cmd => format!("\"{word}\""),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Shell::Posix => "",
            Shell::PowerShell => " (PowerShell)",
            Shell::Cmd => " (cmd)",
        }
    }
}

/// The `claude mcp add` command that registers `launch` with Claude Code.
pub fn claude_mcp_add(launch: &Launch, scope: Scope, shell: Shell) -> String {
    let scope = match scope {
        Scope::Project => "project",
        Scope::User => "user",
    };
    let mut words: Vec<String> = [
        "claude",
        "mcp",
        "add",
        "--scope",
        scope,
        "--transport",
        "stdio",
        SERVER_NAME,
        "--",
    ]
    .iter()
    .map(|w| shell.quote(w))
    .collect();
    words.push(shell.quote(&launch.command));
    words.extend(launch.args.iter().map(|a| shell.quote(a)));
    words.join(" ")
}

/// What `config` was asked for, with the paths already made text.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub host: Host,
    pub scope: Scope,
    /// The project root, absolute (named in comments, used where a host
    /// needs a fixed root, mounted by `--docker`).
    pub root: &'a str,
    /// This binary's absolute path (user-scoped snippets start it).
    pub binary: &'a str,
    pub docker: bool,
}

/// The launch a snippet holds for `request`.
pub fn launch_for(request: &Request) -> Result<Launch, SnippetError> {
    let spec = spec(request.host);
    match request.scope {
        Scope::Project => {
            let (_, root_arg) = spec
                .project
                .ok_or(SnippetError::NoProjectScope { host: spec.title })?;
            Ok(if request.docker {
                // A bind mount needs one absolute folder: the workspace
                // variable where the host expands one, else this project.
                let mount = if root_arg == "." {
                    request.root
                } else {
                    root_arg
                };
                Launch::docker(mount)
            } else {
                Launch::native(INSTALLED_COMMAND, Some(root_arg))
            })
        }
        Scope::User if request.docker => Ok(Launch::docker(request.root)),
        Scope::User => {
            let root = (!spec.user_finds_project).then_some(request.root);
            Ok(Launch::native(request.binary, root))
        }
    }
}

/// The whole text `config` prints: `#` comment lines that say which file
/// and scope the snippet belongs to, for Claude Code the `claude mcp add`
/// lines, then the document (the last block, starting with `{` or `[`).
pub fn render(request: &Request, shells: &[Shell]) -> Result<String, SnippetError> {
    let spec = spec(request.host);
    let launch = launch_for(request)?;
    let document = host_document(request.host, &launch)?;
    let mut out = String::new();
    match request.scope {
        Scope::Project => {
            let (file, root_arg) = spec
                .project
                .ok_or(SnippetError::NoProjectScope { host: spec.title })?;
            // Joined per component, so Windows shows `\` throughout.
            let path = file
                .split('/')
                .fold(PathBuf::from(request.root), |path, part| path.join(part));
            out += &format!(
                "# {}, project scope (shared with everyone who clones the project): {}\n",
                spec.title,
                path.display()
            );
            if request.docker {
                out += "# The container mounts one folder: this project (or the host's workspace variable).\n";
            } else {
                if root_arg == "." {
                    out += "# `--root .` is the repository top (the nearest folder with .git), from any subfolder.\n";
                }
                out += "# Needs mcp-project-helper on PATH (the installers put it there).\n";
            }
        }
        Scope::User => {
            out += &format!("# {}, user scope (your own settings):\n", spec.title);
            for line in spec.user_files {
                out += &format!("#   {line}\n");
            }
        }
    }
    out += &format!("# {}\n", spec.note);
    if request.host == Host::ClaudeCode {
        for shell in shells {
            out += &format!(
                "# Register it with one command{}:\n{}\n",
                shell.label(),
                claude_mcp_add(&launch, request.scope, *shell)
            );
        }
        out += "# or merge this entry into the file:\n";
    } else {
        out += "# Merge this entry into the file (keep the servers already there):\n";
    }
    out += "\n";
    out += &document;
    Ok(out)
}

pub fn print_snippet(args: &ConfigArgs, config: &Config) -> ExitCode {
    let text = match snippet_for_this_binary(args, config) {
        Ok(text) => text,
        Err(message) => {
            eprintln!("mcp-project-helper config: {message}");
            return ExitCode::FAILURE;
        }
    };
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-project-helper config: cannot write to stdout: {error}");
            ExitCode::FAILURE
        }
    }
}

fn snippet_for_this_binary(args: &ConfigArgs, config: &Config) -> Result<String, String> {
    let scope = args.scope.unwrap_or_else(|| default_scope(args.host));
    // A project file belongs at the repository top, wherever `config` runs.
    let root = match (&config.root, scope) {
        (None, Scope::Project) => resolve_relative_to_repository(PathBuf::from("."))
            .and_then(|top| canonical_dir(&top))
            .map_err(|error| error.to_string())?,
        _ => config.root_or_working_dir()?,
    };
    let binary = std::env::current_exe()
        .map_err(|error| format!("cannot find the path of this binary: {error}"))?;
    let binary = dunce::canonicalize(&binary).unwrap_or(binary);
    let request = Request {
        host: args.host,
        scope,
        root: utf8(&root, "the project root")?,
        binary: utf8(&binary, "this binary's path")?,
        docker: args.docker,
    };
    render(&request, Shell::for_this_platform()).map_err(|error| error.to_string())
}

fn utf8<'a>(path: &'a Path, what: &str) -> Result<&'a str, String> {
    path.to_str().ok_or_else(|| {
        format!(
            "{what} ({}) is not valid UTF-8, which config files cannot hold; use a UTF-8 path",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;
    use serde_json::{Value, json};

    use super::*;

    const WINDOWS_EXE: &str = r"C:\Users\Zoë O'Neil\My Tools\mcp-project-helper.exe";
    const WINDOWS_ROOT: &str = r"D:\work\my shop";

    fn request(host: Host, scope: Scope, docker: bool) -> Request<'static> {
        Request {
            host,
            scope,
            root: WINDOWS_ROOT,
            binary: WINDOWS_EXE,
            docker,
        }
    }

    fn scopes(host: Host) -> Vec<Scope> {
        let mut scopes = vec![Scope::User];
        if default_scope(host) == Scope::Project {
            scopes.push(Scope::Project);
        }
        scopes
    }

    /// The document block of a rendered snippet, parsed back into JSON
    /// (TOML documents are converted), with the servers key it used.
    fn parsed(host: Host, text: &str) -> Value {
        let start = text.find("\n\n").expect("blank line before the document") + 2;
        let document = &text[start..];
        if host == Host::Codex {
            let table: toml::Table = toml::from_str(document).expect("TOML parses");
            serde_json::to_value(table).expect("TOML as JSON")
        } else {
            serde_json::from_str(document).expect("JSON parses")
        }
    }

    fn entry(host: Host, text: &str) -> Value {
        let key = match spec(host).format {
            Format::McpServers => "mcpServers",
            Format::VscodeServers => "servers",
            Format::ZedContextServers => "context_servers",
            Format::CodexToml => "mcp_servers",
        };
        parsed(host, text)[key][SERVER_NAME].clone()
    }

    #[test]
    fn windows_paths_with_spaces_round_trip_through_every_snippet() {
        for &host in Host::value_variants() {
            for scope in scopes(host) {
                for docker in [false, true] {
                    let request = request(host, scope, docker);
                    let text = render(&request, &[Shell::PowerShell, Shell::Cmd]).unwrap();
                    let entry = entry(host, &text);
                    let launch = launch_for(&request).unwrap();
                    assert_eq!(
                        entry["command"],
                        launch.command.as_str(),
                        "{host:?} {scope:?}"
                    );
                    assert_eq!(entry["args"], json!(launch.args), "{host:?} {scope:?}");
                    let all = format!("{launch:?}");
                    if scope == Scope::User && !docker {
                        assert_eq!(launch.command, WINDOWS_EXE, "{host:?}");
                    }
                    if !spec(host).user_finds_project && scope == Scope::User {
                        assert!(all.contains("my shop"), "{host:?} names the root: {all}");
                    }
                }
            }
        }
    }

    #[test]
    fn project_snippets_use_the_workspace_variable_and_the_installed_command() {
        for (host, root_arg) in [
            (Host::ClaudeCode, "."),
            (Host::Cursor, "${workspaceFolder}"),
            (Host::Vscode, "${workspaceFolder}"),
            (Host::Codex, "."),
            (Host::Gemini, "."),
        ] {
            let text = render(&request(host, Scope::Project, false), &[Shell::Posix]).unwrap();
            let entry = entry(host, &text);
            assert_eq!(entry["command"], INSTALLED_COMMAND, "{host:?}");
            assert_eq!(entry["args"], json!(["--root", root_arg]), "{host:?}");
            assert!(
                !text.contains("Zoë"),
                "no personal path in {host:?}:\n{text}"
            );
        }
    }

    #[test]
    fn user_snippets_leave_the_root_to_hosts_that_offer_it() {
        for host in [
            Host::ClaudeCode,
            Host::Cursor,
            Host::Vscode,
            Host::Codex,
            Host::Gemini,
            Host::Zed,
        ] {
            let launch = launch_for(&request(host, Scope::User, false)).unwrap();
            assert_eq!(launch.args, Vec::<String>::new(), "{host:?}");
        }
        for host in [
            Host::ClaudeDesktop,
            Host::Windsurf,
            Host::Cline,
            Host::Jetbrains,
        ] {
            let launch = launch_for(&request(host, Scope::User, false)).unwrap();
            assert_eq!(launch.args, ["--root", WINDOWS_ROOT], "{host:?}");
            assert!(
                matches!(
                    render(&request(host, Scope::Project, false), &[]),
                    Err(SnippetError::NoProjectScope { .. })
                ),
                "{host:?}"
            );
        }
    }

    #[test]
    fn each_host_uses_its_own_document_shape() {
        let vscode = render(&request(Host::Vscode, Scope::Project, false), &[]).unwrap();
        assert_eq!(entry(Host::Vscode, &vscode)["type"], "stdio");
        let zed = render(&request(Host::Zed, Scope::User, false), &[]).unwrap();
        assert!(parsed(Host::Zed, &zed).get("context_servers").is_some());
        let codex = render(&request(Host::Codex, Scope::User, false), &[]).unwrap();
        assert!(codex.contains("[mcp_servers.project-helper]\n"), "{codex}");
        // The path itself round-trips: see the test above.
    }

    #[test]
    fn one_liners_quote_for_each_shell() {
        let launch = Launch::native(WINDOWS_EXE, Some(WINDOWS_ROOT));
        assert_eq!(
            claude_mcp_add(&launch, Scope::User, Shell::PowerShell),
            r"claude mcp add --scope user --transport stdio project-helper '--' 'C:\Users\Zoë O''Neil\My Tools\mcp-project-helper.exe' --root 'D:\work\my shop'"
        );
        assert_eq!(
            claude_mcp_add(&launch, Scope::User, Shell::Cmd),
            r#"claude mcp add --scope user --transport stdio project-helper -- "C:\Users\Zoë O'Neil\My Tools\mcp-project-helper.exe" --root "D:\work\my shop""#
        );
        let launch = Launch::native("/home/o'neil/bin/mcp-project-helper", Some("/srv/my shop"));
        assert_eq!(
            claude_mcp_add(&launch, Scope::Project, Shell::Posix),
            r#"claude mcp add --scope project --transport stdio project-helper -- '/home/o'\''neil/bin/mcp-project-helper' --root '/srv/my shop'"#
        );
    }

    #[test]
    fn docker_form_mounts_the_root_read_only() {
        let launch = launch_for(&request(Host::Cursor, Scope::User, true)).unwrap();
        assert_eq!(launch.command, "docker");
        assert_eq!(
            launch.args,
            [
                "run",
                "-i",
                "--rm",
                "--network",
                "none",
                "-v",
                r"D:\work\my shop:/project:ro",
                IMAGE
            ]
        );
        let launch = launch_for(&request(Host::Vscode, Scope::Project, true)).unwrap();
        assert!(
            launch
                .args
                .contains(&"${workspaceFolder}:/project:ro".to_string())
        );
    }

    #[test]
    fn every_snippet_is_comment_lines_then_one_document() {
        for &host in Host::value_variants() {
            for scope in scopes(host) {
                let text = render(&request(host, scope, false), &[Shell::Posix]).unwrap();
                let (head, _) = text.split_once("\n\n").expect("blank line");
                assert!(
                    head.lines()
                        .all(|l| l.starts_with('#') || l.starts_with("claude mcp add ")),
                    "{text}"
                );
                assert!(head.contains(spec(host).title), "{text}");
                let _ = parsed(host, &text);
            }
        }
    }
}
