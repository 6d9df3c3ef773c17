//! `get_docs`: the project's Markdown documentation, split into sections at
//! headings, searched case-insensitively.
//!
//! Ranking: the whole query in a heading counts most, then in the text
//! (more occurrences rank higher); a section that holds every word of a
//! multi-word query, though not the phrase, ranks below those. Ties keep
//! document order.

use std::io::Read;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{JsonBudget, MAX_QUERY_CHARS, Status, ToolError, cut_chars};
use crate::cancel::Cancel;
use crate::corpus::searchable::{SNIFF_BYTES, looks_binary};
use crate::project::{DocsFolder, Project};
use crate::security::{PathError, PathGate, ResolvedPath};
use crate::walk::{self, EntryKind, WalkOptions, path_order};

pub const DEFAULT_MAX_RESULTS: usize = 10;
pub const MAX_RESULTS_CAP: usize = 50;
pub const MAX_SNIPPET_CHARS: usize = 800;
/// Headings are cut to this many characters.
pub const MAX_HEADING_CHARS: usize = 200;
/// Largest answer as JSON text (escapes counted in full): the tool's
/// declared size hint. Results that would outgrow it are cut, `truncated`.
pub const MAX_RESULT_CHARS: usize = 160_000;
/// Larger Markdown files are skipped.
const MAX_DOC_BYTES: u64 = 2 * 1024 * 1024;
const MARKDOWN_EXTENSIONS: &[&str] = &["md", "markdown", "mdx"];

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DocsInput {
    /// Words or phrase to look for in headings and text (case-insensitive). Omit to list the documents.
    #[serde(default)]
    #[schemars(length(max = MAX_QUERY_CHARS))]
    pub query: Option<String>,
    /// Maximum number of results to return.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = MAX_RESULTS_CAP))]
    pub max_results: usize,
}

fn default_max_results() -> usize {
    DEFAULT_MAX_RESULTS
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct DocResult {
    /// Path of the Markdown file relative to the docs folder.
    pub file: String,
    /// The section's heading (a document's title when listing documents).
    pub heading: String,
    /// An excerpt of the section's text, starting near the first match.
    pub snippet: String,
    /// 1-based line of the heading in the file.
    pub line: u64,
    /// Path relative to the project root, for read_project_file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DocsOutput {
    pub status: Status,
    /// The query as given; null when listing documents.
    pub query: Option<String>,
    /// Best matches first (or one entry per document, sorted by path).
    pub results: Vec<DocResult>,
    /// Number of results returned.
    pub count: usize,
    /// True when more results existed than were returned.
    pub truncated: bool,
}

impl DocsInput {
    pub fn log_params(&self) -> String {
        let query = self.query.as_deref().map(|q| cut_chars(q, 100).0);
        format!("query={query:?} max_results={}", self.max_results)
    }
}

impl DocsOutput {
    pub fn log_summary(&self) -> String {
        format!("count={} truncated={}", self.count, self.truncated)
    }
}

pub fn get_docs(
    project: &Project,
    input: &DocsInput,
    cancel: &Cancel,
) -> Result<DocsOutput, ToolError> {
    if let Some(query) = &input.query {
        ToolError::check_size("query", query, MAX_QUERY_CHARS)?;
    }
    let (gate, docs) = docs_folder(project)?;
    let query = input
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty());
    let max_results = input.max_results.clamp(1, MAX_RESULTS_CAP);
    let in_root = matches!(project.docs, Ok(DocsFolder::InRoot(_)));
    let documents = load_documents(gate, &docs, in_root, cancel);
    ToolError::check_cancel(cancel)?;
    let mut results: Vec<DocResult> = match query {
        Some(query) => ranked_sections(&documents, query),
        None => documents.iter().map(Document::summary).collect(),
    };
    let found = results.len();
    results.truncate(max_results);
    let mut output = DocsOutput {
        status: Status::Success,
        query: input.query.clone(),
        results: Vec::new(),
        count: 0,
        truncated: false,
    };
    let mut budget = JsonBudget::new(MAX_RESULT_CHARS, &output);
    for result in results {
        if !budget.take(&result) {
            break;
        }
        output.results.push(result);
    }
    output.count = output.results.len();
    output.truncated = found > output.count;
    Ok(output)
}

/// The docs folder as its gate sees it now, with that gate: a folder that
/// was swapped for a symlink out of the root since start-up is refused like
/// any such path.
fn docs_folder(project: &Project) -> Result<(&PathGate, ResolvedPath), ToolError> {
    let docs = project.docs.as_ref().map_err(ToolError::invalid)?;
    let missing = || {
        ToolError::invalid(format!(
            "this project has no docs folder ({} does not exist); the operator can point --docs or MCP_PROJECT_HELPER_DOCS_ROOT at a Markdown folder",
            project.docs_location.display()
        ))
    };
    let (gate, relative) = match docs {
        DocsFolder::InRoot(relative) => (&project.gate, relative.as_str()),
        DocsFolder::Outside(gate) => (gate.as_ref(), "."),
    };
    match gate.resolve(relative) {
        Ok(folder) if folder.real.is_dir() => Ok((gate, folder)),
        Ok(_) | Err(PathError::NotFound(_)) => Err(missing()),
        Err(PathError::SymlinkEscape(_)) => Err(ToolError::invalid(format!(
            "the docs folder {} resolves outside the project root (through a symlink), so get_docs is refused; only Markdown inside the project is served",
            project.docs_location.display()
        ))),
        Err(error) => Err(error.into()),
    }
}

struct Document {
    /// Relative to the docs folder.
    file: String,
    /// Relative to the project root; `None` for a docs folder outside it.
    path: Option<String>,
    sections: Vec<Section>,
}

struct Section {
    heading: String,
    line: u64,
    body: String,
}

impl Document {
    /// One entry per document: its title and opening text.
    fn summary(&self) -> DocResult {
        let title = self
            .sections
            .iter()
            .find(|s| !s.heading.is_empty())
            .map(|s| s.heading.clone())
            .unwrap_or_else(|| file_stem(&self.file));
        let text: String = self
            .sections
            .iter()
            .map(|s| s.body.trim())
            .filter(|b| !b.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        DocResult {
            file: self.file.clone(),
            heading: title,
            snippet: cut_chars(&text, MAX_SNIPPET_CHARS).0.to_string(),
            line: self.sections.first().map_or(1, |s| s.line),
            path: self.path.clone(),
        }
    }
}

/// Every readable Markdown file under the docs folder, in path order, found
/// by the one walker and opened by the one opener: the gate's ignore files,
/// skip list and deny rules (its root-relative globs included) apply.
/// `in_root`: the gate is the project's, so each document gets its project
/// path.
fn load_documents(
    gate: &PathGate,
    docs: &ResolvedPath,
    in_root: bool,
    cancel: &Cancel,
) -> Vec<Document> {
    let Some(docs_relative) = gate.relative_of(&docs.real) else {
        return Vec::new();
    };
    let options = WalkOptions {
        include_ignored: false,
        cancel: cancel.clone(),
    };
    walk::walk(gate, docs, None, &options)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.kind == EntryKind::File && e.size.is_some_and(|s| s <= MAX_DOC_BYTES))
        .filter(|e| {
            e.relative.rsplit_once('.').is_some_and(|(_, ext)| {
                MARKDOWN_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
            })
        })
        .filter_map(|entry| {
            if cancel.is_cancelled() {
                return None;
            }
            let mut bytes = Vec::new();
            let (file, _) = entry.open(gate).ok()?;
            file.take(MAX_DOC_BYTES).read_to_end(&mut bytes).ok()?;
            if looks_binary(&bytes[..bytes.len().min(SNIFF_BYTES)]) {
                return None;
            }
            let text = String::from_utf8_lossy(&bytes);
            Some(Document {
                sections: split_sections(&text),
                file: docs_relative_path(&docs_relative, &entry.relative),
                path: in_root.then_some(entry.relative),
            })
        })
        .collect()
}

/// `relative` (root-relative, below the docs folder) as a path relative to
/// the docs folder.
fn docs_relative_path(docs: &str, relative: &str) -> String {
    if docs == "." {
        return relative.to_string();
    }
    relative
        .strip_prefix(docs)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(relative)
        .to_string()
}

/// Splits at ATX headings (`#` to `######`), ignoring `#` lines inside
/// fenced code blocks. Text before the first heading is a section with an
/// empty heading.
fn split_sections(text: &str) -> Vec<Section> {
    let mut sections = vec![Section {
        heading: String::new(),
        line: 1,
        body: String::new(),
    }];
    let mut fence: Option<&str> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
        } else if let Some(heading) = atx_heading(line) {
            sections.push(Section {
                heading,
                line: index as u64 + 1,
                body: String::new(),
            });
            continue;
        }
        if let Some(section) = sections.last_mut() {
            section.body.push_str(line);
            section.body.push('\n');
        }
    }
    if sections.len() > 1 && sections[0].body.trim().is_empty() {
        sections.remove(0);
    }
    sections
}

fn atx_heading(line: &str) -> Option<String> {
    if line.starts_with("    ") {
        return None;
    }
    let trimmed = line.trim_start();
    let level = trimmed.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim_end();
    Some(cut_chars(text, MAX_HEADING_CHARS).0.to_string())
}

fn ranked_sections(documents: &[Document], query: &str) -> Vec<DocResult> {
    let phrase = query.to_lowercase();
    let words: Vec<&str> = phrase.split_whitespace().collect();
    let mut scored: Vec<(u64, DocResult)> = Vec::new();
    for document in documents {
        for section in &document.sections {
            let heading = section.heading.to_lowercase();
            let body = section.body.to_lowercase();
            let Some(score) = score(&heading, &body, &phrase, &words) else {
                continue;
            };
            let first_hit = body
                .find(&phrase)
                .or_else(|| words.iter().filter_map(|w| body.find(w)).min());
            scored.push((
                score,
                DocResult {
                    file: document.file.clone(),
                    heading: if section.heading.is_empty() {
                        file_stem(&document.file)
                    } else {
                        section.heading.clone()
                    },
                    snippet: snippet(&section.body, &body, first_hit),
                    line: section.line,
                    path: document.path.clone(),
                },
            ));
        }
    }
    // Stable: equal scores keep document order (path, then line).
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| path_order(&a.1.file, &b.1.file))
            .then_with(|| a.1.line.cmp(&b.1.line))
    });
    scored.into_iter().map(|(_, result)| result).collect()
}

/// `None` when the section does not match at all.
fn score(heading: &str, body: &str, phrase: &str, words: &[&str]) -> Option<u64> {
    let in_heading = heading.contains(phrase);
    let in_body = body.matches(phrase).count() as u64;
    if in_heading || in_body > 0 {
        let heading_score = match (in_heading, heading.trim() == phrase) {
            (true, true) => 150,
            (true, false) => 100,
            _ => 0,
        };
        return Some(heading_score + 10 * in_body.min(10));
    }
    let all_words = words.len() > 1
        && words
            .iter()
            .all(|word| heading.contains(word) || body.contains(word));
    all_words.then(|| {
        words
            .iter()
            .map(|word| if heading.contains(word) { 3 } else { 1 })
            .sum()
    })
}

/// Up to [`MAX_SNIPPET_CHARS`] of the section text, starting a little before
/// the first hit when the hit lies further in.
fn snippet(original: &str, lowered: &str, first_hit: Option<usize>) -> String {
    let text = original.trim();
    let skipped_chars = original.len() - original.trim_start().len();
    let hit_char = first_hit
        .map(|byte| lowered[..byte.min(lowered.len())].chars().count())
        .unwrap_or(0)
        .saturating_sub(skipped_chars);
    let start = if hit_char > MAX_SNIPPET_CHARS / 2 {
        hit_char - MAX_SNIPPET_CHARS / 4
    } else {
        0
    };
    text.chars().skip(start).take(MAX_SNIPPET_CHARS).collect()
}

fn file_stem(file: &str) -> String {
    let name = file.rsplit('/').next().unwrap_or(file);
    name.rsplit_once('.')
        .map_or(name, |(stem, _)| stem)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Overrides};

    const ARCHITECTURE: &str = "# Architecture\n\nIntro text.\n\n## Security\n\nEvery path goes through one gate.\n\n```sh\n# not a heading\n```\n\n## Whitelist\n\nOnly whitelisted checks run. The whitelist is operator-owned.\n";

    fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, Project) {
        let (dir, root) = crate::security::temp_root(files);
        let config = Config::load(Overrides::default()).unwrap();
        let project = Project::open(&config, root).unwrap();
        (dir, project)
    }

    fn get_docs(project: &Project, input: &DocsInput) -> Result<DocsOutput, ToolError> {
        super::get_docs(project, input, &Cancel::never())
    }

    /// A project whose docs folder the operator named outside the root.
    fn project_with_outside_docs(
        docs: &[(&str, &str)],
    ) -> (tempfile::TempDir, tempfile::TempDir, Project) {
        let (root_dir, root) =
            crate::security::temp_root(&[("docs/inside.md", "# Inside\n\nwidget\n")]);
        let (docs_dir, docs_root) = crate::security::temp_root(docs);
        let config = Config::load(Overrides {
            docs: Some(docs_root),
            ..Overrides::default()
        })
        .unwrap();
        let project = Project::open(&config, root).unwrap();
        (root_dir, docs_dir, project)
    }

    #[test]
    fn a_named_docs_folder_outside_the_root_is_read_inside_itself_only() {
        // The docs folder is written to only where symlinks can be made.
        #[cfg_attr(not(unix), allow(unused_variables))]
        let (_root, docs_dir, project) = project_with_outside_docs(&[
            ("guide.md", "# Guide\n\nwidget setup\n"),
            ("sub/deep.md", "# Deep\n\nwidget depth\n"),
            (".env.md", "# Secret\n\nwidget token\n"),
            ("id_rsa.md", "# Key\n\nwidget key\n"),
        ]);
        assert!(matches!(project.docs, Ok(DocsFolder::Outside(_))));
        let found = get_docs(
            &project,
            &DocsInput {
                query: Some("widget".to_string()),
                max_results: 10,
            },
        )
        .unwrap();
        let files: Vec<&str> = found.results.iter().map(|r| r.file.as_str()).collect();
        assert_eq!(files, ["guide.md", "sub/deep.md"], "deny rules apply");
        assert!(
            found.results.iter().all(|r| r.path.is_none()),
            "no project path for a file outside the project"
        );
        // A symlink out of the named folder is not followed.
        #[cfg(unix)]
        {
            let (_elsewhere, outside) =
                crate::security::temp_root(&[("leak.md", "# Leak\n\nwidget leaked\n")]);
            std::os::unix::fs::symlink(outside.join("leak.md"), docs_dir.path().join("leak.md"))
                .unwrap();
            std::os::unix::fs::symlink(&outside, docs_dir.path().join("linked")).unwrap();
            let found = get_docs(
                &project,
                &DocsInput {
                    query: Some("leaked".to_string()),
                    max_results: 10,
                },
            )
            .unwrap();
            assert_eq!(found.count, 0, "{:?}", found.results);
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_default_docs_folder_linked_out_of_the_root_is_refused() {
        let (_root_dir, root) = crate::security::temp_root(&[("README.md", "# Readme\n")]);
        let (_docs_dir, docs) = crate::security::temp_root(&[("guide.md", "# Guide\n")]);
        std::os::unix::fs::symlink(&docs, root.join("docs")).unwrap();
        let config = Config::load(Overrides::default()).unwrap();
        let project = Project::open(&config, root).unwrap();
        let error = get_docs(
            &project,
            &DocsInput {
                query: None,
                max_results: 10,
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("refused") && error.contains("--docs"),
            "{error}"
        );
    }

    #[test]
    fn hostile_docs_stay_within_the_size_hint() {
        let section = format!("# {}\n\n{}\n", "\u{1}".repeat(5000), "\u{1}".repeat(5000));
        let text = section.repeat(60);
        let (_d, project) = project(&[("docs/ctl.md", &text)]);
        let out = query(&project, Some("\u{1}"), MAX_RESULTS_CAP);
        let written = serde_json::to_string(&out).unwrap();
        assert!(written.len() <= MAX_RESULT_CHARS, "{}", written.len());
        assert!(out.count > 0 && out.truncated);
        let long = "q".repeat(MAX_QUERY_CHARS + 1);
        let error = get_docs(
            &project,
            &DocsInput {
                query: Some(long),
                max_results: 1,
            },
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("at most 1024 characters"),
            "{error}"
        );
    }

    fn query(project: &Project, q: Option<&str>, max: usize) -> DocsOutput {
        get_docs(
            project,
            &DocsInput {
                query: q.map(String::from),
                max_results: max,
            },
        )
        .unwrap()
    }

    #[test]
    fn finds_sections_by_heading_first() {
        let (_d, project) = project(&[
            ("docs/architecture.md", ARCHITECTURE),
            (
                "docs/guide/usage.md",
                "# Usage\n\nSee the security notes.\n",
            ),
            ("docs/notes.txt", "security"),
        ]);
        let out = query(&project, Some("SECURITY"), 10);
        let headings: Vec<_> = out
            .results
            .iter()
            .map(|r| (r.file.as_str(), r.heading.as_str()))
            .collect();
        assert_eq!(
            headings,
            vec![("architecture.md", "Security"), ("guide/usage.md", "Usage")]
        );
        assert_eq!(out.results[0].line, 5);
        assert!(
            out.results[0]
                .snippet
                .starts_with("Every path goes through one gate.")
        );
        assert_eq!(out.results[0].path.as_deref(), Some("docs/architecture.md"));
        assert_eq!(out.count, 2);
        assert!(!out.truncated);
    }

    #[test]
    fn ranks_more_occurrences_higher_and_truncates() {
        let (_d, project) = project(&[("docs/architecture.md", ARCHITECTURE)]);
        let out = query(&project, Some("whitelist"), 10);
        assert_eq!(out.results[0].heading, "Whitelist");
        let out = query(&project, Some("gate checks"), 10);
        assert_eq!(out.count, 0, "words in different sections do not match");
        let out = query(&project, Some("a"), 1);
        assert_eq!(out.count, 1);
        assert!(out.truncated);
    }

    #[test]
    fn code_fences_do_not_split_sections() {
        let sections = split_sections(ARCHITECTURE);
        let headings: Vec<_> = sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(headings, vec!["Architecture", "Security", "Whitelist"]);
    }

    #[test]
    fn lists_documents_without_a_query() {
        let (_d, project) = project(&[
            ("docs/b.md", "No heading here, just text.\n"),
            ("docs/a/architecture.md", ARCHITECTURE),
        ]);
        let out = query(&project, None, 10);
        let files: Vec<_> = out
            .results
            .iter()
            .map(|r| (r.file.as_str(), r.heading.as_str()))
            .collect();
        assert_eq!(
            files,
            vec![("a/architecture.md", "Architecture"), ("b.md", "b")]
        );
        assert!(out.query.is_none());
    }

    #[test]
    fn long_sections_are_cut_around_the_hit() {
        let body = format!("# Big\n\n{}needle{}\n", "x".repeat(2000), "y".repeat(2000));
        let (_d, project) = project(&[("docs/big.md", &body)]);
        let out = query(&project, Some("needle"), 10);
        let snippet = &out.results[0].snippet;
        assert!(snippet.chars().count() <= MAX_SNIPPET_CHARS);
        assert!(snippet.contains("needle"));
    }

    #[test]
    fn missing_docs_folder_is_a_clear_error() {
        let (_d, project) = project(&[("README.md", "# x")]);
        let error = get_docs(
            &project,
            &DocsInput {
                query: None,
                max_results: 10,
            },
        )
        .unwrap_err();
        assert!(error.to_string().contains("no docs folder"), "{error}");
    }

    #[test]
    fn secrets_in_docs_are_not_served() {
        let (_d, project) = project(&[("docs/ok.md", "# Ok\n"), ("docs/.env", "# secret")]);
        let out = query(&project, Some("secret"), 10);
        assert_eq!(out.count, 0);
    }
}
