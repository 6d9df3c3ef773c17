//! After the build, the background keeps the index covering the tree, off
//! the calls' path and yielding to them, on the build's thread:
//!
//! - changes are applied as the change feed reports them (a thread waits
//!   on the feed and wakes the background; calls apply them too), and
//!   stamps too new to trust are looked at again on a timer as they
//!   settle; the files found changed are read, a batch at a time, into a
//!   new small layer; their old ids are dead already (tombstones). Until
//!   read, such a file is a candidate the searcher verifies, as the scan
//!   would. A checkout is so followed while it runs, and the kernel's
//!   queue of changes does not overflow;
//! - small layers are merged and mostly dead ones rewritten, as the merge
//!   policy says (`merge.rs`);
//! - once nothing is left to read or merge, the layers held on the heap
//!   are written to the cache and committed with the others;
//! - in idle time, the scrub (`scrub.rs`).
//!
//! "index ready" is logged once the index covers the tree and nothing is
//! left to merge or write; from then on, with no calls and no changes, the
//! background does no work until the scrub's idle time comes.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use super::base::Layer;
use super::build::{
    Built, Part, batch_bytes, cache_budget, new_readers, part_pairs, read_in_parallel,
    stored_layers, switch_off,
};
use super::indexer::{Indexer, Read};
use super::live::{Looker, TakeBacks};
use super::merge::{self, Input};
use super::os::return_freed_memory;
use super::pacer::Pacer;
use super::save::SegmentWriter;
use super::scrub::Scrub;
use super::segment::{ContentHash, RESIDENT_SECTIONS, Segment};
use super::tree::Content;
use super::watch::{ChangeSignal, ChangeWatcher};
use super::{Shared, State};
use crate::walk::Stamp;

/// Files read into one new layer.
const UNREAD_BATCH: usize = 256;

/// How often the background looks again at entries whose stamps it could
/// not trust yet: just over the finest tick's doubt (0.1 s), so that a
/// file written right before the build is indexed a moment after it.
const SETTLE_STEP: Duration = Duration::from_millis(120);

/// How long the background waits before it tries again to write the
/// layers when another server was writing the cache.
const STORE_RETRY: Duration = Duration::from_secs(30);

/// Layers held on the heap past this are written to the cache before more
/// files are read (otherwise once nothing is left to read or merge): a
/// branch switch's new layers do not pile up in memory.
const HEAP_LAYERS_BYTES: usize = 4 * 1024 * 1024;

/// A file for the background to read: its path, the stamp the list holds
/// and when it was first seen, and the versions of it the layers hold
/// (ids, dead, with the hashes of their texts).
type ToRead = (String, Stamp, SystemTime, Vec<(u32, ContentHash)>);

/// How long a changed file rests before the background reads it: one
/// rewritten again and again (a log the project does not ignore) is read
/// once it rests, not after every write; calls scan it meanwhile.
const CHANGE_QUIET: Duration = Duration::from_millis(500);

/// How long the change waker lets a burst of changes gather before it
/// wakes the background again.
const CHANGES_GATHER: Duration = Duration::from_millis(50);

/// What the background does next.
enum Work {
    /// Read these files.
    Read(Vec<ToRead>),
    /// Merge the layers of these first ids.
    Merge(Vec<u32>),
    /// Write the layers held on the heap to the cache, and commit.
    Store,
    /// Copy these mapped layers' lookup tables, lists and filters to the
    /// heap while the budget allows (`segment/read.rs`).
    KeepResident(Vec<Arc<Segment>>),
    Scrub,
}

/// Keeps the index covering the tree (see the module notes) until the
/// model is dropped or switched off.
pub(super) fn keep_indexing(shared: &Shared, built: Built) {
    let feed = match shared.state.lock().as_deref() {
        Ok(State::Ready(live)) => live
            .watcher
            .signal()
            .map(|signal| (Arc::clone(&live.watcher), signal)),
        _ => None,
    };
    std::thread::scope(|scope| {
        if let Some((watcher, signal)) = &feed {
            let waker = std::thread::Builder::new()
                .name("index-changes".into())
                .spawn_scoped(scope, || wake_on_changes(shared, watcher, signal));
            if waker.is_err() {
                tracing::debug!("index: no thread to wait for changes; calls apply them");
            }
        }
        keep_covering(shared, built);
        if let Some((_, signal)) = &feed {
            signal.stop();
        }
    });
}

/// Collects the changes as they come and wakes the background, until
/// `signal` is stopped or the feed breaks down (calls re-check the tree
/// from then on).
fn wake_on_changes(shared: &Shared, watcher: &ChangeWatcher, signal: &ChangeSignal) {
    while signal.wait() && !shared.stopping() && watcher.is_live() {
        watcher.collect();
        shared.changes_queued.store(true, Ordering::Release);
        shared.unread.notify_all();
        std::thread::sleep(CHANGES_GATHER);
    }
}

/// The background's loop: see the module notes.
fn keep_covering(shared: &Shared, built: Built) {
    let mut pacer = Pacer::default();
    let mut helper_pacer = Pacer::default();
    let mut readers = new_readers(shared);
    let mut scrub = Scrub::new(shared);
    let mut ready = Some(built);
    let mut store_after = Instant::now();
    let mut listed_after = None;
    loop {
        let Some(work) = next_work(
            shared,
            &mut readers,
            &mut scrub,
            &mut ready,
            store_after,
            &mut listed_after,
        ) else {
            return;
        };
        let _busy = super::Busy::new();
        let done = match work {
            Work::Read(batch) => {
                read_into_layer(shared, [&mut pacer, &mut helper_pacer], &mut readers, batch)
            }
            Work::Merge(first_ids) => merge_layers(shared, &mut pacer, &first_ids),
            Work::Store => {
                let stored = store_layers(shared, &mut pacer);
                if stored == Some(false) {
                    store_after = Instant::now() + STORE_RETRY;
                }
                stored.map(|_| ())
            }
            Work::KeepResident(segments) => {
                keep_resident(shared, &mut pacer, &segments);
                Some(())
            }
            Work::Scrub => scrub.run(shared, &mut pacer, &mut readers[0]),
        };
        if done.is_none() {
            return;
        }
    }
}

/// Waits for work and says what it is; logs "index ready" once the index
/// covers the tree and nothing is left to merge or write. Files a restore
/// left listed are read in path order, `listed_after` the last one handed
/// out. The mapped layers' pages the lookups of versions touched are
/// dropped as [`super::live::Live::count_lookups`] says, and whenever there
/// is nothing to do. `None` once the model is dropped or switched off.
fn next_work(
    shared: &Shared,
    readers: &mut [Indexer],
    scrub: &mut Scrub,
    ready: &mut Option<Built>,
    store_after: Instant,
    listed_after: &mut Option<String>,
) -> Option<Work> {
    let mut state = shared.state.lock().ok()?;
    loop {
        if shared.stopping() {
            return None;
        }
        // A call in progress applies them itself.
        if shared.calls.load(Ordering::Relaxed) == 0
            && shared.changes_queued.swap(false, Ordering::AcqRel)
        {
            catch_up(shared, &mut state)?;
        }
        let State::Ready(live) = &mut *state else {
            return None;
        };
        let now = Instant::now();
        let heap_bytes = heap_layers_bytes(shared, live);
        if now >= store_after && heap_bytes > HEAP_LAYERS_BYTES {
            return Some(Work::Store);
        }
        let large = merge::large_bytes(shared.limit_bytes);
        let sizes = live
            .base
            .sizes(|ids| live.tree.dead_count(ids), &live.restamped);
        if (live.tree.has_unread() || live.tree.has_listed())
            && let Some(first_ids) = merge::plan_while_reading(&sizes, large)
        {
            return Some(Work::Merge(first_ids));
        }
        let batch = if live.tree.has_unread() {
            live.tree.unread(UNREAD_BATCH, CHANGE_QUIET)
        } else if live.tree.has_listed() {
            let batch = live
                .tree
                .listed_to_read(listed_after.as_deref(), UNREAD_BATCH);
            *listed_after = batch.last().map(|(relative, _, _)| relative.clone());
            if batch.is_empty() {
                // What is left (stamps not trusted yet, files a batch did
                // not reach) is tracked one by one from now on.
                live.tree.finish_listing();
                continue;
            }
            batch
        } else {
            Vec::new()
        };
        if !batch.is_empty() {
            live.count_lookups(batch.len());
            for reader in readers.iter_mut() {
                reader.without_filters = live.without_filters;
            }
            let batch = batch.into_iter().map(|(relative, stamp, first_seen)| {
                let versions = live.base.versions_of(&relative);
                (relative, stamp, first_seen, versions)
            });
            return Some(Work::Read(batch.collect()));
        }
        if let Some(first_ids) = merge::plan(&sizes, large) {
            return Some(Work::Merge(first_ids));
        }
        if now >= store_after && heap_bytes > 0 {
            return Some(Work::Store);
        }
        if live.tree.is_covered()
            && let Some(built) = ready.take()
        {
            // At the default level: the one line that says searches now
            // read only candidate files.
            tracing::info!(
                "index ready: {}, the tree covered in {} ms",
                built.summary,
                built.started.elapsed().as_millis()
            );
        }
        if live.looked_up > 0 {
            live.drop_mapped_pages();
        }
        let calls = shared.calls.load(Ordering::Relaxed) > 0;
        if !calls {
            live.tree.compact_if_slack();
            let untried: Vec<Arc<Segment>> = live
                .base
                .layers()
                .iter()
                .filter(|layer| {
                    RESIDENT_SECTIONS
                        .iter()
                        .any(|&section| layer.segment.resident_untried(section))
                })
                .map(|layer| Arc::clone(&layer.segment))
                .collect();
            if !untried.is_empty() {
                return Some(Work::KeepResident(untried));
            }
        }
        let scrub_due = scrub.due(shared, live);
        if scrub_due.is_some_and(|due| now >= due) && !calls {
            return Some(Work::Scrub);
        }
        // Woken by queued changes, by a call that left files unread, or by
        // the model's drop; the timeout guards against a missed wake-up,
        // brings the scrub (once the calls running are done), and looks
        // again at stamps not trusted yet as soon as they can be.
        let unsettled = live.tree.has_unsettled();
        let mut wait = match scrub_due {
            Some(due) if now >= due => Duration::from_millis(100),
            Some(due) => due.saturating_duration_since(now),
            None => Duration::from_secs(5),
        };
        // Files changed a moment ago are read once they rest.
        if unsettled || live.tree.has_unread() {
            wait = wait.min(SETTLE_STEP);
        }
        if store_after > now && heap_bytes > 0 {
            wait = wait.min(store_after - now);
        }
        let wait = wait.clamp(Duration::from_millis(1), Duration::from_secs(5));
        let (mut woken, timeout) = shared.unread.wait_timeout(state, wait).ok()?;
        // A call in progress looks at them itself.
        if unsettled && timeout.timed_out() && shared.calls.load(Ordering::Relaxed) == 0 {
            catch_up(shared, &mut woken)?;
        }
        state = woken;
    }
}

/// Copies the lookup tables of `segments`, then their postings, then
/// their filters, to the heap, each section in all of them or in none, as
/// the model's budget allows, pausing for calls between copies (each a
/// read of one section, a few MiB).
fn keep_resident(shared: &Shared, pacer: &mut Pacer, segments: &[Arc<Segment>]) {
    for section in RESIDENT_SECTIONS {
        Segment::keep_resident_in_all(segments, section, &shared.resident, || {
            pacer.yield_to_calls(shared);
            !shared.stopping()
        });
    }
    tracing::debug!(
        "index: sections of {} of {} mapped layers held on the heap ({} bytes; {} bytes of the budget left)",
        segments
            .iter()
            .filter(|segment| segment.resident_bytes() > 0)
            .count(),
        segments.len(),
        segments
            .iter()
            .map(|segment| segment.resident_bytes())
            .sum::<usize>(),
        shared.resident.left()
    );
}

/// What the layers held on the heap only take, when they are to be
/// written to the cache (0 when there is none, or it was given up).
fn heap_layers_bytes(shared: &Shared, live: &super::live::Live) -> usize {
    if shared.cache.get().is_none() || shared.cache_given_up.load(Ordering::Relaxed) {
        return 0;
    }
    live.base
        .layers()
        .iter()
        .filter(|layer| layer.stored.is_none())
        .map(|layer| layer.segment.heap_bytes().max(1))
        .sum()
}

/// Applies the changes queued and looks again at the entries whose stamps
/// were not trusted yet, as a call would: files found changed become
/// files to read. `None` when that took the model over its memory limit
/// (it is switched off).
fn catch_up(shared: &Shared, state: &mut State) -> Option<()> {
    let State::Ready(live) = state else {
        return None;
    };
    let changed = live.catch_up(&shared.gate, Looker::Background);
    if changed.is_some_and(|changed| changed > 0) && !live.fits(shared.limit_bytes) {
        over_the_limit(state);
        return None;
    }
    Some(())
}

/// Switches the model off, saying why.
fn over_the_limit(state: &mut State) {
    if let State::Ready(live) = state {
        tracing::info!(
            "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree from now on",
            live.bytes() / (1024 * 1024)
        );
    }
    switch_off(state);
}

/// Reads `batch` (in path order) without holding the model and hands it
/// back as one new layer of the files read in the version the list holds;
/// a file whose text hashes as the version it held before takes that id
/// back; the others stay candidates. `None` once the model is gone or over
/// its memory limit.
fn read_into_layer(
    shared: &Shared,
    pacers: [&mut Pacer; 2],
    readers: &mut [Indexer],
    batch: Vec<ToRead>,
) -> Option<()> {
    let root = shared.gate.root();
    let pairs = part_pairs(shared);
    let mut part = Part::new(0, pairs);
    let mut others = Vec::new();
    let mut same = Vec::new();
    // Files of which a layer holds a version, and of those the ones that
    // hold its text.
    let mut versioned = TakeBacks::default();
    let [pacer, helper_pacer] = pacers;
    let mut rest = batch.as_slice();
    // Read a bounded share of bytes at a time on the readers' threads,
    // until the part is full (as a build's: the rest of the batch waits
    // for the next).
    while !rest.is_empty() && part.pairs() < pairs {
        let (chunk, after) = rest.split_at(bounded_chunk(rest, batch_bytes(shared)));
        rest = after;
        let reads = read_in_parallel(
            shared,
            readers,
            [&mut *pacer, &mut *helper_pacer],
            chunk.len(),
            |reader, at| {
                let (relative, stamp, first_seen, versions) = &chunk[at];
                let hashes: Vec<ContentHash> = versions.iter().map(|(_, hash)| *hash).collect();
                reader.read_after(
                    &shared.gate,
                    &root.join(relative),
                    Some((*stamp, *first_seen)),
                    &hashes,
                )
            },
        )?;
        for ((relative, stamp, _, versions), (now, trusted, read)) in chunk.iter().zip(reads) {
            if part.pairs() >= pairs {
                break;
            }
            let (relative, stamp) = (relative.clone(), *stamp);
            match read {
                Read::Same(at) if now == Some(stamp) && trusted => {
                    versioned.record(true);
                    same.push((relative, stamp, versions[at]));
                }
                Read::Grams(grams) if now == Some(stamp) && trusted => {
                    if !versions.is_empty() {
                        versioned.record(false);
                    }
                    part.add(&relative, stamp, grams);
                }
                Read::Content(content) if now == Some(stamp) && trusted => {
                    others.push((relative, stamp, content));
                }
                // Changed since the list saw it: the change feed (or a call)
                // queues it again; meanwhile it is always a candidate.
                _ => others.push((relative, stamp, Content::Always)),
            }
        }
    }
    let (segment, indexed) = part.seal(&super::segment::root_text(root));
    if segment.is_none() {
        // The layer could not be made: candidates.
        others.extend(
            indexed
                .iter()
                .map(|(relative, stamp)| (relative.clone(), *stamp, Content::Always)),
        );
    }
    let mut state = shared.state.lock().ok()?;
    let State::Ready(live) = &mut *state else {
        return None;
    };
    live.take_backs.add(versioned);
    if let Some(segment) = segment {
        let first_id = live.base.free_ids(segment.file_count())?;
        live.base.insert(Layer {
            first_id,
            segment: Arc::new(segment),
            stored: None,
        });
        for ((relative, stamp), id) in indexed.into_iter().zip(first_id..) {
            if !live.tree.adopt(&relative, stamp, Content::Base(id)) {
                live.tree.lose_id(id);
            }
        }
    }
    let mut taken_back = 0;
    for (relative, stamp, version) in same {
        // Still that version under that id (no merge moved it meanwhile);
        // its layer's record keeps the old stamp: the layer is rewritten
        // once enough of its files were taken back so.
        if live.base.versions_of(&relative).contains(&version)
            && live.adopt_version(&relative, stamp, version.0)
        {
            taken_back += 1;
        } else {
            others.push((relative, stamp, Content::Unread));
        }
    }
    if taken_back > 0 {
        tracing::debug!(
            "index: {taken_back} files read again hold the text indexed before; their ids taken back"
        );
    }
    for (relative, stamp, content) in others {
        live.tree.adopt(&relative, stamp, content);
    }
    if !live.fits(shared.limit_bytes) {
        over_the_limit(&mut state);
        return None;
    }
    let idle = !live.tree.has_unread() && !live.tree.has_listed();
    drop(state);
    if idle {
        // What the reads held is free now: give it back, so that churn
        // does not leave the process larger.
        return_freed_memory();
    }
    Some(())
}

/// How many of `files` (at least one) to read at once: what they hold
/// stays within `bytes`.
fn bounded_chunk(files: &[ToRead], bytes: u64) -> usize {
    let mut held = 0u64;
    let within = files
        .iter()
        .take_while(|(_, stamp, _, _)| {
            held = held.saturating_add(stamp.size());
            held <= bytes
        })
        .count();
    within.max(1).min(files.len())
}

/// Merges the layers `first_ids` into one (off the model's lock, pausing
/// for calls) and puts it in their place: each file still holding its old
/// id takes its new one; files changed meanwhile leave theirs dead. A
/// layer that cannot be read through is given up: its files are read
/// again. `None` once the model is gone.
fn merge_layers(shared: &Shared, pacer: &mut Pacer, first_ids: &[u32]) -> Option<()> {
    let (root, layers, alive, stamps, drop_filters) = {
        let state = shared.state.lock().ok()?;
        let State::Ready(live) = &*state else {
            return None;
        };
        let layers: Vec<Layer> = first_ids
            .iter()
            .filter_map(|&first_id| live.base.layer(first_id).cloned())
            .collect();
        let alive: Vec<Vec<bool>> = layers
            .iter()
            .map(|layer| layer.ids().map(|id| !live.tree.is_dead(id)).collect())
            .collect();
        // Files taken back with a new stamp get it in the merged layer.
        let stamps: Vec<Vec<Option<Stamp>>> = layers
            .iter()
            .map(|layer| {
                (0..layer.segment.file_count())
                    .map(|local| current_stamp(live, layer, local))
                    .collect()
            })
            .collect();
        (
            live.base.root().to_string(),
            layers,
            alive,
            stamps,
            live.without_filters,
        )
    };
    let inputs: Vec<Input> = layers
        .iter()
        .zip(alive)
        .zip(stamps)
        .map(|((layer, alive), stamps)| Input {
            segment: &layer.segment,
            alive,
            stamps,
        })
        .collect();
    let merged = merge::merge(&root, &inputs, drop_filters, &mut || {
        pacer.yield_to_calls(shared)
    })
    .and_then(|merged| Ok((Segment::from_bytes(merged.bytes, &root)?, merged.sources)));
    let mut state = shared.state.lock().ok()?;
    let State::Ready(live) = &mut *state else {
        return None;
    };
    let (segment, sources) = match merged {
        Ok(merged) => merged,
        Err(error) => {
            tracing::warn!(
                "index: layers could not be merged ({error}); their files are read again"
            );
            for layer in &layers {
                live.drop_layer(layer.first_id);
            }
            shared.unread.notify_all();
            return Some(());
        }
    };
    // The new ids are taken before the old ones are freed: no id stands
    // for two files at once.
    let new_first = match segment.file_count() {
        0 => None,
        files => Some(live.base.free_ids(files)?),
    };
    // Each input's map from its local ids to the new ones.
    let mut maps: Vec<Vec<Option<u32>>> = layers
        .iter()
        .map(|layer| vec![None; layer.segment.file_count() as usize])
        .collect();
    if let Some(first_id) = new_first {
        for (new, &(input, local)) in (first_id..).zip(&sources) {
            maps[input][local as usize] = Some(new);
            let old = layers[input].first_id + local;
            let name = layers[input].segment.file(local).map(|file| file.name);
            let kept = name.is_some_and(|name| live.tree.move_id(name, old, new));
            if !kept {
                live.tree.lose_id(new);
            }
        }
        live.base.insert(Layer {
            first_id,
            segment: Arc::new(segment),
            stored: None,
        });
    }
    let moved = |old: u32| {
        let input = layers.iter().position(|layer| layer.ids().contains(&old))?;
        Some(maps[input][(old - layers[input].first_id) as usize])
    };
    for (name, old, new) in live.base.move_other_names(moved) {
        match new {
            Some(new) => {
                live.tree.move_id(&name, old, new);
            }
            None => {
                live.tree.read_again_holding(&name, old);
            }
        }
    }
    for layer in &layers {
        live.base.remove(layer.first_id);
        live.tree.forget_ids(layer.ids());
        live.restamped.remove(&layer.first_id);
    }
    drop(state);
    return_freed_memory();
    Some(())
}

/// The stamp file `local` of `layer` has now, when it still holds its id
/// under a stamp other than the one the layer recorded (taken back after
/// a change that kept its text).
fn current_stamp(live: &super::live::Live, layer: &Layer, local: u32) -> Option<Stamp> {
    let file = layer.segment.file(local)?;
    let (_, node) = live.tree.get(file.name)?;
    let holds = matches!(node.content, Content::Base(id) if id == layer.first_id + local);
    node.stamp.filter(|stamp| holds && *stamp != file.stamp)
}

/// Writes the layers held on the heap to the cache and commits every
/// layer with its dead ids: the next session starts from them.
/// `Some(false)` when another server is writing the cache; `None` once the
/// model is gone.
fn store_layers(shared: &Shared, pacer: &mut Pacer) -> Option<bool> {
    let (cache, _) = shared.cache.get()?;
    let (to_store, kept_bytes) = {
        let state = shared.state.lock().ok()?;
        let State::Ready(live) = &*state else {
            return None;
        };
        let mut to_store = Vec::new();
        let mut kept_bytes = 0u64;
        for layer in live.base.layers() {
            if layer.stored.is_some() {
                kept_bytes += layer.segment.bytes() as u64;
            } else {
                to_store.push(layer.clone());
            }
        }
        (to_store, kept_bytes)
    };
    let Some(mut writer) = SegmentWriter::open(cache, cache_budget(shared), kept_bytes) else {
        return Some(false);
    };
    for layer in to_store {
        pacer.yield_to_calls(shared);
        match writer.store(&layer.segment) {
            Ok((name, mapped)) => {
                let mut state = shared.state.lock().ok()?;
                let State::Ready(live) = &mut *state else {
                    return None;
                };
                // Merged away meanwhile: its file goes with the commit.
                if live
                    .base
                    .layer(layer.first_id)
                    .is_some_and(|now| Arc::ptr_eq(&now.segment, &layer.segment))
                {
                    live.base.store(layer.first_id, mapped, name);
                }
            }
            Err(error) => {
                tracing::info!("index cache: not written ({error}); the index stays in memory");
                shared.cache_given_up.store(true, Ordering::Relaxed);
                return Some(true);
            }
        }
    }
    let layers = {
        let state = shared.state.lock().ok()?;
        let State::Ready(live) = &*state else {
            return None;
        };
        stored_layers(live)
    };
    // Another server's commit since removes what it does not name: a
    // manifest never names a file that is not there.
    let present = |layers: &[super::cache::Committed]| {
        layers
            .iter()
            .all(|layer| std::fs::symlink_metadata(cache.folder().join(&layer.name)).is_ok())
    };
    if let Some(layers) = layers.filter(|layers| present(layers)) {
        writer.commit(&layers);
    }
    return_freed_memory();
    Some(true)
}
