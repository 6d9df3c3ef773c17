//! Serves a new session from the index kept on disk: maps the root's
//! committed segments as layers with the ids the manifest gives them and,
//! against the file list just walked (the stat sweep), gives every file
//! whose stamp is the segment's its id at once. The ids of changed and
//! gone files are dead (tombstoned); changed and new files stay
//! candidates until the background reads them into new layers. Nothing is
//! read again because much changed: only what changed is read.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::base::{BaseIndex, Layer};
use super::cache::RootCache;
use super::live::Live;
use super::tree::{Adopted, Content};
use crate::walk::Stamp;

/// What the sweep found.
pub(super) struct Restored {
    pub(super) unchanged: usize,
    pub(super) changed: usize,
    pub(super) gone: usize,
}

/// Ids the manifest may give out beyond the files its segments hold: a
/// session leaves gaps where merged layers were, never more than there
/// are files (the lowest gap is taken first), so a larger id is forged.
fn id_room(files: u64) -> u64 {
    2 * files + 1024
}

/// The committed segments of a root's cache, opened and checked, each a
/// layer with its dead ids.
pub(super) struct Opened {
    layers: Vec<(Layer, Vec<std::ops::Range<u32>>)>,
    bytes: u64,
}

/// Opens the committed segments of `cache`; `None` when there are none or
/// they are unusable. Together they may take at most `max_bytes` (the disk
/// budget): a larger one is refused before it is read.
pub(super) fn open_committed(cache: &RootCache, max_bytes: u64) -> Option<Opened> {
    // A folder someone else owns, or a link, is never read (in a shared
    // XDG_CACHE_HOME another user could plant one).
    if let Err(error) = cache.create() {
        tracing::debug!("index cache: {error}; the index stays in memory");
        return None;
    }
    let committed = match cache.committed() {
        Ok(committed) => committed,
        Err(error) => {
            tracing::info!("index cache: {error}; rebuilding");
            return None;
        }
    };
    if committed.is_empty() {
        return None;
    }
    let mut layers = Vec::with_capacity(committed.len());
    let mut bytes = 0u64;
    for segment in &committed {
        match cache.open_segment(&segment.name, max_bytes.saturating_sub(bytes)) {
            // A segment of no file holds nothing to serve.
            Ok(opened) if opened.file_count() == 0 => {}
            Ok(opened) => {
                bytes = bytes.saturating_add(opened.bytes() as u64);
                if segment
                    .dead
                    .last()
                    .is_some_and(|run| run.end > opened.file_count())
                {
                    tracing::info!("index cache: dead ids past a segment's files; rebuilding");
                    return None;
                }
                layers.push((
                    Layer {
                        first_id: segment.first_id,
                        segment: Arc::new(opened),
                        stored: Some(segment.name.clone()),
                    },
                    segment.dead.clone(),
                ));
            }
            Err(error) => {
                tracing::info!("index cache: {error}; rebuilding");
                return None;
            }
        }
    }
    if !ids_apart(&mut layers) {
        tracing::info!(
            "index cache: its segments' ids overlap or run past their files; rebuilding"
        );
        return None;
    }
    Some(Opened { layers, bytes })
}

/// Files of the committed index whose stamps are compared with the tree's
/// before the walk, spread evenly over its files (dead ones passed over).
const SAMPLE_FILES: u64 = 64;

/// Whether most of `opened`'s live files still have the stamps it
/// recorded, judged by a stat of a sample of them under `root`: when they
/// do not (a `chmod -R`, or a checkout of most files while no server ran),
/// every file is a candidate until the background has read it again, and a
/// call scans sooner than it could wait for the walk and the sweep. Names
/// come from checked segments (root-relative, no `..`); a stat tells
/// nothing to a client.
pub(super) fn mostly_current(opened: &Opened, root: &Path) -> bool {
    let files: u64 = opened
        .layers
        .iter()
        .map(|(layer, _)| u64::from(layer.segment.file_count()))
        .sum();
    let step = usize::try_from(files / SAMPLE_FILES).map_or(1, |step| step.max(1));
    let every_file = opened.layers.iter().flat_map(|(layer, dead)| {
        (0..layer.segment.file_count()).map(move |local| (layer, dead, local))
    });
    let (mut sampled, mut changed) = (0u64, 0u64);
    // Dead files (a manifest may list many runs) are looked up for the
    // sample only.
    for (layer, dead, local) in every_file.step_by(step) {
        if dead.iter().any(|run| run.contains(&local)) {
            continue;
        }
        let Some(file) = layer.segment.file(local) else {
            continue;
        };
        sampled += 1;
        let now = Stamp::lstat(&root.join(file.name)).map(|(_, stamp)| stamp);
        if now.ok() != Some(file.stamp) {
            changed += 1;
        }
    }
    // Each record read mapped a large folio of its segment: the sweep reads
    // them again only after the walk.
    for (layer, _) in &opened.layers {
        layer.segment.drop_resident_pages();
    }
    changed * 2 <= sampled
}

/// Installs the `opened` segments as `live`'s layers; `None` (and `live`
/// untouched) when they take more than `max_bytes` (what an index of the
/// tree just listed can hold).
pub(super) fn restore(
    cache: &RootCache,
    opened: Opened,
    live: &mut Live,
    max_bytes: u64,
) -> Option<Restored> {
    let started = Instant::now();
    if opened.bytes > max_bytes {
        tracing::info!(
            "index cache: its segments take more than an index of this tree can; rebuilding"
        );
        return None;
    }
    let Opened { layers, .. } = opened;
    let segments = layers.len();
    let mut base = BaseIndex::new(cache.root().to_string());
    let mut restored = Restored {
        unchanged: 0,
        changed: 0,
        gone: 0,
    };
    for (layer, dead) in layers {
        let segment = layer.segment;
        // Its tombstones: versions of files that changed or went before
        // the commit. A lie costs only a read, as the sweep checks the rest.
        for run in &dead {
            for local in run.clone() {
                live.tree.lose_id(layer.first_id + local);
            }
        }
        let files = (0..segment.file_count())
            .map(|local| segment.file(local))
            .collect::<Option<Vec<_>>>()?;
        let alive: Vec<_> = (layer.first_id..)
            .zip(files)
            .filter(|(id, _)| !live.tree.is_dead(*id))
            .collect();
        // Taken only by a settled file of the same stamp, not indexed yet
        // (a name two segments hold is taken once).
        let outcomes = live.tree.adopt_in_order(
            alive
                .iter()
                .map(|(id, file)| (file.name, file.stamp, Content::Base(*id))),
        );
        for ((id, _), outcome) in alive.iter().zip(outcomes) {
            match outcome {
                Adopted::Unchanged => restored.unchanged += 1,
                Adopted::Changed => {
                    live.tree.lose_id(*id);
                    restored.changed += 1;
                }
                Adopted::Gone => {
                    live.tree.lose_id(*id);
                    restored.gone += 1;
                }
            }
        }
        // The sweep read every name and stamp: pages a search may never need.
        segment.drop_resident_pages();
        base.insert(Layer { segment, ..layer });
    }
    base.seal();
    live.base = base;
    tracing::debug!(
        "index cache: {} segments used: {} files unchanged, {} changed, {} gone (sweep {} ms)",
        segments,
        restored.unchanged,
        restored.changed,
        restored.gone,
        started.elapsed().as_millis()
    );
    let _ = cache.mark_used();
    Some(restored)
}

/// Sorts `layers` by first id; whether their ids do not overlap and stay
/// within what their files can need.
fn ids_apart<T>(layers: &mut [(Layer, T)]) -> bool {
    layers.sort_by_key(|(layer, _)| layer.first_id);
    let files: u64 = layers
        .iter()
        .map(|(layer, _)| u64::from(layer.segment.file_count()))
        .sum();
    let end = |layer: &Layer| u64::from(layer.first_id) + u64::from(layer.segment.file_count());
    layers
        .windows(2)
        .all(|pair| end(&pair[0].0) <= u64::from(pair[1].0.first_id))
        && layers
            .last()
            .is_none_or(|(last, _)| end(last) <= id_room(files))
}
