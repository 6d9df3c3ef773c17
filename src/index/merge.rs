//! Merges segments, and decides which to merge.
//!
//! # The policy
//!
//! Every layer of the index is a segment (see `base.rs`). The build writes
//! runs of several MiB; the background writes a small segment for each
//! batch of changed files it reads, so after a branch switch the index
//! gains a segment every few hundred files. A lookup visits every layer,
//! so small ones are merged as they come, size-tiered (as Lucene's tiered
//! policy and Zoekt's compaction do):
//!
//! 1. A layer's tier is how many times its live bytes (its bytes times the
//!    share of its files still alive) exceed [`TIER_BASE`] by a factor of
//!    [`TIER_FACTOR`]: below 64 KiB tier 0, below 256 KiB tier 1, and so on.
//!    Layers of [`LARGE_BYTES`] or more (less under a small
//!    `[index] max_memory_mb`: an eighth of it) join no tier.
//! 2. When [`TIER_WIDTH`] layers share a tier, the lowest such tier's
//!    layers are merged into one, the smallest first, as many as fit in
//!    twice [`LARGE_BYTES`] (at least two): the merged layer lands a tier
//!    or two higher, and no merge holds more than that on the heap. Each
//!    byte is thus rewritten about once per tier, and at most
//!    `TIER_WIDTH - 1` layers stay in each of the few tiers below large.
//! 3. Otherwise, a layer more than half of whose files are dead (changed
//!    or gone since it was written: its tombstones), or one in
//!    [`RESTAMPED_SHARE`] of whose files took their ids back under a new
//!    stamp (their text unchanged), is rewritten alone, without the dead
//!    and with the new stamps; one with no live file left is dropped.
//!
//! 4. Files waiting to be read go first: they are candidates every call
//!    reads. But past [`MAX_SMALL_LAYERS`] layers below large, the tier
//!    merge of rule 2 goes before the next read, so that a stream of
//!    changes (a checkout while the server runs) does not pile up a layer
//!    per batch until it ends.
//! 5. Last, with nothing else to do, an index that keeps more than
//!    [`SETTLED_SMALL_LAYERS`] layers below large merges the smallest of
//!    them, each joining while it is at most [`SETTLE_RATIO`] times the
//!    bytes chosen before it (and all fit in twice [`LARGE_BYTES`]): after
//!    a branch switch the tiers' few layers each become one lookup fewer
//!    per trigram (a call after a u-boot checkout took 40 % longer with
//!    six small layers), while a layer is rewritten only once the smaller
//!    ones add up to a quarter of it, so edits one file at a time rewrite
//!    little.
//!
//! Merges run in the background, off the model's lock, pausing for calls;
//! the merged segment replaces its inputs in one step under the lock.
//!
//! # The merge
//!
//! As google/codesearch's `index/merge.go`: the live files of every input
//! (each input's in path order) are merged in path order and numbered from
//! 0 in that order; each input gets a map from its ids to the new ones,
//! dead files mapping nowhere. The inputs' lookup tables are walked
//! together in increasing trigram order; a trigram's new list is the union
//! of its inputs' lists, each mapped (and still increasing: ids follow path
//! order in every input and in the output). A trigram no live file holds
//! is left out. The output is encoded as any segment is, checked when it
//! is opened, and never trusted more than one written by the build.

use std::cell::RefCell;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::segment::{FileRecord, FilterBits, Segment, SegmentError, encode};
use crate::walk::{self, Stamp};

/// What a build's run of parts may hold on the heap before the parts are
/// joined into one layer. Unit tests' trees are small: there it is small
/// enough to make several.
pub(super) const FULL_BYTES: usize = if cfg!(test) {
    16 * 1024
} else {
    16 * 1024 * 1024
};
/// A layer this large is merged with no other (a build's runs are): 4 MiB.
const LARGE_BYTES: usize = FULL_BYTES / 4;

/// The size of a large layer under the memory limit `limit_bytes`: what a
/// merge holds on the heap stays within an eighth of it, as a build's run.
pub(super) fn large_bytes(limit_bytes: usize) -> usize {
    LARGE_BYTES.min(limit_bytes / 8).max(TIER_BASE)
}
/// Live bytes below which a layer is in tier 0: 64 KiB.
const TIER_BASE: usize = FULL_BYTES / 256;
/// How much larger each tier's layers are than the one below's.
const TIER_FACTOR: usize = 4;
/// Layers of one tier that call for a merge.
const TIER_WIDTH: usize = 4;

/// Layers below large past which a tier merge goes before reading more
/// files (rule 4); the tiers alone keep fewer than `TIER_WIDTH` in each of
/// the four or five below large.
const MAX_SMALL_LAYERS: usize = 16;

/// Layers below large that a settled index keeps (rule 5).
const SETTLED_SMALL_LAYERS: usize = 2;
/// How many times the bytes chosen before it a layer may hold to join a
/// rule-5 merge.
const SETTLE_RATIO: usize = 4;

/// What the policy knows of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LayerSize {
    pub(super) first_id: u32,
    pub(super) bytes: usize,
    pub(super) files: u32,
    pub(super) dead: u32,
    /// Files taken back with a stamp other than the one it recorded.
    pub(super) restamped: u32,
}

impl LayerSize {
    fn live_bytes(&self) -> usize {
        let live = u64::from(self.files.saturating_sub(self.dead));
        let bytes = self.bytes as u64 * live / u64::from(self.files.max(1));
        usize::try_from(bytes).unwrap_or(usize::MAX)
    }

    /// `None` for a layer of `large` bytes or more.
    fn tier(&self, large: usize) -> Option<u32> {
        if self.bytes >= large {
            return None;
        }
        let mut tier = 0;
        let mut bound = TIER_BASE;
        while self.live_bytes() >= bound {
            tier += 1;
            bound = bound.saturating_mul(TIER_FACTOR);
        }
        Some(tier)
    }
}

/// The layers (by first id) to merge next, if any (see the policy above),
/// layers of `large` bytes joining no tier.
pub(super) fn plan(layers: &[LayerSize], large: usize) -> Option<Vec<u32>> {
    if let Some(chosen) = tier_merge(layers, large) {
        return Some(chosen);
    }
    let rewrite = layers
        .iter()
        .filter(|layer| {
            u64::from(layer.dead) * 2 > u64::from(layer.files)
                || u64::from(layer.restamped) * RESTAMPED_SHARE > u64::from(layer.files)
        })
        .max_by_key(|layer| (layer.dead + layer.restamped, Reverse(layer.first_id)));
    match rewrite {
        Some(layer) => Some(vec![layer.first_id]),
        None => settle_merge(layers, large),
    }
}

/// Rule 5's merge, if more small layers are left than a settled index
/// keeps.
fn settle_merge(layers: &[LayerSize], large: usize) -> Option<Vec<u32>> {
    let mut small: Vec<&LayerSize> = layers
        .iter()
        .filter(|layer| layer.tier(large).is_some())
        .collect();
    if small.len() <= SETTLED_SMALL_LAYERS {
        return None;
    }
    small.sort_by_key(|layer| (layer.live_bytes(), layer.first_id));
    let (mut chosen, mut bytes) = (Vec::new(), 0usize);
    for layer in small {
        let live = layer.live_bytes();
        let near = chosen.len() < 2 || live <= bytes.saturating_mul(SETTLE_RATIO);
        if !near || bytes + live > 2 * large {
            break;
        }
        bytes += live;
        chosen.push(layer.first_id);
    }
    (chosen.len() >= 2).then_some(chosen)
}

/// The merge to run before reading more files (rule 4), if any.
pub(super) fn plan_while_reading(layers: &[LayerSize], large: usize) -> Option<Vec<u32>> {
    let small = layers
        .iter()
        .filter(|layer| layer.tier(large).is_some())
        .count();
    if small <= MAX_SMALL_LAYERS {
        return None;
    }
    tier_merge(layers, large)
}

/// Rule 2's merge, if a tier is full.
fn tier_merge(layers: &[LayerSize], large: usize) -> Option<Vec<u32>> {
    let mut tiered: Vec<(u32, LayerSize)> = layers
        .iter()
        .filter_map(|layer| Some((layer.tier(large)?, *layer)))
        .collect();
    tiered.sort_by_key(|(tier, layer)| (*tier, layer.live_bytes(), layer.first_id));
    for group in tiered.chunk_by(|a, b| a.0 == b.0) {
        if group.len() < TIER_WIDTH {
            continue;
        }
        let mut bytes = 0;
        let chosen: Vec<u32> = group
            .iter()
            .take_while(|(_, layer)| {
                bytes += layer.live_bytes();
                bytes <= 2 * large
            })
            .map(|(_, layer)| layer.first_id)
            .collect();
        if chosen.len() >= 2 {
            return Some(chosen);
        }
    }
    None
}

/// A layer one of whose files in this many (or more) was taken back under
/// a new stamp is rewritten with the stamps the files have now: until then
/// each session reads those files again to compare their text.
const RESTAMPED_SHARE: u64 = 8;

/// One segment to merge, which of its files are alive (by local id), and
/// the stamps that replace the ones it recorded (by local id; empty for
/// none).
pub(super) struct Input<'a> {
    pub(super) segment: &'a Segment,
    pub(super) alive: Vec<bool>,
    pub(super) stamps: Vec<Option<Stamp>>,
}

/// A merged segment's bytes, and where each of its files came from: the
/// input and its local id there, by new id.
pub(super) struct Merged {
    pub(super) bytes: Vec<u8>,
    pub(super) sources: Vec<(usize, u32)>,
}

/// A name at the head of one input, ordered as the walker orders paths.
#[derive(PartialEq, Eq)]
struct Head<'a> {
    name: &'a str,
    input: usize,
    local: u32,
}

impl Ord for Head<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        walk::path_order(self.name, other.name).then(self.input.cmp(&other.input))
    }
}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Merges `inputs` into one segment of `root` (see the module notes),
/// without the large files' filters when `drop_filters`. `pause` runs
/// between two trigrams' lists, where the merge may yield to calls. A
/// name alive in two inputs is kept once, from the first.
pub(super) fn merge(
    root: &str,
    inputs: &[Input],
    drop_filters: bool,
    pause: &mut dyn FnMut(),
) -> Result<Merged, SegmentError> {
    let (bytes, sources) = merge_into(inputs, drop_filters, pause, |records, lists| {
        encode(root, records, lists)
    })?;
    Ok(Merged { bytes, sources })
}

/// Merges `inputs` as [`merge`] does, handing the merged files and lists
/// to `encode` (which may write them straight to a file): what it returns,
/// and where each new file came from.
pub(super) fn merge_into<T>(
    inputs: &[Input],
    drop_filters: bool,
    pause: &mut dyn FnMut(),
    encode: impl FnOnce(
        &[FileRecord],
        &mut dyn Iterator<Item = (u32, Vec<u32>)>,
    ) -> Result<T, SegmentError>,
) -> Result<(T, Vec<(usize, u32)>), SegmentError> {
    // The live files in path order, and each input's map to new ids.
    let mut maps: Vec<Vec<u32>> = inputs
        .iter()
        .map(|input| vec![u32::MAX; input.segment.file_count() as usize])
        .collect();
    let next_alive = |input: usize, from: u32| {
        (from..inputs[input].segment.file_count())
            .find(|&local| inputs[input].alive.get(local as usize) == Some(&true))
    };
    let head = |input: usize, from: u32| -> Result<Option<Reverse<Head>>, SegmentError> {
        let Some(local) = next_alive(input, from) else {
            return Ok(None);
        };
        let file = inputs[input]
            .segment
            .file(local)
            .ok_or(SegmentError::Damaged("file record"))?;
        Ok(Some(Reverse(Head {
            name: file.name,
            input,
            local,
        })))
    };
    let mut heads = BinaryHeap::new();
    for input in 0..inputs.len() {
        heads.extend(head(input, 0)?);
    }
    let mut sources = Vec::new();
    let mut records = Vec::new();
    let mut previous: Option<&str> = None;
    while let Some(Reverse(Head { name, input, local })) = heads.pop() {
        heads.extend(head(input, local + 1)?);
        if previous == Some(name) {
            continue;
        }
        previous = Some(name);
        let file = inputs[input]
            .segment
            .file(local)
            .ok_or(SegmentError::Damaged("file record"))?;
        maps[input][local as usize] = sources.len() as u32;
        sources.push((input, local));
        let stamp = inputs[input].stamps.get(local as usize).copied().flatten();
        let filter = match file.filter.filter(|_| !drop_filters) {
            Some(at) => Some(FilterBits {
                case: at.case,
                bytes: inputs[input].segment.filter(at)?,
            }),
            None => None,
        };
        records.push(FileRecord {
            name: file.name,
            stamp: stamp.unwrap_or(file.stamp),
            hash: file.hash,
            filter,
        });
    }
    let failed = RefCell::new(None);
    let mut lists = MergedLists::new(inputs, &maps, &failed, pause);
    let encoded = encode(&records, &mut lists)?;
    drop(lists);
    match failed.into_inner() {
        Some(error) => Err(error),
        None => Ok((encoded, sources)),
    }
}

/// Trigrams merged between two releases of the inputs' pages: a few MiB
/// of lists and lookup entries.
const RELEASE_EVERY: usize = 32 * 1024;

/// One input's lists, trigram by trigram.
type Lists<'a> = Box<dyn Iterator<Item = (u32, Result<Vec<u32>, SegmentError>)> + 'a>;

/// The merged lists, trigram by trigram; the first list that fails to
/// decode ends them and is kept in `failed`.
struct MergedLists<'a, 'p> {
    inputs: &'a [Input<'a>],
    lists: Vec<Lists<'a>>,
    /// Trigrams merged since the inputs' pages were last given back.
    since_release: usize,
    /// The next trigram of each input, smallest first.
    heads: BinaryHeap<Reverse<(u32, usize)>>,
    pending: Vec<Option<Result<Vec<u32>, SegmentError>>>,
    maps: &'a [Vec<u32>],
    failed: &'a RefCell<Option<SegmentError>>,
    pause: &'p mut dyn FnMut(),
}

impl<'a, 'p> MergedLists<'a, 'p> {
    fn new(
        inputs: &'a [Input<'a>],
        maps: &'a [Vec<u32>],
        failed: &'a RefCell<Option<SegmentError>>,
        pause: &'p mut dyn FnMut(),
    ) -> Self {
        let mut merged = MergedLists {
            inputs,
            since_release: 0,
            lists: inputs
                .iter()
                .map(|input| match input.alive.contains(&true) {
                    // Nothing of it is kept: its lists are not even read.
                    false => Box::new(std::iter::empty()) as Lists,
                    true => Box::new(input.segment.lists()),
                })
                .collect(),
            heads: BinaryHeap::new(),
            pending: (0..inputs.len()).map(|_| None).collect(),
            maps,
            failed,
            pause,
        };
        for input in 0..inputs.len() {
            merged.advance(input);
        }
        merged
    }

    /// Reads input `input`'s next list.
    fn advance(&mut self, input: usize) {
        if let Some((trigram, ids)) = self.lists[input].next() {
            self.heads.push(Reverse((trigram, input)));
            self.pending[input] = Some(ids);
        }
    }
}

impl Iterator for MergedLists<'_, '_> {
    type Item = (u32, Vec<u32>);

    fn next(&mut self) -> Option<(u32, Vec<u32>)> {
        loop {
            if self.failed.borrow().is_some() {
                return None;
            }
            let Reverse((trigram, _)) = *self.heads.peek()?;
            (self.pause)();
            // A merge reads its mapped inputs through once: what it has
            // read goes back, so it never holds them all resident.
            self.since_release += 1;
            if self.since_release == RELEASE_EVERY {
                self.since_release = 0;
                for input in self.inputs {
                    input.segment.drop_resident_pages();
                }
            }
            let mut merged: Vec<u32> = Vec::new();
            while let Some(&Reverse((next, input))) = self.heads.peek() {
                if next != trigram {
                    break;
                }
                self.heads.pop();
                match self.pending[input].take() {
                    Some(Ok(ids)) => {
                        let map = &self.maps[input];
                        let mapped = ids
                            .into_iter()
                            .filter_map(|local| map.get(local as usize).copied())
                            .filter(|&id| id != u32::MAX);
                        merged = union_sorted(merged, mapped);
                    }
                    Some(Err(error)) => {
                        *self.failed.borrow_mut() = Some(error);
                        return None;
                    }
                    None => {}
                }
                self.advance(input);
            }
            if !merged.is_empty() {
                return Some((trigram, merged));
            }
        }
    }
}

/// The union of `a` and `b`, both increasing.
fn union_sorted(mut a: Vec<u32>, b: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut b = b.peekable();
    // Lists of inputs that do not interleave (a build's parts): joined.
    if b.peek()
        .is_none_or(|&first| a.last().is_none_or(|&last| last < first))
    {
        a.extend(b);
        return a;
    }
    let mut out = Vec::with_capacity(a.len());
    let mut a = a.into_iter().peekable();
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x < y => a.next(),
            (Some(x), Some(y)) if x > y => b.next(),
            (Some(_), Some(_)) => {
                b.next();
                a.next()
            }
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => return out,
        };
        out.extend(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::ngram::trigram;
    use crate::index::postings::ListBuilder;
    use crate::index::segment::ContentHash;
    use crate::walk::Stamp;

    const ROOT: &str = "/project";

    /// A heap segment of `names` (any order; sorted here), where a file
    /// holds the trigrams `held` gives for its name.
    fn segment(names: &[&str], held: impl Fn(&str) -> Vec<u32>) -> Segment {
        let mut names = names.to_vec();
        names.sort_by(|a, b| walk::path_order(a, b));
        let stamp = Stamp::of(&std::fs::metadata(std::env::temp_dir()).unwrap());
        let mut builder = ListBuilder::new(0);
        let records: Vec<FileRecord> = names
            .iter()
            .map(|name| {
                let mut keys = held(name);
                keys.sort_unstable();
                keys.dedup();
                builder.add(&keys);
                FileRecord {
                    name,
                    stamp,
                    hash: ContentHash::of(name.as_bytes()),
                    filter: None,
                }
            })
            .collect();
        let bytes = encode(ROOT, &records, builder.finish()).unwrap();
        Segment::from_bytes(bytes, ROOT).unwrap()
    }

    /// Each file's trigrams: one per letter of its name, so that lists
    /// differ from file to file.
    fn by_letters(name: &str) -> Vec<u32> {
        name.bytes()
            .filter(u8::is_ascii_lowercase)
            .map(|b| trigram(b, b'-', b'-'))
            .collect()
    }

    /// The names of the files holding `key` in `segment`.
    fn holding(segment: &Segment, key: u32) -> Vec<String> {
        segment
            .postings(key)
            .unwrap()
            .into_iter()
            .map(|id| segment.file(id).unwrap().name.to_string())
            .collect()
    }

    #[test]
    fn merged_segments_hold_the_live_files_in_path_order_with_their_lists() {
        let a = segment(&["a/x.rs", "b.rs", "c/d/e.rs", "zz.rs"], by_letters);
        let b = segment(&["a/w.rs", "b.rs", "c/a.rs", "c/d-e.rs"], by_letters);
        let c = segment(&["a.rs", "q/r/s.rs"], by_letters);
        // `b.rs` of the first is dead (the second holds its new version),
        // and so is `zz.rs` (gone).
        let inputs = [
            Input {
                segment: &a,
                alive: vec![true, false, true, false],
                stamps: Vec::new(),
            },
            Input {
                segment: &b,
                alive: vec![true; 4],
                stamps: Vec::new(),
            },
            Input {
                segment: &c,
                alive: vec![true; 2],
                stamps: Vec::new(),
            },
        ];
        let merged = merge(ROOT, &inputs, false, &mut || {}).unwrap();
        let out = Segment::from_bytes(merged.bytes, ROOT).unwrap();
        let names: Vec<&str> = (0..out.file_count())
            .map(|id| out.file(id).unwrap().name)
            .collect();
        let mut expected = vec![
            "a/x.rs", "c/d/e.rs", "a/w.rs", "b.rs", "c/a.rs", "c/d-e.rs", "a.rs", "q/r/s.rs",
        ];
        expected.sort_by(|x, y| walk::path_order(x, y));
        assert_eq!(names, expected);
        for (id, &(input, local)) in merged.sources.iter().enumerate() {
            let source = inputs[input].segment.file(local).unwrap().name;
            assert_eq!(source, names[id]);
        }
        for letter in b'a'..=b'z' {
            let key = trigram(letter, b'-', b'-');
            let mut expected: Vec<String> = names
                .iter()
                .filter(|name| by_letters(name).contains(&key))
                .map(|name| name.to_string())
                .collect();
            expected.sort_by(|x, y| walk::path_order(x, y));
            assert_eq!(holding(&out, key), expected, "{}", letter as char);
        }
        // Nothing of the dead files is left, not even a trigram only they held.
        assert!(holding(&out, trigram(b'z', b'-', b'-')).is_empty());
        assert!(out.postings(trigram(b'z', b'-', b'-')).unwrap().is_empty());
    }

    #[test]
    fn a_merge_records_the_stamps_it_is_given_and_keeps_the_hashes() {
        let a = segment(&["a.rs", "b.rs"], by_letters);
        let later = Stamp::of(&std::fs::metadata(std::env::current_dir().unwrap()).unwrap());
        assert_ne!(a.file(1).unwrap().stamp, later);
        let inputs = [Input {
            segment: &a,
            alive: vec![true, true],
            stamps: vec![None, Some(later)],
        }];
        let merged = merge(ROOT, &inputs, false, &mut || {}).unwrap();
        let out = Segment::from_bytes(merged.bytes, ROOT).unwrap();
        assert_eq!(out.file(0).unwrap().stamp, a.file(0).unwrap().stamp);
        assert_eq!(out.file(1).unwrap().stamp, later);
        for id in 0..2 {
            assert_eq!(out.file(id).unwrap().hash, a.file(id).unwrap().hash);
        }
    }

    #[test]
    fn a_merge_of_nothing_alive_is_an_empty_segment() {
        let a = segment(&["a.rs"], by_letters);
        let inputs = [Input {
            segment: &a,
            alive: vec![false],
            stamps: Vec::new(),
        }];
        let merged = merge(ROOT, &inputs, false, &mut || {}).unwrap();
        assert!(merged.sources.is_empty());
        let out = Segment::from_bytes(merged.bytes, ROOT).unwrap();
        assert_eq!((out.file_count(), out.trigram_count()), (0, 0));
    }

    fn size(first_id: u32, bytes: usize, files: u32, dead: u32) -> LayerSize {
        LayerSize {
            first_id,
            bytes,
            files,
            dead,
            restamped: 0,
        }
    }

    #[test]
    fn a_settled_index_keeps_two_small_layers_and_rewrites_a_large_one_last() {
        let kib = FULL_BYTES / (16 * 1024);
        let builds: Vec<LayerSize> = (0..4)
            .map(|at| size(1000 + at * 100, 3 * LARGE_BYTES, 100, 0))
            .collect();
        let with = |small: &[(u32, usize)]| -> Vec<LayerSize> {
            let mut layers = builds.clone();
            layers.extend(small.iter().map(|&(at, bytes)| size(at, bytes, 10, 0)));
            layers
        };
        // Two small layers beside the build's: settled.
        assert_eq!(
            plan(&with(&[(0, 2000 * kib), (10, 4 * kib)]), LARGE_BYTES),
            None
        );
        // A third (one edited file): merged with the next smallest only,
        // while the largest is more than four times their bytes.
        let three = with(&[(0, 2000 * kib), (10, 300 * kib), (20, 4 * kib)]);
        assert_eq!(plan(&three, LARGE_BYTES), Some(vec![20, 10]));
        // Once the smaller ones add up to a quarter of it, it joins.
        let grown = with(&[(0, 2000 * kib), (10, 500 * kib), (20, 4 * kib)]);
        assert_eq!(plan(&grown, LARGE_BYTES), Some(vec![20, 10, 0]));
        // A tier's three layers of a branch switch: one.
        let switched = with(&[(0, 100 * kib), (10, 150 * kib), (20, 200 * kib)]);
        assert_eq!(plan(&switched, LARGE_BYTES), Some(vec![0, 10, 20]));
        // Never more than fits in twice the large size.
        let heavy = with(&[(0, 3000 * kib), (10, 3000 * kib), (20, 3000 * kib)]);
        assert_eq!(plan(&heavy, LARGE_BYTES), Some(vec![0, 10]));
    }

    #[test]
    fn reading_goes_first_until_the_small_layers_crowd() {
        let kib = FULL_BYTES / (16 * 1024);
        let small = |count: u32| -> Vec<LayerSize> {
            (0..count)
                .map(|at| size(at * 10, 20 * kib, 10, 0))
                .collect()
        };
        // A full tier waits while files are read...
        assert_eq!(plan(&small(4), LARGE_BYTES), Some(vec![0, 10, 20, 30]));
        assert_eq!(plan_while_reading(&small(4), LARGE_BYTES), None);
        assert_eq!(plan_while_reading(&small(16), LARGE_BYTES), None);
        // ...until the small layers pass the bound; large ones never count.
        let crowded = plan_while_reading(&small(17), LARGE_BYTES).expect("a merge");
        assert!(crowded.len() >= 2, "{crowded:?}");
        let mut with_large = small(16);
        with_large.extend((0..8).map(|at| size(1000 + at * 100, LARGE_BYTES, 100, 0)));
        assert_eq!(plan_while_reading(&with_large, LARGE_BYTES), None);
    }

    #[test]
    fn the_policy_merges_a_full_tier_then_compacts_dead_layers() {
        // Sizes as in production, where FULL_BYTES is 16 MiB.
        let kib = FULL_BYTES / (16 * 1024);
        // Three small layers of one tier: not a full tier (rule 5 merges
        // them when nothing else is left, see below).
        let mut layers = vec![size(0, 20 * kib, 10, 0); 3];
        for (at, layer) in layers.iter_mut().enumerate() {
            layer.first_id = at as u32 * 10;
        }
        assert_eq!(tier_merge(&layers, LARGE_BYTES), None);
        // A fourth in the same tier: all four.
        layers.push(size(30, 30 * kib, 10, 0));
        assert_eq!(plan(&layers, LARGE_BYTES), Some(vec![0, 10, 20, 30]));
        // Large layers join no tier, whatever their number.
        let full: Vec<LayerSize> = (0..6)
            .map(|at| size(at * 100, LARGE_BYTES, 100, 0))
            .collect();
        assert_eq!(plan(&full, LARGE_BYTES), None);
        // Layers of one tier whose sum would pass twice the large size:
        // as many as fit, smallest first.
        let big: Vec<LayerSize> = (0..4)
            .map(|at| size(at * 10, 3 * 1024 * kib, 10, 0))
            .collect();
        assert_eq!(plan(&big, LARGE_BYTES), Some(vec![0, 10]));
        // One mostly dead: rewritten alone; the deadest first.
        let mut mixed = full.clone();
        mixed[2].dead = 51;
        mixed[4].dead = 80;
        assert_eq!(plan(&mixed, LARGE_BYTES), Some(vec![400]));
        // A layer half dead is kept as it is.
        mixed[2].dead = 50;
        mixed[4].dead = 50;
        assert_eq!(plan(&mixed, LARGE_BYTES), None);
        // Dead files shrink a layer's tier: these are tier 0 now.
        let shrunk: Vec<LayerSize> = (0..4)
            .map(|at| size(at * 100, 200 * kib, 100, 90))
            .collect();
        assert_eq!(shrunk[0].tier(LARGE_BYTES), Some(0));
        // Under a small memory limit, smaller layers count as large: these
        // are only compacted, one at a time.
        assert_eq!(plan(&shrunk, 100 * kib), Some(vec![0]));
        assert_eq!(plan(&big, large_bytes(8 * 1024 * kib)), None);
        assert_eq!(plan(&shrunk, LARGE_BYTES), Some(vec![0, 100, 200, 300]));
    }
}
