//! The scrub: in idle time, a sample of the files the cache's segments
//! index is read again and re-derived (its trigrams and its long-gram
//! filter), and a segment that disagrees with a file it says is unchanged
//! (same stamp) is dropped. A segment passes every check on opening even
//! when its lists were edited and its checksums recomputed (a forgery by
//! whoever can write the user's cache folder, or a bug of ours), and a
//! list that lacks a file makes the index miss it; the scrub bounds how
//! long such an answer can stay wrong: every indexed file is looked at
//! again within `files / SAMPLE_FILES` scrubs.
//!
//! The scrub runs only after `scrub_every` without a call starting, and
//! stops once it has looked at every id: a server with no calls and no
//! changes then does no work at all.
//!
//! A segment found wrong loses its files (each becomes unread: a candidate
//! the searcher verifies, until the background indexing reads it again)
//! and the root's committed segments are given up, so the next session
//! builds them again.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::indexer::{Indexer, Read};
use super::live::Live;
use super::ngram::FileGrams;
use super::pacer::Pacer;
use super::segment::ContentHash;
use super::tree::Content;
use super::{Shared, State};
use crate::walk::Stamp;

/// Files read again by one scrub.
const SAMPLE_FILES: usize = 16;
/// Ids one scrub looks at to find its sample.
const MAX_IDS_LOOKED_AT: u32 = 4096;

/// Where the scrub goes on, and when it is due.
pub(super) struct Scrub {
    next_id: u32,
    /// Ids looked at so far: the scrub is over once every id was.
    looked_at: u32,
    due: Instant,
    /// Calls started when `due` was set: a call since puts it off.
    calls_seen: usize,
}

/// One indexed file to read again: its base id, name and the stamp its
/// segment recorded.
struct Sample {
    id: u32,
    name: String,
    stamp: Stamp,
    hash: ContentHash,
}

impl Scrub {
    pub(super) fn new(shared: &Shared) -> Self {
        Scrub {
            // A different place each session: a short session still looks
            // at some files late in path order.
            next_id: random_u32(),
            looked_at: 0,
            due: Instant::now() + shared.scrub_every,
            calls_seen: shared.calls_started.load(Ordering::Relaxed),
        }
    }

    /// When the next scrub of `live`'s index is due: `scrub_every` after
    /// the last call started (idle time only), or never once every id was
    /// looked at.
    pub(super) fn due(&mut self, shared: &Shared, live: &Live) -> Option<Instant> {
        let calls = shared.calls_started.load(Ordering::Relaxed);
        if calls != self.calls_seen {
            self.calls_seen = calls;
            self.due = Instant::now() + shared.scrub_every;
        }
        (self.looked_at < live.base.end_id()).then_some(self.due)
    }

    /// Reads the next sample again and drops the segment of any file that
    /// disagrees with it. `None` once the model is gone.
    pub(super) fn run(
        &mut self,
        shared: &Shared,
        pacer: &mut Pacer,
        indexer: &mut Indexer,
    ) -> Option<()> {
        self.due = Instant::now() + shared.scrub_every;
        let samples = self.sample(shared)?;
        let root = shared.gate.root();
        for sample in samples {
            pacer.yield_to_calls(shared);
            let first_seen = {
                let state = shared.state.lock().ok()?;
                let State::Ready(live) = &*state else {
                    return None;
                };
                live.tree.first_seen(&sample.name)
            };
            let Some(first_seen) = first_seen else {
                continue;
            };
            let (now, trusted, content) = indexer.read_after(
                &shared.gate,
                &root.join(&sample.name),
                Some((sample.stamp, first_seen)),
                &[],
            );
            if now != Some(sample.stamp) || !trusted {
                // Changed since: the change feed (or a sweep) has it.
                continue;
            }
            let Some(why) = disagreement(shared, pacer, &sample, &content)? else {
                continue;
            };
            let mut state = shared.state.lock().ok()?;
            let State::Ready(live) = &mut *state else {
                return None;
            };
            let Some((ids, _)) = live.base.stored_file(sample.id) else {
                continue;
            };
            // The layer goes: every file holding one of its ids is read
            // again, and no later read takes an id of it back.
            let holders = live.drop_layer(ids.start);
            drop(state);
            shared.unread.notify_all();
            tracing::warn!(
                "index cache: a segment disagrees with {} ({why}): its {} files are read again and the root's cache is given up",
                sample.name,
                holders
            );
            give_up_cache(shared);
        }
        Some(())
    }

    /// The next indexed files of mapped segments that still hold their ids,
    /// from where the last scrub stopped, until every id was looked at.
    fn sample(&mut self, shared: &Shared) -> Option<Vec<Sample>> {
        let state = shared.state.lock().ok()?;
        let State::Ready(live) = &*state else {
            return None;
        };
        let end = live.base.end_id();
        let mut samples = Vec::with_capacity(SAMPLE_FILES);
        // Each id is looked at once per scrub at most, and a bounded number
        // of them while the lock is held (ids built in memory are passed).
        for _ in 0..end.min(MAX_IDS_LOOKED_AT) {
            if samples.len() == SAMPLE_FILES || self.looked_at >= end {
                break;
            }
            self.looked_at += 1;
            let id = self.next_id % end;
            self.next_id = id + 1;
            let Some((_, file)) = live.base.stored_file(id) else {
                continue;
            };
            let sample = Sample {
                id,
                name: file.name.to_string(),
                stamp: file.stamp,
                hash: file.hash,
            };
            if holds_its_base_id(live, &sample) {
                samples.push(sample);
            }
        }
        if self.looked_at >= end {
            tracing::debug!(
                "index cache: the scrub's last round, every one of {end} ids looked at"
            );
        }
        Some(samples)
    }
}

/// A number no session can foretell (the standard library's per-process
/// hash keys).
fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish() as u32
}

/// Whether the file list still gives `sample`'s file its id, with the
/// stamp its segment recorded.
fn holds_its_base_id(live: &Live, sample: &Sample) -> bool {
    live.tree.get(&sample.name).is_some_and(|(_, node)| {
        node.stamp == Some(sample.stamp)
            && matches!(node.content, Content::Base(id) if id == sample.id)
    })
}

/// Trigrams looked up per hold of the model's lock: a large file's
/// tens of thousands are checked in parts, calls going first in between.
const TRIGRAMS_PER_LOCK: usize = 512;

/// What the segment holding `sample` gets wrong about the file, read again
/// as `content` with the same stamp: `Some(None)` when they agree (or the
/// file no longer holds its id), `None` once the model is gone.
fn disagreement(
    shared: &Shared,
    pacer: &mut Pacer,
    sample: &Sample,
    content: &Read,
) -> Option<Option<&'static str>> {
    let still_held = |live: &Live| holds_its_base_id(live, sample);
    let Read::Grams(grams) = content else {
        let state = shared.state.lock().ok()?;
        let State::Ready(live) = &*state else {
            return None;
        };
        // A segment indexes only files the index can read as text.
        return Some(still_held(live).then_some("the file is not indexable"));
    };
    let FileGrams {
        trigrams,
        hash,
        filter,
    } = grams;
    if *hash != sample.hash {
        let state = shared.state.lock().ok()?;
        let State::Ready(live) = &*state else {
            return None;
        };
        return Some(still_held(live).then_some("its text hashes otherwise"));
    }
    for part in trigrams.chunks(TRIGRAMS_PER_LOCK) {
        pacer.yield_to_calls(shared);
        let state = shared.state.lock().ok()?;
        let State::Ready(live) = &*state else {
            return None;
        };
        if !still_held(live) {
            return Some(None);
        }
        for &trigram in part {
            if !live.base.holds(sample.id, trigram) {
                return Some(Some("a trigram of the file is missing from its lists"));
            }
        }
    }
    let state = shared.state.lock().ok()?;
    let State::Ready(live) = &*state else {
        return None;
    };
    let Some((_, file)) = live
        .base
        .stored_file(sample.id)
        .filter(|_| still_held(live))
    else {
        return Some(None);
    };
    // A file recorded without a filter is never ruled out by one; a filter
    // left out to save memory now cannot be compared.
    if let (Some(at), Some(filter)) = (file.filter, filter) {
        let Some(bytes) = live.base.stored_filter(sample.id, at) else {
            return Some(Some("its long-gram filter cannot be read"));
        };
        let (derived_case, words) = filter.parts();
        let same = at.case == derived_case
            && bytes.len() == words.len() * 8
            && bytes
                .chunks_exact(8)
                .zip(words)
                .all(|(chunk, word)| chunk == word.to_le_bytes());
        if !same {
            return Some(Some("its long-gram filter differs"));
        }
    }
    Some(None)
}

/// Commits an empty index for the root, so that no session serves the
/// segments again (when another server is writing, its commit replaces
/// them anyway).
fn give_up_cache(shared: &Shared) {
    let Some((cache, _)) = shared.cache.get() else {
        return;
    };
    shared.cache_given_up.store(true, Ordering::Relaxed);
    match cache.try_lock_writer() {
        Ok(Some(lock)) => {
            if let Err(error) = cache.commit(&lock, &[]) {
                tracing::info!("index cache: {error}");
            }
        }
        Ok(None) => {}
        Err(error) => tracing::info!("index cache: {error}"),
    }
}
