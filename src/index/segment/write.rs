//! Encodes a segment: the one form of a posting list, whether the segment
//! stays on the heap or is written to the cache folder (streamed to a new
//! temporary file, synced, then renamed into place, so that no reader ever
//! maps half a segment, and no copy of it is held on the heap).

use std::borrow::Cow;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::ContentHash;
use super::format::{
    BITMAP, HAS_FILTER, HEADER_BYTES, Header, LOOKUP_BITMAP_BIT, LOOKUP_BYTES, MAX_NAME_BYTES,
    SECTIONS, Section, SegmentError, Span, TRIGRAM_LIMIT, VARINT, in_path_order, is_valid_name,
    write_varint,
};
use crate::index::cache::private;
use crate::walk::Stamp;

/// One large file's Bloom filter: its case mode and its words, as the
/// segment holds them (little-endian `u64`s, a power of two of them).
#[derive(Debug, Clone)]
pub struct FilterBits<'a> {
    pub case: u8,
    pub bytes: Cow<'a, [u8]>,
}

impl FilterBits<'_> {
    pub fn of_words(case: u8, words: &[u64]) -> FilterBits<'static> {
        FilterBits {
            case,
            bytes: Cow::Owned(words.iter().flat_map(|word| word.to_le_bytes()).collect()),
        }
    }

    fn words(&self) -> usize {
        self.bytes.len() / 8
    }
}

/// One file of the segment; its id is its position.
#[derive(Debug, Clone)]
pub struct FileRecord<'a> {
    /// Root-relative, `/`-separated.
    pub name: &'a str,
    pub stamp: Stamp,
    /// The hash of the text its trigrams were taken from.
    pub hash: ContentHash,
    pub filter: Option<FilterBits<'a>>,
}

/// What a segment written to a file is buffered by: its sections go out
/// as they are encoded.
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

/// Writes the segment of `files` (in strict path order) and `postings`
/// (trigrams in increasing order, each with its files' ids, increasing) as
/// `dir/file_name`, replacing any file of that name, encoding it straight
/// into the file. Returns its path.
pub fn write_segment(
    dir: &Path,
    file_name: &str,
    root: &str,
    files: &[FileRecord],
    postings: impl IntoIterator<Item = (u32, Vec<u32>)>,
) -> Result<PathBuf, SegmentError> {
    check_files(files)?;
    private::write_atomically_with(dir, file_name, |file| {
        let out = BufWriter::with_capacity(WRITE_BUFFER_BYTES, file);
        let (out, header) = write_all(root, files, postings, out)?;
        let file = out.into_inner().map_err(|error| error.into_error())?;
        // The header, its spans known only now, over its placeholder.
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header)?;
        Ok::<_, SegmentError>(())
    })?;
    Ok(dir.join(file_name))
}

/// Writes a segment's bytes as `dir/file_name` through a synced
/// temporary file, replacing any file of that name. Returns its path.
pub fn store(dir: &Path, file_name: &str, bytes: &[u8]) -> Result<PathBuf, SegmentError> {
    private::write_atomically(dir, file_name, bytes)?;
    Ok(dir.join(file_name))
}

/// The bytes of the segment of `files` (in strict path order) and
/// `postings` (trigrams in increasing order, each with its files' ids,
/// increasing).
pub fn encode(
    root: &str,
    files: &[FileRecord],
    postings: impl IntoIterator<Item = (u32, Vec<u32>)>,
) -> Result<Vec<u8>, SegmentError> {
    check_files(files)?;
    let (mut bytes, header) = write_all(root, files, postings, Vec::new())?;
    bytes[..header.len()].copy_from_slice(&header);
    // It may be kept on the heap for long: no room to spare.
    bytes.shrink_to_fit();
    Ok(bytes)
}

fn check_files(files: &[FileRecord]) -> Result<(), SegmentError> {
    if u32::try_from(files.len()).is_err() {
        return Err(SegmentError::Input("too many files"));
    }
    for (index, file) in files.iter().enumerate() {
        if !is_valid_name(file.name) || file.name.len() > MAX_NAME_BYTES {
            return Err(SegmentError::Input(
                "a name that is not a root-relative path",
            ));
        }
        if index > 0 && !in_path_order(files[index - 1].name, file.name) {
            return Err(SegmentError::Input("names out of path order"));
        }
        if file.filter.as_ref().is_some_and(|filter| {
            !filter.bytes.len().is_multiple_of(8)
                || !filter.words().is_power_of_two()
                || u32::try_from(filter.words()).is_err()
        }) {
            return Err(SegmentError::Input(
                "a filter whose size is not a power of two",
            ));
        }
    }
    Ok(())
}

/// A segment being encoded into `out`, with the position and checksum of
/// the section in progress.
struct Sink<W> {
    out: W,
    position: u64,
    section_start: u64,
    crc: crc32fast::Hasher,
}

impl<W: Write> Sink<W> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), SegmentError> {
        self.out.write_all(bytes)?;
        self.crc.update(bytes);
        self.position += bytes.len() as u64;
        Ok(())
    }

    fn finish_section(&mut self) -> Span {
        let crc = std::mem::take(&mut self.crc).finalize();
        let span = Span {
            offset: self.section_start,
            length: self.position - self.section_start,
            crc,
        };
        self.section_start = self.position;
        span
    }
}

/// Encodes the segment into `out`, its header a placeholder: returns `out`
/// and the header to write over it.
fn write_all<W: Write>(
    root: &str,
    files: &[FileRecord],
    postings: impl IntoIterator<Item = (u32, Vec<u32>)>,
    out: W,
) -> Result<(W, [u8; HEADER_BYTES]), SegmentError> {
    let mut header = Header {
        files: files.len() as u32,
        ..Header::default()
    };
    let mut sink = Sink {
        out,
        position: 0,
        section_start: 0,
        crc: crc32fast::Hasher::new(),
    };
    sink.write(&header.encode())?;
    sink.finish_section();
    let mut spans = Vec::with_capacity(SECTIONS.len());

    sink.write(root.as_bytes())?;
    spans.push(sink.finish_section());

    let (mut name_offset, mut filter_offset) = (0u64, 0u64);
    for file in files {
        let mut record = Vec::with_capacity(super::format::FILE_RECORD_BYTES);
        record.extend_from_slice(&offset_u32(name_offset)?.to_le_bytes());
        record.extend_from_slice(&(file.name.len() as u32).to_le_bytes());
        record.extend_from_slice(&file.stamp.to_bytes());
        let (flags, case, words) = match &file.filter {
            Some(filter) => (HAS_FILTER, filter.case, filter.words()),
            None => (0, 0, 0),
        };
        record.extend_from_slice(&[flags, case, 0, 0]);
        record.extend_from_slice(&filter_offset.to_le_bytes());
        record.extend_from_slice(&(words as u32).to_le_bytes());
        record.extend_from_slice(&[0; 4]);
        record.extend_from_slice(&file.hash.0);
        sink.write(&record)?;
        name_offset += file.name.len() as u64;
        filter_offset += words as u64 * 8;
    }
    spans.push(sink.finish_section());

    for file in files {
        sink.write(file.name.as_bytes())?;
    }
    spans.push(sink.finish_section());

    for filter in files.iter().filter_map(|file| file.filter.as_ref()) {
        sink.write(&filter.bytes)?;
    }
    spans.push(sink.finish_section());

    let bitmap_bytes = files.len().div_ceil(8);
    let mut lookup = Vec::new();
    let mut list = Vec::new();
    let mut previous_trigram = None;
    let mut list_offset = 0u64;
    for (trigram, ids) in postings {
        if trigram >= TRIGRAM_LIMIT || previous_trigram.is_some_and(|p| p >= trigram) {
            return Err(SegmentError::Input("trigrams out of order"));
        }
        previous_trigram = Some(trigram);
        if ids.is_empty() {
            continue;
        }
        if ids.windows(2).any(|pair| pair[0] >= pair[1])
            || ids.last().is_some_and(|&last| last as usize >= files.len())
        {
            return Err(SegmentError::Input("a posting list out of order or range"));
        }
        list.clear();
        let mut previous = 0;
        for (index, &id) in ids.iter().enumerate() {
            write_varint(&mut list, if index == 0 { id } else { id - previous });
            previous = id;
        }
        let encoding = if list.len() > bitmap_bytes {
            list.clear();
            list.resize(bitmap_bytes, 0);
            for &id in &ids {
                list[id as usize / 8] |= 1 << (id % 8);
            }
            BITMAP
        } else {
            VARINT
        };
        sink.write(&list)?;
        let key = match encoding {
            BITMAP => trigram | LOOKUP_BITMAP_BIT,
            _ => trigram,
        };
        let offset = u32::try_from(list_offset)
            .map_err(|_| SegmentError::Input("posting lists over 4 GiB"))?;
        lookup.extend_from_slice(&key.to_le_bytes());
        lookup.extend_from_slice(&offset.to_le_bytes());
        list_offset += list.len() as u64;
        header.trigrams += 1;
    }
    spans.push(sink.finish_section());

    debug_assert_eq!(lookup.len(), header.trigrams as usize * LOOKUP_BYTES);
    sink.write(&lookup)?;
    spans.push(sink.finish_section());

    for (section, span) in SECTIONS.iter().zip(spans) {
        header.spans[*section as usize] = span;
    }
    debug_assert_eq!(header.span(Section::Root).offset, HEADER_BYTES as u64);
    Ok((sink.out, header.encode()))
}

fn offset_u32(offset: u64) -> Result<u32, SegmentError> {
    u32::try_from(offset).map_err(|_| SegmentError::Input("names over 4 GiB"))
}
