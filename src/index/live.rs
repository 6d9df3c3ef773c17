//! The ready model: the file list, the index's layers and the change
//! feed, and how it answers which files may hold a query.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::Arc;

use super::base::{BaseIndex, Layer, NameOf, may_match};
use super::merge::{Input, merge};
use super::os::log_filters_left_out;
use super::plan::Query;
use super::postings::{PostingCache, evaluate};
use super::segment::Segment;
use super::tree::{self, Content, PathKey, Tree, depth};
use super::watch::{ChangeWatcher, Changes};
use super::{Candidate, ReadWhole, joined};
use crate::security::PathGate;
use crate::walk::{self, Entry, EntryKind, Stamp};

pub(super) struct Live {
    pub(super) tree: Tree,
    /// Changes were lost and no sweep has caught up with them yet.
    pub(super) sweep_owed: bool,
    pub(super) base: BaseIndex,
    /// Shared with the thread that collects changes as they come.
    pub(super) watcher: Arc<ChangeWatcher>,
    /// Files are indexed without long-gram filters: they were dropped to
    /// stay within the memory limit.
    pub(super) without_filters: bool,
    /// By layer (first id): its files taken back under a stamp other than
    /// the one it recorded (their text unchanged).
    pub(super) restamped: std::collections::HashMap<u32, u32>,
    /// Files whose versions were looked up in the layers since the pages
    /// of the mapped ones were last dropped.
    pub(super) looked_up: usize,
    /// How often files read again lately held a text a layer has.
    pub(super) take_backs: TakeBacks,
}

/// Of the files read again since the last change of which a layer holds a
/// version, how many held that version's text: after a `chmod -R` or a
/// branch switched back nearly all, after a switch to new work nearly
/// none. A call hashes what it reads for the model only while that pays.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TakeBacks {
    tried: u32,
    taken: u32,
}

impl TakeBacks {
    /// Reads after which the counts are halved: what happened lately
    /// decides.
    const WINDOW: u32 = 1024;
    /// Reads before the counts decide.
    const UNTOLD: u32 = 64;

    pub(super) fn record(&mut self, taken: bool) {
        self.add(TakeBacks {
            tried: 1,
            taken: u32::from(taken),
        });
    }

    pub(super) fn add(&mut self, other: TakeBacks) {
        self.tried += other.tried;
        self.taken += other.taken;
        while self.tried >= Self::WINDOW {
            self.tried /= 2;
            self.taken /= 2;
        }
    }

    /// Whether a call's hashes of what it reads are likely to give ids
    /// back: until a few reads tell, and while one in four did.
    pub(super) fn pay(&self) -> bool {
        self.tried < Self::UNTOLD || self.taken * 4 >= self.tried
    }
}

/// Files looked up in the layers after which the pages of the mapped
/// layers the lookups touched (the records and names of the versions
/// found, and the candidates of the calls between) are dropped from the
/// process.
const LOOKUPS_PER_PAGE_DROP: usize = 8192;

/// Files the layers name for a query up to which a page lists them all,
/// whatever it was asked for: listing one costs about a quarter of a
/// microsecond, and each page after the first costs the lists' evaluation
/// again and a new start of the scan's threads. Unit tests page through
/// trees a sweep under Wine can afford at every call.
pub(super) const ONE_PAGE_UP_TO: usize = if cfg!(test) { 64 } else { 1024 };

/// Who brings the tree up to the disk, and so how much work it may do.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Looker {
    /// A call that needs the whole tree: it sweeps when changes were lost.
    Call,
    /// A listing (find, list): the walker answers it for less than a
    /// sweep costs, so it walks instead.
    CheapCall,
    /// A call's next page of candidates: the call caught up for its first
    /// page, so lost changes (or no change feed) mean no sweep now; they
    /// are the next call's, as they would be had the call listed all at once.
    LaterPage,
    /// The background, when changes are queued or stamps may have
    /// settled: it sweeps when changes were lost (before any call has
    /// to); without a live change feed it only looks at the stamps it
    /// could not trust, and leaves the sweep to the calls.
    Background,
}

impl Live {
    /// Applies the changes the feed holds, or every change by a stat sweep
    /// when some were lost. Returns how many entries changed, or `None`
    /// when the tree cannot answer now: it changed faster than it could be
    /// followed, or a [`Looker::CheapCall`] met lost changes. Either way
    /// the next look sweeps.
    pub(super) fn catch_up(&mut self, gate: &PathGate, looker: Looker) -> Option<usize> {
        let changes = if looker == Looker::Background && !self.watcher.is_live() {
            Changes::Paths(Vec::new())
        } else {
            match self.watcher.drain() {
                Changes::Paths(_) | Changes::Unknown if self.sweep_owed => Changes::Unknown,
                changes => changes,
            }
        };
        if changes == Changes::Unknown {
            match looker {
                Looker::CheapCall => {
                    self.sweep_owed = true;
                    return None;
                }
                Looker::LaterPage => {
                    self.sweep_owed = true;
                    return Some(0);
                }
                Looker::Call | Looker::Background => {}
            }
        }
        self.sweep_owed = false;
        let changed = self.tree.refresh(changes, gate);
        if changed.is_none() {
            self.sweep_owed = true;
        }
        // What reads told of the changes before says nothing of these (a
        // branch switched back after a switch to new work).
        if changed != Some(0) {
            self.take_backs = TakeBacks::default();
        }
        changed
    }

    /// Files under `dir` that may hold a match of `query`, in path order:
    /// the indexed files the posting lists name in each layer, merged with
    /// the loose files (never indexed, or changed and not read again yet).
    /// Skipped files never are; a file's content decides, never a walk of
    /// the list. Only the page asked for is listed: the first `wanted` that
    /// sort after `last` (the last of the page before); the flag says
    /// whether the page ends the list.
    pub(super) fn candidates<'a>(
        &'a self,
        dir: &'a str,
        query: &Query,
        last: Option<&str>,
        wanted: usize,
    ) -> (Vec<Found<'a>>, bool) {
        if *query == Query::All {
            return first_of(
                self.tree
                    .under_past(dir, last)
                    .filter(|(_, node)| {
                        node.kind == EntryKind::File && !matches!(node.content, Content::Skipped)
                    })
                    .map(Found::of),
                wanted,
            );
        }
        let in_page = |name: &str| {
            tree::is_below(name, dir)
                && name != dir
                && last.is_none_or(|last| walk::path_order(name, last).is_gt())
        };
        let mut runs = Vec::with_capacity(self.base.layers().len() + 1);
        let mut ends_list = true;
        // Ids whose files match, for their other names (if any file has):
        // those may sort anywhere, so each layer's list is then read whole.
        let linked = self.base.has_other_names();
        let mut matched = Vec::new();
        // A layer's files are in path order, those below `dir` together.
        let from = last.or((dir != ".").then_some(dir));
        let evaluated: Vec<Vec<u32>> = self
            .base
            .layers()
            .iter()
            .map(|layer| {
                let segment = &*layer.segment;
                evaluate(query, segment, &mut PostingCache::default())
                    .unwrap_or_else(|| (0..segment.file_count()).collect())
            })
            .collect();
        // A few are listed at once: a page after costs more than they do.
        let named: usize = evaluated.iter().map(Vec::len).sum();
        let wanted = if named <= ONE_PAGE_UP_TO {
            wanted.max(named)
        } else {
            wanted
        };
        for (layer, local) in self.base.layers().iter().zip(evaluated) {
            let segment = &*layer.segment;
            // Files taken back under a new stamp (a checkout rewrote them
            // with the same text) are listed as they are now: the record
            // keeps the old stamp, and a search refuses to open a file
            // whose inode is not the one listed.
            let restamped = self.restamped.contains_key(&layer.first_id);
            let first = match from {
                Some(from) if !linked => first_past(segment, &local, from),
                _ => 0,
            };
            let mut run = Vec::new();
            for &local in &local[first..] {
                let id = layer.first_id + local;
                // Changed or gone since it was indexed: a loose file or
                // nothing (its other names may still stand for it).
                let dead = self.tree.is_dead(id);
                if dead && !linked {
                    continue;
                }
                // The filters judge a file once, whatever its names.
                let Some(file) = segment
                    .file(local)
                    .filter(|file| may_match(segment, file, query))
                else {
                    continue;
                };
                if linked {
                    matched.push(id);
                }
                if dead || !in_page(file.name) {
                    if linked {
                        continue;
                    }
                    // Past the files below `dir`.
                    break;
                }
                if run.len() == wanted && !linked {
                    ends_list = false;
                    break;
                }
                if restamped {
                    run.extend(self.tree.get(file.name).map(Found::of));
                } else {
                    run.push(Found::from(NameOf::from(file)));
                }
            }
            runs.push(run);
        }
        matched.sort_unstable();
        runs.push(
            self.base
                .other_names_of(&matched)
                .into_iter()
                .filter(|name| in_page(&name.key.0) && self.tree.holds_linked(&name.key.0))
                .map(|name| Found::from(NameOf::from(name)))
                .collect(),
        );
        let indexed = merge_runs(runs);
        let (loose, loose_ends) = first_of(self.tree.loose_under(dir, last).map(Found::of), wanted);
        let mut page =
            merge_in_path_order(indexed.into_iter(), loose.into_iter(), |found| found.key);
        // The first `wanted` of the merged runs are among each run's first
        // `wanted`: a run cut there loses none of them.
        if page.len() > wanted {
            page.truncate(wanted);
            ends_list = false;
        }
        (page, ends_list && loose_ends)
    }

    /// Counts `files` looked up in the layers; drops the pages they touched
    /// every [`LOOKUPS_PER_PAGE_DROP`] files.
    pub(super) fn count_lookups(&mut self, files: usize) {
        self.looked_up += files;
        if self.looked_up >= LOOKUPS_PER_PAGE_DROP {
            self.drop_mapped_pages();
        }
    }

    /// Drops the pages of the layers mapped from the cache from the
    /// process (a search touches again only what it needs).
    pub(super) fn drop_mapped_pages(&mut self) {
        self.looked_up = 0;
        for layer in self.base.layers() {
            if layer.stored.is_some() {
                layer.segment.drop_resident_pages();
            }
        }
    }

    /// Takes back the id of the version a layer holds of `read`'s text, as
    /// the background's own reading would: when the read's stamp is the one
    /// the list waits to read and can be trusted to show the next change.
    pub(super) fn take_back(&mut self, read: &ReadWhole) -> bool {
        let Some(first_seen) = self.tree.awaited_since(&read.relative, read.stamp) else {
            return false;
        };
        if !read.stamp.is_trusted(first_seen, read.seen_at) {
            return false;
        }
        let versions = self.base.versions_of(&read.relative);
        let same = versions.iter().find(|(_, hash)| *hash == read.hash);
        if !versions.is_empty() {
            self.take_backs.record(same.is_some());
        }
        same.is_some_and(|&(id, _)| self.adopt_version(&read.relative, read.stamp, id))
    }

    /// Gives `relative`, read under `stamp` with the text of the version
    /// `id` of a layer, that id while the list waits for that stamp; its
    /// layer then holds one more file under a stamp it did not record.
    pub(super) fn adopt_version(&mut self, relative: &str, stamp: Stamp, id: u32) -> bool {
        if self.tree.adopt(relative, stamp, Content::Base(id))
            && let Some(layer) = self.base.layer_holding(id)
        {
            *self.restamped.entry(layer).or_default() += 1;
            true
        } else {
            false
        }
    }

    /// Takes out the layer `first_id` whole: every file that holds one of
    /// its ids, under any of its names, is read again, and no later read
    /// takes one of them back. How many files held one.
    pub(super) fn drop_layer(&mut self, first_id: u32) -> usize {
        let Some(layer) = self.base.remove(first_id) else {
            return 0;
        };
        let ids = layer.ids();
        let held = (0..layer.segment.file_count())
            .filter(|&local| {
                layer
                    .segment
                    .file(local)
                    .is_some_and(|file| self.tree.read_again_holding(file.name, first_id + local))
            })
            .count();
        let dropped = |id: u32| ids.contains(&id).then_some(None);
        for (name, old, _) in self.base.move_other_names(dropped) {
            self.tree.read_again_holding(&name, old);
        }
        self.tree.forget_ids(ids);
        self.restamped.remove(&first_id);
        held
    }

    /// The index and the file list, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.base.bytes() + self.tree.bytes()
    }

    /// Whether the model fits in `limit_bytes`; when it does not, the file
    /// list's empty slots go first, then the filters of the layers held on
    /// the heap (the trigrams alone still answer exactly).
    pub(super) fn fits(&mut self, limit_bytes: usize) -> bool {
        if self.bytes() > limit_bytes {
            self.tree.compact();
        }
        if self.bytes() > limit_bytes && !self.without_filters && self.drop_filters() {
            log_filters_left_out(limit_bytes);
        }
        self.bytes() <= limit_bytes
    }

    /// From now on files are indexed without filters, and the layers held
    /// on the heap are rewritten without theirs (their files keep their
    /// ids); true if any had some.
    pub(super) fn drop_filters(&mut self) -> bool {
        self.without_filters = true;
        let heap: Vec<u32> = self
            .base
            .layers()
            .iter()
            .filter(|layer| layer.segment.on_heap())
            .map(|layer| layer.first_id)
            .collect();
        let mut dropped = false;
        for first_id in heap {
            let Some(layer) = self.base.layer(first_id) else {
                continue;
            };
            let segment = layer.segment.clone();
            let input = Input {
                alive: vec![true; segment.file_count() as usize],
                stamps: Vec::new(),
                segment: &segment,
            };
            let rewritten = merge(self.base.root(), &[input], true, &mut || {})
                .and_then(|merged| Segment::from_bytes(merged.bytes, self.base.root()));
            if let Ok(rewritten) = rewritten
                && rewritten.bytes() < segment.bytes()
                && let Some(layer) = self.base.remove(first_id)
            {
                dropped = true;
                self.base.insert(Layer {
                    segment: Arc::new(rewritten),
                    ..layer
                });
            }
        }
        dropped
    }
}

/// Runs each in path order, as one: runs whose paths do not interleave
/// (a build's layers) are joined end to end, others merged.
fn merge_runs<'a>(mut runs: Vec<Vec<Found<'a>>>) -> Vec<Found<'a>> {
    runs.retain(|run| !run.is_empty());
    runs.sort_by(|a, b| walk::path_order(a[0].key, b[0].key));
    let apart = runs
        .windows(2)
        .all(|pair| walk::path_order(pair[0][pair[0].len() - 1].key, pair[1][0].key).is_lt());
    if apart {
        return runs.into_iter().flatten().collect();
    }
    let mut merged = Vec::with_capacity(runs.iter().map(Vec::len).sum());
    let mut heads: BinaryHeap<Reverse<(RunHead<'a>, usize)>> = BinaryHeap::new();
    let mut runs: Vec<std::vec::IntoIter<Found<'a>>> =
        runs.into_iter().map(Vec::into_iter).collect();
    for (at, run) in runs.iter_mut().enumerate() {
        if let Some(found) = run.next() {
            heads.push(Reverse((RunHead(found), at)));
        }
    }
    while let Some(Reverse((RunHead(found), at))) = heads.pop() {
        merged.push(found);
        if let Some(next) = runs[at].next() {
            heads.push(Reverse((RunHead(next), at)));
        }
    }
    merged
}

/// A found entry ordered by its path, as the walker orders paths.
struct RunHead<'a>(Found<'a>);

impl PartialEq for RunHead<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for RunHead<'_> {}

impl Ord for RunHead<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        walk::path_order(self.0.key, other.0.key)
    }
}

impl PartialOrd for RunHead<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Two sequences in path order (of the paths `key` gives), as one.
pub(super) fn merge_in_path_order<'k, T>(
    first: impl Iterator<Item = T>,
    second: impl Iterator<Item = T>,
    key: impl Fn(&T) -> &'k str,
) -> Vec<T> {
    let mut merged = Vec::new();
    let (mut first, mut second) = (first.peekable(), second.peekable());
    loop {
        let take_first = match (first.peek(), second.peek()) {
            (Some(a), Some(b)) => walk::path_order(key(a), key(b)).is_le(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return merged,
        };
        merged.extend(if take_first {
            first.next()
        } else {
            second.next()
        });
    }
}

/// Where the files of `ids` (local ids of `segment`, in path order) start
/// to sort after `from`.
fn first_past(segment: &Segment, ids: &[u32], from: &str) -> usize {
    ids.partition_point(|&local| {
        segment
            .file(local)
            .is_none_or(|file| walk::path_order(file.name, from).is_le())
    })
}

/// The first `wanted` items of `items`, and whether they are all of them.
fn first_of<T>(items: impl Iterator<Item = T>, wanted: usize) -> (Vec<T>, bool) {
    let mut items = items.peekable();
    let first: Vec<T> = items.by_ref().take(wanted).collect();
    let all = items.peek().is_none();
    (first, all)
}

/// An entry of the model, with what a listing of it needs.
pub(super) struct Found<'a> {
    pub(super) key: &'a str,
    pub(super) kind: EntryKind,
    pub(super) size: Option<u64>,
    pub(super) ino: Option<u64>,
    /// Changed and not read since (see [`Candidate::awaited`]).
    pub(super) awaited: bool,
}

impl<'a> From<NameOf<'a>> for Found<'a> {
    fn from(name: NameOf<'a>) -> Self {
        Found {
            key: name.name,
            kind: EntryKind::File,
            size: Some(name.size),
            ino: name.ino,
            awaited: false,
        }
    }
}

impl<'a> Found<'a> {
    pub(super) fn of((key, node): (&'a PathKey, &'a tree::Node)) -> Self {
        Self {
            key: &key.0,
            kind: node.kind,
            size: node.size(),
            ino: node.stamp.and_then(|stamp| stamp.inode()),
            awaited: matches!(node.content, Content::Unread | Content::Listed),
        }
    }

    /// What a scan needs of a candidate; awaited only while
    /// `may_take_back`: a layer may hold a version of it and hashing it
    /// pays (see [`Tree::has_dead`], [`TakeBacks::pay`]).
    pub(super) fn candidate(&self, depth_of_start: usize, may_take_back: bool) -> Candidate {
        Candidate {
            relative: self.key.into(),
            size: self.size,
            ino: self.ino,
            depth: depth(self.key) - depth_of_start,
            awaited: may_take_back && self.awaited,
        }
    }

    pub(super) fn entry(&self, root: &Path, depth_of_start: usize) -> Entry {
        let relative = self.key;
        Entry {
            relative: relative.to_string(),
            path: joined(root, relative),
            kind: self.kind,
            depth: depth(relative) - depth_of_start,
            size: self.size,
            ino: self.ino,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TakeBacks;

    #[test]
    fn calls_hash_what_they_read_until_reads_tell_and_while_one_in_four_gives_an_id_back() {
        let mut takes = TakeBacks::default();
        for _ in 0..TakeBacks::UNTOLD - 1 {
            takes.record(false);
        }
        assert!(takes.pay(), "too few reads to tell");
        takes.record(false);
        assert!(!takes.pay(), "none of 64 taken back");
        // Reads of a branch switched back: the old misses fade.
        for _ in 0..40 {
            takes.record(true);
        }
        assert!(takes.pay(), "{takes:?}");
        let mut mostly_new = TakeBacks::default();
        for read in 0..10_000 {
            mostly_new.record(read % 5 == 0);
        }
        assert!(!mostly_new.pay(), "{mostly_new:?}");
        assert!(mostly_new.tried < TakeBacks::WINDOW, "{mostly_new:?}");
    }
}
