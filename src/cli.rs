//! The command line. Flags win over environment variables: `ServerArgs::overrides` merges them by hand (clap only parses the flags), so that an empty variable counts as unset.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::Overrides;

#[derive(Debug, Parser)]
#[command(
    name = "mcp-project-helper",
    version,
    about = "MCP server (stdio) that lets a coding assistant search, read and check ONE project directory, safely.",
    long_about = "MCP server (stdio) that lets a coding assistant search, read and check ONE project \
directory, safely.\n\nWithout a subcommand it serves the Model Context Protocol on stdin/stdout; \
logs go to stderr (and --log-file). Start it from your editor's MCP config; \
`mcp-project-helper config <host>` prints the snippet."
)]
pub struct Cli {
    #[command(flatten)]
    pub server: ServerArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// The only directory the file tools may touch [default: the client's first root, else the working directory] [env: MCP_PROJECT_HELPER_ROOT or PROJECT_ROOT]
    #[arg(long, value_name = "DIR", global = true)]
    pub root: Option<PathBuf>,

    /// Markdown folder that get_docs searches [default: <root>/docs] [env: MCP_PROJECT_HELPER_DOCS_ROOT]
    #[arg(long, value_name = "DIR", global = true)]
    pub docs: Option<PathBuf>,

    /// Operator config file (TOML): checks, limits, extra deny globs, index [env: MCP_PROJECT_HELPER_CONFIG]
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,

    /// Also append log lines to this file [env: MCP_PROJECT_HELPER_LOG_FILE]
    #[arg(long, value_name = "FILE", global = true)]
    pub log_file: Option<PathBuf>,

    /// DEBUG, INFO, WARNING, ERROR or CRITICAL (any case) [default: INFO] [env: MCP_PROJECT_HELPER_LOG_LEVEL]
    #[arg(long, value_name = "LEVEL", global = true)]
    pub log_level: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the checks run_project_check would offer, with each program's resolved path or why it is unavailable
    Checks,
    /// Print the MCP config snippet for one host (Claude Code, Cursor, VS Code, Codex, ...) that starts this binary (or the container), and say which file and scope it belongs to
    Config(ConfigArgs),
    /// Show or remove the search index kept on disk for the root (--root DIR, else the working directory)
    #[command(subcommand)]
    Index(IndexCommand),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub enum IndexCommand {
    /// Print where the root's index cache lives, its size and the files it covers
    Status,
    /// Remove the root's index cache (the next server rebuilds it)
    Clear,
}

#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// The MCP host to print the snippet for
    #[arg(value_enum)]
    pub host: Host,
    /// `project`: a file shared in the project (workspace-relative root); `user`: your own config for every project [default: project where the host has one, else user]
    #[arg(long, value_enum)]
    pub scope: Option<Scope>,
    /// Run the server as `docker run -i --rm` with the project mounted read-only
    #[arg(long)]
    pub docker: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Host {
    ClaudeCode,
    ClaudeDesktop,
    Cursor,
    Vscode,
    Codex,
    Gemini,
    Windsurf,
    Zed,
    Cline,
    Jetbrains,
}

/// Where a host keeps the entry: in the project (shared with everyone who
/// clones it) or in the user's own settings (every project).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    Project,
    User,
}

impl ServerArgs {
    /// Flags win over environment variables; an empty variable counts as
    /// unset (editors often write `"VAR": ""`). `PROJECT_ROOT` is the
    /// prototype's name for the root.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            root: self.root.clone().or_else(|| {
                env_value("MCP_PROJECT_HELPER_ROOT")
                    .or_else(|| env_value("PROJECT_ROOT"))
                    .map(PathBuf::from)
            }),
            docs: self
                .docs
                .clone()
                .or_else(|| env_value("MCP_PROJECT_HELPER_DOCS_ROOT").map(PathBuf::from)),
            config_file: self
                .config
                .clone()
                .or_else(|| env_value("MCP_PROJECT_HELPER_CONFIG").map(PathBuf::from)),
            log_file: self
                .log_file
                .clone()
                .or_else(|| env_value("MCP_PROJECT_HELPER_LOG_FILE").map(PathBuf::from)),
            log_level: self.log_level.clone().or_else(|| {
                env_value("MCP_PROJECT_HELPER_LOG_LEVEL").map(|v| v.to_string_lossy().into_owned())
            }),
        }
    }
}

fn env_value(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}
