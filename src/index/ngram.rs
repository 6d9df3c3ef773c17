//! Trigrams and their posting lists.
//!
//! A trigram is three consecutive bytes of a file, ASCII letters folded to
//! lower case, packed into the low 24 bits of a `u32`. Windows that contain
//! a line break are not indexed: a search matches within one line, so no
//! query ever needs them. Folding makes a case-insensitive query as cheap as
//! a case-sensitive one and shrinks the index; a case-sensitive query gets a
//! few more candidates, which the searcher then rejects.
//!
//! Files get ids in path order and are indexed in shards of consecutive ids
//! (as Zoekt does), so a shard can be built in bounded scratch memory and
//! candidates come out sorted. Each shard holds, per trigram, the sorted ids
//! of its files that contain it: delta + varint encoded, or a bitmap when
//! that is smaller.

use std::collections::HashMap;

/// One folded byte.
pub fn fold(byte: u8) -> u8 {
    byte.to_ascii_lowercase()
}

pub fn trigram(a: u8, b: u8, c: u8) -> u32 {
    (u32::from(fold(a)) << 16) | (u32::from(fold(b)) << 8) | u32::from(fold(c))
}

/// Whether the trigram can be in the index (no line break in it).
pub fn indexable(window: &[u8]) -> bool {
    !window.contains(&b'\n')
}

/// Bits in the scratch set that [`distinct_trigrams`] uses: one per trigram.
const TRIGRAM_SPACE: usize = 1 << 24;

/// Scratch space for collecting one file's distinct trigrams: a bit per
/// possible trigram (2 MiB), cleared again after each file.
pub struct TrigramScratch {
    seen: Vec<u64>,
}

impl Default for TrigramScratch {
    fn default() -> Self {
        Self {
            seen: vec![0; TRIGRAM_SPACE / 64],
        }
    }
}

impl TrigramScratch {
    /// Appends the distinct indexable trigrams of `content` to `out`
    /// (unsorted) and leaves the scratch set clear.
    pub fn distinct(&mut self, content: &[u8], out: &mut Vec<u32>) {
        let start = out.len();
        for window in content.windows(3) {
            if !indexable(window) {
                continue;
            }
            let key = trigram(window[0], window[1], window[2]);
            let (word, bit) = ((key >> 6) as usize, 1u64 << (key & 63));
            if self.seen[word] & bit == 0 {
                self.seen[word] |= bit;
                out.push(key);
            }
        }
        for &key in &out[start..] {
            self.seen[(key >> 6) as usize] = 0;
        }
    }
}

/// The sorted distinct trigrams of `content`.
pub fn sorted_trigrams(scratch: &mut TrigramScratch, content: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    scratch.distinct(content, &mut out);
    out.sort_unstable();
    out.shrink_to_fit();
    out
}

/// Marks an offset whose posting list is a bitmap rather than varints.
const BITMAP_FLAG: u32 = 1 << 31;

/// The posting lists of a run of consecutive file ids.
#[derive(Debug, Default)]
pub struct Shard {
    first_id: u32,
    files: u32,
    /// Sorted trigrams present in the shard.
    keys: Vec<u32>,
    /// Start of each key's list in `data` (flagged when a bitmap), plus the end.
    offsets: Vec<u32>,
    data: Vec<u8>,
}

impl Shard {
    pub fn bytes(&self) -> usize {
        self.keys.capacity() * 4 + self.offsets.capacity() * 4 + self.data.capacity()
    }

    pub fn id_range(&self) -> std::ops::Range<u32> {
        self.first_id..self.first_id + self.files
    }

    /// The ids of the shard's files that contain `key`, sorted.
    pub fn postings(&self, key: u32) -> Vec<u32> {
        let Ok(index) = self.keys.binary_search(&key) else {
            return Vec::new();
        };
        let start = self.offsets[index];
        let end = (self.offsets[index + 1] & !BITMAP_FLAG) as usize;
        let is_bitmap = start & BITMAP_FLAG != 0;
        let bytes = &self.data[(start & !BITMAP_FLAG) as usize..end];
        let mut ids = Vec::new();
        if is_bitmap {
            for (byte_index, &byte) in bytes.iter().enumerate() {
                for bit in 0..8 {
                    if byte & (1 << bit) != 0 {
                        ids.push(self.first_id + (byte_index * 8 + bit) as u32);
                    }
                }
            }
        } else {
            let mut previous = self.first_id;
            let mut value = 0u32;
            let mut shift = 0;
            for &byte in bytes {
                value |= u32::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    previous += value;
                    ids.push(previous);
                    value = 0;
                    shift = 0;
                } else {
                    shift += 7;
                }
            }
        }
        ids
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
    pub fn new(first_id: u32) -> Self {
        Self {
            first_id,
            next_id: first_id,
            pairs: Vec::new(),
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
        let mut shard = Shard {
            first_id: self.first_id,
            files,
            ..Shard::default()
        };
        let mut ids: Vec<u32> = Vec::new();
        let mut index = 0;
        while index < pairs.len() {
            let key = (pairs[index] >> 32) as u32;
            ids.clear();
            while index < pairs.len() && (pairs[index] >> 32) as u32 == key {
                ids.push(pairs[index] as u32);
                index += 1;
            }
            shard.keys.push(key);
            let offset = shard.data.len() as u32;
            // A varint list costs at least a byte per id.
            if ids.len() > bitmap_bytes {
                shard.offsets.push(offset | BITMAP_FLAG);
                let start = shard.data.len();
                shard.data.resize(start + bitmap_bytes, 0);
                for &local in &ids {
                    shard.data[start + (local / 8) as usize] |= 1 << (local % 8);
                }
            } else {
                shard.offsets.push(offset);
                let mut previous = 0;
                for &local in &ids {
                    write_varint(&mut shard.data, local - previous);
                    previous = local;
                }
            }
        }
        shard.offsets.push(shard.data.len() as u32);
        shard.keys.shrink_to_fit();
        shard.offsets.shrink_to_fit();
        shard.data.shrink_to_fit();
        shard
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

impl PostingCache {
    pub fn get(&mut self, shard: &Shard, key: u32) -> std::rc::Rc<Vec<u32>> {
        self.lists
            .entry(key)
            .or_insert_with(|| std::rc::Rc::new(shard.postings(key)))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigrams_fold_ascii_and_skip_line_breaks() {
        let mut scratch = TrigramScratch::default();
        let found = sorted_trigrams(&mut scratch, b"AbC\nabc");
        assert_eq!(found, vec![trigram(b'a', b'b', b'c')]);
        // The scratch set is clear again.
        assert!(scratch.seen.iter().all(|&w| w == 0));
        let kelvin = "\u{212A}".as_bytes();
        let found = sorted_trigrams(&mut scratch, kelvin);
        assert_eq!(found, vec![trigram(kelvin[0], kelvin[1], kelvin[2])]);
    }

    #[test]
    fn shards_round_trip_sparse_and_dense_lists() {
        let mut builder = ShardBuilder::new(100);
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
    }
}
