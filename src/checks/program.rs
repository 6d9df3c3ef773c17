//! Where a check's program is: the project's virtualenv for Python, a path
//! relative to the root, or the absolute PATH entries (with PATHEXT on
//! Windows). Relative PATH entries are ignored so that the project
//! directory cannot shadow a program.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// `python`/`python3` as a program name marks a Python check.
fn is_python(program: &str) -> bool {
    matches!(program, "python" | "python3")
}

/// The project's own interpreters, most preferred first.
fn venv_interpreters(root: &Path) -> Vec<PathBuf> {
    let inside: &[&str] = if cfg!(windows) {
        &["Scripts", "python.exe"]
    } else {
        &["bin", "python"]
    };
    [".venv", "venv"]
        .iter()
        .map(|venv| {
            inside
                .iter()
                .fold(root.join(venv), |path, part| path.join(part))
        })
        .collect()
}

/// Finds the program of a check:
/// - `python`/`python3`: the project's `.venv`/`venv` interpreter, else
///   `python3`, else `python` on PATH;
/// - a name with a path separator: that file, relative to the root;
/// - any other name: the absolute PATH entries.
pub fn resolve_program(
    root: &Path,
    program: &str,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, String> {
    let dirs: Vec<PathBuf> = path_var
        .map(|value| {
            std::env::split_paths(value)
                .filter(|dir| dir.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    if is_python(program) {
        let venvs = venv_interpreters(root);
        if let Some(found) = venvs.iter().find_map(|candidate| find_exact(candidate)) {
            return Ok(found);
        }
        if let Some(found) = ["python3", "python"]
            .iter()
            .find_map(|name| find_on_path(name, &dirs))
        {
            return Ok(found);
        }
        let venvs = venvs
            .iter()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(" and ");
        return Err(format!(
            "no Python interpreter found for '{program}': looked for {venvs}, then python3 and python on PATH ({})",
            describe_search(&dirs)
        ));
    }
    if program.contains('/') || program.contains('\\') || Path::new(program).is_absolute() {
        let candidate = root.join(program);
        return find_exact(&candidate).ok_or_else(|| {
            format!(
                "program '{program}' was not found at {} (or is not executable)",
                candidate.display()
            )
        });
    }
    find_on_path(program, &dirs).ok_or_else(|| {
        format!(
            "program '{program}' was not found on PATH ({})",
            describe_search(&dirs)
        )
    })
}

fn find_on_path(program: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    let list = std::env::join_paths(dirs).ok()?;
    which::WhichConfig::new()
        .system_cwd(false)
        .custom_path_list(list)
        .binary_name(program.into())
        .first_result()
        .ok()
}

/// An absolute path, executable (on Windows also with a PATHEXT extension).
fn find_exact(path: &Path) -> Option<PathBuf> {
    which::WhichConfig::new()
        .system_cwd(false)
        .binary_name(path.as_os_str().to_owned())
        .first_result()
        .ok()
}

fn describe_search(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "PATH is empty or has only relative entries, which are ignored".to_string();
    }
    let listed = dirs
        .iter()
        .map(|dir| dir.display().to_string())
        .collect::<Vec<_>>()
        .join(if cfg!(windows) { ";" } else { ":" });
    if cfg!(windows) {
        let extensions =
            std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".to_string());
        format!("searched {listed} with extensions {extensions}")
    } else {
        format!("searched {listed}")
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    #[test]
    fn finds_programs_on_path_only_in_absolute_entries() {
        let bin = tempfile::tempdir().expect("bin");
        executable(&bin.path().join("tool"));
        let root = tempfile::tempdir().expect("root");
        executable(&root.path().join("shadow"));
        let path = std::env::join_paths([bin.path(), Path::new(".")]).expect("PATH");

        let found = resolve_program(root.path(), "tool", Some(&path)).expect("found");
        assert_eq!(found, bin.path().join("tool"));
        let error = resolve_program(root.path(), "shadow", Some(&path)).unwrap_err();
        assert!(
            error.contains("program 'shadow' was not found on PATH"),
            "{error}"
        );
        assert!(error.contains(&bin.path().display().to_string()), "{error}");
    }

    #[test]
    fn a_file_that_is_not_executable_is_not_a_program() {
        let bin = tempfile::tempdir().expect("bin");
        std::fs::write(bin.path().join("notes"), "").expect("write");
        let path = bin.path().as_os_str();
        assert!(resolve_program(bin.path(), "notes", Some(path)).is_err());
    }

    #[test]
    fn python_prefers_the_project_venv_then_python3() {
        let bin = tempfile::tempdir().expect("bin");
        executable(&bin.path().join("python3"));
        executable(&bin.path().join("python"));
        let path = bin.path().as_os_str();
        let root = tempfile::tempdir().expect("root");

        let found = resolve_program(root.path(), "python", Some(path)).expect("found");
        assert_eq!(found, bin.path().join("python3"));

        executable(&root.path().join("venv/bin/python"));
        let found = resolve_program(root.path(), "python", Some(path)).expect("found");
        assert_eq!(found, root.path().join("venv/bin/python"));

        // .venv wins over venv, and the path is not canonicalized, so a
        // symlinked interpreter still finds its virtualenv.
        std::fs::create_dir_all(root.path().join(".venv/bin")).expect("mkdir");
        std::os::unix::fs::symlink(
            bin.path().join("python3"),
            root.path().join(".venv/bin/python"),
        )
        .expect("symlink");
        let found = resolve_program(root.path(), "python3", Some(path)).expect("found");
        assert_eq!(found, root.path().join(".venv/bin/python"));
    }

    #[test]
    fn python_falls_back_to_python_and_explains_where_it_looked() {
        let bin = tempfile::tempdir().expect("bin");
        let root = tempfile::tempdir().expect("root");
        let path = bin.path().as_os_str();
        let error = resolve_program(root.path(), "python", Some(path)).unwrap_err();
        assert!(error.contains(".venv/bin/python"), "{error}");
        assert!(error.contains("python3 and python on PATH"), "{error}");

        executable(&bin.path().join("python"));
        let found = resolve_program(root.path(), "python", Some(path)).expect("found");
        assert_eq!(found, bin.path().join("python"));
    }

    #[test]
    fn paths_with_separators_are_relative_to_the_root() {
        let root = tempfile::tempdir().expect("root");
        executable(&root.path().join("scripts/check.sh"));
        let found = resolve_program(root.path(), "scripts/check.sh", None).expect("found");
        assert_eq!(found, root.path().join("scripts/check.sh"));
        let error = resolve_program(root.path(), "./missing.sh", None).unwrap_err();
        assert!(error.contains("was not found at"), "{error}");
    }

    #[test]
    fn an_empty_path_is_explained() {
        let root = tempfile::tempdir().expect("root");
        let error = resolve_program(root.path(), "cargo", None).unwrap_err();
        assert!(error.contains("PATH is empty"), "{error}");
    }
}

/// Windows: programs are files with a PATHEXT extension; a name without one
/// finds `.exe`, `.cmd` and `.bat` files.
#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;

    fn file(path: &Path) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, "").expect("write");
    }

    #[test]
    fn cmd_and_bat_launchers_are_found_through_pathext() {
        let bin = tempfile::tempdir().expect("bin");
        file(&bin.path().join("npm.cmd"));
        file(&bin.path().join("legacy.bat"));
        file(&bin.path().join("notes.txt"));
        let root = tempfile::tempdir().expect("root");
        file(&root.path().join("shadow.cmd"));
        let path = std::env::join_paths([bin.path(), Path::new(".")]).expect("PATH");

        let found = resolve_program(root.path(), "npm", Some(&path)).expect("npm");
        assert_eq!(found, bin.path().join("npm.cmd"));
        let found = resolve_program(root.path(), "legacy", Some(&path)).expect("legacy");
        assert_eq!(found, bin.path().join("legacy.bat"));
        assert!(resolve_program(root.path(), "notes", Some(&path)).is_err());
        // The relative entry `.` cannot make the project shadow a program.
        let error = resolve_program(root.path(), "shadow", Some(&path)).unwrap_err();
        assert!(error.contains("with extensions"), "{error}");
    }

    #[test]
    fn python_prefers_the_venvs_scripts_python_exe() {
        let bin = tempfile::tempdir().expect("bin");
        file(&bin.path().join("python3.exe"));
        let path = bin.path().as_os_str();
        let root = tempfile::tempdir().expect("root");

        let found = resolve_program(root.path(), "python", Some(path)).expect("found");
        assert_eq!(found, bin.path().join("python3.exe"));
        file(&root.path().join(r"venv\Scripts\python.exe"));
        let found = resolve_program(root.path(), "python", Some(path)).expect("found");
        assert_eq!(found, root.path().join(r"venv\Scripts\python.exe"));
        file(&root.path().join(r".venv\Scripts\python.exe"));
        let found = resolve_program(root.path(), "python3", Some(path)).expect("found");
        assert_eq!(found, root.path().join(r".venv\Scripts\python.exe"));
    }

    /// (ASCII only: the Wine run here has no UTF-8 locale, and Wine then
    /// refuses non-ASCII names; the gate's tests cover them elsewhere.)
    #[test]
    fn folders_with_spaces_hold_programs() {
        let bin = tempfile::tempdir().expect("bin");
        let dir = bin.path().join("Program Files (x86)").join("Checks");
        file(&dir.join("lint.exe"));
        let root = tempfile::tempdir().expect("root");
        let path = dir.as_os_str();
        let found = resolve_program(root.path(), "lint", Some(path)).expect("found");
        assert_eq!(found, dir.join("lint.exe"));
        file(&root.path().join(r"tools dir\run check.cmd"));
        let found = resolve_program(root.path(), r"tools dir\run check.cmd", None).expect("found");
        assert_eq!(found, root.path().join(r"tools dir\run check.cmd"));
    }
}
