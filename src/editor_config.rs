//! `mcp-project-helper config <host>`: prints an editor's MCP config snippet.

use std::process::ExitCode;

use crate::cli::ConfigArgs;
use crate::config::Config;

pub fn print_snippet(_args: &ConfigArgs, _config: &Config) -> ExitCode {
    eprintln!("config snippets are not available yet");
    ExitCode::FAILURE
}
