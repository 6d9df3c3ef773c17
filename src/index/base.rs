//! The index: layers of segments, each a set of files in path order with
//! their posting lists and long-gram filters, held on the heap or mapped
//! from the cache. A file's id is its layer's first id plus its place in
//! the layer's segment; ids of different layers never overlap, and a layer
//! keeps its ids for as long as it lives (a merge gives its files new ones
//! in a new layer). Which ids are dead is the file list's to know
//! (`tombstones.rs`).
//!
//! A file with several names in the tree (hard links) is read and indexed
//! once by the build: its first name in path order holds the id, the
//! others are listed beside it.

use std::borrow::Cow;
use std::sync::Arc;

use super::merge::LayerSize;
use super::ngram::MappedFilter;
use super::plan::Query;
use super::segment::{ContentHash, FileEntry, FilterAt, Segment};
use super::tree::PathKey;
use crate::walk::Stamp;

/// What the other-names table spends per name besides the name, roughly.
const NAME_BYTES: usize = 56;

/// One layer: a segment and the ids it gives its files.
#[derive(Clone)]
pub(super) struct Layer {
    pub(super) first_id: u32,
    pub(super) segment: Arc<Segment>,
    /// Its file in the root's cache folder, once written there.
    pub(super) stored: Option<String>,
}

impl Layer {
    pub(super) fn ids(&self) -> std::ops::Range<u32> {
        self.first_id..self.first_id + self.segment.file_count()
    }
}

/// The layers, in id order, and the other names of files with several.
#[derive(Default)]
pub(super) struct BaseIndex {
    /// The root as its segments record it.
    root: String,
    layers: Vec<Layer>,
    /// The other names of files indexed under a first name, in path order.
    other_names: Vec<(u32, BaseName)>,
    /// Positions in `other_names`, sorted by id.
    other_names_by_id: Vec<u32>,
    other_names_bytes: usize,
}

/// The first name of a file of the index, with what a listing of it needs.
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

impl<'a> From<FileEntry<'a>> for NameOf<'a> {
    fn from(file: FileEntry<'a>) -> Self {
        NameOf {
            name: file.name,
            size: file.stamp.size(),
            ino: file.stamp.inode(),
        }
    }
}

/// Another name of an indexed file, with what a listing of it needs.
pub(super) struct BaseName {
    pub(super) key: PathKey,
    pub(super) size: u64,
    pub(super) ino: Option<u64>,
}

impl BaseIndex {
    /// An index of the root `root` (as segments record it) with no layer.
    pub(super) fn new(root: String) -> Self {
        BaseIndex {
            root,
            ..BaseIndex::default()
        }
    }

    pub(super) fn root(&self) -> &str {
        &self.root
    }

    pub(super) fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The first id of a run of `files` ids no layer holds: the lowest gap
    /// that fits, so that ids stay about as many as the files.
    pub(super) fn free_ids(&self, files: u32) -> Option<u32> {
        let mut next = 0u32;
        for layer in &self.layers {
            if layer.first_id.checked_sub(next)? >= files {
                return Some(next);
            }
            next = layer.ids().end;
        }
        next.checked_add(files).map(|_| next)
    }

    /// Adds `layer`, whose ids (at least one) no other layer holds.
    pub(super) fn insert(&mut self, layer: Layer) {
        debug_assert!(layer.segment.file_count() > 0, "an empty layer");
        let at = self
            .layers
            .partition_point(|other| other.first_id < layer.first_id);
        self.layers.insert(at, layer);
    }

    /// Takes out the layer whose first id is `first_id`.
    pub(super) fn remove(&mut self, first_id: u32) -> Option<Layer> {
        let at = self
            .layers
            .binary_search_by_key(&first_id, |layer| layer.first_id)
            .ok()?;
        Some(self.layers.remove(at))
    }

    /// The layer whose first id is `first_id`.
    pub(super) fn layer(&self, first_id: u32) -> Option<&Layer> {
        let at = self
            .layers
            .binary_search_by_key(&first_id, |layer| layer.first_id)
            .ok()?;
        self.layers.get(at)
    }

    /// Replaces layer `first_id`'s segment by the same files' segment
    /// written to the cache as `stored`.
    pub(super) fn store(&mut self, first_id: u32, segment: Segment, stored: String) {
        if let Ok(at) = self
            .layers
            .binary_search_by_key(&first_id, |layer| layer.first_id)
        {
            self.layers[at].segment = Arc::new(segment);
            self.layers[at].stored = Some(stored);
        }
    }

    /// The layer holding id `id`.
    fn layer_of(&self, id: u32) -> Option<&Layer> {
        let after = self.layers.partition_point(|layer| layer.first_id <= id);
        let layer = self.layers.get(after.checked_sub(1)?)?;
        layer.ids().contains(&id).then_some(layer)
    }

    /// The file id `id` stands for, and the ids of its layer.
    #[cfg(test)]
    pub(super) fn file(&self, id: u32) -> Option<(std::ops::Range<u32>, FileEntry<'_>)> {
        let layer = self.layer_of(id)?;
        Some((layer.ids(), layer.segment.file(id - layer.first_id)?))
    }

    /// The file id `id` stands for, when its layer is one the cache holds
    /// (what the scrub checks).
    pub(super) fn stored_file(&self, id: u32) -> Option<(std::ops::Range<u32>, FileEntry<'_>)> {
        let layer = self.layer_of(id).filter(|layer| layer.stored.is_some())?;
        Some((layer.ids(), layer.segment.file(id - layer.first_id)?))
    }

    /// The words of the filter at `at` of the stored file `id`.
    pub(super) fn stored_filter(&self, id: u32, at: FilterAt) -> Option<Cow<'_, [u8]>> {
        self.layer_of(id)?.segment.filter(at).ok()
    }

    /// The versions of the file `relative` the layers hold: each id under
    /// that name with the hash of its text (dead ones too: a file changed
    /// back to a text a layer holds takes that id back).
    pub(super) fn versions_of(&self, relative: &str) -> Vec<(u32, ContentHash)> {
        self.layers
            .iter()
            .filter_map(|layer| {
                let local = layer.segment.find_name(relative)?;
                Some((layer.first_id + local, layer.segment.file(local)?.hash))
            })
            .collect()
    }

    /// The first id of the layer holding id `id`.
    pub(super) fn layer_holding(&self, id: u32) -> Option<u32> {
        self.layer_of(id).map(|layer| layer.first_id)
    }

    /// Whether file `id` is in `trigram`'s list.
    pub(super) fn holds(&self, id: u32, trigram: u32) -> bool {
        let Some(layer) = self.layer_of(id) else {
            return false;
        };
        let mut local = vec![id - layer.first_id];
        layer.segment.retain_holding(trigram, &mut local);
        !local.is_empty()
    }

    /// The ids after the last one.
    pub(super) fn end_id(&self) -> u32 {
        self.layers.last().map_or(0, |layer| layer.ids().end)
    }

    /// Every layer's size, for the merge policy; `dead` counts the dead
    /// ids of a range, `restamped` the files of a layer (by first id) taken
    /// back under a new stamp.
    pub(super) fn sizes(
        &self,
        dead: impl Fn(std::ops::Range<u32>) -> u32,
        restamped: &std::collections::HashMap<u32, u32>,
    ) -> Vec<LayerSize> {
        self.layers
            .iter()
            .map(|layer| LayerSize {
                first_id: layer.first_id,
                bytes: layer.segment.bytes(),
                files: layer.segment.file_count(),
                dead: dead(layer.ids()),
                restamped: restamped.get(&layer.first_id).copied().unwrap_or(0),
            })
            .collect()
    }

    /// What the layers hold on the heap, and the other names.
    pub(super) fn bytes(&self) -> usize {
        let heap: usize = self
            .layers
            .iter()
            .map(|layer| layer.segment.heap_bytes())
            .sum();
        heap + self.other_names_bytes + self.layers.capacity() * size_of::<Layer>()
    }

    /// Lists `relative` as another name of the file indexed as `id`; names
    /// come in path order.
    pub(super) fn push_other_name(&mut self, id: u32, relative: &str, stamp: &Stamp) {
        // The name, its entry, and its position in the by-id table.
        self.other_names_bytes += relative.len() + NAME_BYTES + 8;
        self.other_names.push((
            id,
            BaseName {
                key: PathKey(relative.to_string()),
                size: stamp.size(),
                ino: stamp.inode(),
            },
        ));
    }

    #[cfg(test)]
    pub(super) fn other_names(&self) -> &[(u32, BaseName)] {
        &self.other_names
    }

    /// Sorts the other names by id, once all are in.
    pub(super) fn seal(&mut self) {
        let mut by_id: Vec<u32> = (0..self.other_names.len() as u32).collect();
        by_id.sort_by_key(|&at| self.other_names[at as usize].0);
        self.other_names_by_id = by_id;
        self.other_names.shrink_to_fit();
    }

    /// Whether some file has other names.
    pub(super) fn has_other_names(&self) -> bool {
        !self.other_names.is_empty()
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

    /// Gives the other names of the files a merge moved their new ids
    /// (`moved` maps an old id to its new one, or to `None` when the file
    /// was left out, and is `None` for ids the merge did not touch).
    /// Returns each name moved, with its old and new id; a name whose file
    /// was left out loses its place in the table.
    pub(super) fn move_other_names(
        &mut self,
        moved: impl Fn(u32) -> Option<Option<u32>>,
    ) -> Vec<(String, u32, Option<u32>)> {
        let mut changes = Vec::new();
        self.other_names.retain_mut(|(id, name)| match moved(*id) {
            None => true,
            Some(new) => {
                changes.push((name.key.0.clone(), *id, new));
                new.inspect(|&new| *id = new).is_some()
            }
        });
        self.other_names_bytes = self
            .other_names
            .iter()
            .map(|(_, name)| name.key.0.len() + NAME_BYTES + 8)
            .sum();
        self.seal();
        changes
    }
}

/// Whether `file` of `segment`, by its long grams (when it has a filter),
/// may match `query`; its trigrams were asked already. A filter that cannot
/// be read allows the match.
pub(super) fn may_match(segment: &Segment, file: &FileEntry<'_>, query: &Query) -> bool {
    let Some(at) = file.filter else {
        return true;
    };
    let Ok(words) = segment.filter(at) else {
        return true;
    };
    MappedFilter::new(at.case, &words).is_none_or(|filter| query.may_match(None, Some(&filter)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::segment::encode;
    use crate::index::testing::unfiltered_records;

    fn layer(first_id: u32, names: &[&str]) -> Layer {
        let stamp = Stamp::of(&std::fs::metadata(std::env::temp_dir()).unwrap());
        let records = unfiltered_records(names, stamp);
        let bytes = encode("/p", &records, std::iter::empty()).unwrap();
        Layer {
            first_id,
            segment: Arc::new(Segment::from_bytes(bytes, "/p").unwrap()),
            stored: None,
        }
    }

    #[test]
    fn ids_are_given_from_the_lowest_gap_and_found_in_their_layer() {
        let mut base = BaseIndex::default();
        assert_eq!(base.free_ids(3), Some(0));
        base.insert(layer(0, &["a", "b", "c"]));
        base.insert(layer(10, &["d", "e"]));
        assert_eq!(base.free_ids(7), Some(3));
        assert_eq!(base.free_ids(8), Some(12));
        let name = |id| base.file(id).map(|(_, file)| file.name);
        assert_eq!(name(1), Some("b"));
        assert_eq!(name(11), Some("e"));
        assert!(name(3).is_none() && name(12).is_none());
        assert_eq!(base.end_id(), 12);
        base.remove(0);
        assert_eq!(base.free_ids(10), Some(0));
        assert!(base.file(1).is_none());
    }
}
