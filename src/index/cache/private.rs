//! Files and folders of the cache: readable by the user alone (what they
//! hold is derived from the project's content), created new so that a link
//! planted in the cache is never followed, and replaced atomically.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Creates `path` (and its missing parents) as folders only the user may
/// enter; an existing one must be a real folder of the user's, and loses
/// any group or other permission.
pub fn create_folder(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)?;
    check_folder(path)
}

#[cfg(unix)]
fn check_folder(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let metadata = std::fs::symlink_metadata(path)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    if !metadata.is_dir() || metadata.uid() != user {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a folder of the current user (a link, a file, or another user's)",
                path.display()
            ),
        ));
    }
    if metadata.mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_folder(path: &Path) -> io::Result<()> {
    let metadata = std::fs::symlink_metadata(path)?;
    if !metadata.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is not a folder", path.display()),
        ));
    }
    Ok(())
}

/// Creates a file that did not exist, readable and writable by the user
/// alone.
pub fn create_new_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Opens (creating it if needed) a file that is kept, such as the lock;
/// never through a link.
pub fn open_kept_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// A name for a temporary file beside `file_name` in `dir` that no other
/// writer (another thread or server) picks at the same time.
pub fn temporary_path(dir: &Path, file_name: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{file_name}.{}.{count}.tmp", std::process::id()))
}

/// Renames `from` over `to` and makes the rename durable: a reader sees
/// the old file or the new one, whole, even after a crash.
pub fn replace(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)?;
    #[cfg(unix)]
    if let Some(dir) = to.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Writes `bytes` as `dir/file_name` through a synced temporary file.
pub fn write_atomically(dir: &Path, file_name: &str, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let temporary = temporary_path(dir, file_name);
    let written = create_new_file(&temporary).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        replace(&temporary, &dir.join(file_name))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn folders_and_files_are_the_users_alone() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a/b");
        create_folder(&folder).unwrap();
        assert_eq!(mode(&folder), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        write_atomically(&folder, "f", b"x").unwrap();
        assert_eq!(mode(&folder.join("f")), 0o600);
        assert_eq!(std::fs::read(folder.join("f")).unwrap(), b"x");
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_folder(&folder).unwrap();
        assert_eq!(mode(&folder), 0o700);
        // Only the file is left: no temporary one.
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1);
    }

    #[test]
    fn links_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let link = dir.path().join("cache");
        std::os::unix::fs::symlink(elsewhere.path(), &link).unwrap();
        assert!(create_folder(&link).is_err());
        let target = elsewhere.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("lock")).unwrap();
        assert!(open_kept_file(&dir.path().join("lock")).is_err());
        assert!(create_new_file(&dir.path().join("lock")).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }
}
