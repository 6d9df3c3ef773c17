//! The operator's TOML file: read without blocking (a regular file only,
//! within its size bound), parsed with unknown keys refused, and every
//! check, limit and deny glob validated, with errors naming the file's line
//! and key.

use super::*;

/// The operator's TOML file, as written. Unknown keys are errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OperatorFile {
    #[serde(default)]
    checks: BTreeMap<String, CheckEntry>,
    #[serde(default)]
    limits: LimitsEntry,
    #[serde(default)]
    pub(super) deny: DenyEntry,
    #[serde(default)]
    pub(super) index: IndexEntry,
}

/// The `[index]` table as written: the in-memory model's keys and the
/// cache's, split into [`IndexConfig`] and [`IndexCacheConfig`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IndexEntry {
    #[serde(default = "enabled_by_default")]
    enabled: bool,
    max_memory_mb: Option<u64>,
    #[serde(default = "enabled_by_default")]
    persist: bool,
    cache_dir: Option<PathBuf>,
    max_disk_mb: Option<u64>,
}

fn enabled_by_default() -> bool {
    true
}

impl Default for IndexEntry {
    fn default() -> Self {
        Self {
            enabled: true,
            max_memory_mb: None,
            persist: true,
            cache_dir: None,
            max_disk_mb: None,
        }
    }
}

impl IndexEntry {
    pub(super) fn index(&self) -> IndexConfig {
        IndexConfig {
            enabled: self.enabled,
            max_memory_mb: self
                .max_memory_mb
                .unwrap_or(IndexConfig::default().max_memory_mb),
            ..IndexConfig::default()
        }
    }

    pub(super) fn cache(&self) -> IndexCacheConfig {
        IndexCacheConfig {
            persist: self.persist,
            cache_dir: self.cache_dir.clone(),
            max_disk_mb: self.max_disk_mb.unwrap_or(DEFAULT_MAX_DISK_MB),
        }
    }
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
pub(super) struct DenyEntry {
    #[serde(default)]
    pub(super) globs: Vec<String>,
}

impl OperatorFile {
    pub(super) fn load(path: &Path) -> Result<Self, ConfigError> {
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
        if self.index.max_memory_mb == Some(0) {
            return Err("key index.max_memory_mb: must be at least 1".to_string());
        }
        if self.index.max_disk_mb == Some(0) {
            return Err("key index.max_disk_mb: must be at least 1 (to keep the index in memory only, set index.persist = false)".to_string());
        }
        if let Some(dir) = &self.index.cache_dir
            && !dir.is_absolute()
        {
            return Err(format!(
                "key index.cache_dir: {} is relative; give an absolute folder",
                dir.display()
            ));
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

    pub(super) fn checks(&self) -> BTreeMap<String, CheckSetting> {
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

    pub(super) fn limits(&self) -> Limits {
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
    fn index_section_defaults_and_validation() {
        assert_eq!(parse("").unwrap().index.index(), IndexConfig::default());
        assert_eq!(
            parse("").unwrap().index.cache(),
            IndexCacheConfig::default()
        );
        let file = parse("[index]\nenabled = false\nmax_memory_mb = 64\n").unwrap();
        assert_eq!(
            file.index.index(),
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
                .index()
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
    fn index_cache_keys_and_validation() {
        let absolute = if cfg!(windows) {
            r"C:\cache\x"
        } else {
            "/var/cache/x"
        };
        let file = parse(&format!(
            "[index]\npersist = false\ncache_dir = {absolute:?}\nmax_disk_mb = 10\n"
        ))
        .unwrap();
        assert_eq!(
            file.index.cache(),
            IndexCacheConfig {
                persist: false,
                cache_dir: Some(PathBuf::from(absolute)),
                max_disk_mb: 10
            }
        );
        assert!(file.index.index().enabled);
        let relative = parse("[index]\ncache_dir = \"cache\"\n").unwrap_err();
        assert!(
            relative.contains("index.cache_dir") && relative.contains("absolute"),
            "{relative}"
        );
        let zero = parse("[index]\nmax_disk_mb = 0\n").unwrap_err();
        assert!(zero.contains("index.max_disk_mb"), "{zero}");
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
        crate::test_support::make_fifo(&fifo);
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
}
