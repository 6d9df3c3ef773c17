//! The one walker behind search, find and list, so that no tool can show
//! what another hides.
//!
//! It applies, in this order: the built-in skip list (`.git`, `.venv`,
//! `__pycache__`, `node_modules`, `target`, `*.egg-info`), `.gitignore` and
//! `.ignore` files (also those between the root and the starting folder,
//! but never above the root), and the deny-list. Symlinks are reported but
//! never followed, so a walk cannot leave the root. Unreadable or vanishing
//! entries are skipped. With `include_ignored` the skip list and the ignore
//! files are lifted; the deny-list never is.
//!
//! Every walk watches its [`Cancel`] flag between entries, so a cancelled
//! call stops walking at once.
//!
//! The walker reads folders by name, so a folder swapped for a symlink to
//! an outside folder after it was listed would be read through the link.
//! Every folder is therefore confirmed through the gate's root handle before
//! it is descended, and every entry before it is reported (or, for files the
//! search opens, when it is opened): the entry found there without following
//! any symlink must be the one the walker listed (same inode). Names read
//! through a swapped folder fail that test and are dropped.

use std::borrow::Cow;
use std::fs::{File, Metadata};
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, mpsc};

use ignore::{DirEntry, WalkBuilder, WalkState};

use crate::cancel::Cancel;
use crate::security::{LastFolder, PathGate, ResolvedPath};

mod ignore_rules;
mod stamp;

pub use stamp::Stamp;

/// Folder names never descended into (`.git` is also on the deny-list).
const SKIPPED_DIRS: &[&str] = &[".git", ".venv", "__pycache__", "node_modules", "target"];
const SKIPPED_DIR_SUFFIX: &str = ".egg-info";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// What a walk includes, and the flag that stops it.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Lift `.gitignore`/`.ignore` and the built-in skip list (never the
    /// deny-list).
    pub include_ignored: bool,
    pub cancel: Cancel,
}

impl EntryKind {
    /// The kind of an entry as seen without following a symlink.
    pub fn of(file_type: std::fs::FileType) -> Self {
        if file_type.is_symlink() {
            Self::Symlink
        } else if file_type.is_dir() {
            Self::Dir
        } else if file_type.is_file() {
            Self::File
        } else {
            Self::Other
        }
    }
}

#[derive(Debug, Clone)]
pub struct Entry {
    /// Root-relative, `/`-separated.
    pub relative: String,
    pub path: PathBuf,
    pub kind: EntryKind,
    /// Depth below the walk's starting folder (its children are at 1).
    pub depth: usize,
    /// Size in bytes, for regular files; `None` from [`walk_sorted`], whose
    /// caller opens each file and asks the open file instead.
    pub size: Option<u64>,
    /// The inode the walker listed, where the platform has one; the file
    /// opened by [`Entry::open`] must be this one.
    pub ino: Option<u64>,
}

impl Entry {
    /// Opens this file through the gate's root handle, with its metadata,
    /// refusing it when what is there now is not the file the walk listed.
    pub fn open(&self, gate: &PathGate) -> io::Result<(File, Metadata)> {
        let (file, metadata) = gate.open_file_with_metadata(&self.path)?;
        #[cfg(unix)]
        if let Some(listed) = self.ino {
            use std::os::unix::fs::MetadataExt;
            if metadata.ino() != listed {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "the file changed since it was listed",
                ));
            }
        }
        Ok((file, metadata))
    }
}

/// Walks `start` (a folder the gate resolved) down to `max_depth` levels and
/// returns every visible entry in [`path_order`]. The starting folder itself
/// is not returned. Runs on several threads.
pub fn walk(
    gate: &PathGate,
    start: &ResolvedPath,
    max_depth: Option<usize>,
    options: &WalkOptions,
) -> io::Result<Vec<Entry>> {
    walk_picked(gate, start, max_depth, options, &|_, _| true, usize::MAX)
}

/// Which entries a caller wants, given the root-relative path and kind.
pub type Keep<'a> = dyn Fn(&str, EntryKind) -> bool + Sync + 'a;

/// The first `wanted` visible entries below `start` (down to `max_depth`
/// levels) that `keep` accepts, in [`path_order`], with sizes for files.
///
/// For find and list before the tree model is ready. Entries are confirmed
/// (see the module notes) only once picked, in path order (one folder
/// handle serves all of a folder's entries): a find that reports 1,000 of
/// 112,000 files looks at 1,000 through the root handle, not 112,000.
pub fn walk_picked(
    gate: &PathGate,
    start: &ResolvedPath,
    max_depth: Option<usize>,
    options: &WalkOptions,
    keep: &Keep<'_>,
    wanted: usize,
) -> io::Result<Vec<Entry>> {
    ensure_readable(start)?;
    let (sender, receiver) = mpsc::channel();
    let rules = rule_tree(gate, start, options.include_ignored);
    builder(
        gate,
        start,
        max_depth,
        rules.clone(),
        Folders::ConfirmedOnEntry,
    )
    // One folder's listing has nothing to share out: one worker, not one
    // a core.
    .threads(if max_depth.is_some_and(|depth| depth <= 1) {
        1
    } else {
        worker_threads()
    })
    .build_parallel()
    .run(|| {
        let mut firsts = Firsts::new(wanted, sender.clone());
        let gate = gate.clone();
        let rules = rules.clone();
        let cancel = options.cancel.clone();
        Box::new(move |result| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(found) = result else {
                return WalkState::Continue;
            };
            if found.depth() > 0 && found.file_type().is_some_and(|t| t.is_dir()) {
                let at_max_depth = max_depth.is_some_and(|max| found.depth() >= max);
                if !entered(&gate, &found, rules.as_deref().filter(|_| !at_max_depth)) {
                    return WalkState::Skip;
                }
            }
            let keep = |relative: &str, kind| keep(relative, kind) && firsts.may_hold(relative);
            if let Some(entry) = to_entry(&found, &gate, &keep) {
                firsts.push(entry);
            }
            WalkState::Continue
        })
    });
    drop(sender);
    let mut entries = Vec::new();
    let mut some_left_out = false;
    for (held, left_out) in receiver {
        entries.extend(held);
        some_left_out |= left_out;
    }
    entries.sort_unstable_by(|a, b| path_order(&a.relative, &b.relative));
    let mut last = LastFolder::default();
    let confirmed: Vec<Entry> = entries
        .into_iter()
        .filter_map(|mut entry| {
            // A folder was confirmed before the walk descended into it; a
            // file that vanished or was swapped since it was listed is
            // dropped.
            if entry.kind != EntryKind::Dir {
                let stat = gate.entry_stat_in(&entry.path, &mut last).ok()?;
                #[cfg(unix)]
                if entry.ino != Some(stat.ino) {
                    return None;
                }
                entry.size = (entry.kind == EntryKind::File).then_some(stat.size);
            }
            Some(entry)
        })
        .take(wanted)
        .collect();
    if confirmed.len() < wanted && some_left_out {
        // Entries dropped above left room for ones a thread let go: walk
        // again holding every match (only when files vanish mid-walk).
        let mut all = walk_picked(gate, start, max_depth, options, keep, usize::MAX)?;
        all.truncate(wanted);
        return Ok(all);
    }
    Ok(confirmed)
}

/// Every visible entry below `start`, as [`walk`] finds them, made into a
/// `T` on the walking threads: for a caller that needs something of every
/// entry (the tree model's file list: a `stat` each), which
/// [`walk_sorted`] would do on one thread. `per_thread` gives each walking
/// thread its `make`, which gets the root-relative path, the path and the
/// kind; an entry it returns `None` for is left out. Folders are confirmed
/// through the root handle before their entries are looked at (see the
/// module notes). Returns one part per thread, each sorted in
/// [`path_order`] on its thread; together they hold each entry once.
pub fn walk_made<T, Make>(
    gate: &PathGate,
    start: &ResolvedPath,
    options: &WalkOptions,
    per_thread: &(dyn Fn() -> Make + Sync),
) -> io::Result<Vec<Vec<(String, T)>>>
where
    T: Send,
    Make: FnMut(&str, &Path, EntryKind) -> Option<T> + Send,
{
    ensure_readable(start)?;
    let (sender, receiver) = mpsc::channel();
    let rules = rule_tree(gate, start, options.include_ignored);
    builder(gate, start, None, rules.clone(), Folders::ConfirmedOnEntry)
        .threads(worker_threads())
        .build_parallel()
        .run(|| {
            let mut made = Made(Vec::new(), sender.clone());
            let mut make = per_thread();
            let gate = gate.clone();
            let rules = rules.clone();
            let cancel = options.cancel.clone();
            Box::new(move |result| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(found) = result else {
                    return WalkState::Continue;
                };
                let Some(file_type) = found.file_type().filter(|_| found.depth() > 0) else {
                    return WalkState::Continue;
                };
                if file_type.is_dir() && !entered(&gate, &found, rules.as_deref()) {
                    return WalkState::Skip;
                }
                let Some(relative) = relative_to(gate.root(), found.path()) else {
                    return WalkState::Continue;
                };
                if !file_type.is_dir() && gate.is_denied_entry(&relative) {
                    return WalkState::Continue;
                }
                if let Some(value) = make(&relative, found.path(), EntryKind::of(file_type)) {
                    made.0.push((relative.into_owned(), value));
                }
                WalkState::Continue
            })
        });
    drop(sender);
    let parts = receiver
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect();
    if options.cancel.is_cancelled() {
        return Err(io::Error::new(
            io::ErrorKind::Interrupted,
            "the walk was cancelled",
        ));
    }
    Ok(parts)
}

/// What one thread of [`walk_made`] made, sorted on that thread (in place:
/// the entries may be most of what the caller will hold) and sent to the
/// caller when the thread ends.
struct Made<T>(Vec<(String, T)>, mpsc::Sender<Vec<(String, T)>>);

impl<T> Drop for Made<T> {
    fn drop(&mut self) {
        let mut made = std::mem::take(&mut self.0);
        made.sort_unstable_by(|a, b| path_order(&a.0, &b.0));
        // The receiver outlives the walk; a send cannot fail.
        let _ = self.1.send(made);
    }
}

/// The first `wanted` entries (in [`path_order`]) that one thread of a
/// parallel walk picked; sent to the caller when the thread ends. An entry
/// after all of them is let go before it is even built, so a find of
/// `**/*.rs` in a large tree holds `wanted` entries per thread, not every
/// match.
struct Firsts {
    /// A max-heap: the last of the first `wanted` on top.
    held: std::collections::BinaryHeap<ByPath>,
    wanted: usize,
    /// True once an entry was let go.
    left_out: bool,
    sender: mpsc::Sender<(Vec<Entry>, bool)>,
}

impl Firsts {
    fn new(wanted: usize, sender: mpsc::Sender<(Vec<Entry>, bool)>) -> Self {
        Firsts {
            held: std::collections::BinaryHeap::new(),
            wanted,
            left_out: false,
            sender,
        }
    }

    /// False when an entry at `relative` would be let go at once.
    fn may_hold(&self, relative: &str) -> bool {
        self.held.len() < self.wanted
            || self
                .held
                .peek()
                .is_some_and(|last| path_order(relative, &last.0.relative).is_lt())
    }

    fn push(&mut self, entry: Entry) {
        self.held.push(ByPath(entry));
        if self.held.len() > self.wanted {
            self.held.pop();
        }
        // Once full, every later match is held or let go in its place.
        self.left_out |= self.held.len() == self.wanted;
    }
}

impl Drop for Firsts {
    fn drop(&mut self) {
        let held = std::mem::take(&mut self.held).into_vec();
        let entries = held.into_iter().map(|ByPath(entry)| entry).collect();
        // The receiver outlives the walk; a send cannot fail.
        let _ = self.sender.send((entries, self.left_out));
    }
}

/// An entry ordered by its path, in [`path_order`].
struct ByPath(Entry);

impl PartialEq for ByPath {
    fn eq(&self, other: &Self) -> bool {
        self.0.relative == other.0.relative
    }
}

impl Eq for ByPath {}

impl PartialOrd for ByPath {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByPath {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        path_order(&self.0.relative, &other.0.relative)
    }
}

/// True when the walk `options` describe finds a file under `start`; stops
/// at the first. A search that found no file to read uses it to say why.
pub fn holds_files(gate: &PathGate, start: &ResolvedPath, options: &WalkOptions) -> bool {
    let mut found = false;
    let _ = walk_sorted(gate, start, None, options, |entry| {
        found = entry.kind == EntryKind::File;
        if found {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    found
}

/// A starting folder that cannot be read is an error, not an empty answer;
/// unreadable folders further down are skipped.
pub fn ensure_readable(start: &ResolvedPath) -> io::Result<()> {
    if start.real.is_dir() {
        std::fs::read_dir(&start.real)?;
    }
    Ok(())
}

/// Visits every visible entry below `start` (down to `max_depth` levels) in
/// [`path_order`], one at a time, until `visit` breaks: the search stops walking once it has enough.
/// Files come without `size`: a `stat` by path per file costs about as much
/// as the walk itself, and the search learns the size from the opened file.
pub fn walk_sorted(
    gate: &PathGate,
    start: &ResolvedPath,
    max_depth: Option<usize>,
    options: &WalkOptions,
    visit: impl FnMut(Entry) -> ControlFlow<()>,
) -> io::Result<()> {
    sorted(gate, start, max_depth, options, Folders::Confirmed, visit)
}

/// [`walk_sorted`] for a caller that only opens the files it is given, each
/// through [`Entry::open`], and shows no other name (the search): folders
/// are not confirmed on the way down (three system calls each), since a
/// file listed through a swapped folder fails that open, which resolves
/// the whole path beneath the root without following symlinks.
pub fn walk_files_to_open(
    gate: &PathGate,
    start: &ResolvedPath,
    options: &WalkOptions,
    visit: impl FnMut(Entry) -> ControlFlow<()>,
) -> io::Result<()> {
    sorted(
        gate,
        start,
        None,
        options,
        Folders::OpenedFilesConfirm,
        visit,
    )
}

/// Whether and how a folder is confirmed (see the module notes) before the
/// walk descends into it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Folders {
    /// As the walk lists it, before it is read.
    Confirmed,
    /// By [`entered`], once read and before its entries are looked at:
    /// opening it beneath the root confirms it, and its ignore files are
    /// read through that handle.
    ConfirmedOnEntry,
    /// The caller confirms each file when it opens it.
    OpenedFilesConfirm,
}

/// Opens the folder the parallel walk reached through the root handle; true
/// when it is the folder the walk listed (same inode). Its ignore files are
/// then read through that handle, by name: a walk from the root for each
/// of them cost more than the rest of the walk.
fn entered(gate: &PathGate, folder: &DirEntry, rules: Option<&ignore_rules::RuleTree>) -> bool {
    let Ok(opened) = gate.open_folder(folder.path()) else {
        // A folder that cannot be opened (no permission) is still shown
        // when it is the one listed; nothing in it could be read either.
        return confirmed(gate, folder);
    };
    #[cfg(unix)]
    if folder.ino() != Some(opened.ino()) {
        return false;
    }
    if let Some(rules) = rules {
        rules.enter(folder.path(), &opened);
    }
    true
}

fn sorted(
    gate: &PathGate,
    start: &ResolvedPath,
    max_depth: Option<usize>,
    options: &WalkOptions,
    folders: Folders,
    mut visit: impl FnMut(Entry) -> ControlFlow<()>,
) -> io::Result<()> {
    ensure_readable(start)?;
    // The walk's own copy: a copy's deny-list matchers keep their scratch
    // space on the thread that uses them, where a shared one's would come
    // from a locked pool for every entry.
    let gate = &gate.clone();
    let rules = rule_tree(gate, start, options.include_ignored);
    // Entries of one folder share its path up to their names, so their
    // paths compare as their names do; comparing names would split each
    // path again for every comparison of the sort.
    let walker = builder(gate, start, max_depth, rules, folders)
        .sort_by_file_path(|a, b| a.as_os_str().cmp(b.as_os_str()))
        .build();
    for result in walker {
        if options.cancel.is_cancelled() {
            break;
        }
        if let Some(entry) = result.ok().and_then(|e| to_entry(&e, gate, &|_, _| true))
            && visit(entry).is_break()
        {
            break;
        }
    }
    Ok(())
}

/// Whether `relative`, made by the walker from `path` below `root`, leads
/// back to it: false when a name on the way is not Unicode, so that its
/// text holds replacement characters.
pub fn leads_back(root: &Path, relative: &str, path: &Path) -> bool {
    #[cfg(unix)]
    {
        crate::security::bytes_below_root(root, path) == Some(relative.as_bytes())
    }
    #[cfg(not(unix))]
    {
        root.join(relative).components().eq(path.components())
    }
}

/// Sorted by path, compared folder by folder (as a sorted depth-first walk
/// yields them): `a/b` comes before `a.txt` because `a` < `a.txt`.
///
/// Compared byte by byte with `/` ranked below every other byte, which
/// orders names as the folder-by-folder comparison does (no name holds a
/// `/`) without splitting: the tree model's sorted map compares paths on
/// every lookup.
pub fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    let rank = |byte: u8| if byte == b'/' { 0 } else { u16::from(byte) + 1 };
    let (a, b) = (a.as_bytes(), b.as_bytes());
    match first_difference(a, b) {
        Some(at) => rank(a[at]).cmp(&rank(b[at])),
        None => a.len().cmp(&b.len()),
    }
}

/// Where `a` and `b` first differ, within the shorter: compared eight
/// bytes at a time, since paths in one folder share long prefixes and a
/// sorted map compares them on every lookup.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    let common = a.len().min(b.len());
    let (a, b) = (&a[..common], &b[..common]);
    let mut at = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap_or_default());
        let differing = word(x) ^ word(y);
        if differing != 0 {
            return Some(at + (differing.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    (at..common).find(|&i| a[i] != b[i])
}

/// The settings every walk shares: ignore files and skip list (unless
/// `include_ignored`), deny-list, no symlink following, nothing above the
/// root. Ignore files are read here (see [`ignore_rules`]), not by the
/// `ignore` crate, so that their size is bounded and their compiled rules
/// are shared between calls.
fn builder(
    gate: &PathGate,
    start: &ResolvedPath,
    max_depth: Option<usize>,
    rules: Option<Arc<ignore_rules::RuleTree>>,
    folders: Folders,
) -> WalkBuilder {
    let root = gate.root().to_path_buf();
    let filter_gate = gate.clone();
    let mut builder = WalkBuilder::new(&start.real);
    builder
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .filter_entry(move |entry| {
            entry.depth() == 0 || is_visible(entry, &root, &filter_gate, rules.as_deref(), folders)
        });
    builder
}

/// The ignore rules a walk applies: none with `include_ignored`.
fn rule_tree(
    gate: &PathGate,
    start: &ResolvedPath,
    include_ignored: bool,
) -> Option<Arc<ignore_rules::RuleTree>> {
    (!include_ignored).then(|| Arc::new(ignore_rules::RuleTree::new(gate, &start.real)))
}

/// Threads for walking and searching: one per core, at least two so that
/// disk waits overlap even on one core, at most twelve because more only
/// contend. Search uses the same count for its workers. Counted once: on
/// Linux the standard library reads the process's cgroup files for it
/// each time, three times a search.
pub fn worker_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get().clamp(2, 12))
            .unwrap_or(2)
    })
}

fn is_visible(
    entry: &DirEntry,
    root: &Path,
    gate: &PathGate,
    rules: Option<&ignore_rules::RuleTree>,
    folders: Folders,
) -> bool {
    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
    if let Some(rules) = rules {
        if is_dir && is_skipped_dir(&entry.file_name().to_string_lossy()) {
            return false;
        }
        if !rules.admits(entry.path(), is_dir) {
            return false;
        }
    }
    // Folders are pruned here, so nothing below a denied one is read;
    // other entries are checked in `to_entry`, which needs their relative
    // path anyway.
    !is_dir
        || relative_to(root, entry.path()).is_some_and(|relative| {
            !gate.is_denied_entry(&relative)
                && (folders != Folders::Confirmed || confirmed(gate, entry))
        })
}

/// The entry, looked at through the root handle without following
/// symlinks, is the one the walker listed (see the module notes).
fn confirmed(gate: &PathGate, entry: &DirEntry) -> bool {
    match gate.entry_stat(entry.path()) {
        #[cfg(unix)]
        Ok(stat) => entry.ino() == Some(stat.ino),
        #[cfg(not(unix))]
        Ok(_) => true,
        Err(_) => false,
    }
}

pub fn is_skipped_dir(name: &str) -> bool {
    SKIPPED_DIRS.contains(&name) || name.ends_with(SKIPPED_DIR_SUFFIX)
}

/// The entry as the tools see it, not confirmed yet (folders were when they
/// were filtered; the caller confirms what it reports, or opens files
/// through [`Entry::open`], which confirms them); `None` for the starting
/// folder, deny-listed files (denied folders never get this far) and what
/// `keep` refuses, which costs no allocation.
fn to_entry(entry: &DirEntry, gate: &PathGate, keep: &Keep<'_>) -> Option<Entry> {
    if entry.depth() == 0 {
        return None;
    }
    let file_type = entry.file_type()?;
    let relative = relative_to(gate.root(), entry.path())?;
    let kind = EntryKind::of(file_type);
    if !file_type.is_dir() && gate.is_denied_entry(&relative) || !keep(&relative, kind) {
        return None;
    }
    Some(Entry {
        relative: relative.into_owned(),
        path: entry.path().to_path_buf(),
        kind,
        depth: entry.depth(),
        size: None,
        #[cfg(unix)]
        ino: entry.ino(),
        #[cfg(not(unix))]
        ino: None,
    })
}

/// `path` relative to `root`, `/`-separated; runs once per file and twice
/// per folder (pruning, then reporting), so it must stay cheap: borrowed
/// from `path` where that is already the answer.
#[cfg(unix)]
fn relative_to<'a>(root: &Path, path: &'a Path) -> Option<Cow<'a, str>> {
    crate::security::bytes_below_root(root, path).map(String::from_utf8_lossy)
}

#[cfg(not(unix))]
fn relative_to<'a>(root: &Path, path: &'a Path) -> Option<Cow<'a, str>> {
    let rest = path.strip_prefix(root).ok()?;
    let mut relative = String::with_capacity(rest.as_os_str().len());
    for component in rest.components() {
        if !relative.is_empty() {
            relative.push('/');
        }
        relative.push_str(&component.as_os_str().to_string_lossy());
    }
    Some(Cow::Owned(relative))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::fs;

    proptest! {
        #[test]
        fn path_order_compares_folder_by_folder(
            shared in "[a/.\\-_~Zé]{0,30}",
            a in "[a/.\\-_~Zé]{1,30}",
            b in "[a/.\\-_~Zé]{1,30}",
        ) {
            // Paths as the walker builds them: no empty names. Paths in one
            // folder share a prefix, often longer than a word of eight.
            let clean = |p: &str| p.split('/').filter(|n| !n.is_empty()).collect::<Vec<_>>().join("/");
            let (a, b) = (clean(&format!("{shared}{a}")), clean(&format!("{shared}{b}")));
            prop_assume!(!a.is_empty() && !b.is_empty());
            prop_assert_eq!(path_order(&a, &b), a.split('/').cmp(b.split('/')));
        }
    }

    fn tree() -> (tempfile::TempDir, PathGate) {
        let (dir, root) = crate::security::temp_root(&[
            ("src/main.rs", "fn main() {}"),
            ("src/gen/out.rs", "generated"),
            ("src/lib.rs", "pub fn x() {}"),
            (".github/workflows/ci.yml", "on: push"),
            (".env", "SECRET=1"),
            (".env.example", "SECRET="),
            ("keys/server.key", "x"),
            ("node_modules/pkg/index.js", "x"),
            ("target/debug/app", "x"),
            ("pkg.egg-info/PKG-INFO", "x"),
            ("__pycache__/m.pyc", "x"),
            ("build/out.txt", "x"),
            (".gitignore", "build/\n"),
            ("src/.gitignore", "gen/\n"),
        ]);
        let gate = PathGate::new(root, &[]).unwrap();
        (dir, gate)
    }

    fn names(entries: &[Entry]) -> Vec<&str> {
        entries.iter().map(|e| e.relative.as_str()).collect()
    }

    #[test]
    fn applies_skip_list_ignores_and_deny_list() {
        let (_dir, gate) = tree();
        let start = gate.resolve(".").unwrap();
        let entries = walk(&gate, &start, None, &WalkOptions::default()).unwrap();
        assert_eq!(
            names(&entries),
            vec![
                ".env.example",
                ".github",
                ".github/workflows",
                ".github/workflows/ci.yml",
                ".gitignore",
                "keys",
                "src",
                "src/.gitignore",
                "src/lib.rs",
                "src/main.rs",
            ]
        );
        let main = entries
            .iter()
            .find(|e| e.relative == "src/main.rs")
            .unwrap();
        assert_eq!(main.kind, EntryKind::File);
        assert_eq!(main.size, Some(12));
        assert_eq!(main.depth, 2);
    }

    #[cfg(unix)]
    #[test]
    fn relative_paths_match_the_path_components() {
        let cases = [
            ("/p/root", "/p/root", Some("")),
            ("/p/root", "/p/root/a", Some("a")),
            ("/p/root", "/p/root/a/b.rs", Some("a/b.rs")),
            ("/p/root", "/p/rootx/a", None),
            ("/p/root", "/p", None),
            ("/", "/etc/hosts", Some("etc/hosts")),
        ];
        for (root, path, expected) in cases {
            let found = relative_to(Path::new(root), Path::new(path));
            assert_eq!(found.as_deref(), expected, "{root} {path}");
            let by_parts = Path::new(path).strip_prefix(root).ok().map(|rest| {
                let parts: Vec<_> = rest.iter().map(|p| p.to_string_lossy()).collect();
                parts.join("/")
            });
            assert_eq!(found.map(Cow::into_owned), by_parts, "{root} {path}");
        }
    }

    #[test]
    fn depth_limits_the_walk() {
        let (_dir, gate) = tree();
        let start = gate.resolve(".").unwrap();
        let entries = walk(&gate, &start, Some(1), &WalkOptions::default()).unwrap();
        assert!(entries.iter().all(|e| e.depth == 1));
        assert!(names(&entries).contains(&"src"));
        assert!(!names(&entries).contains(&"src/main.rs"));
    }

    #[test]
    fn ignore_rules_above_the_start_still_apply() {
        let (_dir, gate) = tree();
        fs::create_dir_all(gate.root().join("src/build")).unwrap();
        fs::write(gate.root().join("src/build/x.rs"), "x").unwrap();
        let start = gate.resolve("src").unwrap();
        let entries = walk(&gate, &start, None, &WalkOptions::default()).unwrap();
        // `build/` from the root .gitignore hides src/build; `gen/` from src/.gitignore hides src/gen.
        assert_eq!(
            names(&entries),
            vec!["src/.gitignore", "src/lib.rs", "src/main.rs"]
        );
    }

    #[test]
    fn include_ignored_lifts_ignores_and_skip_list_but_not_the_deny_list() {
        let (_dir, gate) = tree();
        fs::create_dir_all(gate.root().join(".git")).unwrap();
        fs::write(gate.root().join(".git/config"), "x").unwrap();
        let start = gate.resolve(".").unwrap();
        let options = WalkOptions {
            include_ignored: true,
            ..WalkOptions::default()
        };
        let entries = walk(&gate, &start, None, &options).unwrap();
        let names = names(&entries);
        for shown in [
            "build/out.txt",
            "src/gen/out.rs",
            "node_modules/pkg/index.js",
            "target/debug/app",
            "pkg.egg-info/PKG-INFO",
            "__pycache__/m.pyc",
        ] {
            assert!(names.contains(&shown), "{shown} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.starts_with(".git/") || *n == ".git"));
        assert!(!names.contains(&".env") && !names.contains(&"keys/server.key"));
        let everything = WalkOptions {
            include_ignored: true,
            cancel: Cancel::never(),
        };
        assert!(holds_files(
            &gate,
            &gate.resolve("build").unwrap(),
            &everything
        ));
        assert!(!holds_files(
            &gate,
            &gate.resolve("keys").unwrap(),
            &everything
        ));
    }

    #[test]
    fn a_cancelled_walk_stops() {
        let (_dir, gate) = tree();
        let start = gate.resolve(".").unwrap();
        let options = WalkOptions::default();
        options.cancel.cancel();
        assert!(walk(&gate, &start, None, &options).unwrap().is_empty());
        let mut visited = 0;
        walk_sorted(&gate, &start, None, &options, |_| {
            visited += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(visited, 0);
    }

    #[test]
    fn an_explicit_start_inside_an_ignored_folder_is_walked() {
        let (_dir, gate) = tree();
        let start = gate.resolve("build").unwrap();
        let entries = walk(&gate, &start, None, &WalkOptions::default()).unwrap();
        assert_eq!(names(&entries), vec!["build/out.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_reported_not_followed() {
        let (dir, gate) = tree();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), gate.root().join("out")).unwrap();
        std::os::unix::fs::symlink(gate.root().join("src"), gate.root().join("src/loop")).unwrap();
        let start = gate.resolve(".").unwrap();
        let entries = walk(&gate, &start, None, &WalkOptions::default()).unwrap();
        let out = entries.iter().find(|e| e.relative == "out").unwrap();
        assert_eq!(out.kind, EntryKind::Symlink);
        assert!(!names(&entries).iter().any(|n| n.contains("secret")));
        assert!(names(&entries).contains(&"src/loop"));
        drop(dir);
    }

    /// What find and list get before the model is ready: the first `wanted`
    /// of the walk's entries that `keep` accepts, files with their sizes.
    #[test]
    fn picked_entries_are_the_walks_first_ones() {
        let (_dir, gate) = tree();
        let start = gate.resolve(".").unwrap();
        let options = WalkOptions::default();
        let all = walk(&gate, &start, None, &options).unwrap();
        let files = |_: &str, kind| kind == EntryKind::File;
        let in_src = |relative: &str, _| relative.starts_with("src");
        let keeps: [&Keep<'_>; 2] = [&files, &in_src];
        for keep in keeps {
            for wanted in [0, 1, 3, usize::MAX] {
                let picked = walk_picked(&gate, &start, None, &options, keep, wanted).unwrap();
                let expected: Vec<&Entry> = all
                    .iter()
                    .filter(|entry| keep(&entry.relative, entry.kind))
                    .take(wanted)
                    .collect();
                assert_eq!(
                    names(&picked),
                    expected
                        .iter()
                        .map(|e| e.relative.as_str())
                        .collect::<Vec<_>>()
                );
                // Files carry their size on disk, other entries none.
                for entry in &picked {
                    let on_disk = fs::symlink_metadata(&entry.path).unwrap();
                    let size = on_disk.is_file().then_some(on_disk.len());
                    assert_eq!(entry.size, size, "{}", entry.relative);
                }
            }
        }
        let shallow = walk_picked(&gate, &start, Some(1), &options, &files, usize::MAX).unwrap();
        assert!(shallow.iter().all(|entry| entry.depth == 1));
    }

    /// A parallel walk's threads each hold only their first entries; the
    /// union still holds the first ones of the whole walk.
    #[test]
    fn a_pick_from_a_wide_tree_is_its_first_entries() {
        let files: Vec<(String, &str)> = (0..40)
            .flat_map(|folder| {
                (0..12).map(move |file| (format!("d{}/{}/f{file}.txt", folder % 7, folder), "x"))
            })
            .collect();
        let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), *c)).collect();
        let (_dir, root) = crate::security::temp_root(&files);
        let gate = PathGate::new(root, &[]).unwrap();
        let start = gate.resolve(".").unwrap();
        let options = WalkOptions::default();
        let all = walk(&gate, &start, None, &options).unwrap();
        let txt = |relative: &str, _| relative.ends_with(".txt");
        for wanted in [1, 5, 37, 200, 479, 480, 481] {
            let picked = walk_picked(&gate, &start, None, &options, &txt, wanted).unwrap();
            let expected: Vec<&str> = names(&all)
                .into_iter()
                .filter(|name| name.ends_with(".txt"))
                .take(wanted)
                .collect();
            assert_eq!(names(&picked), expected, "wanted {wanted}");
        }
    }

    /// Files that vanish after a thread held them leave room for the ones
    /// it let go: the pick still holds the first files that are there.
    #[test]
    fn a_pick_refills_what_vanished_during_the_walk() {
        let files: Vec<(String, &str)> = (0..60).map(|n| (format!("f{n:02}.txt"), "x")).collect();
        let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), *c)).collect();
        let (_dir, root) = crate::security::temp_root(&files);
        let gate = PathGate::new(root.clone(), &[]).unwrap();
        let start = gate.resolve(".").unwrap();
        // Every file before f50 is taken away as soon as the walk sees it.
        let vanish = |relative: &str, _| {
            if relative < "f50" {
                let _ = std::fs::remove_file(root.join(relative));
            }
            true
        };
        let picked = walk_picked(&gate, &start, None, &WalkOptions::default(), &vanish, 4).unwrap();
        assert_eq!(names(&picked), ["f50.txt", "f51.txt", "f52.txt", "f53.txt"]);
    }

    /// The search's walk leaves folders to the opens: a file listed before
    /// its folder was swapped for a symlink to an outside folder holding the
    /// same name cannot be opened.
    #[test]
    #[cfg(unix)]
    fn files_listed_through_a_swapped_folder_fail_to_open() {
        let (_dir, gate) = tree();
        let start = gate.resolve(".").unwrap();
        let mut listed = Vec::new();
        walk_files_to_open(&gate, &start, &WalkOptions::default(), |entry| {
            listed.push(entry);
            ControlFlow::Continue(())
        })
        .unwrap();
        let lib = listed.iter().find(|e| e.relative == "src/lib.rs").unwrap();
        assert!(lib.open(&gate).is_ok());
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("lib.rs"), "outside").unwrap();
        fs::rename(gate.root().join("src"), gate.root().join("src.moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), gate.root().join("src")).unwrap();
        assert!(lib.open(&gate).is_err());
        // Even with the inode check left out, the open itself refuses it.
        let unchecked = Entry {
            ino: None,
            ..lib.clone()
        };
        assert!(unchecked.open(&gate).is_err());
    }
}
