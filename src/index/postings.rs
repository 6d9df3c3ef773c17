//! Posting lists and their algebra.
//!
//! Files get ids in path order and are indexed in shards of consecutive ids
//! (as Zoekt does), so a shard can be built in bounded scratch memory and
//! candidates come out sorted. Each shard holds, per trigram, the sorted ids
//! of its files that contain it: delta + varint encoded, or a bitmap when
//! that is smaller. A shard's trigrams are grouped by their first byte (a
//! group keeps the low 16 bits of each), so the final merge of the build's
//! shards frees their lists a group at a time. [`evaluate`] runs a planned
//! query over a shard with sorted-list intersection and union.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::plan::Query;

/// Marks an offset whose posting list is a bitmap rather than varints.
const BITMAP_FLAG: u32 = 1 << 31;

/// Trigrams are grouped by their first byte.
const GROUPS: usize = 256;

/// The posting lists of a run of consecutive file ids, grouped by the
/// trigram's first byte: a merge frees each group of its parts as soon as
/// the merged group is written, so the build never holds two whole copies.
#[derive(Debug, Default)]
pub struct Shard {
    first_id: u32,
    files: u32,
    /// [`GROUPS`] groups (none in a default shard, which holds no file).
    groups: Box<[Group]>,
}

/// The lists of the trigrams that share a first byte.
#[derive(Debug, Default)]
struct Group {
    /// The low 16 bits of the group's trigrams, sorted.
    keys: Vec<u16>,
    /// Start of each key's list in `data` (flagged when a bitmap), plus the end.
    offsets: Vec<u32>,
    data: Vec<u8>,
}

impl Group {
    fn bytes(&self) -> usize {
        self.keys.capacity() * 2 + self.offsets.capacity() * 4 + self.data.capacity()
    }

    /// The posting list of the `index`-th key: whether it is a bitmap, and
    /// its bytes.
    fn list_at(&self, index: usize) -> (bool, &[u8]) {
        let start = self.offsets[index];
        let end = (self.offsets[index + 1] & !BITMAP_FLAG) as usize;
        (
            start & BITMAP_FLAG != 0,
            &self.data[(start & !BITMAP_FLAG) as usize..end],
        )
    }

    /// Appends the list of `low` (sorted local ids): a bitmap of
    /// `bitmap_bytes` when that is smaller than varints, which cost at
    /// least a byte per id.
    fn push_list(&mut self, low: u16, ids: &[u32], bitmap_bytes: usize) {
        self.keys.push(low);
        let offset = self.data.len() as u32;
        if ids.len() > bitmap_bytes {
            self.offsets.push(offset | BITMAP_FLAG);
            let start = self.data.len();
            self.data.resize(start + bitmap_bytes, 0);
            for &local in ids {
                self.data[start + (local / 8) as usize] |= 1 << (local % 8);
            }
        } else {
            self.offsets.push(offset);
            let mut previous = 0;
            for &local in ids {
                write_varint(&mut self.data, local - previous);
                previous = local;
            }
        }
    }

    /// The lists written so far, in buffers of their exact size; `self`
    /// is left empty, its buffers kept for the next group. (Shrinking each
    /// group's own buffers instead would leave holes between the groups
    /// that the allocator cannot give back.)
    fn take_exact(&mut self) -> Group {
        if self.keys.is_empty() {
            return Group::default();
        }
        self.offsets.push(self.data.len() as u32);
        let group = Group {
            keys: self.keys.as_slice().to_vec(),
            offsets: self.offsets.as_slice().to_vec(),
            data: self.data.as_slice().to_vec(),
        };
        self.keys.clear();
        self.offsets.clear();
        self.data.clear();
        group
    }

    /// One group with the lists of `parts` (the same group of shards of
    /// consecutive ids, in order, each with its first id), ids made local
    /// to `first_id`; written through `scratch`.
    fn merge(
        parts: &[(u32, Group)],
        first_id: u32,
        bitmap_bytes: usize,
        scratch: &mut Group,
    ) -> Group {
        // The next key of each part, smallest first (parts in id order on ties).
        let mut next: BinaryHeap<Reverse<(u16, usize)>> = parts
            .iter()
            .enumerate()
            .filter_map(|(index, (_, part))| Some(Reverse((*part.keys.first()?, index))))
            .collect();
        let mut cursors = vec![0usize; parts.len()];
        let mut ids = Vec::new();
        while let Some(Reverse((low, _))) = next.peek().copied() {
            ids.clear();
            while let Some(Reverse((_, index))) = next.peek().copied().filter(|r| r.0.0 == low) {
                next.pop();
                let (part_first_id, part) = &parts[index];
                let (is_bitmap, bytes) = part.list_at(cursors[index]);
                let local = |id: u32| id - first_id;
                if is_bitmap {
                    ids.extend(Bits::new(*part_first_id, bytes).map(local));
                } else {
                    ids.extend(Varints::new(*part_first_id, bytes).map(local));
                }
                cursors[index] += 1;
                if let Some(&following) = part.keys.get(cursors[index]) {
                    next.push(Reverse((following, index)));
                }
            }
            scratch.push_list(low, &ids, bitmap_bytes);
        }
        scratch.take_exact()
    }
}

impl Shard {
    fn empty(first_id: u32, files: u32) -> Shard {
        Shard {
            first_id,
            files,
            groups: std::iter::repeat_with(Group::default)
                .take(GROUPS)
                .collect(),
        }
    }

    pub fn bytes(&self) -> usize {
        self.groups.iter().map(Group::bytes).sum::<usize>()
            + self.groups.len() * std::mem::size_of::<Group>()
    }

    pub fn id_range(&self) -> std::ops::Range<u32> {
        self.first_id..self.first_id + self.files
    }

    /// The ids of the shard's files that contain `key`, sorted.
    pub fn postings(&self, key: u32) -> Vec<u32> {
        let Some((is_bitmap, bytes)) = self.list(key) else {
            return Vec::new();
        };
        if is_bitmap {
            Bits::new(self.first_id, bytes).collect()
        } else {
            Varints::new(self.first_id, bytes).collect()
        }
    }

    /// The size of `key`'s posting list in bytes: what decoding it costs.
    pub fn list_bytes(&self, key: u32) -> usize {
        self.list(key).map_or(0, |(_, bytes)| bytes.len())
    }

    /// Keeps the `ids` (sorted, of this shard) whose files hold `key`,
    /// without decoding more of its list than those ids need: a common
    /// trigram after a rare one costs a few bit tests.
    pub fn retain_holding(&self, key: u32, ids: &mut Vec<u32>) {
        let Some((is_bitmap, bytes)) = self.list(key) else {
            ids.clear();
            return;
        };
        if is_bitmap {
            ids.retain(|&id| {
                let bit = (id - self.first_id) as usize;
                bytes
                    .get(bit / 8)
                    .is_some_and(|byte| byte & (1 << (bit % 8)) != 0)
            });
            return;
        }
        let mut listed = Varints::new(self.first_id, bytes).peekable();
        ids.retain(|&id| {
            while listed.next_if(|&listed| listed < id).is_some() {}
            listed.peek() == Some(&id)
        });
    }

    /// `key`'s posting list: whether it is a bitmap, and its bytes.
    fn list(&self, key: u32) -> Option<(bool, &[u8])> {
        let group = self.groups.get((key >> 16) as usize)?;
        let index = group.keys.binary_search(&(key as u16)).ok()?;
        Some(group.list_at(index))
    }
}

/// The ids of a bitmap posting list, in order.
struct Bits<'a> {
    first_id: u32,
    bytes: &'a [u8],
    bit: usize,
}

impl<'a> Bits<'a> {
    fn new(first_id: u32, bytes: &'a [u8]) -> Self {
        Self {
            first_id,
            bytes,
            bit: 0,
        }
    }
}

impl Iterator for Bits<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        while let Some(&byte) = self.bytes.get(self.bit / 8) {
            let bit = self.bit;
            self.bit += 1;
            if byte & (1 << (bit % 8)) != 0 {
                return Some(self.first_id + bit as u32);
            }
        }
        None
    }
}

/// The ids of a delta + varint posting list, in order.
struct Varints<'a> {
    previous: u32,
    bytes: std::slice::Iter<'a, u8>,
}

impl<'a> Varints<'a> {
    fn new(first_id: u32, bytes: &'a [u8]) -> Self {
        Self {
            previous: first_id,
            bytes: bytes.iter(),
        }
    }
}

impl Iterator for Varints<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let (mut value, mut shift) = (0u32, 0);
        for &byte in self.bytes.by_ref() {
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                self.previous += value;
                return Some(self.previous);
            }
            shift += 7;
        }
        None
    }
}

/// Collects one shard: files are added in increasing id order.
pub struct ShardBuilder {
    first_id: u32,
    next_id: u32,
    /// (trigram << 32 | local id) pairs, in the order they were added.
    pairs: Vec<u64>,
}

impl ShardBuilder {
    /// A builder whose first file gets `first_id`, with room for `pairs`.
    pub fn new(first_id: u32, pairs: usize) -> Self {
        Self {
            first_id,
            next_id: first_id,
            pairs: Vec::with_capacity(pairs),
        }
    }

    pub fn pairs(&self) -> usize {
        self.pairs.len()
    }

    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    /// Adds the next file (id `next_id()`) with its distinct trigrams; a
    /// file that is not indexed is added with none.
    pub fn add(&mut self, trigrams: &[u32]) {
        let local = u64::from(self.next_id - self.first_id);
        self.pairs
            .extend(trigrams.iter().map(|&key| (u64::from(key) << 32) | local));
        self.next_id += 1;
    }

    pub fn finish(self) -> Shard {
        let files = self.next_id - self.first_id;
        let pairs = radix_sort_by_trigram(self.pairs);
        let bitmap_bytes = files.div_ceil(8) as usize;
        let mut shard = Shard::empty(self.first_id, files);
        let mut scratch = Group::default();
        let mut ids: Vec<u32> = Vec::new();
        let mut index = 0;
        while index < pairs.len() {
            let key = (pairs[index] >> 32) as u32;
            ids.clear();
            while index < pairs.len() && (pairs[index] >> 32) as u32 == key {
                ids.push(pairs[index] as u32);
                index += 1;
            }
            scratch.push_list(key as u16, &ids, bitmap_bytes);
            let group = (key >> 16) as usize;
            if pairs
                .get(index)
                .is_none_or(|&next| (next >> 48) as usize != group)
            {
                shard.groups[group] = scratch.take_exact();
            }
        }
        shard
    }
}

impl Shard {
    /// One shard with the lists of `parts`, shards of consecutive ids in
    /// order: a query then looks each trigram up once, not once per part.
    /// Each group of the parts is freed once merged, so the merge holds
    /// little more than the parts did.
    pub fn merge(mut parts: Vec<Shard>) -> Shard {
        let first_id = parts.first().map_or(0, |part| part.first_id);
        let files = parts.iter().map(|part| part.files).sum::<u32>();
        let bitmap_bytes = files.div_ceil(8) as usize;
        let mut merged = Shard::empty(first_id, files);
        let mut scratch = Group::default();
        for (index, group) in merged.groups.iter_mut().enumerate() {
            let taken: Vec<(u32, Group)> = parts
                .iter_mut()
                .filter_map(|part| {
                    let group = std::mem::take(part.groups.get_mut(index)?);
                    Some((part.first_id, group))
                })
                .collect();
            *group = Group::merge(&taken, first_id, bitmap_bytes, &mut scratch);
        }
        merged
    }
}

fn write_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Stable LSD radix sort on the 24-bit trigram in bits 32..56, so each
/// trigram's ids stay in the increasing order they were added in.
fn radix_sort_by_trigram(mut pairs: Vec<u64>) -> Vec<u64> {
    let mut scratch = vec![0u64; pairs.len()];
    for shift in [32, 40, 48] {
        let mut counts = [0usize; 257];
        for &pair in &pairs {
            counts[((pair >> shift) & 0xff) as usize + 1] += 1;
        }
        for i in 1..257 {
            counts[i] += counts[i - 1];
        }
        for &pair in &pairs {
            let bucket = ((pair >> shift) & 0xff) as usize;
            scratch[counts[bucket]] = pair;
            counts[bucket] += 1;
        }
        std::mem::swap(&mut pairs, &mut scratch);
    }
    pairs
}

/// Decoded posting lists of one query, so a trigram used twice is looked
/// up once.
#[derive(Default)]
pub struct PostingCache {
    lists: HashMap<u32, std::rc::Rc<Vec<u32>>>,
}

/// What a query is evaluated against: the shard the build made in memory,
/// or a segment mapped from the cache.
pub trait PostingLists {
    /// The ids of every file, in order.
    fn id_range(&self) -> std::ops::Range<u32>;
    /// The ids of the files that may contain `key`, sorted.
    fn postings(&self, key: u32) -> Vec<u32>;
    /// What decoding `key`'s list costs, in bytes.
    fn list_bytes(&self, key: u32) -> usize;
    /// Keeps the `ids` (sorted) whose files may hold `key`.
    fn retain_holding(&self, key: u32, ids: &mut Vec<u32>);
}

impl PostingLists for Shard {
    fn id_range(&self) -> std::ops::Range<u32> {
        Shard::id_range(self)
    }
    fn postings(&self, key: u32) -> Vec<u32> {
        Shard::postings(self, key)
    }
    fn list_bytes(&self, key: u32) -> usize {
        Shard::list_bytes(self, key)
    }
    fn retain_holding(&self, key: u32, ids: &mut Vec<u32>) {
        Shard::retain_holding(self, key, ids);
    }
}

impl Shard {
    /// Every trigram's posting list, trigrams in increasing order.
    pub fn lists(&self) -> impl Iterator<Item = (u32, Vec<u32>)> + '_ {
        self.groups
            .iter()
            .enumerate()
            .flat_map(move |(high, group)| {
                group.keys.iter().map(move |&low| {
                    let key = ((high as u32) << 16) | u32::from(low);
                    (key, self.postings(key))
                })
            })
    }
}

impl PostingCache {
    pub fn get(&mut self, shard: &impl PostingLists, key: u32) -> std::rc::Rc<Vec<u32>> {
        self.lists
            .entry(key)
            .or_insert_with(|| std::rc::Rc::new(shard.postings(key)))
            .clone()
    }
}

/// The ids in `shard` whose trigrams satisfy `query`, sorted; `None` for all.
pub fn evaluate(
    query: &Query,
    shard: &impl PostingLists,
    cache: &mut PostingCache,
) -> Option<Vec<u32>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::ngram::trigram;
    use crate::index::testing::assert_retains_listed;

    #[test]
    fn intersection_and_union_of_sorted_lists_stay_sorted_and_exact() {
        let (a, b) = ([1, 3, 5, 7, 9], [2, 3, 4, 9, 10]);
        assert_eq!(intersect(&a, &b), [3, 9]);
        assert_eq!(union(&a, &b), [1, 2, 3, 4, 5, 7, 9, 10]);
        assert_eq!(intersect(&a, &[]), Vec::<u32>::new());
        assert_eq!(union(&[], &b), b);
    }

    #[test]
    fn shards_round_trip_sparse_and_dense_lists() {
        let mut builder = ShardBuilder::new(100, 0);
        let common = trigram(b'a', b'b', b'c');
        let rare = trigram(b'x', b'y', b'z');
        for i in 0..1000u32 {
            let mut keys = vec![common];
            if i % 97 == 0 {
                keys.push(rare);
            }
            builder.add(&keys);
        }
        let shard = builder.finish();
        assert_eq!(shard.id_range(), 100..1100);
        assert_eq!(shard.postings(common), (100..1100).collect::<Vec<_>>());
        let expected: Vec<u32> = (0..1000).filter(|i| i % 97 == 0).map(|i| i + 100).collect();
        assert_eq!(shard.postings(rare), expected);
        assert!(shard.postings(trigram(b'q', b'q', b'q')).is_empty());
        assert!(shard.list_bytes(rare) < shard.list_bytes(common));
    }

    /// No group keeps spare room: a merge's memory is its lists.
    fn exactly_sized(shard: &Shard) -> bool {
        shard.groups.iter().all(|group| {
            group.keys.capacity() == group.keys.len()
                && group.offsets.capacity() == group.offsets.len()
                && group.data.capacity() == group.data.len()
        })
    }

    #[test]
    fn merged_shards_hold_the_same_lists() {
        let keys: Vec<u32> = (0..40u8)
            .map(|k| trigram(b'a' + k % 26, b'0' + k / 26, b'z'))
            .collect();
        let mut parts = Vec::new();
        let mut first_id = 3;
        for (part, files) in [(0u32, 500u32), (1, 9), (2, 2000), (3, 1)] {
            let mut builder = ShardBuilder::new(first_id, 0);
            for file in 0..files {
                let held: Vec<u32> = keys
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| (file * 7 + part + k as u32).is_multiple_of(k as u32 % 9 + 1))
                    .map(|(_, &key)| key)
                    .collect();
                builder.add(&held);
            }
            first_id = builder.next_id();
            parts.push(builder.finish());
        }
        let expected: Vec<Vec<u32>> = keys
            .iter()
            .map(|&key| parts.iter().flat_map(|part| part.postings(key)).collect())
            .collect();
        assert!(parts.iter().all(exactly_sized));
        let merged = Shard::merge(parts);
        assert!(exactly_sized(&merged));
        assert_eq!(merged.id_range(), 3..first_id);
        for (key, expected) in keys.iter().zip(expected) {
            assert_eq!(merged.postings(*key), expected, "key {key:x}");
        }
        assert!(merged.postings(trigram(b'q', b'q', b'q')).is_empty());
        assert!(Shard::merge(Vec::new()).postings(keys[0]).is_empty());
    }

    #[test]
    fn retain_holding_agrees_with_the_decoded_lists() {
        let mut builder = ShardBuilder::new(7, 0);
        let keys: Vec<u32> = (0..6u8).map(|k| trigram(b'a' + k, b'b', b'c')).collect();
        for i in 0..3000u32 {
            // Keys 0-2 are in one file of every 1-3 (dense: bitmaps), keys
            // 3-5 in one of every 60-100 (sparse: varints).
            let held: Vec<u32> = keys
                .iter()
                .enumerate()
                .filter(|&(k, _)| match k as u32 {
                    k @ 0..3 => i % (k + 1) == 0,
                    k => i % (20 * k) == 1,
                })
                .map(|(_, &key)| key)
                .collect();
            builder.add(&held);
        }
        let shard = builder.finish();
        assert!(shard.list_bytes(keys[0]) * 8 >= 3000, "a bitmap");
        assert!(shard.list_bytes(keys[5]) * 8 < 3000, "varints");
        let all: Vec<u32> = shard.id_range().collect();
        for &key in keys.iter().chain([&trigram(b'z', b'z', b'z')]) {
            let listed = shard.postings(key);
            for step in [1, 3, 13, 101] {
                let ids: Vec<u32> = all.iter().copied().step_by(step).collect();
                assert_retains_listed(
                    ids,
                    &listed,
                    |ids| shard.retain_holding(key, ids),
                    &format!("key {key:x} step {step}"),
                );
            }
        }
    }
}
