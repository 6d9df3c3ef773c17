//! What each MCP host reads: its config document's shape, where its
//! project and user config files live, and how an entry names the project.

use crate::cli::{Host, Scope};

/// The workspace variable Cursor and VS Code expand in their MCP configs.
const WORKSPACE_FOLDER: &str = "${workspaceFolder}";

/// The document shape a host's config file uses for stdio servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
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

impl Format {
    /// The key the document keeps its servers under.
    pub(super) fn servers_key(self) -> &'static str {
        match self {
            Format::McpServers => "mcpServers",
            Format::VscodeServers => "servers",
            Format::ZedContextServers => "context_servers",
            Format::CodexToml => "mcp_servers",
        }
    }
}

/// A host's project scope.
#[derive(Debug, Clone, Copy)]
pub(super) struct ProjectScope {
    /// The file, relative to the project's top folder; `None` when the
    /// entry lives in the host's settings at project level.
    pub(super) file: Option<&'static str>,
    /// How the entry names the project's top folder.
    pub(super) top: Top,
}

/// How a project-scoped entry names the project's top folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Top {
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
pub(super) struct HostSpec {
    pub(super) title: &'static str,
    pub(super) format: Format,
    /// Project scope: where the entry goes, and how it names the project.
    pub(super) project: Option<ProjectScope>,
    /// User scope: comment lines naming the file per platform.
    pub(super) user_files: &'static [&'static str],
    /// Whether the server can take the project from the host in user
    /// scope (MCP roots, or the host starts it in the project folder).
    pub(super) user_finds_project: bool,
    /// The workspace variable the host expands in its user settings too.
    pub(super) user_variable: Option<&'static str>,
    /// A note printed after the file names (how to reload, caveats).
    pub(super) note: &'static str,
}

/// What `host` needs, from its documentation.
pub(super) fn spec(host: Host) -> HostSpec {
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
