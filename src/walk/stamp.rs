//! What identifies one version of a file, shared by the tree model and the
//! walker's ignore-rule cache.

use std::fs::{File, Metadata};
use std::num::NonZeroU32;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::EntryKind;
use crate::security::{LastFolder, PathGate};

/// What identifies one version of a file: a rewrite changes at least the
/// change time (to the nanosecond where the file system keeps it).
///
/// One is kept for every entry of the file list, so it is packed: times
/// as seconds and nanoseconds (the range and precision of `struct stat`),
/// the link count saturated (only "one" or "several" matters), and the
/// link count non-zero so that `Option<Stamp>` costs nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    len: u64,
    modified: Time,
    changed: Time,
    inode: u64,
    device: u64,
    mode: u32,
    /// Names (hard links) that lead to the file.
    links: NonZeroU32,
}

/// A time as seconds since the Unix epoch and nanoseconds within that
/// second, in 12 bytes (4-byte aligned, so that two of them and the other
/// fields pack without padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Time {
    seconds: [u32; 2],
    nanos: u32,
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;

impl Time {
    /// From seconds and nanoseconds as `stat` gives them (the nanoseconds
    /// brought into range whatever the platform handed over).
    #[cfg(unix)]
    fn new(seconds: i64, nanos: i64) -> Self {
        Self::from_nanos(i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos))
    }

    /// From nanoseconds since the epoch, clamped to what seconds in an
    /// `i64` can hold.
    fn from_nanos(nanos: i128) -> Self {
        let seconds = nanos.div_euclid(NANOS_PER_SECOND);
        let seconds =
            i64::try_from(seconds).unwrap_or(if seconds < 0 { i64::MIN } else { i64::MAX });
        let bits = seconds as u64;
        Self {
            seconds: [bits as u32, (bits >> 32) as u32],
            nanos: nanos.rem_euclid(NANOS_PER_SECOND) as u32,
        }
    }

    fn seconds(self) -> i64 {
        (u64::from(self.seconds[0]) | u64::from(self.seconds[1]) << 32) as i64
    }

    fn as_nanos(self) -> i128 {
        i128::from(self.seconds()) * NANOS_PER_SECOND + i128::from(self.nanos)
    }
}

/// A link count as the stamp keeps it: at least one, at most `u32::MAX`.
fn links(count: u64) -> NonZeroU32 {
    NonZeroU32::new(u32::try_from(count).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN)
}

impl Stamp {
    #[cfg(unix)]
    pub fn of(metadata: &Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            len: metadata.len(),
            modified: Time::new(metadata.mtime(), metadata.mtime_nsec()),
            changed: Time::new(metadata.ctime(), metadata.ctime_nsec()),
            inode: metadata.ino(),
            device: metadata.dev(),
            mode: metadata.mode(),
            links: links(metadata.nlink()),
        }
    }

    /// From the metadata alone. Windows keeps no change time there: a
    /// stamp that must show every rewrite comes from [`Stamp::of_open`] or
    /// [`Stamp::lstat`]; this one serves only to tell files apart by size and
    /// times.
    #[cfg(not(unix))]
    pub fn of(metadata: &Metadata) -> Self {
        let nanos = |time: std::io::Result<SystemTime>| {
            time.ok()
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128)
        };
        Self {
            len: metadata.len(),
            modified: Time::from_nanos(nanos(metadata.modified())),
            changed: Time::from_nanos(nanos(metadata.created())),
            inode: 0,
            device: 0,
            mode: u32::from(metadata.permissions().readonly()),
            links: NonZeroU32::MIN,
        }
    }

    /// Bytes of [`Stamp::to_bytes`].
    pub const BYTES: usize = 68;

    /// The stamp as the on-disk index keeps it (little-endian fields).
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut out = [0u8; Self::BYTES];
        out[0..8].copy_from_slice(&self.len.to_le_bytes());
        out[8..24].copy_from_slice(&self.modified.as_nanos().to_le_bytes());
        out[24..40].copy_from_slice(&self.changed.as_nanos().to_le_bytes());
        out[40..48].copy_from_slice(&self.inode.to_le_bytes());
        out[48..56].copy_from_slice(&self.device.to_le_bytes());
        out[56..60].copy_from_slice(&self.mode.to_le_bytes());
        out[60..68].copy_from_slice(&u64::from(self.links.get()).to_le_bytes());
        out
    }

    /// The stamp [`Stamp::to_bytes`] wrote. Any bytes make some stamp; a
    /// damaged one makes its file look changed.
    pub fn from_bytes(bytes: &[u8; Self::BYTES]) -> Self {
        let field = |range: std::ops::Range<usize>| &bytes[range];
        let u64_at = |start: usize| {
            u64::from_le_bytes(field(start..start + 8).try_into().unwrap_or_default())
        };
        let i128_at = |start: usize| {
            i128::from_le_bytes(field(start..start + 16).try_into().unwrap_or_default())
        };
        Self {
            len: u64_at(0),
            modified: Time::from_nanos(i128_at(8)),
            changed: Time::from_nanos(i128_at(24)),
            inode: u64_at(40),
            device: u64_at(48),
            mode: u32::from_le_bytes(field(56..60).try_into().unwrap_or_default()),
            links: links(u64_at(60)),
        }
    }

    /// The stamp of a file opened with `metadata`.
    #[cfg(unix)]
    pub fn of_open(_file: &File, metadata: &Metadata) -> Self {
        Self::of(metadata)
    }

    /// The stamp of a file opened with `metadata`: on Windows read from the
    /// handle, with NTFS's change time (see [`windows::stamp`]).
    #[cfg(windows)]
    pub fn of_open(file: &File, metadata: &Metadata) -> Self {
        windows::stamp(file).unwrap_or_else(|_| Self::of(metadata))
    }

    /// What is at `path` (a final symlink not followed) and its stamp.
    #[cfg(unix)]
    pub fn lstat(path: &Path) -> std::io::Result<(Metadata, Self)> {
        let metadata = std::fs::symlink_metadata(path)?;
        let stamp = Self::of(&metadata);
        Ok((metadata, stamp))
    }

    /// What is at `path` (a final symlink or junction not followed) and its
    /// stamp. Windows puts the change time only behind a handle: the entry
    /// is opened for its attributes (which no sharing mode refuses), once,
    /// as `symlink_metadata` itself does.
    #[cfg(windows)]
    pub fn lstat(path: &Path) -> std::io::Result<(Metadata, Self)> {
        let file = windows::open_attributes(path)?;
        let metadata = file.metadata()?;
        let stamp = windows::stamp(&file)?;
        Ok((metadata, stamp))
    }

    /// The stamp of the `stat` of an entry, as [`Stamp::of`] makes it from
    /// the same entry's metadata.
    #[cfg(target_os = "linux")]
    fn of_stat(stat: &rustix::fs::Stat) -> Self {
        Self {
            len: stat.st_size as u64,
            modified: Time::new(stat.st_mtime, stat.st_mtime_nsec as i64),
            changed: Time::new(stat.st_ctime, stat.st_ctime_nsec as i64),
            inode: stat.st_ino,
            device: stat.st_dev,
            mode: stat.st_mode,
            links: links(stat.st_nlink),
        }
    }

    pub fn size(&self) -> u64 {
        self.len
    }

    /// The inode, where the platform has one: the searcher opens a file
    /// only while it is still this one.
    pub fn inode(&self) -> Option<u64> {
        cfg!(unix).then_some(self.inode)
    }

    /// The file's identity (device, inode) when more than one name leads to
    /// it: a write through one name changes what all of them hold, and the
    /// change watcher reports only the name written through.
    pub fn linked_identity(&self) -> Option<(u64, u64)> {
        (cfg!(unix) && self.links.get() > 1).then_some((self.device, self.inode))
    }

    /// How many names lead to the file (`u32::MAX` for that many or more).
    pub fn links(&self) -> u64 {
        u64::from(self.links.get())
    }

    /// Whether a write right after `seen_at` could leave this stamp
    /// unchanged: the file changed so recently that the file system's clock
    /// tick may not have moved on (git's "racily clean" entries), or it
    /// lies in the future.
    pub fn is_racy(&self, seen_at: SystemTime) -> bool {
        self.changed_within(self.doubt(), seen_at)
    }

    /// Whether the file changed within `window` before `now`, or its stamp
    /// lies in the future.
    pub fn changed_within(&self, window: Duration, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return true;
        };
        let latest = self.modified.as_nanos().max(self.changed.as_nanos());
        latest + window.as_nanos() as i128 >= now.as_nanos() as i128
    }

    /// Whether this stamp, first seen at `first_seen` and seen again the
    /// same at `now`, shows the next change: when it is not racy at `now`,
    /// or when a tick's doubt has passed since it was first seen. The
    /// second covers stamps in the future (an archive's times, a skewed
    /// clock, a network mount), which stay racy until the clock catches
    /// up: the change time was set by the file system's clock before
    /// `first_seen`, so a write after `now` lands a tick or more past it
    /// and changes the stamp. What is read at `now` is then trusted.
    pub fn is_trusted(&self, first_seen: SystemTime, now: SystemTime) -> bool {
        !self.is_racy(now)
            || now
                .duration_since(first_seen)
                .is_ok_and(|waited| waited > self.doubt())
    }

    /// How long after a change its stamp may still be reproduced by
    /// another: stamps in whole seconds get two seconds, finer ones a
    /// tenth.
    fn doubt(&self) -> Duration {
        let whole_seconds = self.modified.nanos == 0 && self.changed.nanos == 0;
        if whole_seconds {
            Duration::from_secs(2)
        } else {
            Duration::from_millis(100)
        }
    }
}

impl Stamp {
    /// What is at `path` now (a final symlink not followed): its kind and
    /// stamp. On Linux the `stat` of its name in its folder, opened beneath
    /// the root (never through a folder swapped for a symlink) and held in
    /// `last` for the entries after it, as a sweep meets a folder's entries
    /// one after another; on Windows from one handle opened for attributes
    /// (the kind from them); elsewhere the `stat` by path. `None` when
    /// nothing is there, or (Linux) the root handle does not reach it.
    pub fn look(gate: &PathGate, path: &Path, last: &mut LastFolder) -> Option<(EntryKind, Stamp)> {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::FileType;
            let stat = gate.full_stat_in(path, last).ok()?;
            let kind = match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile => EntryKind::File,
                FileType::Directory => EntryKind::Dir,
                FileType::Symlink => EntryKind::Symlink,
                _ => EntryKind::Other,
            };
            Some((kind, Stamp::of_stat(&stat)))
        }
        #[cfg(windows)]
        {
            let _ = (gate, last);
            let file = windows::open_attributes(path).ok()?;
            let stamp = windows::stamp(&file).ok()?;
            Some((windows::kind(&file, stamp.mode).ok()?, stamp))
        }
        #[cfg(not(any(target_os = "linux", windows)))]
        {
            let _ = (gate, last);
            let (metadata, stamp) = Stamp::lstat(path).ok()?;
            Some((EntryKind::of(metadata.file_type()), stamp))
        }
    }

    /// The stamp of the entry at `path` as a walk met it, confirmed through
    /// the root handle: on Linux the `stat` of its name in its folder,
    /// opened beneath the root and held in `last` for the entries after it
    /// (where a `stat` by path looks every folder on the way up again, most
    /// of what a stat of a deep file costs); elsewhere the `stat` by path,
    /// then a look through the root handle that must find the same file.
    /// `None` when the root handle does not reach it (gone, or its folder
    /// swapped for a link out of the root since the walk listed it).
    pub fn beneath(gate: &PathGate, path: &Path, last: &mut LastFolder) -> Option<Stamp> {
        #[cfg(target_os = "linux")]
        {
            Stamp::look(gate, path, last).map(|(_, stamp)| stamp)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let stamp = Stamp::lstat(path).ok().map(|(_, stamp)| stamp)?;
            let confirmed = gate.entry_stat_in(path, last).ok()?;
            #[cfg(unix)]
            if stamp.inode() != Some(confirmed.ino) {
                return None;
            }
            let _ = confirmed;
            Some(stamp)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::FileTimes;

    #[test]
    fn a_stamp_beneath_the_root_is_the_stat_by_path_of_what_is_there() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dunce::canonicalize(dir.path()).expect("root");
        let file = root.join("a.txt");
        std::fs::write(&file, "x").expect("write");
        std::fs::hard_link(&file, root.join("b.txt")).expect("link");
        std::fs::create_dir(root.join("sub")).expect("folder");
        std::fs::write(root.join("sub/c.txt"), "y").expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink("a.txt", root.join("link")).expect("symlink");
        let gate = PathGate::new(root.clone(), &[]).expect("gate");
        let mut last = LastFolder::default();
        for name in ["a.txt", "b.txt", "sub", "sub/c.txt", "link", "a.txt"] {
            let path = root.join(name);
            let by_path = Stamp::lstat(&path).ok().map(|(_, stamp)| stamp);
            assert_eq!(Stamp::beneath(&gate, &path, &mut last), by_path, "{name}");
        }
        assert_eq!(Stamp::beneath(&gate, &root.join("gone"), &mut last), None);
        assert_eq!(
            Stamp::beneath(&gate, &file, &mut last).map(|s| s.links()),
            Some(2)
        );
        // A folder swapped for a link out of the root is not stamped through.
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().expect("outside");
            std::fs::write(outside.path().join("c.txt"), "z").expect("write");
            std::fs::rename(root.join("sub"), root.join("parked")).expect("park");
            std::os::unix::fs::symlink(outside.path(), root.join("sub")).expect("link");
            let mut fresh = LastFolder::default();
            assert_eq!(
                Stamp::beneath(&gate, &root.join("sub/c.txt"), &mut fresh),
                None
            );
        }
    }

    #[test]
    fn a_stamp_is_compact_and_survives_its_bytes() {
        // The file list keeps one per entry.
        assert_eq!(size_of::<Option<Stamp>>(), 56);
        let file = tempfile::NamedTempFile::new().expect("temp file");
        for time in [
            SystemTime::UNIX_EPOCH - Duration::new(86_400, 123),
            SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 999_999_999),
        ] {
            file.as_file()
                .set_times(FileTimes::new().set_modified(time))
                .expect("set mtime");
            let stamp = Stamp::of(&file.as_file().metadata().expect("metadata"));
            assert_eq!(Stamp::from_bytes(&stamp.to_bytes()), stamp);
            assert_eq!(stamp.links(), 1);
        }
        // Any bytes make some stamp, times out of range included.
        let wild = Stamp::from_bytes(&[0xff; Stamp::BYTES]);
        assert!(wild.links() >= 1);
        assert!(Stamp::from_bytes(&[0; Stamp::BYTES]).links() >= 1);
    }

    #[test]
    fn a_future_stamp_is_trusted_once_seen_again_a_tick_later() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let future = SystemTime::now() + Duration::from_secs(86_400);
        file.as_file()
            .set_times(FileTimes::new().set_modified(future))
            .expect("set mtime");
        let stamp = Stamp::of(&file.as_file().metadata().expect("metadata"));
        let now = SystemTime::now();
        assert!(stamp.is_racy(now));
        assert!(!stamp.is_trusted(now, now));
        assert!(!stamp.is_trusted(now, now + Duration::from_millis(50)));
        assert!(stamp.is_trusted(now, now + Duration::from_secs(3)));
        // A stamp from long ago needs no second look.
        let old = now - Duration::from_secs(86_400);
        file.as_file()
            .set_times(FileTimes::new().set_modified(old))
            .expect("set mtime");
        let settled = Stamp::of(&file.as_file().metadata().expect("metadata"));
        assert!(settled.is_trusted(now + Duration::from_secs(1), now + Duration::from_secs(1)));
    }
}

/// Windows: what NTFS keeps for a version of a file. A rewrite that keeps
/// the size and puts the last write time back still moves the change time
/// (`FILE_BASIC_INFO.ChangeTime`, which no `SetFileTime` call sets), as
/// `ctime` does on Unix; the file index and volume serial number stand for
/// the inode and device.
#[cfg(windows)]
mod windows {
    use super::{EntryKind, Stamp, Time};
    use std::fs::File;
    use std::io;
    use std::os::windows::fs::OpenOptionsExt;
    use std::os::windows::io::AsRawHandle;
    use std::path::Path;
    use windows_sys::Win32::Storage::FileSystem::{
        BY_HANDLE_FILE_INFORMATION, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT,
        FILE_BASIC_INFO, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
        FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, FileBasicInfo,
        GetFileInformationByHandle, GetFileInformationByHandleEx,
    };

    /// 100-nanosecond ticks from 1601-01-01 (FILETIME's epoch) to 1970-01-01.
    const TICKS_TO_UNIX_EPOCH: i128 = 116_444_736_000_000_000;

    /// `path` opened for its attributes only: folders too (backup
    /// semantics), a final symlink or junction itself (not its target).
    pub fn open_attributes(path: &Path) -> io::Result<File> {
        std::fs::OpenOptions::new()
            .access_mode(FILE_READ_ATTRIBUTES)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)
    }

    /// The kind of the entry open as `file`, whose attributes are
    /// `attributes`, as the standard library tells it: only a reparse point
    /// (a symlink or junction, or another kind that is not a link) needs
    /// another query for it.
    pub fn kind(file: &File, attributes: u32) -> io::Result<EntryKind> {
        if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            return Ok(EntryKind::of(file.metadata()?.file_type()));
        }
        Ok(if attributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
            EntryKind::Dir
        } else {
            EntryKind::File
        })
    }

    pub fn stamp(file: &File) -> io::Result<Stamp> {
        let handle = file.as_raw_handle();
        // SAFETY: both structures are plain data the calls fill in; the
        // handle stays open for the duration of the calls.
        let (info, basic) = unsafe {
            let mut info: BY_HANDLE_FILE_INFORMATION = std::mem::zeroed();
            if GetFileInformationByHandle(handle, &mut info) == 0 {
                return Err(io::Error::last_os_error());
            }
            let mut basic: FILE_BASIC_INFO = std::mem::zeroed();
            if GetFileInformationByHandleEx(
                handle,
                FileBasicInfo,
                (&raw mut basic).cast(),
                size_of::<FILE_BASIC_INFO>() as u32,
            ) == 0
            {
                return Err(io::Error::last_os_error());
            }
            (info, basic)
        };
        let nanos = |ticks: i64| Time::from_nanos((i128::from(ticks) - TICKS_TO_UNIX_EPOCH) * 100);
        Ok(Stamp {
            len: u64::from(info.nFileSizeHigh) << 32 | u64::from(info.nFileSizeLow),
            modified: nanos(basic.LastWriteTime),
            changed: nanos(basic.ChangeTime),
            inode: u64::from(info.nFileIndexHigh) << 32 | u64::from(info.nFileIndexLow),
            device: u64::from(info.dwVolumeSerialNumber),
            mode: info.dwFileAttributes,
            links: super::links(u64::from(info.nNumberOfLinks)),
        })
    }
}
