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

use crate::cli::{ConfigArgs, Host, Scope, ServerArgs};
use crate::config::{Config, canonical_dir, project_top};

/// The name the server is registered under in every host's config.
pub const SERVER_NAME: &str = "project-helper";

/// The command project-scoped snippets name: the installers put it on PATH.
pub const INSTALLED_COMMAND: &str = "mcp-project-helper";

/// The workspace variable Cursor and VS Code expand in their MCP configs.
const WORKSPACE_FOLDER: &str = "${workspaceFolder}";

/// The image the release workflow pushes (`.github/workflows/publish-image.yml`
/// tags `ghcr.io/<repository owner>/mcp-project-helper`).
pub const IMAGE: &str = "ghcr.io/mcp-project-helper/mcp-project-helper:latest";

/// How an editor starts the server: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
}

/// Where the container mounts the project (the image's entrypoint passes
/// `--root /project`).
const CONTAINER_ROOT: &str = "/project";

impl Launch {
    /// `binary` with `args`.
    pub fn native(binary: &str, args: Vec<String>) -> Self {
        Self {
            command: binary.to_string(),
            args,
        }
    }

    /// The container image, with `source` mounted read-only at `/project`,
    /// then `server_args` for the server. `-i` keeps stdin open for the
    /// protocol; the server needs no network. `--mount` (not `-v`), so a
    /// folder whose name holds `:` is taken as it is.
    pub fn docker(source: &str, server_args: Vec<String>) -> Self {
        let mount = format!("type=bind,source={source},target={CONTAINER_ROOT},readonly");
        let mut args: Vec<String> = ["run", "-i", "--rm", "--network", "none", "--mount"]
            .iter()
            .map(|a| a.to_string())
            .collect();
        args.push(mount);
        args.push(IMAGE.to_string());
        args.extend(server_args);
        Self {
            command: "docker".to_string(),
            args,
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

/// A host's project scope.
#[derive(Debug, Clone, Copy)]
struct ProjectScope {
    /// The file, relative to the project's top folder; `None` when the
    /// entry lives in the host's settings at project level.
    file: Option<&'static str>,
    /// How the entry names the project's top folder.
    top: Top,
}

/// How a project-scoped entry names the project's top folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Top {
    /// A workspace variable the host expands (`${workspaceFolder}`).
    Variable(&'static str),
    /// `.`: the server resolves it against the project's top
    /// (`config::project_top`).
    Dot,
    /// The host expands nothing: the absolute folder.
    Absolute,
}

/// What one host needs: its document format, and for each scope it has,
/// where the file lives and how the root is given.
struct HostSpec {
    title: &'static str,
    format: Format,
    /// Project scope: where the entry goes, and how it names the project.
    project: Option<ProjectScope>,
    /// User scope: comment lines naming the file per platform.
    user_files: &'static [&'static str],
    /// Whether the server can take the project from the host in user
    /// scope (MCP roots, or the host starts it in the project folder).
    user_finds_project: bool,
    /// The workspace variable the host expands in its user settings too.
    user_variable: Option<&'static str>,
    /// A note printed after the file names (how to reload, caveats).
    note: &'static str,
}

fn spec(host: Host) -> HostSpec {
    match host {
        Host::ClaudeCode => HostSpec {
            title: "Claude Code",
            format: Format::McpServers,
            project: Some(ProjectScope {
                file: Some(".mcp.json"),
                top: Top::Dot,
            }),
            user_files: &[
                "~/.claude.json (top-level mcpServers); `claude mcp add --scope user` writes it",
            ],
            user_finds_project: true,
            user_variable: None,
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
            user_variable: None,
            note: "Claude Desktop has no workspace: each entry serves one folder (add one entry, with its own name, per project), or install the .mcpb bundle. Restart Claude Desktop after editing.",
        },
        Host::Cursor => HostSpec {
            title: "Cursor",
            format: Format::McpServers,
            project: Some(ProjectScope {
                file: Some(".cursor/mcp.json"),
                top: Top::Variable(WORKSPACE_FOLDER),
            }),
            user_files: &["~/.cursor/mcp.json (Windows: %USERPROFILE%\\.cursor\\mcp.json)"],
            user_finds_project: true,
            user_variable: Some(WORKSPACE_FOLDER),
            note: "Cursor expands ${workspaceFolder}; without --root the server serves the open workspace (Cursor's MCP root).",
        },
        Host::Vscode => HostSpec {
            title: "VS Code",
            format: Format::VscodeServers,
            project: Some(ProjectScope {
                file: Some(".vscode/mcp.json"),
                top: Top::Variable(WORKSPACE_FOLDER),
            }),
            user_files: &["the user mcp.json: run \"MCP: Open User Configuration\""],
            user_finds_project: true,
            user_variable: Some(WORKSPACE_FOLDER),
            note: "VS Code expands ${workspaceFolder}; without --root the server serves the first workspace folder (VS Code's MCP roots).",
        },
        Host::Codex => HostSpec {
            title: "Codex CLI",
            format: Format::CodexToml,
            project: Some(ProjectScope {
                file: Some(".codex/config.toml"),
                top: Top::Dot,
            }),
            user_files: &["~/.codex/config.toml (Windows: %USERPROFILE%\\.codex\\config.toml)"],
            user_finds_project: true,
            user_variable: None,
            note: "Codex reads a project's .codex/config.toml only once you trust the project; it starts servers in the folder you run it in. Check with `codex mcp list`.",
        },
        Host::Gemini => HostSpec {
            title: "Gemini CLI",
            format: Format::McpServers,
            project: Some(ProjectScope {
                file: Some(".gemini/settings.json"),
                top: Top::Dot,
            }),
            user_files: &[
                "~/.gemini/settings.json (Windows: %USERPROFILE%\\.gemini\\settings.json)",
            ],
            user_finds_project: true,
            user_variable: None,
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
            user_variable: None,
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
            user_finds_project: false,
            user_variable: None,
            note: "Zed does not answer the server's roots/list and has started context servers from / (zed issue 60879), so the entry names its project with --root: one entry, with its own name, per project. Without a root the server refuses to serve /, a home or a system folder.",
        },
        Host::Cline => HostSpec {
            title: "Cline",
            format: Format::McpServers,
            project: None,
            user_files: &[
                "cline_mcp_settings.json: Cline's MCP Servers icon -> Configure -> Configure MCP Servers opens it",
            ],
            user_finds_project: false,
            user_variable: None,
            note: "Cline's settings are per user: each entry serves one folder.",
        },
        Host::Jetbrains => HostSpec {
            title: "JetBrains AI Assistant",
            format: Format::McpServers,
            project: Some(ProjectScope {
                file: None,
                top: Top::Absolute,
            }),
            user_files: &[
                "Settings | Tools | AI Assistant | Model Context Protocol (MCP) -> Add -> As JSON",
                "then pick the level (global or current project) in the Level column",
            ],
            user_finds_project: false,
            user_variable: None,
            note: "JetBrains expands no workspace variable here: the entry serves one folder; at the \"current project\" level it stays with that project.",
        },
    }
}

/// The scope `config` prints when none is asked for: the project file where
/// the host has one, else the user's settings.
pub fn default_scope(host: Host) -> Scope {
    if spec(host)
        .project
        .is_some_and(|project| project.file.is_some())
    {
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
    #[error("{0}")]
    Refused(String),
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
    /// The project root, absolute.
    pub root: &'a str,
    /// True when `--root` named the root; false when it is the project's
    /// top (project scope) or the working folder (user scope).
    pub root_named: bool,
    /// The project's top folder, absolute: where a project file goes; the
    /// root or a folder above it.
    pub top: &'a str,
    /// This binary's absolute path (user-scoped snippets start it).
    pub binary: &'a str,
    pub docker: bool,
    /// The other server flags given to `config`, paths absolute.
    pub docs: Option<&'a str>,
    pub config: Option<&'a str>,
    pub log_file: Option<&'a str>,
    pub log_level: Option<&'a str>,
}

/// `path` below `top` as a `/`-separated relative path (`""` for `top`
/// itself), compared as text so that Windows paths work on every platform.
fn below(path: &str, top: &str) -> Option<String> {
    let rest = path.strip_prefix(top)?;
    if rest.is_empty() {
        return Some(String::new());
    }
    let rest = if top.ends_with(['/', '\\']) {
        rest
    } else {
        rest.strip_prefix(['/', '\\'])?
    };
    Some(rest.replace('\\', "/"))
}

/// A folder below the project's top as a project-scoped entry writes it:
/// through the workspace variable, relative (`.`-based) or absolute.
fn in_project(top_form: Top, relative: &str, absolute: &str) -> String {
    match (top_form, relative) {
        (Top::Absolute, _) => absolute.to_string(),
        (Top::Variable(variable), "") => variable.to_string(),
        (Top::Variable(variable), relative) => format!("{variable}/{relative}"),
        (Top::Dot, "") => ".".to_string(),
        (Top::Dot, relative) => relative.to_string(),
    }
}

/// How `request` writes its paths, and what it must say about them.
struct Paths<'r> {
    request: &'r Request<'r>,
    /// The project scope's form of the top folder; `None` in user scope
    /// (absolute paths).
    top_form: Option<Top>,
    /// Comment lines about paths written as they are.
    notes: Vec<String>,
}

impl Paths<'_> {
    /// `path` (absolute) as the entry writes it: relative to the project's
    /// top in project scope when it lies below it, else absolute (said in a
    /// note: that path is personal to this machine).
    fn write(&mut self, flag: &str, path: &str) -> String {
        let Some(top_form) = self.top_form else {
            return path.to_string();
        };
        match below(path, self.request.top) {
            Some(relative) => in_project(top_form, &relative, path),
            None => {
                self.notes.push(format!(
                    "{flag} {path} lies outside the project: its absolute path is written, which holds only on this machine."
                ));
                path.to_string()
            }
        }
    }
}

/// The launch a snippet holds for `request`, and comment lines about it.
pub fn launch_for(request: &Request) -> Result<(Launch, Vec<String>), SnippetError> {
    let spec = spec(request.host);
    let top_form = match request.scope {
        Scope::Project => Some(
            spec.project
                .ok_or(SnippetError::NoProjectScope { host: spec.title })?
                .top,
        ),
        Scope::User => None,
    };
    let mut paths = Paths {
        request,
        top_form,
        notes: Vec::new(),
    };
    if request.docker {
        return docker_launch(request, &spec, paths);
    }
    let mut args = Vec::new();
    let root = match request.scope {
        Scope::Project => Some(paths.write("--root", request.root)),
        Scope::User if request.root_named || !spec.user_finds_project => {
            Some(request.root.to_string())
        }
        Scope::User => None,
    };
    if let Some(root) = root {
        args.extend(["--root".to_string(), root]);
    }
    for (flag, path) in [
        ("--docs", request.docs),
        ("--config", request.config),
        ("--log-file", request.log_file),
    ] {
        if let Some(path) = path {
            let written = paths.write(flag, path);
            args.extend([flag.to_string(), written]);
        }
    }
    if let Some(level) = request.log_level {
        args.extend(["--log-level".to_string(), level.to_string()]);
    }
    let command = match request.scope {
        Scope::Project => INSTALLED_COMMAND,
        Scope::User => request.binary,
    };
    Ok((Launch::native(command, args), paths.notes))
}

/// The container form: the project mounted at `/project`, the other flags
/// translated to the container's paths or refused with the reason.
fn docker_launch(
    request: &Request,
    spec: &HostSpec,
    mut paths: Paths,
) -> Result<(Launch, Vec<String>), SnippetError> {
    let variable = match (paths.top_form, spec.user_variable) {
        (Some(Top::Variable(variable)), _) => Some(variable),
        (None, Some(variable)) if !request.root_named => Some(variable),
        _ => None,
    };
    let source = match variable {
        Some(variable) => {
            let relative = below(request.root, request.top).unwrap_or_default();
            paths.notes.push(format!(
                "{} expands {variable}: the container serves the open workspace{}.",
                spec.title,
                if relative.is_empty() {
                    String::new()
                } else {
                    format!("'s {relative}")
                }
            ));
            in_project(Top::Variable(variable), &relative, request.root)
        }
        None => {
            if request.root.contains(',') {
                return Err(SnippetError::Refused(format!(
                    "the project folder {} holds a ',', which a --mount option cannot carry; rename the folder or run the server natively (without --docker)",
                    request.root
                )));
            }
            paths.notes.push(format!(
                "{} expands no workspace variable here, so the mount names {}: the entry serves that folder only (each checkout or project writes its own entry).",
                spec.title, request.root
            ));
            request.root.to_string()
        }
    };
    let mut server_args = Vec::new();
    for (flag, path) in [("--docs", request.docs), ("--config", request.config)] {
        let Some(path) = path else { continue };
        let Some(relative) = below(path, request.root) else {
            return Err(SnippetError::Refused(format!(
                "{flag} {path} lies outside the project, and the container sees only the project (at {CONTAINER_ROOT}); name a path inside the project, or run the server natively (without --docker)"
            )));
        };
        let inside = if relative.is_empty() {
            CONTAINER_ROOT.to_string()
        } else {
            format!("{CONTAINER_ROOT}/{relative}")
        };
        server_args.extend([flag.to_string(), inside]);
    }
    if request.log_file.is_some() {
        return Err(SnippetError::Refused(
            "--log-file cannot go with --docker: the container's file system is read-only and removed when the session ends; the server logs to stderr, which the host keeps in its MCP log".to_string(),
        ));
    }
    if let Some(level) = request.log_level {
        server_args.extend(["--log-level".to_string(), level.to_string()]);
    }
    Ok((Launch::docker(&source, server_args), paths.notes))
}

/// The whole text `config` prints: `#` comment lines that say which file
/// and scope the snippet belongs to, for Claude Code the `claude mcp add`
/// lines, then the document (the last block, starting with `{` or `[`).
pub fn render(request: &Request, shells: &[Shell]) -> Result<String, SnippetError> {
    let spec = spec(request.host);
    let (launch, notes) = launch_for(request)?;
    let document = host_document(request.host, &launch)?;
    let mut out = String::new();
    match request.scope {
        Scope::Project => {
            let project = spec
                .project
                .ok_or(SnippetError::NoProjectScope { host: spec.title })?;
            match project.file {
                Some(file) => {
                    // Joined per component, so Windows shows `\` throughout.
                    let path = file
                        .split('/')
                        .fold(PathBuf::from(request.top), |path, part| path.join(part));
                    out += &format!(
                        "# {}, project scope (shared with everyone who clones the project): {}\n",
                        spec.title,
                        path.display()
                    );
                }
                None => {
                    out += &format!(
                        "# {}, project scope (the project's level of the host's settings), for {}:\n",
                        spec.title, request.top
                    );
                    for line in spec.user_files {
                        out += &format!("#   {line}\n");
                    }
                }
            }
            if project.top == Top::Dot {
                out += "# A relative path is read from the project's top (the nearest folder with .git, else with this file), from any subfolder.\n";
            }
            if !request.docker {
                out += "# Needs mcp-project-helper on PATH (the installers and `cargo install --path .` put it there).\n";
            }
        }
        Scope::User => {
            out += &format!("# {}, user scope (your own settings):\n", spec.title);
            for line in spec.user_files {
                out += &format!("#   {line}\n");
            }
        }
    }
    for note in notes {
        out += &format!("# {note}\n");
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

pub fn print_snippet(args: &ConfigArgs, flags: &ServerArgs, config: &Config) -> ExitCode {
    let text = match snippet_for_this_binary(args, flags, config) {
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

/// The snippet for the flags given on this command line (not the
/// environment's settings: the snippet holds what the user asked for).
fn snippet_for_this_binary(
    args: &ConfigArgs,
    flags: &ServerArgs,
    config: &Config,
) -> Result<String, String> {
    let scope = args.scope.unwrap_or_else(|| default_scope(args.host));
    let named = |flag: &Option<PathBuf>| flag.is_some();
    let working_dir = std::env::current_dir()
        .map_err(|error| format!("cannot use the working directory: {error}"))?;
    let working_dir = canonical_dir(&working_dir).map_err(|error| error.to_string())?;
    // A project file belongs at the project's top, wherever `config` runs;
    // a root named outside that top is a project of its own.
    let top = project_top(&working_dir);
    let root = match (&config.root, named(&flags.root)) {
        (Some(root), true) => root.clone(),
        _ if scope == Scope::Project => top.clone(),
        _ => working_dir,
    };
    let top = if root.starts_with(&top) {
        top
    } else {
        root.clone()
    };
    let binary = std::env::current_exe()
        .map_err(|error| format!("cannot find the path of this binary: {error}"))?;
    let binary = dunce::canonicalize(&binary).unwrap_or(binary);
    let docs = config.docs_root.as_deref().filter(|_| named(&flags.docs));
    let config_file = config
        .config_file
        .as_deref()
        .filter(|_| named(&flags.config));
    let log_file = config
        .log_file
        .as_deref()
        .filter(|_| named(&flags.log_file));
    let request = Request {
        host: args.host,
        scope,
        root: utf8(&root, "the project root")?,
        root_named: named(&flags.root),
        top: utf8(&top, "the project's top folder")?,
        binary: utf8(&binary, "this binary's path")?,
        docker: args.docker,
        docs: optional_utf8(docs, "the docs folder")?,
        config: optional_utf8(config_file, "the config file")?,
        log_file: optional_utf8(log_file, "the log file")?,
        log_level: flags.log_level.as_deref(),
    };
    render(&request, Shell::for_this_platform()).map_err(|error| error.to_string())
}

fn optional_utf8<'a>(path: Option<&'a Path>, what: &str) -> Result<Option<&'a str>, String> {
    path.map(|path| utf8(path, what)).transpose()
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
            root_named: false,
            top: WINDOWS_ROOT,
            binary: WINDOWS_EXE,
            docker,
            docs: None,
            config: None,
            log_file: None,
            log_level: None,
        }
    }

    fn launch(request: &Request) -> Launch {
        launch_for(request).expect("a launch").0
    }

    fn scopes(host: Host) -> Vec<Scope> {
        let mut scopes = vec![Scope::User];
        if spec(host).project.is_some() {
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
                    let launch = launch(&request);
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
        ] {
            let launch = launch(&request(host, Scope::User, false));
            assert_eq!(launch.args, Vec::<String>::new(), "{host:?}");
        }
        // Zed does not answer roots/list and may start servers from `/`.
        for host in [
            Host::ClaudeDesktop,
            Host::Windsurf,
            Host::Zed,
            Host::Cline,
            Host::Jetbrains,
        ] {
            let launch = launch(&request(host, Scope::User, false));
            assert_eq!(launch.args, ["--root", WINDOWS_ROOT], "{host:?}");
        }
        let jetbrains = launch(&request(Host::Jetbrains, Scope::Project, false));
        assert_eq!(jetbrains.args, ["--root", WINDOWS_ROOT]);
        for host in [Host::ClaudeDesktop, Host::Windsurf, Host::Zed, Host::Cline] {
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
        let root_args = |root: &str| vec!["--root".to_string(), root.to_string()];
        let launch = Launch::native(WINDOWS_EXE, root_args(WINDOWS_ROOT));
        assert_eq!(
            claude_mcp_add(&launch, Scope::User, Shell::PowerShell),
            r"claude mcp add --scope user --transport stdio project-helper '--' 'C:\Users\Zoë O''Neil\My Tools\mcp-project-helper.exe' --root 'D:\work\my shop'"
        );
        assert_eq!(
            claude_mcp_add(&launch, Scope::User, Shell::Cmd),
            r#"claude mcp add --scope user --transport stdio project-helper -- "C:\Users\Zoë O'Neil\My Tools\mcp-project-helper.exe" --root "D:\work\my shop""#
        );
        let launch = Launch::native(
            "/home/o'neil/bin/mcp-project-helper",
            root_args("/srv/my shop"),
        );
        assert_eq!(
            claude_mcp_add(&launch, Scope::Project, Shell::Posix),
            r#"claude mcp add --scope project --transport stdio project-helper -- '/home/o'\''neil/bin/mcp-project-helper' --root '/srv/my shop'"#
        );
    }

    #[test]
    fn docker_form_mounts_the_root_read_only_honouring_the_scope() {
        let mount = |source: &str| format!("type=bind,source={source},target=/project,readonly");
        // User scope, a host without a variable: the one folder, said so.
        let (fixed, notes) = launch_for(&request(Host::ClaudeCode, Scope::User, true)).unwrap();
        assert_eq!(fixed.command, "docker");
        assert_eq!(
            fixed.args,
            [
                "run",
                "-i",
                "--rm",
                "--network",
                "none",
                "--mount",
                &mount(WINDOWS_ROOT),
                IMAGE
            ]
        );
        assert!(notes[0].contains("serves that folder only"), "{notes:?}");
        // Cursor and VS Code expand the variable in either scope.
        for scope in [Scope::User, Scope::Project] {
            for host in [Host::Cursor, Host::Vscode] {
                let mounted = launch(&request(host, scope, true));
                assert!(
                    mounted.args.contains(&mount("${workspaceFolder}")),
                    "{host:?} {scope:?}: {mounted:?}"
                );
            }
        }
        // A root named below the top is mounted through the variable.
        let mut below_top = request(Host::Vscode, Scope::Project, true);
        below_top.root = r"D:\work\my shop\demo";
        below_top.root_named = true;
        assert!(
            launch(&below_top)
                .args
                .contains(&mount("${workspaceFolder}/demo"))
        );
        // A folder name with ':' and non-ASCII survives --mount.
        let mut odd = request(Host::Codex, Scope::Project, true);
        odd.root = "/srv/a:b/Zoë's shop";
        odd.top = odd.root;
        assert!(launch(&odd).args.contains(&mount("/srv/a:b/Zoë's shop")));
        odd.root = "/srv/a,b";
        odd.top = odd.root;
        assert!(matches!(launch_for(&odd), Err(SnippetError::Refused(_))));
    }

    #[test]
    fn every_flag_reaches_the_snippet_or_is_refused_with_the_reason() {
        let top = "/home/me/shop";
        let with_flags = |host, scope, docker| Request {
            root: "/home/me/shop/app",
            root_named: true,
            top,
            docs: Some("/home/me/shop/app/handbook"),
            config: Some("/home/me/ops/helper.toml"),
            log_file: Some("/home/me/shop/target/helper.log"),
            log_level: Some("debug"),
            ..request(host, scope, docker)
        };
        let (project, notes) =
            launch_for(&with_flags(Host::ClaudeCode, Scope::Project, false)).unwrap();
        assert_eq!(
            project.args,
            [
                "--root",
                "app",
                "--docs",
                "app/handbook",
                "--config",
                "/home/me/ops/helper.toml",
                "--log-file",
                "target/helper.log",
                "--log-level",
                "debug"
            ]
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("--config /home/me/ops/helper.toml lies outside")),
            "{notes:?}"
        );
        let vscode = launch(&with_flags(Host::Vscode, Scope::Project, false));
        assert_eq!(vscode.args[1], "${workspaceFolder}/app");
        assert_eq!(vscode.args[3], "${workspaceFolder}/app/handbook");
        let user = launch(&with_flags(Host::Cursor, Scope::User, false));
        assert_eq!(user.command, WINDOWS_EXE);
        assert_eq!(
            user.args,
            [
                "--root",
                "/home/me/shop/app",
                "--docs",
                "/home/me/shop/app/handbook",
                "--config",
                "/home/me/ops/helper.toml",
                "--log-file",
                "/home/me/shop/target/helper.log",
                "--log-level",
                "debug"
            ]
        );
        // The container sees only the project: a log file, or a config
        // outside the project, is refused with the reason.
        let refused = |request: &Request| match launch_for(request) {
            Err(SnippetError::Refused(reason)) => reason,
            other => panic!("not refused: {other:?}"),
        };
        let docker = with_flags(Host::Cursor, Scope::Project, true);
        assert!(refused(&docker).contains("--config /home/me/ops/helper.toml lies outside"));
        let docker = Request {
            config: None,
            ..docker
        };
        assert!(refused(&docker).contains("--log-file cannot go with --docker"));
        let docker = Request {
            log_file: None,
            ..docker
        };
        let container = launch(&docker);
        let after_image = container
            .args
            .iter()
            .position(|a| a == IMAGE)
            .expect("image")
            + 1;
        assert_eq!(
            container.args[after_image..],
            ["--docs", "/project/handbook", "--log-level", "debug"]
        );
    }

    #[test]
    fn paths_below_the_top_are_found_on_either_platform() {
        assert_eq!(
            below(r"D:\work\shop\a\b", r"D:\work\shop"),
            Some("a/b".to_string())
        );
        assert_eq!(below("/w/shop", "/w/shop"), Some(String::new()));
        assert_eq!(below("/w/shop-secret", "/w/shop"), None);
        assert_eq!(below("/w/x", "/"), Some("w/x".to_string()));
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
