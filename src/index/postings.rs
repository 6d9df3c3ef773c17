//! Posting lists and their algebra.
//!
//! Every posting list lives in a segment (`segment/`), on the heap or
//! mapped from the cache: sorted file ids, delta + varint encoded or a
//! bitmap, one codec. [`ListBuilder`] collects the (trigram, file) pairs of
//! files read in increasing id order and sorts them into the lists a
//! segment is encoded from; [`evaluate`] runs a planned query over one
//! segment's lists with sorted-list intersection and union.

use std::collections::HashMap;

use super::plan::Query;
use super::segment::{Located, Segment};

/// Collects the lists of one run of files: files are added in increasing
/// local id order, from 0.
pub struct ListBuilder {
    files: u32,
    /// (trigram << 32 | local id) pairs, in the order they were added.
    pairs: Vec<u64>,
}

impl ListBuilder {
    /// A builder with room for `pairs`.
    pub fn new(pairs: usize) -> Self {
        Self {
            files: 0,
            pairs: Vec::with_capacity(pairs),
        }
    }

    pub fn pairs(&self) -> usize {
        self.pairs.len()
    }

    /// Files added so far.
    pub fn files(&self) -> u32 {
        self.files
    }

    /// Adds the next file (local id `files()`) with its distinct trigrams.
    pub fn add(&mut self, trigrams: &[u32]) {
        let local = u64::from(self.files);
        self.pairs
            .extend(trigrams.iter().map(|&key| (u64::from(key) << 32) | local));
        self.files += 1;
    }

    /// Every trigram's list (local ids, increasing), trigrams in
    /// increasing order.
    pub fn finish(self) -> impl Iterator<Item = (u32, Vec<u32>)> {
        let pairs = radix_sort_by_trigram(self.pairs);
        let mut index = 0;
        std::iter::from_fn(move || {
            let key = (*pairs.get(index)? >> 32) as u32;
            let mut ids = Vec::new();
            while index < pairs.len() && (pairs[index] >> 32) as u32 == key {
                ids.push(pairs[index] as u32);
                index += 1;
            }
            Some((key, ids))
        })
    }
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

/// What a query is evaluated against: a segment's lists. A key is
/// located once (a read of the lookup table) and its list read from there.
pub trait PostingLists {
    type Located: Copy;
    /// Where `key`'s list lies.
    fn locate(&self, key: u32) -> Self::Located;
    /// The ids of the files that may contain the key `located`, sorted.
    fn postings(&self, located: Self::Located) -> Vec<u32>;
    /// What decoding the list `located` costs, in bytes.
    fn list_bytes(&self, located: Self::Located) -> usize;
    /// Keeps the `ids` (sorted) whose files may hold the key `located`.
    fn retain_holding(&self, located: Self::Located, ids: &mut Vec<u32>);
}

/// A segment passed every check when it was opened; a list that still
/// fails to decode or to be read makes every file of the segment a
/// candidate, never none.
impl PostingLists for Segment {
    type Located = Located;
    fn locate(&self, key: u32) -> Located {
        Segment::locate(self, key)
    }
    fn postings(&self, located: Located) -> Vec<u32> {
        match located {
            Located::At(at) => {
                Segment::postings_at(self, at).unwrap_or_else(|_| (0..self.file_count()).collect())
            }
            Located::Absent => Vec::new(),
            Located::Unknown => (0..self.file_count()).collect(),
        }
    }
    fn list_bytes(&self, located: Located) -> usize {
        Segment::list_bytes(self, located)
    }
    fn retain_holding(&self, located: Located, ids: &mut Vec<u32>) {
        Segment::retain_located(self, located, ids);
    }
}

impl PostingCache {
    /// The list of `key`, located at `located`.
    pub fn get<L: PostingLists>(
        &mut self,
        lists: &L,
        key: u32,
        located: L::Located,
    ) -> std::rc::Rc<Vec<u32>> {
        self.lists
            .entry(key)
            .or_insert_with(|| std::rc::Rc::new(lists.postings(located)))
            .clone()
    }
}

/// The ids in `lists` whose trigrams satisfy `query`, sorted; `None` for all.
pub fn evaluate<L: PostingLists>(
    query: &Query,
    lists: &L,
    cache: &mut PostingCache,
) -> Option<Vec<u32>> {
    match query {
        Query::All => None,
        Query::Nothing => Some(Vec::new()),
        Query::Trigram(key) => Some(cache.get(lists, *key, lists.locate(*key)).as_ref().clone()),
        // Only filters hold long grams.
        Query::Gram(_) | Query::ExactGram(..) => None,
        Query::And(parts) => {
            // Only the shortest trigram list is decoded; the ids left are
            // then tested against the longer ones.
            let mut keys: Vec<(u32, L::Located)> = parts
                .iter()
                .filter_map(|part| match part {
                    Query::Trigram(key) => Some((*key, lists.locate(*key))),
                    _ => None,
                })
                .collect();
            keys.sort_by_cached_key(|&(_, located)| lists.list_bytes(located));
            let mut result = keys
                .first()
                .map(|&(key, located)| cache.get(lists, key, located).as_ref().clone());
            for part in parts
                .iter()
                .filter(|part| !matches!(part, Query::Trigram(_)))
            {
                if result.as_ref().is_some_and(Vec::is_empty) {
                    break;
                }
                let Some(ids) = evaluate(part, lists, cache) else {
                    continue;
                };
                result = Some(match result {
                    None => ids,
                    Some(previous) => intersect(&previous, &ids),
                });
            }
            if let Some(ids) = &mut result {
                for &(_, located) in keys.iter().skip(1) {
                    if ids.is_empty() {
                        break;
                    }
                    lists.retain_holding(located, ids);
                }
            }
            result
        }
        Query::Or(parts) => {
            let mut result = Vec::new();
            for part in parts {
                result = union(&result, &evaluate(part, lists, cache)?);
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

    #[test]
    fn intersection_and_union_of_sorted_lists_stay_sorted_and_exact() {
        let (a, b) = ([1, 3, 5, 7, 9], [2, 3, 4, 9, 10]);
        assert_eq!(intersect(&a, &b), [3, 9]);
        assert_eq!(union(&a, &b), [1, 2, 3, 4, 5, 7, 9, 10]);
        assert_eq!(intersect(&a, &[]), Vec::<u32>::new());
        assert_eq!(union(&[], &b), b);
    }

    #[test]
    fn the_builder_lists_each_trigram_once_with_its_files_in_order() {
        let mut builder = ListBuilder::new(0);
        let common = trigram(b'a', b'b', b'c');
        let rare = trigram(b'x', b'y', b'z');
        for i in 0..1000u32 {
            if i % 97 == 0 {
                builder.add(&[rare, common]);
            } else {
                builder.add(&[common]);
            }
        }
        assert_eq!(builder.files(), 1000);
        let lists: Vec<(u32, Vec<u32>)> = builder.finish().collect();
        let rare_ids: Vec<u32> = (0..1000).filter(|i| i % 97 == 0).collect();
        let mut expected = vec![(common, (0..1000).collect::<Vec<u32>>()), (rare, rare_ids)];
        expected.sort();
        assert_eq!(lists, expected);
        assert_eq!(ListBuilder::new(4).finish().count(), 0);
    }
}
