//! Where one name is used in a source file: the identifiers in code that
//! spell it, read from the same syntax tree as the definitions.
//!
//! A use is an identifier-like leaf of the tree (identifier, field,
//! property, type, namespace, package, label …) whose text is the name;
//! comments and string literals are leaves of other kinds, so they never
//! count, while the code inside a Python f-string or a JavaScript template
//! literal does. The names of the definitions [`super::definitions`]
//! reports are left out; everything else that spells the name counts,
//! imports, parameters and local variables included (they are not
//! definitions the symbol tools report), but for a name a Python `def` or
//! `class` defines, whose scope rules are simple enough to follow
//! ([`python`]: same-named parameters, assignment targets, locals and
//! other objects' attributes are left out). A C or C++ macro body is
//! raw text to the grammar, so it is read as C tokens, without its
//! comments and literals.
//!
//! Bounded like the outline: the call's [`ParseBudget`] for the parse and
//! both walks (looked at every [`super::NODES_PER_CHECK`] nodes), an
//! iterative walk (nesting costs no stack), lines cut.

use std::collections::HashSet;

use tree_sitter::Node;

use super::{Language, NODES_PER_CHECK, ParseBudget, ParseError, Symbol, cut};

pub mod python;

/// A use's line is shown up to this many characters.
pub const MAX_LINE_CHARS: usize = 300;
/// A use further than this into its line is shown from shortly before it,
/// so that a long line still shows the use.
const LINE_LEAD_BYTES: usize = 100;

/// The lines of one file where the name is used, one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// 1-based line.
    pub line: u64,
    /// The line's text (from shortly before the use when it is far in),
    /// cut to [`MAX_LINE_CHARS`] characters, control characters as spaces.
    pub text: String,
    /// The innermost definition holding the first use on the line, as
    /// `Parent.name` where it has a parent; `None` at the top level.
    pub within: Option<String>,
}

/// Leaf kinds that name something in code, across the grammars offered.
const IDENTIFIER_KINDS: &[&str] = &[
    "identifier",
    "field_identifier",
    "type_identifier",
    "property_identifier",
    "shorthand_property_identifier",
    "shorthand_property_identifier_pattern",
    "shorthand_field_identifier",
    "namespace_identifier",
    "package_identifier",
    "statement_identifier",
    "label_name",
    "primitive_type",
];

/// Whether `byte` can be part of an identifier in the languages offered
/// (any byte of a non-ASCII character counts, so `é` joins a word).
pub fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80
}

/// Whether `name` is one identifier: letters, digits, `_` and `$`.
pub fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

/// Whether `source` holds `name` as a whole word: the cheap test before a
/// parse.
pub fn holds_word(source: &[u8], finder: &memchr::memmem::Finder<'_>) -> bool {
    let length = finder.needle().len();
    finder.find_iter(source).any(|at| {
        let before = at.checked_sub(1).and_then(|i| source.get(i));
        let after = source.get(at + length);
        !before.is_some_and(|&b| is_word_byte(b)) && !after.is_some_and(|&b| is_word_byte(b))
    })
}

/// What a lookup asks for.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub name: &'a str,
    /// `Class.name`: in Python, only the uses tied to that class's member;
    /// in the other languages every use of the name.
    pub class: Option<&'a str>,
    /// What the project's Python files define under the name
    /// ([`python::Defined::in_source`] over all of them): Python's scope
    /// rules apply to a name defined there.
    pub python: python::Defined,
}

/// The uses of what `lookup` asks for in `source`, a file of `language`,
/// in line order.
pub fn uses(
    language: Language,
    source: &[u8],
    lookup: &Lookup<'_>,
    budget: &ParseBudget,
) -> Result<Vec<Use>, ParseError> {
    let tree = super::parse(language, source, budget)?;
    let definitions = super::definitions_in(language, &tree, source, budget)?;
    let root = tree.root_node();
    let name = lookup.name.as_bytes();
    let starts = if language == Language::Python && lookup.python.anywhere {
        let wanted = python::Wanted {
            name,
            class: lookup.class.map(str::as_bytes),
            member_uses: lookup.python.as_method,
        };
        python::spelled_at(root, source, wanted, budget)?
    } else {
        spelled_at(root, source, name, budget)?
    };
    Ok(by_line(source, &starts, &definitions))
}

/// Where `name` is spelled in code, as byte offsets in source order.
fn spelled_at(
    root: Node<'_>,
    source: &[u8],
    name: &[u8],
    budget: &ParseBudget,
) -> Result<Vec<usize>, ParseError> {
    let _walking = budget.running();
    let mut found = Vec::new();
    let mut cursor = root.walk();
    let mut visited = 0usize;
    loop {
        visited += 1;
        if visited.is_multiple_of(NODES_PER_CHECK) {
            budget.check()?;
        }
        let node = cursor.node();
        let range = node.byte_range();
        // Subtrees too short to hold the name are skipped whole.
        let fits = range.len() >= name.len();
        if fits && node.child_count() == 0 {
            if node.kind() == "preproc_arg" {
                macro_tokens(source, range, name, &mut found);
            } else if IDENTIFIER_KINDS.contains(&node.kind())
                && source.get(range.clone()) == Some(name)
            {
                found.push(range.start);
            }
        }
        if fits && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return Ok(found);
            }
        }
    }
}

/// The identifiers spelling `name` in a C macro body, past its comments and
/// string and character literals.
fn macro_tokens(source: &[u8], range: std::ops::Range<usize>, name: &[u8], found: &mut Vec<usize>) {
    let body = &source[range.clone()];
    let mut at = 0;
    while let Some(&byte) = body.get(at) {
        let rest = &body[at..];
        if rest.starts_with(b"/*") {
            at += 2 + memchr::memmem::find(&rest[2..], b"*/").map_or(rest.len() - 2, |end| end + 2);
        } else if rest.starts_with(b"//") {
            at += memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        } else if byte == b'"' || byte == b'\'' {
            at += 1;
            while let Some(&inner) = body.get(at) {
                at += 1;
                if inner == b'\\' {
                    at += 1;
                } else if inner == byte || inner == b'\n' {
                    break;
                }
            }
        } else if is_word_byte(byte) {
            let length = body[at..]
                .iter()
                .position(|&b| !is_word_byte(b))
                .unwrap_or(body.len() - at);
            if &body[at..at + length] == name {
                found.push(range.start + at);
            }
            at += length;
        } else {
            at += 1;
        }
    }
}

/// One use per line, the definitions' own names left out, each with the
/// innermost definition holding it.
fn by_line(source: &[u8], starts: &[usize], definitions: &[Symbol]) -> Vec<Use> {
    let names: HashSet<usize> = definitions
        .iter()
        .map(|definition| definition.name_bytes.start)
        .collect();
    let mut uses: Vec<Use> = Vec::new();
    let mut line = 1u64;
    let mut counted_to = 0usize;
    let mut next_definition = 0usize;
    // The definitions holding the current position, outermost first.
    let mut open: Vec<&Symbol> = Vec::new();
    for &start in starts {
        if names.contains(&start) {
            continue;
        }
        while let Some(definition) = definitions.get(next_definition) {
            if definition.bytes.start > start {
                break;
            }
            next_definition += 1;
            open.retain(|outer| outer.bytes.end > definition.bytes.start);
            // Several names of one definition (`const a, b`): the first.
            if open
                .last()
                .is_none_or(|outer| outer.bytes != definition.bytes)
            {
                open.push(definition);
            }
        }
        open.retain(|outer| outer.bytes.end > start);
        line += memchr::memchr_iter(b'\n', &source[counted_to..start]).count() as u64;
        counted_to = start;
        if uses.last().is_some_and(|last| last.line == line) {
            continue;
        }
        uses.push(Use {
            line,
            text: line_text(source, start),
            within: open.last().map(|definition| match &definition.parent {
                Some(parent) => format!("{parent}.{}", definition.name),
                None => definition.name.clone(),
            }),
        });
    }
    uses
}

/// The line holding byte `at`, from its start or, far into a long line,
/// from shortly before `at`.
fn line_text(source: &[u8], at: usize) -> String {
    let scan_from = at.saturating_sub(LINE_LEAD_BYTES * 2);
    let line_start = source[scan_from..at]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map(|newline| scan_from + newline + 1);
    let mut from = line_start.unwrap_or(at.saturating_sub(LINE_LEAD_BYTES));
    // Not inside a character: on to the next one's first byte.
    while from < at && (source[from] & 0xC0) == 0x80 {
        from += 1;
    }
    let until = (at + MAX_LINE_CHARS * 4).min(source.len());
    let to = source[at..until]
        .iter()
        .position(|&byte| byte == b'\n' || byte == b'\r')
        .map_or(until, |end| at + end);
    cut(&String::from_utf8_lossy(&source[from..to]), MAX_LINE_CHARS)
}

#[cfg(test)]
mod tests;
