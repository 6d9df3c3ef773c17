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

/// Values taken from flags and environment variables (clap merges the two).
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
    pub log_file: Option<PathBuf>,
    pub log_level: LogLevel,
    /// Checks from the operator config: a name maps to a check or to `false`
    /// (remove a detected check of that name).
    pub checks: BTreeMap<String, CheckSetting>,
    pub limits: Limits,
    /// Extra deny globs, added to the built-in deny-list.
    pub deny_globs: Vec<String>,
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
        let file = match overrides.config_file.as_deref() {
            Some(path) => OperatorFile::load(path)?,
            None => OperatorFile::default(),
        };
        Ok(Self {
            root,
            docs_root,
            log_file: resolve(overrides.log_file)?,
            log_level,
            checks: file.checks(),
            limits: file.limits(),
            deny_globs: file.deny.globs,
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

/// Resolves a relative `--root`, `--docs` or `--log-file` (or its
/// variable) against the top of the repository holding the working
/// directory: the nearest folder, the working directory included, that
/// holds `.git` (a folder, or a file in worktrees and submodules); outside
/// any repository, against the working directory. Never above that top.
///
/// Why the repository top: hosts start servers in whatever folder they were
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
    let base = working_dir
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(&working_dir);
    Ok(base.join(path))
}

/// Canonicalizes an operator-given root once; `dunce` keeps Windows paths
/// free of the `\\?\` prefix.
pub fn canonical_dir(path: &Path) -> Result<PathBuf, ConfigError> {
    let canonical = dunce::canonicalize(path).map_err(|_| ConfigError::RootMissing {
        path: path.to_path_buf(),
    })?;
    if !canonical.is_dir() {
        return Err(ConfigError::RootNotDirectory { path: canonical });
    }
    Ok(canonical)
}

fn canonical_docs_dir(path: &Path) -> Result<PathBuf, ConfigError> {
    match dunce::canonicalize(path) {
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
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadConfig {
            path: path.to_path_buf(),
            source,
        })?;
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
    fn validate(&self, text: &str) -> Result<(), String> {
        for (name, entry) in &self.checks {
            let line = line_of_key(text, name);
            let at = line.map(|n| format!("line {n}, ")).unwrap_or_default();
            if !is_valid_check_name(name) {
                return Err(format!(
                    "{at}key checks.{name}: check names may use only letters, digits, '-' and '_'"
                ));
            }
            match entry {
                CheckEntry::Enabled(true) => {
                    return Err(format!(
                        "{at}key checks.{name}: `true` is not a check; give an argv array, a table with `argv`, or `false` to remove a detected check"
                    ));
                }
                CheckEntry::Argv(argv) | CheckEntry::Long(LongCheck { argv, .. })
                    if argv.first().is_none_or(|program| program.trim().is_empty()) =>
                {
                    return Err(format!(
                        "{at}key checks.{name}: argv must start with a program name"
                    ));
                }
                CheckEntry::Long(LongCheck {
                    timeout_seconds: Some(0),
                    ..
                }) => {
                    return Err(format!(
                        "{at}key checks.{name}.timeout_seconds: must be at least 1"
                    ));
                }
                _ => {}
            }
        }
        if self.limits.timeout_seconds == Some(0) {
            return Err("key limits.timeout_seconds: must be at least 1".to_string());
        }
        if self.limits.output_chars == Some(0) {
            return Err("key limits.output_chars: must be at least 1".to_string());
        }
        for glob in &self.deny.globs {
            if let Err(error) = globset::Glob::new(glob) {
                return Err(format!("key deny.globs: invalid glob {glob:?}: {error}"));
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
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
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
    fn log_levels_any_case() {
        assert_eq!(LogLevel::parse("warning").unwrap(), LogLevel::Warning);
        assert_eq!(LogLevel::parse("Critical").unwrap(), LogLevel::Critical);
        assert!(LogLevel::parse("loud").is_err());
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
