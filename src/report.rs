//! `mcp-project-helper checks`: the checks that would be offered for the
//! root, each with its program or why it is unavailable; `index
//! status|clear`: the root's index cache. Output for a person at a
//! terminal, never for the protocol.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::checks::{CheckCatalog, display_command};
use crate::cli::IndexCommand;
use crate::config::Config;
use crate::index::cache;
use crate::security::PathGate;

pub fn print_checks(config: &Config) -> ExitCode {
    let gate = match config
        .root_or_working_dir()
        .and_then(|root| PathGate::new(root, &config.deny_globs).map_err(|e| e.to_string()))
    {
        Ok(gate) => gate,
        Err(error) => {
            eprintln!("mcp-project-helper: {error}");
            return ExitCode::from(2);
        }
    };
    let catalog = CheckCatalog::detect(config, &gate);
    // A closed stdout (`checks | head`) is not worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), checks_report(&catalog).as_bytes());
    ExitCode::SUCCESS
}

pub fn print_index_cache(command: IndexCommand, config: &Config) -> ExitCode {
    let report = config.root_or_working_dir().and_then(|root| {
        match command {
            IndexCommand::Status => cache::status(&config.index_cache, &root),
            IndexCommand::Clear => cache::clear(&config.index_cache, &root),
        }
        .map_err(|error| error.to_string())
    });
    match report {
        Ok(report) => {
            let _ = std::io::Write::write_all(&mut std::io::stdout(), report.as_bytes());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("mcp-project-helper: {error}");
            ExitCode::from(1)
        }
    }
}

fn checks_report(catalog: &CheckCatalog) -> String {
    let mut out = String::new();
    let root = catalog.root().display();
    if catalog.iter().next().is_none() {
        let _ = writeln!(
            out,
            "No checks are offered for {root}: no Cargo.toml, go.mod, pytest setup or package.json test script was found, and the operator config adds none."
        );
        return out;
    }
    let _ = writeln!(out, "Checks offered for {root}:");
    for (name, check) in catalog.iter() {
        let _ = writeln!(out, "\n{name}: {}", display_command(&check.argv));
        let _ = writeln!(out, "  from:    {}", check.origin);
        match catalog.resolve(check) {
            Ok(program) => {
                let _ = writeln!(out, "  program: {}", program.display());
            }
            Err(reason) => {
                let _ = writeln!(out, "  unavailable: {reason}");
            }
        }
        let _ = writeln!(out, "  timeout: {}s", check.timeout.as_secs());
        if !check.env.is_empty() {
            let keys = check.env.keys().cloned().collect::<Vec<_>>().join(", ");
            let _ = writeln!(out, "  env:     {keys}");
        }
    }
    out
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::checks::fixtures::catalog_with_own_path;

    #[test]
    fn the_report_names_each_check_and_its_program() {
        let (_folders, catalog, program) = catalog_with_own_path();
        let report = checks_report(&catalog);
        assert!(report.contains("custom: only-here"), "{report}");
        assert!(
            report.contains(&format!("program: {}", program.display())),
            "{report}"
        );
        assert!(report.contains("env:     PATH"), "{report}");
    }
}
