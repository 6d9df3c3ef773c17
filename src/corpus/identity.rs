//! File identity within one call: a file with several names (hard links)
//! is one document with several names. Its outcome, once a tool has made
//! it under one name, is handed on under the others while the file is
//! unchanged, without reading it again.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Document;
use crate::walk::Stamp;

/// Documents with several names whose outcomes one call keeps, and the
/// total weight of those outcomes: the memory a call may spend so that a
/// tree of hard links costs a read per file rather than per name. Past
/// either bound, further names are read as any file.
const MAX_KNOWN_DOCUMENTS: usize = 65_536;
const MAX_KNOWN_WEIGHT: usize = 1_600_000;

/// What a tool makes of one document.
pub trait Outcome: Default + Clone + Send {
    /// This outcome under another name of the same unchanged document, or
    /// `None` when the tool must read the document again under that name
    /// (what it keeps depends on the name).
    fn renamed(&self, document: &Document) -> Option<Self>;
    /// What keeping the outcome costs, toward [`MAX_KNOWN_WEIGHT`] and the
    /// ordered executors' lookahead: for the search, the JSON characters of
    /// the matches it keeps.
    fn weight(&self) -> usize;
}

/// The outcomes of documents with several names made in this call, by the
/// stamp of the file read.
pub(super) struct Known<T>(Mutex<Inner<T>>);

struct Inner<T> {
    outcomes: HashMap<Stamp, T>,
    weight: usize,
}

impl<T: Outcome> Default for Known<T> {
    fn default() -> Self {
        Self(Mutex::new(Inner {
            outcomes: HashMap::new(),
            weight: 0,
        }))
    }
}

impl<T: Outcome> Known<T> {
    /// The outcome of `document`, another name of a file read before with
    /// `stamp`, when the tool can take it under this name.
    pub(super) fn reuse(&self, stamp: &Stamp, document: &Document) -> Option<T> {
        let known = self.0.lock().ok()?;
        known.outcomes.get(stamp)?.renamed(document)
    }

    /// Keeps `outcome` for the file's other names, while there is room.
    pub(super) fn remember(&self, stamp: Stamp, outcome: &T) {
        let Ok(mut known) = self.0.lock() else {
            return;
        };
        let weight = outcome.weight();
        if known.outcomes.len() < MAX_KNOWN_DOCUMENTS && known.weight + weight <= MAX_KNOWN_WEIGHT {
            known.weight += weight;
            known.outcomes.insert(stamp, outcome.clone());
        }
    }
}
