//! The index's one on-disk (and in-memory) format: segments, and the
//! manifest that names the committed ones. Modelled on google/codesearch's
//! index file and Zoekt's shards. Every layer of the index is a segment,
//! held on the heap as these bytes or mapped from the cache folder; a
//! posting list has one encoding wherever it is, so writing a layer to
//! disk copies its bytes and decodes nothing.
//!
//! # A segment
//!
//! All integers are little-endian. A segment is:
//!
//! ```text
//! header   (HEADER_BYTES = 176)
//!   magic "MPHIDX\r\n", version u32 (2), 0 u32, file count u32,
//!   trigram count u32, then six sections, each (offset u64, length u64,
//!   crc32 u32, 0 u32), then the crc32 of the header's bytes before it,
//!   and 0 u32
//! root      the canonical project root the segment describes, UTF-8
//! files     one FILE_RECORD_BYTES (112) record per local id, in path order:
//!           name offset u32, name length u32 (into `names`), the stamp
//!           (68 bytes, below), flags u8 (1: has a filter), filter case u8,
//!           0 u16, filter offset u64 (into `filters`, a multiple of 8),
//!           filter words u32, 0 u32, content hash (16 bytes: the first
//!           bytes of the SHA-256 of the text the trigrams come from)
//! names     the root-relative paths, `/`-separated, back to back
//! filters   the large files' Bloom filters, as u64 words
//! postings  per trigram, its local ids, increasing: delta + varint (LEB128,
//!           the first id as is), or a bitmap where the varints would take
//!           more than `ceil(files / 8)` bytes: bit `id % 8` (least
//!           significant first) of byte `id / 8`
//! lookup    one LOOKUP_BYTES (8) entry per trigram, sorted by trigram: key
//!           u32 (the trigram's three case-folded bytes, high byte first,
//!           in the low 24 bits; bit 31 set for a bitmap list; bits 24-30
//!           zero), offset u32 (into `postings`, which stays under 4 GiB;
//!           a list ends where the next one starts)
//! ```
//!
//! A stamp (`walk/stamp.rs`) is size u64, modification time i128 and
//! change time i128 (nanoseconds since the Unix epoch), inode u64, device
//! u64, mode u32, link count u64. A filter (`ngram.rs`) is a power of two
//! of 64-bit words; bit `b` is bit `b % 64` of word `b / 64`; each long
//! sparse gram sets three bits from one multiplicative hash of its key;
//! the case byte says what it holds: 0 folded grams, 1 a file with no
//! upper-case ASCII letter, 2 folded grams and the grams as they are (keys
//! with bit 31 set).
//!
//! # The manifest
//!
//! The root's committed index, replaced as a whole (written to a
//! temporary file, synced, renamed). Text, at most 4 MiB:
//!
//! ```text
//! manifest  = "mcp-project-helper index 2" LF *segment check
//! segment   = "segment " name " " first-id " " dead LF
//! name      = "seg-" 1*(lowercase hex digit / "-") ".idx"   ; at most 64 bytes
//! first-id  = 1*DIGIT        ; the id of its first file (u32); its files
//!                            ; take the ids that follow, apart from every
//!                            ; other segment's
//! dead      = "-" / run *("," run)      ; local ids no file holds any more
//! run       = 1*DIGIT ["-" 1*DIGIT]     ; one id, or an inclusive range;
//!                                       ; runs increasing and apart
//! check     = "check " 8(lowercase hex digit) LF  ; crc32 of all before it
//! ```
//!
//! # Guarantees
//!
//! A segment is written to a temporary file in its folder, synced, then
//! renamed into place, so a reader sees a whole segment or none. Nothing
//! read is trusted: opening a segment checks the magic, the version, every
//! section's bounds and checksum, the root, every name (a relative path in
//! strict path order, nothing that leaves the root) and the lookup table's
//! order; decoding a posting list checks each id. A truncated, damaged,
//! outdated or hostile file is an error, never a panic, a read out of
//! bounds or a wrong list: the caller drops it and rebuilds. A manifest's
//! ids that overlap, or run past twice the files its segments hold, and
//! dead runs past a segment's files, make the whole manifest refused.
//!
//! # Version history
//!
//! - Segment version 1: file records of 96 bytes, without the content
//!   hash; lookup entries of 16 bytes (trigram u32, encoding u8, 0 u8 ×3,
//!   offset u64).
//! - Segment version 2: the layout above: the content hash (a file whose
//!   stamp changed but whose text hashes as recorded keeps its postings),
//!   lookup entries of half the size. A version-1 segment is refused, and
//!   the index built anew.
//! - Manifest version 1: `segment NAME` lines; ids followed the manifest's
//!   order, a segment's names all after the previous segment's, no dead
//!   ids (a session that found files changed wrote every segment again).
//! - Manifest version 2: each segment's first id and dead runs; segments
//!   in any path order (a layer of changed files names files anywhere).
//!   A version-1 manifest is refused, and the index built anew.

mod format;
mod read;
mod write;

pub use format::{FILE_RECORD_BYTES, LOOKUP_BYTES, MAX_NAME_BYTES, Section, SegmentError};
pub use read::{FileEntry, FilterAt, Located, RESIDENT_SECTIONS, ResidentBudget, Segment};
pub use write::{FileRecord, FilterBits, encode, store, write_segment};

/// What a file's text hashes to (the first 16 bytes of its SHA-256): a
/// file whose stamp changed but whose text hashes as its segment recorded
/// keeps its postings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentHash(pub [u8; format::CONTENT_HASH_BYTES]);

impl ContentHash {
    pub fn of(text: &[u8]) -> Self {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(text);
        let mut hash = [0; format::CONTENT_HASH_BYTES];
        hash.copy_from_slice(&digest[..format::CONTENT_HASH_BYTES]);
        ContentHash(hash)
    }
}

/// The project root as a segment records it.
pub fn root_text(root: &std::path::Path) -> String {
    root.to_string_lossy().into_owned()
}
