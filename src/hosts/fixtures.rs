//! Requests and parsers the `hosts` unit tests share.

use serde_json::Value;

use super::host_specs::spec;
use super::{Launch, Request, SERVER_NAME, launch_for};
use crate::cli::{Host, Scope};

pub(super) const WINDOWS_EXE: &str = r"C:\Users\Zoë O'Neil\My Tools\mcp-project-helper.exe";
pub(super) const WINDOWS_ROOT: &str = r"D:\work\my shop";

pub(super) fn request(host: Host, scope: Scope, docker: bool) -> Request<'static> {
    Request {
        host,
        scope,
        root: WINDOWS_ROOT,
        root_named: false,
        top: WINDOWS_ROOT,
        binary: WINDOWS_EXE,
        docker,
        docs: None,
        config: None,
        log_file: None,
        log_level: None,
    }
}

pub(super) fn launch(request: &Request) -> Launch {
    launch_for(request).expect("a launch").0
}

pub(super) fn scopes(host: Host) -> Vec<Scope> {
    let mut scopes = vec![Scope::User];
    if spec(host).project.is_some() {
        scopes.push(Scope::Project);
    }
    scopes
}

/// The document block of a rendered snippet, parsed back into JSON
/// (TOML documents are converted), with the servers key it used.
pub(super) fn parsed(host: Host, text: &str) -> Value {
    let start = text.find("\n\n").expect("blank line before the document") + 2;
    let document = &text[start..];
    if host == Host::Codex {
        let table: toml::Table = toml::from_str(document).expect("TOML parses");
        serde_json::to_value(table).expect("TOML as JSON")
    } else {
        serde_json::from_str(document).expect("JSON parses")
    }
}

pub(super) fn entry(host: Host, text: &str) -> Value {
    parsed(host, text)[spec(host).format.servers_key()][SERVER_NAME].clone()
}
