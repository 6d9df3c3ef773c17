//! The live model of the project tree: the walker's file list plus a
//! trigram index over the files' contents, built in the background when the
//! project opens and brought up to date at the start of every call.
//!
//! Tools see two narrow calls. [`TreeModel::candidates`] answers "which
//! files under this folder may contain this query": a superset of the files
//! that match (the searcher verifies each), in path order, or `None` when
//! the model cannot answer (not built yet, switched off, over its memory
//! limit, or a folder the model does not hold) and the caller walks as
//! before. [`TreeModel::entries`] answers from the file list what the
//! walker would. Modelled on google/codesearch and Zoekt: `ngram` holds the
//! trigrams and posting lists, `plan` turns a query into a trigram
//! condition, `tree` keeps the file list fresh, `watch` reports changes.

mod ngram;
mod plan;
mod tree;
pub mod watch;

use std::fmt;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ngram::{PostingCache, Shard, ShardBuilder};
use plan::Query;
use tree::{Content, Indexer, Tree};
use watch::{ChangeWatcher, Changes};

use crate::config::IndexConfig;
use crate::security::{PathGate, ResolvedPath};
use crate::walk::{self, Entry, EntryKind, WalkOptions};

/// (trigram, file) pairs collected before a shard is sealed: 16 bytes of
/// scratch each while sorting, so 16 MiB at most.
const SHARD_PAIRS: usize = 1024 * 1024;
/// What one file-list entry costs besides its path, roughly.
const NODE_BYTES: usize = 128;

/// What the search asks for, as its matcher will see it.
#[derive(Debug, Clone, Copy)]
pub struct ContentQuery<'a> {
    pub pattern: &'a str,
    /// `pattern` is a regex; otherwise a literal.
    pub regex: bool,
    pub case_insensitive: bool,
}

/// One project's model; dropping it stops a build in progress.
pub struct TreeModel {
    shared: Arc<Shared>,
}

struct Shared {
    gate: PathGate,
    limit_bytes: usize,
    state: Mutex<State>,
    cancelled: AtomicBool,
}

enum State {
    Building,
    Ready(Box<Live>),
    /// Switched off, over the memory limit, or the build failed: every
    /// call walks the tree as if there were no model.
    Off,
}

struct Live {
    tree: Tree,
    /// Changes were lost and no sweep has caught up with them yet.
    sweep_owed: bool,
    shards: Vec<Shard>,
    watcher: ChangeWatcher,
    indexer: Indexer,
}

impl fmt::Debug for TreeModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never waits: a call may hold the lock while this is printed.
        let state = match self.shared.state.try_lock().as_deref() {
            Ok(State::Building) => "building",
            Ok(State::Ready(_)) => "ready",
            Ok(State::Off) => "off",
            Err(_) => "busy",
        };
        f.debug_struct("TreeModel").field("state", &state).finish()
    }
}

impl Drop for TreeModel {
    fn drop(&mut self) {
        self.shared.cancelled.store(true, Ordering::Relaxed);
    }
}

impl TreeModel {
    /// Starts building the model of `gate`'s root on a low-priority thread;
    /// calls answer `None` until it is ready.
    pub fn open(gate: &PathGate, config: &IndexConfig) -> Self {
        let shared = Arc::new(Shared {
            gate: gate.clone(),
            limit_bytes: usize::try_from(config.max_memory_mb.saturating_mul(1024 * 1024))
                .unwrap_or(usize::MAX),
            state: Mutex::new(if config.enabled {
                State::Building
            } else {
                State::Off
            }),
            cancelled: AtomicBool::new(false),
        });
        if config.enabled {
            let building = shared.clone();
            let spawned = std::thread::Builder::new()
                .name("index-build".into())
                .spawn(move || {
                    lower_priority();
                    let built = build(&building);
                    if let Ok(mut state) = building.state.lock() {
                        *state = built.map_or(State::Off, |live| State::Ready(Box::new(live)));
                    }
                });
            if spawned.is_err() {
                tracing::warn!("index: cannot start the build thread; searches scan the tree");
                if let Ok(mut state) = shared.state.lock() {
                    *state = State::Off;
                }
            }
        }
        Self { shared }
    }

    /// A model that never answers: tools then walk, as without one.
    #[cfg(test)]
    pub fn off() -> Self {
        Self {
            shared: Arc::new(Shared {
                gate: PathGate::new(std::env::temp_dir(), &[]).expect("a gate on the temp dir"),
                limit_bytes: 0,
                state: Mutex::new(State::Off),
                cancelled: AtomicBool::new(false),
            }),
        }
    }

    /// Whether the build has finished (ready or off).
    pub fn is_settled(&self) -> bool {
        !matches!(self.shared.state.lock().as_deref(), Ok(State::Building))
    }

    pub fn is_ready(&self) -> bool {
        matches!(self.shared.state.lock().as_deref(), Ok(State::Ready(_)))
    }

    /// Files below the folder `start` that may contain a match of `query`,
    /// in path order, as the walker would list them; `None` when the model
    /// cannot answer and the caller must walk.
    pub fn candidates(&self, start: &ResolvedPath, query: &ContentQuery<'_>) -> Option<Vec<Entry>> {
        self.with_fresh_tree(start, false, |live, base| {
            let query = plan::plan(query.pattern, query.regex, query.case_insensitive);
            let base_hits = live.base_matches(&query);
            let depth_of_start = depth(&start.relative);
            live.tree
                .under(&start.relative)
                .filter(|(_, node)| node.kind == EntryKind::File)
                .filter(|(_, node)| match &node.content {
                    Content::Base(id) => base_hits
                        .as_ref()
                        .is_none_or(|hits| hits[*id as usize / 64] & (1 << (id % 64)) != 0),
                    Content::Fresh(trigrams) => query.matches_sorted(trigrams),
                    Content::Always => true,
                })
                .map(|(key, node)| entry(base, &key.0, node, depth_of_start))
                .collect()
        })
    }

    /// Every entry below the folder `start`, down to `max_depth` levels, in
    /// path order with sizes, as [`walk::walk`] would return them; `None`
    /// when the model cannot answer, or when a listing limited in depth
    /// would cost a stat of every file (changes unknown) and the walker,
    /// which reads only the folders asked for, is cheaper.
    pub fn entries(&self, start: &ResolvedPath, max_depth: Option<usize>) -> Option<Vec<Entry>> {
        self.with_fresh_tree(start, max_depth.is_some(), |live, base| {
            let depth_of_start = depth(&start.relative);
            live.tree
                .under(&start.relative)
                .map(|(key, node)| entry(base, &key.0, node, depth_of_start))
                .filter(|e| max_depth.is_none_or(|max| e.depth <= max))
                .collect()
        })
    }

    /// Every entry below `start` as [`walk::walk`] gives it with `options`:
    /// from the model when it can answer, else from the walker. The model
    /// holds the default view only, so `include_ignored` always walks.
    pub fn entries_or_walk(
        &self,
        gate: &PathGate,
        start: &ResolvedPath,
        max_depth: Option<usize>,
        options: &WalkOptions,
    ) -> std::io::Result<Vec<Entry>> {
        let known = if options.include_ignored {
            None
        } else {
            self.entries(start, max_depth)
        };
        match known {
            Some(entries) => Ok(entries),
            None => walk::walk(gate, start, max_depth, options),
        }
    }

    /// Applies pending changes, then runs `answer` on the model when it
    /// holds the folder `start`. With `cheap_only`, a call that would need a
    /// stat sweep leaves it to a later call and answers `None`.
    fn with_fresh_tree<T>(
        &self,
        start: &ResolvedPath,
        cheap_only: bool,
        answer: impl FnOnce(&Live, &Path) -> T,
    ) -> Option<T> {
        // An unreadable starting folder is the walker's error to give.
        walk::ensure_readable(start).ok()?;
        let mut state = self.shared.state.lock().ok()?;
        let State::Ready(live) = &mut *state else {
            return None;
        };
        let root = self.shared.gate.root();
        let changes = match live.watcher.drain() {
            Changes::Paths(_) | Changes::Unknown if live.sweep_owed => Changes::Unknown,
            changes => changes,
        };
        if cheap_only && matches!(changes, Changes::Unknown) {
            // Lost events are not forgotten: the next full call sweeps.
            live.sweep_owed = true;
            return None;
        }
        live.sweep_owed = false;
        let Some(changed) = live
            .tree
            .refresh(changes, &self.shared.gate, &mut live.indexer)
        else {
            // The tree changed faster than it could be followed: walk this
            // time, and look at everything again next time.
            live.sweep_owed = true;
            return None;
        };
        if changed > 0 {
            let bytes = live.bytes();
            if bytes > self.shared.limit_bytes {
                tracing::info!(
                    "index: {} MB needed, over the [index] max_memory_mb limit; searches scan the tree from now on",
                    bytes / (1024 * 1024)
                );
                *state = State::Off;
                return None;
            }
        }
        let expected = if start.relative == "." {
            root.to_path_buf()
        } else {
            root.join(&start.relative)
        };
        // A folder reached through a symlink, one the walker hides (an
        // explicit start inside an ignored folder), or one holding a name
        // that is not UTF-8, is walked.
        // With whitelist rules, a walk from a folder may show other files
        // than the walk from the root the model holds.
        if start.real != expected
            || !live.tree.is_dir(&start.relative)
            || (start.relative != "." && live.tree.negations)
            || live.tree.under(&start.relative).any(|(_, node)| node.lossy)
        {
            return None;
        }
        Some(answer(live, root))
    }
}

impl Live {
    /// A bit per base file id: set when the file may match; `None` when
    /// every file may.
    fn base_matches(&self, query: &Query) -> Option<Vec<u64>> {
        if *query == Query::All {
            return None;
        }
        let total = self.shards.last().map_or(0, |s| s.id_range().end) as usize;
        let mut bits = vec![0u64; total.div_ceil(64)];
        for shard in &self.shards {
            let mut cache = PostingCache::default();
            match evaluate(query, shard, &mut cache) {
                None => {
                    for id in shard.id_range() {
                        bits[id as usize / 64] |= 1 << (id % 64);
                    }
                }
                Some(ids) => {
                    for id in ids {
                        bits[id as usize / 64] |= 1 << (id % 64);
                    }
                }
            }
        }
        Some(bits)
    }

    /// Posting lists, fresh trigram sets and the file list, in bytes.
    fn bytes(&self) -> usize {
        let shards: usize = self.shards.iter().map(Shard::bytes).sum();
        let nodes: usize = self
            .tree
            .nodes
            .iter()
            .map(|(key, node)| {
                let fresh = match &node.content {
                    Content::Fresh(trigrams) => trigrams.capacity() * 4,
                    _ => 0,
                };
                key.0.capacity() + NODE_BYTES + fresh
            })
            .sum();
        shards + nodes
    }
}

/// The ids in `shard` whose trigrams satisfy `query`, sorted; `None` for all.
fn evaluate(query: &Query, shard: &Shard, cache: &mut PostingCache) -> Option<Vec<u32>> {
    match query {
        Query::All => None,
        Query::Nothing => Some(Vec::new()),
        Query::Trigram(key) => Some(cache.get(shard, *key).as_ref().clone()),
        Query::And(parts) => {
            let mut result: Option<Vec<u32>> = None;
            for part in parts {
                let Some(ids) = evaluate(part, shard, cache) else {
                    continue;
                };
                result = Some(match result {
                    None => ids,
                    Some(previous) => intersect(&previous, &ids),
                });
                if result.as_ref().is_some_and(Vec::is_empty) {
                    break;
                }
            }
            result
        }
        Query::Or(parts) => {
            let mut result = Vec::new();
            for part in parts {
                result = union(&result, &evaluate(part, shard, cache)?);
            }
            Some(result)
        }
    }
}

fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::with_capacity(a.len() + b.len()));
    while i < a.len() || j < b.len() {
        if j == b.len() || (i < a.len() && a[i] < b[j]) {
            out.push(a[i]);
            i += 1;
        } else if i == a.len() || b[j] < a[i] {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
            j += 1;
        }
    }
    out
}

fn depth(relative: &str) -> usize {
    if relative == "." {
        0
    } else {
        relative.split('/').count()
    }
}

fn entry(root: &Path, relative: &str, node: &tree::Node, depth_of_start: usize) -> Entry {
    Entry {
        relative: relative.to_string(),
        path: root.join(relative),
        kind: node.kind,
        depth: depth(relative) - depth_of_start,
        size: node.size(),
        ino: node.stamp.and_then(|stamp| stamp.inode()),
    }
}

/// The build's scratch memory, freed on its own thread, would stay with
/// that thread's allocator arena; hand it back to the system.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The build yields the CPU to tool calls.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority only reads its arguments; on Linux, `who = 0`
    // with PRIO_PROCESS names the calling thread alone.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

/// Changes inside skipped folders (`target`, `node_modules` …) never reach
/// the model: the walker hides them.
fn in_skipped_folder(root: &Path) -> impl Fn(&Path, bool) -> bool + Send + 'static {
    let root = root.to_path_buf();
    move |path, is_dir| {
        let Ok(rest) = path.strip_prefix(&root) else {
            return true;
        };
        let parts: Vec<_> = rest.components().collect();
        parts.iter().enumerate().any(|(index, part)| {
            let is_folder = index + 1 < parts.len() || is_dir;
            is_folder && walk::is_skipped_dir(&part.as_os_str().to_string_lossy())
        })
    }
}

/// Walks the root once (the walker's own sorted walk), reads and indexes
/// every file, and seals shards as they fill. `None` when cancelled, over
/// the memory limit, or the root cannot be walked.
fn build(shared: &Shared) -> Option<Live> {
    let started = Instant::now();
    let root = shared.gate.root();
    // Started first, so that nothing changed during the build is missed.
    let watcher = ChangeWatcher::start(root, in_skipped_folder(root));
    let start = shared.gate.resolve(".").ok()?;
    let mut tree = Tree::new(&shared.gate);
    let mut indexer = Indexer::for_build();
    let mut shards: Vec<Shard> = Vec::new();
    let mut builder = ShardBuilder::new(0);
    let (mut sealed_bytes, mut node_bytes, mut over_limit) = (0usize, 0usize, false);
    walk::walk_sorted(
        &shared.gate,
        &start,
        None,
        &WalkOptions::default(),
        |found| {
            if shared.cancelled.load(Ordering::Relaxed) {
                return ControlFlow::Break(());
            }
            let mut node = tree.make_node(found.kind, &found.relative, &found.path, &mut indexer);
            if let Content::Fresh(trigrams) = &node.content {
                let id = builder.next_id();
                builder.add(trigrams);
                node.content = Content::Base(id);
            }
            node_bytes += found.relative.len() + NODE_BYTES;
            tree.insert(found.relative, node);
            if builder.pairs() >= SHARD_PAIRS {
                let next = ShardBuilder::new(builder.next_id());
                let shard = std::mem::replace(&mut builder, next).finish();
                sealed_bytes += shard.bytes();
                shards.push(shard);
            }
            if sealed_bytes + node_bytes + builder.pairs() * 16 > shared.limit_bytes {
                over_limit = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        },
    )
    .ok()?;
    if over_limit {
        tracing::info!(
            "index: the project needs more than the [index] max_memory_mb limit ({} MB); searches scan the tree",
            shared.limit_bytes / (1024 * 1024)
        );
        return None;
    }
    if shared.cancelled.load(Ordering::Relaxed) {
        return None;
    }
    shards.push(builder.finish());
    indexer.unsorted = false;
    tree.negations = tree.find_negations();
    let live = Live {
        tree,
        sweep_owed: false,
        shards,
        watcher,
        indexer,
    };
    let files = live
        .tree
        .nodes
        .values()
        .filter(|n| matches!(n.content, Content::Base(_)))
        .count();
    return_freed_memory();
    tracing::debug!(
        "index ready: {files} files indexed, {} bytes read, index {} bytes in {} shards, built in {} ms",
        live.indexer.bytes_read,
        live.bytes(),
        live.shards.len(),
        started.elapsed().as_millis()
    );
    Some(live)
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_matcher::Matcher;
    use std::fs;
    use std::time::Duration;

    const WORDS: &[&str] = &[
        "apply",
        "discount",
        "Kelvin",
        "\u{212A}elvin",
        "cla\u{17F}s",
        "class",
        "fn main",
        "let x = 1;",
        "ÄÖÜ",
        "naïve",
        "foo_bar",
        "FooBar",
        "needle",
        "haystack",
        "zebra",
        "quux",
        "a.b",
        "(x)",
        "[y]",
    ];

    /// A small pseudo-random generator, so failures repeat.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) as usize
        }
        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.next() % items.len()]
        }
    }

    fn generated_tree(files: usize, seed: u64) -> (tempfile::TempDir, PathGate) {
        let mut rng = Lcg(seed);
        let dir = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(dir.path()).unwrap();
        for i in 0..files {
            let path = root.join(format!("d{}/e{}/f{i}.txt", i % 7, i % 3));
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut text = String::new();
            for line in 0..(rng.next() % 6) {
                for _ in 0..(rng.next() % 4) {
                    text.push_str(rng.pick(WORDS));
                    text.push(' ');
                }
                text.push_str(&format!("{line}\n"));
            }
            fs::write(path, text).unwrap();
        }
        fs::write(root.join("bin.dat"), b"needle\0apply").unwrap();
        fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        fs::create_dir_all(root.join("ignored")).unwrap();
        fs::write(root.join("ignored/x.txt"), "needle").unwrap();
        let gate = PathGate::new(root, &[]).unwrap();
        (dir, gate)
    }

    fn ready_model(gate: &PathGate) -> TreeModel {
        // Stamps younger than the file system's clock tick are not trusted.
        std::thread::sleep(Duration::from_millis(250));
        let model = TreeModel::open(gate, &IndexConfig::default());
        for _ in 0..500 {
            if model.is_settled() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(model.is_ready());
        model
    }

    /// Files under the root with a line the search's matcher matches.
    fn true_matches(gate: &PathGate, query: &ContentQuery<'_>) -> Vec<String> {
        let matcher = grep_regex::RegexMatcherBuilder::new()
            .case_insensitive(query.case_insensitive)
            .fixed_strings(!query.regex)
            .line_terminator(Some(b'\n'))
            .build(query.pattern)
            .unwrap();
        let start = gate.resolve(".").unwrap();
        walk::walk(gate, &start, None, &WalkOptions::default())
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::File)
            .filter(|e| {
                let text = fs::read(&e.path).unwrap();
                text.split(|&b| b == b'\n')
                    .any(|line| matcher.is_match(line).unwrap())
            })
            .map(|e| e.relative)
            .collect()
    }

    fn candidate_names(
        model: &TreeModel,
        gate: &PathGate,
        query: &ContentQuery<'_>,
    ) -> Vec<String> {
        let start = gate.resolve(".").unwrap();
        model
            .candidates(&start, query)
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect()
    }

    #[test]
    fn candidates_hold_every_match_in_path_order() {
        let (_dir, gate) = generated_tree(400, 7);
        let model = ready_model(&gate);
        let start = gate.resolve(".").unwrap();
        let all: Vec<String> = walk::walk(&gate, &start, None, &WalkOptions::default())
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.relative)
            .collect();
        let mut rng = Lcg(11);
        let mut patterns: Vec<(String, bool)> = Vec::new();
        for word in WORDS {
            let chars: Vec<char> = word.chars().collect();
            let from = rng.next() % chars.len();
            let to = from + 1 + rng.next() % (chars.len() - from);
            patterns.push((chars[from..to].iter().collect(), false));
            patterns.push((word.to_string(), false));
        }
        for regex in [
            r"fn \w+",
            r"foo_?bar",
            r"(needle|zebra) \d",
            r"[kK]elvin",
            r"cla[sſ]s",
            r"^apply",
            r"quux$",
            r"a\.b",
            r"hay(stack)?",
            r"x{2,}",
            r"\bdiscount\b",
            r"(?i)NEEDLE",
            r"[^a]pply",
            r"naïve|ÄÖÜ",
            r".",
            r"\w+",
            r"n.e.d.e",
        ] {
            patterns.push((regex.to_string(), true));
        }
        for (pattern, regex) in &patterns {
            for case_insensitive in [false, true] {
                let query = ContentQuery {
                    pattern,
                    regex: *regex,
                    case_insensitive,
                };
                let candidates = candidate_names(&model, &gate, &query);
                let mut sorted = candidates.clone();
                sorted.sort_by(|a, b| walk::path_order(a, b));
                assert_eq!(candidates, sorted, "{query:?}");
                for found in true_matches(&gate, &query) {
                    assert!(candidates.contains(&found), "{query:?} misses {found}");
                }
                assert!(candidates.iter().all(|c| all.contains(c)), "{query:?}");
            }
        }
        // The index narrows: a word in no file has no text candidates.
        let absent = ContentQuery {
            pattern: "nowhere_to_be_found",
            regex: false,
            case_insensitive: false,
        };
        assert_eq!(candidate_names(&model, &gate, &absent), vec!["bin.dat"]);
        let kelvin = ContentQuery {
            pattern: "kelvin",
            regex: false,
            case_insensitive: true,
        };
        let found = candidate_names(&model, &gate, &kelvin);
        assert!(found.len() < all.len());
        assert_eq!(found.len(), true_matches(&gate, &kelvin).len() + 1);
    }

    #[test]
    fn changes_are_seen_by_the_next_call() {
        let (_dir, gate) = generated_tree(50, 3);
        let model = ready_model(&gate);
        let root = gate.root().to_path_buf();
        let query = ContentQuery {
            pattern: "brand_new_word",
            regex: false,
            case_insensitive: false,
        };
        let names = || candidate_names(&model, &gate, &query);
        assert_eq!(names(), vec!["bin.dat"]);

        // Same size, same second: a rewrite of an indexed file.
        let target = root.join("d0/e0/f0.txt");
        let old = fs::read(&target).unwrap();
        let mut text = b"brand_new_word\n".to_vec();
        text.resize(old.len().max(text.len()), b' ');
        fs::write(&target, &text).unwrap();
        assert!(names().contains(&"d0/e0/f0.txt".to_string()));

        fs::write(root.join("d1/new.txt"), "brand_new_word").unwrap();
        fs::create_dir_all(root.join("fresh/deep")).unwrap();
        fs::write(root.join("fresh/deep/x.txt"), "brand_new_word").unwrap();
        let found = names();
        assert!(found.contains(&"d1/new.txt".to_string()));
        assert!(found.contains(&"fresh/deep/x.txt".to_string()));

        fs::rename(root.join("fresh"), root.join("moved")).unwrap();
        fs::remove_file(root.join("d1/new.txt")).unwrap();
        let found = names();
        assert!(
            !found
                .iter()
                .any(|f| f.starts_with("fresh/") || f == "d1/new.txt")
        );
        assert!(found.contains(&"moved/deep/x.txt".to_string()));

        fs::write(root.join(".gitignore"), "moved/\n").unwrap();
        assert!(!names().iter().any(|f| f.starts_with("moved/")));
        fs::write(root.join(".gitignore"), "").unwrap();
        fs::write(root.join("ignored/x.txt"), "brand_new_word").unwrap();
        assert!(names().contains(&"ignored/x.txt".to_string()));

        // find/list see the same tree.
        let start = gate.resolve(".").unwrap();
        let listed: Vec<String> = model
            .entries(&start, None)
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect();
        let walked: Vec<String> = walk::walk(&gate, &start, None, &WalkOptions::default())
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect();
        assert_eq!(listed, walked);
    }

    #[test]
    fn reported_paths_are_applied_exactly() {
        let (_dir, gate) = generated_tree(30, 4);
        std::thread::sleep(Duration::from_millis(250));
        let shared = Shared {
            gate: gate.clone(),
            limit_bytes: usize::MAX,
            state: Mutex::new(State::Building),
            cancelled: AtomicBool::new(false),
        };
        let mut live = build(&shared).unwrap();
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
        live.tree
            .refresh(changes, &gate, &mut live.indexer)
            .unwrap();
        let edited = &live.tree.nodes[&tree::PathKey("d1/e1/f1.txt".into())];
        assert!(!matches!(edited.content, Content::Base(_)));
        let modelled: Vec<String> = live.tree.nodes.keys().map(|k| k.0.clone()).collect();
        let start = gate.resolve(".").unwrap();
        let walked: Vec<String> = walk::walk(&gate, &start, None, &WalkOptions::default())
            .unwrap()
            .into_iter()
            .map(|e| e.relative)
            .collect();
        assert_eq!(modelled, walked);
    }

    #[test]
    fn the_change_feed_drops_only_paths_in_skipped_folders() {
        let ignored = in_skipped_folder(Path::new("/p"));
        assert!(ignored(Path::new("/p/target/debug/x"), false));
        assert!(ignored(Path::new("/p/a/node_modules"), true));
        assert!(ignored(Path::new("/p/.git/index"), false));
        assert!(ignored(Path::new("/elsewhere/x"), false));
        assert!(!ignored(Path::new("/p/src/target"), false));
        assert!(!ignored(Path::new("/p/src/.gitignore"), false));
        assert!(!ignored(Path::new("/p"), true));
    }

    #[test]
    fn whitelist_rules_keep_the_root_walk_s_answer() {
        let (_dir, gate) = generated_tree(20, 2);
        let root = gate.root().to_path_buf();
        fs::write(root.join(".gitignore"), "ignored/\n*.log\n").unwrap();
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::write(root.join("sub/.gitignore"), "!keep.log\n").unwrap();
        fs::write(root.join("sub/keep.log"), "needle").unwrap();
        fs::write(root.join("sub/drop.log"), "needle").unwrap();
        let model = ready_model(&gate);
        let query = ContentQuery {
            pattern: "needle",
            regex: false,
            case_insensitive: false,
        };
        let walked_files = || -> Vec<String> {
            let start = gate.resolve(".").unwrap();
            walk::walk(&gate, &start, None, &WalkOptions::default())
                .unwrap()
                .into_iter()
                .filter(|e| e.kind == EntryKind::File)
                .map(|e| e.relative)
                .collect()
        };
        let found = candidate_names(&model, &gate, &query);
        assert!(found.contains(&"sub/keep.log".to_string()));
        assert!(found.iter().all(|f| walked_files().contains(f)));
        // A walk from `sub` would decide differently: the model steps aside.
        assert!(
            model
                .candidates(&gate.resolve("sub").unwrap(), &query)
                .is_none()
        );
        // Changes in `sub` are followed as the root walk sees them.
        fs::write(root.join("sub/new.txt"), "needle").unwrap();
        fs::create_dir_all(root.join("sub/deeper")).unwrap();
        fs::write(root.join("sub/deeper/keep.log"), "needle").unwrap();
        let found = candidate_names(&model, &gate, &query);
        for expected in ["sub/keep.log", "sub/new.txt"] {
            assert!(
                found.contains(&expected.to_string()),
                "{expected}: {found:?}"
            );
        }
        let start = gate.resolve(".").unwrap();
        let listed: Vec<String> = model
            .entries(&start, None)
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.relative)
            .collect();
        assert_eq!(listed, walked_files());
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_with_a_name_that_is_not_utf8_is_walked() {
        use std::os::unix::ffi::OsStrExt;
        let (_dir, gate) = generated_tree(20, 1);
        let odd = gate
            .root()
            .join("d1")
            .join(std::ffi::OsStr::from_bytes(b"odd\xff.txt"));
        fs::write(odd, "needle").unwrap();
        let model = ready_model(&gate);
        let query = ContentQuery {
            pattern: "needle",
            regex: false,
            case_insensitive: false,
        };
        assert!(
            model
                .candidates(&gate.resolve(".").unwrap(), &query)
                .is_none()
        );
        assert!(
            model
                .candidates(&gate.resolve("d1").unwrap(), &query)
                .is_none()
        );
        assert!(
            model
                .candidates(&gate.resolve("d2").unwrap(), &query)
                .is_some()
        );
    }

    #[test]
    fn a_tiny_memory_limit_or_enabled_false_switches_the_model_off() {
        let dir = tempfile::tempdir().unwrap();
        let root = dunce::canonicalize(dir.path()).unwrap();
        let mut rng = Lcg(9);
        for i in 0..300 {
            let text: String = (0..4000)
                .map(|_| char::from(b'a' + (rng.next() % 26) as u8))
                .collect();
            fs::write(root.join(format!("f{i}.txt")), text).unwrap();
        }
        let gate = PathGate::new(root, &[]).unwrap();
        std::thread::sleep(Duration::from_millis(250));
        let start = gate.resolve(".").unwrap();
        for config in [
            IndexConfig {
                enabled: true,
                max_memory_mb: 1,
            },
            IndexConfig {
                enabled: false,
                max_memory_mb: 256,
            },
        ] {
            let model = TreeModel::open(&gate, &config);
            for _ in 0..500 {
                if model.is_settled() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(!model.is_ready(), "{config:?}");
            assert!(model.entries(&start, None).is_none());
        }
    }
}
