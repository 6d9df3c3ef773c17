//! The container form of a snippet: `docker run` with the project mounted
//! read-only at `/project`, the other flags translated to the container's
//! paths or refused with the reason.

use super::host_specs::{HostSpec, Top};
use super::paths::{Paths, below, in_project};
use super::{Launch, Request, SnippetError};

/// The image the release workflow pushes (`.github/workflows/publish-image.yml`
/// tags `ghcr.io/<repository owner>/mcp-project-helper`).
pub const IMAGE: &str = "ghcr.io/mcp-project-helper/mcp-project-helper:latest";

/// Where the container mounts the project (the image's entrypoint passes
/// `--root /project`).
const CONTAINER_ROOT: &str = "/project";

impl Launch {
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

/// The container form: the project mounted at `/project`, the other flags
/// translated to the container's paths or refused with the reason.
pub(super) fn docker_launch(
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::{WINDOWS_ROOT, launch, request};
    use super::super::launch_for;
    use super::*;
    use crate::cli::{Host, Scope};

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
}
