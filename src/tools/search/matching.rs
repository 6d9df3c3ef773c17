//! The matching: each document's content searched with `grep-searcher`
//! and the call's [`LineMatcher`], keeping at most a page of its matches
//! (lines cut to [`MAX_LINE_CHARS`], with context when asked for).

use grep_matcher::Matcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};

use super::{FileHits, MAX_LINE_CHARS, MAX_RESULT_CHARS, OutputMode, SearchMatch};
use crate::cancel::Cancel;
use crate::corpus::{Document, Outcome, Reader};
use crate::matcher::LineMatcher;
use crate::tools::{cut_chars, json_len};

/// The per-call search settings shared by all worker threads.
pub(super) struct Settings {
    pub(super) matcher: LineMatcher,
    pub(super) mode: OutputMode,
    pub(super) context: usize,
    pub(super) offset: usize,
    pub(super) max_results: usize,
    /// Hits after which the search may stop: offset + max_results + 1.
    pub(super) wanted: usize,
    pub(super) cancel: Cancel,
}

impl Outcome for FileHits {
    /// Another name of the same file holds the same lines: its hits are
    /// these under that name, when they still fit the room.
    fn renamed(&self, document: &Document) -> Option<Self> {
        if self.count == 0 {
            return Some(FileHits {
                complete: true,
                ..FileHits::default()
            });
        }
        // Kept matches depend on the name only through the room they take:
        // a complete set that still fits under this name is what a read
        // would keep.
        if !self.complete {
            return None;
        }
        let name = document.name();
        // The name is the only field that differs, once per match.
        if let Some(first) = self.matches.first() {
            let name_chars = |name: &str| json_len(name) * self.matches.len();
            let chars = self.kept_chars + name_chars(name);
            if chars.saturating_sub(name_chars(&first.file)) > MAX_RESULT_CHARS {
                return None;
            }
        }
        Some(FileHits {
            file: name.to_string(),
            source: Some(document.clone()),
            matches: self
                .matches
                .iter()
                .map(|found| SearchMatch {
                    file: name.to_string(),
                    ..found.clone()
                })
                .collect(),
            count: self.count,
            complete: true,
            kept_chars: self.kept_chars,
            rescan_from: None,
        })
    }

    fn weight(&self) -> usize {
        self.kept_chars
    }
}

/// What one searching thread keeps from file to file. The matcher is its
/// own copy: a copy's scratch space is its own, so threads never wait for
/// each other's.
pub(super) struct Scratch {
    searcher: Searcher,
    matcher: LineMatcher,
}

impl Reader for Settings {
    type Scratch = Scratch;
    type Outcome = FileHits;

    fn scratch(&self) -> Scratch {
        Scratch {
            // Only slices are searched and nothing is transcoded (no byte
            // order mark sniffing, no encoding), so the reader's line buffer
            // is never used: a one-byte heap limit keeps it from being 64 KiB,
            // zeroed per call (0 would refuse every search).
            searcher: SearcherBuilder::new()
                .heap_limit(Some(1))
                .line_number(true)
                .binary_detection(BinaryDetection::none())
                .bom_sniffing(false)
                .build(),
            matcher: self.matcher.clone(),
        }
    }

    fn evaluate(&self, scratch: &mut Scratch, document: &Document, content: &[u8]) -> FileHits {
        self.search_content(scratch, document, content, 0)
    }
}

impl Settings {
    /// How many hits a file adds toward `wanted`.
    pub(super) fn units(&self, hits: &FileHits) -> usize {
        match self.mode {
            OutputMode::Content => usize::try_from(hits.count).unwrap_or(usize::MAX),
            OutputMode::FilesWithMatches | OutputMode::Count => usize::from(hits.count > 0),
        }
    }

    /// Searches one document's content, keeping the text of matches from
    /// local match `keep_from` on.
    pub(super) fn search_content(
        &self,
        scratch: &mut Scratch,
        document: &Document,
        haystack: &[u8],
        keep_from: usize,
    ) -> FileHits {
        let Scratch { searcher, matcher } = scratch;
        // Matches and their context lines come from this one text.
        let text = decoded_text(haystack);
        let haystack = &*text;
        let mut sink = CollectSink {
            settings: self,
            matcher,
            file: document.name(),
            haystack,
            keep_from,
            room: MAX_RESULT_CHARS,
            hits: FileHits {
                complete: true,
                ..FileHits::default()
            },
        };
        // A failed search of one file leaves the others unaffected.
        let _ = searcher.search_slice(&*matcher, haystack, &mut sink);
        // What the kept matches took of the room.
        let kept_chars = MAX_RESULT_CHARS - sink.room;
        let mut hits = sink.hits;
        hits.kept_chars = kept_chars;
        if hits.count > 0 {
            hits.file = document.name().to_string();
            hits.source = Some(document.clone());
        }
        hits
    }
}

/// The text a file is searched as: a UTF-8 byte-order mark is dropped and,
/// after one, bytes that are not UTF-8 become U+FFFD, as ripgrep reads such
/// a file. The searcher's own sniffing is off, so the offsets it reports
/// are offsets into this text, which the context lines are cut from.
fn decoded_text(raw: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    let Some(text) = raw.strip_prefix(&[0xEF, 0xBB, 0xBF]) else {
        return Cow::Borrowed(raw);
    };
    match String::from_utf8_lossy(text) {
        Cow::Borrowed(valid) => Cow::Borrowed(valid.as_bytes()),
        Cow::Owned(replaced) => Cow::Owned(replaced.into_bytes()),
    }
}

pub(super) struct CollectSink<'a> {
    settings: &'a Settings,
    matcher: &'a LineMatcher,
    file: &'a str,
    haystack: &'a [u8],
    /// Local match from which text is kept.
    keep_from: usize,
    /// JSON characters the kept matches may still take: no answer holds more.
    room: usize,
    hits: FileHits,
}

impl CollectSink<'_> {
    fn keep(&mut self, found: &SinkMatch<'_>) {
        let kept = self.hits.matches.len();
        if !self.hits.complete || kept > self.settings.max_results {
            self.hits.complete = false;
            return;
        }
        let line_bytes = trim_line_end(found.bytes());
        let match_start = self
            .matcher
            .find(line_bytes)
            .ok()
            .flatten()
            .map_or(0, |m| m.start());
        let (before, after) = if self.settings.context > 0 {
            let range = found.bytes_range_in_buffer();
            (
                Some(lines_before(
                    self.haystack,
                    range.start,
                    self.settings.context,
                )),
                Some(lines_after(self.haystack, range.end, self.settings.context)),
            )
        } else {
            (None, None)
        };
        let found = SearchMatch {
            file: self.file.to_string(),
            line: found.line_number().unwrap_or(0),
            text: line_window(line_bytes, match_start),
            before,
            after,
        };
        let cost = json_len(&found) + 1;
        if cost > self.room {
            self.hits.complete = false;
            return;
        }
        self.room -= cost;
        self.hits.matches.push(found);
    }
}

impl Sink for CollectSink<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        found: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        if self.settings.cancel.is_cancelled() {
            return Ok(false);
        }
        let local = usize::try_from(self.hits.count).unwrap_or(usize::MAX);
        self.hits.count += 1;
        match self.settings.mode {
            OutputMode::Count => Ok(true),
            OutputMode::FilesWithMatches => Ok(false),
            OutputMode::Content => {
                if local >= self.keep_from {
                    self.keep(found);
                }
                Ok(local + 1 < self.settings.wanted)
            }
        }
    }
}

pub(super) fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A line as text, cut to [`MAX_LINE_CHARS`]; a long line is cut around the
/// match so the match itself is always shown.
pub(super) fn line_window(line: &[u8], match_start: usize) -> String {
    let text = String::from_utf8_lossy(line);
    if text.chars().count() <= MAX_LINE_CHARS {
        return text.into_owned();
    }
    let match_char = String::from_utf8_lossy(&line[..match_start.min(line.len())])
        .chars()
        .count();
    let first = match_char.saturating_sub(MAX_LINE_CHARS / 4);
    text.chars().skip(first).take(MAX_LINE_CHARS).collect()
}

pub(super) fn context_line(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(trim_line_end(line));
    cut_chars(&text, MAX_LINE_CHARS).0.to_string()
}

/// Up to `n` lines that end right before byte `start`.
pub(super) fn lines_before(haystack: &[u8], start: usize, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut end = start;
    while lines.len() < n && end > 0 {
        let line_end = end - 1; // the '\n' that ends the previous line
        let line_start = memchr::memrchr(b'\n', &haystack[..line_end]).map_or(0, |i| i + 1);
        lines.push(context_line(&haystack[line_start..line_end]));
        end = line_start;
    }
    lines.reverse();
    lines
}

/// Up to `n` lines that start at byte `end`.
pub(super) fn lines_after(haystack: &[u8], end: usize, n: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut start = end;
    while lines.len() < n && start < haystack.len() {
        let line_end =
            memchr::memchr(b'\n', &haystack[start..]).map_or(haystack.len(), |i| start + i);
        lines.push(context_line(&haystack[start..line_end]));
        start = line_end + 1;
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_is_dropped_and_what_follows_decoded() {
        assert_eq!(&*decoded_text(b"plain\xFF"), b"plain\xFF");
        assert_eq!(&*decoded_text(b"\xEF\xBB\xBFtext\n"), b"text\n");
        assert_eq!(
            &*decoded_text(b"\xEF\xBB\xBFa\xFFb"),
            "a\u{FFFD}b".as_bytes()
        );
    }

    /// Hits taken under another name must fit the room under that name, as
    /// a read's would.
    #[test]
    fn renamed_hits_are_held_to_the_room_under_the_new_name() {
        let (_dir, gate) = crate::tools::temp_project(&[("a/x.txt", "needle\n")]);
        let found = SearchMatch {
            file: "a/x.txt".into(),
            line: 1,
            text: "needle".into(),
            before: None,
            after: None,
        };
        let matches = vec![found; 10];
        let chars: usize = matches.iter().map(|m| json_len(m) + 1).sum();
        let hits = |kept_chars| FileHits {
            count: 10,
            complete: true,
            matches: matches.clone(),
            kept_chars,
            ..FileHits::default()
        };
        let document = |name: &str| crate::corpus::Document::named(&gate, name);
        // Kept matches that took the whole room: they fit under a name of
        // the same length, not under a longer one.
        let full = hits(MAX_RESULT_CHARS);
        let same = full.renamed(&document("b/x.txt")).unwrap();
        assert_eq!(same.matches.len(), 10);
        assert!(same.matches.iter().all(|m| m.file == "b/x.txt"));
        assert!(full.renamed(&document("bb/x.txt")).is_none());
        // With room to spare, a longer name takes them too.
        assert_eq!(
            hits(chars).renamed(&document("bb/x.txt")).unwrap().count,
            10
        );
    }
}
