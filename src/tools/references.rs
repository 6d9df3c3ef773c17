//! `find_symbol_references`: where a name is used across the project.
//!
//! Only a file that holds the name can use it, so the files are the
//! corpus's documents for a literal query of the name, with the same skip
//! and deny rules as search. A document that holds the name as a whole
//! word is parsed when its language has a grammar (on the corpus's worker
//! threads) and counted in `files_without_grammar` when it has none.
//! Documents come in path order and uses in line order, so the scan stops
//! once the page is full.
//!
//! Which Python occurrences are uses depends on the whole project (is the
//! name a `def` or `class` anywhere, a method anywhere?), so a text pass
//! over the project's Python files that hold the name decides it first:
//! files of other languages cost it nothing.

use std::ops::ControlFlow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{JsonBudget, Status, ToolError};
use crate::cancel::Cancel;
use crate::corpus::{Corpus, Document, Outcome, Reader};
use crate::symbols::uses::{self, Lookup, Use, python};
use crate::symbols::{self, Language, ParseBudget, ParseError};
use crate::walk::WalkOptions;

pub const DEFAULT_MAX_RESULTS: usize = 50;
pub const MAX_RESULTS_CAP: usize = 200;
/// Largest `offset`: paging deeper means parsing that many uses first.
pub const MAX_OFFSET: usize = 10_000;
/// Longest `name` accepted, in characters.
pub const MAX_NAME_CHARS: usize = 256;
/// Largest answer as JSON text (escapes counted in full).
pub const MAX_RESULT_CHARS: usize = 200_000;
/// Files named in a `note` about files that could not be parsed.
const MAX_NOTED_FILES: usize = 5;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReferencesInput {
    /// The exact, case-sensitive identifier used, e.g. `apply_discount` or `Order`; a class's method as `Class.name`, e.g. `Order.total` (followed in Python; other languages give every use of the name).
    #[schemars(length(min = 1, max = MAX_NAME_CHARS))]
    pub name: String,
    /// Folder (or single file) to look in, relative to the project root; `.` (the default) is the root.
    #[serde(default = "super::root_path")]
    pub path: String,
    /// Maximum number of references (lines) to return.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = MAX_RESULTS_CAP))]
    pub max_results: usize,
    /// Skip this many references first, for paging (use with max_results).
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_OFFSET))]
    pub offset: usize,
}

fn default_max_results() -> usize {
    DEFAULT_MAX_RESULTS
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReferencesOutput {
    pub status: Status,
    /// The name looked for.
    pub name: String,
    /// Number of references returned.
    pub count: usize,
    /// True when more references exist past this page: call again with a higher offset.
    pub truncated: bool,
    /// Files that hold the name as a word but have no grammar, so were not searched (search_project_files reads them); counted up to where this page ended.
    pub files_without_grammar: usize,
    /// Lines that use the name, sorted by file path, then line; one per line.
    pub references: Vec<Reference>,
    /// Present when files that hold the name could not be parsed (their syntax trees need more memory than a parse may hold), naming some of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct Reference {
    /// Path relative to the project root.
    pub file: String,
    /// 1-based line of the use.
    pub line: u64,
    /// The line, cut to 300 characters.
    pub text: String,
    /// The innermost definition holding the use, as `Parent.name` where it has a parent (e.g. `Order.total`); null at the top level.
    #[serde(rename = "in")]
    pub within: Option<String>,
}

impl ReferencesInput {
    pub fn log_params(&self) -> String {
        format!(
            "name={:?} path={:?} max_results={} offset={}",
            self.name, self.path, self.max_results, self.offset
        )
    }
}

impl ReferencesOutput {
    pub fn log_summary(&self) -> String {
        format!(
            "count={} truncated={} files_without_grammar={}",
            self.count, self.truncated, self.files_without_grammar
        )
    }
}

/// What the files looked at so far gave.
#[derive(Default)]
struct Found {
    /// References past `offset`, in order, at most a page and one.
    page: Vec<Reference>,
    /// References before `offset`, counted only.
    skipped: usize,
    without_grammar: usize,
    unparsed: Vec<String>,
    /// Files parsed, for the message when the budget runs out.
    parsed: usize,
    /// The file the call's parse budget ran out on.
    out_of_time: Option<String>,
}

pub fn find_references(
    corpus: &Corpus<'_>,
    input: &ReferencesInput,
    cancel: &Cancel,
) -> Result<ReferencesOutput, ToolError> {
    look_up(corpus, input, cancel, &ParseBudget::for_call(cancel))
}

/// The lookup, its parses and walks within `budget`.
fn look_up(
    corpus: &Corpus<'_>,
    input: &ReferencesInput,
    cancel: &Cancel,
    budget: &ParseBudget,
) -> Result<ReferencesOutput, ToolError> {
    ToolError::check_size("name", &input.name, MAX_NAME_CHARS)?;
    // `Class.name`: a member of one class.
    let (class, name) = match input.name.split_once('.') {
        Some((class, member)) => (Some(class), member),
        None => (None, input.name.as_str()),
    };
    if !uses::is_identifier(name) || !class.is_none_or(uses::is_identifier) {
        return Err(ToolError::invalid(
            "name must be one identifier (letters, digits, _ or $), e.g. 'apply_discount' or 'Order', or a class's member as 'Class.name', e.g. 'Order.total'; for other text use search_project_files",
        ));
    }
    if input.offset > MAX_OFFSET {
        return Err(ToolError::invalid(format!(
            "offset {} is over the maximum of {MAX_OFFSET}; narrow the lookup with path instead of paging this deep",
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
    let python = python_definitions(corpus, name, &query, &options)?;
    ToolError::check_cancel(cancel)?;
    let reader = UseReader {
        lookup: Lookup {
            name,
            class,
            python,
        },
        finder: memchr::memmem::Finder::new(name.as_bytes()),
        budget,
    };
    let mut found = Found::default();
    corpus
        .scan(
            &start,
            &query,
            &options,
            |_| true,
            &reader,
            |file: FileUses| {
                if file.out_of_time.is_some() {
                    found.out_of_time = file.out_of_time;
                    return ControlFlow::Break(());
                }
                found.parsed += usize::from(file.parsed);
                found.without_grammar += usize::from(file.without_grammar());
                found.unparsed.extend(file.unparsed);
                for reference in file.references {
                    if found.page.len() >= wanted {
                        break;
                    }
                    if found.skipped < input.offset {
                        found.skipped += 1;
                        continue;
                    }
                    found.page.push(reference);
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
        return Err(out_of_time(&input.name, &found, last));
    }
    Ok(assemble(&input.name, found, max_results))
}

/// What the project's Python files define under `name`, all of them
/// whatever the call's `path`.
fn python_definitions(
    corpus: &Corpus<'_>,
    name: &str,
    query: &regex_syntax::hir::Hir,
    options: &WalkOptions,
) -> Result<python::Defined, ToolError> {
    let root = corpus.gate().resolve(".")?;
    let mut defined = python::Defined::default();
    corpus
        .scan(
            &root,
            query,
            options,
            |file| Language::of_path(file) == Some(Language::Python),
            &DefinitionReader { name },
            |file: PythonDefinitions| {
                defined = defined.and(file.0);
                if defined.as_method {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )
        .map_err(|error| ToolError::io(&root.relative, &error))?;
    Ok(defined)
}

/// What one Python file defines under the name.
#[derive(Debug, Default, Clone, Copy)]
struct PythonDefinitions(python::Defined);

impl Outcome for PythonDefinitions {
    fn renamed(&self, _: &Document) -> Option<Self> {
        Some(*self)
    }

    fn weight(&self) -> usize {
        0
    }
}

struct DefinitionReader<'a> {
    name: &'a str,
}

impl Reader for DefinitionReader<'_> {
    type Scratch = ();
    type Outcome = PythonDefinitions;

    fn scratch(&self) {}

    fn evaluate(&self, _: &mut (), _: &Document, source: &[u8]) -> PythonDefinitions {
        PythonDefinitions(python::Defined::in_source(source, self.name))
    }
}

/// The answer when the call's parse budget ran out before the page was
/// full: the uses found so far may not be all there are before the page's
/// end, so none are given as if they were.
fn out_of_time(name: &str, found: &Found, last: &str) -> ToolError {
    ToolError::invalid(format!(
        "looking for uses of '{name}' ran out of the {}-second parse budget after parsing {} file(s) that hold the name, before '{last}'; give a narrower path (a folder or one file), or use search_project_files to find the name as text",
        symbols::CALL_BUDGET.as_secs(),
        found.parsed
    ))
}

/// What one file gave: its uses of the name in line order, or its name
/// when it could not be parsed.
#[derive(Debug, Default, Clone)]
struct FileUses {
    references: Vec<Reference>,
    /// Whether the file holds the name as a whole word.
    holds_word: bool,
    /// The language of the name it was read under.
    language: Option<Language>,
    /// The file was parsed.
    parsed: bool,
    unparsed: Option<String>,
    out_of_time: Option<String>,
}

impl FileUses {
    fn without_grammar(&self) -> bool {
        self.holds_word && self.language.is_none()
    }
}

impl Outcome for FileUses {
    fn renamed(&self, document: &Document) -> Option<Self> {
        let file = document.name().to_string();
        // The grammar goes by the name: another ending is read afresh.
        if self.holds_word && Language::of_path(&file) != self.language {
            return None;
        }
        Some(FileUses {
            references: self
                .references
                .iter()
                .map(|reference| Reference {
                    file: file.clone(),
                    ..reference.clone()
                })
                .collect(),
            unparsed: self.unparsed.as_ref().map(|_| file.clone()),
            out_of_time: self.out_of_time.as_ref().map(|_| file.clone()),
            ..self.clone()
        })
    }

    fn weight(&self) -> usize {
        self.references
            .iter()
            .map(|reference| {
                reference.file.len()
                    + reference.text.len()
                    + reference.within.as_ref().map_or(0, String::len)
            })
            .sum()
    }
}

/// Parses each document of a known language that holds the name as a word.
struct UseReader<'a> {
    lookup: Lookup<'a>,
    finder: memchr::memmem::Finder<'a>,
    budget: &'a ParseBudget,
}

impl Reader for UseReader<'_> {
    type Scratch = ();
    type Outcome = FileUses;

    fn scratch(&self) {}

    fn evaluate(&self, _: &mut (), document: &Document, source: &[u8]) -> FileUses {
        if !uses::holds_word(source, &self.finder) {
            return FileUses::default();
        }
        let file = document.name();
        let named = FileUses {
            holds_word: true,
            language: Language::of_path(file),
            ..FileUses::default()
        };
        let Some(language) = named.language else {
            return named;
        };
        let language = language.for_source(source);
        let found = match uses::uses(language, source, &self.lookup, self.budget) {
            Ok(found) => found,
            // The call ends as cancelled once the scan returns.
            Err(ParseError::Cancelled) => return FileUses::default(),
            Err(ParseError::OutOfTime) => {
                return FileUses {
                    out_of_time: Some(file.to_string()),
                    ..named
                };
            }
            Err(ParseError::TooLarge { .. } | ParseError::Grammar) => {
                return FileUses {
                    unparsed: Some(file.to_string()),
                    ..named
                };
            }
        };
        FileUses {
            references: found
                .into_iter()
                .map(|Use { line, text, within }| Reference {
                    file: file.to_string(),
                    line,
                    text,
                    within,
                })
                .collect(),
            parsed: true,
            ..named
        }
    }
}

fn assemble(name: &str, found: Found, max_results: usize) -> ReferencesOutput {
    let mut output = ReferencesOutput {
        status: Status::Success,
        name: name.to_string(),
        count: 0,
        truncated: false,
        files_without_grammar: found.without_grammar,
        references: Vec::new(),
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
    output.references = page;
    output
}

#[cfg(test)]
mod tests;
