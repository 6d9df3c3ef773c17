//! The live model of the project tree: the walker's file list plus a
//! trigram index over the files' contents, built in the background when the
//! project opens, kept up to date as the change feed reports changes, and
//! brought up to date at the start of every call.
//!
//! [`TreeModel`] is the facade. [`TreeModel::candidates`] answers "which
//! files under this folder may contain this query": a superset of the files
//! that match (the searcher verifies each), in path order, or `None` when
//! the model cannot answer (not built yet, switched off, over its memory
//! limit, or a folder the model does not hold) and the corpus walks
//! instead. [`TreeModel::entries`] answers from the file list what the
//! walker would. Modelled on google/codesearch and Zoekt, one job a file:
//! `build` makes the model, `background` keeps it covering the tree after
//! changes, `pacer` makes both yield to calls, `indexer` reads a file into
//! grams, `ngram` holds the grams and filters, `postings` the posting lists
//! and their algebra, `segment/` their one format, `base` the layers of
//! segments, `tombstones` the ids no file holds any more, `merge` which
//! layers to merge and how, `plan` turns a query into a gram condition,
//! `tree` keeps the file list fresh, `watch` reports changes, `live`
//! answers from the ready model, `restore` and `save` read and write the
//! cache (`cache/`), `scrub` checks it in idle time.

mod background;
mod base;
mod build;
pub mod cache;
mod indexer;
mod live;
mod merge;
mod ngram;
mod os;
mod pacer;
mod plan;
mod postings;
mod restore;
mod save;
mod scrub;
pub mod segment;
#[cfg(test)]
mod testing;
mod tombstones;
mod tree;
pub mod watch;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::SystemTime;

use regex_syntax::hir::Hir;

use background::keep_indexing;
use build::{build, switch_off};
use live::{Found, Live, Looker};
use os::{lower_priority, return_freed_memory};
use tree::{PathKey, depth};

use cache::RootCache;

use crate::config::{IndexCacheConfig, IndexConfig};
use crate::corpus::searchable::is_transcoded;
use crate::security::{PathGate, ResolvedPath};
use crate::walk::{self, Entry, Stamp};
use segment::ContentHash;

/// Which entries a listing wants: those `keep` accepts (given the
/// root-relative path and kind), the first `wanted` of them in path order.
pub struct Pick<'a> {
    pub keep: &'a walk::Keep<'a>,
    pub wanted: usize,
}

impl Pick<'_> {
    /// Every entry.
    pub const ALL: Pick<'static> = Pick {
        keep: &|_, _| true,
        wanted: usize::MAX,
    };
}

/// A page of [`TreeModel::candidates`].
#[derive(Debug)]
pub struct Candidates {
    pub files: Vec<Candidate>,
    /// No candidate sorts after the page's last.
    pub ends_list: bool,
}

#[cfg(test)]
impl Candidates {
    /// The candidates' root-relative paths, in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.files
            .iter()
            .map(|file| file.relative().to_string())
            .collect()
    }
}

/// A file that may hold a query, as [`TreeModel::candidates`] lists it:
/// held compactly, as a call whose candidates are every file holds one for
/// each, and made an [`Entry`] only as the scan reaches it.
#[derive(Debug)]
pub struct Candidate {
    relative: Box<str>,
    size: Option<u64>,
    ino: Option<u64>,
    /// Below the folder the call asked for.
    depth: usize,
    /// Changed and not read since, while the model may hold its text under
    /// an id the change took away: what the call reads of it may give the
    /// id back ([`ReadWhole`]).
    pub awaited: bool,
}

impl Candidate {
    /// Root-relative, `/`-separated.
    pub fn relative(&self) -> &str {
        &self.relative
    }

    /// The entry a walk below `root` would have listed.
    pub fn entry(&self, root: &Path) -> Entry {
        Entry {
            relative: self.relative.to_string(),
            path: joined(root, &self.relative),
            kind: walk::EntryKind::File,
            depth: self.depth,
            size: self.size,
            ino: self.ino,
        }
    }
}

/// `root` joined with the root-relative `relative`, in one allocation (a
/// join grows the root's copy).
fn joined(root: &Path, relative: &str) -> PathBuf {
    let mut path = PathBuf::with_capacity(root.as_os_str().len() + 1 + relative.len());
    path.push(root);
    path.push(relative);
    path
}

/// An awaited file a call read whole (see [`Candidate::awaited`]): when
/// a layer holds the same text under its name, [`TreeModel::take_back`]
/// gives it that id again, as the background's own reading would, and the
/// calls after need not read it. A `chmod -R` moves every stamp and keeps
/// every text: the first call that reads the tree takes it back.
pub struct ReadWhole {
    relative: String,
    stamp: Stamp,
    seen_at: SystemTime,
    hash: ContentHash,
}

impl ReadWhole {
    /// `content`, read from `relative` opened with `stamp` no earlier than
    /// `seen_at`, as the searcher reads it (within the size cap, not
    /// binary); `None` for text the index never holds as it is (a
    /// byte-order mark's other encodings).
    pub fn of(relative: &str, stamp: Stamp, seen_at: SystemTime, content: &[u8]) -> Option<Self> {
        (!is_transcoded(content)).then(|| Self {
            relative: relative.to_string(),
            stamp,
            seen_at,
            hash: ContentHash::of(content),
        })
    }
}

/// One project's model; dropping it stops a build in progress.
pub struct TreeModel {
    shared: Arc<Shared>,
    /// Whether [`TreeModel::start`] has run (or there is nothing to build).
    started: AtomicBool,
}

struct Shared {
    gate: PathGate,
    limit_bytes: usize,
    /// Whether the change feed may use the OS's notifications.
    change_notifications: bool,
    state: Mutex<State>,
    /// Signalled when a call leaves files for the background indexing,
    /// when changes are queued (and when the model is dropped).
    unread: Condvar,
    /// The change feed holds changes no one has applied yet: the
    /// background applies them when no call does.
    changes_queued: AtomicBool,
    cancelled: AtomicBool,
    /// The build thread has not finished: contents are still being indexed.
    building: AtomicBool,
    /// Tool calls in progress: the build pauses while there are any.
    calls: AtomicUsize,
    /// Tool calls started so far: tells one long call from calls that
    /// keep coming (see [`pacer::Pacer`]).
    calls_started: AtomicUsize,
    /// The build is serving a committed index from disk: calls wait for
    /// it (a while) rather than scan, and the build does not pause.
    restoring: AtomicBool,
    /// Signalled when the state leaves [`State::Building`].
    left_building: Condvar,
    /// Where the index is kept between sessions, and the disk budget of
    /// all roots' folders in bytes; unset: in memory only.
    cache: OnceLock<(RootCache, u64)>,
    /// The cache was given up for this session (over the disk budget, a
    /// write failed, or the scrub found a segment wrong): the index stays
    /// in memory.
    cache_given_up: AtomicBool,
    /// Idle time between two scrubs of the index (`scrub.rs`).
    scrub_every: std::time::Duration,
    /// The heap mapped segments may take for copies of their lookup
    /// tables, lists and filters, besides the model: a fifth of the limit.
    resident: Arc<segment::ResidentBudget>,
}

/// The share of `[index] max_memory_mb` that heap copies of mapped
/// segments' lookup tables, lists and filters may take besides the model
/// (1 / RESIDENT_SHARE): with the default limit (51 MB), all of a
/// u-boot-sized index's (46 MB for 38,000 files).
const RESIDENT_SHARE: usize = 5;

/// The process is ending: every model's threads stop their work (see
/// [`shut_down`]).
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);
/// Index threads in the middle of work (not waiting for any).
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// Held by an index thread while it works.
struct Busy;

impl Busy {
    fn new() -> Self {
        BUSY.fetch_add(1, Ordering::AcqRel);
        Busy
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Sets the process's allocator up for a server's threads (see
/// `os.rs`); called once at start, before any thread.
pub fn init_server_process() {
    // Nothing to report to yet (logging starts after); failing leaves the
    // allocator's defaults, which are correct, only larger.
    let _ = os::limit_allocator_arenas();
}

/// Stops the work of every model's threads before the process exits, and
/// waits for them to reach a pause, up to `within`. A process that exits
/// while its threads read and write has hung Wine's process exit (never
/// seen on Windows itself); stdin EOF still ends the server in bounded
/// time, whatever the threads are doing.
pub fn shut_down(within: std::time::Duration) {
    SHUTTING_DOWN.store(true, Ordering::Release);
    let deadline = std::time::Instant::now() + within;
    while BUSY.load(Ordering::Acquire) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// How long a call waits for an index being served from disk before it
/// walks instead: serving it takes the walk of the file list and a look at
/// every file's stamp, a fraction of what a scan reads on any tree.
const RESTORE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Shared {
    /// The model was dropped, or the process is ending: work stops.
    fn stopping(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed) || SHUTTING_DOWN.load(Ordering::Relaxed)
    }

    fn new(gate: &PathGate, limit_bytes: usize, change_notifications: bool, enabled: bool) -> Self {
        Shared {
            gate: gate.clone(),
            limit_bytes,
            change_notifications,
            state: Mutex::new(if enabled { State::Building } else { State::Off }),
            unread: Condvar::new(),
            changes_queued: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            building: AtomicBool::new(enabled),
            calls: AtomicUsize::new(0),
            calls_started: AtomicUsize::new(0),
            restoring: AtomicBool::new(false),
            left_building: Condvar::new(),
            cache: OnceLock::new(),
            cache_given_up: AtomicBool::new(false),
            scrub_every: crate::config::DEFAULT_SCRUB_EVERY,
            resident: segment::ResidentBudget::new(limit_bytes / RESIDENT_SHARE),
        }
    }
}

/// Held for the length of a tool call (see [`TreeModel::busy`]).
pub struct CallGuard(Arc<Shared>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::Relaxed);
    }
}

enum State {
    /// The file list is being walked.
    Building,
    /// The file list answers; until the build thread finishes indexing
    /// contents, every file is a candidate (the index only narrows).
    Ready(Box<Live>),
    /// Switched off, over the memory limit, or the build failed: every
    /// call walks the tree as if there were no model.
    Off,
}

impl fmt::Debug for TreeModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never waits: a call may hold the lock while this is printed.
        let state = match self.shared.state.try_lock().as_deref() {
            Ok(State::Building) => "building",
            Ok(State::Ready(_)) => "ready",
            Ok(State::Off) => "off",
            Err(_) => "busy",
        };
        f.debug_struct("TreeModel").field("state", &state).finish()
    }
}

impl Drop for TreeModel {
    fn drop(&mut self) {
        self.shared.cancelled.store(true, Ordering::Relaxed);
        self.shared.unread.notify_all();
    }
}

impl TreeModel {
    /// The model of `gate`'s root, not built yet: calls answer `None` until
    /// [`TreeModel::start`] has built it.
    pub fn new(gate: &PathGate, config: &IndexConfig) -> Self {
        let limit_bytes =
            usize::try_from(config.max_memory_mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX);
        let shared = Arc::new(Shared {
            scrub_every: config.scrub_every,
            ..Shared::new(
                gate,
                limit_bytes,
                config.change_notifications,
                config.enabled,
            )
        });
        Self {
            shared,
            started: AtomicBool::new(!config.enabled),
        }
    }

    /// Keeps the index on disk between sessions as `config` says: the
    /// build starts from the root's committed segment and writes its own.
    /// Call before [`TreeModel::start`]. A cache that cannot be used (off,
    /// no cache folder, inside the root) leaves the index in memory.
    pub fn keep_on_disk(&self, config: &IndexCacheConfig) {
        match RootCache::locate(config, self.shared.gate.root()) {
            Ok(cache) => {
                tracing::debug!("index cache: {}", cache.folder().display());
                let budget = config.max_disk_mb.saturating_mul(1024 * 1024);
                let _ = self.shared.cache.set((cache, budget));
            }
            Err(error) => tracing::debug!("index cache not used: {error}"),
        }
    }

    /// Starts the build on a low-priority thread, once; later calls do
    /// nothing. The server starts it when the session is up, so that the
    /// build does not compete with the handshake (or go to waste on a root
    /// the client's roots replace).
    pub fn start(&self) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        // Whether there is a committed index to serve is the build
        // thread's to find out (this runs on an async worker, and the cache
        // folder is read by no one but that thread): calls wait for it until
        // it says there is none.
        if self.shared.cache.get().is_some() {
            self.shared.restoring.store(true, Ordering::Release);
        }
        // The background that keeps the index covering the tree after the
        // build runs at the priority calls run at (its work after a branch
        // switch is what they wait for; it pauses while they run): started
        // here, as a thread inherits its creator's priority, and handed
        // the build once it is done.
        let (hand_over, built_index) = std::sync::mpsc::channel::<build::Built>();
        let background = self.shared.clone();
        let hand_over = std::thread::Builder::new()
            .name("index-background".into())
            .spawn(move || {
                if let Ok(built) = built_index.recv() {
                    keep_indexing(&background, built);
                }
            })
            .ok()
            .map(|_| hand_over);
        let building = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("index-build".into())
            .spawn(move || {
                let busy = Busy::new();
                // Serving a committed index runs as calls do: they wait
                // for it. It lowers its priority once the index serves.
                if !building.restoring.load(Ordering::Acquire) {
                    lower_priority();
                }
                let built = build(&building);
                if built.is_none() {
                    // What the build dropped on its way out goes back too.
                    return_freed_memory();
                    if let Ok(mut state) = building.state.lock() {
                        switch_off(&mut state);
                    }
                }
                building.restoring.store(false, Ordering::Release);
                building.left_building.notify_all();
                building.building.store(false, Ordering::Release);
                drop(busy);
                if let Some(built) = built {
                    let unsent = match &hand_over {
                        Some(hand_over) => hand_over.send(built).err().map(|unsent| unsent.0),
                        None => Some(built),
                    };
                    // No background thread: this one does its work.
                    if let Some(built) = unsent {
                        keep_indexing(&building, built);
                    }
                }
            });
        if spawned.is_err() {
            tracing::warn!("index: cannot start the build thread; searches scan the tree");
            self.shared.building.store(false, Ordering::Release);
            self.shared.restoring.store(false, Ordering::Release);
            if let Ok(mut state) = self.shared.state.lock() {
                *state = State::Off;
            }
        }
    }

    /// Marks a tool call in progress until the guard is dropped: the build
    /// pauses meanwhile (see [`Pacer`]).
    pub fn busy(&self) -> CallGuard {
        self.shared.calls.fetch_add(1, Ordering::Relaxed);
        self.shared.calls_started.fetch_add(1, Ordering::Relaxed);
        CallGuard(self.shared.clone())
    }

    /// A model that never answers: tools then walk, as without one.
    #[cfg(test)]
    pub fn off() -> Self {
        Self {
            shared: Arc::new(Shared::new(
                &PathGate::new(std::env::temp_dir(), &[]).expect("a gate on the temp dir"),
                0,
                false,
                false,
            )),
            started: AtomicBool::new(true),
        }
    }

    /// Whether the build has finished (ready or off).
    pub fn is_settled(&self) -> bool {
        !self.shared.building.load(Ordering::Acquire)
    }

    /// Whether the file list and the index over its contents are both built.
    pub fn is_ready(&self) -> bool {
        self.is_settled() && matches!(self.shared.state.lock().as_deref(), Ok(State::Ready(_)))
    }

    /// Files below the folder `start` that may contain a match of `query`
    /// (as [`crate::matcher::parse`] gave it), in path order, as the walker
    /// would list them, a page at a time: the first `wanted` that sort
    /// after `last` (the last of the page before); `None` when the model
    /// cannot answer and the caller must walk. A page after the first
    /// applies the changes the feed reports but sweeps for none: the call
    /// swept for its first page.
    pub fn candidates(
        &self,
        start: &ResolvedPath,
        query: &Hir,
        last: Option<&str>,
        wanted: usize,
    ) -> Option<Candidates> {
        let looker = if last.is_some() {
            Looker::LaterPage
        } else {
            Looker::Call
        };
        self.with_fresh_tree(start, looker, |live, _| {
            let query = plan::plan(query);
            let depth_of_start = depth(&start.relative);
            // Without a dead id no layer holds a version of a file waiting
            // to be read (a new one, or one of a first build).
            let may_take_back = live.tree.has_dead() && live.take_backs.pay();
            let (found, ends_list) = live.candidates(&start.relative, &query, last, wanted);
            Candidates {
                files: found
                    .into_iter()
                    .map(|found| found.candidate(depth_of_start, may_take_back))
                    .collect(),
                ends_list,
            }
        })
    }

    /// Gives back the ids of the files in `reads` whose text a layer holds
    /// (see [`ReadWhole`]); the others stay as they are.
    pub fn take_back(&self, reads: &[ReadWhole]) {
        let Ok(mut state) = self.shared.state.lock() else {
            return;
        };
        let State::Ready(live) = &mut *state else {
            return;
        };
        let taken = reads.iter().filter(|read| live.take_back(read)).count();
        live.count_lookups(reads.len());
        if taken > 0 {
            tracing::debug!(
                "index: {taken} files a call read hold the text indexed before; their ids taken back"
            );
        }
    }

    /// The first `wanted` entries below the folder `start`, down to
    /// `max_depth` levels, that `pick` accepts, in path order with sizes, as
    /// [`walk::walk`] and that filter would give them; `None` when the
    /// model cannot answer, or when the model would first need a stat of
    /// every entry (changes unknown: lost events, or no change feed at all,
    /// as on Windows and macOS) and the walker, which reads only the
    /// folders it lists and stops at `wanted`, is cheaper.
    pub fn entries(
        &self,
        start: &ResolvedPath,
        max_depth: Option<usize>,
        pick: &Pick<'_>,
    ) -> Option<Vec<Entry>> {
        self.with_fresh_tree(start, Looker::CheapCall, |live, base| {
            let depth_of_start = depth(&start.relative);
            let picked = |nodes: &mut dyn Iterator<Item = (&PathKey, &tree::Node)>| {
                nodes
                    .filter(|(key, node)| (pick.keep)(&key.0, node.kind))
                    .take(pick.wanted)
                    .map(|found| Found::of(found).entry(base, depth_of_start))
                    .collect()
            };
            match max_depth {
                Some(max) => picked(&mut live.tree.under_to_depth(&start.relative, max)),
                None => picked(&mut live.tree.under(&start.relative)),
            }
        })
    }

    /// Applies pending changes as `looker` may (see [`Looker`]), then runs
    /// `answer` on the model when it holds the folder `start`.
    fn with_fresh_tree<T>(
        &self,
        start: &ResolvedPath,
        looker: Looker,
        answer: impl FnOnce(&Live, &Path) -> T,
    ) -> Option<T> {
        // An unreadable starting folder is the walker's error to give.
        walk::ensure_readable(start).ok()?;
        let mut state = self.shared.state.lock().ok()?;
        if self.shared.restoring.load(Ordering::Acquire) {
            let waited =
                self.shared
                    .left_building
                    .wait_timeout_while(state, RESTORE_WAIT, |state| {
                        matches!(state, State::Building)
                            && self.shared.restoring.load(Ordering::Acquire)
                    });
            state = waited.ok()?.0;
        }
        let State::Ready(live) = &mut *state else {
            return None;
        };
        let root = self.shared.gate.root();
        // Lost changes or a tree that changed faster than it could be
        // followed: walk this time, and sweep at the next look.
        let changed = live.catch_up(&self.shared.gate, looker)?;
        if live.tree.has_unread() {
            // Read off this call's path, by the build thread.
            self.shared.unread.notify_one();
        }
        if changed > 0 && !live.fits(self.shared.limit_bytes) {
            tracing::info!(
                "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree from now on",
                live.bytes() / (1024 * 1024)
            );
            switch_off(&mut state);
            return None;
        }
        let expected = if start.relative == "." {
            root.to_path_buf()
        } else {
            root.join(&start.relative)
        };
        // A folder reached through a symlink, one the walker hides (an
        // explicit start inside an ignored folder), or one holding a name
        // that is not UTF-8, is walked. A walk from a folder applies the
        // ignore files from the root down, as the root walk the model holds
        // does, so the two agree on everything below it.
        if start.real != expected
            || !live.tree.is_dir(&start.relative)
            || (live.tree.has_lossy()
                && live.tree.under(&start.relative).any(|(_, node)| node.lossy))
        {
            return None;
        }
        Some(answer(live, root))
    }
}

#[cfg(test)]
mod tests {
    use super::live::ONE_PAGE_UP_TO;
    use super::testing::*;
    use super::tree::Content;
    use super::*;
    use crate::walk::{EntryKind, WalkOptions};
    use std::fs;
    use std::time::Duration;

    #[test]
    fn a_large_file_holding_every_trigram_but_not_the_word_is_no_candidate() {
        let decoy = "xhandlex the_request le_re e_r _req\n".repeat(3000);
        let (_dir, root) = crate::security::temp_root(&[
            ("decoy.txt", decoy.clone()),
            ("real.txt", decoy + "handle_request\n"),
            ("small.txt", "xhandlex the_request le_re\n".to_string()),
        ]);
        let gate = PathGate::new(root, &[]).unwrap();
        let model = ready_model(&gate);
        let query = ContentQuery::literal;
        // The trigrams admit both large files and the small one; the filters
        // rule out the large decoy.
        assert_eq!(
            candidate_names(&model, &gate, &query("handle_request")),
            ["real.txt", "small.txt"]
        );
        assert_eq!(
            candidate_names(&model, &gate, &query("the_request")),
            ["decoy.txt", "real.txt", "small.txt"]
        );
    }

    #[test]
    fn over_the_memory_limit_the_filters_go_first_and_answers_stay_exact() {
        // Seventeen files of 1.9 MB: their filters (128 KiB each) alone pass
        // a 1 MB limit that their few trigrams stay far below.
        let filler: String = (0..100_000).map(|n| format!("{n} filler line\n")).collect();
        let names: Vec<String> = (0..16).map(|i| format!("filler{i}.txt")).collect();
        let mut files: Vec<(&str, &str)> = names
            .iter()
            .map(|n| (n.as_str(), filler.as_str()))
            .collect();
        let decoy = "xhandlex the_request le_re e_r _req\n".repeat(52_000);
        files.extend([
            ("decoy.txt", decoy.as_str()),
            ("real.txt", "handle_request\n"),
        ]);
        let (_dir, root) = crate::security::temp_root(&files);
        let gate = PathGate::new(root, &[]).unwrap();
        let query = ContentQuery {
            pattern: "handle_request",
            regex: false,
            case_insensitive: false,
        };
        let roomy = ready_model(&gate);
        assert_eq!(candidate_names(&roomy, &gate, &query), ["real.txt"]);
        let tight = ready_model_within(
            &gate,
            &IndexConfig {
                enabled: true,
                max_memory_mb: 1,
                ..IndexConfig::default()
            },
        );
        // Without filters the decoy is a candidate again; the searcher
        // rejects it, so the answer is the same.
        assert_eq!(
            candidate_names(&tight, &gate, &query),
            ["decoy.txt", "real.txt"]
        );
    }

    #[test]
    fn files_with_a_byte_order_mark_are_indexed_when_utf8_throughout() {
        let dir = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(dir.path()).unwrap();
        fs::write(root.join("marked.txt"), "\u{FEFF}alpha_bravo_charlie\n").unwrap();
        // Not UTF-8 past the binary sniff: the searcher's transcoding
        // changes its bytes, so it stays a candidate for everything.
        let mut odd = b"\xEF\xBB\xBF".to_vec();
        odd.extend(b"x".repeat(crate::corpus::searchable::SNIFF_BYTES + 10));
        odd.extend(b"\xFF delta_echo\n");
        fs::write(root.join("odd.txt"), odd).unwrap();
        fs::write(root.join("plain.txt"), "zulu_yankee\n").unwrap();
        let gate = PathGate::new(root, &[]).unwrap();
        let model = ready_model(&gate);
        for (pattern, expected) in [
            ("alpha_bravo_charlie", vec!["marked.txt", "odd.txt"]),
            ("zulu_yankee", vec!["odd.txt", "plain.txt"]),
            ("delta_echo", vec!["odd.txt"]),
        ] {
            let query = ContentQuery::literal(pattern);
            assert_eq!(
                candidate_names(&model, &gate, &query),
                expected,
                "{pattern}"
            );
            for found in true_matches(&gate, &query) {
                assert!(
                    expected.contains(&found.as_str()),
                    "{pattern} misses {found}"
                );
            }
        }
    }

    #[test]
    fn candidates_hold_every_match_in_path_order() {
        // Every file open is a round trip to Wine's server in Windows' run.
        let files = if cfg!(windows) { 80 } else { 400 };
        let (_dir, gate) = generated_tree(files, 7);
        let model = ready_model(&gate);
        let all = walked_files(&gate);
        let mut rng = Lcg(11);
        let mut patterns: Vec<(String, bool)> = Vec::new();
        for word in WORDS {
            let chars: Vec<char> = word.chars().collect();
            let from = rng.next() % chars.len();
            let to = from + 1 + rng.next() % (chars.len() - from);
            patterns.push((chars[from..to].iter().collect(), false));
            patterns.push((word.to_string(), false));
        }
        for regex in [
            r"fn \w+",
            r"foo_?bar",
            r"(needle|zebra) \d",
            r"[kK]elvin",
            r"cla[sſ]s",
            r"^apply",
            r"quux$",
            r"a\.b",
            r"hay(stack)?",
            r"x{2,}",
            r"\bdiscount\b",
            r"(?i)NEEDLE",
            r"[^a]pply",
            r"naïve|ÄÖÜ",
            r".",
            r"\w+",
            r"n.e.d.e",
        ] {
            patterns.push((regex.to_string(), true));
        }
        for (pattern, regex) in &patterns {
            for case_insensitive in [false, true] {
                let query = ContentQuery {
                    pattern,
                    regex: *regex,
                    case_insensitive,
                };
                let candidates = candidate_names(&model, &gate, &query);
                let mut sorted = candidates.clone();
                sorted.sort_by(|a, b| walk::path_order(a, b));
                assert_eq!(candidates, sorted, "{query:?}");
                for found in true_matches(&gate, &query) {
                    assert!(candidates.contains(&found), "{query:?} misses {found}");
                }
                assert!(candidates.iter().all(|c| all.contains(c)), "{query:?}");
            }
        }
        // The index narrows: a word in no file has no text candidates.
        let absent = ContentQuery {
            pattern: "nowhere_to_be_found",
            regex: false,
            case_insensitive: false,
        };
        assert!(candidate_names(&model, &gate, &absent).is_empty());
        let kelvin = ContentQuery {
            pattern: "kelvin",
            regex: false,
            case_insensitive: true,
        };
        let found = candidate_names(&model, &gate, &kelvin);
        assert!(found.len() < all.len());
        assert_eq!(found, true_matches(&gate, &kelvin));
    }

    /// The names of `query`'s candidates below `start`, asked for `page`
    /// at a time, and how many pages that took.
    fn paged_candidates(
        model: &TreeModel,
        start: &ResolvedPath,
        query: &ContentQuery<'_>,
        page: usize,
    ) -> (Vec<String>, usize) {
        let mut names: Vec<String> = Vec::new();
        for pages in 1.. {
            let last = names.last().cloned();
            let answer = model
                .candidates(start, &query.hir(), last.as_deref(), page)
                .unwrap();
            names.extend(answer.names());
            if answer.ends_list {
                return (names, pages);
            }
            assert!(answer.files.len() >= page, "a cut page is full");
        }
        unreachable!()
    }

    #[test]
    fn candidates_come_a_page_at_a_time_as_one_list() {
        // More files than a page lists whatever it is asked for.
        let count = 4 * ONE_PAGE_UP_TO / 3 + 100;
        let files: Vec<(String, String)> = (0..count)
            .map(|i| {
                let word = if i % 4 == 0 { "other" } else { "needle" };
                (format!("d{}/f{i}.txt", i % 5), format!("{word} {i}\n"))
            })
            .collect();
        let (_dir, root) = crate::security::temp_root(&files);
        if cfg!(unix) {
            // Other names of one file, before and among the rest: every
            // layer's list is then read whole for each page.
            for name in ["a/first.txt", "d3/link.txt"] {
                fs::create_dir_all(root.join(name).parent().unwrap()).unwrap();
                fs::hard_link(root.join("d1/f1.txt"), root.join(name)).unwrap();
            }
        }
        let gate = PathGate::new(root.clone(), &[]).unwrap();
        let model = ready_model(&gate);
        let queries = [
            ContentQuery::literal("needle"),
            ContentQuery::literal("other"),
            ContentQuery {
                pattern: r"NEEDLE \d+",
                regex: true,
                case_insensitive: true,
            },
            ContentQuery {
                pattern: ".",
                regex: true,
                case_insensitive: false,
            },
        ];
        if cfg!(unix) {
            // A name made after the build, sorting before the others.
            fs::hard_link(root.join("d4/f9.txt"), root.join("a/early.txt")).unwrap();
            let needle = ContentQuery::literal("needle");
            std::thread::sleep(Duration::from_millis(250));
            until(|| {
                candidate_names(&model, &gate, &needle).contains(&"a/early.txt".to_string())
                    && model.is_settled()
            });
        }
        for folder in [".", "d1"] {
            let start = gate.resolve(folder).unwrap();
            for query in &queries {
                let whole = model
                    .candidates(&start, &query.hir(), None, usize::MAX)
                    .unwrap();
                assert!(whole.ends_list);
                let whole = whole.names();
                for page in [3, 40] {
                    let (paged, pages) = paged_candidates(&model, &start, query, page);
                    assert_eq!(paged, whole, "{folder} {query:?} by {page}");
                    // `other`'s lists name few files: listed at once, loose files aside.
                    if query.pattern != "other" {
                        assert_eq!(
                            pages > 1,
                            whole.len() > page,
                            "{folder} {query:?} by {page}"
                        );
                    }
                }
            }
        }
        // Pages over files changed, made and removed since the build, not
        // read again yet, hold every match in path order.
        for i in (0..count).step_by(97) {
            let name = format!("d{}/f{i}.txt", i % 5);
            if i % 2 == 0 {
                fs::write(root.join(&name), format!("other again {i}\n")).unwrap();
            } else {
                fs::remove_file(root.join(&name)).unwrap();
            }
            fs::write(root.join(format!("d{}/new{i}.txt", i % 5)), "needle anew\n").unwrap();
        }
        let start = gate.resolve(".").unwrap();
        let walked = walked_files(&gate);
        for query in &queries {
            let (paged, _) = paged_candidates(&model, &start, query, 7);
            assert!(
                paged
                    .windows(2)
                    .all(|pair| walk::path_order(&pair[0], &pair[1]).is_lt()),
                "{query:?}"
            );
            for found in true_matches(&gate, query) {
                assert!(paged.contains(&found), "{query:?} misses {found}");
            }
            assert!(paged.iter().all(|name| walked.contains(name)), "{query:?}");
        }
    }

    #[test]
    fn a_later_page_follows_no_change_that_only_a_sweep_would_find() {
        // Without a change feed, a call's first page sweeps: its later pages
        // answer from what that sweep found, as one list would have.
        let files: Vec<(String, String)> = (0..100)
            .map(|i| (format!("f{i:03}.txt"), format!("needle {i}\n")))
            .collect();
        let (_dir, root) = crate::security::temp_root(&files);
        let gate = PathGate::new(root.clone(), &[]).unwrap();
        let config = IndexConfig {
            change_notifications: false,
            ..IndexConfig::default()
        };
        let model = ready_model_within(&gate, &config);
        let start = gate.resolve(".").unwrap();
        let needle = ContentQuery::literal("needle").hir();
        let first = model.candidates(&start, &needle, None, 10).unwrap();
        assert_eq!(first.files.len(), 10);
        assert!(!first.ends_list);
        fs::write(root.join("f050a.txt"), "needle new\n").unwrap();
        let last = first.files.last().map(|file| file.relative().to_string());
        let later = model
            .candidates(&start, &needle, last.as_deref(), usize::MAX)
            .unwrap();
        assert_eq!(later.files.len(), 90);
        assert!(!later.names().contains(&"f050a.txt".to_string()));
        // The next call sweeps, and finds it.
        let next = model.candidates(&start, &needle, None, usize::MAX).unwrap();
        assert!(next.names().contains(&"f050a.txt".to_string()));
    }

    #[test]
    fn an_index_kept_on_disk_in_several_segments_answers_as_the_one_in_memory() {
        // A build's run of parts becomes a layer at `FULL_BYTES` (16 KiB in
        // tests): about 180 of these files. Fewer on Windows, where every
        // query's walk is slow, but enough for two runs or more.
        let (_dir, gate) = generated_tree(if cfg!(windows) { 240 } else { 400 }, 5);
        let cache_dir = tempfile::tempdir().unwrap();
        let config = IndexCacheConfig {
            cache_dir: Some(cache_dir.path().to_path_buf()),
            ..IndexCacheConfig::default()
        };
        let on_disk = |config: &IndexCacheConfig| {
            std::thread::sleep(Duration::from_millis(250));
            let model = TreeModel::new(&gate, &IndexConfig::default());
            model.keep_on_disk(config);
            model.start();
            wait_until_settled(&model);
            assert!(model.is_ready());
            model
        };
        let written = on_disk(&config);
        let cache = RootCache::locate(&config, gate.root()).unwrap();
        let segments = cache.committed().unwrap();
        assert!(segments.len() > 1, "one segment: {segments:?}");
        // The next session maps them as they are: nothing changed.
        let restored = on_disk(&config);
        assert_eq!(cache.committed().unwrap(), segments);
        let in_memory = ready_model(&gate);
        let mut patterns: Vec<(&str, bool)> = WORDS.iter().map(|word| (*word, false)).collect();
        patterns.extend([
            (r"fn \w+", true),
            (r"(needle|zebra) \d", true),
            (r"\w+", true),
        ]);
        for (pattern, regex) in patterns {
            for case_insensitive in [false, true] {
                let query = ContentQuery {
                    pattern,
                    regex,
                    case_insensitive,
                };
                let expected = candidate_names(&in_memory, &gate, &query);
                assert_eq!(
                    candidate_names(&written, &gate, &query),
                    expected,
                    "{query:?}"
                );
                assert_eq!(
                    candidate_names(&restored, &gate, &query),
                    expected,
                    "{query:?}"
                );
                for found in true_matches(&gate, &query) {
                    assert!(expected.contains(&found), "{query:?} misses {found}");
                }
            }
        }
    }

    /// A generated tree (2,000 files; 80 on Windows, where walks are slow)
    /// whose index a first session committed to the returned cache folder.
    fn tree_with_a_committed_index() -> (
        tempfile::TempDir,
        PathGate,
        tempfile::TempDir,
        IndexCacheConfig,
    ) {
        let (dir, gate) = generated_tree(if cfg!(windows) { 80 } else { 2000 }, 9);
        let cache_dir = tempfile::tempdir().unwrap();
        let config = IndexCacheConfig {
            cache_dir: Some(cache_dir.path().to_path_buf()),
            ..IndexCacheConfig::default()
        };
        std::thread::sleep(Duration::from_millis(250));
        let first = TreeModel::new(&gate, &IndexConfig::default());
        first.keep_on_disk(&config);
        first.start();
        wait_until_settled(&first);
        (dir, gate, cache_dir, config)
    }

    #[test]
    fn a_call_during_the_restore_of_a_committed_index_waits_for_it() {
        let (_dir, gate, _cache_dir, config) = tree_with_a_committed_index();
        let second = TreeModel::new(&gate, &IndexConfig::default());
        second.keep_on_disk(&config);
        second.start();
        // Walking 2,000 entries takes far longer than this step.
        assert!(format!("{second:?}").contains("building"), "{second:?}");
        let query = ContentQuery::literal("needle");
        let start = gate.resolve(".").unwrap();
        let answer = second.candidates(&start, &query.hir(), None, usize::MAX);
        assert!(answer.is_some(), "the call walked instead of waiting");
        let found = answer.unwrap().names();
        for path in true_matches(&gate, &query) {
            assert!(found.contains(&path), "misses {path}");
        }
    }

    #[test]
    fn a_restored_index_holds_its_mapped_layers_sections_on_the_heap_once_idle() {
        let (_dir, gate, _cache_dir, config) = tree_with_a_committed_index();
        let second = TreeModel::new(&gate, &IndexConfig::default());
        second.keep_on_disk(&config);
        second.start();
        wait_until_settled(&second);
        // (mapped layers, those whose every section was copied)
        let copied = || {
            let state = second.shared.state.lock().unwrap();
            let State::Ready(live) = &*state else {
                panic!("the restored model is not ready");
            };
            let mapped: Vec<&base::Layer> = live
                .base
                .layers()
                .iter()
                .filter(|layer| !layer.segment.on_heap())
                .collect();
            let copied = mapped
                .iter()
                .filter(|layer| {
                    let segment = &layer.segment;
                    segment.resident_bytes() > 0
                        && segment::RESIDENT_SECTIONS
                            .iter()
                            .all(|&section| !segment.resident_untried(section))
                })
                .count();
            (mapped.len(), copied)
        };
        until(|| {
            let (mapped, copied) = copied();
            mapped > 0 && copied == mapped
        });
        let query = ContentQuery::literal("needle");
        let found = candidate_names(&second, &gate, &query);
        let expected = true_matches(&gate, &query);
        assert!(!expected.is_empty());
        for path in expected {
            assert!(found.contains(&path), "misses {path}");
        }
    }

    #[test]
    fn a_call_does_not_wait_for_the_restore_of_an_index_whose_files_mostly_changed() {
        let (_dir, gate, _cache_dir, config) = tree_with_a_committed_index();
        // Every file's stamp moves, its text kept (as after a `chmod -R`).
        let earlier = std::time::SystemTime::now() - Duration::from_secs(3600);
        let entries = walk::walk(
            &gate,
            &gate.resolve(".").unwrap(),
            None,
            &WalkOptions::default(),
        );
        let mut files = 0;
        for entry in entries.unwrap() {
            if entry.kind == EntryKind::File {
                let path = gate.root().join(&entry.relative);
                let file = fs::File::options().write(true).open(path).unwrap();
                file.set_modified(earlier).unwrap();
                files += 1;
            }
        }
        assert!(files >= 80, "{files}");
        let second = TreeModel::new(&gate, &IndexConfig::default());
        second.keep_on_disk(&config);
        second.start();
        assert!(format!("{second:?}").contains("building"), "{second:?}");
        let query = ContentQuery::literal("needle");
        let start = gate.resolve(".").unwrap();
        assert!(
            second
                .candidates(&start, &query.hir(), None, usize::MAX)
                .is_none(),
            "the call waited for the restore instead of walking"
        );
        wait_until_settled(&second);
        let answer = second.candidates(&start, &query.hir(), None, usize::MAX);
        let found = answer.unwrap().names();
        for path in true_matches(&gate, &query) {
            assert!(found.contains(&path), "misses {path}");
        }
        // The files left listed are read by the background, in path order:
        // none is left to scan.
        until(|| {
            let state = second.shared.state.lock().unwrap();
            let State::Ready(live) = &*state else {
                panic!("the model is ready");
            };
            !live.tree.has_listed() && live.tree.is_covered()
        });
        let state = second.shared.state.lock().unwrap();
        let State::Ready(live) = &*state else {
            panic!("the model is ready");
        };
        assert_eq!(live.tree.loose_count(), 0);
    }

    #[test]
    fn files_too_new_to_trust_at_build_time_are_indexed_by_the_background_without_a_call() {
        let (_dir, root) = crate::security::temp_root(&[
            ("new.txt", "fresh_word\n".to_string()),
            ("old.txt", "stale_word\n".to_string()),
        ]);
        // A stamp in the future cannot be trusted until a tick after it
        // was first seen, as a write within a tick of the build.
        let ahead = std::time::SystemTime::now() + Duration::from_secs(3600);
        let file = fs::File::options()
            .write(true)
            .open(root.join("new.txt"))
            .unwrap();
        file.set_modified(ahead).unwrap();
        std::thread::sleep(Duration::from_millis(250));
        let gate = PathGate::new(root, &[]).unwrap();
        let model = TreeModel::new(&gate, &IndexConfig::default());
        model.start();
        wait_until_settled(&model);
        // No call is made: the settle timer alone reads the file.
        until(|| {
            let state = model.shared.state.lock().unwrap();
            let State::Ready(live) = &*state else {
                panic!("the model is ready");
            };
            live.tree.is_covered()
                && live
                    .tree
                    .get("new.txt")
                    .is_some_and(|(_, node)| matches!(node.content, Content::Base(_)))
        });
        let query = ContentQuery::literal;
        assert_eq!(
            candidate_names(&model, &gate, &query("fresh_word")),
            ["new.txt"]
        );
        assert!(candidate_names(&model, &gate, &query("stale_word")) == ["old.txt"]);
    }

    // Elsewhere there is no change feed to follow: calls re-check the tree.
    #[cfg(target_os = "linux")]
    #[test]
    fn changes_made_while_no_call_runs_are_indexed_as_they_come() {
        let (_dir, gate) = generated_tree(40, 21);
        let model = ready_model(&gate);
        fs::write(gate.root().join("later.txt"), "later_word\n").unwrap();
        fs::write(gate.root().join("d0/e0/f0.txt"), "edited_word\n").unwrap();
        // No call is made: the change feed wakes the background, which
        // applies the changes and reads both files.
        until(|| {
            let state = model.shared.state.lock().unwrap();
            let State::Ready(live) = &*state else {
                panic!("the model is ready");
            };
            let indexed = |relative| {
                live.tree
                    .get(relative)
                    .is_some_and(|(_, node)| matches!(node.content, Content::Base(_)))
            };
            indexed("later.txt") && indexed("d0/e0/f0.txt") && !live.tree.has_unread()
        });
        let query = ContentQuery::literal;
        assert_eq!(
            candidate_names(&model, &gate, &query("later_word")),
            ["later.txt"]
        );
        assert_eq!(
            candidate_names(&model, &gate, &query("edited_word")),
            ["d0/e0/f0.txt"]
        );
    }

    /// What file `relative` holds in the model, once the background has
    /// nothing left to read.
    fn settled_content(model: &TreeModel, relative: &str) -> String {
        let mut found = String::new();
        until(|| {
            let state = model.shared.state.lock().unwrap();
            let State::Ready(live) = &*state else {
                panic!("the model is ready");
            };
            found = live
                .tree
                .get(relative)
                .map_or("none".into(), |(_, node)| format!("{:?}", node.content));
            !live.tree.has_unread() && found.starts_with("Base")
        });
        found
    }

    #[test]
    fn a_file_rewritten_with_the_same_text_takes_its_id_back_unread() {
        let (_dir, gate) = generated_tree(60, 13);
        let model = ready_model(&gate);
        let path = gate.root().join("d0/e0/f0.txt");
        let before = settled_content(&model, "d0/e0/f0.txt");
        let text = fs::read(&path).unwrap();
        let query = ContentQuery::literal("needle");
        let start = gate.resolve(".").unwrap();
        // A new stamp, the same text: a call sees the change, the
        // background compares hashes and gives the old id back.
        fs::remove_file(&path).unwrap();
        fs::write(&path, &text).unwrap();
        std::thread::sleep(Duration::from_millis(250));
        assert!(
            model
                .candidates(&start, &query.hir(), None, usize::MAX)
                .is_some()
        );
        assert_eq!(settled_content(&model, "d0/e0/f0.txt"), before);
        // Other text: a new id in a new layer.
        fs::write(&path, b"another_text entirely\n").unwrap();
        std::thread::sleep(Duration::from_millis(250));
        assert!(
            model
                .candidates(&start, &query.hir(), None, usize::MAX)
                .is_some()
        );
        assert_ne!(settled_content(&model, "d0/e0/f0.txt"), before);
        assert_eq!(
            candidate_names(&model, &gate, &ContentQuery::literal("another_text")),
            ["d0/e0/f0.txt"]
        );
        assert_base_names_agree(&model);
    }

    #[test]
    fn a_file_taken_back_under_a_new_inode_is_listed_as_it_is_now() {
        let (_dir, gate) = generated_tree(60, 13);
        let relative = "d0/e0/f0.txt";
        let path = gate.root().join(relative);
        fs::write(&path, "taken_back_word\n").unwrap();
        let model = ready_model(&gate);
        let before = settled_content(&model, relative);
        // As a checkout writes a file: the same text in a new file renamed
        // over the old one, so a new inode under the name.
        let fresh = gate.root().join("d0/e0/f0.txt.new");
        fs::write(&fresh, "taken_back_word\n").unwrap();
        fs::rename(&fresh, &path).unwrap();
        std::thread::sleep(Duration::from_millis(250));
        let start = gate.resolve(".").unwrap();
        let query = ContentQuery::literal("taken_back_word");
        assert!(
            model
                .candidates(&start, &query.hir(), None, usize::MAX)
                .is_some()
        );
        assert_eq!(
            settled_content(&model, relative),
            before,
            "its id taken back"
        );
        let candidates = model
            .candidates(&start, &query.hir(), None, usize::MAX)
            .unwrap()
            .files;
        let [entry] = candidates.as_slice() else {
            panic!("one candidate, got {candidates:?}");
        };
        assert_eq!(entry.relative(), relative);
        // The search opens only the inode listed: the new one.
        assert!(
            entry.entry(gate.root()).open(&gate).is_ok(),
            "{entry:?} opens"
        );
    }

    /// The model's listing of everything below `start`: `None` only
    /// without a change feed (every platform but Linux), where a listing
    /// would need a stat sweep and the model leaves it to the walk.
    fn listed_by_the_model(model: &TreeModel, start: &ResolvedPath) -> Option<Vec<Entry>> {
        let listed = model.entries(start, None, &Pick::ALL);
        assert!(listed.is_some() || cfg!(not(target_os = "linux")));
        listed
    }

    #[test]
    fn changes_are_seen_by_the_next_call() {
        let (_dir, gate) = generated_tree(50, 3);
        let model = ready_model(&gate);
        let root = gate.root().to_path_buf();
        let query = ContentQuery {
            pattern: "brand_new_word",
            regex: false,
            case_insensitive: false,
        };
        let names = || candidate_names(&model, &gate, &query);
        assert!(names().is_empty());

        // Same size, same second: a rewrite of an indexed file.
        let target = root.join("d0/e0/f0.txt");
        let old = fs::read(&target).unwrap();
        let mut text = b"brand_new_word\n".to_vec();
        text.resize(old.len().max(text.len()), b' ');
        fs::write(&target, &text).unwrap();
        assert!(names().contains(&"d0/e0/f0.txt".to_string()));

        // A binary file (never a candidate) rewritten as text.
        fs::write(root.join("bin.dat"), "brand_new_word\n").unwrap();
        assert!(names().contains(&"bin.dat".to_string()));

        fs::write(root.join("d1/new.txt"), "brand_new_word").unwrap();
        fs::create_dir_all(root.join("fresh/deep")).unwrap();
        fs::write(root.join("fresh/deep/x.txt"), "brand_new_word").unwrap();
        let found = names();
        assert!(found.contains(&"d1/new.txt".to_string()));
        assert!(found.contains(&"fresh/deep/x.txt".to_string()));

        fs::rename(root.join("fresh"), root.join("moved")).unwrap();
        fs::remove_file(root.join("d1/new.txt")).unwrap();
        let found = names();
        assert!(
            !found
                .iter()
                .any(|f| f.starts_with("fresh/") || f == "d1/new.txt")
        );
        assert!(found.contains(&"moved/deep/x.txt".to_string()));

        fs::write(root.join(".gitignore"), "moved/\n").unwrap();
        assert!(!names().iter().any(|f| f.starts_with("moved/")));
        fs::write(root.join(".gitignore"), "").unwrap();
        fs::write(root.join("ignored/x.txt"), "brand_new_word").unwrap();
        assert!(names().contains(&"ignored/x.txt".to_string()));

        // find/list see the same tree.
        let start = gate.resolve(".").unwrap();
        if let Some(listed) = listed_by_the_model(&model, &start) {
            let listed: Vec<String> = listed.into_iter().map(|e| e.relative).collect();
            assert_eq!(listed, walked_paths(&gate));
        }
        assert_base_names_agree(&model);
    }

    /// Every name the index gives a file without looking at the file list
    /// stands for a file that holds that id, and only such names.
    fn assert_base_names_agree(model: &TreeModel) {
        let state = model.shared.state.lock().unwrap();
        let State::Ready(live) = &*state else {
            panic!("the model is ready");
        };
        for layer in live.base.layers() {
            for id in layer.ids() {
                let name = layer.segment.file(id - layer.first_id).unwrap().name;
                let holds = live.tree.get(name).is_some_and(
                    |(_, node)| matches!(node.content, Content::Base(now) if now == id),
                );
                assert_eq!(!live.tree.is_dead(id), holds, "{name}");
            }
        }
        for (id, name) in live.base.other_names() {
            let holds = live.tree.get(&name.key.0).is_some_and(
                |(_, node)| matches!(node.content, Content::Linked(now) if now == *id),
            );
            assert_eq!(live.tree.holds_linked(&name.key.0), holds, "{}", name.key.0);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_file_with_several_names_is_read_once_and_every_name_stays_fresh() {
        let (_dir, root) = crate::security::temp_root(&[
            ("a/one.txt", "shared_word\n".to_string()),
            ("z/solo.txt", "solo_word\n".to_string()),
        ]);
        fs::create_dir_all(root.join("m")).unwrap();
        fs::hard_link(root.join("a/one.txt"), root.join("m/two.txt")).unwrap();
        fs::hard_link(root.join("a/one.txt"), root.join("z/three.txt")).unwrap();
        let gate = PathGate::new(root.clone(), &[]).unwrap();
        let model = ready_model(&gate);
        {
            let state = model.shared.state.lock().unwrap();
            let State::Ready(live) = &*state else {
                panic!("the model is ready");
            };
            let first_names: Vec<&str> = live
                .base
                .layers()
                .iter()
                .flat_map(|layer| {
                    (0..layer.segment.file_count())
                        .map(|local| layer.segment.file(local).unwrap().name)
                })
                .collect();
            assert_eq!(first_names, ["a/one.txt", "z/solo.txt"]);
            let other_names: Vec<(u32, &str)> = live
                .base
                .other_names()
                .iter()
                .map(|(id, n)| (*id, n.key.0.as_str()))
                .collect();
            assert_eq!(other_names, [(0, "m/two.txt"), (0, "z/three.txt")]);
        }
        let names = |pattern| {
            let query = ContentQuery {
                pattern,
                regex: false,
                case_insensitive: false,
            };
            candidate_names(&model, &gate, &query)
        };
        assert_eq!(
            names("shared_word"),
            ["a/one.txt", "m/two.txt", "z/three.txt"]
        );
        assert_eq!(names("solo_word"), ["z/solo.txt"]);

        // A write through one name changes what every name holds; the
        // watcher reports only the name written through.
        fs::write(root.join("m/two.txt"), "rewritten_word\n").unwrap();
        assert_eq!(
            names("rewritten_word"),
            ["a/one.txt", "m/two.txt", "z/three.txt"]
        );
        // Once the new stamps can be trusted and the background indexing
        // has read the file, the old words are gone.
        std::thread::sleep(Duration::from_millis(250));
        until(|| names("shared_word").is_empty());

        // A name made after the build, written through at once.
        fs::hard_link(root.join("z/solo.txt"), root.join("a/late.txt")).unwrap();
        fs::write(root.join("a/late.txt"), "late_word\n").unwrap();
        assert_eq!(names("late_word"), ["a/late.txt", "z/solo.txt"]);
        std::thread::sleep(Duration::from_millis(250));
        until(|| names("solo_word").is_empty());
        assert_base_names_agree(&model);
    }

    #[test]
    fn whitelist_rules_keep_the_root_walk_s_answer() {
        let (_dir, gate) = generated_tree(20, 2);
        let root = gate.root().to_path_buf();
        fs::write(root.join(".gitignore"), "ignored/\n*.log\n").unwrap();
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::write(root.join("sub/.gitignore"), "!keep.log\n").unwrap();
        fs::write(root.join("sub/keep.log"), "needle").unwrap();
        fs::write(root.join("sub/drop.log"), "needle").unwrap();
        let model = ready_model(&gate);
        let query = ContentQuery {
            pattern: "needle",
            regex: false,
            case_insensitive: false,
        };
        let found = candidate_names(&model, &gate, &query);
        assert!(found.contains(&"sub/keep.log".to_string()));
        let walked = walked_files(&gate);
        assert!(found.iter().all(|f| walked.contains(f)));
        // A walk from `sub` applies the rules from the root down, as the
        // model does: the model answers for it, the same.
        let from_sub: Vec<String> = model
            .candidates(
                &gate.resolve("sub").unwrap(),
                &query.hir(),
                None,
                usize::MAX,
            )
            .unwrap()
            .names();
        assert_eq!(from_sub, vec!["sub/keep.log".to_string()]);
        // Changes in `sub` are followed as the root walk sees them.
        fs::write(root.join("sub/new.txt"), "needle").unwrap();
        fs::create_dir_all(root.join("sub/deeper/deepest")).unwrap();
        fs::write(root.join("sub/deeper/keep.log"), "needle").unwrap();
        fs::write(root.join("sub/deeper/.gitignore"), "keep.log\n!*.log\n").unwrap();
        fs::write(root.join("sub/deeper/deepest/other.log"), "needle").unwrap();
        fs::write(root.join("sub/deeper/deepest/keep.log"), "needle").unwrap();
        let found = candidate_names(&model, &gate, &query);
        for expected in ["sub/keep.log", "sub/new.txt"] {
            assert!(
                found.contains(&expected.to_string()),
                "{expected}: {found:?}"
            );
        }
        let start = gate.resolve(".").unwrap();
        if let Some(listed) = listed_by_the_model(&model, &start) {
            let listed: Vec<String> = listed
                .into_iter()
                .filter(|e| e.kind == EntryKind::File)
                .map(|e| e.relative)
                .collect();
            assert_eq!(listed, walked_files(&gate));
        }
        // From every folder, to every depth, the model lists what a walk
        // from that folder finds.
        let names = |entries: Vec<Entry>| -> Vec<String> {
            entries.into_iter().map(|e| e.relative).collect()
        };
        for folder in [".", "sub", "sub/deeper", "sub/deeper/deepest", "d1"] {
            let start = gate.resolve(folder).unwrap();
            for max_depth in [Some(1), Some(2), None] {
                let walked = walk::walk(&gate, &start, max_depth, &WalkOptions::default());
                // Without a change feed (every platform but Linux) a
                // listing would need a stat sweep, which the model leaves to
                // the walk: it answers None.
                let answered = match model.entries(&start, max_depth, &Pick::ALL) {
                    Some(answered) => answered,
                    None if cfg!(not(target_os = "linux")) => continue,
                    None => panic!("the model did not list {folder} {max_depth:?}"),
                };
                assert_eq!(
                    names(answered),
                    names(walked.unwrap()),
                    "{folder} {max_depth:?}"
                );
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_with_a_name_that_is_not_utf8_is_walked() {
        use std::os::unix::ffi::OsStrExt;
        let (_dir, gate) = generated_tree(20, 1);
        let odd = gate
            .root()
            .join("d1")
            .join(std::ffi::OsStr::from_bytes(b"odd\xff.txt"));
        fs::write(odd, "needle").unwrap();
        let model = ready_model(&gate);
        let query = ContentQuery {
            pattern: "needle",
            regex: false,
            case_insensitive: false,
        };
        assert!(
            model
                .candidates(&gate.resolve(".").unwrap(), &query.hir(), None, usize::MAX)
                .is_none()
        );
        assert!(
            model
                .candidates(&gate.resolve("d1").unwrap(), &query.hir(), None, usize::MAX)
                .is_none()
        );
        assert!(
            model
                .candidates(&gate.resolve("d2").unwrap(), &query.hir(), None, usize::MAX)
                .is_some()
        );
    }

    #[test]
    fn a_tiny_memory_limit_or_enabled_false_switches_the_model_off() {
        let dir = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(dir.path()).unwrap();
        let mut rng = Lcg(9);
        for i in 0..300 {
            let text: String = (0..4000)
                .map(|_| char::from(b'a' + (rng.next() % 26) as u8))
                .collect();
            fs::write(root.join(format!("f{i}.txt")), text).unwrap();
        }
        let gate = PathGate::new(root, &[]).unwrap();
        std::thread::sleep(Duration::from_millis(250));
        let start = gate.resolve(".").unwrap();
        for config in [
            IndexConfig {
                enabled: true,
                max_memory_mb: 1,
                ..IndexConfig::default()
            },
            IndexConfig {
                enabled: false,
                max_memory_mb: 256,
                ..IndexConfig::default()
            },
        ] {
            let model = TreeModel::new(&gate, &config);
            model.start();
            wait_until_settled(&model);
            assert!(!model.is_ready(), "{config:?}");
            assert!(model.entries(&start, None, &Pick::ALL).is_none());
        }
    }
}
