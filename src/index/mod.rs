//! The live model of the project tree: the walker's file list plus a
//! trigram index over the files' contents, built in the background when the
//! project opens and brought up to date at the start of every call.
//!
//! Tools see two narrow calls. [`TreeModel::candidates`] answers "which
//! files under this folder may contain this query": a superset of the files
//! that match (the searcher verifies each), in path order, or `None` when
//! the model cannot answer (not built yet, switched off, over its memory
//! limit, or a folder the model does not hold) and the caller walks as
//! before. [`TreeModel::entries`] answers from the file list what the
//! walker would. Modelled on google/codesearch and Zoekt: `ngram` holds the
//! trigrams and posting lists, `plan` turns a query into a trigram
//! condition, `tree` keeps the file list fresh, `watch` reports changes.

pub mod cache;
mod ngram;
mod plan;
pub mod segment;
mod tree;
pub mod watch;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regex_syntax::hir::Hir;

use ngram::{FileGrams, GramFilter, PostingCache, Shard, ShardBuilder};
use plan::Query;
use tree::{Content, Indexer, PathKey, Tree, depth};
use watch::{ChangeWatcher, Changes};

use crate::config::IndexConfig;
use crate::security::{MAX_SEARCHED_BYTES, PathGate, ResolvedPath};
use crate::walk::{self, Entry, EntryKind, Stamp, WalkOptions};

/// (trigram, file) pairs collected before a shard is sealed: 16 bytes of
/// scratch each while sorting, so 8 MiB (unless one file alone has more).
/// The shards are merged into one at the end, a group of trigrams at a
/// time, each group of the parts freed once merged. (Half as many pairs made the
/// build's peak larger, not smaller: every shard repeats the trigrams it
/// shares with the others.)
const SHARD_PAIRS: usize = 512 * 1024;

/// What the id table spends per name of a base file besides the name,
/// roughly.
const NAME_BYTES: usize = 56;

fn log_filters_left_out(limit_bytes: usize) {
    tracing::info!(
        "index: large-file filters left out to stay within the [index] max_memory_mb limit ({} MB); searches read more candidate files",
        limit_bytes / (1024 * 1024)
    );
}

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

/// One project's model; dropping it stops a build in progress.
pub struct TreeModel {
    shared: Arc<Shared>,
    /// Whether [`TreeModel::start`] has run (or there is nothing to build).
    started: AtomicBool,
}

struct Shared {
    gate: PathGate,
    limit_bytes: usize,
    state: Mutex<State>,
    cancelled: AtomicBool,
    /// The build thread has not finished: contents are still being indexed.
    building: AtomicBool,
    /// Tool calls in progress: the build pauses while there are any.
    calls: AtomicUsize,
}

/// Held for the length of a tool call (see [`TreeModel::busy`]).
pub struct CallGuard(Arc<Shared>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Longest pause of the build for calls at a time, and how long it then
/// works before it pauses again: a client whose calls never stop still gets
/// its index, at a fifth of the pace.
const MAX_PAUSE: Duration = Duration::from_secs(1);
const WORK_AFTER_PAUSE: Duration = Duration::from_millis(250);
const PAUSE_STEP: Duration = Duration::from_millis(1);

/// How the build yields to calls. Its lower priority is not enough on two
/// cores: a search's threads still lost a quarter of their speed to it
/// (the first search of the tenfold corpus took 1.26 times the scan).
#[derive(Default)]
struct Pacer {
    /// After a pause that calls outlasted, the build works until then.
    working_until: Option<Instant>,
}

impl Pacer {
    /// Waits while tool calls run, between two files or entries, where the
    /// build holds no lock a call could need.
    fn yield_to_calls(&mut self, shared: &Shared) {
        let busy = || shared.calls.load(Ordering::Relaxed) > 0;
        if !busy()
            || self
                .working_until
                .is_some_and(|until| Instant::now() < until)
        {
            return;
        }
        let paused = Instant::now();
        while busy() && !shared.cancelled.load(Ordering::Relaxed) {
            if paused.elapsed() >= MAX_PAUSE {
                self.working_until = Some(Instant::now() + WORK_AFTER_PAUSE);
                return;
            }
            std::thread::sleep(PAUSE_STEP);
        }
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

struct Live {
    tree: Tree,
    /// Changes were lost and no sweep has caught up with them yet.
    sweep_owed: bool,
    base: BaseIndex,
    watcher: ChangeWatcher,
    indexer: Indexer,
}

/// The index the build made: one shard of posting lists over base ids, the
/// path of each id, to turn posting lists into files, and the long-gram
/// filters of the large files. Empty until the build installs it.
///
/// A file with several names in the tree (hard links) is read and indexed
/// once: its first name in path order holds the id, the others are listed
/// beside it.
#[derive(Default)]
struct BaseIndex {
    shard: Shard,
    /// The first name of each id.
    names: Vec<BaseName>,
    /// The other names of files indexed under a first name, in path order.
    other_names: Vec<(u32, BaseName)>,
    /// Positions in `other_names`, sorted by id.
    other_names_by_id: Vec<u32>,
    /// Sorted by id.
    filters: Vec<(u32, GramFilter)>,
    /// The id table and the filters, in bytes, counted as they grow.
    key_bytes: usize,
    filter_bytes: usize,
}

/// A name of a base file, with what a listing of it needs: the file list
/// is not consulted for candidates that did not change since the build.
struct BaseName {
    key: PathKey,
    size: u64,
    ino: Option<u64>,
}

impl BaseName {
    fn new(relative: &str, stamp: &Stamp) -> Self {
        Self {
            key: PathKey(relative.to_string()),
            size: stamp.size(),
            ino: stamp.inode(),
        }
    }
}

impl BaseIndex {
    /// Gives base id `id` to the file `relative` (read with `stamp`), with
    /// its filter if any.
    fn push(&mut self, id: u32, relative: &str, stamp: &Stamp, filter: Option<GramFilter>) {
        self.key_bytes += relative.len() + NAME_BYTES;
        self.names.push(BaseName::new(relative, stamp));
        if let Some(filter) = filter {
            self.filter_bytes += filter.bytes();
            self.filters.push((id, filter));
        }
    }

    /// Lists `relative` as another name of the file indexed as `id`; names
    /// come in path order.
    fn push_other_name(&mut self, id: u32, relative: &str, stamp: &Stamp) {
        // Its id, and its position in the by-id table.
        self.key_bytes += relative.len() + NAME_BYTES + 8;
        self.other_names.push((id, BaseName::new(relative, stamp)));
    }

    /// Sorts the other names by id, once all are in.
    fn seal(&mut self) {
        let mut by_id: Vec<u32> = (0..self.other_names.len() as u32).collect();
        by_id.sort_by_key(|&at| self.other_names[at as usize].0);
        self.other_names_by_id = by_id;
        self.other_names.shrink_to_fit();
        self.filters.shrink_to_fit();
    }

    /// The other names of the files `ids` (sorted), in path order.
    fn other_names_of(&self, ids: &[u32]) -> Vec<&BaseName> {
        if self.other_names.is_empty() || ids.is_empty() {
            return Vec::new();
        }
        let by_id = &self.other_names_by_id;
        let mut found: Vec<usize> = Vec::new();
        for &id in ids {
            let from = by_id.partition_point(|&at| self.other_names[at as usize].0 < id);
            found.extend(
                by_id[from..]
                    .iter()
                    .map(|&at| at as usize)
                    .take_while(|&at| self.other_names[at].0 == id),
            );
        }
        // Positions in `other_names` are in path order.
        found.sort_unstable();
        found
            .into_iter()
            .map(|at| &self.other_names[at].1)
            .collect()
    }

    /// Drops the large files' filters (an aid to speed, never needed for
    /// exact answers) to save their memory; true if there were any.
    fn drop_filters(&mut self) -> bool {
        self.filter_bytes = 0;
        !std::mem::take(&mut self.filters).is_empty()
    }

    fn bytes(&self) -> usize {
        self.shard.bytes() + self.key_bytes + self.filter_bytes
    }

    /// Whether base file `id`'s long grams (when it has a filter) allow a
    /// match of `query`; its trigrams were asked already.
    fn may_match(&self, id: u32, query: &Query) -> bool {
        match self.filters.binary_search_by_key(&id, |(id, _)| *id) {
            Ok(at) => query.may_match(None, Some(&self.filters[at].1)),
            Err(_) => true,
        }
    }
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
    }
}

impl TreeModel {
    /// The model of `gate`'s root, not built yet: calls answer `None` until
    /// [`TreeModel::start`] has built it.
    pub fn new(gate: &PathGate, config: &IndexConfig) -> Self {
        let shared = Arc::new(Shared {
            gate: gate.clone(),
            limit_bytes: usize::try_from(config.max_memory_mb.saturating_mul(1024 * 1024))
                .unwrap_or(usize::MAX),
            state: Mutex::new(if config.enabled {
                State::Building
            } else {
                State::Off
            }),
            cancelled: AtomicBool::new(false),
            building: AtomicBool::new(config.enabled),
            calls: AtomicUsize::new(0),
        });
        Self {
            shared,
            started: AtomicBool::new(!config.enabled),
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
        let building = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("index-build".into())
            .spawn(move || {
                lower_priority();
                if build(&building).is_none()
                    && let Ok(mut state) = building.state.lock()
                {
                    *state = State::Off;
                }
                building.building.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            tracing::warn!("index: cannot start the build thread; searches scan the tree");
            self.shared.building.store(false, Ordering::Release);
            if let Ok(mut state) = self.shared.state.lock() {
                *state = State::Off;
            }
        }
    }

    /// Marks a tool call in progress until the guard is dropped: the build
    /// pauses meanwhile (see [`Pacer`]).
    pub fn busy(&self) -> CallGuard {
        self.shared.calls.fetch_add(1, Ordering::Relaxed);
        CallGuard(self.shared.clone())
    }

    /// A model that never answers: tools then walk, as without one.
    #[cfg(test)]
    pub fn off() -> Self {
        Self {
            shared: Arc::new(Shared {
                gate: PathGate::new(std::env::temp_dir(), &[]).expect("a gate on the temp dir"),
                limit_bytes: 0,
                state: Mutex::new(State::Off),
                cancelled: AtomicBool::new(false),
                building: AtomicBool::new(false),
                calls: AtomicUsize::new(0),
            }),
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
    /// would list them; `None` when the model cannot answer and the caller
    /// must walk.
    pub fn candidates(&self, start: &ResolvedPath, query: &Hir) -> Option<Vec<Entry>> {
        self.with_fresh_tree(start, false, |live, base| {
            let query = plan::plan(query);
            let depth_of_start = depth(&start.relative);
            live.candidates(&start.relative, &query)
                .into_iter()
                .map(|found| found.entry(base, depth_of_start))
                .collect()
        })
    }

    /// The first `wanted` entries below the folder `start`, down to
    /// `max_depth` levels, that `pick` accepts, in path order with sizes, as
    /// [`walk::walk`] and that filter would give them; `None` when the
    /// model cannot answer, or when a listing limited in depth would cost a
    /// stat of every file (changes unknown) and the walker, which reads
    /// only the folders asked for, is cheaper.
    pub fn entries(
        &self,
        start: &ResolvedPath,
        max_depth: Option<usize>,
        pick: &Pick<'_>,
    ) -> Option<Vec<Entry>> {
        self.with_fresh_tree(start, max_depth.is_some(), |live, base| {
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

    /// [`TreeModel::entries`] with `options`: from the model when it can
    /// answer, else from the walker. The model holds the default view only,
    /// so `include_ignored` always walks.
    pub fn entries_or_walk(
        &self,
        gate: &PathGate,
        start: &ResolvedPath,
        max_depth: Option<usize>,
        options: &WalkOptions,
        pick: &Pick<'_>,
    ) -> std::io::Result<Vec<Entry>> {
        let known = if options.include_ignored {
            None
        } else {
            self.entries(start, max_depth, pick)
        };
        match known {
            Some(entries) => Ok(entries),
            None => walk::walk_picked(gate, start, max_depth, options, pick.keep, pick.wanted),
        }
    }

    /// Applies pending changes, then runs `answer` on the model when it
    /// holds the folder `start`. With `cheap_only`, a call that would need a
    /// stat sweep leaves it to a later call and answers `None`.
    fn with_fresh_tree<T>(
        &self,
        start: &ResolvedPath,
        cheap_only: bool,
        answer: impl FnOnce(&Live, &Path) -> T,
    ) -> Option<T> {
        // An unreadable starting folder is the walker's error to give.
        walk::ensure_readable(start).ok()?;
        let mut state = self.shared.state.lock().ok()?;
        let State::Ready(live) = &mut *state else {
            return None;
        };
        let root = self.shared.gate.root();
        let changes = match live.watcher.drain() {
            Changes::Paths(_) | Changes::Unknown if live.sweep_owed => Changes::Unknown,
            changes => changes,
        };
        if cheap_only && matches!(changes, Changes::Unknown) {
            // Lost events are not forgotten: the next full call sweeps.
            live.sweep_owed = true;
            return None;
        }
        live.sweep_owed = false;
        let Some(changed) = live
            .tree
            .refresh(changes, &self.shared.gate, &mut live.indexer)
        else {
            // The tree changed faster than it could be followed: walk this
            // time, and look at everything again next time.
            live.sweep_owed = true;
            return None;
        };
        if changed > 0 && !live.fits(self.shared.limit_bytes) {
            tracing::info!(
                "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree from now on",
                live.bytes() / (1024 * 1024)
            );
            *state = State::Off;
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

impl Live {
    /// Files under `dir` that may hold a match of `query`, in path order:
    /// the base files the posting lists name, merged with the loose files
    /// (indexed since the build, or never) that may match. Skipped files
    /// never are; a file's content decides, never a walk of the list.
    fn candidates<'a>(&'a self, dir: &'a str, query: &Query) -> Vec<Found<'a>> {
        if *query == Query::All {
            return self
                .tree
                .under(dir)
                .filter(|(_, node)| {
                    node.kind == EntryKind::File && !matches!(node.content, Content::Skipped)
                })
                .map(Found::of)
                .collect();
        }
        // The filters first: they judge a file once, whatever its names.
        let mut ids = self.base_matches(query);
        ids.retain(|&id| self.base.may_match(id, query));
        let first_names = ids
            .iter()
            .filter_map(|&id| self.base.names.get(id as usize));
        let names = merge_in_path_order(
            first_names,
            self.base.other_names_of(&ids).into_iter(),
            |name| &name.key,
        );
        let base = names
            .into_iter()
            .filter(|name| {
                // Changed or gone since the build: the loose files or nothing.
                tree::is_below(&name.key.0, dir)
                    && name.key.0 != dir
                    && self.tree.holds_base(&name.key.0)
            })
            .map(|name| Found {
                key: &name.key,
                kind: EntryKind::File,
                size: Some(name.size),
                ino: name.ino,
            });
        let loose = self
            .tree
            .loose_under(dir)
            .filter(|(_, node)| match &node.content {
                Content::Fresh(grams) => {
                    query.may_match(Some(&grams.trigrams), grams.filter.as_ref())
                }
                _ => true,
            })
            .map(Found::of);
        merge_in_path_order(base, loose, |found| found.key)
    }

    /// The base ids whose trigrams satisfy `query`, sorted (their filters
    /// not consulted yet).
    fn base_matches(&self, query: &Query) -> Vec<u32> {
        let shard = &self.base.shard;
        evaluate(query, shard, &mut PostingCache::default())
            .unwrap_or_else(|| shard.id_range().collect())
    }

    /// The index and the file list, in bytes.
    fn bytes(&self) -> usize {
        self.base.bytes() + self.tree.bytes()
    }

    /// Whether the model fits in `limit_bytes`; the build's filters go
    /// first when it does not (the trigrams alone still answer exactly).
    fn fits(&mut self, limit_bytes: usize) -> bool {
        if self.bytes() > limit_bytes && self.base.drop_filters() {
            log_filters_left_out(limit_bytes);
            self.indexer.without_filters = true;
        }
        self.bytes() <= limit_bytes
    }
}

/// Two sequences in path order (of the keys `key` gives), as one.
fn merge_in_path_order<T>(
    first: impl Iterator<Item = T>,
    second: impl Iterator<Item = T>,
    key: impl Fn(&T) -> &PathKey,
) -> Vec<T> {
    let mut merged = Vec::new();
    let (mut first, mut second) = (first.peekable(), second.peekable());
    loop {
        let take_first = match (first.peek(), second.peek()) {
            (Some(a), Some(b)) => key(a) <= key(b),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return merged,
        };
        merged.extend(if take_first {
            first.next()
        } else {
            second.next()
        });
    }
}

/// The ids in `shard` whose trigrams satisfy `query`, sorted; `None` for all.
fn evaluate(query: &Query, shard: &Shard, cache: &mut PostingCache) -> Option<Vec<u32>> {
    match query {
        Query::All => None,
        Query::Nothing => Some(Vec::new()),
        Query::Trigram(key) => Some(cache.get(shard, *key).as_ref().clone()),
        // Only filters hold long grams.
        Query::Gram(_) | Query::ExactGram(..) => None,
        Query::And(parts) => {
            // Only the shortest trigram list is decoded; the ids left are
            // then tested against the longer ones.
            let mut keys: Vec<u32> = parts
                .iter()
                .filter_map(|part| match part {
                    Query::Trigram(key) => Some(*key),
                    _ => None,
                })
                .collect();
            keys.sort_by_cached_key(|&key| shard.list_bytes(key));
            let mut result = keys
                .first()
                .map(|&key| cache.get(shard, key).as_ref().clone());
            for part in parts
                .iter()
                .filter(|part| !matches!(part, Query::Trigram(_)))
            {
                if result.as_ref().is_some_and(Vec::is_empty) {
                    break;
                }
                let Some(ids) = evaluate(part, shard, cache) else {
                    continue;
                };
                result = Some(match result {
                    None => ids,
                    Some(previous) => intersect(&previous, &ids),
                });
            }
            if let Some(ids) = &mut result {
                for &key in keys.iter().skip(1) {
                    if ids.is_empty() {
                        break;
                    }
                    shard.retain_holding(key, ids);
                }
            }
            result
        }
        Query::Or(parts) => {
            let mut result = Vec::new();
            for part in parts {
                result = union(&result, &evaluate(part, shard, cache)?);
            }
            Some(result)
        }
    }
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::with_capacity(a.len() + b.len()));
    while i < a.len() || j < b.len() {
        if j == b.len() || (i < a.len() && a[i] < b[j]) {
            out.push(a[i]);
            i += 1;
        } else if i == a.len() || b[j] < a[i] {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
            j += 1;
        }
    }
    out
}

/// An entry of the model, with what a listing of it needs.
struct Found<'a> {
    key: &'a PathKey,
    kind: EntryKind,
    size: Option<u64>,
    ino: Option<u64>,
}

impl<'a> Found<'a> {
    fn of((key, node): (&'a PathKey, &'a tree::Node)) -> Self {
        Self {
            key,
            kind: node.kind,
            size: node.size(),
            ino: node.stamp.and_then(|stamp| stamp.inode()),
        }
    }

    fn entry(&self, root: &Path, depth_of_start: usize) -> Entry {
        let relative = &self.key.0;
        // One allocation (a join grows the root's copy).
        let mut path = PathBuf::with_capacity(root.as_os_str().len() + 1 + relative.len());
        path.push(root);
        path.push(relative);
        Entry {
            relative: relative.clone(),
            path,
            kind: self.kind,
            depth: depth(relative) - depth_of_start,
            size: self.size,
            ino: self.ino,
        }
    }
}

/// The build's scratch memory, freed on its own thread, would stay with
/// that thread's allocator arena; hand it back to the system.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The build yields the CPU to tool calls: the first search of a session
/// must not wait for it, even while it walks the file list.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority only reads its arguments; on Linux, `who = 0`
    // with PRIO_PROCESS names the calling thread alone.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

/// Changes inside skipped folders (`target`, `node_modules` …) never reach
/// the model: the walker hides them.
fn in_skipped_folder(root: &Path) -> impl Fn(&Path, bool) -> bool + Send + 'static {
    let root = root.to_path_buf();
    move |path, is_dir| {
        let Ok(rest) = path.strip_prefix(&root) else {
            return true;
        };
        let parts: Vec<_> = rest.components().collect();
        parts.iter().enumerate().any(|(index, part)| {
            let is_folder = index + 1 < parts.len() || is_dir;
            is_folder && walk::is_skipped_dir(&part.as_os_str().to_string_lossy())
        })
    }
}

/// Builds the model in two steps, so that find and list answer from the
/// file list long before the contents are indexed: walks the root (the
/// walker's own sorted walk) into the file list and hands it to calls, then
/// reads and indexes every file on the side and installs the index. `None`
/// when cancelled, over the memory limit, or the root cannot be walked.
fn build(shared: &Shared) -> Option<()> {
    let started = Instant::now();
    let mut pacer = Pacer::default();
    let (live, listed) = list(shared, &mut pacer)?;
    tracing::debug!(
        "index: file list of {} entries ready in {} ms",
        live.tree.entry_count(),
        started.elapsed().as_millis()
    );
    let list_bytes = live.bytes();
    *shared.state.lock().ok()? = State::Ready(Box::new(live));
    let indexed = index_contents(shared, &mut pacer, listed, list_bytes)?;
    let mut state = shared.state.lock().ok()?;
    let State::Ready(live) = &mut *state else {
        return None;
    };
    let mut read = 0;
    for (relative, stamp, content) in indexed.files {
        let indexed = matches!(content, Content::Base(_));
        read += usize::from(indexed);
        if !live.tree.adopt(&relative, stamp, content) && indexed {
            // A call re-read it meanwhile: its base name is out of date.
            live.tree.lose_base(&relative);
        }
    }
    live.base = indexed.base;
    live.indexer.without_filters = indexed.without_filters;
    if !live.fits(shared.limit_bytes) {
        tracing::info!(
            "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree",
            live.bytes() / (1024 * 1024)
        );
        return None;
    }
    let bytes = live.bytes();
    tracing::debug!(
        "index ready: {read} files indexed, {} bytes read, index {bytes} bytes, built in {} ms",
        indexed.bytes_read,
        started.elapsed().as_millis()
    );
    drop(state);
    return_freed_memory();
    Some(())
}

/// Walks the root into a file list (contents not read yet), with the change
/// watcher started first so that nothing changed meanwhile is missed.
/// Returns the model without an index and the files to index, in order.
fn list(shared: &Shared, pacer: &mut Pacer) -> Option<(Live, Listed)> {
    let root = shared.gate.root();
    // Watching reads every folder: it too yields to calls.
    let watcher = ChangeWatcher::start(root, in_skipped_folder(root), &mut || {
        pacer.yield_to_calls(shared)
    });
    let start = shared.gate.resolve(".").ok()?;
    let mut tree = Tree::new(&shared.gate);
    let mut listed = Listed::default();
    let mut linked = HashSet::new();
    let mut over_limit = false;
    walk::walk_sorted(
        &shared.gate,
        &start,
        None,
        &WalkOptions::default(),
        |found| {
            if shared.cancelled.load(Ordering::Relaxed) {
                return ControlFlow::Break(());
            }
            pacer.yield_to_calls(shared);
            let node = tree.make_node(found.kind, &found.relative, &found.path, None);
            if node.kind == EntryKind::File && !node.lossy {
                let size = node.size().unwrap_or(0);
                // A file with several names is read under the first only.
                let first_name = node
                    .stamp
                    .and_then(|stamp| stamp.linked_identity())
                    .is_none_or(|identity| linked.insert(identity));
                if size <= MAX_SEARCHED_BYTES && first_name {
                    listed.bytes += size;
                    listed.filter_bytes += GramFilter::bytes_for(size);
                }
                listed.files.push(found.relative.clone());
            }
            tree.insert(found.relative, node);
            if tree.bytes() > shared.limit_bytes {
                over_limit = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        },
    )
    .ok()?;
    if over_limit {
        tracing::info!(
            "index: the project needs more than the [index] max_memory_mb limit ({} MB); searches scan the tree",
            shared.limit_bytes / (1024 * 1024)
        );
        return None;
    }
    if shared.cancelled.load(Ordering::Relaxed) {
        return None;
    }
    let live = Live {
        tree,
        sweep_owed: false,
        base: BaseIndex::default(),
        watcher,
        indexer: Indexer::default(),
    };
    Some((live, listed))
}

/// The files the build will index, in order, and what indexing them is
/// expected to take.
#[derive(Default)]
struct Listed {
    files: Vec<String>,
    /// Their bytes, those over the searcher's cap left out.
    bytes: u64,
    /// What the large files' filters would take.
    filter_bytes: usize,
}

/// What indexing the listed files found, to install in the model.
struct Indexed {
    base: BaseIndex,
    /// Each file read with a stamp that can be trusted, and what it holds.
    files: Vec<(String, Stamp, Content)>,
    bytes_read: u64,
    /// The filters were left out to stay within the memory limit.
    without_filters: bool,
}

/// Reads and indexes `files` in order, sealing shards as they fill, without
/// holding the model: calls go on meanwhile. `None` when cancelled or over
/// the memory limit (`list_bytes` being the file list's share).
fn index_contents(
    shared: &Shared,
    pacer: &mut Pacer,
    listed: Listed,
    list_bytes: usize,
) -> Option<Indexed> {
    let root = shared.gate.root();
    let mut indexer = Indexer::for_build();
    let mut builder = ShardBuilder::new(0, SHARD_PAIRS);
    // Filters are left out from the start unless the file list, trigrams
    // of about a tenth of the bytes (6-7 % measured on source trees) and
    // the filters all fit: building them only to drop them costs the
    // build most of its time on a large tree.
    let trigram_estimate = usize::try_from(listed.bytes / 10).unwrap_or(usize::MAX);
    let without_filters = list_bytes
        .saturating_add(trigram_estimate)
        .saturating_add(listed.filter_bytes)
        > shared.limit_bytes;
    if without_filters {
        log_filters_left_out(shared.limit_bytes);
    }
    indexer.without_filters = without_filters;
    let mut base = BaseIndex::default();
    // Each file with several names, by the stamp its first name was read
    // with: its base id, or `None` when the searcher would skip it.
    let mut linked: HashMap<Stamp, Option<u32>> = HashMap::new();
    let mut files = Vec::new();
    let mut parts = Vec::new();
    let mut sealed_bytes = 0;
    for relative in listed.files {
        if shared.cancelled.load(Ordering::Relaxed) {
            return None;
        }
        pacer.yield_to_calls(shared);
        let (stamp, settled, content) =
            indexer.read_unless_known(&shared.gate, &root.join(&relative), |stamp| {
                Some(linked.get(stamp)?.map_or(Content::Skipped, Content::Base))
            });
        let Some(stamp) = stamp.filter(|_| settled) else {
            continue;
        };
        let content = match content {
            Content::Base(id) => {
                base.push_other_name(id, &relative, &stamp);
                Content::Base(id)
            }
            Content::Fresh(grams) => {
                let FileGrams { trigrams, filter } = grams;
                // Sealed before it would outgrow its room, so that the
                // pairs are never reallocated at twice the size.
                if builder.pairs() > 0 && builder.pairs() + trigrams.len() > SHARD_PAIRS {
                    let next = ShardBuilder::new(builder.next_id(), SHARD_PAIRS);
                    let shard = std::mem::replace(&mut builder, next).finish();
                    sealed_bytes += shard.bytes();
                    parts.push(shard);
                    // The sort's scratch is gone: without this, the
                    // freed pages stay with the process until the end.
                    return_freed_memory();
                }
                let id = builder.next_id();
                builder.add(&trigrams);
                base.push(id, &relative, &stamp, filter);
                if stamp.linked_identity().is_some() {
                    linked.insert(stamp, Some(id));
                }
                Content::Base(id)
            }
            Content::Skipped => {
                if stamp.linked_identity().is_some() {
                    linked.insert(stamp, None);
                }
                Content::Skipped
            }
            other => other,
        };
        files.push((relative, stamp, content));
        let building = list_bytes + sealed_bytes + builder.pairs() * 16;
        if building + base.bytes() > shared.limit_bytes && base.drop_filters() {
            // The filters go first: the trigrams alone still give exact
            // answers.
            log_filters_left_out(shared.limit_bytes);
            indexer.without_filters = true;
        }
        if building + base.bytes() > shared.limit_bytes {
            tracing::info!(
                "index: the project needs more than the [index] max_memory_mb limit ({} MB); searches scan the tree",
                shared.limit_bytes / (1024 * 1024)
            );
            return None;
        }
    }
    parts.push(builder.finish());
    let (bytes_read, without_filters) = (indexer.bytes_read, indexer.without_filters);
    // Its buffers and the table of linked files go before the merge, the
    // build's peak.
    drop(indexer);
    drop(linked);
    // One lookup per trigram at query time instead of one per part.
    base.shard = Shard::merge(parts);
    base.seal();
    Some(Indexed {
        base,
        files,
        bytes_read,
        without_filters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_matcher::Matcher;
    use std::fs;
    use std::time::Duration;

    /// A query as the search tool gets it.
    #[derive(Debug, Clone, Copy)]
    struct ContentQuery<'a> {
        pattern: &'a str,
        regex: bool,
        case_insensitive: bool,
    }

    impl<'a> ContentQuery<'a> {
        /// A case-sensitive literal query.
        fn literal(pattern: &'a str) -> Self {
            Self {
                pattern,
                regex: false,
                case_insensitive: false,
            }
        }

        fn hir(&self) -> Hir {
            crate::matcher::parse(self.pattern, !self.regex, self.case_insensitive).expect("valid")
        }
    }

    const WORDS: &[&str] = &[
        "apply",
        "discount",
        "Kelvin",
        "\u{212A}elvin",
        "cla\u{17F}s",
        "class",
        "fn main",
        "let x = 1;",
        "ÄÖÜ",
        "naïve",
        "foo_bar",
        "FooBar",
        "FOO_BAR_NEEDLE",
        "needle",
        "haystack",
        "zebra",
        "quux",
        "a.b",
        "(x)",
        "[y]",
    ];

    /// A small pseudo-random generator, so failures repeat.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) as usize
        }
        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.next() % items.len()]
        }
    }

    fn generated_tree(files: usize, seed: u64) -> (tempfile::TempDir, PathGate) {
        let mut rng = Lcg(seed);
        let dir = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(dir.path()).unwrap();
        for i in 0..files {
            let path = root.join(format!("d{}/e{}/f{i}.txt", i % 7, i % 3));
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut text = String::new();
            for line in 0..(rng.next() % 6) {
                for _ in 0..(rng.next() % 4) {
                    text.push_str(rng.pick(WORDS));
                    text.push(' ');
                }
                text.push_str(&format!("{line}\n"));
            }
            fs::write(path, text).unwrap();
        }
        // Large files, which get long-gram filters too.
        for k in 0..3 {
            let mut text = String::new();
            while text.len() < 70 * 1024 {
                text.push_str(rng.pick(WORDS));
                text.push_str(if rng.next().is_multiple_of(3) {
                    "\n"
                } else {
                    " "
                });
            }
            fs::write(root.join(format!("large{k}.txt")), text).unwrap();
        }
        fs::write(root.join("bin.dat"), b"needle\0apply").unwrap();
        fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        fs::create_dir_all(root.join("ignored")).unwrap();
        fs::write(root.join("ignored/x.txt"), "needle").unwrap();
        let gate = PathGate::new(root, &[]).unwrap();
        (dir, gate)
    }

    #[test]
    fn the_build_pauses_while_calls_run() {
        let model = TreeModel::off();
        let mut pacer = Pacer::default();
        let timed = |pacer: &mut Pacer| {
            let started = Instant::now();
            pacer.yield_to_calls(&model.shared);
            started.elapsed()
        };
        // Bounds far apart, so that a busy machine cannot blur them.
        assert!(timed(&mut pacer) < MAX_PAUSE / 2, "no call, no pause");
        // The pause lasts as long as the call.
        let call = model.busy();
        let ends = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            drop(call);
        });
        let paused = timed(&mut pacer);
        ends.join().unwrap();
        assert!(paused >= Duration::from_millis(150), "{paused:?}");
        assert!(paused < MAX_PAUSE, "{paused:?}");
        // A call that outlasts the longest pause: the build then works a
        // while before it pauses again.
        let _endless = model.busy();
        assert!(timed(&mut pacer) >= MAX_PAUSE);
        assert!(pacer.working_until.is_some());
        assert!(
            timed(&mut pacer) < MAX_PAUSE / 2,
            "works before it pauses again"
        );
    }

    /// Waits for the build to finish: seconds in a debug build, more on a
    /// machine busy with other tests.
    fn wait_until_settled(model: &TreeModel) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !model.is_settled() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn ready_model(gate: &PathGate) -> TreeModel {
        ready_model_within(gate, &IndexConfig::default())
    }

    fn ready_model_within(gate: &PathGate, config: &IndexConfig) -> TreeModel {
        // Stamps younger than the file system's clock tick are not trusted.
        std::thread::sleep(Duration::from_millis(250));
        let model = TreeModel::new(gate, config);
        model.start();
        wait_until_settled(&model);
        assert!(model.is_ready());
        model
    }

    /// Files under the root with a line the search's matcher matches.
    /// Files the searcher would find a match in: it skips binary files.
    fn true_matches(gate: &PathGate, query: &ContentQuery<'_>) -> Vec<String> {
        let matcher = grep_regex::RegexMatcherBuilder::new()
            .case_insensitive(query.case_insensitive)
            .fixed_strings(!query.regex)
            .line_terminator(Some(b'\n'))
            .build(query.pattern)
            .unwrap();
        let start = gate.resolve(".").unwrap();
        walk::walk(gate, &start, None, &WalkOptions::default())
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::File)
            .filter(|e| {
                let text = fs::read(&e.path).unwrap();
                !crate::security::looks_binary(&text[..text.len().min(4096)])
                    && text
                        .split(|&b| b == b'\n')
                        .any(|line| matcher.is_match(line).unwrap())
            })
            .map(|e| e.relative)
            .collect()
    }

    fn candidate_names(
        model: &TreeModel,
        gate: &PathGate,
        query: &ContentQuery<'_>,
    ) -> Vec<String> {
        let start = gate.resolve(".").unwrap();
        model
            .candidates(&start, &query.hir())
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect()
    }

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
        odd.extend(b"x".repeat(crate::security::SNIFF_BYTES + 10));
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
        let (_dir, gate) = generated_tree(400, 7);
        let model = ready_model(&gate);
        let start = gate.resolve(".").unwrap();
        let all: Vec<String> = walk::walk(&gate, &start, None, &WalkOptions::default())
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.relative)
            .collect();
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
        let listed: Vec<String> = model
            .entries(&start, None, &Pick::ALL)
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect();
        let walked: Vec<String> = walk::walk(&gate, &start, None, &WalkOptions::default())
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect();
        assert_eq!(listed, walked);
        assert_base_names_agree(&model);
    }

    /// Every base name the model takes without a lookup is a file that
    /// still holds that name's id.
    fn assert_base_names_agree(model: &TreeModel) {
        let state = model.shared.state.lock().unwrap();
        let State::Ready(live) = &*state else {
            panic!("the model is ready");
        };
        let first_names = live.base.names.iter().enumerate();
        let other_names = live
            .base
            .other_names
            .iter()
            .map(|(id, n)| (*id as usize, n));
        for (id, name) in first_names.chain(other_names) {
            let holds = live.tree.get(&name.key.0).is_some_and(
                |(_, node)| matches!(node.content, Content::Base(now) if now as usize == id),
            );
            assert_eq!(live.tree.holds_base(&name.key.0), holds, "{}", name.key.0);
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
            let first_names: Vec<&str> = live.base.names.iter().map(|n| n.key.0.as_str()).collect();
            assert_eq!(first_names, ["a/one.txt", "z/solo.txt"]);
            let other_names: Vec<(u32, &str)> = live
                .base
                .other_names
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
        // Once the new stamps can be trusted, the old words are gone.
        std::thread::sleep(Duration::from_millis(250));
        assert!(names("shared_word").is_empty());

        // A name made after the build, written through at once.
        fs::hard_link(root.join("z/solo.txt"), root.join("a/late.txt")).unwrap();
        fs::write(root.join("a/late.txt"), "late_word\n").unwrap();
        assert_eq!(names("late_word"), ["a/late.txt", "z/solo.txt"]);
        std::thread::sleep(Duration::from_millis(250));
        assert!(names("solo_word").is_empty());
        assert_base_names_agree(&model);
    }

    #[test]
    fn reported_paths_are_applied_exactly() {
        let (_dir, gate) = generated_tree(30, 4);
        std::thread::sleep(Duration::from_millis(250));
        let shared = Shared {
            gate: gate.clone(),
            limit_bytes: usize::MAX,
            state: Mutex::new(State::Building),
            cancelled: AtomicBool::new(false),
            building: AtomicBool::new(true),
            calls: AtomicUsize::new(0),
        };
        let (mut live, _) = list(&shared, &mut Pacer::default()).unwrap();
        let root = gate.root().to_path_buf();
        // A folder moved away and back, with an edit while it was away: the
        // feed reports the folder's two paths, not the file inside.
        fs::rename(root.join("d1"), root.join("away")).unwrap();
        fs::write(root.join("away/e1/f1.txt"), "moved_edit").unwrap();
        fs::rename(root.join("away"), root.join("d1")).unwrap();
        fs::write(root.join("d2/new.txt"), "x").unwrap();
        fs::remove_file(root.join("d3/e0/f3.txt")).unwrap();
        let changes = Changes::Paths(vec![
            root.join("away"),
            root.join("d1"),
            root.join("d2/new.txt"),
            root.join("d3/e0/f3.txt"),
        ]);
        live.tree
            .refresh(changes, &gate, &mut live.indexer)
            .unwrap();
        let (_, edited) = live.tree.get("d1/e1/f1.txt").unwrap();
        assert!(!matches!(edited.content, Content::Base(_)));
        let modelled: Vec<String> = live.tree.under(".").map(|(k, _)| k.0.clone()).collect();
        let start = gate.resolve(".").unwrap();
        let walked: Vec<String> = walk::walk(&gate, &start, None, &WalkOptions::default())
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect();
        assert_eq!(modelled, walked);
    }

    #[test]
    fn the_change_feed_drops_only_paths_in_skipped_folders() {
        let ignored = in_skipped_folder(Path::new("/p"));
        assert!(ignored(Path::new("/p/target/debug/x"), false));
        assert!(ignored(Path::new("/p/a/node_modules"), true));
        assert!(ignored(Path::new("/p/.git/index"), false));
        assert!(ignored(Path::new("/elsewhere/x"), false));
        assert!(!ignored(Path::new("/p/src/target"), false));
        assert!(!ignored(Path::new("/p/src/.gitignore"), false));
        assert!(!ignored(Path::new("/p"), true));
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
        let walked_files = || -> Vec<String> {
            let start = gate.resolve(".").unwrap();
            walk::walk(&gate, &start, None, &WalkOptions::default())
                .unwrap()
                .into_iter()
                .filter(|e| e.kind == EntryKind::File)
                .map(|e| e.relative)
                .collect()
        };
        let found = candidate_names(&model, &gate, &query);
        assert!(found.contains(&"sub/keep.log".to_string()));
        assert!(found.iter().all(|f| walked_files().contains(f)));
        // A walk from `sub` applies the rules from the root down, as the
        // model does: the model answers for it, the same.
        let from_sub: Vec<String> = model
            .candidates(&gate.resolve("sub").unwrap(), &query.hir())
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect();
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
        let listed: Vec<String> = model
            .entries(&start, None, &Pick::ALL)
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.relative)
            .collect();
        assert_eq!(listed, walked_files());
        // From every folder, to every depth, the model lists what a walk
        // from that folder finds.
        let names = |entries: Vec<Entry>| -> Vec<String> {
            entries.into_iter().map(|e| e.relative).collect()
        };
        for folder in [".", "sub", "sub/deeper", "sub/deeper/deepest", "d1"] {
            let start = gate.resolve(folder).unwrap();
            for max_depth in [Some(1), Some(2), None] {
                let walked = walk::walk(&gate, &start, max_depth, &WalkOptions::default());
                assert_eq!(
                    names(model.entries(&start, max_depth, &Pick::ALL).unwrap()),
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
                .candidates(&gate.resolve(".").unwrap(), &query.hir())
                .is_none()
        );
        assert!(
            model
                .candidates(&gate.resolve("d1").unwrap(), &query.hir())
                .is_none()
        );
        assert!(
            model
                .candidates(&gate.resolve("d2").unwrap(), &query.hir())
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
            },
            IndexConfig {
                enabled: false,
                max_memory_mb: 256,
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
