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
//! Bounded: files over [`MAX_FILE_BYTES`] are not parsed, the parse and
//! the walk together stop after [`PARSE_BUDGET`] or when the call is
//! cancelled (the parser's progress callback, then a look every
//! [`NODES_PER_CHECK`] nodes), names and signatures are cut, and
//! invalid UTF-8 is read lossily.

mod languages;
pub mod uses;

use std::ops::{ControlFlow, Range};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tree_sitter::{Node, ParseOptions, Parser, Point};

use crate::cancel::Cancel;
use languages::Definition;
pub use languages::{Language, file_ending};

/// Largest file parsed: the search's limit, so both see the same files.
pub const MAX_FILE_BYTES: u64 = crate::corpus::searchable::MAX_SEARCHED_BYTES;
/// Longest one file's parse and walk may take, as wall-clock time: a 2 MiB
/// file of C takes a fraction of it, with room for a machine busy with other
/// work.
pub const PARSE_BUDGET: Duration = Duration::from_secs(10);
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
    #[error("parsing took longer than {} seconds", PARSE_BUDGET.as_secs())]
    TimedOut,
    #[error("the request was cancelled")]
    Cancelled,
    #[error("the grammar could not be loaded")]
    Grammar,
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

/// The definitions in `source`, a file of `language`, in source order.
pub fn definitions(
    language: Language,
    source: &[u8],
    cancel: &Cancel,
) -> Result<Vec<Symbol>, ParseError> {
    // One deadline for both: a tree of a million nodes that parsed just
    // inside the budget must not take as long again to walk.
    let deadline = Instant::now() + PARSE_BUDGET;
    let tree = parse(language, source, cancel, deadline)?;
    definitions_in(language, &tree, source, cancel, deadline)
}

/// The definitions in `tree`, the syntax tree of `source`.
fn definitions_in(
    language: Language,
    tree: &tree_sitter::Tree,
    source: &[u8],
    cancel: &Cancel,
    deadline: Instant,
) -> Result<Vec<Symbol>, ParseError> {
    let mut symbols = Vec::new();
    let mut scopes: Vec<Scope> = Vec::new();
    let mut cursor = tree.walk();
    let mut depth = 0usize;
    let mut visited = 0usize;
    loop {
        visited += 1;
        if visited.is_multiple_of(NODES_PER_CHECK) {
            if cancel.is_cancelled() {
                return Err(ParseError::Cancelled);
            }
            if Instant::now() > deadline {
                return Err(ParseError::TimedOut);
            }
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

/// The syntax tree, by `deadline` and within the cancel flag.
fn parse(
    language: Language,
    source: &[u8],
    cancel: &Cancel,
    deadline: Instant,
) -> Result<tree_sitter::Tree, ParseError> {
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|_| ParseError::Grammar)?;
    let mut stopped_by = None;
    let mut progress = |_: &tree_sitter::ParseState| {
        if cancel.is_cancelled() {
            stopped_by = Some(ParseError::Cancelled);
            ControlFlow::Break(())
        } else if Instant::now() > deadline {
            stopped_by = Some(ParseError::TimedOut);
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let length = source.len();
    let tree = parser.parse_with_options(
        &mut |offset: usize, _: Point| source.get(offset..length).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut progress)),
    );
    match tree {
        Some(tree) => Ok(tree),
        None => Err(stopped_by.unwrap_or(ParseError::TimedOut)),
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
