//! Helpers for the index's unit tests: generated trees, ready models, and
//! the searcher's own answer to compare candidates with.

use std::fs;
use std::time::{Duration, Instant};

use grep_matcher::Matcher;
use regex_syntax::hir::Hir;

use super::TreeModel;
use super::segment::{ContentHash, FileRecord};
use crate::config::IndexConfig;
use crate::security::PathGate;
use crate::walk::{self, EntryKind, Stamp, WalkOptions};

/// A query as the search tool gets it.
#[derive(Debug, Clone, Copy)]
pub(super) struct ContentQuery<'a> {
    pub(super) pattern: &'a str,
    pub(super) regex: bool,
    pub(super) case_insensitive: bool,
}

impl<'a> ContentQuery<'a> {
    /// A case-sensitive literal query.
    pub(super) fn literal(pattern: &'a str) -> Self {
        Self {
            pattern,
            regex: false,
            case_insensitive: false,
        }
    }

    pub(super) fn hir(&self) -> Hir {
        crate::matcher::parse(self.pattern, !self.regex, self.case_insensitive).expect("valid")
    }
}

pub(super) const WORDS: &[&str] = &[
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
    "FOO_BAR_NEEDLE",
    "needle",
    "haystack",
    "zebra",
    "quux",
    "a.b",
    "(x)",
    "[y]",
];

/// A small pseudo-random generator, so failures repeat.
pub(super) struct Lcg(pub(super) u64);
impl Lcg {
    pub(super) fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }
    pub(super) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() % items.len()]
    }
}

pub(super) fn generated_tree(files: usize, seed: u64) -> (tempfile::TempDir, PathGate) {
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
    // Large files, which get long-gram filters too.
    for k in 0..3 {
        let mut text = String::new();
        while text.len() < 70 * 1024 {
            text.push_str(rng.pick(WORDS));
            text.push_str(if rng.next().is_multiple_of(3) {
                "\n"
            } else {
                " "
            });
        }
        fs::write(root.join(format!("large{k}.txt")), text).unwrap();
    }
    fs::write(root.join("bin.dat"), b"needle\0apply").unwrap();
    fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
    fs::create_dir_all(root.join("ignored")).unwrap();
    fs::write(root.join("ignored/x.txt"), "needle").unwrap();
    let gate = PathGate::new(root, &[]).unwrap();
    (dir, gate)
}

/// Waits for the build to finish: seconds in a debug build, more on a
/// machine busy with other tests.
pub(super) fn wait_until_settled(model: &TreeModel) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !model.is_settled() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(super) fn ready_model(gate: &PathGate) -> TreeModel {
    ready_model_within(gate, &IndexConfig::default())
}

pub(super) fn ready_model_within(gate: &PathGate, config: &IndexConfig) -> TreeModel {
    // Stamps younger than the file system's clock tick are not trusted.
    std::thread::sleep(Duration::from_millis(250));
    let model = TreeModel::new(gate, config);
    model.start();
    wait_until_settled(&model);
    assert!(model.is_ready());
    model
}

/// Files under the root with a line the search's matcher matches.
/// Files the searcher would find a match in: it skips binary files.
pub(super) fn true_matches(gate: &PathGate, query: &ContentQuery<'_>) -> Vec<String> {
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
            !crate::corpus::searchable::looks_binary(&text[..text.len().min(4096)])
                && text
                    .split(|&b| b == b'\n')
                    .any(|line| matcher.is_match(line).unwrap())
        })
        .map(|e| e.relative)
        .collect()
}

pub(super) fn candidate_names(
    model: &TreeModel,
    gate: &PathGate,
    query: &ContentQuery<'_>,
) -> Vec<String> {
    let start = gate.resolve(".").unwrap();
    model
        .candidates(&start, &query.hir(), None, usize::MAX)
        .unwrap()
        .names()
}

/// Polls `condition` (a call on the model, which applies changes and
/// wakes the background indexing) until it holds; panics after 10 s.
pub(super) fn until(mut condition: impl FnMut() -> bool) {
    for _ in 0..400 {
        if condition() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("the condition did not hold within 10 s");
}

/// Every path under the root, in the walker's order.
pub(super) fn walked_paths(gate: &PathGate) -> Vec<String> {
    walked(gate, |_| true)
}

/// Every file under the root, in the walker's order.
pub(super) fn walked_files(gate: &PathGate) -> Vec<String> {
    walked(gate, |kind| kind == EntryKind::File)
}

fn walked(gate: &PathGate, keep: impl Fn(EntryKind) -> bool) -> Vec<String> {
    let start = gate.resolve(".").unwrap();
    walk::walk(gate, &start, None, &WalkOptions::default())
        .unwrap()
        .into_iter()
        .filter(|e| keep(e.kind))
        .map(|e| e.relative)
        .collect()
}

/// Segment records of `names`, all with `stamp` and none with a filter.
pub(super) fn unfiltered_records<'a>(names: &[&'a str], stamp: Stamp) -> Vec<FileRecord<'a>> {
    names
        .iter()
        .map(|name| FileRecord {
            name,
            stamp,
            hash: ContentHash::of(name.as_bytes()),
            filter: None,
        })
        .collect()
}

/// Asserts that `retain` (a `retain_holding` of one key) keeps exactly
/// those of `ids` in `listed`, the key's decoded posting list.
pub(super) fn assert_retains_listed(
    mut ids: Vec<u32>,
    listed: &[u32],
    retain: impl FnOnce(&mut Vec<u32>),
    what: &str,
) {
    let expected: Vec<u32> = ids
        .iter()
        .copied()
        .filter(|id| listed.contains(id))
        .collect();
    retain(&mut ids);
    assert_eq!(ids, expected, "{what}");
}
