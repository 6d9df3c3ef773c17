//! The real location of a path, in the form the gate compares with the
//! root: one function for every platform.
//!
//! On Windows, `std::fs::canonicalize` answers in the verbatim form
//! (`\\?\C:\…`), and `dunce` keeps that form for paths longer than
//! `MAX_PATH`, which a root spelled `C:\…` is not a prefix of. The answer
//! here is always the plain form (`C:\…`, `\\server\share\…`): the standard
//! library adds the verbatim prefix again itself wherever a path is too long
//! for the plain one.
//!
//! Wine's `GetFinalPathNameByHandleW` reads the name into a buffer of
//! `MAX_PATH` characters and fails with `ERROR_MORE_DATA` for a longer one
//! (dlls/kernelbase/file.c), where Windows answers with the size it needs.
//! For that answer only, the path is resolved step by step: the deepest
//! ancestor that canonicalizes, then one plain name at a time, refusing any
//! symlink or junction on the way (which only the full resolution could
//! follow safely). Windows itself never takes that branch.

use std::io;
use std::path::{Path, PathBuf};

/// The canonical, plain form of `path` (see the module notes).
#[cfg(not(windows))]
pub fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    std::fs::canonicalize(path)
}

/// The canonical, plain form of `path` (see the module notes).
#[cfg(windows)]
pub fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    match std::fs::canonicalize(path) {
        Ok(real) => Ok(plain(real)),
        Err(error) if error.raw_os_error() == Some(ERROR_MORE_DATA) => step_by_step(path),
        Err(error) => Err(error),
    }
}

#[cfg(windows)]
const ERROR_MORE_DATA: i32 = 234;

/// `\\?\C:\x` as `C:\x`, `\\?\UNC\server\share\x` as `\\server\share\x`;
/// other forms as they are.
#[cfg(any(windows, test))]
fn plain(path: PathBuf) -> PathBuf {
    let Some(text) = path.to_str() else {
        return path;
    };
    if let Some(rest) = text.strip_prefix(r"\\?\UNC\") {
        return PathBuf::from(format!(r"\\{rest}"));
    }
    match text.strip_prefix(r"\\?\") {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => PathBuf::from(rest),
        _ => path,
    }
}

/// Wine's long paths: see the module notes.
#[cfg(windows)]
fn step_by_step(path: &Path) -> io::Result<PathBuf> {
    use std::path::Component;
    let mut names: Vec<&std::ffi::OsStr> = Vec::new();
    let mut base = path;
    let mut real = loop {
        let Some(parent) = base.parent() else {
            return Err(io::Error::other(format!(
                "{} cannot be resolved",
                path.display()
            )));
        };
        match base.components().next_back() {
            Some(Component::Normal(name)) => names.push(name),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "only plain names can be resolved step by step",
                ));
            }
        }
        base = parent;
        match std::fs::canonicalize(base) {
            Ok(real) => break plain(real),
            Err(error) if error.raw_os_error() == Some(ERROR_MORE_DATA) => continue,
            Err(error) => return Err(error),
        }
    };
    for name in names.into_iter().rev() {
        real.push(name);
        if std::fs::symlink_metadata(&real)?.file_type().is_symlink() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "a symlink or junction deeper than MAX_PATH characters is not followed",
            ));
        }
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbatim_forms_become_plain() {
        for (verbatim, expected) in [
            (r"\\?\C:\a\b", r"C:\a\b"),
            (r"\\?\UNC\server\share\x", r"\\server\share\x"),
            (r"\\?\Volume{1234}\x", r"\\?\Volume{1234}\x"),
            (r"C:\plain", r"C:\plain"),
            ("/unix/path", "/unix/path"),
        ] {
            assert_eq!(plain(PathBuf::from(verbatim)), PathBuf::from(expected));
        }
    }

    /// A path far longer than `MAX_PATH`, its canonical form a plain one
    /// below the plain root, on every platform (under Wine through the
    /// step-by-step branch).
    #[test]
    fn paths_longer_than_max_path_resolve_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = canonicalize(dir.path()).unwrap();
        let mut deep = root.clone();
        for level in 0..40 {
            deep.push(format!("folder-with-a-long-name-{level:02}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        let file = deep.join("file.txt");
        std::fs::write(&file, "deep").unwrap();
        assert!(file.as_os_str().len() > 1000);
        let real = canonicalize(&file).unwrap();
        assert!(real.starts_with(&root), "{real:?} outside {root:?}");
        assert_eq!(real.strip_prefix(&root).unwrap().components().count(), 41);
        assert_eq!(std::fs::read_to_string(real).unwrap(), "deep");
    }
}
