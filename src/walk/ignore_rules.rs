//! `.gitignore` and `.ignore` files: read with bounds, compiled once.
//!
//! The semantics are ripgrep's: a folder's rules apply to everything below
//! it; for each kind of file the deepest folder with a matching rule decides
//! (a `!` rule re-includes), and a `.ignore` decision outranks a
//! `.gitignore` one.
//!
//! An ignore file is honored up to its first [`MAX_IGNORE_BYTES`] and
//! [`MAX_IGNORE_LINES`]; the rest is not, and a warning is logged once. A
//! hostile file (100,000 globs) would otherwise cost seconds and gigabytes
//! on every call. Not honoring lines only shows more files, never fewer, and
//! the deny-list is separate. Ignore files are opened through the gate's
//! opener, like every file the tools read: regular files only (a FIFO named
//! `.gitignore` cannot block a walk), never through a symlink, never from
//! outside the root.
//!
//! Compiled rules are cached by file and [`Stamp`] (size, times, inode), so
//! concurrent and later calls share them, and an edited file is read again
//! by the next call (a version that was not trusted yet when it was
//! compiled, see [`Stamp::is_trusted`], is read again: a same-size rewrite
//! in the same clock tick keeps its stamp). Files are compiled one at a time under
//! the cache's lock, so concurrent calls wait for one compilation instead
//! of each doing it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::SystemTime;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::security::{OpenFolder, PathGate};
use crate::walk::Stamp;

/// Bytes of one ignore file that are honored.
pub const MAX_IGNORE_BYTES: u64 = 64 * 1024;
/// Lines of one ignore file that are honored: real files have a few
/// hundred; compiling a thousand complex globs takes about 0.1 s.
pub const MAX_IGNORE_LINES: usize = 1_000;
/// Compiled files kept; the cache starts over when it is full.
const MAX_CACHED_FILES: usize = 256;

/// The compiled rules of one ignore file; `None` when there is none.
type Rules = Option<Arc<Gitignore>>;

/// The rules of one folder, by kind, and those of the folders above it.
struct Chain {
    ignore: Rules,
    git: Rules,
    parent: Option<Arc<Chain>>,
}

impl Chain {
    fn new(gate: &PathGate, folder: &Path, parent: Option<Arc<Chain>>) -> Arc<Chain> {
        Self::read(folder, parent, |name| {
            gate.open_file_with_metadata(&folder.join(name))
        })
    }

    /// The chain of `folder`, its ignore files opened by `open` (given each
    /// file's name).
    fn read(
        folder: &Path,
        parent: Option<Arc<Chain>>,
        open: impl Fn(&str) -> io::Result<(File, Metadata)>,
    ) -> Arc<Chain> {
        // Most folders have neither file: the path is joined only for one
        // that opened (an allocation per probe showed in the walk's profile).
        let rules_in = |name: &str| {
            let opened = open(name).ok()?;
            load(opened, &folder.join(name), folder)
        };
        Arc::new(Chain {
            ignore: rules_in(".ignore"),
            git: rules_in(".gitignore"),
            parent,
        })
    }

    fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        let kinds: [fn(&Chain) -> &Rules; 2] = [|chain| &chain.ignore, |chain| &chain.git];
        for rules_of in kinds {
            let mut level = Some(self);
            while let Some(chain) = level {
                if let Some(rules) = rules_of(chain) {
                    match rules.matched(path, is_dir) {
                        Match::Ignore(_) => return true,
                        Match::Whitelist(_) => return false,
                        Match::None => {}
                    }
                }
                level = chain.parent.as_deref();
            }
        }
        false
    }
}

/// The ignore rules of one walk: from the root down to the walk's start,
/// then each folder below as the walk reaches it.
pub struct RuleTree {
    gate: PathGate,
    start: PathBuf,
    /// By the folder's path as bytes: every entry of the walk is looked up
    /// here, and hashing or comparing a `Path` splits it into parts (the
    /// walk's paths are already in one spelling).
    chains: RwLock<HashMap<OsString, Arc<Chain>>>,
    /// The folder looked up last, and its chain: a walk checks a folder's
    /// entries one after another, so most lookups repeat the one before
    /// and skip hashing the path.
    last: Mutex<Option<(OsString, Arc<Chain>)>>,
}

impl RuleTree {
    /// Reads the ignore files from the gate's root down to `start`
    /// (inclusive).
    pub fn new(gate: &PathGate, start: &Path) -> RuleTree {
        let root = gate.root();
        let mut chain = Chain::new(gate, root, None);
        if let Ok(rest) = start.strip_prefix(root) {
            let mut folder = root.to_path_buf();
            for part in rest.components() {
                folder.push(part);
                chain = Chain::new(gate, &folder, Some(chain));
            }
        }
        let mut chains = HashMap::new();
        chains.insert(start.as_os_str().to_owned(), chain);
        RuleTree {
            gate: gate.clone(),
            start: start.to_path_buf(),
            chains: RwLock::new(chains),
            last: Mutex::new(None),
        }
    }

    /// Reads the ignore files of `folder`, a folder of the walk that
    /// `opened` holds open: each by its name in that folder, where a read on
    /// first use walks from the root to it. A parallel walk calls this as it
    /// enters each folder, before it looks at the folder's entries.
    pub fn enter(&self, folder: &Path, opened: &OpenFolder) {
        self.chain_read_by(folder, |name| self.gate.open_file_in(opened, name.as_ref()));
    }

    /// False when the ignore files exclude `path`.
    pub fn admits(&self, path: &Path, is_dir: bool) -> bool {
        let folder = path.parent().unwrap_or(path);
        !self.chain_of_last(folder).is_ignored(path, is_dir)
    }

    /// [`RuleTree::chain`], through the last folder's; a parallel walk's
    /// threads do not wait for each other here.
    fn chain_of_last(&self, folder: &Path) -> Arc<Chain> {
        let Ok(mut last) = self.last.try_lock() else {
            return self.chain(folder);
        };
        if let Some((held, chain)) = last.as_ref()
            && held == folder.as_os_str()
        {
            return chain.clone();
        }
        let chain = self.chain(folder);
        *last = Some((folder.as_os_str().to_owned(), chain.clone()));
        chain
    }

    /// The chain of `folder`, read the first time the walk reaches it.
    /// The walk admits a folder before it lists it, so its parent's chain
    /// is usually there already.
    fn chain(&self, folder: &Path) -> Arc<Chain> {
        self.chain_read_by(folder, |name| {
            self.gate.open_file_with_metadata(&folder.join(name))
        })
    }

    /// [`RuleTree::chain`], with `open` opening the folder's ignore files
    /// (given each file's name) when the chain is not there yet.
    fn chain_read_by(
        &self,
        folder: &Path,
        open: impl Fn(&str) -> io::Result<(File, Metadata)>,
    ) -> Arc<Chain> {
        let key = folder.as_os_str();
        if let Some(chain) = self.chains.read().ok().and_then(|c| c.get(key).cloned()) {
            return chain;
        }
        let parent = match folder.parent() {
            Some(parent) if folder != self.start && folder.starts_with(&self.start) => {
                self.chain(parent)
            }
            // Nothing above the start is walked; a stray path gets its rules.
            _ => return self.start_chain(),
        };
        let chain = Chain::read(folder, Some(parent), open);
        if let Ok(mut chains) = self.chains.write() {
            chains.insert(key.to_owned(), chain.clone());
        }
        chain
    }

    fn start_chain(&self) -> Arc<Chain> {
        self.chains
            .read()
            .ok()
            .and_then(|chains| chains.get(self.start.as_os_str()).cloned())
            .unwrap_or_else(|| {
                Arc::new(Chain {
                    ignore: None,
                    git: None,
                    parent: None,
                })
            })
    }
}

struct Cached {
    stamp: Stamp,
    /// When this stamp was first seen.
    first_seen: SystemTime,
    /// Whether the stamp was trusted when the rules were compiled.
    trusted: bool,
    rules: Rules,
}

fn cache() -> &'static Mutex<HashMap<PathBuf, Cached>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Cached>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// The rules of the ignore file at `file` (in `folder`), from the cache
/// when the file is unchanged.
fn load((handle, metadata): (File, Metadata), file: &Path, folder: &Path) -> Rules {
    let stamp = Stamp::of_open(&handle, &metadata);
    let Ok(mut cache) = cache().lock() else {
        return compile(handle, file, folder);
    };
    let compiled_at = SystemTime::now();
    let mut first_seen = compiled_at;
    if let Some(cached) = cache.get(file)
        && cached.stamp == stamp
    {
        if cached.trusted {
            return cached.rules.clone();
        }
        first_seen = cached.first_seen;
    }
    let trusted = stamp.is_trusted(first_seen, compiled_at);
    let rules = compile(handle, file, folder);
    if cache.len() >= MAX_CACHED_FILES {
        cache.clear();
    }
    cache.insert(
        file.to_path_buf(),
        Cached {
            stamp,
            first_seen,
            trusted,
            rules: rules.clone(),
        },
    );
    rules
}

fn compile(handle: File, file: &Path, folder: &Path) -> Rules {
    let mut text = Vec::new();
    handle
        .take(MAX_IGNORE_BYTES + 1)
        .read_to_end(&mut text)
        .ok()?;
    let mut cut = text.len() as u64 > MAX_IGNORE_BYTES;
    text.truncate(MAX_IGNORE_BYTES as usize);
    let text = String::from_utf8_lossy(&text);
    let mut builder = GitignoreBuilder::new(folder);
    for (number, line) in text.lines().enumerate() {
        if number == MAX_IGNORE_LINES {
            cut = true;
            break;
        }
        // A bad line is skipped; the file's other lines still count.
        let _ = builder.add_line(Some(file.to_path_buf()), line);
    }
    if cut {
        tracing::warn!(
            file = %file.display(),
            max_bytes = MAX_IGNORE_BYTES,
            max_lines = MAX_IGNORE_LINES,
            "ignore file is honored only up to its first 64 KiB and 1000 lines; the rest does not hide files"
        );
    }
    builder.build().ok().map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, PathGate, PathBuf) {
        let (dir, root) = crate::security::temp_root(files);
        let gate = PathGate::new(root.clone(), &[]).unwrap();
        (dir, gate, root)
    }

    #[test]
    fn deepest_rule_decides_and_ignore_outranks_gitignore() {
        let (_d, gate, root) = tree(&[
            (".gitignore", "*.log\nbuild/\n"),
            ("sub/.gitignore", "!keep.log\n"),
            (".ignore", "!special.log\n"),
        ]);
        let rules = RuleTree::new(&gate, &root);
        assert!(!rules.admits(&root.join("a.log"), false));
        assert!(!rules.admits(&root.join("build"), true));
        assert!(rules.admits(&root.join("build"), false));
        assert!(rules.admits(&root.join("sub/keep.log"), false));
        assert!(!rules.admits(&root.join("sub/other.log"), false));
        assert!(rules.admits(&root.join("special.log"), false));
    }

    #[test]
    fn a_huge_ignore_file_is_honored_only_up_to_its_limits() {
        let mut text: String = (0..MAX_IGNORE_LINES).map(|i| format!("g{i}*\n")).collect();
        text.push_str("late.txt\n");
        let (_d, gate, root) = tree(&[(".gitignore", &text)]);
        let rules = RuleTree::new(&gate, &root);
        assert!(!rules.admits(&root.join("g7x"), false));
        assert!(rules.admits(&root.join("late.txt"), false));
    }

    #[test]
    fn compiled_rules_are_shared_until_the_file_changes() {
        let (_d, gate, root) = tree(&[(".gitignore", "a.txt\n")]);
        let file = root.join(".gitignore");
        // Until the file's clock tick has passed, every load re-reads it.
        for _ in 0..100 {
            let stamp = Stamp::of(&fs::symlink_metadata(&file).unwrap());
            if !stamp.is_racy(SystemTime::now()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let first = load(gate.open_file_with_metadata(&file).unwrap(), &file, &root).unwrap();
        let again = load(gate.open_file_with_metadata(&file).unwrap(), &file, &root).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        fs::write(&file, "b.txt\nc.txt\n").unwrap();
        let rules = RuleTree::new(&gate, &root);
        assert!(rules.admits(&root.join("a.txt"), false));
        assert!(!rules.admits(&root.join("c.txt"), false));
    }

    #[test]
    fn a_version_changed_just_before_it_was_compiled_is_read_again() {
        let (_d, gate, root) = tree(&[(".gitignore", "a.txt\n")]);
        let file = root.join(".gitignore");
        // A change time ahead of the clock keeps the stamp doubtful however
        // long the first load takes on a busy machine (only the two loads
        // must fall within one tick's doubt of each other).
        std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(SystemTime::now() + std::time::Duration::from_secs(600))
            .unwrap();
        let first = load(gate.open_file_with_metadata(&file).unwrap(), &file, &root).unwrap();
        // A same-size rewrite in the same clock tick may keep the stamp.
        let again = load(gate.open_file_with_metadata(&file).unwrap(), &file, &root).unwrap();
        assert!(!Arc::ptr_eq(&first, &again));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_symlink_is_not_read() {
        let (_d, gate, root) = tree(&[("outside.txt", "*\n")]);
        std::os::unix::fs::symlink(root.join("outside.txt"), root.join(".gitignore")).unwrap();
        crate::test_support::make_fifo(&root.join(".ignore"));
        let rules = RuleTree::new(&gate, &root);
        assert!(rules.admits(&root.join("x.txt"), false));
    }
}
