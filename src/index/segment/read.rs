//! Maps a segment (or holds one on the heap) and answers from it.
//! Everything is checked when the segment is opened, so that later reads
//! are plain slices of its bytes or reads of its file; the ids of a posting
//! list are checked as it is decoded.
//!
//! A mapped segment's file table and names, which a call reads for each
//! candidate, are read through the map. Its posting lists, filters and
//! lookup table, of which a call reads a few pieces, are read from the file
//! into the call's own buffer: a touch of a map takes a whole large folio of
//! the page cache (up to 2 MiB) into the process, so pieces read through
//! the map would make every call's resident size that of all it touched.
//! The heap keeps the first trigram of every block of 64 lookup entries,
//! so finding a trigram's list is one read of a block (512 bytes) and one
//! of the list; and a keyed hash of every file name, so finding a name
//! touches the map only where the segment holds it (a bisection of the
//! names would touch a page of every segment for every name, and the
//! background looks up each file it reads in every segment). A merge,
//! which reads every list once in order, reads them through the map and
//! gives the pages back as it goes.
//!
//! The kernel may drop a mapped segment's pages when memory is short
//! elsewhere (a container's limit, a host that reclaims idle file pages);
//! a search then waits on the disk for each block and list it reads, in
//! every layer. So the background copies the lookup tables, then the
//! posting lists, then the filters of mapped segments to the heap, within
//! a budget the model sets ([`ResidentBudget`]); reads of those sections
//! come from the copies from then on (a merge's read of every list too).
//! The file tables and names stay mapped (a call reads them for its
//! candidates only).

use std::borrow::Cow;
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use memmap2::Mmap;

use super::ContentHash;
use super::format::{
    BITMAP, CONTENT_HASH_AT, FILE_RECORD_BYTES, HAS_FILTER, Header, LOOKUP_BITMAP_BIT,
    LOOKUP_BYTES, SECTIONS, Section, SegmentError, Span, TRIGRAM_LIMIT, VARINT, in_path_order,
    is_valid_name, read_varint, u32_at, u64_at,
};
use crate::walk::Stamp;

/// Filter case modes a writer may record (the index's `FilterCase`).
const FILTER_CASES: u8 = 3;

/// Lookup entries per block: the heap keeps each block's first trigram, so
/// that finding a trigram bisects those and reads one block of the table.
const LOOKUP_BLOCK: usize = 64;

/// A checked, read-only segment.
pub struct Segment {
    bytes: Backing,
    header: Header,
    /// The first trigram of each block of the lookup table.
    lookup_blocks: Vec<u32>,
    names: NameIndex,
    /// Heap copies of a mapped segment's [`RESIDENT_SECTIONS`]; `None`
    /// inside once a copy was refused or failed (tried once).
    resident: [OnceLock<Option<Resident>>; RESIDENT_SECTIONS.len()],
}

/// The sections a mapped segment may copy to the heap, in the order the
/// background copies them (every layer's lookup table first: a search
/// reads a block of it in every layer for each trigram of the query).
pub const RESIDENT_SECTIONS: [Section; 3] = [Section::Lookup, Section::Postings, Section::Filters];

/// The heap a model's mapped segments may take for copies of their
/// [`RESIDENT_SECTIONS`], in bytes; a copy gives its bytes back when its
/// segment goes.
#[derive(Debug)]
pub struct ResidentBudget {
    left: AtomicUsize,
}

impl ResidentBudget {
    pub fn new(bytes: usize) -> Arc<Self> {
        Arc::new(ResidentBudget {
            left: AtomicUsize::new(bytes),
        })
    }

    /// What is left of it.
    pub fn left(&self) -> usize {
        self.left.load(Ordering::Acquire)
    }

    fn take(&self, bytes: usize) -> bool {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(bytes)
            })
            .is_ok()
    }
}

/// One section of a mapped segment copied to the heap.
struct Resident {
    bytes: Box<[u8]>,
    budget: Arc<ResidentBudget>,
}

impl Drop for Resident {
    fn drop(&mut self) {
        self.budget
            .left
            .fetch_add(self.bytes.len(), Ordering::AcqRel);
    }
}

/// Every file's name hash (upper 32 bits) and local id (lower), sorted:
/// what [`Segment::find_name`] bisects. The hash is keyed per segment, so
/// names chosen to collide cannot make a lookup visit many files.
struct NameIndex {
    keys: RandomState,
    sorted: Box<[u64]>,
    /// The first and the last name (the file table is in path order):
    /// a name outside them is in no other record, with no hash taken.
    bounds: Option<(Box<str>, Box<str>)>,
}

impl NameIndex {
    fn hash(&self, name: &str) -> u64 {
        self.keys.hash_one(name) >> 32
    }
}

/// Where a trigram's posting list lies in the postings, and its encoding.
#[derive(Debug, Clone, Copy)]
pub struct ListAt {
    encoding: u8,
    start: u64,
    end: u64,
}

/// What the lookup table says of a trigram.
#[derive(Debug, Clone, Copy)]
pub enum Located {
    /// No file of the segment holds it.
    Absent,
    /// Its list lies here.
    At(ListAt),
    /// The table could not be read: any file may hold it.
    Unknown,
}

enum Backing {
    /// The map, and the file it maps (for the reads of lists and filters).
    Mapped(Mmap, File),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Backing {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Backing::Mapped(map, _) => map,
            Backing::Owned(bytes) => bytes,
        }
    }
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("bytes", &self.bytes.len())
            .field("files", &self.header.files)
            .field("trigrams", &self.header.trigrams)
            .finish()
    }
}

/// One file of a segment.
#[derive(Debug, Clone, Copy)]
pub struct FileEntry<'a> {
    pub name: &'a str,
    pub stamp: Stamp,
    /// The hash of the text its trigrams were taken from.
    pub hash: ContentHash,
    /// Where its Bloom filter lies, if it has one ([`Segment::filter`]
    /// reads it).
    pub filter: Option<FilterAt>,
}

/// Where a file's Bloom filter lies in its segment's filters, and its case
/// mode.
#[derive(Debug, Clone, Copy)]
pub struct FilterAt {
    pub case: u8,
    offset: usize,
    words: usize,
}

impl Segment {
    /// Maps and checks the segment open as `file` (opened and checked by
    /// the cache's one opener), which must describe `root`.
    pub fn open(file: &File, root: &str) -> Result<Segment, SegmentError> {
        // SAFETY: segments are written once to a temporary file and renamed
        // into place; no writer of this program changes a committed one. The
        // map is read only through checked slices.
        let map = unsafe { Mmap::map(file)? };
        // The checksums are taken from reads of the file, not through the
        // map: pages touched through a map count as the process's own.
        let backing = Backing::Mapped(map, file.try_clone()?);
        let segment = Segment::check(backing, root, |_, span| crc_of_read(file, span))?;
        segment.drop_resident_pages();
        Ok(segment)
    }

    /// Drops the pages read so far (by the checks: every section; by a
    /// sweep of its files; by a merge reading its lists) from the process:
    /// lookups touch again only what they need. A segment held on the heap
    /// keeps its bytes.
    pub fn drop_resident_pages(&self) {
        self.drop_pages(0..self.bytes.len());
    }

    fn drop_pages(&self, range: std::ops::Range<usize>) {
        match &self.bytes {
            // SAFETY: the map is a read-only shared mapping of a file that
            // is never changed once written (segments are replaced by a
            // rename, never rewritten): a page dropped is read again from
            // the file, as it was, when next touched, also by a reader on
            // another thread. The range lies within the map (the header's
            // spans were checked against its length).
            #[cfg(unix)]
            Backing::Mapped(map, _) => {
                let _ = unsafe {
                    map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        range.start,
                        range.len(),
                    )
                };
            }
            #[cfg(not(unix))]
            Backing::Mapped(..) => {
                let _ = range;
            }
            Backing::Owned(_) => {}
        }
    }

    /// Checks the segment `bytes` (as [`super::encode`] makes them) and
    /// keeps it on the heap.
    pub fn from_bytes(bytes: Vec<u8>, root: &str) -> Result<Segment, SegmentError> {
        Segment::check(Backing::Owned(bytes), root, |section, _| {
            Ok(crc32fast::hash(section))
        })
    }

    /// What the segment holds on the heap: its name index, and its bytes
    /// unless mapped (mapped pages are the kernel's to keep or drop).
    pub fn heap_bytes(&self) -> usize {
        let bytes = match &self.bytes {
            Backing::Mapped(..) => 0,
            Backing::Owned(bytes) => bytes.capacity(),
        };
        bytes + size_of_val(&*self.names.sorted) + self.lookup_blocks.capacity() * 4
    }

    /// Whether its bytes are held on the heap (not mapped from a file).
    pub fn on_heap(&self) -> bool {
        matches!(self.bytes, Backing::Owned(_))
    }

    /// Copies `section` (one of [`RESIDENT_SECTIONS`]) of a mapped
    /// segment to the heap when `budget` has room for it, its checksum
    /// checked again on the copy (see the module notes). Tried once;
    /// whether the segment now holds the copy.
    fn keep_resident(&self, section: Section, budget: &Arc<ResidentBudget>) -> bool {
        let (Backing::Mapped(_, file), Some(slot)) = (&self.bytes, self.resident_slot(section))
        else {
            return false;
        };
        slot.get_or_init(|| {
            let span = self.header.span(section);
            let length = usize::try_from(span.length).ok()?;
            if !budget.take(length) {
                return None;
            }
            // Made first so that a failed read gives the bytes back.
            let mut copy = Resident {
                bytes: vec![0; length].into_boxed_slice(),
                budget: Arc::clone(budget),
            };
            read_exact_at(file, &mut copy.bytes, span.offset).ok()?;
            (crc32fast::hash(&copy.bytes) == span.crc).then_some(copy)
        })
        .is_some()
    }

    /// Copies `section` to the heap in every segment of `segments` that
    /// has not tried it yet, or in none when their copies would not all
    /// fit in what is left of `budget` (they are marked tried): a search
    /// reads the section in every layer, and one left on disk costs it the
    /// wait the others saved, so on a tree too large for all of one
    /// section the budget stays for the sections that fit. `next` runs
    /// before each copy; copying stops when it answers false.
    pub fn keep_resident_in_all(
        segments: &[Arc<Segment>],
        section: Section,
        budget: &Arc<ResidentBudget>,
        mut next: impl FnMut() -> bool,
    ) {
        let untried: Vec<&Arc<Segment>> = segments
            .iter()
            .filter(|segment| segment.resident_untried(section))
            .collect();
        let needed: u64 = untried
            .iter()
            .map(|segment| segment.header.span(section).length)
            .sum();
        let fits = needed <= budget.left() as u64;
        for segment in untried {
            if !next() {
                return;
            }
            if fits {
                segment.keep_resident(section, budget);
            } else if let Some(slot) = segment.resident_slot(section) {
                let _ = slot.set(None);
            }
        }
    }

    /// Whether a copy of `section` is still to be tried: a mapped
    /// segment's section of [`RESIDENT_SECTIONS`] not tried yet.
    pub fn resident_untried(&self, section: Section) -> bool {
        matches!(self.bytes, Backing::Mapped(..))
            && self
                .resident_slot(section)
                .is_some_and(|slot| slot.get().is_none())
    }

    /// The bytes its copies take.
    pub fn resident_bytes(&self) -> usize {
        RESIDENT_SECTIONS
            .into_iter()
            .filter_map(|section| self.resident(section))
            .map(<[u8]>::len)
            .sum()
    }

    fn resident_slot(&self, section: Section) -> Option<&OnceLock<Option<Resident>>> {
        let index = RESIDENT_SECTIONS.iter().position(|&each| each == section)?;
        Some(&self.resident[index])
    }

    fn resident(&self, section: Section) -> Option<&[u8]> {
        match self.resident_slot(section)?.get()? {
            Some(resident) => Some(&resident.bytes),
            None => None,
        }
    }

    /// Its bytes, to write it to the cache folder as they are.
    pub fn raw(&self) -> &[u8] {
        &self.bytes
    }

    /// Checks `bytes`, the checksum of each section taken by `checksum`
    /// from its bytes or its span (a mapped segment reads the span from
    /// its file instead).
    fn check(
        bytes: Backing,
        root: &str,
        mut checksum: impl FnMut(&[u8], Span) -> std::io::Result<u32>,
    ) -> Result<Segment, SegmentError> {
        let header = Header::decode(&bytes)?;
        for section in SECTIONS {
            let span = header.span(section);
            if checksum(section_of(&bytes, &header, section), span)? != span.crc {
                return Err(SegmentError::Damaged("section checksum"));
            }
        }
        if section_of(&bytes, &header, Section::Root) != root.as_bytes() {
            return Err(SegmentError::OtherRoot);
        }
        let mut segment = Segment {
            bytes,
            header,
            lookup_blocks: Vec::new(),
            names: NameIndex {
                keys: RandomState::new(),
                sorted: Box::default(),
                bounds: None,
            },
            resident: Default::default(),
        };
        segment.names.sorted = segment.check_files()?;
        let last = segment.header.files.checked_sub(1);
        segment.names.bounds = last.and_then(|last| {
            let name = |id| segment.file(id).map(|file| Box::from(file.name));
            Some((name(0)?, name(last)?))
        });
        segment.check_lookup()?;
        Ok(segment)
    }

    /// The bytes of `section`: its copy on the heap where there is one
    /// (equal to the file's, its checksum checked), else through the map.
    fn section(&self, section: Section) -> &[u8] {
        self.resident(section)
            .unwrap_or_else(|| section_of(&self.bytes, &self.header, section))
    }

    /// Checks the file table and names; returns the name index's entries.
    fn check_files(&self) -> Result<Box<[u64]>, SegmentError> {
        let records = self.section(Section::Files);
        if records.len() as u64 != u64::from(self.header.files) * FILE_RECORD_BYTES as u64 {
            return Err(SegmentError::Damaged("file table length"));
        }
        let names = self.section(Section::Names);
        let filters = self.section(Section::Filters).len() as u64;
        let mut previous: Option<&str> = None;
        let mut sorted = Vec::with_capacity(self.header.files as usize);
        for id in 0..self.header.files {
            let record = self.record(id);
            let start = u32_at(record, 0) as usize;
            let length = u32_at(record, 4) as usize;
            let name = start
                .checked_add(length)
                .and_then(|end| names.get(start..end))
                .and_then(|name| std::str::from_utf8(name).ok())
                .filter(|name| is_valid_name(name))
                .ok_or(SegmentError::Damaged("file name"))?;
            if previous.is_some_and(|previous| !in_path_order(previous, name)) {
                return Err(SegmentError::Damaged("file names out of order"));
            }
            previous = Some(name);
            sorted.push(self.names.hash(name) << 32 | u64::from(id));
            let flags_at = 8 + Stamp::BYTES;
            let (flags, case) = (record[flags_at], record[flags_at + 1]);
            let offset = u64_at(record, flags_at + 4);
            let words = u64::from(u32_at(record, flags_at + 12));
            let filter_ok = match flags {
                0 => true,
                HAS_FILTER => {
                    case < FILTER_CASES
                        && words.is_power_of_two()
                        && offset.is_multiple_of(8)
                        && offset
                            .checked_add(words * 8)
                            .is_some_and(|end| end <= filters)
                }
                _ => false,
            };
            if !filter_ok {
                return Err(SegmentError::Damaged("file filter"));
            }
        }
        sorted.sort_unstable();
        Ok(sorted.into_boxed_slice())
    }

    /// Checks the lookup table and keeps the first trigram of each block.
    fn check_lookup(&mut self) -> Result<(), SegmentError> {
        let lookup = self.section(Section::Lookup);
        if lookup.len() as u64 != u64::from(self.header.trigrams) * LOOKUP_BYTES as u64 {
            return Err(SegmentError::Damaged("lookup table length"));
        }
        let postings = self.section(Section::Postings).len() as u64;
        let bitmap_bytes = u64::from(self.header.files).div_ceil(8);
        let mut previous: Option<u32> = None;
        for index in 0..self.header.trigrams as usize {
            let (trigram, encoding, start, end) = self.entry(index);
            if trigram >= TRIGRAM_LIMIT || previous.is_some_and(|p| p >= trigram) {
                return Err(SegmentError::Damaged("lookup table order"));
            }
            previous = Some(trigram);
            if index.is_multiple_of(LOOKUP_BLOCK) {
                self.lookup_blocks.push(trigram);
            }
            let length_ok = match encoding {
                VARINT => start < end,
                BITMAP => end.checked_sub(start) == Some(bitmap_bytes),
                _ => false,
            };
            if !length_ok || end > postings {
                return Err(SegmentError::Damaged("posting list bounds"));
            }
        }
        Ok(())
    }

    fn record(&self, id: u32) -> &[u8] {
        let start = id as usize * FILE_RECORD_BYTES;
        self.section(Section::Files)
            .get(start..start + FILE_RECORD_BYTES)
            .unwrap_or_default()
    }

    /// The `index`-th lookup entry: trigram, encoding (`u8::MAX` for a
    /// key whose unused bits are set), and where its list starts and ends
    /// in the postings.
    fn entry(&self, index: usize) -> (u32, u8, u64, u64) {
        let lookup = self.section(Section::Lookup);
        let at = index * LOOKUP_BYTES;
        let end = if index + 1 < self.header.trigrams as usize {
            u64::from(u32_at(lookup, at + LOOKUP_BYTES + 4))
        } else {
            self.section(Section::Postings).len() as u64
        };
        let key = u32_at(lookup, at);
        let start = u64::from(u32_at(lookup, at + 4));
        (key & (TRIGRAM_LIMIT - 1), encoding_of(key), start, end)
    }

    pub fn file_count(&self) -> u32 {
        self.header.files
    }

    pub fn trigram_count(&self) -> u32 {
        self.header.trigrams
    }

    /// The segment's size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The file of id `id`, when there is one.
    pub fn file(&self, id: u32) -> Option<FileEntry<'_>> {
        if id >= self.header.files {
            return None;
        }
        let record = self.record(id);
        let start = u32_at(record, 0) as usize;
        let name = self
            .section(Section::Names)
            .get(start..start + u32_at(record, 4) as usize)
            .and_then(|name| std::str::from_utf8(name).ok())?;
        let stamp = Stamp::from_bytes(record.get(8..8 + Stamp::BYTES)?.try_into().ok()?);
        let flags_at = 8 + Stamp::BYTES;
        // Checked when the segment was opened: within the filters.
        let filter = (record[flags_at] == HAS_FILTER).then(|| FilterAt {
            case: record[flags_at + 1],
            offset: u64_at(record, flags_at + 4) as usize,
            words: u32_at(record, flags_at + 12) as usize,
        });
        let hash = record
            .get(CONTENT_HASH_AT..)
            .and_then(|bytes| bytes.try_into().ok())
            .map(ContentHash)?;
        Some(FileEntry {
            name,
            stamp,
            hash,
            filter,
        })
    }

    /// The words of the filter at `at` (little-endian `u64`s, a power of
    /// two of them), read from the file of a mapped segment.
    pub fn filter(&self, at: FilterAt) -> Result<Cow<'_, [u8]>, SegmentError> {
        self.read(Section::Filters, at.offset, at.offset + at.words * 8)
    }

    /// The bytes `start..end` of `section`: a slice of the heap, or read
    /// from a mapped segment's file (see the module notes).
    fn read(
        &self,
        section: Section,
        start: usize,
        end: usize,
    ) -> Result<Cow<'_, [u8]>, SegmentError> {
        let bounds = SegmentError::Damaged("section bounds");
        let span = self.header.span(section);
        if start > end || end as u64 > span.length {
            return Err(bounds);
        }
        match &self.bytes {
            Backing::Mapped(_, file) if self.resident(section).is_none() => {
                let mut bytes = vec![0; end - start];
                read_exact_at(file, &mut bytes, span.offset + start as u64)?;
                Ok(Cow::Owned(bytes))
            }
            // The heap's bytes, or the section's copy.
            _ => Ok(Cow::Borrowed(
                self.section(section).get(start..end).ok_or(bounds)?,
            )),
        }
    }

    /// The local id of the file named `name`, if the segment holds it: the
    /// ids of its hash in the name index, each name compared.
    pub fn find_name(&self, name: &str) -> Option<u32> {
        let (first, last) = self.names.bounds.as_ref()?;
        if in_path_order(name, first) || in_path_order(last, name) {
            return None;
        }
        let hash = self.names.hash(name);
        let sorted = &self.names.sorted;
        let first = sorted.partition_point(|entry| entry >> 32 < hash);
        sorted[first..]
            .iter()
            .take_while(|entry| *entry >> 32 == hash)
            .map(|entry| *entry as u32)
            .find(|&local| self.file(local).is_some_and(|file| file.name == name))
    }

    /// Where `trigram`'s list lies: the block of the lookup table that
    /// would hold it is read and bisected.
    pub fn locate(&self, trigram: u32) -> Located {
        match self.find(trigram) {
            Ok(Some(at)) => Located::At(at),
            Ok(None) => Located::Absent,
            Err(_) => Located::Unknown,
        }
    }

    /// The bytes of the list `located`: what decoding it costs (0 for a
    /// table that could not be read: asking that list first costs least).
    pub fn list_bytes(&self, located: Located) -> usize {
        match located {
            Located::At(at) => at.end.saturating_sub(at.start) as usize,
            Located::Absent | Located::Unknown => 0,
        }
    }

    fn find(&self, trigram: u32) -> Result<Option<ListAt>, SegmentError> {
        let count = self.header.trigrams as usize;
        let Some(block) = self
            .lookup_blocks
            .partition_point(|&first| first <= trigram)
            .checked_sub(1)
        else {
            return Ok(None);
        };
        let first = block * LOOKUP_BLOCK;
        let entries = LOOKUP_BLOCK.min(count - first);
        // One entry more where there is one: where the block's last list ends.
        let end = (first + entries + 1).min(count);
        let table = self.read(Section::Lookup, first * LOOKUP_BYTES, end * LOOKUP_BYTES)?;
        let key = |index: usize| u32_at(&table, index * LOOKUP_BYTES);
        let (mut low, mut high) = (0, entries);
        while low < high {
            let middle = (low + high) / 2;
            if key(middle) & (TRIGRAM_LIMIT - 1) < trigram {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        if low == entries || key(low) & (TRIGRAM_LIMIT - 1) != trigram {
            return Ok(None);
        }
        let list_end = if first + low + 1 < count {
            u64::from(u32_at(&table, (low + 1) * LOOKUP_BYTES + 4))
        } else {
            self.header.span(Section::Postings).length
        };
        Ok(Some(ListAt {
            encoding: encoding_of(key(low)),
            start: u64::from(u32_at(&table, low * LOOKUP_BYTES + 4)),
            end: list_end,
        }))
    }

    /// The ids of the files holding `trigram`, increasing.
    pub fn postings(&self, trigram: u32) -> Result<Vec<u32>, SegmentError> {
        match self.find(trigram)? {
            Some(at) => self.postings_at(at),
            None => Ok(Vec::new()),
        }
    }

    /// The ids of the list at `at`, increasing.
    pub fn postings_at(&self, at: ListAt) -> Result<Vec<u32>, SegmentError> {
        self.ids_of(at.encoding, &self.list(at)?)
    }

    /// Every trigram with its list, in increasing trigram order, read
    /// through the map or from the copies (a merge: see the module notes);
    /// a list that fails to decode is an error.
    pub fn lists(&self) -> impl Iterator<Item = (u32, Result<Vec<u32>, SegmentError>)> + '_ {
        (0..self.header.trigrams as usize).map(|index| {
            let (trigram, encoding, start, end) = self.entry(index);
            let list = self
                .section(Section::Postings)
                .get(start as usize..end as usize)
                .ok_or(SegmentError::Damaged("posting list bounds"));
            (trigram, list.and_then(|list| self.ids_of(encoding, list)))
        })
    }

    /// The bytes of the list at `at`.
    fn list(&self, at: ListAt) -> Result<Cow<'_, [u8]>, SegmentError> {
        self.read(Section::Postings, at.start as usize, at.end as usize)
    }

    /// The ids of the list `list`, encoded as `encoding`.
    fn ids_of(&self, encoding: u8, list: &[u8]) -> Result<Vec<u32>, SegmentError> {
        if encoding == BITMAP {
            return Ok(bitmap_ids(list, self.header.files));
        }
        ListIds::new(list, self.header.files).collect()
    }

    /// Keeps the `ids` (increasing) whose files hold `trigram`.
    pub fn retain_holding(&self, trigram: u32, ids: &mut Vec<u32>) {
        self.retain_located(self.locate(trigram), ids);
    }

    /// Keeps the `ids` (increasing) whose files are in the list `located`,
    /// testing bits of a bitmap list and walking a varint list once, as far
    /// as the last id; a list that fails to decode or to be read keeps
    /// every id.
    pub fn retain_located(&self, located: Located, ids: &mut Vec<u32>) {
        let at = match located {
            Located::At(at) => at,
            Located::Absent => {
                ids.clear();
                return;
            }
            Located::Unknown => return,
        };
        let Ok(list) = self.list(at) else {
            return;
        };
        if at.encoding == BITMAP {
            ids.retain(|&id| {
                list.get(id as usize / 8)
                    .is_some_and(|byte| byte & (1 << (id % 8)) != 0)
            });
            return;
        }
        retain_listed(ListIds::new(&list, self.header.files), ids);
    }
}

/// The ids of a delta + varint list, in increasing order, read as they
/// are needed; an `Err` (and nothing after it) once the list proves
/// damaged.
struct ListIds<'a> {
    list: &'a [u8],
    previous: Option<u32>,
    files: u32,
}

impl<'a> ListIds<'a> {
    fn new(list: &'a [u8], files: u32) -> Self {
        Self {
            list,
            previous: None,
            files,
        }
    }
}

impl Iterator for ListIds<'_> {
    type Item = Result<u32, SegmentError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.list.is_empty() {
            return None;
        }
        let id = read_varint(self.list).and_then(|(value, length)| {
            self.list = &self.list[length..];
            match self.previous {
                None => Some(value),
                Some(_) if value == 0 => None,
                Some(previous) => previous.checked_add(value),
            }
        });
        match id.filter(|&id| id < self.files) {
            Some(id) => {
                self.previous = Some(id);
                Some(Ok(id))
            }
            None => {
                self.list = &[];
                Some(Err(SegmentError::Damaged("posting list")))
            }
        }
    }
}

/// Keeps the `ids` (increasing) that `listed` holds, reading the list
/// only as far as the last of them; a list found damaged on the way keeps
/// every id.
fn retain_listed(mut listed: ListIds<'_>, ids: &mut Vec<u32>) {
    let mut kept = Vec::with_capacity(ids.len());
    let mut next = listed.next();
    for &id in ids.iter() {
        while let Some(Ok(below)) = next
            && below < id
        {
            next = listed.next();
        }
        match next {
            Some(Ok(listed_id)) if listed_id == id => kept.push(id),
            Some(Ok(_)) => {}
            Some(Err(_)) => return,
            // The list ended: it holds none of the ids left.
            None => break,
        }
    }
    *ids = kept;
}

/// The crc32 of `span`'s bytes of `file` (whose map the header's spans
/// were checked against), read through a buffer rather than the map.
fn crc_of_read(file: &File, span: Span) -> std::io::Result<u32> {
    const BUFFER_BYTES: u64 = 256 * 1024;
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0; span.length.min(BUFFER_BYTES) as usize];
    let mut done = 0;
    while done < span.length {
        let chunk = &mut buffer[..(span.length - done).min(BUFFER_BYTES) as usize];
        read_exact_at(file, chunk, span.offset + done)?;
        hasher.update(chunk);
        done += chunk.len() as u64;
    }
    Ok(hasher.finalize())
}

/// Fills `buffer` from `file` at `offset`, leaving the file's position
/// alone: readers on several threads share one segment's file.
fn read_exact_at(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buffer, offset)
    }
    #[cfg(windows)]
    {
        // `seek_read` moves the position too, which no reader relies on.
        let (mut buffer, mut offset) = (buffer, offset);
        while !buffer.is_empty() {
            match std::os::windows::fs::FileExt::seek_read(file, buffer, offset) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(read) => {
                    buffer = &mut buffer[read..];
                    offset += read as u64;
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// The encoding a lookup entry's key word gives (`u8::MAX` for a key whose
/// unused bits are set).
fn encoding_of(key: u32) -> u8 {
    match key & !(TRIGRAM_LIMIT - 1) {
        0 => VARINT,
        LOOKUP_BITMAP_BIT => BITMAP,
        _ => u8::MAX,
    }
}

fn section_of<'a>(bytes: &'a [u8], header: &Header, section: Section) -> &'a [u8] {
    let span = header.span(section);
    bytes
        .get(span.offset as usize..(span.offset + span.length) as usize)
        .unwrap_or_default()
}

/// The ids set in a bitmap of `files` bits (bits past them are ignored).
fn bitmap_ids(bitmap: &[u8], files: u32) -> Vec<u32> {
    let mut ids = Vec::new();
    for (index, &byte) in bitmap.iter().enumerate() {
        for bit in 0..8 {
            let id = index as u32 * 8 + bit;
            if byte & (1 << bit) != 0 && id < files {
                ids.push(id);
            }
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::super::{ContentHash, FileRecord, FilterBits, write_segment};
    use super::*;
    use crate::index::testing::{assert_retains_listed, unfiltered_records};
    use proptest::prelude::*;
    use std::path::Path;

    const ROOT: &str = "/project";

    fn stamp_of(path: &Path) -> Stamp {
        Stamp::of(&std::fs::symlink_metadata(path).unwrap())
    }

    /// A segment of `names`, where file `i` holds trigram `t` when
    /// `(t + i) % 3 == 0` among trigrams 0..`trigrams`, and every fourth
    /// file has a filter.
    fn sample(names: &[String], trigrams: u32) -> (tempfile::TempDir, std::path::PathBuf, Stamp) {
        let dir = tempfile::tempdir().unwrap();
        let stamp = stamp_of(dir.path());
        let words = vec![0x0123_4567_89ab_cdef_u64; 4];
        let files: Vec<FileRecord> = names
            .iter()
            .enumerate()
            .map(|(i, name)| FileRecord {
                name,
                stamp,
                hash: ContentHash::of(name.as_bytes()),
                filter: (i % 4 == 0).then(|| FilterBits::of_words(1, &words)),
            })
            .collect();
        let lists: Vec<(u32, Vec<u32>)> = (0..trigrams)
            .map(|t| {
                let ids = (0..names.len() as u32)
                    .filter(|i| (t + i) % 3 == 0)
                    .collect();
                (t * 7, ids)
            })
            .collect();
        let path = write_segment(dir.path(), "seg", ROOT, &files, lists).unwrap();
        (dir, path, stamp)
    }

    fn names(count: usize) -> Vec<String> {
        let mut names: Vec<String> = (0..count)
            .map(|i| format!("dir{}/file{i}.rs", i % 5))
            .collect();
        names.sort_by(|a, b| crate::walk::path_order(a, b));
        names
    }

    #[test]
    fn a_segment_streamed_to_its_file_is_the_one_encoded_in_memory() {
        // Lists of several MiB: the file is written through many fills of
        // its buffer, the header last.
        let names = names(2000);
        let stamp = Stamp::from_bytes(&[7; Stamp::BYTES]);
        let files =
            unfiltered_records(&names.iter().map(String::as_str).collect::<Vec<_>>(), stamp);
        let lists =
            || (0..20_000u32).map(|t| (t, (t % 7..2000).step_by(3 + t as usize % 5).collect()));
        let dir = tempfile::tempdir().unwrap();
        let path = write_segment(dir.path(), "seg", ROOT, &files, lists()).unwrap();
        let in_memory = super::super::encode(ROOT, &files, lists()).unwrap();
        assert!(in_memory.len() > 4 * 1024 * 1024, "{}", in_memory.len());
        assert!(std::fs::read(&path).unwrap() == in_memory);
        // Only the segment is left: no temporary file.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_written_segment_reads_back_the_same() {
        let names = names(40);
        // Trigrams in several blocks of the lookup table, the last one short.
        let trigrams = 3 * LOOKUP_BLOCK as u32 + 8;
        let (_dir, path, stamp) = sample(&names, trigrams);
        let segment = Segment::open(&File::open(&path).unwrap(), ROOT).unwrap();
        assert_eq!(segment.file_count(), 40);
        for (id, name) in names.iter().enumerate() {
            let file = segment.file(id as u32).unwrap();
            assert_eq!(file.name, name);
            assert_eq!(file.stamp, stamp);
            assert_eq!(file.filter.is_some(), id % 4 == 0);
            if let Some(at) = file.filter {
                let words = segment.filter(at).unwrap();
                assert_eq!(at.case, 1);
                assert_eq!(words.len(), 32);
                assert_eq!(u64_at(&words, 8), 0x0123_4567_89ab_cdef);
            }
        }
        assert!(segment.file(40).is_none());
        assert_reads_back(&segment, 40, trigrams);
        assert!(segment.postings(trigrams * 7).unwrap().is_empty());
        assert!(matches!(
            Segment::open(&File::open(&path).unwrap(), "/elsewhere"),
            Err(SegmentError::OtherRoot)
        ));
    }

    /// Writes zeros over `section` of the segment file at `path`: what a
    /// read of the file finds there from then on.
    fn zero_section(path: &Path, section: Section) {
        use std::io::{Seek, SeekFrom, Write};
        let header = Header::decode(&std::fs::read(path).unwrap()).unwrap();
        let span = header.span(section);
        let mut file = File::options().write(true).open(path).unwrap();
        file.seek(SeekFrom::Start(span.offset)).unwrap();
        file.write_all(&vec![0; span.length as usize]).unwrap();
    }

    /// Every list and filter of a segment of `sample(names, trigrams)`
    /// reads back as written.
    fn assert_reads_back(segment: &Segment, files: u32, trigrams: u32) {
        for id in 0..files {
            if let Some(at) = segment.file(id).unwrap().filter {
                assert_eq!(
                    u64_at(&segment.filter(at).unwrap(), 8),
                    0x0123_4567_89ab_cdef
                );
            }
        }
        for t in 0..trigrams {
            let expected: Vec<u32> = (0..files).filter(|i| (t + i) % 3 == 0).collect();
            assert_eq!(segment.postings(t * 7).unwrap(), expected, "trigram {t}");
            assert!(segment.postings(t * 7 + 1).unwrap().is_empty());
        }
    }

    #[test]
    fn copied_sections_answer_from_the_heap_and_their_bytes_go_back_with_the_segment() {
        let names = names(40);
        let trigrams = 3 * LOOKUP_BLOCK as u32 + 8;
        let (_dir, path, _) = sample(&names, trigrams);
        let segment = Segment::open(&File::open(&path).unwrap(), ROOT).unwrap();
        let budget = ResidentBudget::new(1 << 20);
        for section in RESIDENT_SECTIONS {
            assert!(segment.resident_untried(section));
            assert!(segment.keep_resident(section, &budget), "{section:?}");
            assert!(!segment.resident_untried(section));
        }
        assert!(segment.resident_bytes() > 0);
        assert_eq!(budget.left(), (1 << 20) - segment.resident_bytes());
        // The file's copies of those sections are gone: reads come from
        // the heap (the file table and names are still read through the map).
        for section in RESIDENT_SECTIONS {
            zero_section(&path, section);
        }
        assert_reads_back(&segment, 40, trigrams);
        // A merge's read of every list too.
        let lists: Vec<(u32, Vec<u32>)> = segment
            .lists()
            .map(|(trigram, ids)| (trigram, ids.unwrap()))
            .collect();
        assert_eq!(lists.len(), trigrams as usize);
        for (t, (trigram, ids)) in lists.into_iter().enumerate() {
            assert_eq!(trigram, t as u32 * 7);
            assert_eq!(ids, segment.postings(trigram).unwrap());
        }
        drop(segment);
        assert_eq!(budget.left(), 1 << 20);
    }

    #[test]
    fn a_copy_over_the_budget_or_unlike_its_checksum_is_refused_and_the_file_read() {
        let names = names(40);
        let trigrams = 3 * LOOKUP_BLOCK as u32 + 8;
        let (_dir, path, _) = sample(&names, trigrams);
        let segment = Segment::open(&File::open(&path).unwrap(), ROOT).unwrap();
        let small = ResidentBudget::new(16);
        for section in RESIDENT_SECTIONS {
            assert!(!segment.keep_resident(section, &small), "{section:?}");
            // Tried once: not again, whatever the budget later.
            assert!(!segment.resident_untried(section));
        }
        assert_eq!(small.left(), 16);
        assert_eq!(segment.resident_bytes(), 0);
        assert_reads_back(&segment, 40, trigrams);

        // The file changed after it was opened: the copy is not taken.
        let other = Segment::open(&File::open(&path).unwrap(), ROOT).unwrap();
        zero_section(&path, Section::Postings);
        let budget = ResidentBudget::new(1 << 20);
        assert!(!other.keep_resident(Section::Postings, &budget));
        assert!(other.keep_resident(Section::Lookup, &budget));
        assert_eq!(budget.left(), (1 << 20) - other.resident_bytes());
    }

    #[test]
    fn a_section_is_copied_in_every_segment_or_in_none() {
        let (_one_dir, one, _) = sample(&names(40), 200);
        let (_two_dir, two, _) = sample(&names(60), 300);
        let open = |path: &Path| Arc::new(Segment::open(&File::open(path).unwrap(), ROOT).unwrap());
        let lookup_bytes = |segments: &[Arc<Segment>]| -> usize {
            segments
                .iter()
                .map(|segment| segment.header.span(Section::Lookup).length as usize)
                .sum()
        };
        let segments = [open(&one), open(&two)];
        let both = lookup_bytes(&segments);
        // Room for the larger one alone: neither is copied, both tried.
        let budget = ResidentBudget::new(both - 1);
        Segment::keep_resident_in_all(&segments, Section::Lookup, &budget, || true);
        for segment in &segments {
            assert!(!segment.resident_untried(Section::Lookup));
            assert_eq!(segment.resident_bytes(), 0);
        }
        assert_eq!(budget.left(), both - 1);

        let segments = [open(&one), open(&two)];
        let budget = ResidentBudget::new(both);
        let mut copies = 0;
        Segment::keep_resident_in_all(&segments, Section::Lookup, &budget, || {
            copies += 1;
            true
        });
        assert_eq!(copies, 2);
        assert_eq!(budget.left(), 0);
        assert!(segments.iter().all(|segment| segment.resident_bytes() > 0));
        // Stopped before the first copy: nothing copied, nothing tried.
        let segments = [open(&one)];
        Segment::keep_resident_in_all(&segments, Section::Postings, &budget, || false);
        assert!(segments[0].resident_untried(Section::Postings));
    }

    #[test]
    fn a_segment_held_on_the_heap_copies_nothing() {
        let (_dir, path, _) = sample(&names(10), 4);
        let segment = Segment::from_bytes(std::fs::read(&path).unwrap(), ROOT).unwrap();
        let budget = ResidentBudget::new(1 << 20);
        for section in RESIDENT_SECTIONS {
            assert!(!segment.resident_untried(section));
            assert!(!segment.keep_resident(section, &budget));
        }
        assert_eq!(budget.left(), 1 << 20);
    }

    #[test]
    fn every_name_is_found_under_its_id_and_no_other_name_is() {
        let names = names(500);
        let (_dir, path, _) = sample(&names, 3);
        let segment = Segment::open(&File::open(&path).unwrap(), ROOT).unwrap();
        for (id, name) in names.iter().enumerate() {
            assert_eq!(segment.find_name(name), Some(id as u32), "{name}");
        }
        for name in [
            "",
            "dir0",
            "dir0/file0.r",
            "dir0/file0.rs/x",
            "dir9/file1.rs",
        ] {
            assert_eq!(segment.find_name(name), None, "{name}");
        }
    }

    /// The resident KiB of the mapping that holds `segment`'s bytes.
    #[cfg(target_os = "linux")]
    fn resident_kib(segment: &Segment) -> u64 {
        let at = segment.raw().as_ptr() as usize;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((start, end)) = range.split_once('-')
                && let (Ok(start), Ok(end)) = (
                    usize::from_str_radix(start, 16),
                    usize::from_str_radix(end, 16),
                )
            {
                inside = (start..end).contains(&at);
            } else if inside && let Some(rss) = line.strip_prefix("Rss:") {
                return rss.trim().trim_end_matches(" kB").parse().unwrap();
            }
        }
        panic!("no mapping holds the segment");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn names_a_segment_does_not_hold_are_looked_up_without_touching_its_map() {
        // 20,000 records and names: about 1.5 MiB a bisection would touch.
        let names = names(20_000);
        let (_dir, path, _) = sample(&names, 3);
        let segment = Segment::open(&File::open(&path).unwrap(), ROOT).unwrap();
        // A name whose hash clashes with one held (about one in 200,000 a
        // name here) reads that record and its name, which maps a whole
        // folio of the page cache (up to 2 MiB): such names are left out.
        let held: std::collections::HashSet<u64> = segment
            .names
            .sorted
            .iter()
            .map(|entry| entry >> 32)
            .collect();
        let elsewhere: Vec<String> = (0..20_000)
            .map(|i| format!("elsewhere/file{i}.rs"))
            .filter(|name| !held.contains(&segment.names.hash(name)))
            .collect();
        assert!(elsewhere.len() > 19_900, "{}", elsewhere.len());
        let before = resident_kib(&segment);
        for name in &elsewhere {
            assert_eq!(segment.find_name(name), None);
        }
        let after = resident_kib(&segment);
        assert_eq!(after, before, "KiB resident before and after");
        assert_eq!(segment.find_name(&names[12_345]), Some(12_345));
    }

    #[test]
    fn a_varint_list_is_read_only_as_far_as_the_last_id_asked() {
        let encode = |ids: &[u32]| {
            let mut out = Vec::new();
            let mut previous = None;
            for &id in ids {
                super::super::format::write_varint(&mut out, previous.map_or(id, |p| id - p));
                previous = Some(id);
            }
            out
        };
        let listed = [3, 7, 8, 20, 41];
        let list = encode(&listed);
        for ids in [
            vec![],
            vec![0, 1, 2],
            vec![3],
            vec![2, 3, 4, 7, 9, 20, 41, 42],
            vec![41],
            vec![50, 60],
        ] {
            assert_retains_listed(
                ids.clone(),
                &listed,
                |ids| retain_listed(ListIds::new(&list, 100), ids),
                &format!("{ids:?}"),
            );
        }
        // A zero delta after 7: never reached for ids up to 7; met before
        // the last id asked, every id is kept.
        let mut damaged = encode(&[3, 7]);
        damaged.push(0);
        let mut ids = vec![3, 5];
        retain_listed(ListIds::new(&damaged, 100), &mut ids);
        assert_eq!(ids, [3]);
        let mut ids = vec![3, 9];
        retain_listed(ListIds::new(&damaged, 100), &mut ids);
        assert_eq!(ids, [3, 9]);
        assert!(
            ListIds::new(&damaged, 100)
                .collect::<Result<Vec<_>, _>>()
                .is_err()
        );
        // An id past the segment's files is damage too.
        let mut ids = vec![1, 2];
        retain_listed(ListIds::new(&encode(&[1, 200]), 100), &mut ids);
        assert_eq!(ids, [1, 2]);
    }

    #[test]
    fn dense_lists_become_bitmaps_and_read_back() {
        let names = names(300);
        let (_dir, path, _) = sample(&names, 3);
        let bytes = std::fs::read(&path).unwrap();
        let segment = Segment::from_bytes(bytes, ROOT).unwrap();
        let (_, encoding, _, _) = segment.entry(0);
        assert_eq!(encoding, BITMAP);
        assert_eq!(segment.postings(0).unwrap().len(), 100);
        // Trigram 7 (t = 1): files 2, 5, 8, …; trigram 0: files 0, 3, 6, ….
        for trigram in [0, 7, 14, 1] {
            let holding = segment.postings(trigram).unwrap();
            let ids: Vec<u32> = (0..300).filter(|id| id % 2 == 0).collect();
            assert_retains_listed(
                ids,
                &holding,
                |ids| segment.retain_holding(trigram, ids),
                &format!("trigram {trigram}"),
            );
        }
    }

    #[test]
    fn the_writer_refuses_what_a_reader_would_reject() {
        let dir = tempfile::tempdir().unwrap();
        let stamp = stamp_of(dir.path());
        let write = |names: &[&str], lists: &[(u32, &[u32])]| {
            let lists: Vec<(u32, Vec<u32>)> =
                lists.iter().map(|(t, ids)| (*t, ids.to_vec())).collect();
            write_segment(
                dir.path(),
                "seg",
                ROOT,
                &unfiltered_records(names, stamp),
                lists,
            )
        };
        assert!(write(&["../x"], &[]).is_err());
        assert!(write(&["b", "a"], &[]).is_err());
        assert!(write(&["a", "b"], &[(5, &[1, 0])]).is_err());
        assert!(write(&["a", "b"], &[(5, &[2])]).is_err());
        assert!(write(&["a", "b"], &[(5, &[0]), (4, &[1])]).is_err());
        assert!(write(&["a", "b"], &[(1 << 24, &[0])]).is_err());
        // Nothing half-written is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        write(&["a", "b"], &[(4, &[0, 1])]).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Every read of a segment that opened: no panic, ids in range.
    fn read_everything(segment: &Segment) {
        for id in 0..segment.file_count() + 1 {
            if let Some(at) = segment.file(id).and_then(|file| file.filter) {
                let words = segment.filter(at).unwrap();
                assert!((words.len() / 8).is_power_of_two());
            }
        }
        let well_formed = |ids: &[u32]| {
            assert!(ids.iter().all(|&id| id < segment.file_count()));
            assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
        };
        for index in 0..segment.trigram_count() as usize {
            let (trigram, ..) = segment.entry(index);
            if let Ok(ids) = segment.postings(trigram) {
                well_formed(&ids);
            }
        }
        for (_, ids) in segment.lists() {
            if let Ok(ids) = ids {
                well_formed(&ids);
            }
        }
    }

    /// The checksums catch random damage; to reach the checks behind them,
    /// the hostile variant re-seals the damaged bytes with valid checksums.
    fn reseal(bytes: &mut [u8]) {
        let Ok(mut header) = Header::decode(bytes) else {
            return;
        };
        for section in SECTIONS {
            header.spans[section as usize].crc =
                crc32fast::hash(section_of(bytes, &header, section));
        }
        bytes[..super::super::format::HEADER_BYTES].copy_from_slice(&header.encode());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn damaged_segments_are_rejected_or_read_safely(
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
            reseal_after in any::<bool>(),
        ) {
            let names = names(30);
            // Two blocks of the lookup table.
            let (_dir, path, _) = sample(&names, 100);
            let mut bytes = std::fs::read(&path).unwrap();
            let original = bytes.clone();
            for (at, value) in &flips {
                let at = at.index(bytes.len());
                bytes[at] ^= value | 1;
            }
            if truncate {
                bytes.truncate(cut.index(bytes.len()));
            }
            if reseal_after {
                reseal(&mut bytes);
            }
            // Mapped, the checksums are read from the file: the same verdict.
            std::fs::write(&path, &bytes).unwrap();
            let mapped = Segment::open(&File::open(&path).unwrap(), ROOT);
            let held = Segment::from_bytes(bytes.clone(), ROOT);
            prop_assert_eq!(mapped.is_ok(), held.is_ok());
            // Read from the file or from the heap: the same answers.
            if let (Ok(mapped), Ok(held)) = (&mapped, &held) {
                for trigram in 0..100 * 7 + 1 {
                    prop_assert_eq!(mapped.postings(trigram).ok(), held.postings(trigram).ok());
                }
                for id in 0..held.file_count() {
                    let filter = |segment: &Segment| {
                        let at = segment.file(id)?.filter?;
                        segment.filter(at).ok().map(Cow::into_owned)
                    };
                    prop_assert_eq!(filter(mapped), filter(held));
                }
            }
            for segment in [mapped, held].into_iter().flatten() {
                // Without resealing, damage never gets past the checksums.
                prop_assert!(reseal_after || bytes == original);
                read_everything(&segment);
            }
        }

        #[test]
        fn random_bytes_are_rejected(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let mut with_magic = super::super::format::MAGIC.to_vec();
            with_magic.extend_from_slice(&bytes);
            for candidate in [bytes, with_magic] {
                prop_assert!(Segment::from_bytes(candidate, ROOT).is_err());
            }
        }
    }
}
