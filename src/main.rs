//! `mcp-project-helper`: the command line only. Serving lives in `server`,
//! configuration in `config`.

use std::process::ExitCode;

use clap::Parser;

use mcp_project_helper::cli::{Cli, Command};
use mcp_project_helper::config::Config;
use mcp_project_helper::{hosts, index, logging, report, runner, server};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::load(cli.server.overrides()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("mcp-project-helper: {error}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Some(Command::Checks) => report::print_checks(&config),
        Some(Command::Config(args)) => hosts::print_snippet(&args, &cli.server, &config),
        Some(Command::Index(command)) => report::print_index_cache(command, &config),
        None => {
            // Before any thread starts: see index::init_server_process.
            index::init_server_process();
            if let Err(error) = logging::init(&config) {
                eprintln!("mcp-project-helper: {error}");
                return ExitCode::from(2);
            }
            // Before any check can run: see runner::init_server_process.
            runner::init_server_process();
            server::run(config)
        }
    }
}
