//! The live file list: every entry the walker shows, in path order, with
//! the stamp (size, times, inode) it had when it was last looked at, and
//! for files what the index knows of their contents. `refresh` brings it up
//! to the tree on disk, from a list of changed paths or, when changes may
//! have been lost, by a stat sweep.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, btree_map};
use std::fs::Metadata;
use std::io::Read;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::ngram::FileGrams;
use crate::corpus::searchable::MAX_SEARCHED_BYTES;
use crate::security::PathGate;
use crate::walk::{self, EntryKind, Stamp};

mod refresh;

const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];
/// What one file-list entry costs besides its path, roughly.
const NODE_BYTES: usize = 128;
/// What listing a name of a file with several names costs besides the name.
const LINKED_NAME_BYTES: usize = 48;
/// What remembering a file that lost its base id costs besides its path.
const LOST_NAME_BYTES: usize = 48;

/// A path key ordered as the walker orders paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathKey(pub String);

impl Ord for PathKey {
    fn cmp(&self, other: &Self) -> Ordering {
        walk::path_order(&self.0, &other.0)
    }
}

impl PartialOrd for PathKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// What the index knows of a file's contents.
#[derive(Debug)]
pub enum Content {
    /// Indexed in the base shards under this id.
    Base(u32),
    /// Indexed since the build (or being indexed by it): its grams.
    Fresh(FileGrams),
    /// Over the searcher's size cap or binary by the searcher's own test,
    /// with a stamp that shows any change: the searcher would skip it, so
    /// it is never a candidate.
    Skipped,
    /// Not indexable (unreadable, or marked by a byte-order mark and not
    /// UTF-8 throughout): always a candidate.
    Always,
    /// Not read since it was last seen changed: a candidate the searcher
    /// verifies, as the scan would, until the background indexing reads
    /// it. A call never reads a file for the index.
    Unread,
}

/// An ignore file as last read, to tell a real edit from a touch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IgnoreFile {
    stamp: Option<Stamp>,
    text: Option<Vec<u8>>,
}

#[derive(Debug)]
pub struct Node {
    pub kind: EntryKind,
    pub stamp: Option<Stamp>,
    pub content: Content,
    /// False while the stamp cannot be trusted to show the next change.
    settled: bool,
    /// When this stamp was first seen: a stamp seen again unchanged a
    /// tick's doubt later is trusted (see [`Stamp::is_trusted`]).
    first_seen: SystemTime,
    /// For folders: their `.gitignore` and `.ignore`.
    ignores: Option<Box<[IgnoreFile; 2]>>,
    /// The name is not UTF-8, so the root-relative text does not lead back
    /// to the entry: the model cannot answer for a folder holding it.
    pub lossy: bool,
}

impl Node {
    pub fn size(&self) -> Option<u64> {
        (self.kind == EntryKind::File).then(|| self.stamp.map_or(0, |s| s.size()))
    }

    /// What a folder node knew of its stamps, and since when.
    fn dir_seen(&self) -> DirSeen {
        let ignores = self
            .ignores
            .as_deref()
            .map_or([None, None], |known| [known[0].stamp, known[1].stamp]);
        (self.stamp, ignores, self.first_seen)
    }
}

fn lstat(path: &Path) -> Option<Metadata> {
    std::fs::symlink_metadata(path).ok()
}

/// What is at `path` now (a final symlink not followed) and its stamp.
fn lstat_stamped(path: &Path) -> Option<(Metadata, Stamp)> {
    Stamp::lstat(path).ok()
}

/// The stamp of what is at `path` now, a final symlink not followed.
fn stamp_at(path: &Path) -> Option<Stamp> {
    lstat_stamped(path).map(|(_, stamp)| stamp)
}

fn kind_of(metadata: &Metadata) -> EntryKind {
    EntryKind::of(metadata.file_type())
}

/// What was known of a folder: its stamp, its ignore files' stamps, and
/// when those were first seen.
type DirSeen = (Option<Stamp>, [Option<Stamp>; 2], SystemTime);

/// A folder's stamp, its ignore files, whether all those stamps can be
/// trusted to show the next change, and when they were first seen (at
/// `earlier`'s time when they are the same as then).
fn dir_state(
    gate: &PathGate,
    dir: &Path,
    earlier: Option<DirSeen>,
) -> (Option<Stamp>, Box<[IgnoreFile; 2]>, bool, SystemTime) {
    let seen_at = SystemTime::now();
    let stamp = stamp_at(dir);
    let ignores = read_ignores(gate, dir);
    let stamps = [ignores[0].stamp, ignores[1].stamp];
    let first_seen = earlier
        .filter(|(known, known_ignores, _)| *known == stamp && *known_ignores == stamps)
        .map_or(seen_at, |(_, _, first_seen)| first_seen);
    let settled = stamp.is_some_and(|s| s.is_trusted(first_seen, seen_at))
        && stamps
            .iter()
            .all(|s| s.is_none_or(|s| s.is_trusted(first_seen, seen_at)));
    (stamp, ignores, settled, first_seen)
}

fn ignore_stamps(dir: &Path) -> [Option<Stamp>; 2] {
    IGNORE_FILES.map(|name| stamp_at(&dir.join(name)))
}

/// The ignore files' text, read through the gate's opener: compared only,
/// to see when the rules changed.
fn read_ignores(gate: &PathGate, dir: &Path) -> Box<[IgnoreFile; 2]> {
    Box::new(IGNORE_FILES.map(|name| {
        let path = dir.join(name);
        let stamp = stamp_at(&path);
        let text = stamp.and_then(|_| {
            let mut text = Vec::new();
            let file = gate.open_file(&path).ok()?;
            file.take(MAX_SEARCHED_BYTES).read_to_end(&mut text).ok()?;
            Some(text)
        });
        IgnoreFile { stamp, text }
    }))
}

/// The file list. Besides the entries it keeps what lets a call avoid
/// looking at every one of them: the entries whose stamps are not trusted
/// yet, the files whose contents are not in the base shards, and its size.
/// Every change goes through [`Tree::insert`] and [`Tree::remove`], which
/// keep those up to date.
pub struct Tree {
    gate: PathGate,
    root: PathBuf,
    nodes: BTreeMap<PathKey, Node>,
    root_stamp: Option<Stamp>,
    root_ignores: Box<[IgnoreFile; 2]>,
    root_settled: bool,
    root_first_seen: SystemTime,
    ledger: Ledger,
}

/// What the tree keeps besides its entries, updated with every change.
#[derive(Default)]
struct Ledger {
    /// Entries whose stamps cannot be trusted yet: every refresh looks at
    /// them again.
    unsettled: HashSet<String>,
    /// Files neither in the base shards nor skipped (indexed since the
    /// build, or never): every query looks at them.
    loose: BTreeSet<PathKey>,
    /// Entries whose names are not UTF-8.
    lossy: usize,
    /// The names of each file with several names (hard links), by identity.
    linked: HashMap<(u64, u64), Vec<String>>,
    /// Files the background indexing is to read: unread, with stamps
    /// that can be trusted.
    unread: BTreeSet<PathKey>,
    /// Files that held their base id (from the build) and hold it no
    /// longer: changed, gone, or re-read by a call during the build. The
    /// base names of all other files still stand for their file.
    base_lost: HashSet<String>,
    /// Paths, nodes and fresh trigram sets, in bytes.
    bytes: usize,
}

impl Ledger {
    fn lose_base(&mut self, relative: &str, lost: bool) {
        let cost = relative.len() + LOST_NAME_BYTES;
        if lost {
            if self.base_lost.insert(relative.to_string()) {
                self.bytes += cost;
            }
        } else if self.base_lost.remove(relative) {
            self.bytes -= cost;
        }
    }

    /// Adds `node` to the bookkeeping, or takes it out.
    fn account(&mut self, relative: &str, node: &Node, added: bool) {
        let identity = node
            .stamp
            .filter(|_| node.kind == EntryKind::File)
            .and_then(|stamp| stamp.linked_identity());
        let bytes = relative.len()
            + NODE_BYTES
            + match &node.content {
                Content::Fresh(grams) => grams.bytes(),
                _ => 0,
            }
            + identity.map_or(0, |_| relative.len() + LINKED_NAME_BYTES);
        let loose = node.kind == EntryKind::File
            && matches!(
                node.content,
                Content::Fresh(_) | Content::Always | Content::Unread
            );
        let unread = node.kind == EntryKind::File
            && node.settled
            && !node.lossy
            && matches!(node.content, Content::Unread);
        if let Some(identity) = identity {
            let names = self.linked.entry(identity).or_default();
            if added {
                names.push(relative.to_string());
            } else {
                names.retain(|name| name != relative);
                if names.is_empty() {
                    self.linked.remove(&identity);
                }
            }
        }
        if node.kind == EntryKind::File && matches!(node.content, Content::Base(_)) {
            // Only the build gives out base ids, and a node keeps its id
            // only while it stays the same node.
            self.lose_base(relative, !added);
        }
        if added {
            self.bytes += bytes;
            self.lossy += usize::from(node.lossy);
            if !node.settled {
                self.unsettled.insert(relative.to_string());
            }
            if loose {
                self.loose.insert(PathKey(relative.to_string()));
            }
            if unread {
                self.unread.insert(PathKey(relative.to_string()));
            }
        } else {
            self.bytes -= bytes;
            self.lossy -= usize::from(node.lossy);
            if !node.settled {
                self.unsettled.remove(relative);
            }
            if loose {
                self.loose.remove(&PathKey(relative.to_string()));
            }
            if unread {
                self.unread.remove(&PathKey(relative.to_string()));
            }
        }
    }
}

impl Tree {
    pub fn new(gate: &PathGate) -> Self {
        let root = gate.root();
        let (root_stamp, root_ignores, root_settled, root_first_seen) = dir_state(gate, root, None);
        Self {
            gate: gate.clone(),
            root: root.to_path_buf(),
            nodes: BTreeMap::new(),
            root_stamp,
            root_ignores,
            root_settled,
            root_first_seen,
            ledger: Ledger::default(),
        }
    }

    pub fn insert(&mut self, relative: String, node: Node) {
        match self.nodes.entry(PathKey(relative)) {
            btree_map::Entry::Occupied(mut slot) => {
                self.ledger.account(&slot.key().0, slot.get(), false);
                self.ledger.account(&slot.key().0, &node, true);
                slot.insert(node);
            }
            btree_map::Entry::Vacant(slot) => {
                self.ledger.account(&slot.key().0, &node, true);
                slot.insert(node);
            }
        }
    }

    pub fn remove(&mut self, relative: &str) -> Option<Node> {
        let node = self.nodes.remove(&PathKey(relative.to_string()))?;
        self.ledger.account(relative, &node, false);
        Some(node)
    }

    pub fn get(&self, relative: &str) -> Option<(&PathKey, &Node)> {
        self.nodes.get_key_value(&PathKey(relative.to_string()))
    }

    pub fn entry_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn folder_count(&self) -> usize {
        self.nodes
            .values()
            .filter(|node| node.kind == EntryKind::Dir)
            .count()
    }

    /// Paths, nodes and fresh trigram sets, in bytes.
    pub fn bytes(&self) -> usize {
        self.ledger.bytes
    }

    /// Whether some entry's name is not UTF-8.
    pub fn has_lossy(&self) -> bool {
        self.ledger.lossy > 0
    }

    pub fn path_of(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// A node for the walked entry at `real`, only looked at: a file's
    /// contents are [`Content::Unread`] until [`Tree::adopt`].
    pub fn make_node(&self, kind: EntryKind, relative: &str, real: &Path) -> Node {
        self.make_node_after(kind, relative, real, None)
    }

    /// [`Tree::make_node`] for an entry the tree knew as `earlier`: a stamp
    /// it had then too keeps the time it was first seen.
    fn make_node_after(
        &self,
        kind: EntryKind,
        relative: &str,
        real: &Path,
        earlier: Option<&Node>,
    ) -> Node {
        let path = self.path_of(relative);
        let seen_at = SystemTime::now();
        let earlier = earlier.filter(|node| node.kind == kind);
        let mut node = Node {
            kind,
            stamp: None,
            content: Content::Always,
            settled: false,
            first_seen: seen_at,
            ignores: None,
            lossy: !path.components().eq(real.components()),
        };
        if node.lossy {
            node.settled = true;
            return node;
        }
        match kind {
            EntryKind::File => {
                node.stamp = stamp_at(&path);
                let first_seen = earlier
                    .filter(|earlier| earlier.stamp == node.stamp)
                    .map_or(seen_at, |earlier| earlier.first_seen);
                node.settled = node
                    .stamp
                    .is_some_and(|s| s.is_trusted(first_seen, seen_at));
                node.first_seen = first_seen;
                node.content = Content::Unread;
            }
            EntryKind::Dir => {
                let known = earlier.map(Node::dir_seen);
                let (stamp, ignores, settled, first_seen) = dir_state(&self.gate, &path, known);
                node.stamp = stamp;
                node.ignores = Some(ignores);
                node.settled = settled;
                node.first_seen = first_seen;
            }
            EntryKind::Symlink | EntryKind::Other => {
                node.stamp = stamp_at(&path);
                node.settled = true;
            }
        }
        node
    }

    /// Takes what the background indexing learned of the file `relative`
    /// when it read the version the file list holds: same stamp, trusted,
    /// and not seen changed by a call since (true). Otherwise the file
    /// stays as the calls left it (false).
    pub fn adopt(&mut self, relative: &str, stamp: Stamp, content: Content) -> bool {
        let unchanged = self.get(relative).is_some_and(|(_, node)| {
            node.kind == EntryKind::File
                && node.settled
                && node.stamp == Some(stamp)
                && matches!(node.content, Content::Unread)
        });
        if unchanged && let Some(mut node) = self.remove(relative) {
            node.content = content;
            self.insert(relative.to_string(), node);
            return true;
        }
        false
    }

    /// Up to `max` files for the background indexing to read, in path
    /// order, with the stamps the file list holds and when they were
    /// first seen.
    pub fn unread(&self, max: usize) -> Vec<(String, Stamp, SystemTime)> {
        self.ledger
            .unread
            .iter()
            .filter_map(|key| {
                let node = self.nodes.get(key)?;
                Some((key.0.clone(), node.stamp?, node.first_seen))
            })
            .take(max)
            .collect()
    }

    /// Whether files wait for the background indexing.
    pub fn has_unread(&self) -> bool {
        !self.ledger.unread.is_empty()
    }

    /// Marks the file `relative` as no longer holding the base id the build
    /// gave it (see [`Tree::holds_base`]).
    pub fn lose_base(&mut self, relative: &str) {
        self.ledger.lose_base(relative, true);
    }

    /// Whether the file `relative`, given a base id by the build, still
    /// holds it: its base name then stands for it without a lookup.
    pub fn holds_base(&self, relative: &str) -> bool {
        self.ledger.base_lost.is_empty() || !self.ledger.base_lost.contains(relative)
    }

    /// Keys of `dir`'s descendants (all nodes for the root, `.`).
    fn descendants(&self, dir: &str) -> Vec<String> {
        self.under(dir).map(|(k, _)| k.0.clone()).collect()
    }

    /// Iterates `dir`'s descendants in path order.
    pub fn under<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = (&'a PathKey, &'a Node)> + 'a {
        self.nodes
            .range((after(dir), Bound::Unbounded))
            .take_while(move |(key, _)| is_below(&key.0, dir))
    }

    /// `dir`'s descendants down to `max_depth` levels below it, in path
    /// order, without visiting what lies deeper: each folder at the last
    /// level is stepped over in one lookup.
    pub fn under_to_depth<'a>(
        &'a self,
        dir: &'a str,
        max_depth: usize,
    ) -> impl Iterator<Item = (&'a PathKey, &'a Node)> + 'a {
        let depth_of_dir = depth(dir);
        let mut from = after(dir);
        std::iter::from_fn(move || {
            loop {
                let (key, node) = self
                    .nodes
                    .range((from.clone(), Bound::Unbounded))
                    .next()
                    .filter(|(key, _)| is_below(&key.0, dir))?;
                let level = depth(&key.0) - depth_of_dir;
                from = if level >= max_depth && node.kind == EntryKind::Dir {
                    // Sorts after every path below `key` (a name starting
                    // with U+10FFFF aside, which is then merely visited).
                    Bound::Excluded(PathKey(format!("{}/\u{10FFFF}", key.0)))
                } else {
                    Bound::Excluded(key.clone())
                };
                if level <= max_depth {
                    return Some((key, node));
                }
            }
        })
    }

    /// Files under `dir` that are not in the base shards nor skipped, in
    /// path order.
    pub fn loose_under<'a>(
        &'a self,
        dir: &'a str,
    ) -> impl Iterator<Item = (&'a PathKey, &'a Node)> + 'a {
        self.ledger
            .loose
            .range((after(dir), Bound::Unbounded))
            .take_while(move |key| is_below(&key.0, dir))
            .filter_map(|key| self.nodes.get_key_value(key))
    }

    pub fn is_dir(&self, relative: &str) -> bool {
        relative == "."
            || self
                .nodes
                .get(&PathKey(relative.to_string()))
                .is_some_and(|n| n.kind == EntryKind::Dir)
    }
}

/// Where the entries below `dir` start in path order: right after it.
fn after(dir: &str) -> Bound<PathKey> {
    match dir {
        "." => Bound::Unbounded,
        _ => Bound::Excluded(PathKey(dir.to_string())),
    }
}

/// Folders between `relative` and the root, plus one: `.` is 0, `a` is 1.
pub fn depth(relative: &str) -> usize {
    if relative == "." {
        0
    } else {
        relative.split('/').count()
    }
}

fn parent_of(relative: &str) -> &str {
    match relative.rfind('/') {
        Some(index) => &relative[..index],
        None => ".",
    }
}

pub fn is_below(path: &str, dir: &str) -> bool {
    dir == "."
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}
