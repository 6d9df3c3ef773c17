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
use super::watch::Changes;
use crate::corpus::searchable::MAX_SEARCHED_BYTES;
use crate::security::{PathGate, ResolvedPath};
use crate::walk::{self, Entry, EntryKind, Stamp, WalkOptions};

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

    /// Brings the tree up to the disk. Returns how many entries changed, or
    /// `None` when the tree kept changing under the refresh and the caller
    /// should not trust the model for this call.
    pub fn refresh(&mut self, changes: Changes, gate: &PathGate) -> Option<usize> {
        let mut work = Work::default();
        match changes {
            Changes::Paths(paths) => {
                for path in paths {
                    self.classify(&path, &mut work);
                }
                self.check_linked(&mut work);
                if work.names_unknown {
                    self.sweep(&mut work);
                }
            }
            Changes::Unknown => self.sweep(&mut work),
        }
        // Files and folders whose stamps could not be trusted are looked at again.
        for key in &self.ledger.unsettled {
            match self.get(key).map(|(_, node)| node.kind) {
                Some(EntryKind::Dir) => work.relist.push(key.clone()),
                Some(_) => work.files.push(key.clone()),
                None => {}
            }
        }
        if !self.root_settled {
            work.relist.push(".".to_string());
        }
        work.apply(self, gate)
    }

    /// Sorts one reported path into the work to do.
    fn classify(&self, path: &Path, work: &mut Work) {
        let Ok(rest) = path.strip_prefix(&self.root) else {
            return;
        };
        let relative = rest
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if relative.is_empty() {
            work.relist.push(".".to_string());
            return;
        }
        let parent = parent_of(&relative).to_string();
        let name = relative.rsplit('/').next().unwrap_or(&relative);
        if IGNORE_FILES.contains(&name) {
            work.relist.push(parent);
            return;
        }
        self.other_names(path, &relative, work);
        match self.nodes.get(&PathKey(relative.clone())) {
            Some(node) if node.kind == EntryKind::File => work.files.push(relative),
            // A reported folder stands for itself and everything below it
            // (moved away and back, say): walk all of it again.
            Some(node) if node.kind == EntryKind::Dir => {
                work.rewalk.push(relative);
                work.relist.push(parent);
            }
            _ => {
                // New, gone, or below a folder the tree does not know: the
                // nearest known folder lists its children again.
                let mut folder = parent.as_str();
                while !self.is_dir(folder) {
                    folder = parent_of(folder);
                }
                work.relist.push(folder.to_string());
            }
        }
    }

    /// A file reported changed that has other names: the watcher reports
    /// only the name written through, so the others are looked at too. When
    /// some of its names are not in the tree as names of this file (a link
    /// made since, or one outside the project), every entry is.
    fn other_names(&self, path: &Path, relative: &str, work: &mut Work) {
        let Some((_, stamp)) = lstat_stamped(path).filter(|(metadata, _)| metadata.is_file())
        else {
            return;
        };
        let Some(identity) = stamp.linked_identity() else {
            return;
        };
        let names = self
            .ledger
            .linked
            .get(&identity)
            .map_or(&[][..], Vec::as_slice);
        let known = names.len() + usize::from(!names.iter().any(|name| name == relative));
        if (known as u64) < stamp.links() {
            work.names_unknown = true;
        } else {
            work.files.extend(names.iter().cloned());
        }
    }

    /// Files with several names: a write through a name the watcher does
    /// not see (in a skipped folder, outside the root, or removed or moved
    /// out before this call) changes what their names in the tree hold,
    /// unreported. Their stamps are compared at every refresh; a changed
    /// ignore file lists its folder again.
    fn check_linked(&self, work: &mut Work) {
        for name in self.ledger.linked.values().flatten() {
            let Some((_, node)) = self.get(name) else {
                continue;
            };
            if stamp_at(&self.path_of(name)) == node.stamp {
                continue;
            }
            if IGNORE_FILES.contains(&name.rsplit('/').next().unwrap_or_default()) {
                work.relist.push(parent_of(name).to_string());
            }
            work.files.push(name.clone());
        }
    }

    /// Compares every entry with the disk.
    fn sweep(&self, work: &mut Work) {
        let ignores_changed = |dir: &Path, known: &[IgnoreFile; 2]| {
            ignore_stamps(dir) != [known[0].stamp, known[1].stamp]
        };
        if stamp_at(&self.root) != self.root_stamp
            || ignores_changed(&self.root, &self.root_ignores)
        {
            work.relist.push(".".to_string());
        }
        for (key, node) in self.nodes.iter().filter(|(_, node)| !node.lossy) {
            let path = self.path_of(&key.0);
            let current = lstat_stamped(&path);
            let same_kind =
                current.as_ref().map(|(metadata, _)| kind_of(metadata)) == Some(node.kind);
            if !same_kind {
                work.relist.push(parent_of(&key.0).to_string());
                continue;
            }
            if let Some(ignores) = &node.ignores
                && ignores_changed(&self.path_of(&key.0), ignores)
            {
                work.relist.push(key.0.clone());
            }
            let stamp = current.map(|(_, stamp)| stamp);
            if stamp == node.stamp {
                continue;
            }
            if IGNORE_FILES.contains(&key.0.rsplit('/').next().unwrap_or_default()) {
                work.relist.push(parent_of(&key.0).to_string());
            }
            match node.kind {
                EntryKind::File => work.files.push(key.0.clone()),
                EntryKind::Dir => work.relist.push(key.0.clone()),
                EntryKind::Symlink | EntryKind::Other => {
                    work.relist.push(parent_of(&key.0).to_string())
                }
            }
        }
    }

    fn ignores_of(&self, dir: &str) -> Option<&[IgnoreFile; 2]> {
        if dir == "." {
            return Some(&self.root_ignores);
        }
        self.nodes
            .get(&PathKey(dir.to_string()))
            .and_then(|n| n.ignores.as_deref())
    }

    fn remove_subtree(&mut self, dir: &str) -> HashMap<String, Node> {
        let mut removed = HashMap::new();
        for key in self.descendants(dir) {
            if let Some(node) = self.remove(&key) {
                removed.insert(key, node);
            }
        }
        removed
    }

    /// The folder as a walk starts from it, when it is still a plain folder
    /// at its own path (not replaced by a symlink) and not deny-listed.
    /// Not through [`PathGate::resolve`]: its bounds (at most 256 names)
    /// are for client input, and the tree holds whatever the walker
    /// reaches from the root, as deep as the file system lets a path go.
    fn resolve_dir(&self, gate: &PathGate, dir: &str) -> Option<ResolvedPath> {
        let expected = if dir == "." {
            self.root.clone()
        } else {
            self.path_of(dir)
        };
        let real = dunce::canonicalize(&expected).ok()?;
        (real == expected && !gate.is_denied(dir) && lstat(&expected).is_some_and(|m| m.is_dir()))
            .then(|| ResolvedPath {
                relative: dir.to_string(),
                real,
            })
    }

    /// Walks `dir` again from scratch, keeping what is known of entries
    /// whose stamps did not change. Returns the entries changed.
    fn rewalk(&mut self, gate: &PathGate, dir: &str, work: &mut Work) -> usize {
        let mut old = self.remove_subtree(dir);
        let Some(start) = self.resolve_dir(gate, dir) else {
            // Gone or replaced: its parent lists what stands there now.
            self.forget_dir(dir);
            if dir != "." {
                work.relist.push(parent_of(dir).to_string());
            }
            return old.len() + 1;
        };
        // A folder that cannot be read shows empty, as the walker shows it.
        let entries = walk::walk(gate, &start, None, &WalkOptions::default()).unwrap_or_default();
        let mut changed = old.len().abs_diff(entries.len());
        for entry in entries {
            let node = self.reuse_or_make(old.remove(&entry.relative), &entry, &mut changed);
            self.insert(entry.relative, node);
        }
        self.restamp_dir(dir);
        changed
    }

    fn reuse_or_make(&self, old: Option<Node>, entry: &Entry, changed: &mut usize) -> Node {
        if let Some(node) = &old
            && node.kind == entry.kind
            && node.settled
            && stamp_at(&entry.path) == node.stamp
        {
            return old.expect("matched above");
        }
        *changed += 1;
        self.make_node_after(entry.kind, &entry.relative, &entry.path, old.as_ref())
    }

    /// A folder that is gone or can no longer be walked: it and everything
    /// below leave the tree, and its parent is listed again.
    fn forget_dir(&mut self, dir: &str) {
        if dir == "." {
            for key in self.descendants(".") {
                self.remove(&key);
            }
            return;
        }
        self.remove(dir);
    }

    fn restamp_dir(&mut self, dir: &str) {
        let path = if dir == "." {
            self.root.clone()
        } else {
            self.path_of(dir)
        };
        let earlier = if dir == "." {
            let ignores = [self.root_ignores[0].stamp, self.root_ignores[1].stamp];
            Some((self.root_stamp, ignores, self.root_first_seen))
        } else {
            self.get(dir).map(|(_, node)| node.dir_seen())
        };
        let (stamp, ignores, settled, first_seen) = dir_state(&self.gate, &path, earlier);
        if dir == "." {
            self.root_stamp = stamp;
            self.root_settled = settled;
            self.root_ignores = ignores;
            self.root_first_seen = first_seen;
        } else if let Some(mut node) = self.remove(dir) {
            node.stamp = stamp;
            node.settled = settled;
            node.ignores = Some(ignores);
            node.first_seen = first_seen;
            self.insert(dir.to_string(), node);
        }
    }

    /// Lists `dir`'s children again; an edited ignore file re-walks it.
    fn relist(&mut self, gate: &PathGate, dir: &str, work: &mut Work) -> usize {
        let path = if dir == "." {
            self.root.clone()
        } else {
            self.path_of(dir)
        };
        if self
            .ignores_of(dir)
            .is_some_and(|known| *known != *read_ignores(&self.gate, &path))
        {
            work.rewalked.push(dir.to_string());
            // The rules changed even when no entry did.
            return 1 + self.rewalk(gate, dir, work);
        }
        let Some(start) = self.resolve_dir(gate, dir) else {
            let removed = self.remove_subtree(dir).len();
            self.forget_dir(dir);
            if dir != "." {
                work.relist.push(parent_of(dir).to_string());
            }
            return removed + 1;
        };
        // A folder that cannot be read shows empty, as the walker shows it.
        let children =
            walk::walk(gate, &start, Some(1), &WalkOptions::default()).unwrap_or_default();
        let mut old: HashMap<String, EntryKind> = self
            .under_to_depth(dir, 1)
            .map(|(k, n)| (k.0.clone(), n.kind))
            .collect();
        let mut changed = 0;
        for child in children {
            match old.remove(&child.relative) {
                Some(kind) if kind == child.kind => match kind {
                    EntryKind::File => work.files.push(child.relative),
                    EntryKind::Dir => {}
                    EntryKind::Symlink | EntryKind::Other => {
                        let stamp = stamp_at(&child.path);
                        if let Some(node) = self.nodes.get_mut(&PathKey(child.relative)) {
                            node.stamp = stamp;
                        }
                    }
                },
                previous => {
                    changed += 1;
                    if previous.is_some() {
                        self.remove_subtree(&child.relative);
                    }
                    let node = self.make_node(child.kind, &child.relative, &child.path);
                    self.insert(child.relative.clone(), node);
                    if child.kind == EntryKind::Dir {
                        changed += self.rewalk(gate, &child.relative, work);
                    }
                }
            }
        }
        for (gone, _) in old {
            changed += self.remove_subtree(&gone).len() + 1;
            self.remove(&gone);
        }
        self.restamp_dir(dir);
        changed
    }

    /// Re-reads a file whose stamp changed or could not be trusted.
    fn recheck_file(&mut self, relative: &str, work: &mut Work) -> usize {
        let Some(node) = self.nodes.get(&PathKey(relative.to_string())) else {
            return 0;
        };
        if node.lossy {
            return 0;
        }
        let path = self.path_of(relative);
        let current = lstat_stamped(&path);
        if current.as_ref().map(|(metadata, _)| kind_of(metadata)) != Some(EntryKind::File) {
            work.relist.push(parent_of(relative).to_string());
            return 0;
        }
        if node.settled && current.map(|(_, stamp)| stamp) == node.stamp {
            return 0;
        }
        let fresh = self.make_node_after(EntryKind::File, relative, &path, Some(node));
        self.insert(relative.to_string(), fresh);
        1
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

/// What one refresh has to look at again.
#[derive(Default)]
struct Work {
    /// A changed file has names the tree cannot tell: sweep.
    names_unknown: bool,
    files: Vec<String>,
    relist: Vec<String>,
    rewalk: Vec<String>,
    rewalked: Vec<String>,
}

/// Rounds of listing and re-reading one refresh may take: each round's
/// findings (a vanished file's folder) feed the next.
const MAX_ROUNDS: usize = 4;

impl Work {
    fn apply(mut self, tree: &mut Tree, gate: &PathGate) -> Option<usize> {
        let mut changed = 0;
        for _ in 0..MAX_ROUNDS {
            changed += self.round(tree, gate);
            if self.relist.is_empty() && self.files.is_empty() && self.rewalk.is_empty() {
                return Some(changed);
            }
        }
        None
    }

    fn round(&mut self, tree: &mut Tree, gate: &PathGate) -> usize {
        let mut changed = 0;
        // Listing a folder can reveal more folders to list (a vanished
        // child's parent): loop until nothing is left.
        let mut listed: Vec<String> = Vec::new();
        let mut rewalk = std::mem::take(&mut self.rewalk);
        rewalk.sort_by(|a, b| walk::path_order(a, b));
        rewalk.dedup();
        for dir in rewalk {
            if self.rewalked.iter().any(|r| is_below(&dir, r)) {
                continue;
            }
            if dir != "." && !tree.is_dir(&dir) {
                self.relist.push(parent_of(&dir).to_string());
                continue;
            }
            self.rewalked.push(dir.clone());
            changed += tree.rewalk(gate, &dir, self);
        }
        loop {
            let mut pending = std::mem::take(&mut self.relist);
            if pending.is_empty() {
                break;
            }
            pending.sort_by(|a, b| walk::path_order(a, b));
            pending.dedup();
            for dir in pending {
                if listed.contains(&dir)
                    || self.rewalked.iter().any(|r| is_below(&dir, r) && r != &dir)
                {
                    continue;
                }
                if dir != "." && !tree.is_dir(&dir) {
                    // Gone since it was queued: its parent lists it out.
                    self.relist.push(parent_of(&dir).to_string());
                    listed.push(dir);
                    continue;
                }
                changed += tree.relist(gate, &dir, self);
                listed.push(dir);
            }
        }
        let mut files = std::mem::take(&mut self.files);
        files.sort_by(|a, b| walk::path_order(a, b));
        files.dedup();
        for file in files {
            changed += tree.recheck_file(&file, self);
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::build::list;
    use crate::index::pacer::Pacer;
    use crate::index::testing::generated_tree;
    use crate::index::watch::Changes;
    use crate::index::{Shared, State};
    use std::fs;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::time::Duration;

    #[test]
    fn reported_paths_are_applied_exactly() {
        let (_dir, gate) = generated_tree(30, 4);
        std::thread::sleep(Duration::from_millis(250));
        let shared = Shared {
            gate: gate.clone(),
            limit_bytes: usize::MAX,
            change_notifications: true,
            state: Mutex::new(State::Building),
            unread: std::sync::Condvar::new(),
            cancelled: AtomicBool::new(false),
            building: AtomicBool::new(true),
            calls: AtomicUsize::new(0),
            cache: std::sync::OnceLock::new(),
        };
        let (mut live, _) = list(&shared, &mut Pacer::default()).unwrap();
        let root = gate.root().to_path_buf();
        // A folder moved away and back, with an edit while it was away: the
        // feed reports the folder's two paths, not the file inside.
        fs::rename(root.join("d1"), root.join("away")).unwrap();
        fs::write(root.join("away/e1/f1.txt"), "moved_edit").unwrap();
        fs::rename(root.join("away"), root.join("d1")).unwrap();
        fs::write(root.join("d2/new.txt"), "x").unwrap();
        fs::remove_file(root.join("d3/e0/f3.txt")).unwrap();
        let changes = Changes::Paths(vec![
            root.join("away"),
            root.join("d1"),
            root.join("d2/new.txt"),
            root.join("d3/e0/f3.txt"),
        ]);
        live.tree.refresh(changes, &gate).unwrap();
        let (_, edited) = live.tree.get("d1/e1/f1.txt").unwrap();
        assert!(!matches!(edited.content, Content::Base(_)));
        let modelled: Vec<String> = live.tree.under(".").map(|(k, _)| k.0.clone()).collect();
        let start = gate.resolve(".").unwrap();
        let walked: Vec<String> = walk::walk(&gate, &start, None, &WalkOptions::default())
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect();
        assert_eq!(modelled, walked);
    }
}
