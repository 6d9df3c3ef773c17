//! The host's config document holding this server's entry: JSON built
//! with `serde_json` and TOML with `toml`, never by concatenation, so
//! Windows paths come out escaped.

use std::collections::BTreeMap;

use serde::Serialize;

use super::host_specs::{Format, spec};
use super::{Launch, SERVER_NAME, SnippetError};
use crate::cli::Host;

/// One stdio server entry, fields in the order the hosts' docs show them.
#[derive(Debug, Serialize)]
struct StdioServer<'a> {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    command: &'a str,
    args: &'a [String],
}

/// The host's config document holding just this server.
pub fn host_document(host: Host, launch: &Launch) -> Result<String, SnippetError> {
    let format = spec(host).format;
    let kind = (format == Format::VscodeServers).then_some("stdio");
    let server = StdioServer {
        kind,
        command: &launch.command,
        args: &launch.args,
    };
    let document = BTreeMap::from([(
        format.servers_key(),
        BTreeMap::from([(SERVER_NAME, server)]),
    )]);
    Ok(match format {
        Format::CodexToml => toml::to_string(&document)?,
        _ => serde_json::to_string_pretty(&document)? + "\n",
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{entry, parsed, request};
    use super::super::render;
    use crate::cli::{Host, Scope};

    #[test]
    fn each_host_uses_its_own_document_shape() {
        let vscode = render(&request(Host::Vscode, Scope::Project, false), &[]).unwrap();
        assert_eq!(entry(Host::Vscode, &vscode)["type"], "stdio");
        let zed = render(&request(Host::Zed, Scope::User, false), &[]).unwrap();
        assert!(parsed(Host::Zed, &zed).get("context_servers").is_some());
        let codex = render(&request(Host::Codex, Scope::User, false), &[]).unwrap();
        assert!(codex.contains("[mcp_servers.project-helper]\n"), "{codex}");
        // The path itself round-trips: see the test above.
    }
}
