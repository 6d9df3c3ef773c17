//! The one path gate. Every path a client names goes through
//! [`PathGate::resolve`] before any file is touched, every path the walker
//! yields is tested against [`PathGate::is_denied`], and every file is opened
//! through the gate's handle on the root ([`open`]).
//!
//! The gate works on the text first (so that Windows forms are refused on
//! every platform, and `..` can never climb out), then on the real file
//! system (so that a symlink inside the root cannot lead outside it), and
//! checks containment component-wise: a sibling `proj-secret` next to a root
//! `proj` is outside. Its work is linear in the length of the path, and the
//! path's length is bounded before any work.

mod canonical;
mod deny;
pub mod open;

use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use deny::DenyList;

pub use canonical::canonicalize;
pub use open::{EntryStat, LastFolder, OpenFolder, RootDir};

/// The longest path accepted, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The most names (folders and the file) a path may have.
pub const MAX_PATH_COMPONENTS: usize = 256;
/// Error messages show at most this much of a path a client sent.
pub const MAX_SHOWN_PATH_CHARS: usize = 200;

/// Windows device names, refused as any path component on every platform.
const DEVICE_NAMES: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$", "COM0", "COM1", "COM2", "COM3",
    "COM4", "COM5", "COM6", "COM7", "COM8", "COM9", "COM¹", "COM²", "COM³", "LPT0", "LPT1", "LPT2",
    "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9", "LPT¹", "LPT²", "LPT³",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error(
        "path is {bytes} bytes long; paths of at most {MAX_PATH_BYTES} bytes are allowed, relative to the project root"
    )]
    TooLong { bytes: usize },
    #[error(
        "path has more than {MAX_PATH_COMPONENTS} components; paths of at most {MAX_PATH_COMPONENTS} folder and file names are allowed"
    )]
    TooManyComponents,
    #[error(
        "path must not contain NUL bytes; give a path relative to the project root, e.g. 'src/main.rs'"
    )]
    NulByte,
    #[error(
        "absolute path '{0}' is not allowed; give a path relative to the project root, e.g. 'src/main.rs'"
    )]
    Absolute(String),
    #[error(
        "Windows drive path '{0}' is not allowed; give a path relative to the project root, e.g. 'src/main.rs'"
    )]
    Drive(String),
    #[error(
        "'{0}' uses a ':' (drive or alternate data stream), which is not allowed in paths; give a plain relative path"
    )]
    Colon(String),
    #[error("'{0}' names a Windows device (CON, NUL, COM1 …), which is not allowed as a path")]
    Device(String),
    #[error(
        "'{0}' has a component ending in '.' or ' ', which is not allowed; give the exact file name"
    )]
    TrailingDotOrSpace(String),
    #[error("path '{0}' leaves the project root; only paths inside the project root are allowed")]
    EscapesRoot(String),
    #[error(
        "path '{0}' resolves outside the project root (through a symlink); only paths inside the project root are allowed"
    )]
    SymlinkEscape(String),
    #[error(
        "path '{0}' is on the deny-list (secrets such as .env, .envrc, *.pem, *.key, *.p12, id_rsa*, .netrc, .npmrc, .git/) and cannot be accessed"
    )]
    Denied(String),
    #[error(
        "path '{0}' does not exist in the project; use list_project_directory or find_project_files to see what exists"
    )]
    NotFound(String),
    #[error("path '{path}' cannot be resolved: {message}")]
    Unreadable { path: String, message: String },
    #[error("invalid deny glob {glob:?}: {message}")]
    BadGlob { glob: String, message: String },
}

/// `path` as an error message may show it: at most
/// [`MAX_SHOWN_PATH_CHARS`] characters, marked with `…` when cut.
pub fn shown_path(path: &str) -> String {
    match path.char_indices().nth(MAX_SHOWN_PATH_CHARS) {
        Some((end, _)) => format!("{}…", &path[..end]),
        None => path.to_string(),
    }
}

/// A path the gate accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Relative to the root, `/`-separated, normalized; `.` for the root.
    pub relative: String,
    /// The canonical location on disk (symlinks resolved, inside the root).
    pub real: PathBuf,
}

#[derive(Debug, Clone)]
pub struct PathGate {
    root: PathBuf,
    opener: Arc<RootDir>,
    deny: DenyList,
}

impl PathGate {
    /// `root` must already be canonical (see `config::canonical_dir`); it is
    /// held open from now on, and every file is opened relative to it.
    pub fn new(root: PathBuf, extra_deny: &[String]) -> Result<Self, PathError> {
        let opener = RootDir::open(&root).map_err(|error| PathError::Unreadable {
            path: shown_path(&root.to_string_lossy()),
            message: error.to_string(),
        })?;
        Ok(Self {
            root,
            opener: Arc::new(opener),
            deny: DenyList::new(extra_deny)?,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checks a client-supplied path and locates it on disk. The path must
    /// exist; its real location must lie inside the root; neither its
    /// spelled nor its real form may be deny-listed.
    pub fn resolve(&self, input: &str) -> Result<ResolvedPath, PathError> {
        let components = lexical_components(input)?;
        let relative = join_relative(&components);
        if self.is_denied(&relative) {
            return Err(PathError::Denied(shown_path(&relative)));
        }
        let (real, real_relative) = self.locate(&components, &relative)?;
        if self.is_denied(&real_relative) {
            return Err(PathError::Denied(shown_path(&relative)));
        }
        Ok(ResolvedPath { relative, real })
    }

    /// True when `input` leads outside the root through a symlink, as
    /// [`PathGate::resolve`] would say, but without the deny-list: the
    /// start-up's check of the docs folder, which the deny-list's matchers
    /// (and their CPU feature detection) need not delay.
    pub fn leads_outside(&self, input: &str) -> bool {
        lexical_components(input).is_ok_and(|components| {
            let relative = join_relative(&components);
            matches!(
                self.locate(&components, &relative),
                Err(PathError::SymlinkEscape(_))
            )
        })
    }

    /// The real location of the root-relative `components` (spelled
    /// `relative`), and its real root-relative path.
    fn locate(
        &self,
        components: &[String],
        relative: &str,
    ) -> Result<(PathBuf, String), PathError> {
        let spelled = self.spelled(components);
        let real = match canonicalize(&spelled) {
            Ok(real) => real,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(self.missing_or_escape(components, relative));
            }
            Err(error) => {
                return Err(PathError::Unreadable {
                    path: shown_path(relative),
                    message: error.to_string(),
                });
            }
        };
        match self.relative_of(&real) {
            Some(real_relative) => Ok((real, real_relative)),
            None => Err(PathError::SymlinkEscape(shown_path(relative))),
        }
    }

    /// The root joined with `components`, built in one buffer.
    fn spelled(&self, components: &[String]) -> PathBuf {
        let mut path = self.root.clone();
        for part in components {
            path.push(part);
        }
        path
    }

    /// A path that cannot be canonicalized is missing, unless its deepest
    /// existing ancestor already leads outside (then say so, not
    /// "missing"). Existence only shrinks along a path, so a binary search
    /// finds that ancestor with a logarithmic number of lookups.
    fn missing_or_escape(&self, components: &[String], relative: &str) -> PathError {
        // The root is canonical already: no lookups for it.
        let canonical = |count: usize| match count {
            0 => Some(self.root.clone()),
            _ => canonicalize(&self.spelled(&components[..count])).ok(),
        };
        let (mut exists, mut missing) = (0, components.len());
        let mut deepest = None;
        while missing - exists > 1 {
            let middle = exists + (missing - exists) / 2;
            match canonical(middle) {
                Some(real) => {
                    exists = middle;
                    deepest = Some(real);
                }
                None => missing = middle,
            }
        }
        let deepest = deepest.or_else(|| canonical(exists));
        if deepest.is_some_and(|real| self.relative_of(&real).is_none()) {
            PathError::SymlinkEscape(shown_path(relative))
        } else {
            PathError::NotFound(shown_path(relative))
        }
    }

    /// The `/`-separated path of `path` relative to the root, or `None` when
    /// `path` is not inside the root (compared component by component).
    pub fn relative_of(&self, path: &Path) -> Option<String> {
        relative_to_root(&self.root, path)
    }

    /// True when `relative` (root-relative, `/`-separated) or any of its
    /// ancestors matches the deny-list.
    pub fn is_denied(&self, relative: &str) -> bool {
        self.deny.denies(relative)
    }

    /// [`PathGate::is_denied`] for an entry a walk reached through folders
    /// it checked as it entered them (the walk's start was resolved through
    /// the gate): only the entry's own name and the operator's path globs
    /// are left to match. A walk checks every entry, and the full check
    /// matched every folder name above it again.
    pub fn is_denied_entry(&self, relative: &str) -> bool {
        self.deny.denies_entry(relative)
    }

    /// Opens the regular file at `path`, a location inside the root as
    /// [`PathGate::resolve`] (its `real`) or the walker produced it, through
    /// the root handle: a folder on the way that became a symlink since is
    /// refused, not followed (see [`open`]).
    pub fn open_file(&self, path: &Path) -> io::Result<File> {
        Ok(self.open_file_with_metadata(path)?.0)
    }

    /// [`PathGate::open_file`], with the open file's metadata.
    pub fn open_file_with_metadata(&self, path: &Path) -> io::Result<(File, Metadata)> {
        self.opener.open_file(self.below_root(path)?)
    }

    /// Opens the folder at `path` (inside the root, as the walker produced
    /// it) through the root handle, without following symlinks, so that
    /// files in it open by name ([`PathGate::open_file_in`]).
    pub fn open_folder(&self, path: &Path) -> io::Result<OpenFolder> {
        self.opener.open_folder(self.below_root(path)?)
    }

    /// Opens the regular file `name` in `folder`; refuses what
    /// [`PathGate::open_file`] refuses.
    pub fn open_file_in(
        &self,
        folder: &OpenFolder,
        name: &std::ffi::OsStr,
    ) -> io::Result<(File, Metadata)> {
        self.opener.open_file_in(folder, name)
    }

    /// Looks at the entry at `path` (inside the root, as the walker produced
    /// it) through the root handle, without following symlinks.
    pub fn entry_stat(&self, path: &Path) -> io::Result<EntryStat> {
        self.opener.entry_stat(self.below_root(path)?)
    }

    /// [`PathGate::entry_stat`] for entries that come folder by folder:
    /// `last` keeps the previous entry's folder open.
    pub fn entry_stat_in(&self, path: &Path, last: &mut LastFolder) -> io::Result<EntryStat> {
        self.opener.entry_stat_in(self.below_root(path)?, last)
    }

    /// The whole `stat` of the entry at `path`, looked up by name in its
    /// folder opened beneath the root (as [`PathGate::entry_stat_in`]).
    #[cfg(target_os = "linux")]
    pub fn full_stat_in(&self, path: &Path, last: &mut LastFolder) -> io::Result<rustix::fs::Stat> {
        self.opener.full_stat_in(self.below_root(path)?, last)
    }

    /// `path` relative to the root, exactly (names that are not UTF-8
    /// included), for the opener: on the bytes first (see
    /// [`bytes_below_root`]), since comparing paths part by part for every
    /// opened file was a few percent of a scan's search threads.
    fn below_root<'a>(&self, path: &'a Path) -> io::Result<&'a Path> {
        #[cfg(unix)]
        if let Some(rest) = bytes_below_root(&self.root, path) {
            use std::os::unix::ffi::OsStrExt;
            return Ok(Path::new(std::ffi::OsStr::from_bytes(rest)));
        }
        path.strip_prefix(&self.root).map_err(|_| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the path lies outside the project root",
            )
        })
    }
}

/// The `/`-separated path of `path` relative to `root` (`.` for the root
/// itself), or `None` when `path` is not inside it (compared component by
/// component).
pub fn relative_to_root(root: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = rest
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
}

/// The bytes of `path` after `root` and the `/` that follows it (none for
/// `root` itself); `None` when `path` does not start so. For paths made by
/// joining plain names to the canonical root, as the walker and the gate
/// make them (no `.` or empty names, `/`-separated), these are the
/// root-relative path, found without splitting either path into parts.
#[cfg(unix)]
pub fn bytes_below_root<'a>(root: &Path, path: &'a Path) -> Option<&'a [u8]> {
    use std::os::unix::ffi::OsStrExt;
    let root = root.as_os_str().as_bytes();
    match path.as_os_str().as_bytes().strip_prefix(root)? {
        [] => Some(&[]),
        [b'/', rest @ ..] => Some(rest),
        rest if root.ends_with(b"/") => Some(rest),
        _ => None,
    }
}

/// Splits and validates a client path; `..` is resolved lexically and may
/// never climb above the root. Bounded before any work, then one pass.
fn lexical_components(input: &str) -> Result<Vec<String>, PathError> {
    if input.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong { bytes: input.len() });
    }
    if input.contains('\0') {
        return Err(PathError::NulByte);
    }
    let shown = || shown_path(input);
    // Both separators count on every platform, so a Windows-style path means
    // the same thing wherever the server runs.
    let text = input.trim().replace('\\', "/");
    if text.starts_with('/') {
        return Err(PathError::Absolute(shown()));
    }
    if has_drive_prefix(&text) {
        return Err(PathError::Drive(shown()));
    }
    let mut components: Vec<String> = Vec::new();
    let mut steps = 0;
    for part in text.split('/') {
        if part.is_empty() || part == "." {
            continue;
        }
        steps += 1;
        if steps > MAX_PATH_COMPONENTS {
            return Err(PathError::TooManyComponents);
        }
        if part == ".." {
            if components.pop().is_none() {
                return Err(PathError::EscapesRoot(shown()));
            }
            continue;
        }
        if part.contains(':') {
            return Err(PathError::Colon(shown()));
        }
        if is_device_name(part) {
            return Err(PathError::Device(shown()));
        }
        if part.ends_with('.') || part.ends_with(' ') {
            return Err(PathError::TrailingDotOrSpace(shown()));
        }
        components.push(part.to_string());
    }
    Ok(components)
}

fn join_relative(components: &[String]) -> String {
    if components.is_empty() {
        ".".to_string()
    } else {
        components.join("/")
    }
}

fn has_drive_prefix(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// `NUL`, `nul.txt`, `Com1 .log`: Windows maps all of these to devices.
fn is_device_name(component: &str) -> bool {
    let stem = component.split('.').next().unwrap_or(component);
    let stem = stem.trim_end_matches([' ', '.']);
    // Device names are short; longer stems are never uppercased.
    stem.len() <= 8 && DEVICE_NAMES.contains(&stem.to_uppercase().as_str())
}

/// Test fixture for every module: a temporary, canonical project root
/// holding `files` (path, content).
#[cfg(test)]
pub(crate) fn temp_root<N: AsRef<std::path::Path>, T: AsRef<[u8]>>(
    files: &[(N, T)],
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dunce::canonicalize(dir.path()).expect("canonical temp dir");
    for (path, content) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create folders");
        std::fs::write(path, content).expect("write fixture");
    }
    (dir, root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, PathGate) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("proj");
        fs::create_dir_all(root.join("src/nested")).unwrap();
        fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        fs::write(root.join(".env"), "SECRET=1\n").unwrap();
        fs::write(root.join(".env.example"), "SECRET=\n").unwrap();
        fs::write(root.join("server.pem"), "x").unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join(".git/config"), "x").unwrap();
        fs::create_dir_all(dir.path().join("proj-secret")).unwrap();
        fs::write(dir.path().join("proj-secret/key.txt"), "x").unwrap();
        let root = dunce::canonicalize(root).unwrap();
        let gate = PathGate::new(root, &["*.secret".into(), "private/**".into()]).unwrap();
        (dir, gate)
    }

    #[test]
    fn accepts_plain_paths() {
        let (_dir, gate) = setup();
        let resolved = gate.resolve("src/main.rs").unwrap();
        assert_eq!(resolved.relative, "src/main.rs");
        assert!(resolved.real.ends_with("src/main.rs"));
        assert_eq!(gate.resolve(".").unwrap().relative, ".");
        assert_eq!(gate.resolve("").unwrap().relative, ".");
        assert_eq!(
            gate.resolve("./src/../src/main.rs").unwrap().relative,
            "src/main.rs"
        );
        assert_eq!(
            gate.resolve("src\\main.rs").unwrap().relative,
            "src/main.rs"
        );
        assert_eq!(
            gate.resolve(".env.example").unwrap().relative,
            ".env.example"
        );
    }

    #[test]
    fn rejects_escapes() {
        let (_dir, gate) = setup();
        for input in [
            "..",
            "../proj-secret/key.txt",
            "src/../../x",
            "../../../../etc/passwd",
        ] {
            assert!(
                matches!(gate.resolve(input), Err(PathError::EscapesRoot(_))),
                "{input}"
            );
        }
    }

    #[test]
    fn rejects_absolute_and_windows_forms() {
        let (_dir, gate) = setup();
        let cases = [
            ("/etc/passwd", "absolute"),
            ("\\Windows\\win.ini", "absolute"),
            ("C:\\Windows\\win.ini", "drive"),
            ("C:x", "drive"),
            ("c:/x", "drive"),
            ("\\\\server\\share\\x", "absolute"),
            ("\\\\?\\C:\\x", "absolute"),
            ("//?/C:/x", "absolute"),
            ("\\\\.\\pipe\\x", "absolute"),
            ("CON", "device"),
            ("nul.txt", "device"),
            ("src/Com1", "device"),
            ("lpt9.log", "device"),
            ("file.txt::$DATA", "colon"),
            ("src/main.rs:stream", "colon"),
            ("src/main.rs.", "trailing"),
            ("src/main.rs ", "ok-trimmed"),
            (".env.", "trailing"),
        ];
        for (input, kind) in cases {
            let result = gate.resolve(input);
            let ok = match kind {
                "absolute" => matches!(result, Err(PathError::Absolute(_))),
                "drive" => matches!(result, Err(PathError::Drive(_))),
                "device" => matches!(result, Err(PathError::Device(_))),
                "colon" => matches!(result, Err(PathError::Colon(_))),
                "trailing" => matches!(result, Err(PathError::TrailingDotOrSpace(_))),
                _ => result.is_ok(),
            };
            assert!(ok, "{input}: {result:?}");
        }
        assert_eq!(gate.resolve("a\0b"), Err(PathError::NulByte));
    }

    #[test]
    fn deny_list_applies_to_every_spelling() {
        let (_dir, gate) = setup();
        for input in [
            ".env",
            "./.env",
            "src/../.env",
            ".ENV",
            "server.pem",
            ".git/config",
            ".git",
        ] {
            assert!(
                matches!(gate.resolve(input), Err(PathError::Denied(_))),
                "{input}"
            );
        }
        assert!(gate.is_denied("a/b/id_rsa.pub"));
        assert!(gate.is_denied("deep/.git/HEAD"));
        assert!(gate.is_denied("x.secret"));
        assert!(gate.is_denied("private/notes.txt"));
        assert!(!gate.is_denied("other/private/notes.txt"));
        assert!(!gate.is_denied(".env.sample"));
        assert!(!gate.is_denied(".environment/x"));
        assert!(!gate.is_denied("."));
    }

    #[test]
    fn missing_paths_are_reported() {
        let (_dir, gate) = setup();
        assert!(matches!(
            gate.resolve("nope.txt"),
            Err(PathError::NotFound(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_root_are_refused() {
        let (dir, gate) = setup();
        let root = gate.root().to_path_buf();
        std::os::unix::fs::symlink(dir.path().join("proj-secret"), root.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();
        std::os::unix::fs::symlink(root.join(".env"), root.join("innocent.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("src-link")).unwrap();
        assert!(matches!(
            gate.resolve("out/key.txt"),
            Err(PathError::SymlinkEscape(_))
        ));
        assert!(matches!(
            gate.resolve("out/missing"),
            Err(PathError::SymlinkEscape(_))
        ));
        assert!(matches!(
            gate.resolve("passwd"),
            Err(PathError::SymlinkEscape(_))
        ));
        assert!(matches!(
            gate.resolve("innocent.txt"),
            Err(PathError::Denied(_))
        ));
        let inside = gate.resolve("src-link/main.rs").unwrap();
        assert_eq!(inside.relative, "src-link/main.rs");
        assert!(inside.real.starts_with(gate.root()));
    }

    #[test]
    fn sibling_with_common_prefix_is_outside() {
        let (dir, gate) = setup();
        let sibling = dunce::canonicalize(dir.path().join("proj-secret/key.txt")).unwrap();
        assert_eq!(gate.relative_of(&sibling), None);
        // The opener's byte comparison must not take it for a path below.
        let refused = gate.open_file(&sibling).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied, "{refused}");
        assert!(gate.open_file(&gate.root().join("src/main.rs")).is_ok());
        #[cfg(unix)]
        for (root, path, below) in [
            ("/a/b", "/a/b/c/d", Some(&b"c/d"[..])),
            ("/a/b", "/a/b", Some(&b""[..])),
            ("/a/b", "/a/bc/d", None),
            ("/a/b", "/a", None),
            ("/", "/etc/x", Some(&b"etc/x"[..])),
        ] {
            assert_eq!(
                bytes_below_root(Path::new(root), Path::new(path)),
                below,
                "{path}"
            );
        }
    }

    #[test]
    fn windows_forms_parsed_by_typed_path_are_all_refused() {
        use typed_path::{Utf8WindowsComponent, Utf8WindowsPath};
        let (_dir, gate) = setup();
        for input in [
            r"C:\Windows",
            r"C:relative",
            r"\\server\share\file",
            r"\\?\C:\Windows",
            r"\\?\UNC\server\share",
            r"\\.\COM1",
            r"\rooted",
        ] {
            // typed-path confirms that Windows would see a prefix or root here.
            let has_prefix_or_root = Utf8WindowsPath::new(input).components().any(|c| {
                matches!(
                    c,
                    Utf8WindowsComponent::Prefix(_) | Utf8WindowsComponent::RootDir
                )
            });
            assert!(has_prefix_or_root, "{input}");
            assert!(gate.resolve(input).is_err(), "{input}");
        }
    }

    /// Where Windows paths are real: the gate must refuse the forms that
    /// Windows itself would follow out of the root.
    /// Paths far longer than Windows' `MAX_PATH`, with spaces and
    /// non-ASCII names, resolve below the root and open.
    #[test]
    fn long_paths_with_spaces_and_non_ascii_names_resolve_and_open() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let root = canonicalize(dir.path()).unwrap();
        // Wine without a UTF-8 locale (the Windows test run here) refuses
        // non-ASCII names: ASCII there.
        let (u, a) = if cfg!(windows) {
            ("u", "A")
        } else {
            ("ü", "Ä")
        };
        let folders: Vec<String> = (0..30)
            .map(|level| format!("Ordner {u} {level:02}"))
            .collect();
        let relative = format!("{}/Datei mit {a}pfeln.txt", folders.join("/"));
        let real = root.join(&relative);
        assert!(real.as_os_str().len() > 300);
        fs::create_dir_all(real.parent().unwrap()).unwrap();
        fs::write(&real, "tief").unwrap();
        let gate = PathGate::new(root, &[]).unwrap();
        let resolved = gate.resolve(&relative).unwrap();
        assert_eq!(resolved.relative, relative);
        let mut text = String::new();
        gate.open_file(&resolved.real)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "tief");
    }

    #[cfg(windows)]
    mod windows {
        use super::*;

        #[test]
        fn real_windows_forms_of_an_inside_file_are_refused() {
            let dir = tempfile::tempdir().unwrap();
            let root = dunce::canonicalize(dir.path()).unwrap();
            assert!(
                !root.to_string_lossy().starts_with(r"\\?\"),
                "dunce left a verbatim prefix: {}",
                root.display()
            );
            fs::create_dir_all(root.join("sub")).unwrap();
            fs::write(root.join("sub").join("a.txt"), "x").unwrap();
            let gate = PathGate::new(root.clone(), &[]).unwrap();

            let inside = gate.resolve(r"sub\a.txt").unwrap();
            assert_eq!(inside.relative, "sub/a.txt");
            assert!(inside.real.starts_with(gate.root()));

            // The same file, spelled the ways Windows would accept.
            let absolute = root
                .join("sub")
                .join("a.txt")
                .to_string_lossy()
                .into_owned();
            assert!(
                matches!(gate.resolve(&absolute), Err(PathError::Drive(_))),
                "{absolute}"
            );
            let verbatim = format!(r"\\?\{absolute}");
            assert!(
                matches!(gate.resolve(&verbatim), Err(PathError::Absolute(_))),
                "{verbatim}"
            );
            let drive_relative = format!("{}sub\\a.txt", &absolute[..2]);
            assert!(matches!(
                gate.resolve(&drive_relative),
                Err(PathError::Drive(_))
            ));
            let unc = format!(r"\\localhost\{}$\{}", &absolute[..1], &absolute[3..]);
            assert!(
                matches!(gate.resolve(&unc), Err(PathError::Absolute(_))),
                "{unc}"
            );
            for device in [
                "NUL",
                "con.txt",
                r"sub\COM1",
                "sub/a.txt::$DATA",
                r"sub\a.txt.",
            ] {
                assert!(gate.resolve(device).is_err(), "{device}");
            }
            // Windows file names are case-insensitive: so is the deny-list.
            fs::write(root.join(".env"), "SECRET=1").unwrap();
            assert!(matches!(gate.resolve(".ENV"), Err(PathError::Denied(_))));
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;
        use std::path::Component;

        /// No root, prefix or `..` component: safe to join onto the root.
        fn is_plain_relative(path: &Path) -> bool {
            path.components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        }

        fn component() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("..".to_string()),
                Just(".".to_string()),
                Just("src".to_string()),
                Just("nested".to_string()),
                Just("main.rs".to_string()),
                Just("C:".to_string()),
                Just("".to_string()),
                "[a-zA-Z0-9._ :$-]{1,8}",
            ]
        }

        fn path() -> impl Strategy<Value = String> {
            (
                prop::collection::vec(component(), 0..8),
                prop_oneof![Just("/"), Just("\\")],
                prop_oneof![Just(""), Just("/"), Just("\\"), Just("\\\\")],
            )
                .prop_map(|(parts, sep, lead)| format!("{lead}{}", parts.join(sep)))
        }

        proptest! {
            #[test]
            fn accepted_paths_stay_inside_the_root(input in path()) {
                let (_dir, gate) = setup();
                if let Ok(resolved) = gate.resolve(&input) {
                    prop_assert!(resolved.real.starts_with(gate.root()));
                    prop_assert!(!resolved.relative.split('/').any(|c| c == ".."));
                    prop_assert!(!gate.is_denied(&resolved.relative));
                    prop_assert!(is_plain_relative(Path::new(&resolved.relative)));
                }
            }
        }

        /// Names the fuzzed tree holds (symlinks in and out, loops, secrets)
        /// and forms the gate must refuse, mixed with random text.
        fn hostile_component() -> impl Strategy<Value = String> {
            prop_oneof![
                3 => prop::sample::select(vec![
                    "..", ".", "", "src", "nested", "main.rs", "out", "abs-out", "in",
                    "abs-in", "loop", "dangling", "up", "up2", "env-link", "dotdot",
                    ".env", ".ENV", ".envrc", ".git", "private", "C:", "c:\\", "\\\\?\\",
                    "\\\\.\\", "CON", "nul.txt", "com1.log", "file::$DATA", "a\0b",
                    "main.rs.", "main.rs ", "..\\..", "~", "%2e%2e",
                ])
                .prop_map(String::from),
                2 => "[a-zA-Z0-9._ :$\\\\/-]{1,12}",
                1 => "\\PC{1,8}",
                1 => "x{200,300}",
            ]
        }

        fn hostile_path() -> impl Strategy<Value = String> {
            let mixed = (
                prop::collection::vec(hostile_component(), 0..24),
                prop_oneof![Just("/"), Just("\\")],
                prop::sample::select(vec!["", "/", "\\", "\\\\", "C:", "//?/", "./", "../"]),
            )
                .prop_map(|(parts, sep, lead)| format!("{lead}{}", parts.join(sep)));
            // Long inputs: many repeats of one component.
            let long = (hostile_component(), 1..3_000usize)
                .prop_map(|(part, count)| vec![part; count].join("/"));
            prop_oneof![4 => mixed, 1 => long]
        }

        /// A tree with every kind of symlink the gate must see through
        /// (on Unix: making symlinks on Windows takes a privilege).
        fn symlinked_tree() -> (tempfile::TempDir, PathGate) {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("proj");
            for (path, text) in [
                ("src/main.rs", "fn main() {}\n"),
                ("src/nested/deep.txt", "deep\n"),
                (".env", "SECRET=1\n"),
                ("private/plan.txt", "plan\n"),
            ] {
                fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
                fs::write(root.join(path), text).unwrap();
            }
            fs::create_dir_all(dir.path().join("outside")).unwrap();
            fs::write(dir.path().join("outside/secret.txt"), "outside\n").unwrap();
            let root = dunce::canonicalize(root).unwrap();
            #[cfg(unix)]
            for (link, target) in [
                ("out", "../outside".to_string()),
                ("abs-out", "/etc".to_string()),
                ("in", "src".to_string()),
                ("abs-in", root.join("src").to_string_lossy().into_owned()),
                ("loop", "loop".to_string()),
                ("dangling", "nowhere".to_string()),
                ("src/up", "..".to_string()),
                ("src/up2", "../..".to_string()),
                ("env-link", ".env".to_string()),
                ("dotdot", "../proj/src".to_string()),
            ] {
                std::os::unix::fs::symlink(target, root.join(link)).unwrap();
            }
            let gate = PathGate::new(root, &["private/**".into()]).unwrap();
            (dir, gate)
        }

        /// The gate's fuzz harness: thousands of hostile strings against a
        /// real tree of symlinks. Every accepted path's real location lies
        /// inside the root and is not denied, whatever opens through the
        /// gate is that same file, and nothing panics.
        #[test]
        fn fuzzed_paths_never_escape_the_root_or_panic() {
            use proptest::test_runner::{Config, TestRunner};
            use std::io::Read;
            let (_dir, gate) = symlinked_tree();
            let mut runner = TestRunner::new(Config {
                cases: 3_000,
                failure_persistence: None,
                ..Config::default()
            });
            let accepted = std::sync::atomic::AtomicUsize::new(0);
            runner
                .run(&hostile_path(), |input| {
                    let Ok(resolved) = gate.resolve(&input) else {
                        return Ok(());
                    };
                    accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let real = dunce::canonicalize(&resolved.real).unwrap();
                    prop_assert!(real.starts_with(gate.root()), "{input:?} -> {real:?}");
                    let real_relative = gate.relative_of(&real).unwrap();
                    prop_assert!(!gate.is_denied(&real_relative), "{input:?}");
                    prop_assert!(!gate.is_denied(&resolved.relative), "{input:?}");
                    prop_assert!(is_plain_relative(Path::new(&resolved.relative)));
                    if let Ok(mut file) = gate.open_file(&resolved.real) {
                        #[cfg(unix)]
                        {
                            use std::os::unix::fs::MetadataExt;
                            let opened = file.metadata().unwrap();
                            let expected = fs::metadata(&real).unwrap();
                            prop_assert_eq!(opened.ino(), expected.ino(), "{:?}", input);
                            prop_assert_eq!(opened.dev(), expected.dev(), "{:?}", input);
                        }
                        let mut opened = Vec::new();
                        file.read_to_end(&mut opened).unwrap();
                        prop_assert_eq!(opened, fs::read(&real).unwrap(), "{:?}", input);
                    }
                    Ok(())
                })
                .unwrap();
            let accepted = accepted.into_inner();
            assert!(accepted > 0, "no fuzzed path was accepted");
        }

        #[test]
        fn the_deny_list_matches_ancestors_in_one_pass() {
            let gate = PathGate::new(
                dunce::canonicalize(std::env::temp_dir()).unwrap(),
                &["docs/internal/**".into(), "./build/*.log".into()],
            )
            .unwrap();
            for denied in [
                "docs/internal/a.md",
                "docs/internal/x/y.md",
                "DOCS/Internal/a.md",
                "build/x.log",
                "build/x.log/inner",
            ] {
                assert!(gate.is_denied(denied), "{denied}");
            }
            for allowed in [
                "docs/internal",
                "docs/public.md",
                "x/docs/internal/a.md",
                "build/x.txt",
            ] {
                assert!(!gate.is_denied(allowed), "{allowed}");
            }
        }

        /// A walk checks each entry's own name only: for every path whose
        /// folders the full check lets in, both checks agree.
        #[test]
        fn the_entry_check_agrees_below_allowed_folders() {
            use proptest::test_runner::{Config, TestRunner};
            let gate = PathGate::new(
                dunce::canonicalize(std::env::temp_dir()).unwrap(),
                &[
                    "docs/internal/**".into(),
                    "*.secret".into(),
                    "build/*.log".into(),
                ],
            )
            .unwrap();
            let names = proptest::sample::select(vec![
                "src",
                "docs",
                "internal",
                "build",
                ".git",
                ".env",
                ".env.example",
                ".ENVRC",
                "id_rsa.pub",
                "key.PEM",
                "x.secret",
                "a.log",
                "notes.md",
                "node_modules",
                "Cargo.toml",
                ".npmrc",
                "cert.p12",
                "ok.txt",
            ]);
            let mut runner = TestRunner::new(Config {
                cases: 2_000,
                failure_persistence: None,
                ..Config::default()
            });
            runner
                .run(&proptest::collection::vec(names, 1..6), |parts| {
                    let path = parts.join("/");
                    let folders_allowed =
                        (1..parts.len()).all(|depth| !gate.is_denied(&parts[..depth].join("/")));
                    if folders_allowed {
                        prop_assert_eq!(
                            gate.is_denied_entry(&path),
                            gate.is_denied(&path),
                            "{}",
                            path
                        );
                    }
                    Ok(())
                })
                .unwrap();
        }

        #[test]
        fn long_and_deep_paths_are_refused_before_any_work() {
            let gate =
                PathGate::new(dunce::canonicalize(std::env::temp_dir()).unwrap(), &[]).unwrap();
            let long = "a/".repeat(8_000_000);
            assert_eq!(
                gate.resolve(&long),
                Err(PathError::TooLong { bytes: long.len() })
            );
            let deep = "a/".repeat(MAX_PATH_COMPONENTS + 1);
            assert_eq!(gate.resolve(&deep), Err(PathError::TooManyComponents));
            let dots = "./".repeat(2_000);
            assert!(gate.resolve(&dots).is_ok(), "'.' steps are free");
            let error = gate
                .resolve(&format!("{}/x", "b".repeat(4_000)))
                .unwrap_err();
            assert!(error.to_string().chars().count() < 500, "{error}");
            assert!(error.to_string().contains('…'), "{error}");
        }
    }
}
