//! `find_symbol_definitions`: where a name is defined across the project.
//!
//! Only a file that contains the name can define it, so the files are the
//! corpus's documents for a literal query of the name, with the same skip
//! and deny rules as search; each of a known language that holds the name
//! is parsed (on the corpus's worker threads). Documents come in path order
//! and definitions in line order, so the scan stops once the page is full.

use std::ops::ControlFlow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{JsonBudget, Status, ToolError};
use crate::cancel::Cancel;
use crate::corpus::{Corpus, Document, Outcome, Reader};
use crate::symbols::{self, Language, ParseBudget, ParseError, SymbolKind, uses};
use crate::walk::WalkOptions;

pub const DEFAULT_MAX_RESULTS: usize = 50;
pub const MAX_RESULTS_CAP: usize = 200;
/// Largest `offset`: paging deeper means parsing that many definitions first.
pub const MAX_OFFSET: usize = 10_000;
/// Longest `name` accepted, in characters.
pub const MAX_NAME_CHARS: usize = 256;
/// Largest answer as JSON text (escapes counted in full).
pub const MAX_RESULT_CHARS: usize = 200_000;
/// Files named in a `note` about files that could not be parsed.
const MAX_NOTED_FILES: usize = 5;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DefinitionsInput {
    /// The exact, case-sensitive name defined, e.g. `apply_discount` or `Order` (no qualifier).
    #[schemars(length(min = 1, max = MAX_NAME_CHARS))]
    pub name: String,
    /// Only definitions of this kind (default: any).
    #[serde(default)]
    pub kind: Option<SymbolKind>,
    /// Folder (or single file) to look in, relative to the project root; `.` (the default) is the root.
    #[serde(default = "super::root_path")]
    pub path: String,
    /// Maximum number of definitions to return.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = MAX_RESULTS_CAP))]
    pub max_results: usize,
    /// Skip this many definitions first, for paging (use with max_results).
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_OFFSET))]
    pub offset: usize,
}

fn default_max_results() -> usize {
    DEFAULT_MAX_RESULTS
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DefinitionsOutput {
    pub status: Status,
    /// The name looked for.
    pub name: String,
    /// Definitions sorted by file path, then line.
    pub definitions: Vec<SymbolDefinition>,
    /// Number of definitions returned.
    pub count: usize,
    /// True when more definitions exist past this page: call again with a higher offset.
    pub truncated: bool,
    /// Present when files that hold the name could not be parsed (their syntax trees need more memory than a parse may hold), naming some of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct SymbolDefinition {
    /// Path relative to the project root.
    pub file: String,
    /// 1-based line where the definition starts.
    pub line: u64,
    /// 1-based last line of the definition.
    pub end_line: u64,
    /// function, method, class, struct, enum, trait, interface, module, constant, type, field or macro.
    pub kind: SymbolKind,
    pub name: String,
    /// What it belongs to (class, impl type, receiver, namespace …); null at the top level.
    pub parent: Option<String>,
    /// The definition's first line, cut to 200 characters.
    pub signature: String,
}

impl DefinitionsInput {
    pub fn log_params(&self) -> String {
        format!(
            "name={:?} kind={:?} path={:?} max_results={} offset={}",
            self.name, self.kind, self.path, self.max_results, self.offset
        )
    }
}

impl DefinitionsOutput {
    pub fn log_summary(&self) -> String {
        format!("count={} truncated={}", self.count, self.truncated)
    }
}

/// What the files looked at so far gave.
#[derive(Default)]
struct Found {
    /// Definitions past `offset`, in order, at most a page and one.
    page: Vec<SymbolDefinition>,
    /// Definitions before `offset`, counted only.
    skipped: usize,
    unparsed: Vec<String>,
    /// Files parsed, for the message when the budget runs out.
    parsed: usize,
    /// The file the call's parse budget ran out on.
    out_of_time: Option<String>,
}

pub fn find_definitions(
    corpus: &Corpus<'_>,
    input: &DefinitionsInput,
    cancel: &Cancel,
) -> Result<DefinitionsOutput, ToolError> {
    look_up(corpus, input, cancel, &ParseBudget::for_call(cancel))
}

/// The lookup, its parses and walks within `budget`.
fn look_up(
    corpus: &Corpus<'_>,
    input: &DefinitionsInput,
    cancel: &Cancel,
    budget: &ParseBudget,
) -> Result<DefinitionsOutput, ToolError> {
    let name = input.name.as_str();
    ToolError::check_size("name", name, MAX_NAME_CHARS)?;
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ToolError::invalid(
            "name must be one identifier without spaces, e.g. 'apply_discount' or 'Order'; for text use search_project_files",
        ));
    }
    if input.offset > MAX_OFFSET {
        return Err(ToolError::invalid(format!(
            "offset {} is over the maximum of {MAX_OFFSET}; narrow the lookup with path or kind instead of paging this deep",
            input.offset
        )));
    }
    let max_results = input.max_results.clamp(1, MAX_RESULTS_CAP);
    let wanted = max_results + 1;
    let start = corpus.gate().resolve(&input.path)?;
    let query = crate::matcher::parse(name, true, false).map_err(ToolError::invalid)?;
    let options = WalkOptions {
        include_ignored: false,
        cancel: cancel.clone(),
    };
    let reader = Parser::new(name, input.kind, budget);
    let mut found = Found::default();
    corpus
        .scan(
            &start,
            &query,
            &options,
            |name| Language::of_path(name).is_some(),
            &reader,
            |file: FileDefinitions| {
                if file.out_of_time.is_some() {
                    found.out_of_time = file.out_of_time;
                    return ControlFlow::Break(());
                }
                found.parsed += usize::from(file.parsed);
                found.unparsed.extend(file.unparsed);
                for definition in file.definitions {
                    if found.page.len() >= wanted {
                        break;
                    }
                    if found.skipped < input.offset {
                        found.skipped += 1;
                        continue;
                    }
                    found.page.push(definition);
                }
                if found.page.len() >= wanted {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )
        .map_err(|error| ToolError::io(&start.relative, &error))?;
    ToolError::check_cancel(cancel)?;
    if let Some(last) = &found.out_of_time {
        return Err(out_of_time(name, &found, last));
    }
    Ok(assemble(name, found, max_results))
}

/// The answer when the call's parse budget ran out before the page was
/// full: the definitions found so far may not be all there are before the
/// page's end, so none are given as if they were.
fn out_of_time(name: &str, found: &Found, last: &str) -> ToolError {
    ToolError::invalid(format!(
        "looking up '{name}' ran out of the {}-second parse budget after parsing {} file(s) that hold the name, before '{last}'; give a narrower path (a folder or one file), or use search_project_files to find the name as text",
        symbols::CALL_BUDGET.as_secs(),
        found.parsed
    ))
}

/// What one file gave: its definitions of the name, in line order, or its
/// name when it could not be parsed or the call's budget ran out on it.
#[derive(Debug, Default, Clone)]
struct FileDefinitions {
    definitions: Vec<SymbolDefinition>,
    /// The file was parsed.
    parsed: bool,
    unparsed: Option<String>,
    out_of_time: Option<String>,
}

impl Outcome for FileDefinitions {
    fn renamed(&self, document: &Document) -> Option<Self> {
        let file = document.name().to_string();
        Some(FileDefinitions {
            definitions: self
                .definitions
                .iter()
                .map(|definition| SymbolDefinition {
                    file: file.clone(),
                    ..definition.clone()
                })
                .collect(),
            parsed: self.parsed,
            unparsed: self.unparsed.as_ref().map(|_| file.clone()),
            out_of_time: self.out_of_time.as_ref().map(|_| file.clone()),
        })
    }

    fn weight(&self) -> usize {
        self.definitions
            .iter()
            .map(|definition| {
                definition.file.len() + definition.signature.len() + definition.name.len()
            })
            .sum()
    }
}

/// Parses each document of a known language that holds the name: as a
/// whole word when it is an identifier (a definition's name is a whole
/// token; `init` is in four times as many of u-boot's files as a part of
/// longer words), else anywhere.
struct Parser<'a> {
    name: &'a str,
    kind: Option<SymbolKind>,
    finder: memchr::memmem::Finder<'a>,
    /// The name is an identifier: looked for as a whole word.
    whole_word: bool,
    budget: &'a ParseBudget,
}

impl<'a> Parser<'a> {
    fn new(name: &'a str, kind: Option<SymbolKind>, budget: &'a ParseBudget) -> Self {
        Self {
            name,
            kind,
            finder: memchr::memmem::Finder::new(name.as_bytes()),
            whole_word: uses::is_identifier(name),
            budget,
        }
    }

    fn may_define(&self, source: &[u8]) -> bool {
        if self.whole_word {
            uses::holds_word(source, &self.finder)
        } else {
            self.finder.find(source).is_some()
        }
    }
}

impl Reader for Parser<'_> {
    type Scratch = ();
    type Outcome = FileDefinitions;

    fn scratch(&self) {}

    fn evaluate(&self, _: &mut (), document: &Document, source: &[u8]) -> FileDefinitions {
        let file = document.name();
        let Some(language) = Language::of_path(file) else {
            return FileDefinitions::default();
        };
        if !self.may_define(source) {
            return FileDefinitions::default();
        }
        let language = language.for_source(source);
        let definitions = match symbols::definitions(language, source, self.budget) {
            Ok(definitions) => definitions,
            // The call ends as cancelled once the scan returns.
            Err(ParseError::Cancelled) => return FileDefinitions::default(),
            Err(ParseError::OutOfTime) => {
                return FileDefinitions {
                    out_of_time: Some(file.to_string()),
                    ..FileDefinitions::default()
                };
            }
            Err(ParseError::TooLarge { .. } | ParseError::Grammar) => {
                return FileDefinitions {
                    unparsed: Some(file.to_string()),
                    ..FileDefinitions::default()
                };
            }
        };
        let definitions = definitions
            .into_iter()
            .filter(|symbol| {
                symbol.name == self.name && self.kind.is_none_or(|kind| symbol.kind == kind)
            })
            .map(|symbol| SymbolDefinition {
                file: file.to_string(),
                line: symbol.line,
                end_line: symbol.end_line,
                kind: symbol.kind,
                name: symbol.name,
                parent: symbol.parent,
                signature: symbol.signature,
            })
            .collect();
        FileDefinitions {
            definitions,
            parsed: true,
            ..FileDefinitions::default()
        }
    }
}

fn assemble(name: &str, found: Found, max_results: usize) -> DefinitionsOutput {
    let mut output = DefinitionsOutput {
        status: Status::Success,
        name: name.to_string(),
        definitions: Vec::new(),
        count: 0,
        truncated: false,
        note: None,
    };
    if !found.unparsed.is_empty() {
        let shown = found
            .unparsed
            .iter()
            .take(MAX_NOTED_FILES)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        output.note = Some(format!(
            "{} file(s) holding the name could not be parsed (a parse may hold {} KiB per byte of its file, at most {} MiB) and are not in the answer: {shown}; search_project_files finds the name in them",
            found.unparsed.len(),
            symbols::MAX_BYTES_PER_SOURCE_BYTE / 1024,
            symbols::MAX_PARSE_BYTES >> 20
        ));
    }
    let mut budget = JsonBudget::new(MAX_RESULT_CHARS, &output);
    let mut page = Vec::with_capacity(max_results);
    output.truncated = budget.fill(found.page.into_iter(), max_results, &mut page);
    output.count = page.len();
    output.definitions = page;
    output
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::PathGate;
    use crate::tools::temp_project;

    fn input(name: &str) -> DefinitionsInput {
        DefinitionsInput {
            name: name.to_string(),
            kind: None,
            path: ".".to_string(),
            max_results: DEFAULT_MAX_RESULTS,
            offset: 0,
        }
    }

    fn files() -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "b/shop.py",
                "class Order:\n    def total(self):\n        pass\n\ndef total():\n    pass\n",
            ),
            (
                "a/order.rs",
                "pub struct Order;\nimpl Order {\n    pub fn total(&self) -> u32 { 0 }\n}\n",
            ),
            ("a/uses.rs", "fn main() { let x = Order.total(); }\n"),
            ("c/notes.txt", "def total(): pass\n"),
            ("node_modules/lib/x.js", "function total() {}\n"),
            (".env", "total=1\n"),
            ("d/Total.go", "package d\nfunc Total() {}\n"),
        ]
    }

    fn found(output: &DefinitionsOutput) -> Vec<(String, u64, SymbolKind, Option<String>)> {
        output
            .definitions
            .iter()
            .map(|d| (d.file.clone(), d.line, d.kind, d.parent.clone()))
            .collect()
    }

    fn find(gate: &PathGate, input: &DefinitionsInput) -> DefinitionsOutput {
        find_definitions(&Corpus::walked(gate), input, &Cancel::never()).unwrap()
    }

    #[test]
    fn only_files_holding_an_identifier_as_a_whole_word_are_parsed() {
        let (_dir, gate) = temp_project(&[("a.c", ""), ("b.cpp", "")]);
        let budget = ParseBudget::for_call(&Cancel::never());
        let parsed = |name: &str, file: &str, source: &str| {
            Parser::new(name, None, &budget)
                .evaluate(&mut (), &Document::named(&gate, file), source.as_bytes())
                .parsed
        };
        assert!(!parsed(
            "init",
            "a.c",
            "int initialize(void) { return reinit_x; }\n"
        ));
        assert!(parsed("init", "a.c", "void init(void) {}\n"));
        assert!(parsed("init", "a.c", "int x = 1;\nstatic int init;\n"));
        // A name that is no identifier is looked for anywhere.
        assert!(parsed("~Shape", "b.cpp", "Shape::~Shape() {}\n"));
    }

    #[test]
    fn exact_names_sorted_by_path_then_line_with_parents() {
        let files = files();
        let (_dir, gate) = temp_project(&files);
        let output = find(&gate, &input("total"));
        assert_eq!(
            found(&output),
            vec![
                (
                    "a/order.rs".to_string(),
                    3,
                    SymbolKind::Method,
                    Some("Order".to_string())
                ),
                (
                    "b/shop.py".to_string(),
                    2,
                    SymbolKind::Method,
                    Some("Order".to_string())
                ),
                ("b/shop.py".to_string(), 5, SymbolKind::Function, None),
            ]
        );
        assert_eq!(output.count, 3);
        assert!(!output.truncated);
        assert_eq!(
            output.definitions[0].signature,
            "pub fn total(&self) -> u32 { 0 }"
        );
        // Case-sensitive: `Total` is another name.
        assert_eq!(found(&find(&gate, &input("Total"))).len(), 1);
        let classes = find(
            &gate,
            &DefinitionsInput {
                kind: Some(SymbolKind::Class),
                ..input("Order")
            },
        );
        assert_eq!(
            found(&classes),
            vec![("b/shop.py".to_string(), 1, SymbolKind::Class, None)]
        );
        let in_folder = find(
            &gate,
            &DefinitionsInput {
                path: "b".to_string(),
                ..input("total")
            },
        );
        assert_eq!(in_folder.count, 2);
        let one_file = find(
            &gate,
            &DefinitionsInput {
                path: "a/order.rs".to_string(),
                ..input("Order")
            },
        );
        assert_eq!(
            found(&one_file),
            vec![("a/order.rs".to_string(), 1, SymbolKind::Struct, None)]
        );
    }

    #[test]
    fn paging_gives_the_same_order() {
        let source: String = (0..30)
            .map(|i| format!("def f():\n    return {i}\n"))
            .collect();
        let (_dir, gate) = temp_project(&[("a.py", source.as_str()), ("b.py", source.as_str())]);
        let all = find(
            &gate,
            &DefinitionsInput {
                max_results: 200,
                ..input("f")
            },
        );
        assert_eq!(all.count, 60);
        assert!(!all.truncated);
        let mut paged = Vec::new();
        for page in 0..6 {
            let output = find(
                &gate,
                &DefinitionsInput {
                    max_results: 11,
                    offset: page * 11,
                    ..input("f")
                },
            );
            assert_eq!(output.truncated, page < 5, "page {page}");
            paged.extend(output.definitions);
        }
        assert_eq!(paged, all.definitions);
    }

    /// Many files, read on several threads in batches: pages still follow
    /// the path order.
    #[test]
    fn pages_across_many_files_keep_path_order() {
        let sources: Vec<(String, String)> = (0..150)
            .map(|i| {
                (
                    format!("d{}/m{i:03}.py", i % 3),
                    format!("x = 1\ndef f():\n    return {i}\n"),
                )
            })
            .collect();
        let files: Vec<(&str, &str)> = sources
            .iter()
            .map(|(path, source)| (path.as_str(), source.as_str()))
            .collect();
        let (_dir, gate) = temp_project(&files);
        let mut expected: Vec<&str> = files.iter().map(|(path, _)| *path).collect();
        expected.sort_by(|a, b| crate::walk::path_order(a, b));
        let mut seen = Vec::new();
        for page in 0..4 {
            let output = find(
                &gate,
                &DefinitionsInput {
                    max_results: 40,
                    offset: page * 40,
                    ..input("f")
                },
            );
            assert_eq!(output.truncated, page < 3, "page {page}");
            seen.extend(output.definitions.into_iter().map(|d| d.file));
        }
        assert_eq!(seen, expected);
    }

    #[test]
    fn bad_names_and_offsets_are_refused() {
        let (_dir, gate) = temp_project(&[("a.py", "x = 1\n")]);
        let error = |input: DefinitionsInput| {
            find_definitions(&Corpus::walked(&gate), &input, &Cancel::never())
                .unwrap_err()
                .to_string()
        };
        assert!(error(input("")).contains("one identifier"));
        assert!(error(input("two words")).contains("one identifier"));
        assert!(error(input(&"x".repeat(300))).contains("at most 256 characters"));
        assert!(
            error(DefinitionsInput {
                offset: MAX_OFFSET + 1,
                ..input("x")
            })
            .contains("offset")
        );
        assert!(
            error(DefinitionsInput {
                path: "../up".to_string(),
                ..input("x")
            })
            .len()
                > 10
        );
    }

    #[test]
    fn a_cancelled_lookup_stops() {
        let (_dir, gate) = temp_project(&[("a.py", "def f(): pass\n")]);
        let cancel = Cancel::never();
        cancel.cancel();
        let outcome = find_definitions(&Corpus::walked(&gate), &input("f"), &cancel);
        assert!(matches!(outcome, Err(ToolError::Cancelled)));
    }

    #[test]
    fn a_lookup_out_of_time_says_so_and_how_to_narrow() {
        let (_dir, gate) =
            temp_project(&[("a.py", "def f(): pass\n"), ("b.py", "def f(): pass\n")]);
        let spent = ParseBudget::lasting(std::time::Duration::ZERO, &Cancel::never());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let error = look_up(
            &Corpus::walked(&gate),
            &input("f"),
            &Cancel::never(),
            &spent,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            error,
            "looking up 'f' ran out of the 10-second parse budget after parsing 0 file(s) that hold the name, before 'a.py'; give a narrower path (a folder or one file), or use search_project_files to find the name as text"
        );
    }

    #[test]
    fn files_whose_parse_needs_too_much_memory_are_named_in_a_note() {
        let mut ambiguous = String::from("int f;\nint x = ");
        while ambiguous.len() < 20_000 {
            ambiguous.push_str("a<b<c<d<");
        }
        ambiguous.push_str(";\n");
        let (_dir, gate) = temp_project(&[
            ("a/ambiguous.cpp", ambiguous.as_str()),
            ("b/plain.c", "int f(void) { return 0; }\n"),
        ]);
        let output = find(&gate, &input("f"));
        assert_eq!(
            found(&output),
            vec![("b/plain.c".to_string(), 1, SymbolKind::Function, None)]
        );
        assert_eq!(
            output.note.as_deref(),
            Some(
                "1 file(s) holding the name could not be parsed (a parse may hold 1 KiB per byte of its file, at most 256 MiB) and are not in the answer: a/ambiguous.cpp; search_project_files finds the name in them"
            )
        );
    }
}
