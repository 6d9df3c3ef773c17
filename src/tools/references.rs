//! `find_symbol_references`: where a name is used across the project.
//!
//! Only a file that holds the name can use it, so the files are the
//! corpus's documents for a literal query of the name, with the same skip
//! and deny rules as search. A document that holds the name as a whole
//! word is parsed when its language has a grammar (on the corpus's worker
//! threads) and counted in `files_without_grammar` when it has none.
//! Documents come in path order and uses in line order, so the scan stops
//! once the page is full.

use std::ops::ControlFlow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{JsonBudget, Status, ToolError};
use crate::cancel::Cancel;
use crate::corpus::{Corpus, Document, Outcome, Reader};
use crate::symbols::uses::{self, Use};
use crate::symbols::{self, Language, ParseError};
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
    /// The exact, case-sensitive identifier used, e.g. `apply_discount` or `Order` (no qualifier such as `Order.total`).
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
    /// Present when files that hold the name could not be parsed (too slow to parse), naming some of them.
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
}

pub fn find_references(
    corpus: &Corpus<'_>,
    input: &ReferencesInput,
    cancel: &Cancel,
) -> Result<ReferencesOutput, ToolError> {
    let name = input.name.as_str();
    ToolError::check_size("name", name, MAX_NAME_CHARS)?;
    if !uses::is_identifier(name) {
        return Err(ToolError::invalid(
            "name must be one identifier (letters, digits, _ or $), e.g. 'apply_discount' or 'Order', without a qualifier; for other text use search_project_files",
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
    let reader = UseReader {
        name,
        finder: memchr::memmem::Finder::new(name.as_bytes()),
        cancel,
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
    Ok(assemble(name, found, max_results))
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
    unparsed: Option<String>,
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
    name: &'a str,
    finder: memchr::memmem::Finder<'a>,
    cancel: &'a Cancel,
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
        let found = match uses::uses(language, source, self.name, self.cancel) {
            Ok(found) => found,
            // The call ends as cancelled once the scan returns.
            Err(ParseError::Cancelled) => return FileUses::default(),
            Err(_) => {
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
            "{} file(s) holding the name could not be parsed within {} seconds each and are not in the answer: {shown}; search_project_files finds the name in them",
            found.unparsed.len(),
            symbols::PARSE_BUDGET.as_secs()
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
