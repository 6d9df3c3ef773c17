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

use regex_syntax::hir::Hir;

pub use crate::index::Pick;
pub use identity::Outcome;

use crate::index::TreeModel;
use crate::security::{PathGate, ResolvedPath};
use crate::walk::{self, Entry, EntryKind, Stamp, WalkOptions};
use identity::Known;
use ordered::BATCH_FILES;
use searchable::{SNIFF_BYTES, looks_binary, read_searchable};

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
    /// cannot be opened or is not searchable gets the default outcome.
    pub fn scan<R: Reader>(
        &self,
        start: &ResolvedPath,
        query: &Hir,
        options: &WalkOptions,
        accept: impl Fn(&str) -> bool,
        reader: &R,
        mut consume: impl FnMut(R::Outcome) -> ControlFlow<()> + Send,
    ) -> io::Result<()> {
        let known = Known::default();
        let cancel = &options.cancel;
        let fresh = || (reader.scratch(), Vec::new());
        let work = |(scratch, buffer): &mut (R::Scratch, Vec<u8>), entry: &Entry| {
            let document = Document {
                entry: entry.clone(),
            };
            self.evaluate(reader, &known, scratch, buffer, &document)
        };
        if start.real.is_file() {
            let entry = Entry {
                relative: start.relative.clone(),
                path: start.real.clone(),
                kind: EntryKind::File,
                depth: 0,
                size: None,
                ino: None,
            };
            let _ = consume(work(&mut fresh(), &entry));
            return Ok(());
        }
        let accept = |entry: &Entry| accept(&entry.relative);
        // The model holds the default view only: ignored files need the walk.
        let candidates = if options.include_ignored {
            None
        } else {
            self.model.candidates(start, query)
        };
        match candidates {
            Some(files) if files.len() <= BATCH_FILES => {
                let mut state = fresh();
                ordered::in_order_here(
                    &files,
                    &accept,
                    |entry| work(&mut state, entry),
                    consume,
                    cancel,
                );
                Ok(())
            }
            Some(files) => ordered::in_order_parallel(
                |visit| {
                    for entry in files {
                        if visit(entry).is_break() {
                            break;
                        }
                    }
                    Ok(())
                },
                accept,
                fresh,
                work,
                consume,
                cancel,
            ),
            None => ordered::in_order_parallel(
                |visit| walk::walk_files_to_open(self.gate, start, options, visit),
                accept,
                fresh,
                work,
                consume,
                cancel,
            ),
        }
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
        scratch: &mut R::Scratch,
        buffer: &mut Vec<u8>,
        document: &Document,
    ) -> R::Outcome {
        let Ok((file, metadata)) = document.entry.open(self.gate) else {
            return R::Outcome::default();
        };
        let linked = Some(Stamp::of(&metadata)).filter(|stamp| stamp.linked_identity().is_some());
        if let Some(stamp) = &linked
            && let Some(outcome) = known.reuse(stamp, document)
        {
            return outcome;
        }
        let Some(length) = read_regular(file, &metadata, buffer) else {
            return R::Outcome::default();
        };
        let content = &buffer[..length];
        let outcome = if looks_binary(&content[..length.min(SNIFF_BYTES)]) {
            R::Outcome::default()
        } else {
            reader.evaluate(scratch, document, content)
        };
        if let Some(stamp) = linked {
            known.remember(stamp, &outcome);
        }
        outcome
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
