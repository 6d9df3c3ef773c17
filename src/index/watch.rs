//! The change feed behind the live tree model: which paths under the root
//! changed since the last look, or "unknown" when that cannot be told for
//! sure.
//!
//! Exactness is the point. On Linux the kernel queues an inotify event
//! before the writing system call returns, so reading the inotify queue
//! (without blocking) inside [`ChangeWatcher::drain`] sees every change that
//! completed before the drain started; no background thread can lag behind.
//! Everything that could make the answer incomplete turns it into
//! [`Changes::Unknown`], and the caller then re-validates the tree itself:
//! a queue overflow, more changes than one answer may hold, the watch limit
//! (`fs.inotify.max_user_watches`), an unmounted folder, a file system that
//! does not report other machines' writes (NFS, SMB, 9p, FUSE …), the root
//! itself deleted or moved, or notifications switched off.
//!
//! Other platforms answer `Unknown` on every drain: FSEvents delivers after
//! a latency, and ReadDirectoryChangesW is documented to report a change of
//! size or last write time only once the file system cache is flushed (see
//! docs/architecture.md), so neither can say "nothing else changed before
//! this moment" without writing marker files into the project, which a
//! read-only server must not do.
//!
//! Known blind spots of inotify (documented in docs/architecture.md): writes
//! through a shared memory mapping are seen only when the file is closed,
//! and a write through a hard link that lives outside the root is not seen.

use std::path::{Path, PathBuf};

/// What changed under the root since the previous drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    /// Absolute paths of files and folders that were created, written,
    /// deleted, renamed (old and new path) or had their permissions changed,
    /// sorted, each once. A folder stands for itself and everything below
    /// it: a renamed folder is reported by its old and new path (and the
    /// entries now below the new one), a deleted one by its path. Paths may
    /// no longer exist.
    Paths(Vec<PathBuf>),
    /// Changes may have been missed: re-validate the whole tree.
    Unknown,
}

/// Bounds on the memory and work of the feed.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Paths one drain may report; beyond that it answers `Unknown`.
    max_paths: usize,
    /// Events one drain reads; beyond that it answers `Unknown` and leaves
    /// the rest for the next drain, so a writer that never pauses cannot
    /// keep a call waiting.
    max_events: usize,
    /// Folders watched at most (each costs a kernel watch and a map entry);
    /// a larger tree runs without notifications.
    max_watched_folders: usize,
}

#[cfg(target_os = "linux")]
impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_paths: 65_536,
            max_events: 65_536,
            max_watched_folders: 262_144,
        }
    }
}

/// Watches one project root; see the module documentation.
pub struct ChangeWatcher {
    feed: Feed,
}

enum Feed {
    #[cfg(target_os = "linux")]
    Inotify(std::sync::Mutex<inotify::InotifyFeed>),
    /// No notifications: every drain answers `Unknown`.
    Off,
}

impl ChangeWatcher {
    /// Starts watching `root` (the canonical project root); with `enabled`
    /// false (the configuration's switch) every drain answers Unknown, as
    /// on a file system without notifications. Never fails: when the OS
    /// cannot deliver notifications it logs once which mode is in force and
    /// every drain answers Unknown.
    ///
    /// `ignored(path, is_dir)` keeps the watcher out of folders the caller
    /// always skips (`node_modules`, `target`): a rule of names alone, which
    /// no file edit changes. Start the watcher before walking the tree, so
    /// that nothing changes unseen between the walk and the first drain.
    /// Watching a large tree reads every folder: `pause` is called between
    /// two, and may wait there while the caller has more urgent work.
    pub fn start(
        root: &Path,
        enabled: bool,
        ignored: impl Fn(&Path, bool) -> bool + Send + Sync + 'static,
        pause: &mut (dyn FnMut() + Send),
    ) -> Self {
        if !enabled {
            return Self::off(root);
        }
        #[cfg(target_os = "linux")]
        {
            Self::start_inotify(root, Box::new(ignored), Limits::default(), pause)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (ignored, pause);
            tracing::info!(
                root = %root.display(),
                "change notifications: none on this platform that report every change \
                 before a call starts (see docs/architecture.md); every call re-checks the tree"
            );
            ChangeWatcher { feed: Feed::Off }
        }
    }

    /// Notifications switched off: every drain answers `Unknown`.
    fn off(root: &Path) -> Self {
        tracing::info!(
            root = %root.display(),
            "change notifications switched off: every call re-checks the tree"
        );
        ChangeWatcher { feed: Feed::Off }
    }

    #[cfg(target_os = "linux")]
    fn start_inotify(
        root: &Path,
        ignored: IgnoredFn,
        limits: Limits,
        pause: &mut (dyn FnMut() + Send),
    ) -> Self {
        match inotify::InotifyFeed::start(root, ignored, limits, pause) {
            Some(feed) => ChangeWatcher {
                feed: Feed::Inotify(std::sync::Mutex::new(feed)),
            },
            None => ChangeWatcher { feed: Feed::Off },
        }
    }

    /// Every change completed before this call, as absolute paths (files or
    /// folders, see [`Changes::Paths`]), or Unknown when events may have
    /// been lost (overflow, watch limit, no backend).
    pub fn drain(&self) -> Changes {
        match &self.feed {
            #[cfg(target_os = "linux")]
            Feed::Inotify(feed) => match feed.lock() {
                Ok(mut feed) => feed.drain(),
                // A drain panicked half-way: its state cannot be trusted.
                Err(_) => Changes::Unknown,
            },
            Feed::Off => Changes::Unknown,
        }
    }

    /// A handle that tells a waiting thread when changes are queued for the
    /// next drain, without draining them; `None` when drains never answer
    /// with paths. Waiting on it lets the background catch up with a bulk
    /// change (a checkout) while it happens, before the kernel's queue
    /// (`fs.inotify.max_queued_events`) overflows.
    pub fn signal(&self) -> Option<ChangeSignal> {
        match &self.feed {
            #[cfg(target_os = "linux")]
            Feed::Inotify(feed) => {
                let feed = feed.lock().ok()?;
                if !feed.is_live() {
                    return None;
                }
                let (queue, stopped) = feed.signal_handles()?;
                Some(ChangeSignal { queue, stopped })
            }
            Feed::Off => None,
        }
    }

    /// Reads the changes queued so far into the next drain's answer,
    /// without applying them: called as they come (see
    /// [`ChangeWatcher::signal`]), the kernel's queue cannot overflow
    /// while no one drains.
    pub fn collect(&self) {
        match &self.feed {
            #[cfg(target_os = "linux")]
            Feed::Inotify(feed) => {
                if let Ok(mut feed) = feed.lock() {
                    feed.collect();
                }
            }
            Feed::Off => {}
        }
    }

    /// Whether drains can ever answer with paths (false: the caller
    /// re-validates on every call, and may as well not drain).
    pub fn is_live(&self) -> bool {
        match &self.feed {
            #[cfg(target_os = "linux")]
            Feed::Inotify(feed) => feed.lock().is_ok_and(|feed| feed.is_live()),
            Feed::Off => false,
        }
    }
}

/// See [`ChangeWatcher::signal`].
pub struct ChangeSignal {
    /// The feed's queue (a second descriptor of it: the feed may be
    /// dropped while a thread waits).
    #[cfg(target_os = "linux")]
    queue: std::os::fd::OwnedFd,
    /// Readable once [`ChangeSignal::stop`] was called.
    #[cfg(target_os = "linux")]
    stopped: std::os::fd::OwnedFd,
}

impl ChangeSignal {
    /// Waits until a change is queued (true; it stays queued for the next
    /// drain) or [`ChangeSignal::stop`] was called (false).
    pub fn wait(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            inotify::wait_for_events(&self.queue, &self.stopped)
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// Ends every wait, now and later.
    pub fn stop(&self) {
        #[cfg(target_os = "linux")]
        inotify::stop_waits(&self.stopped);
    }
}

#[cfg(target_os = "linux")]
type IgnoredFn = Box<dyn Fn(&Path, bool) -> bool + Send + Sync>;

#[cfg(target_os = "linux")]
mod inotify;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switched_off_every_drain_is_unknown() {
        let dir = tempfile::tempdir().expect("temp dir");
        let watcher = ChangeWatcher::off(dir.path());
        assert!(!watcher.is_live());
        assert_eq!(watcher.drain(), Changes::Unknown);
        std::fs::write(dir.path().join("a.txt"), "a").expect("write");
        assert_eq!(watcher.drain(), Changes::Unknown);
    }
}
