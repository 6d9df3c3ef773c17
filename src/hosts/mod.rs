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
//! The parts: `host_specs` (what each host reads), `launch` (the command
//! and arguments for a scope), `docker` (the container form), `document`
//! (the config document) and `claude_command` (the `claude mcp add` line);
//! this module renders them into the printed text.

mod claude_command;
mod docker;
mod document;
#[cfg(test)]
mod fixtures;
mod host_specs;
mod launch;
mod paths;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{ConfigArgs, Host, Scope, ServerArgs};
use crate::config::{Config, canonical_dir, project_top};

pub use claude_command::{Shell, claude_mcp_add};
pub use docker::IMAGE;
pub use document::host_document;
pub use host_specs::default_scope;
use host_specs::{Top, spec};
pub use launch::{Launch, launch_for};

/// The name the server is registered under in every host's config.
pub const SERVER_NAME: &str = "project-helper";

/// The command project-scoped snippets name: the installers put it on PATH.
pub const INSTALLED_COMMAND: &str = "mcp-project-helper";

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
    use serde_json::json;

    use super::fixtures::{WINDOWS_EXE, entry, launch, parsed, request, scopes};
    use super::*;

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
