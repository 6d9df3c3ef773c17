//! What identifies one version of a file, shared by the tree model and the
//! walker's ignore-rule cache.

use std::fs::Metadata;
use std::time::{Duration, SystemTime};

/// What identifies one version of a file: a rewrite changes at least the
/// change time (to the nanosecond where the file system keeps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    len: u64,
    modified: i128,
    changed: i128,
    inode: u64,
    device: u64,
    mode: u32,
    /// Names (hard links) that lead to the file.
    links: u64,
}

impl Stamp {
    #[cfg(unix)]
    pub fn of(metadata: &Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        let nanos = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
        Self {
            len: metadata.len(),
            modified: nanos(metadata.mtime(), metadata.mtime_nsec()),
            changed: nanos(metadata.ctime(), metadata.ctime_nsec()),
            inode: metadata.ino(),
            device: metadata.dev(),
            mode: metadata.mode(),
            links: metadata.nlink(),
        }
    }

    #[cfg(not(unix))]
    pub fn of(metadata: &Metadata) -> Self {
        let nanos = |time: std::io::Result<SystemTime>| {
            time.ok()
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128)
        };
        Self {
            len: metadata.len(),
            modified: nanos(metadata.modified()),
            changed: nanos(metadata.created()),
            inode: 0,
            device: 0,
            mode: u32::from(metadata.permissions().readonly()),
            links: 1,
        }
    }

    /// Bytes of [`Stamp::to_bytes`].
    pub const BYTES: usize = 68;

    /// The stamp as the on-disk index keeps it (little-endian fields).
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut out = [0u8; Self::BYTES];
        out[0..8].copy_from_slice(&self.len.to_le_bytes());
        out[8..24].copy_from_slice(&self.modified.to_le_bytes());
        out[24..40].copy_from_slice(&self.changed.to_le_bytes());
        out[40..48].copy_from_slice(&self.inode.to_le_bytes());
        out[48..56].copy_from_slice(&self.device.to_le_bytes());
        out[56..60].copy_from_slice(&self.mode.to_le_bytes());
        out[60..68].copy_from_slice(&self.links.to_le_bytes());
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
            modified: i128_at(8),
            changed: i128_at(24),
            inode: u64_at(40),
            device: u64_at(48),
            mode: u32::from_le_bytes(field(56..60).try_into().unwrap_or_default()),
            links: u64_at(60),
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
        (cfg!(unix) && self.links > 1).then_some((self.device, self.inode))
    }

    /// How many names lead to the file.
    pub fn links(&self) -> u64 {
        self.links
    }

    /// Whether a write right after `seen_at` could leave this stamp
    /// unchanged: the file changed so recently that the file system's clock
    /// tick may not have moved on (git's "racily clean" entries). Stamps in
    /// whole seconds get two seconds of doubt, finer ones a tenth.
    pub fn is_racy(&self, seen_at: SystemTime) -> bool {
        let whole_seconds = self.modified % 1_000_000_000 == 0 && self.changed % 1_000_000_000 == 0;
        let doubt = if whole_seconds {
            Duration::from_secs(2)
        } else {
            Duration::from_millis(100)
        };
        let Ok(seen) = seen_at.duration_since(SystemTime::UNIX_EPOCH) else {
            return true;
        };
        let latest = self.modified.max(self.changed);
        latest + doubt.as_nanos() as i128 >= seen.as_nanos() as i128
    }
}
