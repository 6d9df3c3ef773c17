//! The definitions in one source file, read from its syntax tree
//! (tree-sitter), for the outline and definition tools.
//!
//! One walk over the tree: [`Language::classify`] says which nodes define
//! what; this module keeps the enclosing definitions on a stack, so each
//! symbol knows its parent, a function inside a class-like scope becomes a
//! method, and fields or constants inside function bodies (locals) are left
//! out. The walk and the tree are iterative: nesting costs memory in
//! proportion to the file, never stack.
//!
//! Bounded: files over [`MAX_FILE_BYTES`] are not parsed; every parse
//! goes through [`parse`] with the call's [`ParseBudget`], so the parses
//! and walks of one call share one clock ([`CALL_BUDGET`] of parsing) and
//! its cancel flag (the parser's progress callback, then a look every
//! [`NODES_PER_CHECK`] nodes); the memory a parse holds is counted and
//! bounded (`heap`); names and signatures are cut, and invalid UTF-8 is
//! read lossily.

mod heap;
mod languages;
pub mod uses;

use std::mem::ManuallyDrop;
use std::ops::{ControlFlow, Deref, Range};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tree_sitter::{Node, ParseOptions, Parser, Point, Tree};

use crate::cancel::Cancel;
pub use heap::{MAX_BYTES_PER_SOURCE_BYTE, MAX_PARSE_BYTES, MAX_TOTAL_PARSE_BYTES};
use heap::{Reservation, WaitEnded};
use languages::Definition;
pub use languages::{Language, file_ending};

/// Largest file parsed: the search's limit, so both see the same files.
pub const MAX_FILE_BYTES: u64 = crate::corpus::searchable::MAX_SEARCHED_BYTES;
/// Longest one call's parses and walks may run, as wall-clock time while
/// any of them runs: a 2 MiB file of C takes a fraction of it, with room
/// for a machine busy with other work.
pub const CALL_BUDGET: Duration = Duration::from_secs(10);
/// Signatures (a definition's first line) are cut to this many characters.
pub const MAX_SIGNATURE_CHARS: usize = 200;
/// Names are cut to this many characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Bytes looked at on either side of a definition's start for its line: a
/// file of one huge line costs this much per definition, not the line.
const LINE_SCAN_BYTES: usize = 4 * MAX_SIGNATURE_CHARS;
/// Syntax nodes visited between two looks at the cancel flag and the clock.
const NODES_PER_CHECK: usize = 4096;

/// What a definition is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum SymbolKind {
    Function,
    Method,
    Class,
    Struct,
    Enum,
    Trait,
    Interface,
    Module,
    Constant,
    Type,
    Field,
    Macro,
}

impl SymbolKind {
    /// Scopes whose functions are methods.
    fn has_methods(self) -> bool {
        matches!(
            self,
            Self::Class | Self::Struct | Self::Enum | Self::Trait | Self::Interface
        )
    }

    fn is_function(self) -> bool {
        matches!(self, Self::Function | Self::Method)
    }
}

/// One definition, in source order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub kind: SymbolKind,
    pub name: String,
    /// 1-based line where the definition starts (attributes, decorators
    /// and annotations before it left out).
    pub line: u64,
    /// 1-based last line of the definition.
    pub end_line: u64,
    /// 1-based line of the name itself: after `line` when a C return type
    /// or a signature's first part stands on lines of its own.
    pub name_line: u64,
    /// The definition's first line, trimmed, cut to [`MAX_SIGNATURE_CHARS`].
    pub signature: String,
    /// The name of what it belongs to: the enclosing definition, the type
    /// of a Rust `impl` block, a Go receiver, C++'s `Type::`.
    pub parent: Option<String>,
    /// Index in the list of the enclosing symbol.
    pub parent_index: Option<usize>,
    /// Nesting: 0 at the top, one more per enclosing symbol.
    pub level: usize,
    /// Bytes of the whole definition in the source.
    pub bytes: Range<usize>,
    /// Bytes of the name in the source.
    pub name_bytes: Range<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the call's {}-second parse budget ran out", CALL_BUDGET.as_secs())]
    OutOfTime,
    #[error("the request was cancelled")]
    Cancelled,
    /// The parse would hold more than `limit` bytes: its file's share.
    #[error(
        "its syntax tree needs more than {} MiB (a parse may hold {} KiB per byte of its file, at most {} MiB)",
        limit.div_ceil(1 << 20),
        MAX_BYTES_PER_SOURCE_BYTE / 1024,
        MAX_PARSE_BYTES >> 20
    )]
    TooLarge { limit: usize },
    #[error("the grammar could not be loaded")]
    Grammar,
}

/// What one call may spend on parsing: made once per call and handed to
/// every parse and walk of it, so they share one clock and the call's
/// cancel flag.
///
/// The clock runs while at least one of the call's parses or walks runs,
/// on any thread: the bound is on the work a file can cause, so the time
/// a call spends reading files, finding candidates or stalled in a system
/// call between parses (seconds, on a loaded machine) is not counted.
#[derive(Debug, Clone)]
pub struct ParseBudget {
    time: Duration,
    clock: Arc<Mutex<ParseClock>>,
    cancel: Cancel,
}

/// The time a call's parses and walks have taken, counted once when they
/// run at the same time on several threads.
#[derive(Debug, Default)]
struct ParseClock {
    /// Parses and walks running now.
    running: usize,
    /// When `running` last went up from 0; `None` while it is 0.
    since: Option<Instant>,
    /// The time of the runs that have ended.
    ended: Duration,
}

impl ParseClock {
    fn spent(&self, now: Instant) -> Duration {
        self.ended
            + self
                .since
                .map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
    }
}

impl ParseBudget {
    /// [`CALL_BUDGET`] of parsing, stopped by `cancel`.
    pub fn for_call(cancel: &Cancel) -> Self {
        Self::lasting(CALL_BUDGET, cancel)
    }

    /// `time` of parsing, stopped by `cancel`.
    pub fn lasting(time: Duration, cancel: &Cancel) -> Self {
        Self {
            time,
            clock: Arc::default(),
            cancel: cancel.clone(),
        }
    }

    /// An error once the call is cancelled or its time has run out.
    pub fn check(&self) -> Result<(), ParseError> {
        if self.cancel.is_cancelled() {
            Err(ParseError::Cancelled)
        } else if self.remaining().is_zero() {
            Err(ParseError::OutOfTime)
        } else {
            Ok(())
        }
    }

    /// The parsing time left.
    fn remaining(&self) -> Duration {
        let spent = self.lock().spent(Instant::now());
        self.time.saturating_sub(spent)
    }

    /// Runs the clock until the guard is dropped.
    fn running(&self) -> Running<'_> {
        let mut clock = self.lock();
        if clock.running == 0 {
            clock.since = Some(Instant::now());
        }
        clock.running += 1;
        Running { budget: self }
    }

    fn lock(&self) -> MutexGuard<'_, ParseClock> {
        self.clock.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One parse or walk of a call, its time counted while it lives.
struct Running<'a> {
    budget: &'a ParseBudget,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut clock = self.budget.lock();
        clock.running = clock.running.saturating_sub(1);
        if clock.running == 0
            && let Some(since) = clock.since.take()
        {
            clock.ended += since.elapsed();
        }
    }
}

/// A syntax tree, with the parser that made it and its share of the
/// parse memory; dropping it hands them to the reaper thread, so the
/// caller never waits for a large tree to be freed.
pub struct ParsedTree {
    parsed: ManuallyDrop<(Tree, Parser, Reservation)>,
}

impl Deref for ParsedTree {
    type Target = Tree;

    fn deref(&self) -> &Tree {
        &self.parsed.0
    }
}

impl Drop for ParsedTree {
    fn drop(&mut self) {
        // SAFETY: `parsed` is taken once, here, and never used again.
        let parsed = unsafe { ManuallyDrop::take(&mut self.parsed) };
        heap::discard(Box::new(parsed));
    }
}

/// An enclosing definition while the walk is inside it.
struct Scope {
    /// Depth of its node in the tree: the scope ends when the walk leaves it.
    depth: usize,
    /// `None` for a block that only names an owner (Rust's `impl`).
    kind: Option<SymbolKind>,
    name: String,
    symbol: Option<usize>,
}

/// The definitions in `source`, a file of `language`, in source order,
/// within the call's `budget`.
pub fn definitions(
    language: Language,
    source: &[u8],
    budget: &ParseBudget,
) -> Result<Vec<Symbol>, ParseError> {
    // The walk shares the budget: a tree of a million nodes that parsed
    // just inside it must not take as long again to walk.
    let tree = parse(language, source, budget)?;
    definitions_in(language, &tree, source, budget)
}

/// The definitions in `tree`, the syntax tree of `source`, within the
/// call's `budget`.
fn definitions_in(
    language: Language,
    tree: &tree_sitter::Tree,
    source: &[u8],
    budget: &ParseBudget,
) -> Result<Vec<Symbol>, ParseError> {
    let _walking = budget.running();
    let mut symbols = Vec::new();
    let mut scopes: Vec<Scope> = Vec::new();
    let mut cursor = tree.walk();
    let mut depth = 0usize;
    let mut visited = 0usize;
    loop {
        visited += 1;
        if visited.is_multiple_of(NODES_PER_CHECK) {
            budget.check()?;
        }
        let node = cursor.node();
        match language.classify(node, source) {
            Some(Definition::Symbols { kind, names, owner }) => {
                let enclosing = scopes.last();
                let enclosing_kind = enclosing.and_then(|scope| scope.kind);
                let in_type =
                    enclosing.is_some_and(|scope| scope.kind.is_none_or(SymbolKind::has_methods));
                let in_function = enclosing_kind.is_some_and(SymbolKind::is_function);
                let kind = match kind {
                    SymbolKind::Function if in_type => SymbolKind::Method,
                    other => other,
                };
                let local = in_function && matches!(kind, SymbolKind::Field | SymbolKind::Constant);
                // C has no nested functions: one inside a function body is a
                // macro loop (`list_for_each(pos, head) { … }`) read as one.
                let misread = (in_function && kind.is_function() && !language.nests_functions())
                    || names
                        .iter()
                        .any(|name| language.is_keyword(&source[name.byte_range()]));
                if !local && !misread {
                    let parent_index = scopes.iter().rev().find_map(|scope| scope.symbol);
                    let level =
                        parent_index.map_or(0, |index: usize| symbols_level(&symbols, index) + 1);
                    let parent = owner.or_else(|| enclosing.map(|scope| scope.name.clone()));
                    let (line, signature) = first_line(node, source);
                    let end_line = end_line(node);
                    let first = symbols.len();
                    for name in names {
                        symbols.push(Symbol {
                            kind,
                            name: cut(
                                &String::from_utf8_lossy(&source[name.byte_range()]),
                                MAX_NAME_CHARS,
                            ),
                            line,
                            end_line,
                            name_line: name.start_position().row as u64 + 1,
                            signature: signature.clone(),
                            parent: parent.clone(),
                            parent_index,
                            level,
                            bytes: node.byte_range(),
                            name_bytes: name.byte_range(),
                        });
                    }
                    if let Some(symbol) = symbols.get(first) {
                        scopes.push(Scope {
                            depth,
                            kind: Some(kind),
                            name: symbol.name.clone(),
                            symbol: Some(first),
                        });
                    }
                }
            }
            Some(Definition::Scope { owner }) => scopes.push(Scope {
                depth,
                kind: None,
                name: cut(&owner, MAX_NAME_CHARS),
                symbol: None,
            }),
            None => {}
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        // Leave this node, and every parent whose last child it was.
        loop {
            while scopes.last().is_some_and(|scope| scope.depth >= depth) {
                scopes.pop();
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return Ok(symbols);
            }
            depth -= 1;
        }
    }
}

fn symbols_level(symbols: &[Symbol], index: usize) -> usize {
    symbols.get(index).map_or(0, |symbol| symbol.level)
}

/// The syntax tree of `source`, within the call's `budget` and the
/// memory the file's size allows ([`heap::parse_limit`]). A parse waits
/// for its share of the process's parse memory first, so large files are
/// parsed one at a time.
pub fn parse(
    language: Language,
    source: &[u8],
    budget: &ParseBudget,
) -> Result<ParsedTree, ParseError> {
    budget.check()?;
    heap::install();
    let limit = heap::parse_limit(source.len());
    // Waiting for the pool runs no clock: the wait is bounded by the time
    // left as it starts.
    let waited_until = Instant::now() + budget.remaining();
    let reservation = Reservation::take(limit, waited_until, || budget.cancel.is_cancelled())
        .map_err(|ended| match ended {
            WaitEnded::Cancelled => ParseError::Cancelled,
            WaitEnded::OutOfTime => ParseError::OutOfTime,
        })?;
    let _parsing = budget.running();
    let limit = reservation.bytes();
    let held_before = heap::thread_held();
    let over_limit = || heap::thread_held().saturating_sub(held_before) > limit as isize;
    let mut parser = Parser::new();
    if parser.set_language(&language.grammar()).is_err() {
        heap::discard(Box::new((parser, reservation)));
        return Err(ParseError::Grammar);
    }
    let mut stopped_by = None;
    let mut progress = |_: &tree_sitter::ParseState| {
        let stop = match budget.check() {
            Err(error) => Some(error),
            Ok(()) if over_limit() => Some(ParseError::TooLarge { limit }),
            Ok(()) => None,
        };
        match stop {
            Some(error) => {
                stopped_by = Some(error);
                ControlFlow::Break(())
            }
            None => ControlFlow::Continue(()),
        }
    };
    let length = source.len();
    let tree = parser.parse_with_options(
        &mut |offset: usize, _: Point| source.get(offset..length).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut progress)),
    );
    let stopped_by = stopped_by.unwrap_or(ParseError::OutOfTime);
    match tree {
        // The last steps of a parse (balancing the tree) may still grow it.
        Some(tree) if over_limit() => {
            heap::discard(Box::new((tree, parser, reservation)));
            Err(ParseError::TooLarge { limit })
        }
        Some(tree) => Ok(ParsedTree {
            parsed: ManuallyDrop::new((tree, parser, reservation)),
        }),
        None => {
            // A stopped parser keeps its state to resume: the reaper frees it.
            heap::discard(Box::new((parser, reservation)));
            Err(stopped_by)
        }
    }
}

/// Leading children that are not the definition's own first line.
const PREAMBLE: &[&str] = &[
    "attribute_item",
    "attribute",
    "attribute_list",
    "decorator",
    "marker_annotation",
    "annotation",
    "comment",
    "line_comment",
    "block_comment",
];

/// The line a definition starts on, past its attributes and annotations,
/// and that line's text.
fn first_line(node: Node<'_>, source: &[u8]) -> (u64, String) {
    let start = code_start(node);
    let row = start.start_position().row as u64 + 1;
    let at = start.start_byte();
    let scan_from = at.saturating_sub(LINE_SCAN_BYTES);
    // Without a line start nearby, the line is shown from the definition on.
    let from = source[scan_from..at]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(at, |newline| scan_from + newline + 1);
    let until = (at + LINE_SCAN_BYTES).min(source.len());
    let to = source[at..until]
        .iter()
        .position(|&byte| byte == b'\n' || byte == b'\r')
        .map_or(until, |end| at + end);
    let line = String::from_utf8_lossy(&source[from..to]);
    (row, cut(line.trim(), MAX_SIGNATURE_CHARS))
}

/// The first child that is code, looking into Java's `modifiers`.
fn code_start(node: Node<'_>) -> Node<'_> {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor).take(32) {
        if PREAMBLE.contains(&child.kind()) {
            continue;
        }
        if child.kind() == "modifiers" {
            let mut inner = child.walk();
            if let Some(first) = child
                .children(&mut inner)
                .take(32)
                .find(|modifier| !PREAMBLE.contains(&modifier.kind()))
            {
                return first;
            }
            continue;
        }
        return child;
    }
    node
}

/// The last line of a definition; a node that ends at the start of a line
/// ends on the line before.
fn end_line(node: Node<'_>) -> u64 {
    let (start, end) = (node.start_position(), node.end_position());
    if end.column == 0 && end.row > start.row {
        end.row as u64
    } else {
        end.row as u64 + 1
    }
}

/// `text` cut to `max_chars` characters, control characters as spaces.
fn cut(text: &str, max_chars: usize) -> String {
    text.chars()
        .take(max_chars)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests;
