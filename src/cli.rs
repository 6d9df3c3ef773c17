//! The command line. Flags win over environment variables (clap's `env`).

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
    /// The only directory the file tools may touch [default: the client's first root, else the working directory]
    #[arg(
        long,
        value_name = "DIR",
        env = "MCP_PROJECT_HELPER_ROOT",
        global = true
    )]
    pub root: Option<PathBuf>,

    /// Markdown folder that get_docs searches [default: <root>/docs]
    #[arg(
        long,
        value_name = "DIR",
        env = "MCP_PROJECT_HELPER_DOCS_ROOT",
        global = true
    )]
    pub docs: Option<PathBuf>,

    /// Operator config file (TOML): checks, limits, extra deny globs
    #[arg(
        long,
        value_name = "FILE",
        env = "MCP_PROJECT_HELPER_CONFIG",
        global = true
    )]
    pub config: Option<PathBuf>,

    /// Also append log lines to this file
    #[arg(
        long,
        value_name = "FILE",
        env = "MCP_PROJECT_HELPER_LOG_FILE",
        global = true
    )]
    pub log_file: Option<PathBuf>,

    /// DEBUG, INFO, WARNING, ERROR or CRITICAL (any case) [default: INFO]
    #[arg(
        long,
        value_name = "LEVEL",
        env = "MCP_PROJECT_HELPER_LOG_LEVEL",
        global = true
    )]
    pub log_level: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the checks run_project_check would offer, with each program's resolved path or why it is unavailable
    Checks,
    /// Print an MCP config snippet for an editor, pointing at this binary
    Config(ConfigArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// The MCP host to print the snippet for
    #[arg(value_enum)]
    pub host: Host,
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
}

impl ServerArgs {
    pub fn overrides(&self) -> Overrides {
        // PROJECT_ROOT is the prototype's name for the root; clap reads only
        // the primary variable, so the alias is consulted here.
        let root = self.root.clone().or_else(|| {
            std::env::var_os("PROJECT_ROOT")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
        Overrides {
            root,
            docs: self.docs.clone(),
            config_file: self.config.clone(),
            log_file: self.log_file.clone(),
            log_level: self.log_level.clone(),
        }
    }
}
