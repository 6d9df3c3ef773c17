//! The ready model: the file list, the base index, the change feed and
//! the indexer that keeps changed files' grams, and how it answers which
//! files may hold a query.

use std::path::{Path, PathBuf};

use super::base::{BaseIndex, NameOf};
use super::ngram::GramBits;
use super::os::log_filters_left_out;
use super::plan::Query;
use super::postings::{PostingCache, PostingLists, evaluate};
use super::tree::{self, Content, PathKey, Tree, depth};
use super::watch::ChangeWatcher;
use crate::walk::{self, Entry, EntryKind};

pub(super) struct Live {
    pub(super) tree: Tree,
    /// Changes were lost and no sweep has caught up with them yet.
    pub(super) sweep_owed: bool,
    pub(super) base: BaseIndex,
    pub(super) watcher: ChangeWatcher,
    /// Files are indexed without long-gram filters: they were dropped to
    /// stay within the memory limit.
    pub(super) without_filters: bool,
}

impl Live {
    /// Files under `dir` that may hold a match of `query`, in path order:
    /// the base files the posting lists name, merged with the loose files
    /// (indexed since the build, or never) that may match. Skipped files
    /// never are; a file's content decides, never a walk of the list.
    pub(super) fn candidates<'a>(&'a self, dir: &'a str, query: &Query) -> Vec<Found<'a>> {
        if *query == Query::All {
            return self
                .tree
                .under(dir)
                .filter(|(_, node)| {
                    node.kind == EntryKind::File && !matches!(node.content, Content::Skipped)
                })
                .map(Found::of)
                .collect();
        }
        // The filters first: they judge a file once, whatever its names.
        let mut ids = self.base_matches(query);
        ids.retain(|&id| self.base.may_match(id, query));
        let first_names = ids.iter().filter_map(|&id| self.base.name(id));
        let names = merge_in_path_order(
            first_names,
            self.base.other_names_of(&ids).into_iter().map(NameOf::from),
            |name| name.name,
        );
        let base = names
            .into_iter()
            .filter(|name| {
                // Changed or gone since the build: the loose files or nothing.
                tree::is_below(name.name, dir)
                    && name.name != dir
                    && self.tree.holds_base(name.name)
            })
            .map(|name| Found {
                key: name.name,
                kind: EntryKind::File,
                size: Some(name.size),
                ino: name.ino,
            });
        let loose = self
            .tree
            .loose_under(dir)
            .filter(|(_, node)| match &node.content {
                Content::Fresh(grams) => {
                    let filter = grams.filter.as_ref().map(|filter| filter as &dyn GramBits);
                    query.may_match(Some(&grams.trigrams), filter)
                }
                _ => true,
            })
            .map(Found::of);
        merge_in_path_order(base, loose, |found| found.key)
    }

    /// The base ids whose trigrams satisfy `query`, sorted (their filters
    /// not consulted yet).
    pub(super) fn base_matches(&self, query: &Query) -> Vec<u32> {
        let shard = &self.base.shard;
        evaluate(query, shard, &mut PostingCache::default())
            .unwrap_or_else(|| shard.id_range().collect())
    }

    /// The index and the file list, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.base.bytes() + self.tree.bytes()
    }

    /// Whether the model fits in `limit_bytes`; the build's filters go
    /// first when it does not (the trigrams alone still answer exactly).
    pub(super) fn fits(&mut self, limit_bytes: usize) -> bool {
        if self.bytes() > limit_bytes && self.base.drop_filters() {
            log_filters_left_out(limit_bytes);
            self.without_filters = true;
        }
        self.bytes() <= limit_bytes
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

/// An entry of the model, with what a listing of it needs.
pub(super) struct Found<'a> {
    pub(super) key: &'a str,
    pub(super) kind: EntryKind,
    pub(super) size: Option<u64>,
    pub(super) ino: Option<u64>,
}

impl<'a> Found<'a> {
    pub(super) fn of((key, node): (&'a PathKey, &'a tree::Node)) -> Self {
        Self {
            key: &key.0,
            kind: node.kind,
            size: node.size(),
            ino: node.stamp.and_then(|stamp| stamp.inode()),
        }
    }

    pub(super) fn entry(&self, root: &Path, depth_of_start: usize) -> Entry {
        let relative = self.key;
        // One allocation (a join grows the root's copy).
        let mut path = PathBuf::with_capacity(root.as_os_str().len() + 1 + relative.len());
        path.push(root);
        path.push(relative);
        Entry {
            relative: relative.to_string(),
            path,
            kind: self.kind,
            depth: depth(relative) - depth_of_start,
            size: self.size,
            ino: self.ino,
        }
    }
}
