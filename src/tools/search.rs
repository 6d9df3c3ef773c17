//! `search_project_files`: content search on ripgrep's libraries.
//!
//! Files come from the walker in sorted order; several threads search them
//! (a literal query runs on memchr/SIMD scanning inside `grep-regex`), and
//! the results are merged back in file order. Once the sorted prefix of
//! finished files holds `offset + max_results + 1` hits, the walk and the
//! search stop: the answer is the same as a full sequential scan would give,
//! only sooner.
//!
//! Memory follows what the answer can hold, never the tree or the offset:
//! results before `offset` are counted, not kept; a file keeps the text of
//! at most one page of its matches; the walk runs at most a bounded number
//! of files ahead of the finished prefix. The one file a page starts in
//! the middle of is searched again for that page when its first pass kept
//! too little. The cancel flag is checked per entry, per file and per match.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};
use std::time::Duration;

use grep_matcher::Matcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use regex_syntax::hir::Hir;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{JsonBudget, MAX_QUERY_CHARS, Status, ToolError, cut_chars, json_len};
use crate::cancel::Cancel;
use crate::glob::{PathGlob, below};
use crate::index::TreeModel;
use crate::matcher::{self, LineMatcher};
use crate::security::{PathGate, SNIFF_BYTES, looks_binary, read_searchable};
use crate::walk::{self, Entry, EntryKind, Stamp, WalkOptions};

pub const DEFAULT_MAX_RESULTS: usize = 50;
pub const MAX_RESULTS_CAP: usize = 200;
pub const MAX_CONTEXT_LINES: usize = 10;
/// Matched and context lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 300;
/// Largest answer as JSON text (escapes counted in full): the tool's
/// declared size hint. 200 matches with 10 lines of context each would
/// otherwise exceed what a client can take in one result; a page cut by it
/// says `truncated`.
pub const MAX_RESULT_CHARS: usize = 400_000;
/// Largest `offset`: paging deeper means scanning that many results first.
pub const MAX_OFFSET: usize = 10_000;
/// Files the walk hands to a search thread at once: one at a time put the
/// threads to sleep and woke them (a futex call each) for about every file.
/// The stop flag is still checked before each file.
const BATCH_FILES: usize = 32;
/// Files with several names whose hits one call remembers (see
/// [`LinkedHits`]), and the JSON characters of their kept matches.
const MAX_LINKED_FILES: usize = 65_536;
const MAX_LINKED_CHARS: usize = 4 * MAX_RESULT_CHARS;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum OutputMode {
    /// Matching lines as `matches`.
    #[default]
    Content,
    /// Only the paths of matching files, as `files`.
    FilesWithMatches,
    /// Matching-line counts per file, as `counts`.
    Count,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SearchInput {
    /// Text to find. An exact substring unless `regex` is true.
    #[schemars(length(max = MAX_QUERY_CHARS))]
    pub query: String,
    /// Folder (or single file) to search, relative to the project root; `.` (the default) is the root.
    #[serde(default = "default_path")]
    pub path: String,
    /// Maximum number of results (matches, files or counts) to return.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = MAX_RESULTS_CAP))]
    pub max_results: usize,
    /// Treat `query` as a Rust regex (e.g. `fn \w+_discount`). Default false: exact substring.
    #[serde(default)]
    pub regex: bool,
    /// Match case exactly (default true). Set false for case-insensitive search.
    #[serde(default = "default_true")]
    pub case_sensitive: bool,
    /// Only search files matching this glob, e.g. `*.py` (file name at any depth) or `src/**/*.rs` (path relative to `path`).
    #[serde(default)]
    #[schemars(length(max = crate::glob::MAX_GLOB_CHARS))]
    pub glob: Option<String>,
    /// Lines of context before and after each match (adds `before`/`after` arrays).
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_CONTEXT_LINES))]
    pub context_lines: usize,
    /// `content` (default): matching lines; `files_with_matches`: file paths only; `count`: matches per file.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Skip this many results first, for paging (use with max_results).
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_OFFSET))]
    pub offset: usize,
    /// Also search files that .gitignore/.ignore or the built-in skip list (node_modules, target, .venv …) exclude. Secrets stay excluded.
    #[serde(default)]
    pub include_ignored: bool,
}

fn default_path() -> String {
    ".".to_string()
}
fn default_max_results() -> usize {
    DEFAULT_MAX_RESULTS
}
fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct SearchMatch {
    /// Path relative to the project root.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// The matching line (a long line is cut around the match).
    pub text: String,
    /// Lines before the match, oldest first (only with context_lines > 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Vec<String>>,
    /// Lines after the match (only with context_lines > 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct FileCount {
    pub file: String,
    /// Number of matching lines in the file.
    pub count: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchOutput {
    pub status: Status,
    pub query: String,
    /// The folder or file searched, relative to the project root.
    pub path: String,
    /// Matching lines, sorted by file then line (output_mode `content`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<SearchMatch>>,
    /// Paths of matching files, sorted (output_mode `files_with_matches`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// Matching-line counts per file, sorted by file (output_mode `count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<Vec<FileCount>>,
    /// Number of results returned.
    pub count: usize,
    /// True when more results existed than were returned; page on with `offset`.
    pub truncated: bool,
    /// Why nothing was found, when the path holds only ignored files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SearchInput {
    pub fn log_params(&self) -> String {
        let (query, _) = cut_chars(&self.query, 100);
        format!(
            "query={query:?} path={:?} regex={} case_sensitive={} glob={:?} output_mode={:?} max_results={} offset={} context_lines={} include_ignored={}",
            self.path,
            self.regex,
            self.case_sensitive,
            self.glob,
            self.output_mode,
            self.max_results,
            self.offset,
            self.context_lines,
            self.include_ignored
        )
    }
}

impl SearchOutput {
    pub fn log_summary(&self) -> String {
        format!("count={} truncated={}", self.count, self.truncated)
    }
}

/// What one file contributed.
#[derive(Debug, Default, Clone)]
struct FileHits {
    /// Path relative to the root; set only when the file has hits.
    file: String,
    /// The file, kept while a page may need to search it again.
    source: Option<Entry>,
    /// Kept matches: from local match `first` on, at most a page of them.
    matches: Vec<SearchMatch>,
    /// Matching lines seen (complete in `count` mode, capped otherwise).
    count: u64,
    /// Every match from `first` up to `count` is in `matches`.
    complete: bool,
    /// Set by the prefix: the page starts at this local match, past what
    /// the first pass kept, so the file is searched again from there.
    rescan_from: Option<usize>,
}

/// Searches under `input.path`; `model` narrows the files to read when it
/// can, and the answer is the same either way.
pub fn search(
    gate: &PathGate,
    model: &TreeModel,
    input: &SearchInput,
    cancel: &Cancel,
) -> Result<SearchOutput, ToolError> {
    ToolError::check_size("query", &input.query, MAX_QUERY_CHARS)?;
    if input.offset > MAX_OFFSET {
        return Err(ToolError::invalid(format!(
            "offset {} is over the maximum of {MAX_OFFSET}; narrow the search with path, glob or a more specific query instead of paging this deep",
            input.offset
        )));
    }
    let (query, matcher) = build_matcher(input)?;
    let glob = input.glob.as_deref().map(PathGlob::new).transpose()?;
    let max_results = input.max_results.clamp(1, MAX_RESULTS_CAP);
    let context = input.context_lines.min(MAX_CONTEXT_LINES);
    let start = gate.resolve(&input.path)?;
    let plan = Plan {
        matcher,
        mode: input.output_mode,
        context,
        offset: input.offset,
        max_results,
        wanted: input.offset + max_results + 1,
        cancel: cancel.clone(),
        linked: LinkedHits::default(),
    };

    let (mut prefix, files_seen) = if start.real.is_file() {
        let entry = Entry {
            relative: start.relative.clone(),
            path: start.real.clone(),
            kind: EntryKind::File,
            depth: 0,
            size: None,
            ino: None,
        };
        let mut prefix = Prefix::default();
        prefix.finish(
            0,
            plan.search_file(gate, &mut plan.scratch(), &entry, 0),
            &plan,
        );
        (prefix, Some(1))
    } else {
        // Sizes are checked when each file is opened.
        let accept = |entry: &Entry| {
            glob.as_ref()
                .is_none_or(|glob| glob.is_match(below(&start.relative, &entry.relative)))
        };
        let options = WalkOptions {
            include_ignored: input.include_ignored,
            cancel: cancel.clone(),
        };
        // The model holds the default view only: ignored files need the walk.
        let candidates = if input.include_ignored {
            None
        } else {
            model.candidates(&start, &query)
        };
        search_tree(gate, &start, &plan, &options, accept, candidates)
            .map_err(|error| ToolError::io(&start.relative, &error))?
    };
    ToolError::check_cancel(cancel)?;
    // At most one file: the one the page starts in the middle of.
    for hits in &mut prefix.done {
        if let (Some(from), Some(entry)) = (hits.rescan_from, hits.source.take()) {
            let again = plan.search_file(gate, &mut plan.scratch(), &entry, from);
            hits.matches = again.matches;
        }
    }
    let mut output = assemble(input, start.relative.clone(), &plan, prefix);
    let walk_with = |include_ignored| WalkOptions {
        include_ignored,
        cancel: cancel.clone(),
    };
    let nothing_to_search = output.count == 0
        && input.offset == 0
        && !input.include_ignored
        && start.relative != "."
        && match files_seen {
            Some(seen) => seen == 0,
            // The model's candidates say nothing of the files it ruled out.
            None => !walk::holds_files(gate, &start, &walk_with(false)),
        };
    if nothing_to_search && walk::holds_files(gate, &start, &walk_with(true)) {
        output.note = Some(format!(
            "nothing searched: every file under '{}' is excluded by .gitignore/.ignore or the built-in skip list; search again with include_ignored: true to include them",
            output.path
        ));
    }
    ToolError::check_cancel(cancel)?;
    Ok(output)
}

/// The query parsed (for the index's plan) and compiled (for the searcher).
fn build_matcher(input: &SearchInput) -> Result<(Hir, LineMatcher), ToolError> {
    if input.query.is_empty() {
        return Err(ToolError::invalid(
            "query is empty; give the text (or, with regex=true, the pattern) to search for",
        ));
    }
    if input.query.contains('\n') {
        return Err(ToolError::invalid(
            "query spans several lines; search matches within one line, so give a single-line query",
        ));
    }
    matcher::parse(&input.query, !input.regex, !input.case_sensitive)
        .and_then(|hir| LineMatcher::new(&hir).map(|matcher| (hir, matcher)))
        .map_err(|error| {
        let detail = error.replace('\n', " ");
        let detail = detail.split_whitespace().collect::<Vec<_>>().join(" ");
        let detail = cut_chars(&detail, 300).0;
        ToolError::invalid(format!(
            "invalid regex {:?}: {detail}; use Rust regex syntax (compiled size at most {} MiB, so avoid large repetitions like \\w{{1000}}), or regex=false for a plain substring",
            cut_chars(&input.query, 100).0,
            matcher::SIZE_LIMIT / (1024 * 1024)
        ))
    })
}

/// The per-call search settings shared by all worker threads.
struct Plan {
    matcher: LineMatcher,
    mode: OutputMode,
    context: usize,
    offset: usize,
    max_results: usize,
    /// Hits after which the search may stop: offset + max_results + 1.
    wanted: usize,
    cancel: Cancel,
    linked: LinkedHits,
}

/// The hits of files with several names (hard links) searched in this
/// call, by the stamp of the file read: another name of the same file,
/// unchanged, holds the same lines, so it takes them without a read. Held
/// within [`MAX_LINKED_FILES`] and [`MAX_LINKED_CHARS`]; past them, names
/// are read as any file.
#[derive(Default)]
struct LinkedHits(Mutex<LinkedHitsInner>);

#[derive(Default)]
struct LinkedHitsInner {
    /// Each file's hits, and the JSON characters its kept matches take.
    hits: HashMap<Stamp, (FileHits, usize)>,
    chars: usize,
}

impl LinkedHits {
    /// The hits of `entry`, another name of a file searched before.
    fn reuse(&self, stamp: &Stamp, entry: &Entry) -> Option<FileHits> {
        let known = self.0.lock().ok()?;
        let (hits, chars) = known.hits.get(stamp)?;
        if hits.count == 0 {
            return Some(FileHits {
                complete: true,
                ..FileHits::default()
            });
        }
        // Kept matches depend on the name only through the room they take:
        // a complete set that still fits under this name is what a read
        // would keep.
        if !hits.complete {
            return None;
        }
        // The name is the only field that differs, once per match.
        if let Some(first) = hits.matches.first() {
            let name_chars = |name: &str| json_len(name) * hits.matches.len();
            let chars = chars + name_chars(&entry.relative);
            if chars.saturating_sub(name_chars(&first.file)) > MAX_RESULT_CHARS {
                return None;
            }
        }
        Some(FileHits {
            file: entry.relative.clone(),
            source: Some(entry.clone()),
            matches: hits
                .matches
                .iter()
                .map(|found| SearchMatch {
                    file: entry.relative.clone(),
                    ..found.clone()
                })
                .collect(),
            count: hits.count,
            complete: true,
            rescan_from: None,
        })
    }

    /// Keeps `hits` (whose kept matches take `chars` JSON characters) for
    /// the file's other names, while there is room.
    fn remember(&self, stamp: Stamp, hits: &FileHits, chars: usize) {
        let Ok(mut known) = self.0.lock() else {
            return;
        };
        if known.hits.len() < MAX_LINKED_FILES && known.chars + chars <= MAX_LINKED_CHARS {
            known.chars += chars;
            known.hits.insert(stamp, (hits.clone(), chars));
        }
    }
}

/// What one searching thread keeps from file to file. The matcher is its
/// own copy: a copy's scratch space is its own, so threads never wait for
/// each other's.
struct Scratch {
    searcher: Searcher,
    buffer: Vec<u8>,
    matcher: LineMatcher,
}

impl Plan {
    fn scratch(&self) -> Scratch {
        Scratch {
            searcher: SearcherBuilder::new()
                .line_number(true)
                .binary_detection(BinaryDetection::none())
                .bom_sniffing(false)
                .build(),
            buffer: Vec::new(),
            matcher: self.matcher.clone(),
        }
    }

    /// How many hits a file adds toward `wanted`.
    fn units(&self, hits: &FileHits) -> usize {
        match self.mode {
            OutputMode::Content => usize::try_from(hits.count).unwrap_or(usize::MAX),
            OutputMode::FilesWithMatches | OutputMode::Count => usize::from(hits.count > 0),
        }
    }

    /// Searches one file, keeping the text of matches from local match
    /// `keep_from` on; unreadable, binary, oversized or vanished files
    /// yield nothing.
    fn search_file(
        &self,
        gate: &PathGate,
        scratch: &mut Scratch,
        entry: &Entry,
        keep_from: usize,
    ) -> FileHits {
        let Scratch {
            searcher,
            buffer,
            matcher,
        } = scratch;
        let Ok((file, metadata)) = entry.open(gate) else {
            return FileHits::default();
        };
        // Only a first pass: a page's second pass keeps other matches.
        let linked = Some(Stamp::of(&metadata))
            .filter(|stamp| keep_from == 0 && stamp.linked_identity().is_some());
        if let Some(stamp) = &linked
            && let Some(hits) = self.linked.reuse(stamp, entry)
        {
            return hits;
        }
        let Some(length) = read_capped(file, &metadata, buffer) else {
            return FileHits::default();
        };
        let raw = &buffer[..length];
        if looks_binary(&raw[..length.min(SNIFF_BYTES)]) {
            if let Some(stamp) = linked {
                self.linked.remember(stamp, &FileHits::default(), 0);
            }
            return FileHits::default();
        }
        // Matches and their context lines come from this one text.
        let text = decoded_text(raw);
        let haystack = &*text;
        let mut sink = CollectSink {
            plan: self,
            matcher,
            file: &entry.relative,
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
        let chars = MAX_RESULT_CHARS - sink.room;
        let mut hits = sink.hits;
        if let Some(stamp) = linked {
            self.linked.remember(stamp, &hits, chars);
        }
        if hits.count > 0 {
            hits.file = entry.relative.clone();
            hits.source = Some(entry.clone());
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

/// Reads an opened regular file into `buffer` (see
/// [`read_searchable`]); `None` for anything else.
fn read_capped(
    mut file: std::fs::File,
    metadata: &std::fs::Metadata,
    buffer: &mut Vec<u8>,
) -> Option<usize> {
    if !metadata.is_file() {
        return None;
    }
    read_searchable(&mut file, metadata.len(), buffer)
}

struct CollectSink<'a> {
    plan: &'a Plan,
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
        if !self.hits.complete || kept > self.plan.max_results {
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
        let (before, after) = if self.plan.context > 0 {
            let range = found.bytes_range_in_buffer();
            (
                Some(lines_before(self.haystack, range.start, self.plan.context)),
                Some(lines_after(self.haystack, range.end, self.plan.context)),
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
        if self.plan.cancel.is_cancelled() {
            return Ok(false);
        }
        let local = usize::try_from(self.hits.count).unwrap_or(usize::MAX);
        self.hits.count += 1;
        match self.plan.mode {
            OutputMode::Count => Ok(true),
            OutputMode::FilesWithMatches => Ok(false),
            OutputMode::Content => {
                if local >= self.keep_from {
                    self.keep(found);
                }
                Ok(local + 1 < self.plan.wanted)
            }
        }
    }
}

/// Walks in sorted order on this thread while workers search; stops both
/// once the finished sorted prefix holds enough hits, or the call is
/// cancelled. `candidates`, the tree model's files that may match (in the
/// same order), replace the walk. Returns the prefix and how many files the
/// walk offered (`None` when candidates stood in for it).
fn search_tree(
    gate: &PathGate,
    start: &crate::security::ResolvedPath,
    plan: &Plan,
    options: &WalkOptions,
    accept: impl Fn(&Entry) -> bool,
    candidates: Option<Vec<Entry>>,
) -> std::io::Result<(Prefix, Option<usize>)> {
    if let Some(files) = &candidates
        && files.len() <= BATCH_FILES
    {
        return Ok((search_in_order(gate, plan, files, &accept), None));
    }
    let workers = walk::worker_threads();
    // Finished files may wait for a slower earlier one, each holding up to
    // a page of text: the walk stays at most this many files ahead.
    let lookahead = workers * BATCH_FILES * 4;
    let stop = AtomicBool::new(false);
    let files_seen = AtomicUsize::new(0);
    let progress = Mutex::new(Prefix::default());
    let advanced = Condvar::new();
    let (sender, receiver) = mpsc::sync_channel::<Vec<(usize, Entry)>>(workers * 2);
    let receiver = Mutex::new(receiver);
    let halted = || stop.load(Ordering::Relaxed) || plan.cancel.is_cancelled();
    let from_candidates = candidates.is_some();

    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let mut scratch = plan.scratch();
                loop {
                    let next = match receiver.lock() {
                        Ok(receiver) => receiver.recv(),
                        Err(_) => break,
                    };
                    let Ok(batch) = next else { break };
                    for (index, entry) in batch {
                        let hits = if halted() {
                            FileHits::default()
                        } else {
                            plan.search_file(gate, &mut scratch, &entry, 0)
                        };
                        let Ok(mut prefix) = progress.lock() else {
                            return;
                        };
                        if prefix.finish(index, hits, plan) {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    // Once per batch: a wake-up per file would cost a
                    // system call per file.
                    advanced.notify_all();
                }
            });
        }
        let mut index = 0;
        let mut batch = Vec::with_capacity(BATCH_FILES);
        let mut visit = |entry: Entry| {
            if halted() {
                return ControlFlow::Break(());
            }
            if entry.kind != EntryKind::File {
                return ControlFlow::Continue(());
            }
            files_seen.fetch_add(1, Ordering::Relaxed);
            if accept(&entry) {
                batch.push((index, entry));
                index += 1;
                if batch.len() == BATCH_FILES {
                    if !wait_for_room(&progress, &advanced, index, lookahead, &halted) {
                        return ControlFlow::Break(());
                    }
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_FILES));
                    if sender.send(full).is_err() {
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        };
        let walked = match candidates {
            Some(files) => {
                for entry in files {
                    if visit(entry).is_break() {
                        break;
                    }
                }
                Ok(())
            }
            None => walk::walk_files_to_open(gate, start, options, &mut visit),
        };
        if !batch.is_empty() && !halted() {
            // Fails only when every worker has gone, and then nothing waits.
            let _ = sender.send(batch);
        }
        drop(sender);
        walked
    })?;

    let prefix = match progress.into_inner() {
        Ok(prefix) => prefix,
        Err(poisoned) => poisoned.into_inner(),
    };
    Ok((prefix, (!from_candidates).then(|| files_seen.into_inner())))
}

/// Searches a few files on this thread, in order, until the prefix holds
/// enough hits: starting workers would cost more than the files.
fn search_in_order(
    gate: &PathGate,
    plan: &Plan,
    files: &[Entry],
    accept: &impl Fn(&Entry) -> bool,
) -> Prefix {
    let mut scratch = plan.scratch();
    let mut prefix = Prefix::default();
    for (index, entry) in files.iter().filter(|entry| accept(entry)).enumerate() {
        if plan.cancel.is_cancelled() {
            break;
        }
        let hits = plan.search_file(gate, &mut scratch, entry, 0);
        if prefix.finish(index, hits, plan) {
            break;
        }
    }
    prefix
}

/// Blocks the walk while it is more than `lookahead` files ahead of the
/// finished prefix; false when the search stopped meanwhile.
fn wait_for_room(
    progress: &Mutex<Prefix>,
    advanced: &Condvar,
    walked: usize,
    lookahead: usize,
    halted: &impl Fn() -> bool,
) -> bool {
    let Ok(mut prefix) = progress.lock() else {
        return false;
    };
    while walked > prefix.next + lookahead {
        if halted() {
            return false;
        }
        // The timeout re-checks the cancel flag, which nobody notifies.
        prefix = match advanced.wait_timeout(prefix, Duration::from_millis(20)) {
            Ok((prefix, _)) => prefix,
            Err(_) => return false,
        };
    }
    !halted()
}

/// Results in file order: the finished prefix, kept from `offset` on, plus
/// files that finished out of order and wait for their turn.
#[derive(Default)]
struct Prefix {
    /// Files with hits at or after `offset`, in order.
    done: Vec<FileHits>,
    waiting: BTreeMap<usize, FileHits>,
    /// Index of the next file the prefix waits for.
    next: usize,
    /// Hits in the prefix, counted from the first file (offset included).
    units: usize,
}

impl Prefix {
    /// Records a finished file; true once the prefix has enough hits.
    fn finish(&mut self, index: usize, hits: FileHits, plan: &Plan) -> bool {
        self.waiting.insert(index, hits);
        while let Some(mut hits) = self.waiting.remove(&self.next) {
            self.next += 1;
            let units = plan.units(&hits);
            if units == 0 {
                continue;
            }
            let skip = plan.offset.saturating_sub(self.units).min(units);
            self.units = self.units.saturating_add(units);
            if skip == units {
                // Wholly before the page: counted, not kept.
                continue;
            }
            if skip > 0 {
                if hits.complete {
                    hits.matches.drain(..skip.min(hits.matches.len()));
                } else {
                    hits.matches = Vec::new();
                    hits.rescan_from = Some(skip);
                }
            }
            if hits.rescan_from.is_none() {
                hits.source = None;
            }
            self.done.push(hits);
        }
        self.units >= plan.wanted
    }
}

/// The page: at most `max_results` results after `offset`, cut where the
/// answer would outgrow [`MAX_RESULT_CHARS`].
fn assemble(input: &SearchInput, path: String, plan: &Plan, prefix: Prefix) -> SearchOutput {
    let available = prefix.units.saturating_sub(plan.offset);
    let mut output = SearchOutput {
        status: Status::Success,
        query: input.query.clone(),
        path,
        matches: None,
        files: None,
        counts: None,
        count: 0,
        truncated: false,
        note: None,
    };
    match input.output_mode {
        OutputMode::Content => output.matches = Some(Vec::new()),
        OutputMode::FilesWithMatches => output.files = Some(Vec::new()),
        OutputMode::Count => output.counts = Some(Vec::new()),
    }
    let mut budget = JsonBudget::new(MAX_RESULT_CHARS, &output);
    let mut cut = false;
    match input.output_mode {
        OutputMode::Content => {
            let mut matches = Vec::new();
            for found in prefix.done.into_iter().flat_map(|hits| hits.matches) {
                if matches.len() == plan.max_results {
                    break;
                }
                if !budget.take(&found) {
                    cut = true;
                    break;
                }
                matches.push(found);
            }
            output.count = matches.len();
            output.matches = Some(matches);
        }
        OutputMode::FilesWithMatches | OutputMode::Count => {
            let mut page = Vec::new();
            for hits in prefix.done {
                if page.len() == plan.max_results {
                    break;
                }
                let item = FileCount {
                    file: hits.file,
                    count: hits.count,
                };
                let fits = if input.output_mode == OutputMode::Count {
                    budget.take(&item)
                } else {
                    budget.take(&item.file)
                };
                if !fits {
                    cut = true;
                    break;
                }
                page.push(item);
            }
            output.count = page.len();
            if input.output_mode == OutputMode::Count {
                output.counts = Some(page);
            } else {
                output.files = Some(page.into_iter().map(|c| c.file).collect());
            }
        }
    }
    output.truncated = cut || available > output.count;
    output
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A line as text, cut to [`MAX_LINE_CHARS`]; a long line is cut around the
/// match so the match itself is always shown.
fn line_window(line: &[u8], match_start: usize) -> String {
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

fn context_line(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(trim_line_end(line));
    cut_chars(&text, MAX_LINE_CHARS).0.to_string()
}

/// Up to `n` lines that end right before byte `start`.
fn lines_before(haystack: &[u8], start: usize, n: usize) -> Vec<String> {
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
fn lines_after(haystack: &[u8], end: usize, n: usize) -> Vec<String> {
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

    fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, PathGate) {
        crate::tools::temp_project(files)
    }

    /// The scan alone; the index's answers are compared with it elsewhere.
    fn search(gate: &PathGate, input: &SearchInput) -> Result<SearchOutput, ToolError> {
        super::search(gate, &TreeModel::off(), input, &Cancel::never())
    }

    fn input(query: &str) -> SearchInput {
        SearchInput {
            query: query.into(),
            path: ".".into(),
            max_results: 50,
            regex: false,
            case_sensitive: true,
            glob: None,
            context_lines: 0,
            output_mode: OutputMode::Content,
            offset: 0,
            include_ignored: false,
        }
    }

    fn demo() -> (tempfile::TempDir, PathGate) {
        project(&[
            ("b/two.py", "x = apply(1)\ny = 2\napply(3)\n"),
            ("a/one.py", "def apply(a):\n    return a\n"),
            ("a.txt", "apply here\n"),
            ("c/skip.bin", "apply\0binary"),
            (".env", "apply=secret\n"),
            ("node_modules/m.js", "apply()\n"),
        ])
    }

    fn lines(out: &SearchOutput) -> Vec<(String, u64)> {
        out.matches
            .as_ref()
            .unwrap()
            .iter()
            .map(|m| (m.file.clone(), m.line))
            .collect()
    }

    #[test]
    fn literal_search_sorted_by_path_then_line() {
        let (_d, gate) = demo();
        let out = search(&gate, &input("apply")).unwrap();
        assert_eq!(
            lines(&out),
            vec![
                ("a/one.py".into(), 1),
                ("a.txt".into(), 1),
                ("b/two.py".into(), 1),
                ("b/two.py".into(), 3),
            ]
        );
        assert_eq!(out.count, 4);
        assert!(!out.truncated);
        assert_eq!(out.matches.as_ref().unwrap()[0].text, "def apply(a):");
    }

    #[test]
    fn literal_means_literal_and_case_options_work() {
        let (_d, gate) = project(&[("f.txt", "a.b\naxb\nA.B\n")]);
        assert_eq!(search(&gate, &input("a.b")).unwrap().count, 1);
        let mut insensitive = input("a.b");
        insensitive.case_sensitive = false;
        assert_eq!(search(&gate, &insensitive).unwrap().count, 2);
        let mut regex = input("a.b");
        regex.regex = true;
        assert_eq!(search(&gate, &regex).unwrap().count, 2);
        let mut bad = input("(");
        bad.regex = true;
        assert!(
            search(&gate, &bad)
                .unwrap_err()
                .to_string()
                .contains("invalid regex")
        );
    }

    #[test]
    fn paging_and_truncation() {
        let text: String = (1..=30).map(|i| format!("hit {i}\n")).collect();
        let (_d, gate) = project(&[("f.txt", &text)]);
        let mut page = input("hit");
        page.max_results = 10;
        let first = search(&gate, &page).unwrap();
        assert_eq!(first.count, 10);
        assert!(first.truncated);
        page.offset = 25;
        let last = search(&gate, &page).unwrap();
        assert_eq!(lines(&last).first().unwrap().1, 26);
        assert_eq!(last.count, 5);
        assert!(!last.truncated);
    }

    /// Reused hits must fit the room under the new name, as a read's would.
    #[test]
    fn reused_hits_are_held_to_the_room_under_the_new_name() {
        let (_dir, gate) = project(&[("a/x.txt", "needle\n")]);
        let stamp = Stamp::of(&std::fs::metadata(gate.root().join("a/x.txt")).unwrap());
        let found = SearchMatch {
            file: "a/x.txt".into(),
            line: 1,
            text: "needle".into(),
            before: None,
            after: None,
        };
        let matches = vec![found; 10];
        let chars: usize = matches.iter().map(|m| json_len(m) + 1).sum();
        let hits = FileHits {
            count: 10,
            complete: true,
            matches,
            ..FileHits::default()
        };
        let entry = |relative: &str| Entry {
            relative: relative.into(),
            path: gate.root().join(relative),
            kind: EntryKind::File,
            depth: 2,
            size: None,
            ino: None,
        };
        // Kept matches that took the whole room: they fit under a name of
        // the same length, not under a longer one.
        let linked = LinkedHits::default();
        linked.remember(stamp, &hits, MAX_RESULT_CHARS);
        let same = linked.reuse(&stamp, &entry("b/x.txt")).unwrap();
        assert_eq!(same.matches.len(), 10);
        assert!(same.matches.iter().all(|m| m.file == "b/x.txt"));
        assert!(linked.reuse(&stamp, &entry("bb/x.txt")).is_none());
        // With room to spare, a longer name takes them too.
        let roomy = LinkedHits::default();
        roomy.remember(stamp, &hits, chars);
        assert_eq!(roomy.reuse(&stamp, &entry("bb/x.txt")).unwrap().count, 10);
    }

    /// The same tree twice: each file's other names as hard links in one,
    /// as copies in the other. Every answer must be the same.
    #[cfg(unix)]
    #[test]
    fn other_names_of_a_file_answer_as_copies_would() {
        let long_line = format!("{}needle{}\n", "x".repeat(150), "y".repeat(150));
        let originals = [
            ("few.txt", "a needle\nnothing\nneedle again\n".to_string()),
            ("none.txt", "nothing here\n".to_string()),
            ("many.txt", "needle\n".repeat(30)),
            // With 10 lines of context, more than one file's room.
            ("wide.txt", long_line.repeat(70)),
            ("bin.dat", "needle\0binary".to_string()),
        ];
        // Names of different lengths, so that kept matches take different room.
        let names = ["a", "b/longer_folder_name", "c/d/e"];
        let make = |linked: bool| {
            let (dir, gate) = project(&[]);
            for (file, text) in &originals {
                let first = gate.root().join(names[0]).join(file);
                std::fs::create_dir_all(first.parent().unwrap()).unwrap();
                std::fs::write(&first, text).unwrap();
                for name in &names[1..] {
                    let other = gate.root().join(name).join(file);
                    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
                    if linked {
                        std::fs::hard_link(&first, &other).unwrap();
                    } else {
                        std::fs::write(&other, text).unwrap();
                    }
                }
            }
            (dir, gate)
        };
        let ((_linked_dir, linked), (_copied_dir, copied)) = (make(true), make(false));
        for mode in [
            OutputMode::Content,
            OutputMode::Count,
            OutputMode::FilesWithMatches,
        ] {
            for (max_results, offset, context_lines) in [
                (50, 0, 0),
                (200, 0, 10),
                (200, 150, 10),
                (7, 101, 0),
                (200, 0, 0),
            ] {
                let query = SearchInput {
                    max_results,
                    offset,
                    context_lines,
                    output_mode: mode,
                    ..input("needle")
                };
                let (a, b) = (search(&linked, &query), search(&copied, &query));
                let json = |out: Result<SearchOutput, ToolError>| {
                    serde_json::to_string(&out.unwrap()).unwrap()
                };
                assert_eq!(json(a), json(b), "{mode:?} {max_results} {offset}");
            }
        }
    }

    #[test]
    fn early_stop_gives_the_sequential_answer() {
        let files: Vec<(String, String)> = (0..300)
            .map(|i| (format!("d{:03}/f.txt", i), "needle\nneedle\n".to_string()))
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let (_d, gate) = project(&refs);
        let mut query = input("needle");
        query.max_results = 7;
        query.offset = 3;
        let out = search(&gate, &query).unwrap();
        assert_eq!(
            lines(&out),
            vec![
                ("d001/f.txt".into(), 2),
                ("d002/f.txt".into(), 1),
                ("d002/f.txt".into(), 2),
                ("d003/f.txt".into(), 1),
                ("d003/f.txt".into(), 2),
                ("d004/f.txt".into(), 1),
                ("d004/f.txt".into(), 2),
            ]
        );
        assert!(out.truncated);
    }

    #[test]
    fn a_byte_order_mark_is_dropped_and_what_follows_decoded() {
        assert_eq!(&*decoded_text(b"plain\xFF"), b"plain\xFF");
        assert_eq!(&*decoded_text(b"\xEF\xBB\xBFtext\n"), b"text\n");
        assert_eq!(
            &*decoded_text(b"\xEF\xBB\xBFa\xFFb"),
            "a\u{FFFD}b".as_bytes()
        );
    }

    #[test]
    fn modes_glob_and_context() {
        let (_d, gate) = demo();
        let mut files = input("apply");
        files.output_mode = OutputMode::FilesWithMatches;
        let out = search(&gate, &files).unwrap();
        assert_eq!(out.files.unwrap(), vec!["a/one.py", "a.txt", "b/two.py"]);
        assert!(out.matches.is_none());

        let mut counts = input("apply");
        counts.output_mode = OutputMode::Count;
        counts.glob = Some("*.py".into());
        let out = search(&gate, &counts).unwrap();
        assert_eq!(
            out.counts.unwrap(),
            vec![
                FileCount {
                    file: "a/one.py".into(),
                    count: 1
                },
                FileCount {
                    file: "b/two.py".into(),
                    count: 2
                },
            ]
        );

        let mut context = input("y = 2");
        context.context_lines = 5;
        let out = search(&gate, &context).unwrap();
        let hit = &out.matches.unwrap()[0];
        assert_eq!(
            hit.before.as_deref(),
            Some(&["x = apply(1)".to_string()][..])
        );
        assert_eq!(hit.after.as_deref(), Some(&["apply(3)".to_string()][..]));
    }

    #[test]
    fn large_answers_stay_within_the_size_hint_escapes_included() {
        // Control characters escape to six characters each in JSON.
        let line = format!("x{}", "\u{1}".repeat(MAX_LINE_CHARS * 2));
        let text: String = (0..400).map(|_| format!("{line}\n")).collect();
        let name = format!("{}.txt", "\u{1}".repeat(200));
        let (_d, gate) = project(&[(name.as_str(), text.as_str())]);
        for mode in [
            OutputMode::Content,
            OutputMode::FilesWithMatches,
            OutputMode::Count,
        ] {
            let mut query = input("x");
            query.max_results = 200;
            query.context_lines = 10;
            query.output_mode = mode;
            let out = search(&gate, &query).unwrap();
            assert!(out.count > 0);
            let written = serde_json::to_string(&out).unwrap();
            assert!(
                written.encode_utf16().count() <= MAX_RESULT_CHARS,
                "{mode:?}: {}",
                written.len()
            );
            if mode == OutputMode::Content {
                assert!(out.truncated && out.count < 200);
            }
        }
    }

    #[test]
    fn deep_offsets_count_what_they_skip_and_give_the_sequential_page() {
        // One big file the page starts in the middle of, then small ones.
        let big: String = (1..=5000).map(|i| format!("hit {i}\n")).collect();
        let mut files = vec![("a.txt".to_string(), big)];
        for i in 0..50 {
            files.push((format!("b{i:02}.txt"), "hit\nhit\n".to_string()));
        }
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let (_d, gate) = project(&refs);
        let mut query = input("hit");
        query.max_results = 20;
        query.context_lines = 2;
        query.offset = 4990;
        let out = search(&gate, &query).unwrap();
        let found = lines(&out);
        assert_eq!(found.len(), 20);
        assert_eq!(found[0], ("a.txt".into(), 4991));
        assert_eq!(found[9], ("a.txt".into(), 5000));
        assert_eq!(found[10], ("b00.txt".into(), 1));
        assert_eq!(
            out.matches.as_ref().unwrap()[0]
                .before
                .as_ref()
                .unwrap()
                .len(),
            2
        );
        assert!(out.truncated);

        query.offset = MAX_OFFSET + 1;
        let error = search(&gate, &query).unwrap_err().to_string();
        assert!(error.contains("maximum of 10000"), "{error}");

        let mut files_mode = input("hit");
        files_mode.output_mode = OutputMode::FilesWithMatches;
        files_mode.offset = 49;
        let out = search(&gate, &files_mode).unwrap();
        assert_eq!(out.files.unwrap(), vec!["b48.txt", "b49.txt"]);
        assert!(!out.truncated);
    }

    #[test]
    fn a_cancelled_search_stops_with_cancelled() {
        let (_d, gate) = demo();
        let cancel = Cancel::never();
        cancel.cancel();
        let error = super::search(&gate, &TreeModel::off(), &input("apply"), &cancel).unwrap_err();
        assert!(matches!(error, ToolError::Cancelled));
    }

    #[test]
    fn ignored_paths_get_a_note_and_can_be_included() {
        let (_d, gate) = project(&[
            (".gitignore", "scripts/*\n"),
            ("scripts/w.py", "needle\n"),
            ("src/a.py", "other\n"),
        ]);
        let mut query = input("needle");
        query.path = "scripts".into();
        let out = search(&gate, &query).unwrap();
        assert_eq!(out.count, 0);
        let note = out.note.expect("a note");
        assert!(note.contains("include_ignored: true"), "{note}");
        query.include_ignored = true;
        let out = search(&gate, &query).unwrap();
        assert_eq!(lines(&out), vec![("scripts/w.py".into(), 1)]);
        assert!(out.note.is_none());
        // An empty answer for other reasons carries no note.
        let mut other = input("needle");
        other.path = "src".into();
        assert!(search(&gate, &other).unwrap().note.is_none());
        let json = serde_json::to_value(search(&gate, &other).unwrap()).unwrap();
        assert!(json.get("note").is_none());
    }

    #[test]
    fn oversized_queries_and_regexes_are_refused() {
        let (_d, gate) = demo();
        let error = search(&gate, &input(&"a".repeat(MAX_QUERY_CHARS + 1)))
            .unwrap_err()
            .to_string();
        assert!(error.contains("at most 1024 characters"), "{error}");
        let mut huge = input(r"\w{1000}\w{1000}");
        huge.regex = true;
        let error = search(&gate, &huge).unwrap_err().to_string();
        assert!(error.contains("invalid regex"), "{error}");
    }

    #[test]
    fn long_lines_are_cut_around_the_match() {
        let line = format!("{}needle{}", "a".repeat(5000), "b".repeat(5000));
        let (_d, gate) = project(&[("long.txt", &line)]);
        let out = search(&gate, &input("needle")).unwrap();
        let text = &out.matches.unwrap()[0].text;
        assert_eq!(text.chars().count(), MAX_LINE_CHARS);
        assert!(text.contains("needle"));
    }

    #[test]
    fn files_up_to_the_cap_are_searched_and_larger_ones_skipped() {
        let cap = crate::security::MAX_SEARCHED_BYTES as usize;
        let at_cap = format!("{}needle\n", "x".repeat(cap - 7));
        let (_d, gate) = project(&[
            ("at_cap.txt", &at_cap),
            ("over_cap.txt", &format!("{at_cap}y")),
        ]);
        let found = search(&gate, &input("needle")).unwrap();
        assert_eq!(lines(&found), vec![("at_cap.txt".into(), 1)]);
    }

    #[test]
    fn a_single_file_path_and_bad_queries() {
        let (_d, gate) = demo();
        let mut one = input("apply");
        one.path = "b/two.py".into();
        assert_eq!(search(&gate, &one).unwrap().count, 2);
        assert!(search(&gate, &input("")).is_err());
        assert!(search(&gate, &input("a\nb")).is_err());
        let mut secret = input("apply");
        secret.path = ".env".into();
        assert!(search(&gate, &secret).is_err());
    }
}
