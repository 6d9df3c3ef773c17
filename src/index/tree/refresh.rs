//! Bringing the tree up to the disk: sorting reported paths (or a stat
//! sweep) into folders to list or walk again and files to look at again,
//! then applying that work in rounds.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{
    Content, IGNORE_FILES, IgnoreFile, Node, PathKey, Seen, Tree, dir_state, ignore_stamps,
    is_below, kind_of, lstat, lstat_stamped, make_listed_node, parent_of, read_ignores, stamp_at,
};
use crate::index::watch::Changes;
use crate::security::{LastFolder, PathGate, ResolvedPath};
use crate::walk::{self, EntryKind, Stamp, WalkOptions};

impl Tree {
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

    /// Compares every entry with the disk, on the walker's thread count:
    /// without a live change feed (Windows, macOS, notifications off) every
    /// call sweeps, and a sweep is a `stat` of every entry.
    fn sweep(&self, work: &mut Work) {
        if ignores_changed(&self.root, &self.root_ignores) {
            // The rules of the whole tree may have changed: it is walked
            // again, which looks at every entry as this sweep would.
            work.relist.push(".".to_string());
            return;
        }
        if stamp_at(&self.root) != self.root_stamp {
            work.relist.push(".".to_string());
        }
        let entries: Vec<(&PathKey, &Node)> =
            self.nodes.iter().filter(|(_, node)| !node.lossy).collect();
        // Parts in path order, so that each part's entries share folders.
        let part_size = entries
            .len()
            .div_ceil(walk::worker_threads())
            .max(SWEEP_PART_MIN);
        let compare_part = |part: &[(&PathKey, &Node)]| {
            let mut found = Work::default();
            let mut last = LastFolder::default();
            for (key, node) in part {
                self.compare(key, node, &mut last, &mut found);
            }
            found
        };
        let found: Vec<Work> = std::thread::scope(|scope| {
            let mut parts = entries.chunks(part_size);
            let first = parts.next().unwrap_or_default();
            let helpers: Vec<_> = parts
                .map(|part| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, move || compare_part(part))
                        .map_err(|_| part)
                })
                .collect();
            let mut found = vec![compare_part(first)];
            for helper in helpers {
                found.push(match helper {
                    Ok(thread) => thread
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    // No thread to be had: this one looks at the part too.
                    Err(part) => compare_part(part),
                });
            }
            found
        });
        for part in found {
            work.files.extend(part.files);
            work.relist.extend(part.relist);
        }
    }

    /// Compares one entry with the disk, for [`Tree::sweep`].
    fn compare(&self, key: &PathKey, node: &Node, last: &mut LastFolder, work: &mut Work) {
        let path = self.path_of(&key.0);
        let current = Stamp::look(&self.gate, &path, last);
        if current.as_ref().map(|(kind, _)| *kind) != Some(node.kind) {
            work.relist.push(parent_of(&key.0).to_string());
            return;
        }
        if let Some(ignores) = &node.ignores
            && ignores_changed(&path, ignores)
        {
            work.relist.push(key.0.clone());
        }
        let stamp = current.map(|(_, stamp)| stamp);
        if stamp == node.stamp {
            return;
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
    /// whose stamps did not change. Returns the entries changed. The walk
    /// and a `stat` of every entry run on the walker's threads, as the
    /// build's list does; entries found as they were stay in place.
    fn rewalk(&mut self, gate: &PathGate, dir: &str, work: &mut Work) -> usize {
        let Some(start) = self.resolve_dir(gate, dir) else {
            // Gone or replaced: its parent lists what stands there now.
            let removed = self.remove_subtree(dir).len();
            self.forget_dir(dir);
            if dir != "." {
                work.relist.push(parent_of(dir).to_string());
            }
            return removed + 1;
        };
        let per_thread = || {
            let mut last = LastFolder::default();
            move |relative: &str, real: &Path, kind| {
                make_listed_node(gate, &mut last, kind, relative, real)
            }
        };
        // A folder that cannot be read shows empty, as the walker shows it.
        let parts =
            walk::walk_made(gate, &start, &WalkOptions::default(), &per_thread).unwrap_or_default();
        let mut found: HashMap<String, Node> = parts.into_iter().flatten().collect();
        // Entries gone, changed (with what stands there now), and seen
        // unchanged before their stamps could be trusted.
        let mut gone = Vec::new();
        let mut replaced = Vec::new();
        let mut unsettled = Vec::new();
        for (key, known) in self.under(dir) {
            match found.remove(&key.0) {
                Some(node) if node.kind == known.kind && node.stamp == known.stamp => {
                    if !known.settled {
                        unsettled.push(key.0.clone());
                    }
                }
                Some(node) => replaced.push((key.0.clone(), node)),
                None => gone.push(key.0.clone()),
            }
        }
        let changed = gone.len() + replaced.len() + unsettled.len() + found.len();
        for key in gone {
            self.remove(&key);
        }
        for key in unsettled {
            // Seen before with this stamp: since when counts.
            let path = self.path_of(&key);
            let known = self.nodes.get(&PathKey(key.clone()));
            let kind = known.map_or(EntryKind::File, |known| known.kind);
            let node = self.make_node_after(kind, &key, &path, known);
            self.insert(key, node);
        }
        for (relative, mut node) in replaced.into_iter().chain(found) {
            // What was known of it goes; the background reads it.
            if matches!(node.content, Content::Listed) {
                node.content = Content::Unread;
            }
            self.insert(relative, node);
        }
        self.restamp_dir(dir);
        changed
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
        } else {
            self.update(dir, |node| {
                node.stamp = stamp;
                node.settled = settled;
                node.ignores = Some(ignores);
                node.first_seen = Seen::of(first_seen);
            });
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
        // A folder is listed again for the names that came and went: a file
        // or folder still there as what it was is only marked seen (a file
        // is looked at when it is reported itself, or the sweep finds its
        // stamp moved), not made into an entry with a stat of its own. A
        // checkout adding files to a folder of thousands lists it at every
        // look.
        let known: HashMap<String, (EntryKind, AtomicBool)> = self
            .under_to_depth(dir, 1)
            .map(|(k, n)| (k.0.clone(), (n.kind, AtomicBool::new(false))))
            .collect();
        let keep = |relative: &str, kind: EntryKind| {
            let still_there = matches!(kind, EntryKind::File | EntryKind::Dir)
                && known
                    .get(relative)
                    .filter(|(was, _)| *was == kind)
                    .inspect(|(_, seen)| seen.store(true, Ordering::Relaxed))
                    .is_some();
            !still_there
        };
        // A folder that cannot be read shows empty, as the walker shows it.
        let children = walk::walk_picked(
            gate,
            &start,
            Some(1),
            &WalkOptions::default(),
            &keep,
            usize::MAX,
        )
        .unwrap_or_default();
        let mut old: HashMap<String, EntryKind> = known
            .into_iter()
            .filter(|(_, (_, seen))| !seen.load(Ordering::Relaxed))
            .map(|(name, (kind, _))| (name, kind))
            .collect();
        let mut changed = 0;
        for child in children {
            match old.remove(&child.relative) {
                // Only a symlink or another special entry comes back as what
                // it was (files and folders were marked seen above).
                Some(kind) if kind == child.kind => {
                    let stamp = stamp_at(&child.path);
                    if let Some(node) = self.nodes.get_mut(&PathKey(child.relative)) {
                        node.stamp = stamp;
                    }
                }
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

/// Whether the ignore files of `dir` are no longer those `known`.
fn ignores_changed(dir: &Path, known: &[IgnoreFile; 2]) -> bool {
    ignore_stamps(dir) != [known[0].stamp, known[1].stamp]
}

/// Entries one thread of a sweep takes at least: fewer cost less than
/// starting the thread (a `stat` takes about a microsecond). Tests sweep
/// their small trees in parts too.
const SWEEP_PART_MIN: usize = if cfg!(test) { 8 } else { 4096 };

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
        let mut listed: HashSet<String> = HashSet::new();
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
                    listed.insert(dir);
                    continue;
                }
                changed += tree.relist(gate, &dir, self);
                listed.insert(dir);
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
    use crate::index::Shared;
    use crate::index::build::{list, start_watcher};
    use crate::index::live::Live;
    use crate::index::pacer::Pacer;
    use crate::index::testing::{generated_tree, walked_paths};
    use crate::index::tree::Content;
    use crate::index::watch::Changes;
    use crate::security::PathGate;
    use std::fs;
    use std::time::Duration;

    /// A generated tree and its model, its stamps old enough to trust (none
    /// is looked at again for its age).
    fn listed_tree() -> (tempfile::TempDir, PathGate, Live) {
        let (dir, gate) = generated_tree(30, 4);
        std::thread::sleep(Duration::from_millis(250));
        let shared = Shared::new(&gate, usize::MAX, true, true);
        let watcher = start_watcher(&shared, &mut Pacer::default());
        let (live, _) = list(&shared, watcher).unwrap();
        (dir, gate, live)
    }

    fn modelled(live: &Live) -> Vec<String> {
        live.tree.under(".").map(|(k, _)| k.0.clone()).collect()
    }

    #[test]
    fn reported_paths_are_applied_exactly() {
        let (_dir, gate, mut live) = listed_tree();
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
        assert_eq!(modelled(&live), walked_paths(&gate));
    }

    #[test]
    fn a_folder_listed_again_takes_the_names_that_came_and_went_and_leaves_its_files_to_their_reports()
     {
        let (_dir, gate, mut live) = listed_tree();
        let root = gate.root().to_path_buf();
        let stamp_of =
            |live: &Live, relative: &str| live.tree.get(relative).and_then(|(_, node)| node.stamp);
        let listed = stamp_of(&live, "d2/e2/f2.txt");
        assert!(listed.is_some());
        // A file added and one removed in the folder of a file edited
        // without a report of its own.
        fs::write(
            root.join("d2/e2/f2.txt"),
            "edited, a longer text than before",
        )
        .unwrap();
        fs::write(root.join("d2/e2/new.txt"), "x").unwrap();
        fs::remove_file(root.join("d2/e2/f23.txt")).unwrap();
        let names = Changes::Paths(vec![root.join("d2/e2/f23.txt"), root.join("d2/e2/new.txt")]);
        live.tree.refresh(names, &gate).unwrap();
        assert_eq!(modelled(&live), walked_paths(&gate));
        assert_eq!(stamp_of(&live, "d2/e2/f2.txt"), listed);
        // Its own report (or a sweep) brings the edit.
        let edit = Changes::Paths(vec![root.join("d2/e2/f2.txt")]);
        live.tree.refresh(edit, &gate).unwrap();
        assert_ne!(stamp_of(&live, "d2/e2/f2.txt"), listed);
        live.tree.refresh(Changes::Unknown, &gate).unwrap();
        assert_eq!(modelled(&live), walked_paths(&gate));
    }

    #[test]
    fn a_sweep_in_parts_finds_the_changes_of_every_part() {
        let (_dir, gate, mut live) = listed_tree();
        let root = gate.root().to_path_buf();
        let stamp_of =
            |live: &Live, relative: &str| live.tree.get(relative).and_then(|(_, node)| node.stamp);
        // The first and the last file in path order, unreported.
        let (first, last) = ("d0/e0/f0.txt", "d6/e2/f20.txt");
        let before = [stamp_of(&live, first), stamp_of(&live, last)];
        assert!(before.iter().all(Option::is_some));
        for name in [first, last] {
            fs::write(root.join(name), "edited, a longer text than before").unwrap();
        }
        fs::remove_file(root.join("d3/e0/f3.txt")).unwrap();
        fs::write(root.join("d4/new.txt"), "x").unwrap();
        live.tree.refresh(Changes::Unknown, &gate).unwrap();
        assert_eq!(modelled(&live), walked_paths(&gate));
        for (name, before) in [first, last].into_iter().zip(before) {
            assert_ne!(stamp_of(&live, name), before, "{name}");
        }
    }
}
