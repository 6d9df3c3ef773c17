//! Reads a file for the index: through the gate's opener, under the
//! searcher's own rules (size cap, binary sniff, byte-order marks), into
//! the grams the index keeps.

use std::path::Path;
use std::time::SystemTime;

use super::ngram::{FileGrams, GramFilter, TrigramScratch};
use super::segment::ContentHash;
use super::tree::Content;
use crate::corpus::searchable::{
    MAX_SEARCHED_BYTES, SNIFF_BYTES, is_transcoded, looks_binary, read_searchable,
};
use crate::security::PathGate;
use crate::walk::Stamp;

/// Reads files for the index, reusing its buffers.
#[derive(Default)]
pub(super) struct Indexer {
    scratch: Option<Box<TrigramScratch>>,
    buffer: Vec<u8>,
    pub bytes_read: u64,
    /// No long-gram filters: they were dropped to stay within the memory
    /// limit.
    pub without_filters: bool,
}

/// What reading a file found: its grams, for a segment; a text a layer
/// holds already (the place of its hash among those it was asked to
/// compare with); or what the file list is to hold for it instead.
pub(super) enum Read {
    Grams(FileGrams),
    Same(usize),
    Content(Content),
}

impl Indexer {
    /// Opens and reads the file at `path` (never following a symlink, never
    /// blocking on a FIFO) and returns its stamp, whether that stamp can be
    /// trusted, and what the index is to know of its contents: its grams
    /// (distinct trigrams, in no order) when the file is indexable.
    pub(super) fn read(&mut self, gate: &PathGate, path: &Path) -> (Option<Stamp>, bool, Read) {
        self.read_after(gate, path, None, &[])
    }

    /// [`Indexer::read`] of a file whose stamp `earlier` was
    /// first seen at the time it gives: the same stamp seen again a tick's
    /// doubt later is trusted, and the contents read now with it. A text
    /// that hashes to one of `same_as` is [`Read::Same`], its trigrams not
    /// taken.
    pub(super) fn read_after(
        &mut self,
        gate: &PathGate,
        path: &Path,
        earlier: Option<(Stamp, SystemTime)>,
        same_as: &[ContentHash],
    ) -> (Option<Stamp>, bool, Read) {
        let seen_at = SystemTime::now();
        let trusted = |stamp: &Stamp| {
            let first_seen = earlier
                .filter(|(known, _)| known == stamp)
                .map_or(seen_at, |(_, first_seen)| first_seen);
            stamp.is_trusted(first_seen, seen_at)
        };
        // Through the gate's root handle, as the searcher opens files.
        let Ok((mut file, metadata)) = gate.open_file_with_metadata(path) else {
            // Unreadable (or gone): its contents are the searcher's to
            // find out, its stamp and size what `stat` gives, as the
            // walker reports them.
            let stamp = Stamp::lstat(path)
                .ok()
                .filter(|(metadata, _)| metadata.is_file())
                .map(|(_, stamp)| stamp);
            let settled = stamp.as_ref().is_some_and(trusted);
            return (stamp, settled, Read::Content(Content::Always));
        };
        let stamp = Stamp::of_open(&file, &metadata);
        let settled = trusted(&stamp);
        let answer = |content| (Some(stamp), settled, Read::Content(content));
        if !metadata.is_file() || !settled {
            return answer(Content::Always);
        }
        if metadata.len() > MAX_SEARCHED_BYTES {
            return answer(Content::Skipped);
        }
        let Some(length) = read_searchable(&mut file, metadata.len(), &mut self.buffer) else {
            return answer(Content::Always);
        };
        self.bytes_read += length as u64;
        let content = &mut self.buffer[..length];
        // The searcher's own test on the same bytes.
        if looks_binary(&content[..content.len().min(SNIFF_BYTES)]) {
            return answer(Content::Skipped);
        }
        // The searcher sees other bytes than these: they are left to it. A
        // file marked UTF-8 and UTF-8 throughout is its bytes less the mark,
        // which its trigrams cover.
        if is_transcoded(content) {
            return answer(Content::Always);
        }
        let hash = ContentHash::of(content);
        if let Some(at) = same_as.iter().position(|known| *known == hash) {
            return (Some(stamp), settled, Read::Same(at));
        }
        let mut trigrams = Vec::new();
        let scratch = self.scratch.get_or_insert_with(Box::default);
        scratch.distinct(content, &mut trigrams);
        // Last, as it folds the contents in place.
        let filter = if self.without_filters {
            None
        } else {
            GramFilter::of(content)
        };
        let grams = FileGrams {
            trigrams,
            hash,
            filter,
        };
        (Some(stamp), settled, Read::Grams(grams))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::searchable::SNIFF_BYTES;
    use crate::security::temp_root;

    /// What the indexer makes of each file, once its stamp can be trusted.
    fn contents(files: &[(&str, Vec<u8>)]) -> Vec<(String, Read)> {
        let (_dir, root) = temp_root(files);
        // Stamps younger than the file system's clock tick are not trusted.
        std::thread::sleep(std::time::Duration::from_millis(250));
        let gate = PathGate::new(root.clone(), &[]).unwrap();
        let mut indexer = Indexer::default();
        files
            .iter()
            .map(|(name, _)| {
                let (stamp, settled, content) = indexer.read(&gate, &root.join(name));
                assert!(stamp.is_some() && settled, "{name}");
                (name.to_string(), content)
            })
            .collect()
    }

    #[test]
    fn files_the_searcher_skips_are_skipped_and_those_it_changes_always_read() {
        let mut over_cap = vec![b'x'; MAX_SEARCHED_BYTES as usize + 1];
        over_cap[0] = b'a';
        let mut not_utf8_past_the_sniff = b"\xEF\xBB\xBF".to_vec();
        not_utf8_past_the_sniff.extend(b"x".repeat(SNIFF_BYTES + 10));
        not_utf8_past_the_sniff.extend(b"\xFF tail\n");
        let found = contents(&[
            ("plain.txt", b"alpha beta\n".to_vec()),
            ("marked.txt", "\u{FEFF}alpha beta\n".as_bytes().to_vec()),
            ("binary.dat", b"alpha\0beta".to_vec()),
            ("huge.txt", over_cap),
            ("utf16.txt", b"\xFF\xFEa\0l\0".to_vec()),
            ("odd.txt", not_utf8_past_the_sniff),
        ]);
        let kinds: Vec<(&str, &str)> = found
            .iter()
            .map(|(name, content)| {
                let kind = match content {
                    Read::Grams(grams) => {
                        assert!(!grams.trigrams.is_empty(), "{name}");
                        "grams"
                    }
                    Read::Same(_) => "same",
                    Read::Content(Content::Skipped) => "skipped",
                    Read::Content(Content::Always) => "always",
                    Read::Content(_) => "other",
                };
                (name.as_str(), kind)
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("plain.txt", "grams"),
                ("marked.txt", "grams"),
                ("binary.dat", "skipped"),
                ("huge.txt", "skipped"),
                // Binary by the sniff (NUL bytes), as the searcher sees it.
                ("utf16.txt", "skipped"),
                ("odd.txt", "always"),
            ]
        );
    }
}
