//! The index the build made: the posting lists over base ids, the names
//! each id stands for, and the long-gram filters of the large files.

use super::ngram::{GramFilter, MappedFilter};
use super::plan::Query;
use super::postings::{PostingLists, Shard};
use super::segment::{FileEntry, Segment};

/// The posting lists a build keeps in memory before it writes them as a
/// segment, when the index is kept on disk: what the build's lists cost
/// the heap at most (their merge holds about as much again). Unit tests'
/// trees are small: there it is small enough to make several segments.
pub(super) const SPILL_BYTES: usize = if cfg!(test) {
    16 * 1024
} else {
    16 * 1024 * 1024
};
use super::tree::PathKey;
use crate::walk::Stamp;

/// What the id table spends per name of a base file besides the name,
/// roughly.
pub(super) const NAME_BYTES: usize = 56;

/// The index the build made: one shard of posting lists over base ids, the
/// path of each id, to turn posting lists into files, and the long-gram
/// filters of the large files. Empty until the build installs it.
///
/// A file with several names in the tree (hard links) is read and indexed
/// once: its first name in path order holds the id, the others are listed
/// beside it.
#[derive(Default)]
pub(super) struct BaseIndex {
    pub(super) shard: BasePostings,
    /// The first name of each id from `names_from` on; those of the ids
    /// before it are read from their segments.
    pub(super) names: Vec<BaseName>,
    pub(super) names_from: u32,
    /// The other names of files indexed under a first name, in path order.
    pub(super) other_names: Vec<(u32, BaseName)>,
    /// Positions in `other_names`, sorted by id.
    pub(super) other_names_by_id: Vec<u32>,
    /// Sorted by id.
    pub(super) filters: Vec<(u32, GramFilter)>,
    /// The id table and the filters, in bytes, counted as they grow.
    pub(super) key_bytes: usize,
    pub(super) filter_bytes: usize,
}

/// The base's posting lists: layers of consecutive ids, in id order, each
/// built in memory or mapped from a segment of the cache (a build that
/// keeps its index on disk writes a segment whenever its lists reach
/// [`SPILL_BYTES`], so a tree of any size is indexed in bounded memory).
#[derive(Default)]
pub(super) struct BasePostings {
    layers: Vec<Layer>,
}

pub(super) enum Layer {
    Built(Shard),
    /// A segment's local ids are offset by `first_id`.
    Mapped {
        first_id: u32,
        segment: Segment,
    },
}

impl Layer {
    fn id_range(&self) -> std::ops::Range<u32> {
        match self {
            Layer::Built(shard) => shard.id_range(),
            Layer::Mapped { first_id, segment } => *first_id..first_id + segment.file_count(),
        }
    }
}

impl BasePostings {
    /// Adds the layer of the ids after the last layer's.
    pub(super) fn push(&mut self, layer: Layer) {
        self.layers.push(layer);
    }

    /// The layer holding id `id`.
    fn layer_of(&self, id: u32) -> Option<&Layer> {
        let after = self
            .layers
            .partition_point(|layer| layer.id_range().end <= id);
        self.layers
            .get(after)
            .filter(|layer| layer.id_range().contains(&id))
    }

    /// Heap bytes (a segment's mapped pages are the kernel's to keep or drop).
    fn bytes(&self) -> usize {
        self.layers
            .iter()
            .map(|layer| match layer {
                Layer::Built(shard) => shard.bytes(),
                Layer::Mapped { .. } => 0,
            })
            .sum()
    }

    /// The layers holding some of `ids` (sorted), with the run of `ids`
    /// each holds.
    fn split<'a>(
        &'a self,
        ids: &[u32],
    ) -> impl Iterator<Item = (&'a Layer, std::ops::Range<usize>)> {
        let mut from = 0;
        let bounds: Vec<usize> = self
            .layers
            .iter()
            .map(|layer| ids.partition_point(|&id| id < layer.id_range().end))
            .collect();
        self.layers.iter().zip(bounds).map(move |(layer, to)| {
            let run = from..to.max(from);
            from = to.max(from);
            (layer, run)
        })
    }
}

/// A segment passed every check when it was opened; a list that still
/// fails to decode makes every file of its segment a candidate, never none.
impl PostingLists for BasePostings {
    fn id_range(&self) -> std::ops::Range<u32> {
        let start = self
            .layers
            .first()
            .map_or(0, |layer| layer.id_range().start);
        let end = self.layers.last().map_or(0, |layer| layer.id_range().end);
        start..end
    }

    fn postings(&self, key: u32) -> Vec<u32> {
        let mut ids = Vec::new();
        for layer in &self.layers {
            match layer {
                Layer::Built(shard) => ids.extend(shard.postings(key)),
                Layer::Mapped { first_id, segment } => match segment.postings(key) {
                    Ok(local) => ids.extend(local.into_iter().map(|id| first_id + id)),
                    Err(_) => ids.extend(layer.id_range()),
                },
            }
        }
        ids
    }

    fn list_bytes(&self, key: u32) -> usize {
        self.layers
            .iter()
            .map(|layer| match layer {
                Layer::Built(shard) => shard.list_bytes(key),
                Layer::Mapped { segment, .. } => segment.list_bytes(key),
            })
            .sum()
    }

    fn retain_holding(&self, key: u32, ids: &mut Vec<u32>) {
        let mut kept = Vec::with_capacity(ids.len());
        for (layer, run) in self.split(ids) {
            if run.is_empty() {
                continue;
            }
            let mut part = ids[run].to_vec();
            match layer {
                Layer::Built(shard) => shard.retain_holding(key, &mut part),
                Layer::Mapped { first_id, segment } => {
                    part.iter_mut().for_each(|id| *id -= first_id);
                    segment.retain_holding(key, &mut part);
                    part.iter_mut().for_each(|id| *id += first_id);
                }
            }
            kept.extend(part);
        }
        *ids = kept;
    }
}

/// The first name of a base file, with what a listing of it needs.
#[derive(Debug, Clone, Copy)]
pub(super) struct NameOf<'a> {
    pub(super) name: &'a str,
    pub(super) size: u64,
    pub(super) ino: Option<u64>,
}

impl<'a> From<&'a BaseName> for NameOf<'a> {
    fn from(name: &'a BaseName) -> Self {
        NameOf {
            name: &name.key.0,
            size: name.size,
            ino: name.ino,
        }
    }
}

/// A name of a base file, with what a listing of it needs: the file list
/// is not consulted for candidates that did not change since the build.
pub(super) struct BaseName {
    pub(super) key: PathKey,
    pub(super) size: u64,
    pub(super) ino: Option<u64>,
}

impl BaseName {
    pub(super) fn new(relative: &str, stamp: &Stamp) -> Self {
        Self {
            key: PathKey(relative.to_string()),
            size: stamp.size(),
            ino: stamp.inode(),
        }
    }

    fn bytes(&self) -> usize {
        self.key.0.len() + NAME_BYTES
    }
}

impl BaseIndex {
    /// Gives base id `id` to the file `relative` (read with `stamp`), with
    /// its filter if any.
    pub(super) fn push(
        &mut self,
        id: u32,
        relative: &str,
        stamp: &Stamp,
        filter: Option<GramFilter>,
    ) {
        self.key_bytes += relative.len() + NAME_BYTES;
        self.names.push(BaseName::new(relative, stamp));
        self.push_filter(id, filter);
    }

    /// Gives base id `id` its filter, if any (ids in increasing order).
    pub(super) fn push_filter(&mut self, id: u32, filter: Option<GramFilter>) {
        if let Some(filter) = filter {
            self.filter_bytes += filter.bytes();
            self.filters.push((id, filter));
        }
    }

    /// Lists `relative` as another name of the file indexed as `id`; names
    /// come in path order.
    pub(super) fn push_other_name(&mut self, id: u32, relative: &str, stamp: &Stamp) {
        // Its id, and its position in the by-id table.
        self.key_bytes += relative.len() + NAME_BYTES + 8;
        self.other_names.push((id, BaseName::new(relative, stamp)));
    }

    /// An empty index whose next id is `first_id` (the ids before it are
    /// another index's).
    pub(super) fn starting_at(first_id: u32) -> Self {
        BaseIndex {
            names_from: first_id,
            ..BaseIndex::default()
        }
    }

    /// Takes in `later`, whose ids follow this index's (layers, names,
    /// other names and filters, all in id and path order), and seals.
    pub(super) fn append(&mut self, later: BaseIndex) {
        self.shard.layers.extend(later.shard.layers);
        if self.names.is_empty() {
            self.names_from = later.names_from;
            self.names = later.names;
        } else {
            self.names.extend(later.names);
        }
        self.other_names.extend(later.other_names);
        self.filters.extend(later.filters);
        self.key_bytes += later.key_bytes;
        self.filter_bytes += later.filter_bytes;
        self.seal();
    }

    /// Sorts the other names by id, once all are in.
    pub(super) fn seal(&mut self) {
        let mut by_id: Vec<u32> = (0..self.other_names.len() as u32).collect();
        by_id.sort_by_key(|&at| self.other_names[at as usize].0);
        self.other_names_by_id = by_id;
        self.other_names.shrink_to_fit();
        self.filters.shrink_to_fit();
    }

    /// The other names of the files `ids` (sorted), in path order.
    pub(super) fn other_names_of(&self, ids: &[u32]) -> Vec<&BaseName> {
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
    pub(super) fn drop_filters(&mut self) -> bool {
        self.filter_bytes = 0;
        !std::mem::take(&mut self.filters).is_empty()
    }

    pub(super) fn bytes(&self) -> usize {
        self.shard.bytes() + self.key_bytes + self.filter_bytes
    }

    /// The first name of base file `id`.
    pub(super) fn name(&self, id: u32) -> Option<NameOf<'_>> {
        if id >= self.names_from {
            return self
                .names
                .get((id - self.names_from) as usize)
                .map(NameOf::from);
        }
        let Layer::Mapped { first_id, segment } = self.shard.layer_of(id)? else {
            return None;
        };
        let file = segment.file(id - first_id)?;
        Some(NameOf {
            name: file.name,
            size: file.stamp.size(),
            ino: file.stamp.inode(),
        })
    }

    /// The file base id `id` stands for in a mapped segment, and the ids
    /// that segment holds; `None` for ids built in memory.
    pub(super) fn mapped_file(&self, id: u32) -> Option<(std::ops::Range<u32>, FileEntry<'_>)> {
        let layer = self.shard.layer_of(id)?;
        let Layer::Mapped { first_id, segment } = layer else {
            return None;
        };
        Some((layer.id_range(), segment.file(id - first_id)?))
    }

    /// The ids after the last one.
    pub(super) fn end_id(&self) -> u32 {
        self.shard.id_range().end
    }

    /// Forgets the heap names and filters of the ids before `id`: a
    /// segment holds them.
    pub(super) fn names_mapped_before(&mut self, id: u32) {
        let mapped = id.saturating_sub(self.names_from) as usize;
        self.names.drain(..mapped.min(self.names.len()));
        self.names.shrink_to_fit();
        // Their filters too.
        let filters_mapped = self.filters.partition_point(|(with, _)| *with < id);
        self.filters.drain(..filters_mapped);
        self.filters.shrink_to_fit();
        self.filter_bytes = self.filters.iter().map(|(_, filter)| filter.bytes()).sum();
        self.key_bytes = self.names.iter().map(BaseName::bytes).sum::<usize>()
            + self
                .other_names
                .iter()
                .map(|(_, name)| name.bytes() + 8)
                .sum::<usize>();
        self.names_from = self.names_from.max(id);
    }

    /// Base file `id`'s filter, when it has one.
    pub(super) fn filter(&self, id: u32) -> Option<&GramFilter> {
        let at = self.filters.binary_search_by_key(&id, |(id, _)| *id).ok()?;
        Some(&self.filters[at].1)
    }

    /// Whether base file `id`'s long grams (when it has a filter) allow a
    /// match of `query`; its trigrams were asked already. The filters of
    /// files in a segment are read where they lie.
    pub(super) fn may_match(&self, id: u32, query: &Query) -> bool {
        if id >= self.names_from {
            return self
                .filter(id)
                .is_none_or(|filter| query.may_match(None, Some(filter)));
        }
        let Some(Layer::Mapped { first_id, segment }) = self.shard.layer_of(id) else {
            return true;
        };
        let mapped = segment
            .file(id - first_id)
            .and_then(|file| file.filter)
            .and_then(|(case, words)| MappedFilter::new(case, words));
        mapped.is_none_or(|filter| query.may_match(None, Some(&filter)))
    }
}
