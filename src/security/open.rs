//! The one way project files are opened and looked at: relative to a handle
//! on the root folder that is held open for the server's life, never
//! following a symlink anywhere on the way, never blocking on a FIFO.
//!
//! The gate decides which path may be touched; this module makes sure the
//! path touched is that one, even when a folder on the way is swapped for a
//! symlink between the decision and the open.
//! - Linux: one `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS` from the root handle. Where `openat2` is missing
//!   (kernels before 5.6, seccomp filters that refuse it), an `openat` walk
//!   from the root handle, one plain name at a time, each with `O_NOFOLLOW`.
//! - Other Unix (macOS, the BSDs): the same `openat` walk.
//! - Elsewhere (Windows): the path is opened by name and its real location
//!   checked after the open (see docs/security.md for what remains).

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io;
use std::path::{Component, Path, PathBuf};

/// What the walker needs to know about an entry, read without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryStat {
    /// The inode number (0 where the platform has none).
    pub ino: u64,
    pub size: u64,
    pub is_dir: bool,
}

fn not_regular(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file; only regular text files can be read"),
    )
}

/// Refuses a file that is not regular (the open itself never blocked);
/// hands back its metadata, so callers need not ask again.
fn regular_only(file: File) -> io::Result<(File, Metadata)> {
    let metadata = file.metadata()?;
    if metadata.is_dir() {
        return Err(is_a_folder());
    }
    if !metadata.is_file() {
        return Err(not_regular("a special file (FIFO, socket or device)"));
    }
    Ok((file, metadata))
}

fn is_a_folder() -> io::Error {
    io::Error::new(
        io::ErrorKind::IsADirectory,
        "it is a directory, not a regular file; list_project_directory shows what a folder holds",
    )
}

/// The names of a root-relative path; `..`, roots and prefixes never get
/// this far (the gate and the walker only produce plain names), but are
/// refused here too.
fn plain_names(relative: &Path) -> io::Result<Vec<&OsStr>> {
    relative
        .components()
        .filter(|component| *component != Component::CurDir)
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => Err(not_plain()),
        })
        .collect()
}

/// [`plain_names`]' check alone, on the bytes: the search opens every file
/// it reads through here, and splitting each path into `Component`s showed
/// in its profile. Refuses what `plain_names` refuses: a leading `/` and
/// `..` (empty names and `.` change nothing for the kernel).
#[cfg(unix)]
fn ensure_plain(relative: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = relative.as_os_str().as_bytes();
    let plain =
        !bytes.starts_with(b"/") && !bytes.split(|&byte| byte == b'/').any(|name| name == b"..");
    if plain { Ok(()) } else { Err(not_plain()) }
}

fn not_plain() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "only plain names below the project root can be opened",
    )
}

#[cfg(unix)]
pub use unix::{LastFolder, OpenFolder, RootDir};

#[cfg(not(unix))]
pub use other::{LastFolder, OpenFolder, RootDir};

#[cfg(unix)]
mod unix {
    use super::*;
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use rustix::io::Errno;

    /// How intermediate folders are opened: only to walk through them.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const FOLDER_FLAGS: OFlags = OFlags::PATH.union(OFlags::DIRECTORY);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    const FOLDER_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY);

    /// Files are opened without blocking (a FIFO swapped in cannot hang the
    /// server; reads of regular files ignore the flag) and never become the
    /// controlling terminal.
    pub(super) const FILE_FLAGS: OFlags =
        OFlags::RDONLY.union(OFlags::NONBLOCK).union(OFlags::NOCTTY);

    /// The folder whose entries were looked at last, held open for one
    /// walk: the walker reports a folder's entries one after another, so
    /// confirming each costs one `fstatat` instead of a walk from the root.
    /// The handle was opened beneath the root without following symlinks,
    /// so a later swap of that folder's name cannot redirect it.
    #[derive(Debug, Default)]
    pub struct LastFolder {
        held: Option<(PathBuf, OwnedFd)>,
    }

    /// A folder opened beneath the root without following symlinks: the
    /// files in it open by name, with no walk from the root, and a later
    /// swap of the folder's name cannot redirect them.
    #[derive(Debug)]
    pub struct OpenFolder {
        fd: OwnedFd,
        ino: u64,
    }

    impl OpenFolder {
        /// The folder's inode number.
        pub fn ino(&self) -> u64 {
            self.ino
        }
    }

    /// The project root, held open: every open starts here, so renaming or
    /// replacing folders above or inside the project cannot redirect it.
    #[derive(Debug)]
    pub struct RootDir {
        fd: OwnedFd,
        path: PathBuf,
        /// False where `openat2` is refused (old kernel, seccomp): then the
        /// `openat` walk is used.
        openat2: bool,
    }

    impl RootDir {
        /// `root` must be the canonical root folder.
        pub fn open(root: &Path) -> io::Result<Self> {
            let fd = rustix::fs::open(
                root,
                FOLDER_FLAGS | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                Mode::empty(),
            )?;
            let openat2 = openat2_works(fd.as_fd());
            Ok(Self {
                fd,
                path: root.to_path_buf(),
                openat2,
            })
        }

        pub fn path(&self) -> &Path {
            &self.path
        }

        /// The same root, opened as on a kernel without `openat2`.
        #[cfg(test)]
        pub(super) fn without_openat2(mut self) -> Self {
            self.openat2 = false;
            self
        }

        /// True when opens go through `openat2` (Linux 5.6 and later).
        pub fn uses_openat2(&self) -> bool {
            self.openat2
        }

        /// Opens the regular file at `relative` (root-relative, plain names)
        /// for reading, with its metadata. A symlink anywhere on the way, a
        /// folder, a FIFO, socket or device is refused.
        pub fn open_file(&self, relative: &Path) -> io::Result<(File, Metadata)> {
            ensure_plain(relative)?;
            opened_file(self.open_checked(relative, FILE_FLAGS))
        }

        /// Looks at the entry at `relative` without following it, through
        /// folders that are not symlinks.
        pub fn entry_stat(&self, relative: &Path) -> io::Result<EntryStat> {
            self.stat_through(relative, None)
        }

        /// Opens the folder at `relative` (no symlink on the way or at the
        /// end), to open files in it by name.
        pub fn open_folder(&self, relative: &Path) -> io::Result<OpenFolder> {
            ensure_plain(relative)?;
            let fd = self.open_checked(relative, FOLDER_FLAGS)?;
            // `fstat`, not a lookup of "." in it: that needs the right to
            // search the folder, which a folder shown by name may lack.
            let stat = rustix::fs::fstat(&fd)?;
            Ok(OpenFolder {
                fd,
                ino: stat.st_ino,
            })
        }

        /// Opens the regular file `name` in `folder`, as [`RootDir::open_file`]
        /// opens one by its whole path.
        pub fn open_file_in(
            &self,
            folder: &OpenFolder,
            name: &OsStr,
        ) -> io::Result<(File, Metadata)> {
            if name.as_bytes().contains(&b'/') || name == ".." {
                return Err(not_plain());
            }
            opened_file(open_at(folder.fd.as_fd(), name, FILE_FLAGS))
        }

        /// [`RootDir::entry_stat`], reusing the folder handle in `last` when
        /// the entry is in the same folder as the one before.
        pub fn entry_stat_in(
            &self,
            relative: &Path,
            last: &mut LastFolder,
        ) -> io::Result<EntryStat> {
            self.stat_through(relative, Some(last))
        }

        /// The whole `stat` of the entry at `relative`, looked up in its
        /// folder opened beneath the root (reusing the handle in `last`).
        #[cfg(target_os = "linux")]
        pub fn full_stat_in(
            &self,
            relative: &Path,
            last: &mut LastFolder,
        ) -> io::Result<rustix::fs::Stat> {
            self.in_folder(relative, Some(last), |folder, name| {
                Ok(rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW)?)
            })
        }

        fn stat_through(
            &self,
            relative: &Path,
            last: Option<&mut LastFolder>,
        ) -> io::Result<EntryStat> {
            self.in_folder(relative, last, stat_at)
        }

        /// `look` at the entry `relative` by name in its folder, opened
        /// beneath the root without following symlinks (the handle in
        /// `last` when it is that folder's; kept there for the next).
        fn in_folder<T>(
            &self,
            relative: &Path,
            last: Option<&mut LastFolder>,
            look: impl FnOnce(BorrowedFd<'_>, &OsStr) -> io::Result<T>,
        ) -> io::Result<T> {
            ensure_plain(relative)?;
            let (Some(name), Some(folder)) = (relative.file_name(), relative.parent()) else {
                return look(self.fd.as_fd(), OsStr::new("."));
            };
            if folder.as_os_str().is_empty() {
                return look(self.fd.as_fd(), name);
            }
            if let Some((_, fd)) = last
                .as_ref()
                .and_then(|last| last.held.as_ref())
                .filter(|(held, _)| held == folder)
            {
                return look(fd.as_fd(), name);
            }
            let fd = self.open_checked(folder, FOLDER_FLAGS)?;
            let found = look(fd.as_fd(), name);
            if let Some(last) = last {
                last.held = Some((folder.to_path_buf(), fd));
            }
            found
        }

        /// Opens `relative`, whose names [`ensure_plain`] accepted (empty
        /// for the root itself).
        fn open_checked(&self, relative: &Path, flags: OFlags) -> io::Result<OwnedFd> {
            #[cfg(target_os = "linux")]
            if self.openat2 {
                let path = match relative.as_os_str() {
                    empty if empty.is_empty() => OsStr::new("."),
                    path => path,
                };
                return linux::openat2_beneath(self.fd.as_fd(), path, flags);
            }
            open_step_by_step(self.fd.as_fd(), &plain_names(relative)?, flags)
        }
    }

    /// A file just opened, if it is a regular one.
    fn opened_file(opened: io::Result<OwnedFd>) -> io::Result<(File, Metadata)> {
        match opened {
            Ok(fd) => regular_only(File::from(fd)),
            // Opening a socket (or a device without a driver) says ENXIO.
            Err(error) if error.raw_os_error() == Some(Errno::NXIO.raw_os_error()) => {
                Err(not_regular("a special file (FIFO, socket or device)"))
            }
            Err(error) => Err(error),
        }
    }

    #[cfg(target_os = "linux")]
    fn openat2_works(root: BorrowedFd<'_>) -> bool {
        linux::openat2_beneath(root, OsStr::new("."), FOLDER_FLAGS).is_ok()
    }

    #[cfg(not(target_os = "linux"))]
    fn openat2_works(_root: BorrowedFd<'_>) -> bool {
        false
    }

    /// One `openat` per name, each refusing a symlink: a folder swapped for
    /// a symlink fails the step that meets it.
    pub(super) fn open_step_by_step(
        root: BorrowedFd<'_>,
        names: &[&OsStr],
        flags: OFlags,
    ) -> io::Result<OwnedFd> {
        let Some((last, folders)) = names.split_last() else {
            return open_at(root, OsStr::new("."), flags);
        };
        let mut current: Option<OwnedFd> = None;
        for name in folders {
            let parent = current.as_ref().map_or(root, |fd| fd.as_fd());
            current = Some(open_at(parent, name, FOLDER_FLAGS)?);
        }
        let parent = current.as_ref().map_or(root, |fd| fd.as_fd());
        open_at(parent, last, flags)
    }

    /// Opens `name` in `dir`, never following a symlink there. Paths are
    /// handed to the kernel from the stack when short (rustix's `Arg`): the
    /// search opens every file it reads, from several threads, and heap
    /// allocations there contend for the allocator's lock.
    fn open_at(dir: BorrowedFd<'_>, name: &OsStr, flags: OFlags) -> io::Result<OwnedFd> {
        loop {
            match rustix::fs::openat(
                dir,
                name,
                flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => return Ok(fd),
                Err(Errno::INTR) => continue,
                Err(error) => return Err(symlink_refused(error.into())),
            }
        }
    }

    fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<EntryStat> {
        let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(EntryStat {
            ino: stat.st_ino,
            size: u64::try_from(stat.st_size).unwrap_or(0),
            is_dir: FileType::from_raw_mode(stat.st_mode) == FileType::Directory,
        })
    }

    /// `ELOOP` (a symlink met with `O_NOFOLLOW` or `RESOLVE_NO_SYMLINKS`)
    /// and `EXDEV` (a way out of the root) say what happened in words.
    pub(super) fn symlink_refused(error: io::Error) -> io::Error {
        match error.raw_os_error() {
            Some(code)
                if code == Errno::LOOP.raw_os_error() || code == Errno::XDEV.raw_os_error() =>
            {
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "a symlink on the way is not followed here; only files inside the project root can be read",
                )
            }
            _ => error,
        }
    }

    #[cfg(target_os = "linux")]
    pub(super) mod linux {
        use super::*;
        use rustix::fs::ResolveFlags;

        /// Concurrent renames can make the kernel ask for a retry.
        const RETRIES: usize = 8;

        pub fn openat2_beneath(
            root: BorrowedFd<'_>,
            relative: &OsStr,
            flags: OFlags,
        ) -> io::Result<OwnedFd> {
            let resolve =
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            let mut last_error = Errno::AGAIN;
            for _ in 0..RETRIES {
                match rustix::fs::openat2(
                    root,
                    relative,
                    flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                    resolve,
                ) {
                    Ok(fd) => return Ok(fd),
                    Err(error @ (Errno::AGAIN | Errno::INTR)) => last_error = error,
                    Err(error) => return Err(symlink_refused(error.into())),
                }
            }
            Err(last_error.into())
        }
    }
}

#[cfg(not(unix))]
mod other {
    use super::*;

    /// Nothing to hold without `openat` (a field, so that it is made as
    /// the Unix one is, with `default()`).
    #[derive(Debug, Default)]
    pub struct LastFolder(());

    /// Without `openat`, a folder is its root-relative path, checked when
    /// it was opened and again for each file opened in it.
    /// (No inode numbers here; the walker compares none.)
    #[derive(Debug)]
    pub struct OpenFolder {
        relative: PathBuf,
    }

    /// The project root. Without `openat`, paths are opened by name and
    /// checked after the open: the real location must still be inside the
    /// root (a swap between the open and the check is the remaining gap).
    #[derive(Debug)]
    pub struct RootDir {
        path: PathBuf,
    }

    impl RootDir {
        pub fn open(root: &Path) -> io::Result<Self> {
            if !root.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "the project root is not a folder",
                ));
            }
            Ok(Self {
                path: root.to_path_buf(),
            })
        }

        pub fn path(&self) -> &Path {
            &self.path
        }

        pub fn uses_openat2(&self) -> bool {
            false
        }

        pub fn open_file(&self, relative: &Path) -> io::Result<(File, Metadata)> {
            let path = self.located(relative)?;
            let file_type = std::fs::symlink_metadata(&path)?.file_type();
            if file_type.is_symlink() {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "a symlink on the way is not followed here; only files inside the project root can be read",
                ));
            }
            // Windows refuses to open a folder as a file with "Access
            // denied", which would tell the caller the wrong thing.
            if file_type.is_dir() {
                return Err(is_a_folder());
            }
            let opened = regular_only(File::open(&path)?)?;
            self.still_inside(&path)?;
            Ok(opened)
        }

        pub fn entry_stat(&self, relative: &Path) -> io::Result<EntryStat> {
            let path = self.located(relative)?;
            // The root's own parent lies outside: the root needs no check.
            if path != self.path
                && let Some(parent) = path.parent()
            {
                self.still_inside(parent)?;
            }
            let metadata = std::fs::symlink_metadata(&path)?;
            Ok(EntryStat {
                ino: 0,
                size: metadata.len(),
                is_dir: metadata.is_dir(),
            })
        }

        pub fn entry_stat_in(
            &self,
            relative: &Path,
            _last: &mut LastFolder,
        ) -> io::Result<EntryStat> {
            self.entry_stat(relative)
        }

        pub fn open_folder(&self, relative: &Path) -> io::Result<OpenFolder> {
            let stat = self.entry_stat(relative)?;
            if !stat.is_dir {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "it is not a folder",
                ));
            }
            Ok(OpenFolder {
                relative: relative.to_path_buf(),
            })
        }

        pub fn open_file_in(
            &self,
            folder: &OpenFolder,
            name: &OsStr,
        ) -> io::Result<(File, Metadata)> {
            if Path::new(name).components().count() != 1 || name == ".." {
                return Err(not_plain());
            }
            self.open_file(&folder.relative.join(name))
        }

        fn located(&self, relative: &Path) -> io::Result<PathBuf> {
            Ok(plain_names(relative)?
                .iter()
                .fold(self.path.clone(), |mut path, name| {
                    path.push(name);
                    path
                }))
        }

        fn still_inside(&self, path: &Path) -> io::Result<()> {
            if crate::security::canonicalize(path)?.starts_with(&self.path) {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "the path leads outside the project root",
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::fs;

    fn root_with(files: &[(&str, &str)]) -> (tempfile::TempDir, RootDir) {
        let (dir, root) = crate::security::temp_root(files);
        let opener = RootDir::open(&root).unwrap();
        (dir, opener)
    }

    /// A folder opened beneath the root opens the files in it by name, and
    /// refuses there what opening by the whole path refuses.
    #[cfg(unix)]
    #[test]
    fn files_open_by_name_in_an_open_folder() {
        let (dir, root) = root_with(&[("a/.gitignore", "x\n"), ("a/sub/f.txt", "f")]);
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s").unwrap();
        let a = dir.path().join("a");
        std::os::unix::fs::symlink(outside.path().join("secret"), a.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let folder = root.open_folder(Path::new("a")).unwrap();
        assert_eq!(
            folder.ino(),
            fs::metadata(&a)
                .map(|m| {
                    use std::os::unix::fs::MetadataExt;
                    m.ino()
                })
                .unwrap()
        );
        let (_, metadata) = root
            .open_file_in(&folder, OsStr::new(".gitignore"))
            .unwrap();
        assert_eq!(metadata.len(), 2);
        for refused in ["link", "sub", "missing", "sub/f.txt", ".."] {
            assert!(
                root.open_file_in(&folder, OsStr::new(refused)).is_err(),
                "{refused}"
            );
        }
        assert!(
            root.open_folder(Path::new("out")).is_err(),
            "a symlinked folder"
        );
        assert!(
            root.open_folder(Path::new("a/sub/f.txt")).is_err(),
            "a file"
        );
        assert!(root.open_folder(Path::new("../a")).is_err());
    }

    #[test]
    fn opens_plain_files_and_refuses_folders_and_parent_steps() {
        let (_d, root) = root_with(&[("a/b.txt", "inside")]);
        let open = |path: &str| root.open_file(Path::new(path));
        let stat = |path: &str| root.entry_stat(Path::new(path));
        let text = io::read_to_string(open("a/b.txt").unwrap().0).unwrap();
        assert_eq!(text, "inside");
        let error = open("a").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::IsADirectory, "{error}");
        for parent_step in ["a/../a/b.txt", "../etc/passwd", "..", "a/..", "/etc/passwd"] {
            let refused = open(parent_step).unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::InvalidInput, "{parent_step}");
        }
        for same_file in ["./a/b.txt", "a//b.txt", "a/./b.txt"] {
            assert!(open(same_file).is_ok(), "{same_file}");
        }
        assert_eq!(open("a/..b").unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(
            open("a/missing").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let file = stat("a/b.txt").unwrap();
        assert_eq!((file.size, file.is_dir), (6, false));
        assert!(stat("a").unwrap().is_dir);
        assert!(stat(".").unwrap().is_dir);
        let mut last = LastFolder::default();
        for path in ["a/b.txt", "a/b.txt", "a", "a/b.txt"] {
            let held = root.entry_stat_in(Path::new(path), &mut last).unwrap();
            assert_eq!(held, stat(path).unwrap(), "{path}");
        }
        assert!(
            root.entry_stat_in(Path::new("a/missing"), &mut last)
                .is_err()
        );
    }

    /// Paths are handed to the kernel from a stack buffer when short and
    /// from the heap when long; both ways, with and without `openat2`.
    #[cfg(unix)]
    #[test]
    fn long_paths_and_nul_bytes() {
        let long = format!("{}/f.txt", vec!["d".repeat(120); 5].join("/"));
        assert!(long.len() > 512);
        let (_d, root) = root_with(&[(long.as_str(), "deep"), ("short.txt", "near")]);
        let roots = [RootDir::open(root.path()).unwrap(), root.without_openat2()];
        for root in &roots {
            for (path, text) in [(long.as_str(), "deep"), ("short.txt", "near")] {
                let file = root.open_file(Path::new(path)).unwrap().0;
                assert_eq!(io::read_to_string(file).unwrap(), text);
                assert_eq!(root.entry_stat(Path::new(path)).unwrap().size, 4);
            }
            let error = root.open_file(Path::new("short\0.txt")).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");
        }
    }

    /// Both ways of opening: `openat2` where the kernel has it, and the
    /// `openat` walk used where it is refused.
    #[cfg(unix)]
    #[test]
    fn symlinks_are_never_followed_on_the_way_or_at_the_end() {
        use std::os::unix::fs::symlink;
        for fallback in [false, true] {
            let (_d, root) = root_with(&[("a/b.txt", "inside"), ("a/c/d.txt", "deeper")]);
            let root = if fallback {
                root.without_openat2()
            } else {
                root
            };
            let outside = tempfile::tempdir().unwrap();
            fs::write(outside.path().join("b.txt"), "MARKER").unwrap();
            symlink(outside.path(), root.path().join("out")).unwrap();
            symlink(root.path().join("a"), root.path().join("inside-link")).unwrap();
            symlink(outside.path().join("b.txt"), root.path().join("file-link")).unwrap();
            symlink(outside.path(), root.path().join("a/c/out")).unwrap();
            for path in [
                "out/b.txt",
                "inside-link/b.txt",
                "file-link",
                "a/c/out/b.txt",
            ] {
                let error = root.open_file(Path::new(path)).unwrap_err();
                assert!(
                    error.to_string().contains("symlink")
                        || error.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()),
                    "{path} (fallback {fallback}): {error}"
                );
            }
            let (file, _) = root.open_file(Path::new("a/c/d.txt")).unwrap();
            assert_eq!(io::read_to_string(file).unwrap(), "deeper");
            assert!(root.entry_stat(Path::new("out/b.txt")).is_err());
            assert!(root.entry_stat(Path::new("a/c/out/b.txt")).is_err());
            // The link itself can be looked at, not through.
            assert!(!root.entry_stat(Path::new("out")).unwrap().is_dir);
            let mut last = LastFolder::default();
            assert!(
                root.entry_stat_in(Path::new("a/c/out/b.txt"), &mut last)
                    .is_err()
            );
            assert!(
                root.entry_stat_in(Path::new("a/c/d.txt"), &mut last)
                    .is_ok()
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_openat_walk_refuses_what_openat2_refuses() {
        use std::os::fd::AsFd;
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(root.join("a")).unwrap();
        fs::write(root.join("a/b.txt"), "inside").unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("b.txt"), "MARKER").unwrap();
        symlink(outside.path(), root.join("out")).unwrap();
        let handle = File::open(&root).unwrap();
        let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK;
        let steps = |names: &[&str]| {
            let names: Vec<&OsStr> = names.iter().map(OsStr::new).collect();
            unix::open_step_by_step(handle.as_fd(), &names, flags)
        };
        let fd = steps(&["a", "b.txt"]).unwrap();
        assert_eq!(io::read_to_string(File::from(fd)).unwrap(), "inside");
        // A folder step that meets a symlink fails (ENOTDIR or ELOOP).
        assert!(steps(&["out", "b.txt"]).is_err());
        symlink(outside.path().join("b.txt"), root.join("a/link")).unwrap();
        let error = steps(&["a", "link"]).unwrap_err();
        assert!(error.to_string().contains("symlink"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let (_d, root) = root_with(&[]);
        crate::test_support::make_fifo(&root.path().join("pipe"));
        let error = root.open_file(Path::new("pipe")).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
}
