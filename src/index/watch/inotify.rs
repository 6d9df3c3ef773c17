//! The Linux change feed: one inotify watch per folder below the root,
//! read without blocking at the start of every call.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

use super::{Changes, IgnoredFn, Limits};

/// What a folder watch reports: every way an entry can appear, change,
/// vanish or become (un)readable. `CLOSE_WRITE` catches writes through a
/// memory mapping once the writer closes the file.
fn watch_mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::MODIFY
        | WatchMask::CLOSE_WRITE
        | WatchMask::ATTRIB
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::DONT_FOLLOW
        | WatchMask::ONLYDIR
        | WatchMask::EXCL_UNLINK
}

/// Room for at least 200 events of the longest name: few reads per drain.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// File systems whose other clients' writes never reach this kernel's
/// inotify (`statfs` magic numbers from linux/magic.h and the file
/// systems' sources).
const REMOTE_FILE_SYSTEMS: &[(u32, &str)] = &[
    (0x6969, "NFS"),
    (0x517B, "SMB"),
    (0xFF53_4D42, "CIFS"),
    (0xFE53_4D42, "SMB2"),
    (0x0102_1997, "9p"),
    (0x6573_5546, "FUSE"),
    (0x00C3_6400, "Ceph"),
    (0x5346_414F, "AFS"),
    (0x6B41_4653, "AFS"),
    (0x7375_7245, "Coda"),
    (0x0116_1970, "GFS2"),
    (0x7461_636F, "OCFS2"),
    (0x0BD0_0BD0, "Lustre"),
    (0x786F_4256, "vboxsf"),
];

struct Watched {
    path: PathBuf,
    descriptor: WatchDescriptor,
}

/// What adding a folder's watch gave.
enum Added {
    Watch(WatchDescriptor),
    /// Not watchable (vanished, not a folder, unreadable): left out.
    Failed,
    /// Notifications cannot be trusted from now on, for this reason.
    Broken(String),
}

/// Threads that watch the whole tree, at the start and after a loss (see
/// [`InotifyFeed::watch_tree`]).
const WATCHING_THREADS: usize = 4;

/// The folders still to watch, shared by the watching threads. A thread
/// takes one, and hands back the folders found in it when it drops it:
/// nothing left and nothing taken is the end.
struct FolderQueue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

struct QueueState {
    waiting: Vec<PathBuf>,
    taken: usize,
}

/// A folder a thread took, and the folders found in it, queued when the
/// thread is done with it (also if it panicked: no thread waits forever).
struct TakenFolder<'q> {
    queue: &'q FolderQueue,
    path: PathBuf,
    below: Vec<PathBuf>,
}

impl FolderQueue {
    fn new(top: PathBuf) -> Self {
        FolderQueue {
            state: Mutex::new(QueueState {
                waiting: vec![top],
                taken: 0,
            }),
            changed: Condvar::new(),
        }
    }

    /// The next folder, waiting while other threads may still find some;
    /// `None` once every folder is done.
    fn next(&self) -> Option<TakenFolder<'_>> {
        let mut state = self.state.lock().ok()?;
        loop {
            if let Some(path) = state.waiting.pop() {
                state.taken += 1;
                return Some(TakenFolder {
                    queue: self,
                    path,
                    below: Vec::new(),
                });
            }
            if state.taken == 0 {
                return None;
            }
            state = self.changed.wait(state).ok()?;
        }
    }
}

impl Drop for TakenFolder<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.queue.state.lock() {
            state.waiting.append(&mut self.below);
            state.taken -= 1;
        }
        self.queue.changed.notify_all();
    }
}

pub(super) struct InotifyFeed {
    inotify: Inotify,
    root: PathBuf,
    root_device: u64,
    ignored: IgnoredFn,
    limits: Limits,
    /// Watched folders by watch descriptor number.
    folders: HashMap<i32, Watched>,
    /// Set once notifications can no longer be trusted, with the reason;
    /// every drain answers `Unknown` from then on.
    broken: Option<String>,
    buffer: Vec<u8>,
    /// Events read ahead of the next drain (see [`InotifyFeed::collect`]).
    collected: Option<Box<Batch>>,
}

/// What one drain has collected so far.
struct Batch {
    paths: HashSet<PathBuf>,
    /// Folders moved away, whose watches go once the drain has read
    /// every event, before [`Batch::arrived`] are watched: the two sides
    /// of a rename arrive as two events that need not pair (an exchange
    /// of two folders, `RENAME_EXCHANGE`, moves each to the other's path,
    /// so a side handled at once would drop the other's new watches).
    moved_away: Vec<PathBuf>,
    /// Folders created, moved in, or made readable: watched at the end.
    arrived: Vec<PathBuf>,
    /// Events may have been missed: answer `Unknown` and re-watch.
    lost: bool,
    /// Whether folders newly watched report their entries (not while
    /// starting or re-watching after a loss).
    reporting: bool,
}

impl Batch {
    fn new(reporting: bool) -> Batch {
        Batch {
            paths: HashSet::new(),
            moved_away: Vec::new(),
            arrived: Vec::new(),
            lost: false,
            reporting,
        }
    }

    fn report(&mut self, path: PathBuf, limits: &Limits) {
        if !self.reporting || self.lost {
            return;
        }
        if self.paths.len() >= limits.max_paths {
            // Too many to hand over: the caller re-validates instead.
            self.lost = true;
            self.paths = HashSet::new();
            return;
        }
        self.paths.insert(path);
    }
}

/// One event, copied out of the read buffer so that handling it may
/// add and remove watches.
struct Event {
    watch: i32,
    mask: EventMask,
    name: Option<OsString>,
}

impl InotifyFeed {
    /// Watches every folder below `root` that `ignored` keeps; `None`
    /// (after logging why) when notifications cannot be had.
    pub(super) fn start(
        root: &Path,
        ignored: IgnoredFn,
        limits: Limits,
        pause: &mut (dyn FnMut() + Send),
    ) -> Option<Self> {
        let off = |reason: String| {
            tracing::warn!(
                root = %root.display(),
                "change notifications unavailable ({reason}): every call re-checks the tree"
            );
            None
        };
        let root_device = match std::fs::metadata(root) {
            Ok(metadata) => metadata.dev(),
            Err(error) => return off(format!("cannot read the root: {error}")),
        };
        if let Some(kind) = remote_file_system(root) {
            return off(format!(
                "the root is on {kind}, which does not report other machines' writes"
            ));
        }
        let inotify = match Inotify::init() {
            Ok(inotify) => inotify,
            Err(error) => return off(format!("inotify: {error}")),
        };
        let mut feed = InotifyFeed {
            inotify,
            root: root.to_path_buf(),
            root_device,
            ignored,
            limits,
            folders: HashMap::new(),
            broken: None,
            buffer: vec![0; READ_BUFFER_BYTES],
            collected: None,
        };
        feed.watch_tree(root, &mut Batch::new(false), WATCHING_THREADS, pause);
        if let Some(reason) = feed.broken.take() {
            return off(reason);
        }
        tracing::info!(
            root = %root.display(),
            folders = feed.folders.len(),
            "change notifications: inotify, read at the start of every call"
        );
        Some(feed)
    }

    pub(super) fn is_live(&self) -> bool {
        self.broken.is_none()
    }

    /// A second descriptor of the queue and a new stop flag (an eventfd),
    /// to wait on (see [`wait_for_events`]).
    pub(super) fn signal_handles(&self) -> Option<(OwnedFd, OwnedFd)> {
        let queue = self.inotify.as_fd().try_clone_to_owned().ok()?;
        let stopped = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).ok()?;
        Some((queue, stopped))
    }

    pub(super) fn drain(&mut self) -> Changes {
        if self.broken.is_some() {
            return Changes::Unknown;
        }
        let mut batch = self
            .collected
            .take()
            .map_or_else(|| Batch::new(true), |batch| *batch);
        if !self.read_pending(&mut batch) {
            // A writer that never pauses must not keep a call waiting.
            batch.lost = true;
        }
        self.settle_moves(&mut batch);
        if self.broken.is_some() {
            return Changes::Unknown;
        }
        if batch.lost {
            self.rewatch();
            return Changes::Unknown;
        }
        let mut paths: Vec<PathBuf> = batch.paths.into_iter().collect();
        paths.sort_unstable();
        Changes::Paths(paths)
    }

    /// Reads the queued events into the next drain's answer, so that the
    /// kernel's queue does not overflow while no one drains. Folders moved
    /// or made are watched at the drain, once both halves of a rename are
    /// read: their entries are reported then.
    pub(super) fn collect(&mut self) {
        if self.broken.is_some() {
            return;
        }
        let mut batch = self
            .collected
            .take()
            .unwrap_or_else(|| Box::new(Batch::new(true)));
        // What is left past one fill is read by the next collect or drain.
        self.read_pending(&mut batch);
        self.collected = Some(batch);
    }

    /// Reads and handles queued events until the queue is empty (true) or
    /// one fill of events is read (false).
    fn read_pending(&mut self, batch: &mut Batch) -> bool {
        let mut handled = 0;
        loop {
            if handled >= self.limits.max_events {
                return false;
            }
            let events: Vec<Event> = match self.inotify.read_events(&mut self.buffer) {
                Ok(events) => events
                    .map(|event| Event {
                        watch: event.wd.get_watch_descriptor_id(),
                        mask: event.mask,
                        name: event.name.map(|name| name.to_os_string()),
                    })
                    .collect(),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return true,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    self.break_down(format!("reading notifications failed: {error}"));
                    return true;
                }
            };
            handled += events.len();
            for event in events {
                self.handle(event, batch);
                if self.broken.is_some() {
                    return true;
                }
            }
        }
    }

    fn handle(&mut self, event: Event, batch: &mut Batch) {
        let mask = event.mask;
        if mask.contains(EventMask::Q_OVERFLOW) || mask.contains(EventMask::UNMOUNT) {
            batch.lost = true;
            return;
        }
        // Events of a folder no longer watched (deleted or moved out, its
        // watch removed) concern paths that are not below the root now.
        let Some(folder) = self.folders.get(&event.watch).map(|w| w.path.clone()) else {
            return;
        };
        if mask.contains(EventMask::IGNORED) {
            // Deleted folders are forgotten at DELETE_SELF and moved ones
            // at MOVED_FROM; a watch that ends otherwise was lost.
            self.folders.remove(&event.watch);
            batch.lost = true;
            return;
        }
        let Some(name) = event.name else {
            // An event on the watched folder itself.
            if folder == self.root {
                if mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF) {
                    self.break_down("the project root was deleted or moved".to_string());
                }
            } else if mask.contains(EventMask::DELETE_SELF) {
                self.folders.remove(&event.watch);
                batch.report(folder, &self.limits);
            }
            // MOVE_SELF: the parent's MOVED_FROM and MOVED_TO tell where.
            return;
        };
        let path = folder.join(&name);
        let is_dir = mask.contains(EventMask::ISDIR);
        if is_dir && mask.contains(EventMask::MOVED_FROM) {
            // Moved away (maybe out of the root): its old watches would
            // report paths that are no longer there. The MOVED_TO half,
            // if the new place is below the root, watches it afresh.
            batch.moved_away.push(path.clone());
        } else if is_dir && !mask.contains(EventMask::DELETE) {
            // Created, moved in, or permissions changed (a folder that
            // becomes readable can be watched now).
            batch.arrived.push(path.clone());
        }
        batch.report(path, &self.limits);
    }

    /// Once every event is read: drops the watches of the folders moved
    /// away, then watches what stands at the paths folders arrived at, as
    /// the tree is now. Until then, events of a moved folder's watches
    /// name its old path, which the caller re-lists anyway.
    fn settle_moves(&mut self, batch: &mut Batch) {
        for away in std::mem::take(&mut batch.moved_away) {
            self.forget_tree(&away);
        }
        for arrived in std::mem::take(&mut batch.arrived) {
            if self.broken.is_some() {
                return;
            }
            // On the call's own thread: what arrives is mostly a folder or
            // two, where starting threads would cost more than it saves.
            self.watch_tree(&arrived, batch, 1, &mut || {});
        }
    }

    /// Adds (or renews) the kernel's watch on one folder, nothing else.
    fn add_watch(&self, folder: &Path) -> Added {
        let Ok(metadata) = std::fs::symlink_metadata(folder) else {
            return Added::Failed;
        };
        if !metadata.is_dir() {
            return Added::Failed;
        }
        if metadata.dev() != self.root_device
            && let Some(kind) = remote_file_system(folder)
        {
            return Added::Broken(format!(
                "{} is on {kind}, which does not report other machines' writes",
                folder.display()
            ));
        }
        match self.inotify.watches().add(folder, watch_mask()) {
            Ok(descriptor) => Added::Watch(descriptor),
            Err(error) if error.raw_os_error() == Some(libc::ENOSPC) => Added::Broken(
                "the inotify watch limit is reached; raise fs.inotify.max_user_watches".to_string(),
            ),
            Err(error)
                if matches!(
                    error.raw_os_error(),
                    Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES | libc::ELOOP)
                ) =>
            {
                Added::Failed
            }
            Err(error) => Added::Broken(format!("cannot watch {}: {error}", folder.display())),
        }
    }

    /// Watches `top` and every folder below it that `ignored` keeps, on
    /// `threads` threads, each taking the next folder and queueing the
    /// folders found in it: when a tree's folders must be read from disk
    /// (a cold start), several reads in flight take a fraction of the time
    /// of one after another. The entries of each folder not watched before
    /// are reported when `batch` reports: whatever was made in it before
    /// its watch is covered that way. `pause` runs before each folder;
    /// while it waits, every thread waits.
    fn watch_tree(
        &mut self,
        top: &Path,
        batch: &mut Batch,
        threads: usize,
        pause: &mut (dyn FnMut() + Send),
    ) {
        let queue = FolderQueue::new(top.to_path_buf());
        let pause = Mutex::new(pause);
        // Starting or re-watching after a loss, nothing is reported: a
        // folder's files are then passed over without making their paths.
        let reporting = batch.reporting;
        let batch = Mutex::new(batch);
        let watched = AtomicUsize::new(self.folders.len());
        let stopped = AtomicBool::new(self.broken.is_some());
        let broken: Mutex<Option<String>> = Mutex::new(None);
        let break_down = |reason: String| {
            stopped.store(true, Ordering::Relaxed);
            if let Ok(mut broken) = broken.lock() {
                broken.get_or_insert(reason);
            }
        };
        let this = &*self;
        let work = || {
            let mut found = Vec::new();
            while let Some(mut folder) = queue.next() {
                if let Ok(mut pause) = pause.lock() {
                    (*pause)();
                }
                if stopped.load(Ordering::Relaxed)
                    || (folder.path != this.root && (this.ignored)(&folder.path, true))
                {
                    continue;
                }
                let descriptor = match this.add_watch(&folder.path) {
                    Added::Watch(descriptor) => descriptor,
                    Added::Failed => continue,
                    Added::Broken(reason) => {
                        break_down(reason);
                        continue;
                    }
                };
                let number = descriptor.get_watch_descriptor_id();
                let known = this.folders.get(&number).map(|watched| &watched.path);
                let newly_watched = known.is_none_or(|path| *path != folder.path);
                if known.is_none()
                    && watched.fetch_add(1, Ordering::Relaxed) >= this.limits.max_watched_folders
                {
                    let _ = this.inotify.watches().remove(descriptor);
                    break_down(format!(
                        "more than {} folders to watch",
                        this.limits.max_watched_folders
                    ));
                    continue;
                }
                if newly_watched {
                    let path = folder.path.clone();
                    found.push((number, Watched { path, descriptor }));
                }
                let Ok(entries) = std::fs::read_dir(&folder.path) else {
                    continue;
                };
                let mut reported = Vec::new();
                let report = newly_watched && reporting;
                for entry in entries.flatten() {
                    let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
                    if !is_dir && !report {
                        continue;
                    }
                    let path = entry.path();
                    if report {
                        reported.push(path.clone());
                    }
                    if is_dir {
                        folder.below.push(path);
                    }
                }
                if let Ok(mut batch) = batch.lock() {
                    for path in reported {
                        batch.report(path, &this.limits);
                    }
                }
            }
            found
        };
        let found: Vec<Vec<(i32, Watched)>> = std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads)
                .filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, work).ok())
                .collect();
            let mut found = vec![work()];
            for helper in helpers {
                match helper.join() {
                    Ok(part) => found.push(part),
                    // Its folders' watches are unknown: none can be trusted.
                    Err(_) => break_down("a thread watching the tree failed".to_string()),
                }
            }
            found
        });
        if let Some(reason) = broken.into_inner().ok().flatten() {
            self.break_down(reason);
        }
        self.folders.extend(found.into_iter().flatten());
    }

    /// Removes the watches of `top` and every folder below it.
    fn forget_tree(&mut self, top: &Path) {
        let gone: Vec<i32> = self
            .folders
            .iter()
            .filter(|(_, watched)| watched.path.starts_with(top))
            .map(|(number, _)| *number)
            .collect();
        for number in gone {
            if let Some(watched) = self.folders.remove(&number) {
                // The watch may be gone already (the folder was deleted).
                let _ = self.inotify.watches().remove(watched.descriptor);
            }
        }
    }

    /// After a loss: watch the tree as it is now, and drop the watches of
    /// folders no longer in it. The caller re-validates everything, so
    /// nothing is reported.
    fn rewatch(&mut self) {
        let before = std::mem::take(&mut self.folders);
        let root = self.root.clone();
        self.watch_tree(&root, &mut Batch::new(false), WATCHING_THREADS, &mut || {});
        for (number, watched) in before {
            if !self.folders.contains_key(&number) {
                let _ = self.inotify.watches().remove(watched.descriptor);
            }
        }
        tracing::debug!(
            folders = self.folders.len(),
            "change notifications were lost; the tree is watched again"
        );
    }

    /// Notifications can no longer be trusted; say so once.
    fn break_down(&mut self, reason: String) {
        if self.broken.is_none() {
            tracing::warn!(
                root = %self.root.display(),
                "change notifications stopped ({reason}): every call re-checks the tree"
            );
            self.broken = Some(reason);
        }
    }
}

/// Waits until `queue` (an inotify descriptor) holds an event (true) or
/// `stopped` (an eventfd) was written to (false). Reads neither.
pub(super) fn wait_for_events(queue: &OwnedFd, stopped: &OwnedFd) -> bool {
    use rustix::event::{PollFd, PollFlags, poll};
    loop {
        let mut fds = [
            PollFd::new(queue, PollFlags::IN),
            PollFd::new(stopped, PollFlags::IN),
        ];
        match poll(&mut fds, None) {
            Ok(_) if fds[1].revents().is_empty() => {
                return fds[0].revents().contains(PollFlags::IN);
            }
            Ok(_) => return false,
            Err(rustix::io::Errno::INTR) => continue,
            // Nothing to wait on: report no change (calls still drain).
            Err(_) => return false,
        }
    }
}

/// Makes every wait on `stopped` return false.
pub(super) fn stop_waits(stopped: &OwnedFd) {
    // An eventfd's counter only saturates; a failed write leaves the
    // waiter to the end of the process.
    let _ = rustix::io::write(stopped, &1u64.to_ne_bytes());
}

/// The name of the file system holding `path` when it is one whose
/// other clients' writes this kernel never hears of.
pub(super) fn remote_file_system(path: &Path) -> Option<&'static str> {
    let stats = rustix::fs::statfs(path).ok()?;
    // The magic numbers are 32-bit; `f_type` is wider on 64-bit targets.
    let kind = stats.f_type as u32;
    REMOTE_FILE_SYSTEMS
        .iter()
        .find(|(magic, _)| *magic == kind)
        .map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::super::{ChangeWatcher, Changes, IgnoredFn, Limits};
    use super::*;
    use std::fs;
    use std::time::Duration;

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
        watcher: ChangeWatcher,
    }

    impl Fixture {
        fn new() -> Fixture {
            Self::with(
                Box::new(|path, _| path.ends_with("node_modules")),
                Limits::default(),
            )
        }

        fn with(ignored: IgnoredFn, limits: Limits) -> Fixture {
            let dir = tempfile::tempdir().expect("temp dir");
            let root = dunce::canonicalize(dir.path()).expect("canonical root");
            let watcher = ChangeWatcher::start_inotify(&root, ignored, limits, &mut || {});
            assert!(watcher.is_live(), "inotify is available here");
            Fixture {
                _dir: dir,
                root,
                watcher,
            }
        }

        fn path(&self, relative: &str) -> PathBuf {
            self.root.join(relative)
        }

        fn write(&self, relative: &str, text: &str) {
            let path = self.path(relative);
            fs::create_dir_all(path.parent().expect("parent")).expect("create folders");
            fs::write(path, text).expect("write");
        }

        /// The root-relative paths of one drain, which must not be Unknown.
        fn drain(&self) -> Vec<String> {
            match self.watcher.drain() {
                Changes::Paths(paths) => paths
                    .iter()
                    .map(|path| {
                        let relative = path.strip_prefix(&self.root).expect("below the root");
                        relative.to_string_lossy().into_owned()
                    })
                    .collect(),
                Changes::Unknown => panic!("drain answered Unknown"),
            }
        }
    }

    fn has(paths: &[String], expected: &[&str]) {
        for path in expected {
            assert!(
                paths.iter().any(|p| p == path),
                "{path} missing from {paths:?}"
            );
        }
    }

    #[test]
    fn an_untouched_tree_drains_empty() {
        let fixture = Fixture::new();
        fixture.write("a.txt", "a");
        let _ = fixture.drain();
        assert_eq!(fixture.drain(), Vec::<String>::new());
    }

    #[test]
    fn file_create_edit_delete_and_rename_are_seen_at_once() {
        let fixture = Fixture::new();
        fixture.write("src/a.rs", "one");
        let _ = fixture.drain();

        fixture.write("src/b.rs", "new");
        assert_eq!(fixture.drain(), vec!["src/b.rs"]);

        // The same size, within the same second: the content changed.
        fixture.write("src/b.rs", "NEW");
        assert_eq!(fixture.drain(), vec!["src/b.rs"]);

        fs::rename(fixture.path("src/b.rs"), fixture.path("src/c.rs")).expect("rename");
        assert_eq!(fixture.drain(), vec!["src/b.rs", "src/c.rs"]);

        fs::remove_file(fixture.path("src/c.rs")).expect("delete");
        assert_eq!(fixture.drain(), vec!["src/c.rs"]);

        let file = fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(fixture.path("src/a.rs"))
            .expect("open");
        drop(file);
        assert_eq!(fixture.drain(), vec!["src/a.rs"]);
    }

    #[test]
    fn permission_changes_are_seen() {
        use std::os::unix::fs::PermissionsExt;
        let fixture = Fixture::new();
        fixture.write("a.txt", "a");
        let _ = fixture.drain();
        fs::set_permissions(fixture.path("a.txt"), fs::Permissions::from_mode(0o000))
            .expect("chmod");
        assert_eq!(fixture.drain(), vec!["a.txt"]);
    }

    #[test]
    fn a_new_folder_and_what_was_made_in_it_before_the_watch_are_seen() {
        let fixture = Fixture::new();
        // Folders and a file made before any drain: no watch on them yet.
        fixture.write("a/b/c.txt", "c");
        has(&fixture.drain(), &["a", "a/b", "a/b/c.txt"]);

        // The new folders are watched now.
        fixture.write("a/b/d.txt", "d");
        assert_eq!(fixture.drain(), vec!["a/b/d.txt"]);
    }

    #[test]
    fn a_renamed_folder_is_watched_at_its_new_path() {
        let fixture = Fixture::new();
        fixture.write("old/sub/f.txt", "f");
        let _ = fixture.drain();

        fs::rename(fixture.path("old"), fixture.path("new")).expect("rename");
        has(
            &fixture.drain(),
            &["old", "new", "new/sub", "new/sub/f.txt"],
        );

        fixture.write("new/sub/g.txt", "g");
        assert_eq!(fixture.drain(), vec!["new/sub/g.txt"]);
    }

    /// `renameat2(RENAME_EXCHANGE)` of two paths below the root.
    fn exchange(fixture: &Fixture, a: &str, b: &str) {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let (a, b) = (fixture.path(a), fixture.path(b));
        let a = CString::new(a.as_os_str().as_bytes()).expect("no NUL");
        let b = CString::new(b.as_os_str().as_bytes()).expect("no NUL");
        // SAFETY: both paths are NUL-terminated C strings.
        let result = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        assert_eq!(result, 0, "{}", io::Error::last_os_error());
    }

    #[test]
    fn folders_exchanged_are_both_watched_at_their_new_paths() {
        let fixture = Fixture::new();
        fixture.write("a/sub/fa.txt", "a");
        fixture.write("b/fb.txt", "b");
        let _ = fixture.drain();

        exchange(&fixture, "a", "b");
        has(&fixture.drain(), &["a", "b", "b/sub/fa.txt", "a/fb.txt"]);
        fixture.write("a/new.txt", "n");
        fixture.write("b/new.txt", "n");
        fixture.write("b/sub/new.txt", "n");
        assert_eq!(
            fixture.drain(),
            vec!["a/new.txt", "b/new.txt", "b/sub/new.txt"]
        );
        // And back, with a file and a folder swapped too.
        exchange(&fixture, "b", "a");
        fixture.write("plain.txt", "p");
        exchange(&fixture, "plain.txt", "a");
        has(&fixture.drain(), &["a", "b", "plain.txt"]);
        fixture.write("plain.txt/later.txt", "l");
        fixture.write("b/later.txt", "l");
        assert_eq!(fixture.drain(), vec!["b/later.txt", "plain.txt/later.txt"]);
    }

    #[test]
    fn a_folder_renamed_before_the_drain_saw_it_created_is_still_watched() {
        let fixture = Fixture::new();
        fixture.write("first/f.txt", "f");
        fs::rename(fixture.path("first"), fixture.path("second")).expect("rename");
        has(&fixture.drain(), &["first", "second", "second/f.txt"]);
        fixture.write("second/g.txt", "g");
        assert_eq!(fixture.drain(), vec!["second/g.txt"]);
    }

    #[test]
    fn a_deleted_folder_is_reported_with_its_files() {
        let fixture = Fixture::new();
        fixture.write("gone/x/f.txt", "f");
        let _ = fixture.drain();
        fs::remove_dir_all(fixture.path("gone")).expect("delete");
        has(&fixture.drain(), &["gone", "gone/x", "gone/x/f.txt"]);
        // Recreated at the same path: watched afresh.
        fixture.write("gone/again.txt", "g");
        has(&fixture.drain(), &["gone", "gone/again.txt"]);
        fixture.write("gone/more.txt", "m");
        assert_eq!(fixture.drain(), vec!["gone/more.txt"]);
    }

    #[test]
    fn a_folder_moved_out_of_the_root_is_no_longer_watched() {
        let fixture = Fixture::new();
        let outside = tempfile::tempdir().expect("outside");
        fixture.write("leaving/f.txt", "f");
        let _ = fixture.drain();
        let away = outside.path().join("away");
        fs::rename(fixture.path("leaving"), &away).expect("move out");
        assert_eq!(fixture.drain(), vec!["leaving"]);
        fs::write(away.join("g.txt"), "g").expect("write outside");
        assert_eq!(fixture.drain(), Vec::<String>::new());

        // Moved back in: watched and reported again.
        fs::rename(&away, fixture.path("back")).expect("move in");
        has(&fixture.drain(), &["back", "back/f.txt", "back/g.txt"]);
        fixture.write("back/h.txt", "h");
        assert_eq!(fixture.drain(), vec!["back/h.txt"]);
    }

    #[test]
    fn ignored_folders_are_not_watched() {
        let fixture = Fixture::new();
        fixture.write("node_modules/pkg/index.js", "x");
        let _ = fixture.drain();
        fixture.write("node_modules/pkg/other.js", "y");
        assert_eq!(fixture.drain(), Vec::<String>::new());
    }

    #[test]
    fn symlinks_are_reported_not_followed() {
        let fixture = Fixture::new();
        let outside = tempfile::tempdir().expect("outside");
        std::os::unix::fs::symlink(outside.path(), fixture.path("link")).expect("symlink");
        assert_eq!(fixture.drain(), vec!["link"]);
        fs::write(outside.path().join("x.txt"), "x").expect("write outside");
        assert_eq!(fixture.drain(), Vec::<String>::new());
    }

    #[test]
    fn the_signal_tells_of_queued_changes_and_leaves_them_for_the_drain() {
        let fixture = Fixture::new();
        let signal = fixture.watcher.signal().expect("a live feed signals");
        fixture.write("a.txt", "a");
        assert!(signal.wait());
        // Waiting read nothing: the drain still reports the change.
        assert_eq!(fixture.drain(), vec!["a.txt"]);
        // Nothing queued: a wait lasts until it is stopped.
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| signal.wait());
            std::thread::sleep(Duration::from_millis(50));
            assert!(!waiter.is_finished(), "no change, no wake");
            signal.stop();
            assert!(!waiter.join().expect("the waiter ends"));
        });
        // Stopped for good, changes or not.
        fixture.write("b.txt", "b");
        assert!(!signal.wait());
    }

    /// New files enough to overflow the kernel's queue when no one reads
    /// it: each queues at least CREATE and MODIFY, and the kernel keeps
    /// fs.inotify.max_queued_events (16,384 by default) before it drops.
    fn files_over_the_queue() -> usize {
        let queued = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .ok()
            .and_then(|text| text.trim().parse::<usize>().ok())
            .unwrap_or(16_384);
        queued / 2 + 64
    }

    #[test]
    fn a_kernel_queue_overflow_answers_unknown_then_recovers() {
        let fixture = Fixture::new();
        fixture.write("many/seed.txt", "s");
        let _ = fixture.drain();
        for index in 0..files_over_the_queue() {
            fs::write(fixture.path(&format!("many/{index}.txt")), "x").expect("write");
        }
        assert_eq!(fixture.watcher.drain(), Changes::Unknown);
        // Watched again: later changes are exact.
        fixture.write("many/after.txt", "a");
        assert_eq!(fixture.drain(), vec!["many/after.txt"]);
        fixture.write("fresh/x.txt", "x");
        has(&fixture.drain(), &["fresh", "fresh/x.txt"]);
    }

    /// Every folder of a tree of `d0/e0/f0` ... `d7/e3/f3` (168 folders),
    /// and an ignored `node_modules/pkg`.
    fn wide_and_deep_tree(root: &Path) -> Vec<String> {
        let mut folders = Vec::new();
        for d in 0..8 {
            folders.push(format!("d{d}"));
            for e in 0..4 {
                folders.push(format!("d{d}/e{e}"));
                for f in 0..4 {
                    folders.push(format!("d{d}/e{e}/f{f}"));
                }
            }
        }
        for folder in folders.iter().chain([&"node_modules/pkg".to_string()]) {
            fs::create_dir_all(root.join(folder)).expect("mkdir");
        }
        folders
    }

    /// Writes a file in every folder and asserts that one drain names them
    /// all, and nothing in the ignored folder.
    fn every_folder_reports(watcher: &ChangeWatcher, root: &Path, folders: &[String], name: &str) {
        for folder in folders.iter().chain([&"node_modules/pkg".to_string()]) {
            fs::write(root.join(folder).join(name), "x").expect("write");
        }
        let Changes::Paths(paths) = watcher.drain() else {
            panic!("drain answered Unknown");
        };
        for folder in folders {
            let expected = root.join(folder).join(name);
            assert!(
                paths.contains(&expected),
                "{} not reported",
                expected.display()
            );
        }
        assert!(
            !paths
                .iter()
                .any(|path| path.starts_with(root.join("node_modules")))
        );
    }

    #[test]
    fn every_folder_of_a_wide_and_deep_tree_is_watched_at_the_start_and_after_a_loss() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dunce::canonicalize(dir.path()).expect("canonical root");
        let folders = wide_and_deep_tree(&root);
        let mut paused = 0;
        let watcher = ChangeWatcher::start_inotify(
            &root,
            Box::new(|path, _| path.ends_with("node_modules")),
            Limits::default(),
            &mut || paused += 1,
        );
        assert!(watcher.is_live());
        // Before each folder: the root, the tree's and node_modules.
        assert_eq!(paused, 1 + folders.len() + 1);
        every_folder_reports(&watcher, &root, &folders, "first.txt");
        // A loss watches the whole tree again.
        for index in 0..files_over_the_queue() {
            fs::write(root.join(format!("d0/{index}.txt")), "x").expect("write");
        }
        assert_eq!(watcher.drain(), Changes::Unknown);
        every_folder_reports(&watcher, &root, &folders, "second.txt");
    }

    #[test]
    fn a_wide_tree_over_the_folder_limit_starts_without_notifications() {
        let dir = tempfile::tempdir().expect("temp dir");
        let folders = wide_and_deep_tree(dir.path());
        let limits = Limits {
            max_watched_folders: folders.len() / 2,
            ..Limits::default()
        };
        let watcher =
            ChangeWatcher::start_inotify(dir.path(), Box::new(|_, _| false), limits, &mut || {});
        assert!(!watcher.is_live());
    }

    #[test]
    fn changes_collected_as_they_come_never_overflow_the_kernel_queue() {
        let fixture = Fixture::new();
        fixture.write("many/seed.txt", "s");
        let _ = fixture.drain();
        // As many files as overflow the queue undrained (see above), the
        // queue collected every 256 of them.
        let files = files_over_the_queue();
        for index in 0..files {
            fs::write(fixture.path(&format!("many/{index}.txt")), "x").expect("write");
            if index % 256 == 255 {
                fixture.watcher.collect();
            }
        }
        let drained = fixture.drain();
        assert_eq!(drained.len(), files);
        has(
            &drained,
            &["many/0.txt", &format!("many/{}.txt", files - 1)],
        );
    }

    #[test]
    fn more_paths_than_one_answer_holds_answers_unknown() {
        let limits = Limits {
            max_paths: 10,
            ..Limits::default()
        };
        let fixture = Fixture::with(Box::new(|_, _| false), limits);
        for index in 0..20 {
            fixture.write(&format!("{index}.txt"), "x");
        }
        assert_eq!(fixture.watcher.drain(), Changes::Unknown);
        fixture.write("after.txt", "a");
        assert_eq!(fixture.drain(), vec!["after.txt"]);
    }

    #[test]
    fn more_events_than_one_drain_reads_answers_unknown() {
        let limits = Limits {
            max_events: 8,
            ..Limits::default()
        };
        let fixture = Fixture::with(Box::new(|_, _| false), limits);
        for index in 0..20 {
            fixture.write(&format!("{index}.txt"), "x");
        }
        assert_eq!(fixture.watcher.drain(), Changes::Unknown);
        assert!(fixture.watcher.is_live());
    }

    #[test]
    fn the_folder_limit_turns_notifications_off_for_good() {
        let limits = Limits {
            max_watched_folders: 3,
            ..Limits::default()
        };
        let fixture = Fixture::with(Box::new(|_, _| false), limits);
        fixture.write("a/x.txt", "x");
        fixture.write("b/x.txt", "x");
        let _ = fixture.watcher.drain();
        fixture.write("c/x.txt", "x");
        assert_eq!(fixture.watcher.drain(), Changes::Unknown);
        assert!(!fixture.watcher.is_live());
        fixture.write("d.txt", "x");
        assert_eq!(fixture.watcher.drain(), Changes::Unknown);
    }

    #[test]
    fn a_tree_over_the_folder_limit_starts_without_notifications() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in ["a", "b", "c"] {
            fs::create_dir(dir.path().join(name)).expect("mkdir");
        }
        let limits = Limits {
            max_watched_folders: 2,
            ..Limits::default()
        };
        let watcher =
            ChangeWatcher::start_inotify(dir.path(), Box::new(|_, _| false), limits, &mut || {});
        assert!(!watcher.is_live());
        assert_eq!(watcher.drain(), Changes::Unknown);
    }

    #[test]
    fn a_deleted_root_answers_unknown_for_good() {
        let parent = tempfile::tempdir().expect("temp dir");
        let root = parent.path().join("proj");
        fs::create_dir(&root).expect("mkdir");
        let watcher = ChangeWatcher::start_inotify(
            &root,
            Box::new(|_, _| false),
            Limits::default(),
            &mut || {},
        );
        fs::remove_dir(&root).expect("delete root");
        assert_eq!(watcher.drain(), Changes::Unknown);
        fs::create_dir(&root).expect("recreate");
        assert_eq!(watcher.drain(), Changes::Unknown);
    }

    #[test]
    fn start_watches_a_missing_root_as_off() {
        let parent = tempfile::tempdir().expect("temp dir");
        let watcher = ChangeWatcher::start_inotify(
            &parent.path().join("missing"),
            Box::new(|_, _| false),
            Limits::default(),
            &mut || {},
        );
        assert!(!watcher.is_live());
        assert_eq!(watcher.drain(), Changes::Unknown);
    }

    #[test]
    fn local_file_systems_are_not_remote() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(remote_file_system(dir.path()), None);
    }
}
