//! What the tools work on: the project root behind its gate, the docs
//! folder, the checks offered for that root, and the live model of its
//! tree. Built once per root; the root changes only when the operator did
//! not fix one and the client's roots change (adopting a client root,
//! `file://` URIs included, is here; asking the client is the server's).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{RwLock, watch};

use crate::checks::CheckCatalog;
use crate::config::{Config, canonical_dir};
use crate::corpus::Corpus;
use crate::index::TreeModel;
use crate::security::PathGate;

#[derive(Debug)]
pub struct Project {
    pub gate: PathGate,
    /// Where get_docs reads, or why get_docs is refused (the default
    /// folder leads outside the root).
    pub docs: Result<DocsFolder, String>,
    /// The docs folder as configured or defaulted, for messages.
    pub docs_location: PathBuf,
    /// Detected on first use, not at start: reading the project's files
    /// (and the deny-list's first match) would delay the `initialize`
    /// answer.
    checks: OnceLock<CheckCatalog>,
    /// What the detection of checks reads.
    config: Config,
    /// The live model of the tree (file list and content index), built in
    /// the background; it goes with the root when the root changes.
    pub model: TreeModel,
}

/// Where get_docs reads.
#[derive(Debug)]
pub enum DocsFolder {
    /// A folder inside the root, root-relative, resolved through the
    /// root's gate on every call (its deny rules and ignore files apply).
    InRoot(String),
    /// A folder the operator named outside the root: read through a gate
    /// rooted there (no symlink leaves it), with the same deny rules.
    Outside(Box<PathGate>),
}

impl Project {
    /// `root` must be canonical.
    pub fn open(config: &Config, root: PathBuf) -> Result<Self, String> {
        let deny_globs = with_own_log_file(&config.deny_globs, config.log_file.as_deref(), &root);
        let gate = PathGate::new(root.clone(), &deny_globs).map_err(|e| e.to_string())?;
        let docs_location = config
            .docs_root
            .clone()
            .unwrap_or_else(|| root.join("docs"));
        let docs = docs_folder(&gate, &docs_location, config);
        let model = TreeModel::new(&gate, &config.index);
        model.keep_on_disk(&config.index_cache);
        Ok(Self {
            model,
            gate,
            docs,
            docs_location,
            checks: OnceLock::new(),
            config: config.clone(),
        })
    }

    /// The project's files as a call sees them.
    pub fn corpus(&self) -> Corpus<'_> {
        Corpus::new(&self.gate, &self.model)
    }

    /// The checks this project offers: the configured ones and those
    /// detected from its files.
    pub fn checks(&self) -> &CheckCatalog {
        self.checks.get_or_init(|| {
            let checks = CheckCatalog::detect(&self.config, &self.gate);
            tracing::info!(checks = %checks.names().join(","), "project checks");
            checks
        })
    }

    pub fn root(&self) -> &Path {
        self.gate.root()
    }
}

/// The operator's deny globs, plus the server's own log file when it lies
/// inside `root`: the tools never show the session's own trace, and the
/// index does not follow the lines its own work writes (each would be a
/// change to read, whose reading logs a line).
fn with_own_log_file(deny_globs: &[String], log_file: Option<&Path>, root: &Path) -> Vec<String> {
    let mut globs = deny_globs.to_vec();
    let own = log_file
        .and_then(|file| dunce::canonicalize(file).ok())
        .and_then(|file| crate::security::relative_to_root(root, &file));
    if let Some(relative) = own.filter(|relative| relative != ".") {
        globs.push(globset::escape(&relative));
    }
    globs
}

/// Where get_docs reads (SPEC, security rules): the default `<root>/docs`
/// must resolve inside the root, so that a cloned repository cannot point
/// it elsewhere with a symlink; a folder the operator named (already
/// canonical) may lie anywhere, and outside the root it gets a gate of its
/// own.
fn docs_folder(gate: &PathGate, location: &Path, config: &Config) -> Result<DocsFolder, String> {
    let named = config.docs_root.is_some();
    let refused = |how: &str| {
        let reason = format!(
            "the docs folder {} {how} the project root {}, so get_docs is refused; the default docs folder must lie inside the project (the operator can name any Markdown folder with --docs or MCP_PROJECT_HELPER_DOCS_ROOT)",
            location.display(),
            gate.root().display()
        );
        tracing::warn!(docs = %location.display(), "{reason}");
        reason
    };
    let outside = || {
        PathGate::new(location.to_path_buf(), &config.deny_globs)
            .map(|gate| DocsFolder::Outside(Box::new(gate)))
            .map_err(|error| {
                let reason = format!(
                    "the docs folder {} cannot be opened ({error}), so get_docs is refused",
                    location.display()
                );
                tracing::warn!(docs = %location.display(), "{reason}");
                reason
            })
    };
    let Some(relative) = gate.relative_of(location) else {
        return if named {
            outside()
        } else {
            Err(refused("lies outside"))
        };
    };
    if gate.leads_outside(&relative) {
        return Err(refused("resolves (through a symlink) outside"));
    }
    // Missing, denied or not a folder: decided again on every call.
    Ok(DocsFolder::InRoot(relative))
}

/// The current project, swapped atomically when the client's roots change.
/// Tool calls that arrive while the roots are being asked for wait briefly,
/// so the first call after `initialized` already sees the client's root.
/// Empty while no project is named yet (the server was started in a folder
/// it will not serve, and waits for the client's roots).
#[derive(Debug)]
pub struct ProjectSlot {
    current: RwLock<Result<Arc<Project>, String>>,
    resolving: watch::Sender<bool>,
}

/// How long a tool call waits for the client to answer `roots/list`.
const ROOTS_WAIT: Duration = Duration::from_secs(3);

impl ProjectSlot {
    /// `project` is the project, or why there is none until the client
    /// names one.
    pub fn new(project: Result<Project, String>) -> Self {
        Self {
            current: RwLock::new(project.map(Arc::new)),
            resolving: watch::Sender::new(false),
        }
    }

    /// The project for a call, or why there is none; its model's build
    /// starts now if the session's start did not start it (a client that
    /// never sent `initialized`).
    pub async fn get(&self) -> Result<Arc<Project>, String> {
        let mut receiver = self.resolving.subscribe();
        if *receiver.borrow() {
            let _ = tokio::time::timeout(ROOTS_WAIT, receiver.wait_for(|busy| !busy)).await;
        }
        let project = self.current().await?;
        project.model.start();
        Ok(project)
    }

    /// The current project without waiting for a pending roots answer.
    pub async fn current(&self) -> Result<Arc<Project>, String> {
        self.current.read().await.clone()
    }

    /// Puts `project` in place; the session is up, so its model's build
    /// starts at once.
    pub async fn replace(&self, project: Project) {
        project.model.start();
        *self.current.write().await = Ok(Arc::new(project));
    }

    pub fn set_resolving(&self, busy: bool) {
        self.resolving.send_replace(busy);
    }

    /// Makes the first usable `file://` URI among the client's roots the
    /// project root. True when the project changed (the tool list with it).
    pub async fn adopt_client_root<'a>(
        &self,
        config: &Config,
        uris: impl IntoIterator<Item = &'a str>,
    ) -> bool {
        let Some(path) = uris.into_iter().find_map(file_uri_to_path) else {
            tracing::info!("client offered no file:// root; keeping the current root");
            return false;
        };
        // File-system work (resolving the root, opening its gate, locating
        // its cache) runs off the async workers: a slow or hostile mount
        // must not stall the protocol.
        let resolved = tokio::task::spawn_blocking(move || canonical_dir(&path))
            .await
            .map_err(|error| error.to_string())
            .and_then(|resolved| resolved.map_err(|error| error.to_string()));
        let root = match resolved {
            Ok(root) => root,
            Err(error) => {
                tracing::warn!(error = %error, "client root is unusable; keeping the current root");
                return false;
            }
        };
        if self
            .current()
            .await
            .is_ok_and(|project| project.root() == root)
        {
            return false;
        }
        let (config, opening) = (config.clone(), root.clone());
        let opened = tokio::task::spawn_blocking(move || Project::open(&config, opening))
            .await
            .map_err(|error| error.to_string())
            .and_then(|opened| opened);
        match opened {
            Ok(project) => {
                tracing::info!(root = %root.display(), "project root taken from the client's roots");
                self.replace(project).await;
                true
            }
            Err(error) => {
                tracing::warn!(error = %error, "cannot open the client's root");
                false
            }
        }
    }
}

/// `file:///home/me/proj` → `/home/me/proj`; `file:///C:/proj` → `C:/proj`.
fn file_uri_to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let decoded = percent_decode(rest)?;
    let looks_like_drive = decoded.len() >= 3
        && decoded.as_bytes()[0] == b'/'
        && decoded.as_bytes()[1].is_ascii_alphabetic()
        && decoded.as_bytes()[2] == b':';
    let path = if looks_like_drive && cfg!(windows) {
        &decoded[1..]
    } else {
        &decoded[..]
    };
    Some(PathBuf::from(path))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_log_file_inside_the_root_is_denied_by_its_exact_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("logs")).unwrap();
        // Glob characters a file name may hold on every platform.
        let log = root.join("logs").join("a[1]{b}.log");
        std::fs::write(&log, "").unwrap();
        let globs = with_own_log_file(&["*.pem".to_string()], Some(&log), &root);
        assert_eq!(globs, ["*.pem", "logs/a[[]1[]][{]b[}].log"]);
        let gate = PathGate::new(root.clone(), &globs).unwrap();
        assert!(gate.is_denied("logs/a[1]{b}.log"));
        assert!(!gate.is_denied("logs/a1b.log"));
        // Outside the root, or no log file: the operator's globs only.
        let outside = tempfile::NamedTempFile::new().unwrap();
        assert_eq!(
            with_own_log_file(&[], Some(outside.path()), &root),
            Vec::<String>::new()
        );
        assert_eq!(with_own_log_file(&[], None, &root), Vec::<String>::new());
    }

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_to_path("file:///home/me/my%20proj"),
            Some(PathBuf::from("/home/me/my proj"))
        );
        assert_eq!(file_uri_to_path("https://x"), None);
        assert_eq!(file_uri_to_path("file:///bad%zz"), None);
    }
}
