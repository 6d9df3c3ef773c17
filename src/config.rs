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
}

/// `[index]`: the in-memory model of the tree that makes search instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IndexConfig {
    pub enabled: bool,
    /// Above this the model is dropped and searches scan the tree.
    pub max_memory_mb: u64,
    /// Whether the model follows changes through the OS's notifications;
    /// off, every call re-checks the tree, as on a file system that has
    /// none. Not a file key: set by [`WATCH_ENV`], so tests can prove the
    /// fallback.
    #[serde(skip)]
    pub change_notifications: bool,
}

impl Default for IndexConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_memory_mb: 256,
            change_notifications: true,
        }
    }
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
                ..file.index
            },
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

/// The operator's TOML file, as written. Unknown keys are errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct OperatorFile {
    #[serde(default)]
    checks: BTreeMap<String, CheckEntry>,
    #[serde(default)]
    limits: LimitsEntry,
    #[serde(default)]
    deny: DenyEntry,
    #[serde(default)]
    index: IndexConfig,
}

#[derive(Debug)]
enum CheckEntry {
    Enabled(bool),
    Argv(Vec<String>),
    Long(LongCheck),
}

/// Chosen by the TOML type rather than `#[serde(untagged)]`, so that an
/// error inside the long form (an unknown key, a wrong type) keeps its own
/// line and key instead of becoming a generic "no variant matched".
impl<'de> Deserialize<'de> for CheckEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntryVisitor;

        impl<'de> serde::de::Visitor<'de> for EntryVisitor {
            type Value = CheckEntry;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("an argv array, a table with `argv`, or `false`")
            }

            fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<CheckEntry, E> {
                Ok(CheckEntry::Enabled(value))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<CheckEntry, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(CheckEntry::Argv)
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<CheckEntry, A::Error> {
                LongCheck::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(CheckEntry::Long)
            }
        }

        deserializer.deserialize_any(EntryVisitor)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LongCheck {
    argv: Vec<String>,
    timeout_seconds: Option<u64>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsEntry {
    timeout_seconds: Option<u64>,
    output_chars: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DenyEntry {
    #[serde(default)]
    globs: Vec<String>,
}

impl OperatorFile {
    fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = read_operator_file(path)?;
        let file: Self = toml::from_str(&text).map_err(|error| ConfigError::ParseConfig {
            path: path.to_path_buf(),
            message: describe_toml_error(&text, &error),
        })?;
        file.validate(&text)
            .map_err(|message| ConfigError::ParseConfig {
                path: path.to_path_buf(),
                message,
            })?;
        Ok(file)
    }

    /// Semantic checks that serde cannot express; each names the key.
    /// Linear in the file: a key's line is looked up only for an error.
    fn validate(&self, text: &str) -> Result<(), String> {
        if self.checks.len() > MAX_CHECKS {
            return Err(format!(
                "key checks: {} checks configured; at most {MAX_CHECKS} are allowed",
                self.checks.len()
            ));
        }
        for (name, entry) in &self.checks {
            check_entry_problem(name, entry).map_or(Ok(()), |problem| {
                let at = line_of_key(text, name)
                    .map(|n| format!("line {n}, "))
                    .unwrap_or_default();
                Err(format!("{at}key checks.{problem}"))
            })?;
        }
        if self.limits.timeout_seconds == Some(0) {
            return Err("key limits.timeout_seconds: must be at least 1".to_string());
        }
        if self.limits.output_chars == Some(0) {
            return Err("key limits.output_chars: must be at least 1".to_string());
        }
        if self.index.max_memory_mb == 0 {
            return Err("key index.max_memory_mb: must be at least 1".to_string());
        }
        if self.deny.globs.len() > MAX_DENY_GLOBS {
            return Err(format!(
                "key deny.globs: {} globs given; at most {MAX_DENY_GLOBS} are allowed",
                self.deny.globs.len()
            ));
        }
        for glob in &self.deny.globs {
            if let Some(problem) = deny_glob_problem(glob) {
                return Err(format!("key deny.globs: {problem}"));
            }
        }
        Ok(())
    }

    fn checks(&self) -> BTreeMap<String, CheckSetting> {
        self.checks
            .iter()
            .map(|(name, entry)| {
                let setting = match entry {
                    CheckEntry::Enabled(_) => CheckSetting::Disabled,
                    CheckEntry::Argv(argv) => CheckSetting::Defined(CheckSpec {
                        argv: argv.clone(),
                        timeout: None,
                        env: BTreeMap::new(),
                    }),
                    CheckEntry::Long(long) => CheckSetting::Defined(CheckSpec {
                        argv: long.argv.clone(),
                        timeout: long.timeout_seconds.map(Duration::from_secs),
                        env: long.env.clone(),
                    }),
                };
                (name.clone(), setting)
            })
            .collect()
    }

    fn limits(&self) -> Limits {
        let defaults = Limits::default();
        Limits {
            check_timeout: self
                .limits
                .timeout_seconds
                .map(Duration::from_secs)
                .unwrap_or(defaults.check_timeout),
            output_chars: self.limits.output_chars.unwrap_or(defaults.output_chars),
        }
    }
}

pub fn is_valid_check_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_CHECK_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// What is wrong with one check, as "<name>…: <why>", or `None`.
fn check_entry_problem(name: &str, entry: &CheckEntry) -> Option<String> {
    if !is_valid_check_name(name) {
        return Some(format!(
            "{}: check names may use only letters, digits, '-' and '_', at most {MAX_CHECK_NAME_CHARS} characters",
            shown(name)
        ));
    }
    let (argv, env) = match entry {
        CheckEntry::Enabled(false) => return None,
        CheckEntry::Enabled(true) => {
            return Some(format!(
                "{name}: `true` is not a check; give an argv array, a table with `argv`, or `false` to remove a detected check"
            ));
        }
        CheckEntry::Argv(argv) => (argv, None),
        CheckEntry::Long(long) => {
            if long.timeout_seconds == Some(0) {
                return Some(format!("{name}.timeout_seconds: must be at least 1"));
            }
            (&long.argv, Some(&long.env))
        }
    };
    if argv.first().is_none_or(|program| program.trim().is_empty()) {
        return Some(format!("{name}: argv must start with a program name"));
    }
    let argv_bytes: usize = argv.iter().map(String::len).sum();
    if argv.len() > MAX_ARGV_ITEMS || argv_bytes > MAX_ARGV_BYTES {
        return Some(format!(
            "{name}: argv has {} items and {argv_bytes} bytes; at most {MAX_ARGV_ITEMS} items and {MAX_ARGV_BYTES} bytes are allowed",
            argv.len()
        ));
    }
    let env = env?;
    let env_bytes: usize = env.iter().map(|(key, value)| key.len() + value.len()).sum();
    if env.len() > MAX_ENV_ENTRIES || env_bytes > MAX_ENV_BYTES {
        return Some(format!(
            "{name}.env: {} entries and {env_bytes} bytes; at most {MAX_ENV_ENTRIES} entries and {MAX_ENV_BYTES} bytes are allowed",
            env.len()
        ));
    }
    None
}

/// Why an operator deny glob is refused, or `None`. The deny-list matches
/// root-relative paths spelled with `/`, never starting or ending with one,
/// so a glob that could only match another spelling would deny nothing.
pub fn deny_glob_problem(glob: &str) -> Option<String> {
    const RULE: &str = "deny globs are relative to the project root, use '/' between folders and never end with '/'";
    let shown_glob = shown(glob);
    if glob.chars().count() > MAX_DENY_GLOB_CHARS {
        return Some(format!(
            "glob {shown_glob} is longer than {MAX_DENY_GLOB_CHARS} characters, the longest allowed"
        ));
    }
    let never = |why: &str, instead: Option<String>| {
        let instead = instead
            .map(|glob| format!("; write {glob:?} instead"))
            .unwrap_or_default();
        Some(format!(
            "glob {shown_glob} can never match: {why} ({RULE}){instead}"
        ))
    };
    let relative = glob.strip_prefix("./").unwrap_or(glob);
    if glob.trim().is_empty() {
        return never("it is empty", None);
    }
    if glob.contains('\\') {
        return never(
            "it contains '\\', which globs read as an escape, not a separator (to match a literal '*' write '[*]')",
            Some(glob.replace('\\', "/")),
        );
    }
    if glob.starts_with('/') {
        return never(
            "it starts with '/'",
            Some(glob.trim_start_matches('/').to_string()),
        );
    }
    if glob.ends_with('/') {
        return never(
            "it ends with '/'",
            Some(format!("{}/**", glob.trim_end_matches('/'))),
        );
    }
    if relative
        .split('/')
        .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return never(
            "it has an empty, '.' or '..' folder, which a project path never has",
            None,
        );
    }
    if let Err(error) = globset::Glob::new(glob) {
        return Some(format!("invalid glob {shown_glob}: {error}"));
    }
    None
}

/// A name or glob from the file, cut for a message.
fn shown(text: &str) -> String {
    const MAX_CHARS: usize = 80;
    match text.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{:?}…", &text[..end]),
        None => format!("{text:?}"),
    }
}

/// Reads the operator's file without ever blocking (a FIFO or device is
/// refused at once, not waited on) and never more than
/// [`MAX_CONFIG_BYTES`].
fn read_operator_file(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let read_error = |source| ConfigError::ReadConfig {
        path: path.to_path_buf(),
        source,
    };
    let file = open_regular_file(path, std::fs::OpenOptions::new().read(true)).map_err(
        |error| match error {
            OpenError::NotRegular(kind) => ConfigError::ConfigNotRegular {
                path: path.to_path_buf(),
                kind,
            },
            OpenError::Io(source) => read_error(source),
        },
    )?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::ConfigTooLarge {
            path: path.to_path_buf(),
        });
    }
    String::from_utf8(bytes).map_err(|_| {
        read_error(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the file is not UTF-8 text",
        ))
    })
}

/// Why an operator-named file could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// It exists but is a FIFO, device, socket or folder.
    NotRegular(&'static str),
    Io(std::io::Error),
}

/// Opens an operator-named file (config, log) with `options`, never
/// blocking (`O_NONBLOCK`: opening a FIFO does not wait for a peer), and
/// only if it is a regular file (checked again on the open file, so a swap
/// after the first look is caught).
pub fn open_regular_file(
    path: &Path,
    options: &mut std::fs::OpenOptions,
) -> Result<std::fs::File, OpenError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    // Checked before the open too: opening a FIFO without a reader for
    // writing fails with a confusing "no such device".
    if let Ok(metadata) = std::fs::metadata(path)
        && !metadata.is_file()
    {
        return Err(OpenError::NotRegular(file_kind(&metadata)));
    }
    let file = options.open(path).map_err(OpenError::Io)?;
    let metadata = file.metadata().map_err(OpenError::Io)?;
    if !metadata.is_file() {
        return Err(OpenError::NotRegular(file_kind(&metadata)));
    }
    Ok(file)
}

fn file_kind(metadata: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = metadata.file_type();
        if kind.is_fifo() {
            return "a FIFO or pipe";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if metadata.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }
}

/// toml's message already carries "line N, column M" and the offending key;
/// fold it onto one line so it reads well on stderr.
fn describe_toml_error(text: &str, error: &toml::de::Error) -> String {
    let location = error.span().map(|span| {
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        format!("line {line}: ")
    });
    let message = error
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    format!("{}{message}", location.unwrap_or_default())
}

/// The 1-based line where `key` is defined under `[checks]`, for messages.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            line.starts_with(&format!("{key} ="))
                || line.starts_with(&format!("{key}="))
                || line.starts_with(&format!("[checks.{key}]"))
        })
        .map(|index| index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<OperatorFile, String> {
        let file: OperatorFile = toml::from_str(text).map_err(|e| describe_toml_error(text, &e))?;
        file.validate(text)?;
        Ok(file)
    }

    #[test]
    fn spec_example_parses() {
        let file = parse(
            r#"
[checks]
tests = ["cargo", "test"]
old = false
[checks.lint]
argv = ["cargo", "clippy", "--", "-D", "warnings"]
timeout_seconds = 300
env = { RUST_BACKTRACE = "1" }

[limits]
timeout_seconds = 60
output_chars = 20000

[deny]
globs = ["*.secret", "private/**"]
"#,
        )
        .expect("valid");
        let checks = file.checks();
        assert_eq!(checks["old"], CheckSetting::Disabled);
        let CheckSetting::Defined(lint) = &checks["lint"] else {
            panic!("lint should be defined")
        };
        assert_eq!(lint.argv[0], "cargo");
        assert_eq!(lint.timeout, Some(Duration::from_secs(300)));
        assert_eq!(lint.env["RUST_BACKTRACE"], "1");
        let CheckSetting::Defined(tests) = &checks["tests"] else {
            panic!("tests should be defined")
        };
        assert_eq!(tests.argv, vec!["cargo", "test"]);
        assert_eq!(file.limits().output_chars, 20_000);
        assert_eq!(file.deny.globs, vec!["*.secret", "private/**"]);
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let error = parse("[limits]\ntimeout_seconds = 5\nbogus = 1\n").unwrap_err();
        assert!(error.contains("line 3"), "{error}");
        assert!(error.contains("bogus"), "{error}");
    }

    #[test]
    fn wrong_type_names_line_and_key() {
        let error = parse("[limits]\n\noutput_chars = \"many\"\n").unwrap_err();
        assert!(error.contains("line 3"), "{error}");
    }

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
    fn index_section_defaults_and_validation() {
        assert_eq!(parse("").unwrap().index, IndexConfig::default());
        let file = parse("[index]\nenabled = false\nmax_memory_mb = 64\n").unwrap();
        assert_eq!(
            file.index,
            IndexConfig {
                enabled: false,
                max_memory_mb: 64,
                ..IndexConfig::default()
            }
        );
        assert_eq!(
            parse("[index]\nenabled = false\n")
                .unwrap()
                .index
                .max_memory_mb,
            256
        );
        let zero = parse("[index]\nmax_memory_mb = 0\n").unwrap_err();
        assert!(zero.contains("index.max_memory_mb"), "{zero}");
        let unknown = parse("[index]\nmax_memory = 5\n").unwrap_err();
        assert!(
            unknown.contains("line 2") && unknown.contains("max_memory"),
            "{unknown}"
        );
        let wrong = parse("[index]\nenabled = \"yes\"\n").unwrap_err();
        assert!(wrong.contains("line 2"), "{wrong}");
    }

    #[test]
    fn unknown_section_is_an_error() {
        let error = parse("[server]\nport = 1\n").unwrap_err();
        assert!(error.contains("server"), "{error}");
        assert!(error.contains("line 1"), "{error}");
    }

    #[test]
    fn errors_inside_a_long_check_name_their_line_and_key() {
        let error = parse(
            "[checks]\ntests = [\"cargo\"]\n[checks.lint]\nargv = [\"cargo\"]\ntimeout = 5\n",
        )
        .unwrap_err();
        assert!(error.contains("line 5"), "{error}");
        assert!(error.contains("timeout"), "{error}");
        let error = parse("[checks.lint]\nargv = [\"cargo\"]\nenv = { A = 1 }\n").unwrap_err();
        assert!(error.contains("line 3"), "{error}");
        let error = parse("[checks]\nlint = [\"cargo\", 7]\n").unwrap_err();
        assert!(error.contains("line 2"), "{error}");
        let error = parse("[checks]\nlint = \"cargo clippy\"\n").unwrap_err();
        assert!(error.contains("line 2"), "{error}");
        assert!(error.contains("an argv array"), "{error}");
    }

    #[test]
    fn empty_argv_and_true_are_rejected() {
        assert!(
            parse("[checks]\nx = []\n")
                .unwrap_err()
                .contains("checks.x")
        );
        assert!(
            parse("[checks]\nx = true\n")
                .unwrap_err()
                .contains("line 2")
        );
        assert!(parse("[checks]\n\"a b\" = [\"ls\"]\n").is_err());
        assert!(parse("[deny]\nglobs = [\"a[\"]\n").is_err());
    }

    #[test]
    fn deny_globs_that_can_never_match_are_refused_with_a_fix() {
        for (glob, fix) in [
            ("secrets/", Some("secrets/**")),
            ("/private/**", Some("private/**")),
            ("sub\\private\\**", Some("sub/private/**")),
            ("", None),
            ("  ", None),
            ("a//b", None),
            ("a/../b", None),
        ] {
            let text = format!("[deny]\nglobs = [{}]\n", toml::Value::from(glob));
            let error = parse(&text).unwrap_err();
            assert!(error.contains("can never match"), "{glob:?}: {error}");
            assert!(error.contains("relative to the project root"), "{error}");
            if let Some(fix) = fix {
                assert!(error.contains(&format!("write {fix:?} instead")), "{error}");
            }
        }
        for good in [
            "*.secret",
            "private/**",
            "./private/**",
            "a/*/b.txt",
            "[*]star",
        ] {
            assert_eq!(deny_glob_problem(good), None, "{good}");
        }
        let long = "a".repeat(MAX_DENY_GLOB_CHARS + 1);
        assert!(deny_glob_problem(&long).unwrap().contains("256 characters"));
    }

    #[test]
    fn too_many_checks_fail_fast_naming_the_limit() {
        let mut text = String::from("[checks]\n");
        for index in 0..20_000 {
            text.push_str(&format!("c{index} = [\"true\"]\n"));
        }
        let error = parse(&text).unwrap_err();
        assert!(
            error.contains("20000 checks configured; at most 100"),
            "{error}"
        );
        let mut text = String::from("[checks]\n");
        for index in 0..MAX_CHECKS {
            text.push_str(&format!("c{index} = [\"true\"]\n"));
        }
        assert_eq!(parse(&text).expect("at the limit").checks.len(), MAX_CHECKS);
    }

    #[test]
    fn argv_env_and_names_are_bounded() {
        let items = vec!["\"x\""; MAX_ARGV_ITEMS + 1].join(",");
        let error = parse(&format!("[checks]\nbig = [{items}]\n")).unwrap_err();
        assert!(
            error.contains("line 2, key checks.big: argv has 257 items"),
            "{error}"
        );
        let huge = "y".repeat(MAX_ARGV_BYTES);
        let error = parse(&format!("[checks]\nbig = [\"x\", \"{huge}\"]\n")).unwrap_err();
        assert!(error.contains("32768 bytes are allowed"), "{error}");
        let env: Vec<String> = (0..=MAX_ENV_ENTRIES)
            .map(|i| format!("V{i} = \"1\""))
            .collect();
        let text = format!(
            "[checks.e]\nargv = [\"x\"]\nenv = {{ {} }}\n",
            env.join(", ")
        );
        let error = parse(&text).unwrap_err();
        assert!(error.contains("key checks.e.env: 65 entries"), "{error}");
        let name = "n".repeat(MAX_CHECK_NAME_CHARS + 1);
        let error = parse(&format!("[checks]\n{name} = [\"x\"]\n")).unwrap_err();
        assert!(error.contains("at most 64 characters"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_an_oversized_file_as_config_fails_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("config.toml");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(status.success());
        let error = OperatorFile::load(&fifo).unwrap_err().to_string();
        assert!(
            error.contains("not a regular file (a FIFO or pipe)"),
            "{error}"
        );
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_CONFIG_BYTES as usize + 1]).expect("write");
        let error = OperatorFile::load(&big).unwrap_err().to_string();
        assert!(
            error.contains("larger than 1048576 bytes (1 MiB)"),
            "{error}"
        );
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
