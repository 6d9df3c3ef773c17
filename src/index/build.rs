//! The build: walks the root into the file list, hands it to calls, then
//! serves the index kept on disk or reads and indexes every file on the
//! side, installing the index a run of files at a time.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use super::base::{BaseIndex, Layer};
use super::cache::{CacheError, Committed, RootCache, segment_bound};
use super::indexer::{Indexer, Read};
use super::live::{Live, TakeBacks};
use super::merge::{FULL_BYTES, Input, merge};
use super::ngram::{FileGrams, GramFilter};
use super::os::{log_filters_left_out, lower_priority, return_freed_memory};
use super::pacer::Pacer;
use super::postings::ListBuilder;
use super::restore::{Opened, Restored, mostly_current, open_committed, restore};
use super::save::SegmentWriter;
use super::segment::{ContentHash, FileRecord, FilterBits, Segment, encode};
use super::tree::{Content, Node, Tree, heap_bytes, make_listed_node};
use super::watch::ChangeWatcher;
use super::{Shared, State};
use crate::corpus::searchable::MAX_SEARCHED_BYTES;
use crate::security::LastFolder;
use crate::walk::{self, EntryKind, Stamp, WalkOptions};

/// (trigram, file) pairs collected before a part of a run is sealed: 8
/// bytes each, and as much again while sorting, so the build's scratch
/// stays near 8 MiB (unless one file alone has more). A run's parts are
/// merged into one segment when they reach [`FULL_BYTES`]. Unit tests'
/// trees are small: there parts are small too.
const PART_PAIRS: usize = if cfg!(test) { 2048 } else { 512 * 1024 };

/// The pairs a part collects before it is sealed: [`PART_PAIRS`], less
/// under a small memory limit (the sort's scratch a quarter of it).
pub(super) fn part_pairs(shared: &Shared) -> usize {
    PART_PAIRS.min(shared.limit_bytes / 64).max(1024)
}

/// Switches the model off (calls then scan the tree): what it held goes
/// back to the system, not only to the allocator.
pub(super) fn switch_off(state: &mut State) {
    drop(std::mem::replace(state, State::Off));
    return_freed_memory();
}

/// Changes inside skipped folders (`target`, `node_modules` …) never reach
/// the model: the walker hides them.
pub(super) fn in_skipped_folder(
    root: &Path,
) -> impl Fn(&Path, bool) -> bool + Send + Sync + 'static {
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

/// More folders than this and the root is probably not one project: it is
/// served, with one log line (from the file list the build walks anyway)
/// about what indexing and watching that many folders costs.
const MANY_FOLDERS: usize = 10_000;

/// Files the build takes from the file list at a time (a copy of every
/// name would cost as much again as the list's own names), and read at once
/// on two threads: at most this many, of at most `LISTED_BATCH_BYTES` or a
/// 128th of the memory limit (one file may be larger), so that what their
/// reads hold stays bounded.
const LISTED_BATCH: usize = 256;
const LISTED_BATCH_BYTES: u64 = 1024 * 1024;

/// The smallest `[index] max_memory_mb` (in bytes) with room for a second
/// reader's buffers (its 2 MiB trigram bitset and a file's bytes).
const TWO_READERS_LIMIT: usize = 32 * 1024 * 1024;

/// What the build says once the index covers the tree (see
/// `background.rs`, which logs it).
pub(super) struct Built {
    pub(super) summary: String,
    pub(super) started: Instant,
}

/// Builds the model in two steps, so that find and list answer from the
/// file list long before the contents are indexed: walks the root (the
/// walker's own sorted walk) into the file list and hands it to calls, then
/// serves the committed index from disk, or reads and indexes every file
/// on the side. `None` when cancelled, over the memory limit, or the root
/// cannot be walked.
pub(super) fn build(shared: &Shared) -> Option<Built> {
    let started = Instant::now();
    let mut pacer = Pacer::default();
    let cache = shared.cache.get();
    let committed = cache.filter(|_| shared.restoring.load(Ordering::Acquire));
    if committed.is_none() {
        // Nothing to restore: calls scan until the build serves, and the
        // build yields to everything.
        release_calls(shared);
        lower_priority();
    }
    // The cache's segments are opened and checked on a thread of their own
    // while this one starts the change watcher: one reads the cache, the
    // other every folder of the tree, and the walk needs both.
    let (opened, watcher) = std::thread::scope(|scope| {
        let opening = committed.map(|(cache, _)| scope.spawn(|| open_to_restore(shared, cache)));
        let watcher = start_watcher(shared, &mut pacer);
        let opened = opening.and_then(|opening| opening.join().ok().flatten());
        (opened, watcher)
    });
    // A cache most of whose files changed still spares every call's scan
    // once it serves: its walk goes on at the calls' priority, pausing
    // while they run, else a busy machine starves it for the whole scan
    // of every call until then. A build yields to everything.
    if committed.is_some() && opened.is_none() {
        lower_priority();
    }
    let (mut live, listed) = list(shared, watcher)?;
    tracing::debug!(
        "index: file list of {} entries ready in {} ms, {} bytes held ({} an entry)",
        live.tree.entry_count(),
        started.elapsed().as_millis(),
        live.tree.bytes(),
        live.tree.bytes_per_entry(),
    );
    let folders = live.tree.folder_count();
    if folders > MANY_FOLDERS {
        tracing::warn!(
            root = %shared.gate.root().display(),
            "the project root holds more than {MANY_FOLDERS} folders ({folders}): indexing and watching them all costs memory, CPU and file watches for as long as the server runs; if this is not the project you meant, name a smaller folder with --root"
        );
    }
    let list_bytes = live.bytes();
    if let (Some((cache, _)), Some(opened)) = (cache, opened)
        && let Some(restored) = restore(
            cache,
            opened,
            &mut live,
            segment_bound(listed.files as u64, listed.bytes).min(cache_budget(shared)),
        )
    {
        return serve_from_cache(shared, live, restored, started);
    }
    *shared.state.lock().ok()? = State::Ready(Box::new(live));
    // The cache could not be used: this is a build after all.
    release_calls(shared);
    lower_priority();
    let budget = cache_budget(shared);
    let mut writer = cache.and_then(|(cache, _)| SegmentWriter::open(cache, budget, 0));
    let indexed = index_contents(shared, &mut pacer, listed, list_bytes, writer.as_mut())?;
    let mut state = shared.state.lock().ok()?;
    let State::Ready(live) = &mut *state else {
        return None;
    };
    if let Some(writer) = writer
        && let Some(layers) = stored_layers(live)
    {
        writer.commit(&layers);
    }
    live.tree.finish_listing();
    live.without_filters = indexed.without_filters;
    if !live.fits(shared.limit_bytes) {
        tracing::info!(
            "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree",
            live.bytes() / (1024 * 1024)
        );
        return None;
    }
    let summary = format!(
        "{} files indexed, {} bytes read, index {} bytes, built in {} ms",
        indexed.files_indexed,
        indexed.bytes_read,
        live.bytes(),
        started.elapsed().as_millis()
    );
    drop(state);
    return_freed_memory();
    Some(Built { summary, started })
}

/// The disk budget of all roots' cache folders, in bytes.
pub(super) fn cache_budget(shared: &Shared) -> u64 {
    shared.cache.get().map_or(0, |(_, budget)| *budget)
}

/// Every layer of `live` as the manifest names it, with its dead ids;
/// `None` while one is held on the heap only.
pub(super) fn stored_layers(live: &Live) -> Option<Vec<Committed>> {
    live.base
        .layers()
        .iter()
        .map(|layer| {
            let mut dead: Vec<std::ops::Range<u32>> = Vec::new();
            for local in 0..layer.segment.file_count() {
                if !live.tree.is_dead(layer.first_id + local) {
                    continue;
                }
                match dead.last_mut() {
                    Some(run) if run.end == local => run.end += 1,
                    _ => dead.push(local..local + 1),
                }
            }
            Some(Committed {
                dead,
                ..Committed::new(layer.stored.clone()?, layer.first_id)
            })
        })
        .collect()
}

/// Serves `live` (its layers the cache's segments) at once. The files the
/// segments do not hold in their current version are left to the
/// background, which reads them into new layers (until then they are
/// candidates). `None` when over the memory limit.
fn serve_from_cache(
    shared: &Shared,
    mut live: Live,
    restored: Restored,
    started: Instant,
) -> Option<Built> {
    if !live.fits(shared.limit_bytes) {
        tracing::info!(
            "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree",
            live.bytes() / (1024 * 1024)
        );
        return None;
    }
    tracing::debug!(
        "index: serving from the cache after {} ms; {} changed or new files to read",
        started.elapsed().as_millis(),
        live.tree.loose_count(),
    );
    // Many files to read stay listed: the background reads them in path
    // order, and queries walk the list for them (as while a build runs)
    // rather than it holding two more copies of each path.
    if !live.tree.mostly_listed() {
        live.tree.finish_listing();
    }
    let summary = format!(
        "the cache's segments ({} files unchanged) and the files changed since",
        restored.unchanged
    );
    *shared.state.lock().ok()? = State::Ready(Box::new(live));
    release_calls(shared);
    lower_priority();
    Some(Built { summary, started })
}

/// Gives the model what the build read of `files`; ids of files a call
/// re-read meanwhile are dead.
fn adopt_all(live: &mut Live, files: Vec<(String, Stamp, Content)>) {
    for (relative, stamp, content) in files {
        let id = match content {
            Content::Base(id) => Some(id),
            _ => None,
        };
        if !live.tree.adopt(&relative, stamp, content)
            && let Some(id) = id
        {
            live.tree.lose_id(id);
        }
    }
}

/// Files read for a new segment (a part of a build's run, or a layer of
/// changed files the background read): their lists, and what their
/// records hold, from the part's first id on.
pub(super) struct Part {
    first_id: u32,
    lists: ListBuilder,
    files: Vec<PartFile>,
}

struct PartFile {
    name: String,
    stamp: Stamp,
    hash: ContentHash,
    filter: Option<GramFilter>,
}

impl Part {
    pub(super) fn new(first_id: u32, pairs: usize) -> Self {
        Part {
            first_id,
            lists: ListBuilder::new(pairs),
            files: Vec::new(),
        }
    }

    /// (trigram, file) pairs collected so far.
    pub(super) fn pairs(&self) -> usize {
        self.lists.pairs()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Adds the file `relative`, read with `stamp` into `grams`; its id.
    pub(super) fn add(&mut self, relative: &str, stamp: Stamp, grams: FileGrams) -> u32 {
        let id = self.first_id + self.lists.files();
        self.lists.add(&grams.trigrams);
        self.files.push(PartFile {
            name: relative.to_string(),
            stamp,
            hash: grams.hash,
            filter: grams.filter,
        });
        id
    }

    /// The part as a segment held on the heap (`None` when it holds no
    /// file or cannot be made), and its files' names and stamps by local id.
    pub(super) fn seal(self, root: &str) -> (Option<Segment>, Vec<(String, Stamp)>) {
        if self.files.is_empty() {
            return (None, Vec::new());
        }
        let records: Vec<FileRecord> = self
            .files
            .iter()
            .map(|file| FileRecord {
                name: &file.name,
                stamp: file.stamp,
                hash: file.hash,
                filter: file.filter.as_ref().map(|filter| {
                    let (case, words) = filter.parts();
                    FilterBits::of_words(case, words)
                }),
            })
            .collect();
        let made = encode(root, &records, self.lists.finish())
            .and_then(|bytes| Segment::from_bytes(bytes, root));
        drop(records);
        let files = self
            .files
            .into_iter()
            .map(|file| (file.name, file.stamp))
            .collect();
        match made {
            Ok(segment) => (Some(segment), files),
            Err(error) => {
                tracing::info!("index: a segment of files just read could not be made ({error})");
                (None, files)
            }
        }
    }
}

/// Segments of consecutive ids (a run's parts, in order) as one: a query
/// then looks each trigram up once, not once per part.
fn join(root: &str, mut parts: Vec<Segment>, pause: &mut dyn FnMut()) -> Option<Segment> {
    if parts.len() == 1 {
        return parts.pop();
    }
    let joined = merge(root, &join_inputs(&parts), false, pause)
        .and_then(|merged| Segment::from_bytes(merged.bytes, root));
    match joined {
        Ok(segment) => Some(segment),
        Err(error) => {
            tracing::info!("index: a run of the build could not be made ({error})");
            None
        }
    }
}

/// A run's parts as the inputs of their join: every file alive.
fn join_inputs(parts: &[Segment]) -> Vec<Input<'_>> {
    parts
        .iter()
        .map(|segment| Input {
            segment,
            alive: vec![true; segment.file_count() as usize],
            stamps: Vec::new(),
        })
        .collect()
}

/// What indexing the listed files found.
pub(super) struct Indexed {
    /// Files read and indexed.
    pub(super) files_indexed: usize,
    pub(super) bytes_read: u64,
    /// The filters were left out to stay within the memory limit.
    pub(super) without_filters: bool,
}

/// A run of files read and not yet installed: its parts, its files and
/// the other names of files read before.
#[derive(Default)]
struct Run {
    /// The id of its first part's first file.
    first_id: u32,
    parts: Vec<Segment>,
    parts_bytes: usize,
    files: Vec<(String, Stamp, Content)>,
    other_names: Vec<(u32, String, Stamp)>,
}

impl Run {
    /// Seals `part` and adds it; `None` when it cannot be made.
    fn push(&mut self, part: Part, root: &str) -> Option<()> {
        if self.parts.is_empty() {
            self.first_id = part.first_id;
        }
        let sealed = part.seal(root).0?;
        self.parts_bytes += sealed.heap_bytes();
        self.parts.push(sealed);
        Some(())
    }
}

/// Reads and indexes `files` in order, without holding the model: calls go
/// on meanwhile. Files are sealed into parts as their lists fill; parts
/// are joined into a run of about [`FULL_BYTES`], which is written to the
/// cache (with a `writer`) and installed in the model at once with its
/// files, so that searches read only the candidates of the part of the
/// tree indexed so far. `None` when cancelled or over the memory limit
/// (`list_bytes` being the file list's share).
pub(super) fn index_contents(
    shared: &Shared,
    pacer: &mut Pacer,
    listed: Listed,
    list_bytes: usize,
    mut writer: Option<&mut SegmentWriter>,
) -> Option<Indexed> {
    let root_path = shared.gate.root();
    let root = super::segment::root_text(root_path);
    // Files are read on two threads, this one and a helper (see
    // `read_batch`), each with its own buffers, unless the memory limit is
    // too small to spare the second thread's.
    let mut readers = new_readers(shared);
    let mut helper_pacer = Pacer::default();
    let batch_bytes = batch_bytes(shared);
    let part_pairs = part_pairs(shared);
    // Filters are left out from the start unless the file list, trigrams
    // of about a tenth of the bytes (6-7 % measured on source trees; at
    // most a run and its join) and the filters all fit: building them
    // only to drop them costs the build most of its time on a large tree.
    let run_bytes = FULL_BYTES.min(shared.limit_bytes / 8);
    let trigram_estimate = usize::try_from(listed.bytes / 10)
        .unwrap_or(usize::MAX)
        .min(2 * run_bytes);
    let without_filters = list_bytes
        .saturating_add(trigram_estimate)
        .saturating_add(listed.filter_bytes)
        > shared.limit_bytes;
    if without_filters {
        log_filters_left_out(shared.limit_bytes);
    }
    for reader in &mut readers {
        reader.without_filters = without_filters;
    }
    // Each file with several names, by the stamp its first name was read
    // with: its id, or `None` when the searcher would skip it.
    let mut linked: HashMap<Stamp, Option<u32>> = HashMap::new();
    let mut part = Part::new(0, part_pairs);
    let mut run = Run::default();
    let mut files_indexed = 0;
    let mut last: Option<String> = None;
    loop {
        let names = match &*shared.state.lock().ok()? {
            State::Ready(live) => {
                live.tree
                    .listed_after(last.as_deref(), LISTED_BATCH, batch_bytes)
            }
            _ => return None,
        };
        let Some(end) = names.last() else {
            break;
        };
        last = Some(end.clone());
        let reads = read_batch(
            shared,
            &mut readers,
            [&mut *pacer, &mut helper_pacer],
            &names,
        )?;
        for (relative, (stamp, settled, read)) in names.into_iter().zip(reads) {
            let Some(stamp) = stamp.filter(|_| settled) else {
                continue;
            };
            // Another name of a file read before is indexed under the first
            // only (each name was read, the batch's files on two threads at
            // once; it is set aside here). One the searcher changes is left as
            // the read found it: a candidate.
            let read = match linked.get(&stamp) {
                Some(&first)
                    if stamp.size() <= MAX_SEARCHED_BYTES
                        && !matches!(read, Read::Content(Content::Always)) =>
                {
                    Read::Content(first.map_or(Content::Skipped, Content::Linked))
                }
                _ => read,
            };
            let content = match read {
                Read::Content(Content::Linked(id)) => {
                    run.other_names.push((id, relative.clone(), stamp));
                    Content::Linked(id)
                }
                Read::Grams(grams) => {
                    // Sealed before it would outgrow its room, so that the
                    // pairs are never reallocated at twice the size.
                    if part.pairs() > 0 && part.pairs() + grams.trigrams.len() > part_pairs {
                        let next = Part::new(part.first_id + part.lists.files(), part_pairs);
                        run.push(std::mem::replace(&mut part, next), &root)?;
                        if run.parts_bytes >= run_bytes {
                            install_run(
                                shared,
                                pacer,
                                &root,
                                std::mem::take(&mut run),
                                &mut writer,
                            )?;
                        }
                        // The sort's scratch is gone: without this, the
                        // freed pages stay with the process until the end.
                        return_freed_memory();
                    }
                    files_indexed += 1;
                    let id = part.add(&relative, stamp, grams);
                    if stamp.linked_identity().is_some() {
                        linked.insert(stamp, Some(id));
                    }
                    Content::Base(id)
                }
                // Never asked for: no text to compare with.
                Read::Same(_) => Content::Always,
                Read::Content(Content::Skipped) => {
                    if stamp.linked_identity().is_some() {
                        linked.insert(stamp, None);
                    }
                    Content::Skipped
                }
                Read::Content(other) => other,
            };
            run.files.push((relative, stamp, content));
            let held = list_bytes + run.parts_bytes + part.pairs() * 16 + model_bytes(shared)?;
            if held > shared.limit_bytes && !readers[0].without_filters {
                // The filters go first: the trigrams alone still give exact
                // answers.
                for reader in &mut readers {
                    reader.without_filters = true;
                }
                log_filters_left_out(shared.limit_bytes);
                if let Ok(mut state) = shared.state.lock()
                    && let State::Ready(live) = &mut *state
                {
                    live.drop_filters();
                }
            }
            if held > shared.limit_bytes {
                tracing::info!(
                    "index: the project needs more than the [index] max_memory_mb limit ({} MB); searches scan the tree",
                    shared.limit_bytes / (1024 * 1024)
                );
                return None;
            }
        }
    }
    if !part.is_empty() {
        run.push(part, &root)?;
    }
    let bytes_read = readers.iter().map(|reader| reader.bytes_read).sum();
    let without_filters = readers[0].without_filters;
    // Its buffers and the table of linked files go before the last join,
    // the build's peak.
    drop(readers);
    drop(linked);
    // The helper thread's buffers went back to the arena they came from,
    // which only a trim gives back to the system.
    return_freed_memory();
    install_run(shared, pacer, &root, run, &mut writer)?;
    Some(Indexed {
        files_indexed,
        bytes_read,
        without_filters,
    })
}

/// What reading a file for the index found: its stamp, whether that can be
/// trusted, and what it holds.
type FileRead = (Option<Stamp>, bool, Read);

/// What the files read at once may hold (one file may be larger): see
/// [`LISTED_BATCH`].
pub(super) fn batch_bytes(shared: &Shared) -> u64 {
    LISTED_BATCH_BYTES.min(shared.limit_bytes as u64 / 128)
}

/// The readers of the build and the background: two, each with its own
/// buffers, unless the memory limit is too small to spare the second's.
pub(super) fn new_readers(shared: &Shared) -> Vec<Indexer> {
    let threads = if shared.limit_bytes >= TWO_READERS_LIMIT {
        2
    } else {
        1
    };
    (0..threads).map(|_| Indexer::default()).collect()
}

/// Reads the files `names` (see [`read_in_parallel`]).
fn read_batch(
    shared: &Shared,
    readers: &mut [Indexer],
    pacers: [&mut Pacer; 2],
    names: &[String],
) -> Option<Vec<FileRead>> {
    let root = shared.gate.root();
    read_in_parallel(shared, readers, pacers, names.len(), |reader, at| {
        reader.read(&shared.gate, &root.join(&names[at]))
    })
}

/// Runs `read(reader, at)` for every `at` below `count` on this thread
/// and, with a second reader, a helper at once (each by the next thread
/// free), each thread with its reader and pacer: both yield to calls, the
/// helper at the build's lower priority too. The reads in the order of
/// `at`; `None` when the server stops.
pub(super) fn read_in_parallel<T: Send>(
    shared: &Shared,
    readers: &mut [Indexer],
    pacers: [&mut Pacer; 2],
    count: usize,
    read: impl Fn(&mut Indexer, usize) -> T + Sync,
) -> Option<Vec<T>> {
    let next = AtomicUsize::new(0);
    let work = |reader: &mut Indexer, pacer: &mut Pacer| {
        let mut done = Vec::new();
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            if at >= count || shared.stopping() {
                return done;
            }
            pacer.yield_to_calls(shared);
            done.push((at, read(reader, at)));
        }
    };
    let [my_pacer, helper_pacer] = pacers;
    let mut reads = match readers {
        [mine] => work(mine, my_pacer),
        [mine, helpers] => {
            let (mut mine, theirs) = std::thread::scope(|scope| {
                let helper = scope.spawn(|| {
                    lower_priority();
                    work(helpers, helper_pacer)
                });
                (work(mine, my_pacer), helper.join())
            });
            mine.extend(theirs.ok()?);
            mine
        }
        _ => return None,
    };
    if reads.len() < count {
        return None;
    }
    reads.sort_unstable_by_key(|(at, _)| *at);
    Some(reads.into_iter().map(|(_, read)| read).collect())
}

/// What the model holds now, in bytes; `None` once it is gone.
fn model_bytes(shared: &Shared) -> Option<usize> {
    match &*shared.state.lock().ok()? {
        State::Ready(live) => Some(live.bytes()),
        _ => None,
    }
}

/// Joins `run`'s parts into one segment, writes it to the cache (when a
/// `writer` is still held: one that fails is let go, and the run stays on
/// the heap) and hands it to the model with its files. `None` when the
/// model is gone.
fn install_run(
    shared: &Shared,
    pacer: &mut Pacer,
    root: &str,
    run: Run,
    writer: &mut Option<&mut SegmentWriter>,
) -> Option<()> {
    let Run {
        first_id,
        parts,
        files,
        other_names,
        ..
    } = run;
    let layer = match parts.is_empty() {
        true => None,
        false => Some(run_layer(shared, pacer, root, first_id, parts, writer)?),
    };
    let mut state = shared.state.lock().ok()?;
    let State::Ready(live) = &mut *state else {
        return None;
    };
    if let Some(layer) = layer {
        live.base.insert(layer);
    }
    for (id, relative, stamp) in &other_names {
        live.base.push_other_name(*id, relative, stamp);
    }
    live.base.seal();
    adopt_all(live, files);
    Some(())
}

/// `parts` (not empty) as one layer from `first_id` on: joined straight
/// into a file of the cache when a `writer` is held (one that fails is let
/// go), else on the heap, and then written to the cache when it can be.
/// `None` when the parts cannot be joined.
fn run_layer(
    shared: &Shared,
    pacer: &mut Pacer,
    root: &str,
    first_id: u32,
    parts: Vec<Segment>,
    writer: &mut Option<&mut SegmentWriter>,
) -> Option<Layer> {
    if parts.len() > 1
        && let Some(into) = writer.as_deref_mut()
    {
        match into.store_merged(&join_inputs(&parts), &mut || pacer.yield_to_calls(shared)) {
            Ok((name, mapped)) => {
                return Some(Layer {
                    first_id,
                    segment: Arc::new(mapped),
                    stored: Some(name),
                });
            }
            Err(error) => give_up_cache(shared, writer, &error),
        }
    }
    let joined = join(root, parts, &mut || pacer.yield_to_calls(shared))?;
    let mut layer = Layer {
        first_id,
        segment: Arc::new(joined),
        stored: None,
    };
    if let Some(into) = writer.as_deref_mut() {
        match into.store(&layer.segment) {
            Ok((name, mapped)) => {
                layer.segment = Arc::new(mapped);
                layer.stored = Some(name);
            }
            Err(error) => give_up_cache(shared, writer, &error),
        }
    }
    Some(layer)
}

/// Lets a failed `writer` go: the index stays in memory.
fn give_up_cache(shared: &Shared, writer: &mut Option<&mut SegmentWriter>, error: &CacheError) {
    tracing::info!("index cache: not written ({error}); the index stays in memory");
    shared.cache_given_up.store(true, Ordering::Relaxed);
    *writer = None;
}

/// The committed segments of `cache`, opened and checked. Calls wait for
/// them only when most of a sample of their files are as recorded; else
/// they are let go to scan now (the segments still serve once the walk is
/// done).
fn open_to_restore(shared: &Shared, cache: &RootCache) -> Option<Opened> {
    let opened = open_committed(cache, cache_budget(shared));
    let worth_waiting = opened
        .as_ref()
        .is_some_and(|opened| mostly_current(opened, shared.gate.root()));
    if opened.is_some() && !worth_waiting {
        tracing::debug!(
            "index cache: most of a sample of its files changed since it was written; calls scan until it serves"
        );
    }
    if !worth_waiting {
        release_calls(shared);
    }
    opened
}

/// Starts the change watcher, which reads every folder: it too yields to
/// calls.
pub(super) fn start_watcher(shared: &Shared, pacer: &mut Pacer) -> ChangeWatcher {
    let root = shared.gate.root();
    ChangeWatcher::start(
        root,
        shared.change_notifications,
        in_skipped_folder(root),
        &mut || pacer.yield_to_calls(shared),
    )
}

/// Walks the root into a file list (contents not read yet), with the change
/// `watcher` started before so that nothing changed meanwhile is missed.
/// Returns the model without an index and the files to index, in order.
///
/// The walk and a `stat` of every entry run on the walker's threads; the
/// sorted entries then fill the tree's map in bulk.
pub(super) fn list(shared: &Shared, watcher: ChangeWatcher) -> Option<(Live, Listed)> {
    let root = shared.gate.root();
    let walk_started = Instant::now();
    // Before the walk: the root's stamp must not show what the walk missed.
    let mut tree = Tree::new(&shared.gate);
    let start = shared.gate.resolve(".").ok()?;
    let options = WalkOptions::default();
    // What the entries made so far hold, to stop at the memory limit.
    let held = AtomicUsize::new(0);
    let over_limit_seen = AtomicBool::new(false);
    let per_thread = || {
        let mut pacer = Pacer::default();
        let mut last = LastFolder::default();
        let (gate, held, over_limit, cancel) =
            (&shared.gate, &held, &over_limit_seen, &options.cancel);
        move |relative: &str, real: &Path, kind| {
            if shared.stopping() {
                cancel.cancel();
                return None;
            }
            pacer.yield_to_calls(shared);
            let node = make_listed_node(gate, &mut last, kind, relative, real)?;
            let bytes =
                size_of::<(String, Node)>() + heap_bytes(relative.len()) + node.heap_bytes();
            if held.fetch_add(bytes, Ordering::Relaxed) + bytes > shared.limit_bytes {
                over_limit.store(true, Ordering::Relaxed);
                cancel.cancel();
            }
            Some(node)
        }
    };
    let walked = walk::walk_made(&shared.gate, &start, &options, &per_thread);
    let over_limit = |shared: &Shared| {
        tracing::info!(
            "index: the project needs more than the [index] max_memory_mb limit ({} MB); searches scan the tree",
            shared.limit_bytes / (1024 * 1024)
        );
    };
    if over_limit_seen.load(Ordering::Relaxed) {
        over_limit(shared);
        return None;
    }
    // Cancelled, or the root cannot be read.
    let parts = walked.ok()?;
    let walk_ms = walk_started.elapsed().as_millis();
    tree.fill(parts);
    let mut listed = Listed::default();
    let mut linked = HashSet::new();
    // What the build will read: every file of a UTF-8 name.
    for (_, node) in tree.under(".") {
        if node.kind != EntryKind::File || node.lossy {
            continue;
        }
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
        listed.files += 1;
    }
    tracing::debug!(
        "index: walked {} entries in {walk_ms} ms",
        tree.entry_count()
    );
    if tree.bytes() > shared.limit_bytes {
        over_limit(shared);
        return None;
    }
    let live = Live {
        tree,
        sweep_owed: false,
        base: BaseIndex::new(super::segment::root_text(root)),
        watcher: Arc::new(watcher),
        without_filters: false,
        restamped: std::collections::HashMap::new(),
        looked_up: 0,
        take_backs: TakeBacks::default(),
    };
    Some((live, listed))
}

/// What the build will index (the file list's [`Content::Listed`] files,
/// which it reads in path order, a batch at a time) and what indexing them
/// is expected to take.
#[derive(Default)]
pub(super) struct Listed {
    pub(super) files: usize,
    /// Their bytes, those over the searcher's cap left out.
    pub(super) bytes: u64,
    /// What the large files' filters would take.
    pub(super) filter_bytes: usize,
}

/// Calls waiting for the restore go on: the model answers them now, or
/// they scan until it does.
fn release_calls(shared: &Shared) {
    // Under the lock a waiting call checks the flag with: none misses it.
    if let Ok(_state) = shared.state.lock() {
        shared.restoring.store(false, Ordering::Release);
        shared.left_building.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn the_change_feed_drops_only_paths_in_skipped_folders() {
        let ignored = in_skipped_folder(Path::new("/p"));
        assert!(ignored(Path::new("/p/target/debug/x"), false));
        assert!(ignored(Path::new("/p/a/node_modules"), true));
        assert!(ignored(Path::new("/p/.git/index"), false));
        assert!(ignored(Path::new("/elsewhere/x"), false));
        assert!(!ignored(Path::new("/p/src/target"), false));
        assert!(!ignored(Path::new("/p/src/.gitignore"), false));
        assert!(!ignored(Path::new("/p"), true));
    }
}
