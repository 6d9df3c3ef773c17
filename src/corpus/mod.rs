//! Which files a call sees, and what it reads of them: the one seam between
//! the tree (the walker, the tree model) and the tools that look at files.
//!
//! A tool asks for the entries below a folder ([`Corpus::entries`], for
//! find and list) or for the documents below a folder that may hold a
//! query ([`Corpus::scan`], for search). The corpus decides, here and
//! nowhere else, whether the tree model answers or the walker walks; the
//! answer is the same either way. The model holds the default view only,
//! so a call that includes ignored files always walks.
//!
//! A document is a file the search reads, under the searchable-file policy
//! of [`searchable`] (size cap, binary sniff), opened through the gate's
//! opener. A file with several names (hard links) is one document with
//! several names (see [`identity`]): while it is unchanged it is read once
//! per call, and its outcome handed on under each name. Documents come in
//! path order, whatever threads read them.

mod identity;
mod ordered;
pub mod searchable;

use std::io;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use regex_syntax::hir::Hir;

pub use crate::index::Pick;
pub use identity::Outcome;

use crate::index::{Candidate, Candidates, ReadWhole, TreeModel};
use crate::security::{PathGate, ResolvedPath};
use crate::walk::{self, Entry, EntryKind, Stamp, WalkOptions};
use identity::Known;
use ordered::BATCH_FILES;
use searchable::{SNIFF_BYTES, looks_binary, read_searchable};

/// Candidates the tree model lists for a scan's first page: a search
/// that has enough after a few files (a common word) lists no more; each
/// page after is [`PAGE_GROWTH`] times the one before, so a scan of every
/// candidate asks for a few pages only.
const FIRST_PAGE: usize = 128;
const PAGE_GROWTH: usize = 4;

/// One project's files as a call sees them.
#[derive(Clone, Copy)]
pub struct Corpus<'a> {
    gate: &'a PathGate,
    model: &'a TreeModel,
}

/// A file a scan reads: its name (root-relative, `/`-separated) and what
/// opens it.
#[derive(Debug, Clone)]
pub struct Document {
    entry: Entry,
    /// The tree model waits to read this file again (see
    /// [`Candidate::awaited`]): reading it whole is worth its hash.
    awaited: bool,
}

impl Document {
    /// The document `name` below the root of `gate`, as a walk lists it.
    #[cfg(test)]
    pub fn named(gate: &PathGate, name: &str) -> Self {
        Self {
            entry: Entry {
                relative: name.to_string(),
                path: gate.root().join(name),
                kind: EntryKind::File,
                depth: 1,
                size: None,
                ino: None,
            },
            awaited: false,
        }
    }

    /// A file as the walk lists it.
    fn walked(entry: Entry) -> Self {
        Self {
            entry,
            awaited: false,
        }
    }

    /// A candidate of the tree model below `root`.
    fn candidate(candidate: &Candidate, root: &Path) -> Self {
        Self {
            entry: candidate.entry(root),
            awaited: candidate.awaited,
        }
    }

    /// The root-relative name this document is handed on under.
    pub fn name(&self) -> &str {
        &self.entry.relative
    }
}

/// What a tool does with each document of a scan.
pub trait Reader: Sync {
    /// What one worker thread keeps from document to document.
    type Scratch;
    type Outcome: Outcome;
    fn scratch(&self) -> Self::Scratch;
    /// The outcome of `document`, given its content (searchable: within the
    /// size cap and not binary).
    fn evaluate(
        &self,
        scratch: &mut Self::Scratch,
        document: &Document,
        content: &[u8],
    ) -> Self::Outcome;
}

impl<'a> Corpus<'a> {
    pub fn new(gate: &'a PathGate, model: &'a TreeModel) -> Self {
        Self { gate, model }
    }

    /// The corpus as the walker alone gives it, without a tree model: the
    /// answer every model must agree with.
    #[cfg(test)]
    pub fn walked(gate: &'a PathGate) -> Self {
        static OFF: std::sync::OnceLock<TreeModel> = std::sync::OnceLock::new();
        Self::new(gate, OFF.get_or_init(TreeModel::off))
    }

    pub fn gate(&self) -> &'a PathGate {
        self.gate
    }

    /// The first `pick.wanted` entries below the folder `start`, down to
    /// `max_depth` levels, that `pick` accepts, in path order with sizes,
    /// as the walker would list them with `options`.
    pub fn entries(
        &self,
        start: &ResolvedPath,
        max_depth: Option<usize>,
        options: &WalkOptions,
        pick: &Pick<'_>,
    ) -> io::Result<Vec<Entry>> {
        let known = if options.include_ignored {
            None
        } else {
            self.model.entries(start, max_depth, pick)
        };
        match known {
            Some(entries) => Ok(entries),
            None => walk::walk_picked(self.gate, start, max_depth, options, pick.keep, pick.wanted),
        }
    }

    /// Whether `start` (a file, or a folder holding at least one file with
    /// `options`) gives a scan anything to read.
    pub fn holds_files(&self, start: &ResolvedPath, options: &WalkOptions) -> bool {
        start.real.is_file() || walk::holds_files(self.gate, start, options)
    }

    /// Hands `consume`, in path order, `reader`'s outcome of every
    /// document below `start` that may hold `query` (as
    /// [`crate::matcher::parse`] gave it) and whose name `accept` keeps,
    /// until `consume` breaks or `options.cancel` is set. A file named as
    /// `start` is the one document, whatever `accept` says. A document that
    /// cannot be opened or is not searchable gets the default outcome, as
    /// may one `accept` refuses (it is not read).
    pub fn scan<R: Reader>(
        &self,
        start: &ResolvedPath,
        query: &Hir,
        options: &WalkOptions,
        accept: impl Fn(&str) -> bool + Sync,
        reader: &R,
        mut consume: impl FnMut(R::Outcome) -> ControlFlow<()> + Send,
    ) -> io::Result<()> {
        let known = Known::default();
        let cancel = &options.cancel;
        let root = self.gate.root();
        let fresh = || Worker {
            scratch: reader.scratch(),
            buffer: Vec::new(),
            read_whole: ReadsWhole {
                model: self.model,
                reads: Vec::new(),
            },
        };
        let work = |worker: &mut Worker<'_, R::Scratch>, document: &Document| {
            self.evaluate(reader, &known, worker, document)
        };
        if start.real.is_file() {
            let document = Document::walked(Entry {
                relative: start.relative.clone(),
                path: start.real.clone(),
                kind: EntryKind::File,
                depth: 0,
                size: None,
                ino: None,
            });
            let _ = consume(work(&mut fresh(), &document));
            return Ok(());
        }
        let stopped = AtomicBool::new(false);
        let mut consume = |outcome| {
            let flow = consume(outcome);
            if flow.is_break() {
                stopped.store(true, Ordering::Relaxed);
            }
            flow
        };
        // The model holds the default view only: ignored files need the walk.
        let first = if options.include_ignored {
            None
        } else {
            self.model.candidates(start, query, None, FIRST_PAGE)
        };
        let accept_name = |document: &Document| accept(document.name());
        // The files to walk, when the model does not list them: all, or
        // those after the last it listed.
        let walk_after: Option<Option<String>> = match first {
            None => Some(None),
            Some(first) if first.ends_list && first.files.len() <= BATCH_FILES => {
                let mut worker = fresh();
                ordered::in_order_here(
                    first
                        .files
                        .iter()
                        .map(|file| Document::candidate(file, root)),
                    &accept_name,
                    |document| work(&mut worker, document),
                    &mut consume,
                    cancel,
                );
                None
            }
            Some(first) => {
                let pages = Pages::following(self.model, start, query, first);
                ordered::in_order_shared(
                    |index| pages.document(index, root),
                    accept_name,
                    fresh,
                    work,
                    &mut consume,
                    cancel,
                );
                pages
                    .refused_after()
                    .filter(|_| !stopped.load(Ordering::Relaxed) && !cancel.is_cancelled())
            }
        };
        let Some(last) = walk_after else {
            return Ok(());
        };
        let accept = |document: &Document| {
            last.as_deref()
                .is_none_or(|last| walk::path_order(document.name(), last).is_gt())
                && accept(document.name())
        };
        ordered::in_order_parallel(
            |visit| {
                walk::walk_files_to_open(self.gate, start, options, |entry| {
                    visit(Document::walked(entry))
                })
            },
            accept,
            fresh,
            work,
            consume,
            cancel,
        )
    }

    /// Reads `document` again and hands its content to `with`; `None` when
    /// it cannot be opened or is not searchable now.
    pub fn read<T>(&self, document: &Document, with: impl FnOnce(&[u8]) -> T) -> Option<T> {
        let mut buffer = Vec::new();
        let (file, metadata) = document.entry.open(self.gate).ok()?;
        let length = read_regular(file, &metadata, &mut buffer)?;
        let content = &buffer[..length];
        (!looks_binary(&content[..length.min(SNIFF_BYTES)])).then(|| with(content))
    }

    /// One document's outcome: taken from another name of the same file
    /// when one was read in this call, else read and evaluated.
    fn evaluate<R: Reader>(
        &self,
        reader: &R,
        known: &Known<R::Outcome>,
        worker: &mut Worker<'_, R::Scratch>,
        document: &Document,
    ) -> R::Outcome {
        // An awaited file's text counts from before it was opened.
        let seen_at = document.awaited.then(SystemTime::now);
        let Ok((file, metadata)) = document.entry.open(self.gate) else {
            return R::Outcome::default();
        };
        let linked = Some(Stamp::of(&metadata)).filter(|stamp| stamp.linked_identity().is_some());
        if let Some(stamp) = &linked
            && let Some(outcome) = known.reuse(stamp, document)
        {
            return outcome;
        }
        let awaited = seen_at.map(|seen_at| (Stamp::of_open(&file, &metadata), seen_at));
        let Some(length) = read_regular(file, &metadata, &mut worker.buffer) else {
            return R::Outcome::default();
        };
        let content = &worker.buffer[..length];
        let outcome = if looks_binary(&content[..length.min(SNIFF_BYTES)]) {
            R::Outcome::default()
        } else {
            if let Some((stamp, seen_at)) = awaited
                && let Some(read) = ReadWhole::of(document.name(), stamp, seen_at, content)
            {
                worker.read_whole.add(read);
            }
            reader.evaluate(&mut worker.scratch, document, content)
        };
        if let Some(stamp) = linked {
            known.remember(stamp, &outcome);
        }
        outcome
    }
}

/// The tree model's candidates for one scan, a page at a time: the threads
/// working the list ask for the next page as they reach the end of the
/// last, so no page waits for its slowest file before the next starts, and
/// none is asked for once the consumer has enough.
struct Pages<'a> {
    model: &'a TreeModel,
    start: &'a ResolvedPath,
    query: &'a Hir,
    listed: Mutex<Listed>,
}

struct Listed {
    files: Vec<Candidate>,
    ends_list: bool,
    /// The model could not give the next page.
    refused: bool,
    wanted: usize,
}

impl Listed {
    /// Takes `page` in; the next page asked for is larger.
    fn add(&mut self, page: Candidates) {
        self.ends_list = page.ends_list || page.files.is_empty();
        self.files.extend(page.files);
        self.wanted = self.wanted.saturating_mul(PAGE_GROWTH);
    }
}

impl<'a> Pages<'a> {
    /// The pages that follow `first`.
    fn following(
        model: &'a TreeModel,
        start: &'a ResolvedPath,
        query: &'a Hir,
        first: Candidates,
    ) -> Self {
        let mut listed = Listed {
            files: Vec::new(),
            ends_list: false,
            refused: false,
            wanted: FIRST_PAGE,
        };
        listed.add(first);
        Self {
            model,
            start,
            query,
            listed: Mutex::new(listed),
        }
    }

    /// The candidate at `index` in path order, pages asked for as needed;
    /// `None` past the last.
    fn document(&self, index: usize, root: &Path) -> Option<Document> {
        let mut listed = self.listed.lock().ok()?;
        while index >= listed.files.len() {
            if listed.ends_list || listed.refused {
                return None;
            }
            let last = listed.files.last().map(|file| file.relative().to_string());
            match self
                .model
                .candidates(self.start, self.query, last.as_deref(), listed.wanted)
            {
                Some(page) => listed.add(page),
                None => listed.refused = true,
            }
        }
        Some(Document::candidate(&listed.files[index], root))
    }

    /// The last candidate listed, when the model refused a page after it.
    fn refused_after(self) -> Option<Option<String>> {
        let listed = self.listed.into_inner().ok()?;
        listed
            .refused
            .then(|| listed.files.last().map(|file| file.relative().to_string()))
    }
}

/// What one worker thread keeps from document to document.
struct Worker<'m, S> {
    scratch: S,
    buffer: Vec<u8>,
    read_whole: ReadsWhole<'m>,
}

/// Awaited files read whole, handed to the tree model a batch at a time,
/// and the rest when the worker is done.
struct ReadsWhole<'m> {
    model: &'m TreeModel,
    reads: Vec<ReadWhole>,
}

impl ReadsWhole<'_> {
    /// Each hand-over takes the model's lock once.
    const BATCH: usize = 256;

    fn add(&mut self, read: ReadWhole) {
        self.reads.push(read);
        if self.reads.len() >= Self::BATCH {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        if !self.reads.is_empty() {
            self.model.take_back(&self.reads);
            self.reads.clear();
        }
    }
}

impl Drop for ReadsWhole<'_> {
    fn drop(&mut self) {
        self.hand_over();
    }
}

/// Reads an opened file into `buffer` (see [`read_searchable`]); the
/// length of its content, or `None` when it is not a regular file, is
/// over the cap, or cannot be read.
fn read_regular(
    mut file: std::fs::File,
    metadata: &std::fs::Metadata,
    buffer: &mut Vec<u8>,
) -> Option<usize> {
    if !metadata.is_file() {
        return None;
    }
    read_searchable(&mut file, metadata.len(), buffer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IndexConfig;
    use std::fs;
    use std::time::{Duration, Instant};

    /// Names the documents a scan reads.
    struct Names;

    #[derive(Default, Clone)]
    struct Name(Option<String>);

    impl Outcome for Name {
        fn renamed(&self, _: &Document) -> Option<Self> {
            None
        }
        fn weight(&self) -> usize {
            0
        }
    }

    impl Reader for Names {
        type Scratch = ();
        type Outcome = Name;
        fn scratch(&self) {}
        fn evaluate(&self, _: &mut (), document: &Document, _: &[u8]) -> Name {
            Name(Some(document.name().to_string()))
        }
    }

    fn read_names(corpus: &Corpus<'_>, start: &ResolvedPath, query: &Hir) -> Vec<String> {
        names_from(corpus, start, query, &Names)
    }

    /// The names `reader` gives for the documents of a whole scan.
    fn names_from(
        corpus: &Corpus<'_>,
        start: &ResolvedPath,
        query: &Hir,
        reader: &impl Reader<Outcome = Name>,
    ) -> Vec<String> {
        let mut names = Vec::new();
        corpus
            .scan(
                start,
                query,
                &WalkOptions::default(),
                |_| true,
                reader,
                |name| {
                    names.extend(name.0);
                    ControlFlow::Continue(())
                },
            )
            .unwrap();
        names
    }

    /// A tree of `count` files `f000.txt`, `f001.txt`... holding `text(i)`,
    /// and its model once settled.
    fn settled_model(
        count: usize,
        text: impl Fn(usize) -> String,
    ) -> (tempfile::TempDir, PathGate, TreeModel) {
        let dir = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(dir.path()).unwrap();
        for i in 0..count {
            fs::write(root.join(format!("f{i:03}.txt")), text(i)).unwrap();
        }
        let gate = PathGate::new(root, &[]).unwrap();
        // Stamps younger than the file system's clock tick are not trusted.
        std::thread::sleep(Duration::from_millis(250));
        let model = TreeModel::new(&gate, &IndexConfig::default());
        model.start();
        let deadline = Instant::now() + Duration::from_secs(120);
        while !model.is_settled() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(model.is_ready());
        (dir, gate, model)
    }

    /// Names the documents holding `needle`.
    struct Holding;

    impl Reader for Holding {
        type Scratch = ();
        type Outcome = Name;
        fn scratch(&self) {}
        fn evaluate(&self, _: &mut (), document: &Document, content: &[u8]) -> Name {
            let holds = content.windows(6).any(|window| window == b"needle");
            Name(holds.then(|| document.name().to_string()))
        }
    }

    /// The first `wanted` documents of `corpus` holding `needle`.
    fn holding_needle(corpus: &Corpus<'_>, start: &ResolvedPath, wanted: usize) -> Vec<String> {
        let needle = crate::matcher::parse("needle", true, false).unwrap();
        let mut names = Vec::new();
        let options = WalkOptions::default();
        corpus
            .scan(
                start,
                &needle,
                &options,
                |_| true,
                &Holding,
                |name| {
                    names.extend(name.0);
                    if names.len() >= wanted {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            )
            .unwrap();
        names
    }

    /// A settled tree of `count` files, every `other`-th holding `other`
    /// and the rest `needle`, whose scan through the model for `needle`
    /// gives what the walk gives, whole and stopped after each of `stops`.
    fn scanned_as_walked(
        count: usize,
        other: usize,
        stops: &[usize],
    ) -> (tempfile::TempDir, PathGate, TreeModel) {
        let (dir, gate, model) = settled_model(count, |i| {
            let word = if i % other == 0 { "other" } else { "needle" };
            format!("{word} {i}\n")
        });
        let start = gate.resolve(".").unwrap();
        let corpus = Corpus::new(&gate, &model);
        let walked = holding_needle(&Corpus::walked(&gate), &start, usize::MAX);
        assert_eq!(walked.len(), (0..count).filter(|i| i % other != 0).count());
        assert_eq!(holding_needle(&corpus, &start, usize::MAX), walked);
        for &wanted in stops {
            let names = holding_needle(&corpus, &start, wanted);
            assert_eq!(names, walked[..wanted], "{wanted}");
        }
        (dir, gate, model)
    }

    #[test]
    fn a_list_of_candidates_shared_by_threads_comes_in_path_order() {
        let (_dir, gate, model) = scanned_as_walked(150, 3, &[1, BATCH_FILES, 70]);
        let needle = crate::matcher::parse("needle", true, false).unwrap();
        // Too many to be read on the calling thread alone.
        let candidates = model
            .candidates(&gate.resolve(".").unwrap(), &needle, None, usize::MAX)
            .unwrap()
            .files;
        assert_eq!(candidates.len(), 100);
        assert!(candidates.len() > BATCH_FILES);
    }

    #[test]
    fn a_scan_over_pages_of_candidates_gives_what_the_walk_gives() {
        // Enough files holding `needle` that the model lists them in pages.
        let stops = [FIRST_PAGE, FIRST_PAGE + 1, 200];
        let (_dir, gate, model) = scanned_as_walked(300, 4, &stops);
        let needle = crate::matcher::parse("needle", true, false).unwrap();
        let first = model
            .candidates(&gate.resolve(".").unwrap(), &needle, None, FIRST_PAGE)
            .unwrap();
        assert_eq!(first.files.len(), FIRST_PAGE);
        assert!(!first.ends_list);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_page_the_model_cannot_give_is_walked_from_the_last_file_listed() {
        use std::os::unix::ffi::OsStrExt;
        /// Names the documents holding `needle`, as [`Holding`] does; the
        /// first document read writes `odd` into the tree, and no other
        /// document is read before that.
        struct ChangingTree {
            odd: std::path::PathBuf,
            written: AtomicBool,
        }

        impl Reader for ChangingTree {
            type Scratch = ();
            type Outcome = Name;
            fn scratch(&self) {}
            fn evaluate(&self, _: &mut (), document: &Document, content: &[u8]) -> Name {
                if document.name() == "f001.txt" {
                    fs::write(&self.odd, "needle odd\n").unwrap();
                    self.written.store(true, Ordering::Release);
                }
                // The threads working the list claim files in order: none asks
                // for the next page before the change.
                let deadline = Instant::now() + Duration::from_secs(30);
                while !self.written.load(Ordering::Acquire) {
                    assert!(Instant::now() < deadline, "f001.txt was never read");
                    std::thread::sleep(Duration::from_millis(1));
                }
                Holding.evaluate(&mut (), document, content)
            }
        }

        // 225 of 300 files hold `needle`: the first page lists 128.
        let (_dir, gate, model) = settled_model(300, |i| {
            let word = if i % 4 == 0 { "other" } else { "needle" };
            format!("{word} {i}\n")
        });
        let start = gate.resolve(".").unwrap();
        // A name that is not UTF-8 appears while the first page is read:
        // the model no longer lists this folder, so the next page is
        // refused and the files after the last one listed are walked.
        let reader = ChangingTree {
            odd: gate
                .root()
                .join(std::ffi::OsStr::from_bytes(b"f250\xff.txt")),
            written: Default::default(),
        };
        let needle = crate::matcher::parse("needle", true, false).unwrap();
        let names = names_from(&Corpus::new(&gate, &model), &start, &needle, &reader);
        let walked = holding_needle(&Corpus::walked(&gate), &start, usize::MAX);
        assert_eq!(walked.len(), 226);
        assert!(walked.contains(&"f250\u{FFFD}.txt".to_string()));
        assert_eq!(names, walked);
        assert!(
            model
                .candidates(&start, &needle, None, FIRST_PAGE)
                .is_none(),
            "the model lists a folder holding a name that is not UTF-8"
        );
    }

    #[test]
    fn a_scan_that_reads_a_file_whose_stamp_moved_but_not_its_text_gives_the_model_its_id_back() {
        let (_dir, gate, model) = settled_model(40, |i| format!("text of file {i}\n"));
        let corpus = Corpus::new(&gate, &model);
        let start = gate.resolve(".").unwrap();
        let absent = crate::matcher::parse("word_in_no_file", true, false).unwrap();
        assert!(read_names(&corpus, &start, &absent).is_empty());
        let path = gate.root().join("f007.txt");
        let text = fs::read(&path).unwrap();
        // The same text under a new stamp (as a checkout back and forth
        // writes it): a candidate until read, and the background waits for
        // a changed file to rest half a second before it reads it. On a
        // machine so busy that it got there before the call, again.
        for _ in 0..5 {
            fs::remove_file(&path).unwrap();
            fs::write(&path, &text).unwrap();
            std::thread::sleep(Duration::from_millis(150));
            if read_names(&corpus, &start, &absent).is_empty() {
                continue;
            }
            // That scan read it whole: the model holds its text again.
            assert!(
                read_names(&corpus, &start, &absent).is_empty(),
                "the file is still a candidate after a call read it"
            );
            let present = crate::matcher::parse("file 7", true, false).unwrap();
            assert_eq!(read_names(&corpus, &start, &present), ["f007.txt"]);
            return;
        }
        panic!("the background read the file again before every call");
    }
}
