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

/// Opens (creating it if needed) a file that is kept empty, such as the
/// lock; never through a link, never blocking on a FIFO, and then checked
/// as [`open_checked`] checks.
pub fn open_kept_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(windows)]
    std::os::windows::fs::OpenOptionsExt::custom_flags(
        &mut options,
        windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT,
    );
    let file = options.open(path)?;
    check_file(&file, 0)?;
    Ok(file)
}

/// Opens an existing cache file for reading, never through a link and
/// without blocking (a FIFO or device planted in its place opens at once
/// and is then refused), and checks the open handle before anything is
/// read or mapped: a regular file of the current user's that no one else
/// may read or write (mode 0600), of at most `max_bytes`.
pub fn open_checked(path: &Path, max_bytes: u64) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK,
    );
    #[cfg(windows)]
    std::os::windows::fs::OpenOptionsExt::custom_flags(
        &mut options,
        windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT,
    );
    let file = options.open(path)?;
    check_file(&file, max_bytes)?;
    Ok(file)
}

/// Why a cache file is refused (the caller's error names the file).
fn refused(why: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("not a cache file this program wrote: {why}"),
    )
}

/// What every cache file must be, checked on its open handle (`fstat`).
fn check_file(file: &File, max_bytes: u64) -> io::Result<()> {
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(refused("not a regular file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let user = unsafe { libc::geteuid() };
        if metadata.uid() != user {
            return Err(refused(format_args!("owned by uid {}", metadata.uid())));
        }
        if metadata.mode() & 0o077 != 0 {
            return Err(refused(format_args!(
                "mode {:o}, not 600",
                metadata.mode() & 0o777
            )));
        }
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::MetadataExt;
        let reparse = windows_sys::Win32::Storage::FileSystem::FILE_ATTRIBUTE_REPARSE_POINT;
        if metadata.file_attributes() & reparse != 0 {
            return Err(refused("a link (reparse point)"));
        }
    }
    if metadata.len() > max_bytes {
        return Err(refused(format_args!(
            "{} bytes, more than the {max_bytes} it can hold",
            metadata.len()
        )));
    }
    Ok(())
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
    write_atomically_with(dir, file_name, |file| file.write_all(bytes))
}

/// Has `write` fill a new temporary file, then makes it `dir/file_name`,
/// synced; on any failure the temporary file is removed.
pub fn write_atomically_with<E: From<io::Error>>(
    dir: &Path,
    file_name: &str,
    write: impl FnOnce(&mut File) -> Result<(), E>,
) -> Result<(), E> {
    let temporary = temporary_path(dir, file_name);
    let written = create_new_file(&temporary)
        .map_err(E::from)
        .and_then(|mut file| {
            write(&mut file)?;
            file.sync_all()?;
            drop(file);
            Ok(replace(&temporary, &dir.join(file_name))?)
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
    fn only_the_users_private_regular_files_of_a_possible_size_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        write_atomically(dir.path(), "good", b"12345").unwrap();
        let good = dir.path().join("good");
        assert!(open_checked(&good, 5).is_ok());
        let too_large = open_checked(&good, 4).unwrap_err();
        assert!(
            too_large.to_string().contains("more than the 4"),
            "{too_large}"
        );
        let fifo = dir.path().join("fifo");
        crate::test_support::make_fifo(&fifo);
        // Opened without blocking, then refused.
        let refused = open_checked(&fifo, u64::MAX).unwrap_err();
        assert!(
            refused.to_string().contains("not a regular file"),
            "{refused}"
        );
        assert!(open_kept_file(&fifo).is_err());
        std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o666)).unwrap();
        let shared = open_checked(&good, 5).unwrap_err();
        assert!(shared.to_string().contains("mode 666"), "{shared}");
        std::fs::create_dir(dir.path().join("folder")).unwrap();
        assert!(open_checked(&dir.path().join("folder"), u64::MAX).is_err());
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
        assert!(open_checked(&dir.path().join("lock"), u64::MAX).is_err());
        assert!(create_new_file(&dir.path().join("lock")).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }
}
