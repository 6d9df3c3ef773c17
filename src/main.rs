//! `mcp-project-helper`: the command line only. Serving lives in `server`,
//! configuration in `config`.

use std::process::ExitCode;

use clap::Parser;

use mcp_project_helper::cli::{Cli, Command};
use mcp_project_helper::config::Config;
use mcp_project_helper::{hosts, index, logging, report, runner, server};

/// jemalloc on x86_64 Linux (see Cargo.toml). Two arenas, as glibc's is
/// held to elsewhere, and freed pages go back to the system at once (its
/// default ten-second delay lifts a first build's peak by 23 MB). Each
/// thread keeps freed blocks of up to 256 KiB (a source file's read) for
/// reuse, not only up to 32 KiB: larger reads would otherwise fault their
/// pages in again at every call (a restarted session's first searches
/// 10 % slower).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod allocator {
    #[global_allocator]
    static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

    #[unsafe(export_name = "_rjem_malloc_conf")]
    static OPTIONS: Options =
        Options(c"narenas:2,dirty_decay_ms:0,muzzy_decay_ms:0,tcache_max:262144".as_ptr());

    /// The C string jemalloc reads its options from at start-up.
    #[repr(transparent)]
    struct Options(*const std::ffi::c_char);

    // SAFETY: the pointer is to a static string that nothing writes.
    unsafe impl Sync for Options {}
}

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
