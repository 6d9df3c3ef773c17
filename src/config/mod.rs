//! One immutable configuration, resolved once at start-up from the command
//! line, the environment and the operator's TOML file.
//!
//! Precedence: flag > environment > default. The project directory itself is
//! never consulted here: a cloned repository must not be able to add commands
//! to the check whitelist.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

mod operator_file;

use operator_file::OperatorFile;
pub use operator_file::{OpenError, deny_glob_problem, is_valid_check_name, open_regular_file};

/// Default check timeout when neither the check nor `[limits]` sets one.
pub const DEFAULT_CHECK_TIMEOUT_SECONDS: u64 = 60;
/// Default number of characters kept from each check output stream.
pub const DEFAULT_OUTPUT_CHARS: usize = 20_000;

/// Bounds on the operator file, so that a wrong file (a log, a FIFO, a
/// generated list) fails at start-up with a clear message instead of
/// slowing or hanging the server.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
pub const MAX_CHECKS: usize = 100;
pub const MAX_CHECK_NAME_CHARS: usize = 64;
pub const MAX_ARGV_ITEMS: usize = 256;
/// Bytes of one check's argv, all items together.
pub const MAX_ARGV_BYTES: usize = 32 * 1024;
pub const MAX_ENV_ENTRIES: usize = 64;
/// Bytes of one check's env, names and values together.
pub const MAX_ENV_BYTES: usize = 32 * 1024;
pub const MAX_DENY_GLOBS: usize = 100;
pub const MAX_DENY_GLOB_CHARS: usize = 256;

/// Values taken from flags and environment variables (merged in `cli::ServerArgs::overrides`).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub root: Option<PathBuf>,
    pub docs: Option<PathBuf>,
    pub config_file: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub log_level: Option<String>,
}

/// The whole, immutable server configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The project root fixed by the operator (flag or environment), already
    /// canonicalized. `None` means "take the client's first root, else the
    /// working directory".
    pub root: Option<PathBuf>,
    /// Markdown folder for `get_docs`; `None` means `<root>/docs`.
    pub docs_root: Option<PathBuf>,
    /// The operator file read (already read: kept for `config` snippets).
    pub config_file: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub log_level: LogLevel,
    /// Checks from the operator config: a name maps to a check or to `false`
    /// (remove a detected check of that name).
    pub checks: BTreeMap<String, CheckSetting>,
    pub limits: Limits,
    /// Extra deny globs, added to the built-in deny-list.
    pub deny_globs: Vec<String>,
    pub index: IndexConfig,
    pub index_cache: IndexCacheConfig,
}

/// `[index]`: the in-memory model of the tree that makes search instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexConfig {
    pub enabled: bool,
    /// Above this the model is dropped and searches scan the tree.
    pub max_memory_mb: u64,
    /// Whether the model follows changes through the OS's notifications;
    /// off, every call re-checks the tree, as on a file system that has
    /// none. Not a file key: set by [`WATCH_ENV`], so tests can prove the
    /// fallback.
    pub change_notifications: bool,
    /// How long the index is idle before the scrub reads its next sample
    /// of indexed files again (`index/scrub.rs`). Not a file key: set by
    /// [`SCRUB_ENV`], which only tests set, to see a forged cache dropped
    /// within a test's time.
    pub scrub_every: std::time::Duration,
}

/// `[index]` keys for the index kept on disk between sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexCacheConfig {
    /// `false`: the index lives in memory only.
    pub persist: bool,
    /// Where the per-root cache folders live; `None`: the user's cache
    /// folder (`$XDG_CACHE_HOME`, `~/.cache`, `~/Library/Caches`,
    /// `%LOCALAPPDATA%`) plus `mcp-project-helper`.
    pub cache_dir: Option<PathBuf>,
    /// Above this, the least recently used other roots' folders go.
    pub max_disk_mb: u64,
}

pub const DEFAULT_MAX_DISK_MB: u64 = 2048;

impl Default for IndexCacheConfig {
    fn default() -> Self {
        Self {
            persist: true,
            cache_dir: None,
            max_disk_mb: DEFAULT_MAX_DISK_MB,
        }
    }
}

impl Default for IndexConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_memory_mb: 256,
            change_notifications: true,
            scrub_every: DEFAULT_SCRUB_EVERY,
        }
    }
}

/// The scrub's pace unless [`SCRUB_ENV`] sets it.
pub const DEFAULT_SCRUB_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Milliseconds between two scrubs of an idle index (tests only).
pub const SCRUB_ENV: &str = "MCP_PROJECT_HELPER_SCRUB_MS";

/// [`SCRUB_ENV`]'s value, when it is a number of milliseconds (at least 1).
fn scrub_every(value: Option<&std::ffi::OsStr>) -> std::time::Duration {
    value
        .and_then(|value| value.to_str())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .filter(|&millis| millis > 0)
        .map_or(DEFAULT_SCRUB_EVERY, std::time::Duration::from_millis)
}

/// Set to `off` (or `0`, `false`, `no`) to run without change
/// notifications (see [`IndexConfig::change_notifications`]).
pub const WATCH_ENV: &str = "MCP_PROJECT_HELPER_WATCH";

/// Anything but `off`, `0`, `false` or `no` (any case) leaves change
/// notifications on.
fn notifications_enabled(value: Option<&std::ffi::OsStr>) -> bool {
    let Some(value) = value.and_then(|v| v.to_str()) else {
        return true;
    };
    !["off", "0", "false", "no"]
        .iter()
        .any(|off| value.trim().eq_ignore_ascii_case(off))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckSetting {
    Disabled,
    Defined(CheckSpec),
}

/// One configured check: an argv run without a shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckSpec {
    pub argv: Vec<String>,
    pub timeout: Option<Duration>,
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub check_timeout: Duration,
    pub output_chars: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            check_timeout: Duration::from_secs(DEFAULT_CHECK_TIMEOUT_SECONDS),
            output_chars: DEFAULT_OUTPUT_CHARS,
        }
    }
}

/// The prototype's level names (Python `logging`), accepted in any case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Debug,
    Info,
    Warning,
    Error,
    Critical,
}

impl LogLevel {
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        match text.trim().to_ascii_uppercase().as_str() {
            "DEBUG" | "TRACE" => Ok(Self::Debug),
            "INFO" => Ok(Self::Info),
            "WARNING" | "WARN" => Ok(Self::Warning),
            "ERROR" => Ok(Self::Error),
            "CRITICAL" | "FATAL" => Ok(Self::Critical),
            _ => Err(ConfigError::LogLevel(text.to_string())),
        }
    }

    /// The tracing level that lets this level's records through.
    pub fn as_tracing(self) -> tracing::Level {
        match self {
            Self::Debug => tracing::Level::DEBUG,
            Self::Info => tracing::Level::INFO,
            Self::Warning => tracing::Level::WARN,
            Self::Error | Self::Critical => tracing::Level::ERROR,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "project root {path} does not exist: pass --root DIR or set MCP_PROJECT_HELPER_ROOT to an existing directory"
    )]
    RootMissing { path: PathBuf },
    #[error(
        "project root {path} is not a directory: pass --root DIR or set MCP_PROJECT_HELPER_ROOT to a directory"
    )]
    RootNotDirectory { path: PathBuf },
    #[error(
        "docs folder {path} is not a directory: pass --docs DIR or set MCP_PROJECT_HELPER_DOCS_ROOT to a directory"
    )]
    DocsNotDirectory { path: PathBuf },
    #[error(
        "cannot resolve the relative path {path}: the working directory is unusable ({source}); pass an absolute path"
    )]
    WorkingDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read config file {path}: {source}")]
    ReadConfig {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "config file {path} is not a regular file ({kind}); --config and MCP_PROJECT_HELPER_CONFIG must name a TOML file"
    )]
    ConfigNotRegular { path: PathBuf, kind: &'static str },
    #[error(
        "config file {path} is larger than {MAX_CONFIG_BYTES} bytes (1 MiB), the largest accepted"
    )]
    ConfigTooLarge { path: PathBuf },
    #[error("invalid config file {path}: {message}")]
    ParseConfig { path: PathBuf, message: String },
    #[error(
        "invalid log level {0:?}: allowed are DEBUG, INFO, WARNING, ERROR, CRITICAL (any case)"
    )]
    LogLevel(String),
}

impl Config {
    /// Resolves the overrides and the operator file into the final config.
    pub fn load(overrides: Overrides) -> Result<Self, ConfigError> {
        let resolve = |path: Option<PathBuf>| path.map(resolve_relative_to_repository).transpose();
        let root = resolve(overrides.root)?;
        let root = root.as_deref().map(canonical_dir).transpose()?;
        let docs_root = match resolve(overrides.docs)? {
            Some(dir) => Some(canonical_docs_dir(&dir)?),
            None => None,
        };
        let log_level = match overrides.log_level.as_deref() {
            Some(text) if !text.trim().is_empty() => LogLevel::parse(text)?,
            _ => LogLevel::Info,
        };
        let config_file = resolve(overrides.config_file)?;
        let file = match config_file.as_deref() {
            Some(path) => OperatorFile::load(path)?,
            None => OperatorFile::default(),
        };
        Ok(Self {
            root,
            docs_root,
            config_file,
            log_file: resolve(overrides.log_file)?,
            log_level,
            checks: file.checks(),
            limits: file.limits(),
            deny_globs: file.deny.globs,
            index: IndexConfig {
                change_notifications: notifications_enabled(std::env::var_os(WATCH_ENV).as_deref()),
                scrub_every: scrub_every(std::env::var_os(SCRUB_ENV).as_deref()),
                ..file.index.index()
            },
            index_cache: file.index.cache(),
        })
    }
}

impl Config {
    /// The operator's root, else the working directory, canonical: where the
    /// server, `checks` and `config` work when no client root applies.
    pub fn root_or_working_dir(&self) -> Result<PathBuf, String> {
        match &self.root {
            Some(root) => Ok(root.clone()),
            None => std::env::current_dir()
                .map_err(|error| error.to_string())
                .and_then(|dir| canonical_dir(&dir).map_err(|error| error.to_string()))
                .map_err(|error| {
                    format!("cannot use the working directory as the project root ({error}); pass --root DIR")
                }),
        }
    }
}

/// Resolves a relative `--root`, `--docs`, `--config` or `--log-file` (or its
/// variable) against the top of the project holding the working directory:
/// the nearest folder, the working directory included, that holds `.git`
/// (a folder, or a file in worktrees and submodules); in a tree without
/// `.git` (an archive copy), the nearest that holds one of the hosts'
/// project config files ([`PROJECT_CONFIG_FILES`]); else the working
/// directory itself. Never above that top.
///
/// Why the project top: hosts start servers in whatever folder they were
/// launched from (Claude Code from `src/` starts the server there, and its
/// `CLAUDE_PROJECT_DIR` and MCP root say `src/` too), while the shared
/// configs that carry relative paths (`.mcp.json`, `.codex/config.toml`,
/// `.gemini/settings.json`) live at the top and are written relative to it,
/// as `.gitignore` patterns are. So `--root .` or `--root demo_project` in
/// a checked-in config means the same folder from every subfolder.
pub fn resolve_relative_to_repository(path: PathBuf) -> Result<PathBuf, ConfigError> {
    if path.is_absolute() {
        return Ok(path);
    }
    let working_dir = std::env::current_dir().map_err(|source| ConfigError::WorkingDir {
        path: path.clone(),
        source,
    })?;
    Ok(project_top(&working_dir).join(path))
}

/// The project config files hosts read from a project's top folder, which
/// mark that top in a tree without `.git`.
pub const PROJECT_CONFIG_FILES: &[&str] = &[
    ".mcp.json",
    ".vscode/mcp.json",
    ".cursor/mcp.json",
    ".codex/config.toml",
    ".gemini/settings.json",
];

/// The top of the project holding `dir`: see [`resolve_relative_to_repository`].
pub fn project_top(dir: &Path) -> PathBuf {
    let holds = |names: &[&str]| {
        dir.ancestors()
            .find(|folder| names.iter().any(|name| folder.join(name).exists()))
            .map(Path::to_path_buf)
    };
    holds(&[".git"])
        .or_else(|| holds(PROJECT_CONFIG_FILES))
        .unwrap_or_else(|| dir.to_path_buf())
}

/// Why `root`, taken from the working folder because nothing named a
/// project, cannot be the project: it is a file system's root, the user's
/// home folder or a folder above it, or a system folder. A host that
/// starts servers there (Zed has started them from `/`) would otherwise
/// hand the whole machine to the model. `None` when it may be served.
pub fn unsuitable_default_root(root: &Path) -> Option<&'static str> {
    if root.parent().is_none() {
        return Some("a file system's root");
    }
    let home = std::env::home_dir().and_then(|home| dunce::canonicalize(home).ok());
    if let Some(home) = home {
        if home == root {
            return Some("your home folder");
        }
        if home.starts_with(root) {
            return Some("a folder that holds your home folder");
        }
    }
    is_system_folder(root).then_some("a system folder")
}

/// Folders of the operating system (exactly these, not what lies below).
fn is_system_folder(root: &Path) -> bool {
    #[cfg(windows)]
    const SYSTEM: &[&[&str]] = &[
        &["Windows"],
        &["Windows", "System32"],
        &["Program Files"],
        &["Program Files (x86)"],
        &["ProgramData"],
        &["Users"],
    ];
    #[cfg(not(windows))]
    const SYSTEM: &[&[&str]] = &[
        &["bin"],
        &["boot"],
        &["dev"],
        &["etc"],
        &["home"],
        &["lib"],
        &["lib32"],
        &["lib64"],
        &["media"],
        &["mnt"],
        &["opt"],
        &["proc"],
        &["root"],
        &["run"],
        &["sbin"],
        &["srv"],
        &["sys"],
        &["tmp"],
        &["usr"],
        &["usr", "bin"],
        &["usr", "lib"],
        &["usr", "local"],
        &["usr", "local", "bin"],
        &["usr", "share"],
        &["var"],
        &["var", "tmp"],
        &["Applications"],
        &["Library"],
        &["System"],
        &["Users"],
        &["Volumes"],
        &["private"],
        &["private", "tmp"],
        &["private", "var"],
    ];
    let names: Vec<String> = root
        .components()
        .filter_map(|part| match part {
            std::path::Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    SYSTEM.iter().any(|system| {
        system.len() == names.len()
            && system
                .iter()
                .zip(&names)
                .all(|(want, name)| want.eq_ignore_ascii_case(name))
    })
}

/// Canonicalizes an operator-given root once, in the gate's plain form
/// (no `\\?\` prefix on Windows, however long the path).
pub fn canonical_dir(path: &Path) -> Result<PathBuf, ConfigError> {
    let canonical = crate::security::canonicalize(path).map_err(|_| ConfigError::RootMissing {
        path: path.to_path_buf(),
    })?;
    if !canonical.is_dir() {
        return Err(ConfigError::RootNotDirectory { path: canonical });
    }
    Ok(canonical)
}

fn canonical_docs_dir(path: &Path) -> Result<PathBuf, ConfigError> {
    match crate::security::canonicalize(path) {
        Ok(canonical) if canonical.is_dir() => Ok(canonical),
        _ => Err(ConfigError::DocsNotDirectory {
            path: path.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_switch_turns_notifications_off_only_when_asked() {
        use std::ffi::OsStr;
        assert!(notifications_enabled(None));
        assert!(notifications_enabled(Some(OsStr::new("on"))));
        assert!(notifications_enabled(Some(OsStr::new(""))));
        for off in ["off", "OFF", "0", "false", "No", " off "] {
            assert!(!notifications_enabled(Some(OsStr::new(off))), "{off}");
        }
    }

    #[test]
    fn log_levels_any_case() {
        assert_eq!(LogLevel::parse("warning").unwrap(), LogLevel::Warning);
        assert_eq!(LogLevel::parse("Critical").unwrap(), LogLevel::Critical);
        assert!(LogLevel::parse("loud").is_err());
    }

    #[test]
    fn roots_nobody_chose_are_unsuitable_when_they_hold_the_machine() {
        let filesystem_root = if cfg!(windows) { r"C:\" } else { "/" };
        assert_eq!(
            unsuitable_default_root(Path::new(filesystem_root)),
            Some("a file system's root")
        );
        let home = dunce::canonicalize(std::env::home_dir().expect("home")).expect("home exists");
        assert_eq!(unsuitable_default_root(&home), Some("your home folder"));
        if let Some(above) = home.parent().filter(|above| above.parent().is_some()) {
            assert!(
                unsuitable_default_root(above).is_some(),
                "{}",
                above.display()
            );
        }
        let system = if cfg!(windows) {
            [r"C:\Windows", r"C:\Program Files", r"c:\windows\system32"]
        } else {
            ["/etc", "/usr", "/usr/local"]
        };
        for folder in system {
            assert_eq!(
                unsuitable_default_root(Path::new(folder)),
                Some("a system folder"),
                "{folder}"
            );
        }
        let project = tempfile::tempdir().expect("tempdir");
        let project = dunce::canonicalize(project.path()).expect("canonical");
        assert_eq!(unsuitable_default_root(&project), None);
        assert_eq!(unsuitable_default_root(&project.join("src")), None);
        let below_system = if cfg!(windows) {
            r"C:\Windows\Temp\proj"
        } else {
            "/usr/src/proj"
        };
        assert_eq!(unsuitable_default_root(Path::new(below_system)), None);
    }

    #[test]
    fn the_project_top_is_the_repository_else_the_folder_of_a_host_config() {
        let dir = tempfile::tempdir().expect("tempdir");
        let top = dir.path().join("archive copy");
        let deep = top.join("src").join("deep");
        std::fs::create_dir_all(&deep).expect("mkdir");
        assert_eq!(project_top(&deep), deep, "no marker: the folder itself");
        for marker in PROJECT_CONFIG_FILES {
            let file = top.join(marker);
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(&file, "{}").expect("write");
            assert_eq!(project_top(&deep), top, "{marker}");
            std::fs::remove_file(&file).expect("rm");
        }
        // A repository wins over a host config in a subfolder.
        std::fs::write(top.join("src").join(".mcp.json"), "{}").expect("write");
        assert_eq!(project_top(&deep), top.join("src"));
        std::fs::create_dir(top.join(".git")).expect("mkdir");
        assert_eq!(project_top(&deep), top);
    }

    #[test]
    fn missing_root_is_an_error() {
        let error = Config::load(Overrides {
            root: Some(PathBuf::from("/definitely/not/here")),
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(matches!(error, ConfigError::RootMissing { .. }));
    }

    #[test]
    fn file_root_is_an_error() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let error = Config::load(Overrides {
            root: Some(file.path().to_path_buf()),
            ..Overrides::default()
        })
        .unwrap_err();
        assert!(matches!(error, ConfigError::RootNotDirectory { .. }));
    }
}
