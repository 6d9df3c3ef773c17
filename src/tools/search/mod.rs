//! `search_project_files`: content search on ripgrep's libraries.
//!
//! The corpus hands the documents below the path that may hold the query,
//! in path order (read on several threads); each is searched with
//! `grep-searcher` and the compiled [`LineMatcher`], and the page is built
//! from the hits in that order. Once the hits handed on hold
//! `offset + max_results + 1` results, the scan stops: the answer is the
//! same as a full sequential scan would give, only sooner.
//!
//! Memory follows what the answer can hold, never the tree or the offset:
//! results before `offset` are counted, not kept; a file keeps the text of
//! at most one page of its matches. The one file a page starts in the
//! middle of is searched again for that page when its first pass kept too
//! little. The cancel flag is checked per entry, per file and per match.

use std::ops::ControlFlow;

use regex_syntax::hir::Hir;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod matching;
mod page;

use super::{MAX_QUERY_CHARS, Status, ToolError, cut_chars};
use crate::cancel::Cancel;
use crate::corpus::{Corpus, Document, Reader};
use crate::glob::{PathGlob, below};
use crate::matcher::{self, LineMatcher};
use crate::walk::WalkOptions;
use matching::Settings;
use page::{Page, assemble};

pub const DEFAULT_MAX_RESULTS: usize = 50;
pub const MAX_RESULTS_CAP: usize = 200;
pub const MAX_CONTEXT_LINES: usize = 10;
/// Matched and context lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 300;
/// Largest answer as JSON text (escapes counted in full): the tool's
/// declared size hint. 200 matches with 10 lines of context each would
/// otherwise exceed what a client can take in one result; a page cut by it
/// says `truncated`.
pub const MAX_RESULT_CHARS: usize = 400_000;
/// Largest `offset`: paging deeper means scanning that many results first.
pub const MAX_OFFSET: usize = 10_000;
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum OutputMode {
    /// Matching lines as `matches`.
    #[default]
    Content,
    /// Only the paths of matching files, as `files`.
    FilesWithMatches,
    /// Matching-line counts per file, as `counts`.
    Count,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SearchInput {
    /// Text to find. An exact substring unless `regex` is true.
    #[schemars(length(max = MAX_QUERY_CHARS))]
    pub query: String,
    /// Folder (or single file) to search, relative to the project root; `.` (the default) is the root.
    #[serde(default = "crate::tools::root_path")]
    pub path: String,
    /// Maximum number of results (matches, files or counts) to return.
    #[serde(default = "default_max_results")]
    #[schemars(range(min = 1, max = MAX_RESULTS_CAP))]
    pub max_results: usize,
    /// Treat `query` as a Rust regex (e.g. `fn \w+_discount`). Default false: exact substring.
    #[serde(default)]
    pub regex: bool,
    /// Match case exactly (default true). Set false for case-insensitive search.
    #[serde(default = "default_true")]
    pub case_sensitive: bool,
    /// Only search files matching this glob, e.g. `*.py` (file name at any depth) or `src/**/*.rs` (path relative to `path`).
    #[serde(default)]
    #[schemars(length(max = crate::glob::MAX_GLOB_CHARS))]
    pub glob: Option<String>,
    /// Lines of context before and after each match (adds `before`/`after` arrays).
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_CONTEXT_LINES))]
    pub context_lines: usize,
    /// `content` (default): matching lines; `files_with_matches`: file paths only; `count`: matches per file.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Skip this many results first, for paging (use with max_results).
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_OFFSET))]
    pub offset: usize,
    /// Also search files that .gitignore/.ignore or the built-in skip list (node_modules, target, .venv …) exclude. Secrets stay excluded.
    #[serde(default)]
    pub include_ignored: bool,
}

fn default_max_results() -> usize {
    DEFAULT_MAX_RESULTS
}
fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct SearchMatch {
    /// Path relative to the project root.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// The matching line (a long line is cut around the match).
    pub text: String,
    /// Lines before the match, oldest first (only with context_lines > 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Vec<String>>,
    /// Lines after the match (only with context_lines > 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct FileCount {
    pub file: String,
    /// Number of matching lines in the file.
    pub count: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchOutput {
    pub status: Status,
    pub query: String,
    /// The folder or file searched, relative to the project root.
    pub path: String,
    /// Matching lines, sorted by file then line (output_mode `content`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<SearchMatch>>,
    /// Paths of matching files, sorted (output_mode `files_with_matches`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// Matching-line counts per file, sorted by file (output_mode `count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<Vec<FileCount>>,
    /// Number of results returned.
    pub count: usize,
    /// True when more results existed than were returned; page on with `offset`.
    pub truncated: bool,
    /// Why nothing was found, when the path holds only ignored files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SearchInput {
    pub fn log_params(&self) -> String {
        let (query, _) = cut_chars(&self.query, 100);
        format!(
            "query={query:?} path={:?} regex={} case_sensitive={} glob={:?} output_mode={:?} max_results={} offset={} context_lines={} include_ignored={}",
            self.path,
            self.regex,
            self.case_sensitive,
            self.glob,
            self.output_mode,
            self.max_results,
            self.offset,
            self.context_lines,
            self.include_ignored
        )
    }
}

impl SearchOutput {
    pub fn log_summary(&self) -> String {
        format!("count={} truncated={}", self.count, self.truncated)
    }
}

/// What one file contributed.
#[derive(Debug, Default, Clone)]
struct FileHits {
    /// Path relative to the root; set only when the file has hits.
    file: String,
    /// The file, kept while a page may need to search it again.
    source: Option<Document>,
    /// Kept matches: from local match `first` on, at most a page of them.
    matches: Vec<SearchMatch>,
    /// Matching lines seen (complete in `count` mode, capped otherwise).
    count: u64,
    /// Every match from `first` up to `count` is in `matches`.
    complete: bool,
    /// The JSON characters the kept matches take.
    kept_chars: usize,
    /// Set by the prefix: the page starts at this local match, past what
    /// the first pass kept, so the file is searched again from there.
    rescan_from: Option<usize>,
}

/// Searches under `input.path`, in the documents `corpus` hands over.
pub fn search(
    corpus: &Corpus<'_>,
    input: &SearchInput,
    cancel: &Cancel,
) -> Result<SearchOutput, ToolError> {
    ToolError::check_size("query", &input.query, MAX_QUERY_CHARS)?;
    if input.offset > MAX_OFFSET {
        return Err(ToolError::invalid(format!(
            "offset {} is over the maximum of {MAX_OFFSET}; narrow the search with path, glob or a more specific query instead of paging this deep",
            input.offset
        )));
    }
    let (query, matcher) = build_matcher(input)?;
    let glob = input.glob.as_deref().map(PathGlob::new).transpose()?;
    let max_results = input.max_results.clamp(1, MAX_RESULTS_CAP);
    let context = input.context_lines.min(MAX_CONTEXT_LINES);
    let start = corpus.gate().resolve(&input.path)?;
    let settings = Settings {
        matcher,
        mode: input.output_mode,
        context,
        offset: input.offset,
        max_results,
        wanted: input.offset + max_results + 1,
        cancel: cancel.clone(),
    };

    let options = WalkOptions {
        include_ignored: input.include_ignored,
        cancel: cancel.clone(),
    };
    let accept = |name: &str| {
        glob.as_ref()
            .is_none_or(|glob| glob.is_match(below(&start.relative, name)))
    };
    let mut page = Page::default();
    corpus
        .scan(&start, &query, &options, accept, &settings, |hits| {
            if page.take(hits, &settings) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .map_err(|error| ToolError::io(&start.relative, &error))?;
    ToolError::check_cancel(cancel)?;
    // At most one file: the one the page starts in the middle of.
    for hits in &mut page.done {
        if let (Some(from), Some(document)) = (hits.rescan_from, hits.source.take()) {
            let again = corpus.read(&document, |content| {
                settings.search_content(&mut settings.scratch(), &document, content, from)
            });
            hits.matches = again.map(|again| again.matches).unwrap_or_default();
        }
    }
    let mut output = assemble(input, start.relative.clone(), &settings, page);
    let walk_with = |include_ignored| WalkOptions {
        include_ignored,
        cancel: cancel.clone(),
    };
    let nothing_to_search = output.count == 0
        && input.offset == 0
        && !input.include_ignored
        && start.relative != "."
        && !corpus.holds_files(&start, &walk_with(false));
    if nothing_to_search && corpus.holds_files(&start, &walk_with(true)) {
        output.note = Some(format!(
            "nothing searched: every file under '{}' is excluded by .gitignore/.ignore or the built-in skip list; search again with include_ignored: true to include them",
            output.path
        ));
    }
    ToolError::check_cancel(cancel)?;
    Ok(output)
}

/// The query parsed (for the index's plan) and compiled (for the searcher).
fn build_matcher(input: &SearchInput) -> Result<(Hir, LineMatcher), ToolError> {
    if input.query.is_empty() {
        return Err(ToolError::invalid(
            "query is empty; give the text (or, with regex=true, the pattern) to search for",
        ));
    }
    if input.query.contains('\n') {
        return Err(ToolError::invalid(
            "query spans several lines; search matches within one line, so give a single-line query",
        ));
    }
    matcher::parse(&input.query, !input.regex, !input.case_sensitive)
        .and_then(|hir| LineMatcher::new(&hir).map(|matcher| (hir, matcher)))
        .map_err(|error| {
        let detail = error.replace('\n', " ");
        let detail = detail.split_whitespace().collect::<Vec<_>>().join(" ");
        let detail = cut_chars(&detail, 300).0;
        ToolError::invalid(format!(
            "invalid regex {:?}: {detail}; use Rust regex syntax (compiled size at most {} MiB, so avoid large repetitions like \\w{{1000}}), or regex=false for a plain substring",
            cut_chars(&input.query, 100).0,
            matcher::SIZE_LIMIT / (1024 * 1024)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::PathGate;

    fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, PathGate) {
        crate::tools::temp_project(files)
    }

    /// The scan alone; the index's answers are compared with it elsewhere.
    fn search(gate: &PathGate, input: &SearchInput) -> Result<SearchOutput, ToolError> {
        super::search(&Corpus::walked(gate), input, &Cancel::never())
    }

    fn input(query: &str) -> SearchInput {
        SearchInput {
            query: query.into(),
            path: ".".into(),
            max_results: 50,
            regex: false,
            case_sensitive: true,
            glob: None,
            context_lines: 0,
            output_mode: OutputMode::Content,
            offset: 0,
            include_ignored: false,
        }
    }

    fn demo() -> (tempfile::TempDir, PathGate) {
        project(&[
            ("b/two.py", "x = apply(1)\ny = 2\napply(3)\n"),
            ("a/one.py", "def apply(a):\n    return a\n"),
            ("a.txt", "apply here\n"),
            ("c/skip.bin", "apply\0binary"),
            (".env", "apply=secret\n"),
            ("node_modules/m.js", "apply()\n"),
        ])
    }

    fn lines(out: &SearchOutput) -> Vec<(String, u64)> {
        out.matches
            .as_ref()
            .unwrap()
            .iter()
            .map(|m| (m.file.clone(), m.line))
            .collect()
    }

    #[test]
    fn literal_search_sorted_by_path_then_line() {
        let (_d, gate) = demo();
        let out = search(&gate, &input("apply")).unwrap();
        assert_eq!(
            lines(&out),
            vec![
                ("a/one.py".into(), 1),
                ("a.txt".into(), 1),
                ("b/two.py".into(), 1),
                ("b/two.py".into(), 3),
            ]
        );
        assert_eq!(out.count, 4);
        assert!(!out.truncated);
        assert_eq!(out.matches.as_ref().unwrap()[0].text, "def apply(a):");
    }

    #[test]
    fn literal_means_literal_and_case_options_work() {
        let (_d, gate) = project(&[("f.txt", "a.b\naxb\nA.B\n")]);
        assert_eq!(search(&gate, &input("a.b")).unwrap().count, 1);
        let mut insensitive = input("a.b");
        insensitive.case_sensitive = false;
        assert_eq!(search(&gate, &insensitive).unwrap().count, 2);
        let mut regex = input("a.b");
        regex.regex = true;
        assert_eq!(search(&gate, &regex).unwrap().count, 2);
        let mut bad = input("(");
        bad.regex = true;
        assert!(
            search(&gate, &bad)
                .unwrap_err()
                .to_string()
                .contains("invalid regex")
        );
    }

    /// The searcher keeps no line buffer of its own: lines far longer than
    /// grep's default buffer, their context and a byte order mark all come
    /// from the file's text as read.
    #[test]
    fn long_lines_and_marked_files_are_searched_whole() {
        let long = format!("{}needle{}\n", "x".repeat(200_000), "y".repeat(100_000));
        let (_d, gate) = project(&[
            ("long.txt", &format!("first\n{long}last\n")),
            ("marked.txt", "\u{FEFF}needle at the start\n"),
        ]);
        let mut context = input("needle");
        context.context_lines = 1;
        let out = search(&gate, &context).unwrap();
        assert_eq!(
            lines(&out),
            vec![("long.txt".into(), 2), ("marked.txt".into(), 1)]
        );
        let matches = out.matches.unwrap();
        assert_eq!(
            matches[0].before.as_deref(),
            Some(&["first".to_string()][..])
        );
        assert_eq!(matches[0].after.as_deref(), Some(&["last".to_string()][..]));
        assert_eq!(matches[1].text, "needle at the start");
    }

    #[test]
    fn paging_and_truncation() {
        let text: String = (1..=30).map(|i| format!("hit {i}\n")).collect();
        let (_d, gate) = project(&[("f.txt", &text)]);
        let mut page = input("hit");
        page.max_results = 10;
        let first = search(&gate, &page).unwrap();
        assert_eq!(first.count, 10);
        assert!(first.truncated);
        page.offset = 25;
        let last = search(&gate, &page).unwrap();
        assert_eq!(lines(&last).first().unwrap().1, 26);
        assert_eq!(last.count, 5);
        assert!(!last.truncated);
    }

    /// The same tree twice: each file's other names as hard links in one,
    /// as copies in the other. Every answer must be the same.
    #[cfg(unix)]
    #[test]
    fn other_names_of_a_file_answer_as_copies_would() {
        let long_line = format!("{}needle{}\n", "x".repeat(150), "y".repeat(150));
        let originals = [
            ("few.txt", "a needle\nnothing\nneedle again\n".to_string()),
            ("none.txt", "nothing here\n".to_string()),
            ("many.txt", "needle\n".repeat(30)),
            // With 10 lines of context, more than one file's room.
            ("wide.txt", long_line.repeat(70)),
            ("bin.dat", "needle\0binary".to_string()),
        ];
        // Names of different lengths, so that kept matches take different room.
        let names = ["a", "b/longer_folder_name", "c/d/e"];
        let make = |linked: bool| {
            let (dir, gate) = project(&[]);
            for (file, text) in &originals {
                let first = gate.root().join(names[0]).join(file);
                std::fs::create_dir_all(first.parent().unwrap()).unwrap();
                std::fs::write(&first, text).unwrap();
                for name in &names[1..] {
                    let other = gate.root().join(name).join(file);
                    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
                    if linked {
                        std::fs::hard_link(&first, &other).unwrap();
                    } else {
                        std::fs::write(&other, text).unwrap();
                    }
                }
            }
            (dir, gate)
        };
        let ((_linked_dir, linked), (_copied_dir, copied)) = (make(true), make(false));
        for mode in [
            OutputMode::Content,
            OutputMode::Count,
            OutputMode::FilesWithMatches,
        ] {
            for (max_results, offset, context_lines) in [
                (50, 0, 0),
                (200, 0, 10),
                (200, 150, 10),
                (7, 101, 0),
                (200, 0, 0),
            ] {
                let query = SearchInput {
                    max_results,
                    offset,
                    context_lines,
                    output_mode: mode,
                    ..input("needle")
                };
                let (a, b) = (search(&linked, &query), search(&copied, &query));
                let json = |out: Result<SearchOutput, ToolError>| {
                    serde_json::to_string(&out.unwrap()).unwrap()
                };
                assert_eq!(json(a), json(b), "{mode:?} {max_results} {offset}");
            }
        }
    }

    #[test]
    fn early_stop_gives_the_sequential_answer() {
        let files: Vec<(String, String)> = (0..300)
            .map(|i| (format!("d{:03}/f.txt", i), "needle\nneedle\n".to_string()))
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let (_d, gate) = project(&refs);
        let mut query = input("needle");
        query.max_results = 7;
        query.offset = 3;
        let out = search(&gate, &query).unwrap();
        assert_eq!(
            lines(&out),
            vec![
                ("d001/f.txt".into(), 2),
                ("d002/f.txt".into(), 1),
                ("d002/f.txt".into(), 2),
                ("d003/f.txt".into(), 1),
                ("d003/f.txt".into(), 2),
                ("d004/f.txt".into(), 1),
                ("d004/f.txt".into(), 2),
            ]
        );
        assert!(out.truncated);
    }

    #[test]
    fn modes_glob_and_context() {
        let (_d, gate) = demo();
        let mut files = input("apply");
        files.output_mode = OutputMode::FilesWithMatches;
        let out = search(&gate, &files).unwrap();
        assert_eq!(out.files.unwrap(), vec!["a/one.py", "a.txt", "b/two.py"]);
        assert!(out.matches.is_none());

        let mut counts = input("apply");
        counts.output_mode = OutputMode::Count;
        counts.glob = Some("*.py".into());
        let out = search(&gate, &counts).unwrap();
        assert_eq!(
            out.counts.unwrap(),
            vec![
                FileCount {
                    file: "a/one.py".into(),
                    count: 1
                },
                FileCount {
                    file: "b/two.py".into(),
                    count: 2
                },
            ]
        );

        let mut context = input("y = 2");
        context.context_lines = 5;
        let out = search(&gate, &context).unwrap();
        let hit = &out.matches.unwrap()[0];
        assert_eq!(
            hit.before.as_deref(),
            Some(&["x = apply(1)".to_string()][..])
        );
        assert_eq!(hit.after.as_deref(), Some(&["apply(3)".to_string()][..]));
    }

    #[test]
    fn large_answers_stay_within_the_size_hint_escapes_included() {
        // Control characters escape to six characters each in JSON.
        let line = format!("x{}", "\u{1}".repeat(MAX_LINE_CHARS * 2));
        let text: String = (0..400).map(|_| format!("{line}\n")).collect();
        let name = format!("{}.txt", crate::tools::COSTLY_NAME_CHAR.repeat(200));
        let (_d, gate) = project(&[(name.as_str(), text.as_str())]);
        for mode in [
            OutputMode::Content,
            OutputMode::FilesWithMatches,
            OutputMode::Count,
        ] {
            let mut query = input("x");
            query.max_results = 200;
            query.context_lines = 10;
            query.output_mode = mode;
            let out = search(&gate, &query).unwrap();
            assert!(out.count > 0);
            let written = serde_json::to_string(&out).unwrap();
            assert!(
                written.encode_utf16().count() <= MAX_RESULT_CHARS,
                "{mode:?}: {}",
                written.len()
            );
            if mode == OutputMode::Content {
                assert!(out.truncated && out.count < 200);
            }
        }
    }

    #[test]
    fn deep_offsets_count_what_they_skip_and_give_the_sequential_page() {
        // One big file the page starts in the middle of, then small ones.
        let big: String = (1..=5000).map(|i| format!("hit {i}\n")).collect();
        let mut files = vec![("a.txt".to_string(), big)];
        for i in 0..50 {
            files.push((format!("b{i:02}.txt"), "hit\nhit\n".to_string()));
        }
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let (_d, gate) = project(&refs);
        let mut query = input("hit");
        query.max_results = 20;
        query.context_lines = 2;
        query.offset = 4990;
        let out = search(&gate, &query).unwrap();
        let found = lines(&out);
        assert_eq!(found.len(), 20);
        assert_eq!(found[0], ("a.txt".into(), 4991));
        assert_eq!(found[9], ("a.txt".into(), 5000));
        assert_eq!(found[10], ("b00.txt".into(), 1));
        assert_eq!(
            out.matches.as_ref().unwrap()[0]
                .before
                .as_ref()
                .unwrap()
                .len(),
            2
        );
        assert!(out.truncated);

        query.offset = MAX_OFFSET + 1;
        let error = search(&gate, &query).unwrap_err().to_string();
        assert!(error.contains("maximum of 10000"), "{error}");

        let mut files_mode = input("hit");
        files_mode.output_mode = OutputMode::FilesWithMatches;
        files_mode.offset = 49;
        let out = search(&gate, &files_mode).unwrap();
        assert_eq!(out.files.unwrap(), vec!["b48.txt", "b49.txt"]);
        assert!(!out.truncated);
    }

    #[test]
    fn a_cancelled_search_stops_with_cancelled() {
        let (_d, gate) = demo();
        let cancel = Cancel::never();
        cancel.cancel();
        let error = super::search(&Corpus::walked(&gate), &input("apply"), &cancel).unwrap_err();
        assert!(matches!(error, ToolError::Cancelled));
    }

    #[test]
    fn ignored_paths_get_a_note_and_can_be_included() {
        let (_d, gate) = project(&[
            (".gitignore", "scripts/*\n"),
            ("scripts/w.py", "needle\n"),
            ("src/a.py", "other\n"),
        ]);
        let mut query = input("needle");
        query.path = "scripts".into();
        let out = search(&gate, &query).unwrap();
        assert_eq!(out.count, 0);
        let note = out.note.expect("a note");
        assert!(note.contains("include_ignored: true"), "{note}");
        query.include_ignored = true;
        let out = search(&gate, &query).unwrap();
        assert_eq!(lines(&out), vec![("scripts/w.py".into(), 1)]);
        assert!(out.note.is_none());
        // An empty answer for other reasons carries no note.
        let mut other = input("needle");
        other.path = "src".into();
        assert!(search(&gate, &other).unwrap().note.is_none());
        let json = serde_json::to_value(search(&gate, &other).unwrap()).unwrap();
        assert!(json.get("note").is_none());
    }

    #[test]
    fn oversized_queries_and_regexes_are_refused() {
        let (_d, gate) = demo();
        let error = search(&gate, &input(&"a".repeat(MAX_QUERY_CHARS + 1)))
            .unwrap_err()
            .to_string();
        assert!(error.contains("at most 1024 characters"), "{error}");
        let mut huge = input(r"\w{1000}\w{1000}");
        huge.regex = true;
        let error = search(&gate, &huge).unwrap_err().to_string();
        assert!(error.contains("invalid regex"), "{error}");
    }

    #[test]
    fn long_lines_are_cut_around_the_match() {
        let line = format!("{}needle{}", "a".repeat(5000), "b".repeat(5000));
        let (_d, gate) = project(&[("long.txt", &line)]);
        let out = search(&gate, &input("needle")).unwrap();
        let text = &out.matches.unwrap()[0].text;
        assert_eq!(text.chars().count(), MAX_LINE_CHARS);
        assert!(text.contains("needle"));
    }

    #[test]
    fn files_up_to_the_cap_are_searched_and_larger_ones_skipped() {
        let cap = crate::corpus::searchable::MAX_SEARCHED_BYTES as usize;
        let at_cap = format!("{}needle\n", "x".repeat(cap - 7));
        let (_d, gate) = project(&[
            ("at_cap.txt", &at_cap),
            ("over_cap.txt", &format!("{at_cap}y")),
        ]);
        let found = search(&gate, &input("needle")).unwrap();
        assert_eq!(lines(&found), vec![("at_cap.txt".into(), 1)]);
    }

    #[test]
    fn a_single_file_path_and_bad_queries() {
        let (_d, gate) = demo();
        let mut one = input("apply");
        one.path = "b/two.py".into();
        assert_eq!(search(&gate, &one).unwrap().count, 2);
        assert!(search(&gate, &input("")).is_err());
        assert!(search(&gate, &input("a\nb")).is_err());
        let mut secret = input("apply");
        secret.path = ".env".into();
        assert!(search(&gate, &secret).is_err());
    }
}
