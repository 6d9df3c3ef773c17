//! An index segment: the trigram index of a set of files, written once to
//! the cache folder and then only read, memory-mapped, by any number of
//! servers. Modelled on google/codesearch's index file and Zoekt's shards.
//!
//! All integers are little-endian. A segment is:
//!
//! ```text
//! header   (HEADER_BYTES)
//!   magic "MPHIDX\r\n", version u32, 0 u32, file count u32, trigram count u32,
//!   then six sections, each (offset u64, length u64, crc32 u32, 0 u32),
//!   then the crc32 of the header's bytes before it, and 0 u32
//! root      the canonical project root the segment describes, UTF-8
//! files     one FILE_RECORD_BYTES record per file id, in path order:
//!           name offset u32, name length u32 (into `names`), the file's
//!           stamp, flags u8 (1: has a filter), filter case u8, 0 u16,
//!           filter offset u64 (into `filters`), filter words u32, 0 u32
//! names     the root-relative paths, `/`-separated, back to back
//! filters   the large files' Bloom filters, as u64 words
//! postings  per trigram, its file ids: delta + varint, or a bitmap
//! lookup    one LOOKUP_BYTES entry per trigram, sorted: trigram u32,
//!           encoding u8 (0 varint, 1 bitmap), 0 u8 ×3, offset u64 (into
//!           `postings`; a list ends where the next one starts)
//! ```
//!
//! Guarantees. A segment is written to a temporary file in its folder,
//! synced, then renamed into place, so a reader sees a whole segment or
//! none. Nothing read is trusted: opening a segment checks the magic, the
//! version, every section's bounds and checksum, the root, every name (a
//! relative path in strict path order, nothing that leaves the root) and
//! the lookup table's order; decoding a posting list checks each id. A
//! truncated, damaged, outdated or hostile file is an error, never a panic,
//! a read out of bounds or a wrong list: the caller drops it and rebuilds.

mod format;
mod read;
mod write;

pub use format::{FILE_RECORD_BYTES, LOOKUP_BYTES, MAX_NAME_BYTES, SegmentError};
pub use read::{FileEntry, Segment};
pub use write::{FileRecord, FilterBits, encode, store, write_segment};

/// The project root as a segment records it.
pub fn root_text(root: &std::path::Path) -> String {
    root.to_string_lossy().into_owned()
}
