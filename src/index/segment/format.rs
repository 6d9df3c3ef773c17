//! The byte layout shared by the segment's writer and reader (see the
//! module notes), and the checks both apply to names.

use crate::walk::{self, Stamp};

pub const MAGIC: [u8; 8] = *b"MPHIDX\r\n";
pub const VERSION: u32 = 2;

/// The sections, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Root = 0,
    Files,
    Names,
    Filters,
    Postings,
    Lookup,
}

pub const SECTIONS: [Section; 6] = [
    Section::Root,
    Section::Files,
    Section::Names,
    Section::Filters,
    Section::Postings,
    Section::Lookup,
];

const FIXED_BYTES: usize = 24;
const SECTION_BYTES: usize = 24;
pub const HEADER_BYTES: usize = FIXED_BYTES + SECTIONS.len() * SECTION_BYTES + 8;

pub const FILE_RECORD_BYTES: usize = 4 + 4 + Stamp::BYTES + 4 + 8 + 4 + 4 + CONTENT_HASH_BYTES;

/// A file's content hash: the first bytes of the SHA-256 of the text its
/// trigrams were taken from.
pub const CONTENT_HASH_BYTES: usize = 16;
/// Where the content hash lies in a file record.
pub const CONTENT_HASH_AT: usize = FILE_RECORD_BYTES - CONTENT_HASH_BYTES;
pub const LOOKUP_BYTES: usize = 8;
/// A lookup entry's first word: the trigram in its low 24 bits, bit 31
/// set for a bitmap list; the bits between are zero.
pub const LOOKUP_BITMAP_BIT: u32 = 1 << 31;

/// A file record's flag: the file has a Bloom filter of its long grams.
pub const HAS_FILTER: u8 = 1;

/// Posting list encodings.
pub const VARINT: u8 = 0;
pub const BITMAP: u8 = 1;

/// Trigrams use the low 24 bits.
pub const TRIGRAM_LIMIT: u32 = 1 << 24;

/// Longest name kept: longer paths are not indexed (they are candidates).
pub const MAX_NAME_BYTES: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    #[error("cannot read or write the segment: {0}")]
    Io(#[from] std::io::Error),
    #[error("not an index segment (wrong magic)")]
    Magic,
    #[error("segment format version {0}, this server reads version {VERSION}")]
    Version(u32),
    #[error("segment damaged: {0}")]
    Damaged(&'static str),
    #[error("segment describes another root")]
    OtherRoot,
    #[error("cannot write the segment: {0}")]
    Input(&'static str),
}

/// Where a section lies in the file, and its checksum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    pub offset: u64,
    pub length: u64,
    pub crc: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    pub files: u32,
    pub trigrams: u32,
    pub spans: [Span; SECTIONS.len()],
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut out = [0u8; HEADER_BYTES];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_le_bytes());
        out[16..20].copy_from_slice(&self.files.to_le_bytes());
        out[20..24].copy_from_slice(&self.trigrams.to_le_bytes());
        for (index, span) in self.spans.iter().enumerate() {
            let at = FIXED_BYTES + index * SECTION_BYTES;
            out[at..at + 8].copy_from_slice(&span.offset.to_le_bytes());
            out[at + 8..at + 16].copy_from_slice(&span.length.to_le_bytes());
            out[at + 16..at + 20].copy_from_slice(&span.crc.to_le_bytes());
        }
        let end = HEADER_BYTES - 8;
        let crc = crc32fast::hash(&out[..end]);
        out[end..end + 4].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// The header at the start of `bytes`, its own checksum verified and
    /// every section inside `bytes`, in order, not overlapping.
    pub fn decode(bytes: &[u8]) -> Result<Header, SegmentError> {
        let header = bytes
            .get(..HEADER_BYTES)
            .ok_or(SegmentError::Damaged("shorter than its header"))?;
        if header[0..8] != MAGIC {
            return Err(SegmentError::Magic);
        }
        let version = u32_at(header, 8);
        if version != VERSION {
            return Err(SegmentError::Version(version));
        }
        let end = HEADER_BYTES - 8;
        if crc32fast::hash(&header[..end]) != u32_at(header, end) {
            return Err(SegmentError::Damaged("header checksum"));
        }
        let mut decoded = Header {
            files: u32_at(header, 16),
            trigrams: u32_at(header, 20),
            spans: Default::default(),
        };
        let mut previous_end = HEADER_BYTES as u64;
        for (index, span) in decoded.spans.iter_mut().enumerate() {
            let at = FIXED_BYTES + index * SECTION_BYTES;
            *span = Span {
                offset: u64_at(header, at),
                length: u64_at(header, at + 8),
                crc: u32_at(header, at + 16),
            };
            let span_end = span
                .offset
                .checked_add(span.length)
                .ok_or(SegmentError::Damaged("section bounds"))?;
            if span.offset < previous_end || span_end > bytes.len() as u64 {
                return Err(SegmentError::Damaged("section bounds"));
            }
            previous_end = span_end;
        }
        Ok(decoded)
    }

    pub fn span(&self, section: Section) -> Span {
        self.spans[section as usize]
    }
}

/// The little-endian `u32` at `at`; callers pass positions inside `bytes`.
pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// The little-endian `u64` at `at`; callers pass positions inside `bytes`.
pub fn u64_at(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

pub fn write_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The varint at the start of `bytes` and its length; `None` when it is
/// cut short or longer than a `u32`.
pub fn read_varint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value: u32 = 0;
    for (index, &byte) in bytes.iter().take(5).enumerate() {
        let bits = u32::from(byte & 0x7f);
        let shift = 7 * index as u32;
        if shift == 28 && bits > 0x0f {
            return None;
        }
        value |= bits << shift;
        if byte & 0x80 == 0 {
            return Some((value, index + 1));
        }
    }
    None
}

/// Whether `name` may name a file of the root: relative, `/`-separated,
/// no empty, `.` or `..` component, no NUL or backslash, bounded.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && !name.contains(['\0', '\\'])
        && name
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && !(cfg!(windows) && name.contains(':'))
}

/// Whether `names` are in strict path order (the walker's order).
pub fn in_path_order(previous: &str, next: &str) -> bool {
    walk::path_order(previous, next) == std::cmp::Ordering::Less
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overlong() {
        for value in [0, 1, 127, 128, 300, 1 << 21, u32::MAX] {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(read_varint(&out), Some((value, out.len())));
            assert_eq!(read_varint(&out[..out.len() - 1]), None);
        }
        assert_eq!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0x1f]), None);
        assert_eq!(read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), None);
    }

    #[test]
    fn names_that_could_leave_the_root_are_invalid() {
        for bad in [
            "",
            "/etc/passwd",
            "a//b",
            "../x",
            "a/../../x",
            "a/.",
            "./a",
            "a\\b",
            "a\0b",
            "a/",
        ] {
            assert!(!is_valid_name(bad), "{bad:?}");
        }
        for good in ["a", "src/main.rs", ".env.example", "a/..b/c...d"] {
            assert!(is_valid_name(good), "{good:?}");
        }
    }

    #[test]
    fn a_header_round_trips_and_detects_damage() {
        let header = Header {
            files: 3,
            trigrams: 9,
            spans: std::array::from_fn(|i| Span {
                offset: (HEADER_BYTES + i * 10) as u64,
                length: 10,
                crc: i as u32,
            }),
        };
        let mut bytes = header.encode().to_vec();
        bytes.resize(HEADER_BYTES + 60, 0);
        assert_eq!(Header::decode(&bytes).unwrap(), header);
        assert!(matches!(
            Header::decode(&bytes[..HEADER_BYTES + 59]),
            Err(SegmentError::Damaged("section bounds"))
        ));
        bytes[17] ^= 1;
        assert!(matches!(
            Header::decode(&bytes),
            Err(SegmentError::Damaged("header checksum"))
        ));
    }
}
