//! The build: walks the root into the file list, hands it to calls, then
//! reads and indexes every file on the side and installs the index.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::base::{BaseIndex, Layer, SPILL_BYTES};
use super::cache::{RootCache, segment_bound};
use super::indexer::Indexer;
use super::live::Live;
use super::ngram::{FileGrams, GramFilter};
use super::os::{log_filters_left_out, lower_priority, return_freed_memory};
use super::pacer::Pacer;
use super::postings::{Shard, ShardBuilder};
use super::restore::{Restored, restore};
use super::save::{SegmentWriter, records};
use super::scrub::Scrub;
use super::tree::{Content, Node, Tree, heap_bytes, make_listed_node};
use super::watch::{ChangeWatcher, Changes};
use super::{Shared, State};
use crate::corpus::searchable::MAX_SEARCHED_BYTES;
use crate::walk::{self, EntryKind, Stamp, Stamper, WalkOptions};

/// (trigram, file) pairs collected before a shard is sealed: 16 bytes of
/// scratch each while sorting, so the build's scratch stays near 8 MiB
/// (unless one file alone has more). Smaller shards would not lower the
/// peak: every shard repeats the trigrams it shares with the others, and
/// the shards are merged into one (when written as a segment, or at the
/// end), a group of trigrams at a time, each group of the parts freed once
/// merged. Unit tests' trees are small: there shards are small too.
pub(super) const SHARD_PAIRS: usize = if cfg!(test) { 2048 } else { 512 * 1024 };

/// Switches the model off (calls then scan the tree): what it held goes
/// back to the system, not only to the allocator.
pub(super) fn switch_off(state: &mut State) {
    drop(std::mem::replace(state, State::Off));
    return_freed_memory();
}

/// Changes inside skipped folders (`target`, `node_modules` …) never reach
/// the model: the walker hides them.
pub(super) fn in_skipped_folder(root: &Path) -> impl Fn(&Path, bool) -> bool + Send + 'static {
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

/// What the build says once the index covers the tree (see
/// [`keep_indexing`], which logs it).
pub(super) struct Built {
    pub(super) summary: String,
    pub(super) started: Instant,
}

/// Builds the model in two steps, so that find and list answer from the
/// file list long before the contents are indexed: walks the root (the
/// walker's own sorted walk) into the file list and hands it to calls, then
/// reads and indexes every file on the side and installs the index. `None`
/// when cancelled, over the memory limit, or the root cannot be walked.
pub(super) fn build(shared: &Shared) -> Option<Built> {
    let started = Instant::now();
    let mut pacer = Pacer::default();
    let (mut live, listed) = list(shared, &mut pacer)?;
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
    let cache = shared.cache.get();
    if let Some((cache, budget)) = cache
        && shared.restoring.load(Ordering::Acquire)
        && let Some(restored) = restore(
            cache,
            &mut live,
            segment_bound(listed.files.len() as u64, listed.bytes).min(*budget),
        )
    {
        let from_cache = FromCache {
            cache,
            budget: *budget,
            restored,
            started,
        };
        return serve_from_cache(shared, &mut pacer, live, listed, from_cache);
    }
    *shared.state.lock().ok()? = State::Ready(Box::new(live));
    // The cache could not be used: this is a build after all.
    serving(shared);
    let mut writer = cache.and_then(|(cache, budget)| SegmentWriter::open(cache, *budget));
    let indexed = index_contents(
        shared,
        &mut pacer,
        listed,
        list_bytes,
        writer.as_mut(),
        true,
    )?;
    if let Some(writer) = writer
        && indexed.on_disk
    {
        writer.commit();
    }
    let mut state = shared.state.lock().ok()?;
    let State::Ready(live) = &mut *state else {
        return None;
    };
    adopt_all(live, indexed.files);
    live.tree.finish_listing();
    live.base.append(indexed.base);
    live.without_filters = indexed.without_filters;
    let read = indexed.files_indexed;
    if !live.fits(shared.limit_bytes) {
        tracing::info!(
            "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree",
            live.bytes() / (1024 * 1024)
        );
        return None;
    }
    let bytes = live.bytes();
    let summary = format!(
        "{read} files indexed, {} bytes read, index {bytes} bytes, built in {} ms",
        indexed.bytes_read,
        started.elapsed().as_millis()
    );
    drop(state);
    return_freed_memory();
    Some(Built { summary, started })
}

/// The segment a build starts from.
struct FromCache<'a> {
    cache: &'a RootCache,
    budget: u64,
    restored: Restored,
    started: Instant,
}

/// Files read and adopted at a time while the segment already serves.
const ADOPT_BATCH: usize = 256;

/// Serves `live` (its base the cache's segment) at once, then reads the
/// files the segment does not know in their current version, a batch at a
/// time (until then they are candidates), and writes the segment again
/// when it is out of date. `None` when cancelled or over the memory limit.
fn serve_from_cache(
    shared: &Shared,
    pacer: &mut Pacer,
    mut live: Live,
    listed: Listed,
    from_cache: FromCache,
) -> Option<Built> {
    if !live.fits(shared.limit_bytes) {
        tracing::info!(
            "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree",
            live.bytes() / (1024 * 1024)
        );
        return None;
    }
    let to_read: Vec<String> = listed
        .files
        .iter()
        .filter(|relative| {
            live.tree.get(relative).is_some_and(|(_, node)| {
                matches!(
                    node.content,
                    Content::Always | Content::Unread | Content::Listed
                )
            })
        })
        .cloned()
        .collect();
    let root = shared.gate.root();
    tracing::debug!(
        "index: serving from the cache after {} ms; {} changed or new files to read",
        from_cache.started.elapsed().as_millis(),
        to_read.len()
    );
    *shared.state.lock().ok()? = State::Ready(Box::new(live));
    serving(shared);
    let mut indexer = Indexer::default();
    let mut batch = Vec::with_capacity(ADOPT_BATCH);
    for (at, relative) in to_read.iter().enumerate() {
        if shared.cancelled.load(Ordering::Relaxed) {
            return None;
        }
        pacer.yield_to_calls(shared);
        let (stamp, settled, content) =
            indexer.read_after(&shared.gate, &root.join(relative), None, |_| None);
        if let Some(stamp) = stamp.filter(|_| settled) {
            batch.push((relative, stamp, content));
        }
        if batch.len() == ADOPT_BATCH || at + 1 == to_read.len() {
            let mut state = shared.state.lock().ok()?;
            let State::Ready(live) = &mut *state else {
                return None;
            };
            for (relative, stamp, content) in batch.drain(..) {
                live.tree.adopt(relative, stamp, content);
            }
            if !live.fits(shared.limit_bytes) {
                tracing::info!(
                    "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree",
                    live.bytes() / (1024 * 1024)
                );
                return None;
            }
        }
    }
    let held = match &mut *shared.state.lock().ok()? {
        State::Ready(live) => {
            live.tree.finish_listing();
            live.bytes()
        }
        _ => return None,
    };
    let summary = format!(
        "the cache's segments and {} files read, in {} ms",
        to_read.len(),
        from_cache.started.elapsed().as_millis()
    );
    if from_cache.restored.is_stale(to_read.len()) {
        // Written on the side, never installed: the next session starts
        // from it. What the model holds counts against the limit too.
        if let Some(mut writer) = SegmentWriter::open(from_cache.cache, from_cache.budget)
            && let Some(indexed) =
                index_contents(shared, pacer, listed, held, Some(&mut writer), false)
            && indexed.on_disk
        {
            writer.commit();
        }
        return_freed_memory();
    }
    Some(Built {
        summary,
        started: from_cache.started,
    })
}

/// Files the background indexing reads between two looks at the model.
const UNREAD_BATCH: usize = 64;

/// How often the background looks again at entries whose stamps it could
/// not trust yet: just over the finest tick's doubt (0.1 s), so that a
/// file written right before the build is indexed a moment after it.
const SETTLE_STEP: Duration = Duration::from_millis(120);

/// After the build: reads the files calls found changed, and those whose
/// stamps were too new to trust once they settle (looked at again on a
/// timer, not only by the next call), off the calls' path, and gives the
/// model their grams, until the model is dropped or switched off. Until
/// then such a file is a candidate the searcher verifies, as the scan
/// would. Says "index ready" once the index covers the tree. The model's
/// lock is held only to take a batch and to hand back what was read;
/// reading yields to calls.
pub(super) fn keep_indexing(shared: &Shared, built: Built) {
    let root = shared.gate.root();
    let mut pacer = Pacer::default();
    let mut indexer = Indexer::default();
    let mut scrub = Scrub::new(shared);
    let mut ready = Some(built);
    loop {
        let Some(batch) = next_unread(shared, &mut indexer, &mut scrub, &mut ready) else {
            return;
        };
        if batch.is_empty() {
            // Idle for the scrub's pace.
            if scrub.run(shared, &mut pacer, &mut indexer).is_none() {
                return;
            }
            continue;
        }
        let mut read = Vec::with_capacity(batch.len());
        for (relative, stamp, first_seen) in batch {
            if shared.cancelled.load(Ordering::Relaxed) {
                return;
            }
            pacer.yield_to_calls(shared);
            let path = root.join(&relative);
            let (now, trusted, content) =
                indexer.read_after(&shared.gate, &path, Some((stamp, first_seen)), |_| None);
            // Changed since the list saw it: a call will see the change and
            // queue it again; meanwhile it is always a candidate.
            let content = if now == Some(stamp) && trusted {
                content
            } else {
                Content::Always
            };
            read.push((relative, stamp, content));
        }
        let Ok(mut state) = shared.state.lock() else {
            return;
        };
        let State::Ready(live) = &mut *state else {
            return;
        };
        for (relative, stamp, content) in read {
            live.tree.adopt(&relative, stamp, content);
        }
        if !live.fits(shared.limit_bytes) {
            tracing::info!(
                "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree from now on",
                live.bytes() / (1024 * 1024)
            );
            switch_off(&mut state);
            return;
        }
        let idle = !live.tree.has_unread();
        drop(state);
        if idle {
            // What replaced files' grams held is free now: give it back,
            // so that churn does not leave the process larger.
            return_freed_memory();
        }
    }
}

/// Waits until files wait for the background indexing and takes a batch,
/// looking again at entries whose stamps were not trusted yet as they
/// settle, or until the scrub is due with nothing to read and no call running
/// (then the batch is empty); logs `ready` once the index covers the tree.
/// `None` once the model is dropped or switched off.
fn next_unread(
    shared: &Shared,
    indexer: &mut Indexer,
    scrub: &mut Scrub,
    ready: &mut Option<Built>,
) -> Option<Vec<(String, Stamp, SystemTime)>> {
    let mut state = shared.state.lock().ok()?;
    loop {
        if shared.cancelled.load(Ordering::Relaxed) {
            return None;
        }
        let State::Ready(live) = &mut *state else {
            return None;
        };
        if live.tree.has_unread() {
            indexer.without_filters = live.without_filters;
            return Some(live.tree.unread(UNREAD_BATCH));
        }
        if live.tree.is_covered()
            && let Some(built) = ready.take()
        {
            tracing::debug!(
                "index ready: {}, the tree covered in {} ms",
                built.summary,
                built.started.elapsed().as_millis()
            );
        }
        let now = Instant::now();
        let calls = shared.calls.load(Ordering::Relaxed) > 0;
        let scrub_due = scrub.due(shared, live);
        if scrub_due.is_some_and(|due| now >= due) && !calls {
            return Some(Vec::new());
        }
        // Woken by a call that left files unread, or by the model's drop;
        // the timeout guards against a missed wake-up, brings the scrub
        // (once the calls running are done), and looks again at stamps not
        // trusted yet as soon as they can be.
        let unsettled = live.tree.has_unsettled();
        let wait = match scrub_due {
            Some(due) if now >= due => Duration::from_millis(100),
            Some(due) => due.saturating_duration_since(now),
            None => Duration::from_secs(5),
        };
        let wait = if unsettled {
            wait.min(SETTLE_STEP)
        } else {
            wait
        };
        let wait = wait.clamp(Duration::from_millis(1), Duration::from_secs(5));
        let (mut woken, timeout) = shared.unread.wait_timeout(state, wait).ok()?;
        // A call in progress looks at them itself.
        if unsettled && timeout.timed_out() && shared.calls.load(Ordering::Relaxed) == 0 {
            settle(shared, &mut woken)?;
        }
        state = woken;
    }
}

/// Looks again at the entries whose stamps were not trusted yet, as a call
/// would: those trusted now become files to read. `None` when that took
/// the model over its memory limit (it is switched off).
fn settle(shared: &Shared, state: &mut State) -> Option<()> {
    let State::Ready(live) = state else {
        return None;
    };
    let changed = live.tree.refresh(Changes::Paths(Vec::new()), &shared.gate);
    match changed {
        // The tree changed under the look: the next call sweeps.
        None => live.sweep_owed = true,
        Some(changed) if changed > 0 && !live.fits(shared.limit_bytes) => {
            tracing::info!(
                "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree from now on",
                live.bytes() / (1024 * 1024)
            );
            switch_off(state);
            return None;
        }
        Some(_) => {}
    }
    Some(())
}

/// Walks the root into a file list (contents not read yet), with the change
/// watcher started first so that nothing changed meanwhile is missed.
/// Returns the model without an index and the files to index, in order.
///
/// The walk and a `stat` of every entry run on the walker's threads; the
/// sorted entries then fill the tree's map in bulk.
pub(super) fn list(shared: &Shared, pacer: &mut Pacer) -> Option<(Live, Listed)> {
    let root = shared.gate.root();
    // Watching reads every folder: it too yields to calls.
    let watcher = ChangeWatcher::start(
        root,
        shared.change_notifications,
        in_skipped_folder(root),
        &mut || pacer.yield_to_calls(shared),
    );
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
        let mut stamper = Stamper::default();
        let (gate, held, over_limit, cancel) =
            (&shared.gate, &held, &over_limit_seen, &options.cancel);
        move |relative: &str, real: &Path, kind| {
            if shared.cancelled.load(Ordering::Relaxed) {
                cancel.cancel();
                return None;
            }
            pacer.yield_to_calls(shared);
            let node = make_listed_node(gate, &mut stamper, kind, relative, real);
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
    // The files in path order, as the build reads them.
    for (key, node) in tree.under(".") {
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
        listed.files.push(key.0.clone());
    }
    tracing::debug!(
        "index: walked {} entries in {walk_ms} ms",
        tree.entry_count()
    );
    if tree.bytes() + listed_bytes(&listed) > shared.limit_bytes {
        over_limit(shared);
        return None;
    }
    let live = Live {
        tree,
        sweep_owed: false,
        base: BaseIndex::default(),
        watcher,
        without_filters: false,
    };
    Some((live, listed))
}

/// What the list of files to index holds, in bytes.
fn listed_bytes(listed: &Listed) -> usize {
    heap_bytes(listed.files.capacity() * size_of::<String>())
        + listed
            .files
            .iter()
            .map(|relative| heap_bytes(relative.len()))
            .sum::<usize>()
}

/// The files the build will index, in order, and what indexing them is
/// expected to take.
#[derive(Default)]
pub(super) struct Listed {
    pub(super) files: Vec<String>,
    /// Their bytes, those over the searcher's cap left out.
    pub(super) bytes: u64,
    /// What the large files' filters would take.
    pub(super) filter_bytes: usize,
}

/// The model answers calls now: calls waiting for the restore go on, and
/// what the build does from here on runs at the lowest priority.
fn serving(shared: &Shared) {
    shared.restoring.store(false, Ordering::Release);
    shared.left_building.notify_all();
    lower_priority();
}

/// Hands the segments `base` holds (all of its ids so far) and their files
/// to the model; `base` then holds what follows. `None` when the model is
/// gone.
fn install_written(
    shared: &Shared,
    base: &mut BaseIndex,
    files: &mut Vec<(String, Stamp, Content)>,
) -> Option<()> {
    let written = std::mem::replace(base, BaseIndex::starting_at(base.names_from));
    let mut state = shared.state.lock().ok()?;
    let State::Ready(live) = &mut *state else {
        return None;
    };
    live.base.append(written);
    adopt_all(live, std::mem::take(files));
    Some(())
}

/// Gives the model what the build read of `files`.
fn adopt_all(live: &mut Live, files: Vec<(String, Stamp, Content)>) {
    for (relative, stamp, content) in files {
        let indexed = matches!(content, Content::Base(_));
        if !live.tree.adopt(&relative, stamp, content) && indexed {
            // A call re-read it meanwhile: its base name is out of date.
            live.tree.lose_base(&relative);
        }
    }
}

/// Writes `parts` (the lists of the files `files` holds from their first
/// id on) as one segment that becomes `base`'s next layer; true when
/// written. When it cannot be, the parts stay in memory, merged.
fn spill(
    writer: &mut SegmentWriter,
    base: &mut BaseIndex,
    parts: &mut Vec<Shard>,
    files: &[(String, Stamp, Content)],
) -> bool {
    let merged = Shard::merge(std::mem::take(parts));
    let written = match records(base, files, merged.id_range()) {
        Some(records) => writer
            .write(&merged, &records)
            .map_err(|error| error.to_string()),
        None => Err("the build's ids do not follow its files".to_string()),
    };
    match written {
        Ok(layer) => {
            base.shard.push(layer);
            base.names_mapped_before(merged.id_range().end);
            true
        }
        Err(error) => {
            tracing::info!("index cache: not written ({error}); the index stays in memory");
            parts.push(merged);
            false
        }
    }
}

/// What indexing the listed files found, to install in the model.
pub(super) struct Indexed {
    pub(super) base: BaseIndex,
    /// Each file read with a stamp that can be trusted, and what it holds.
    pub(super) files: Vec<(String, Stamp, Content)>,
    /// Every posting list was written to the cache (ready to commit).
    pub(super) on_disk: bool,
    /// Files read and indexed.
    pub(super) files_indexed: usize,
    pub(super) bytes_read: u64,
    /// The filters were left out to stay within the memory limit.
    pub(super) without_filters: bool,
}

/// Reads and indexes `files` in order, sealing shards as they fill, without
/// holding the model: calls go on meanwhile. With a `writer`, each run of
/// lists is written as a segment as it fills and, when `install`, handed
/// to the model at once with its files (searches read only the candidates
/// of the part of the tree indexed so far, every other file as the scan
/// would). `None` when cancelled or over the memory limit (`list_bytes`
/// being the file list's share).
pub(super) fn index_contents(
    shared: &Shared,
    pacer: &mut Pacer,
    listed: Listed,
    list_bytes: usize,
    mut writer: Option<&mut SegmentWriter>,
    install: bool,
) -> Option<Indexed> {
    let root = shared.gate.root();
    let mut indexer = Indexer::for_build();
    // A small memory limit bounds the sort's scratch too (a quarter of it).
    let shard_pairs = SHARD_PAIRS.min(shared.limit_bytes / 64).max(1024);
    let mut builder = ShardBuilder::new(0, shard_pairs);
    // Filters are left out from the start unless the file list, trigrams
    // of about a tenth of the bytes (6-7 % measured on source trees; those
    // of a run and its merge when they go to disk) and the filters all
    // fit: building them only to drop them costs the build most of its
    // time on a large tree.
    let spill_bytes = SPILL_BYTES.min(shared.limit_bytes / 8);
    let mut trigram_estimate = usize::try_from(listed.bytes / 10).unwrap_or(usize::MAX);
    if writer.is_some() {
        trigram_estimate = trigram_estimate.min(2 * spill_bytes);
    }
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
    // Where in `files` the ids of the lists not written yet begin.
    let mut unwritten_from = 0;
    let mut files_indexed = 0;
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
                let FileGrams { trigrams, filter } = *grams;
                // Sealed before it would outgrow its room, so that the
                // pairs are never reallocated at twice the size.
                if builder.pairs() > 0 && builder.pairs() + trigrams.len() > shard_pairs {
                    let next = ShardBuilder::new(builder.next_id(), shard_pairs);
                    let shard = std::mem::replace(&mut builder, next).finish();
                    sealed_bytes += shard.bytes();
                    parts.push(shard);
                    if sealed_bytes >= spill_bytes
                        && let Some(into) = writer.as_deref_mut()
                    {
                        let written = spill(into, &mut base, &mut parts, &files[unwritten_from..]);
                        if !written {
                            writer = None;
                        } else if install {
                            install_written(shared, &mut base, &mut files)?;
                        }
                        sealed_bytes = parts.iter().map(Shard::bytes).sum();
                        unwritten_from = files.len();
                    }
                    // The sort's scratch is gone: without this, the
                    // freed pages stay with the process until the end.
                    return_freed_memory();
                }
                let id = builder.next_id();
                builder.add(&trigrams);
                files_indexed += 1;
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
    // A writer still held has written every run before this one.
    let on_disk =
        writer.is_some_and(|into| spill(into, &mut base, &mut parts, &files[unwritten_from..]));
    if !on_disk {
        // One lookup per trigram at query time instead of one per part.
        base.shard.push(Layer::Built(Shard::merge(parts)));
    } else if install {
        install_written(shared, &mut base, &mut files)?;
    }
    base.seal();
    Some(Indexed {
        base,
        files,
        on_disk,
        files_indexed,
        bytes_read,
        without_filters,
    })
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
