//! The program and arguments a snippet starts, resolved for the scope:
//! the project's paths written relative to its top (or through the host's
//! workspace variable) in project scope, absolute in user scope.

use super::docker::docker_launch;
use super::host_specs::spec;
use super::paths::Paths;
use super::{INSTALLED_COMMAND, Request, SnippetError};
use crate::cli::Scope;

/// How an editor starts the server: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
}

impl Launch {
    /// `binary` with `args`.
    pub fn native(binary: &str, args: Vec<String>) -> Self {
        Self {
            command: binary.to_string(),
            args,
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::{WINDOWS_EXE, WINDOWS_ROOT, launch, request};
    use super::super::{IMAGE, render};
    use super::*;
    use crate::cli::Host;

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
}
