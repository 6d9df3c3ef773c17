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
    /// tick may not have moved on (git's "racily clean" entries), or it
    /// lies in the future.
    pub fn is_racy(&self, seen_at: SystemTime) -> bool {
        let Ok(seen) = seen_at.duration_since(SystemTime::UNIX_EPOCH) else {
            return true;
        };
        let latest = self.modified.max(self.changed);
        latest + self.doubt().as_nanos() as i128 >= seen.as_nanos() as i128
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
        let whole_seconds = self.modified % 1_000_000_000 == 0 && self.changed % 1_000_000_000 == 0;
        if whole_seconds {
            Duration::from_secs(2)
        } else {
            Duration::from_millis(100)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::FileTimes;

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
