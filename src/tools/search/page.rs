//! The page: the hits handed on in path order, kept from `offset` on, and
//! the answer built from them within [`MAX_RESULT_CHARS`].

use super::matching::Settings;
use super::{FileCount, FileHits, MAX_RESULT_CHARS, OutputMode, SearchInput, SearchOutput};
use crate::tools::{JsonBudget, Status};

/// The hits of the files handed on so far, in path order, kept from
/// `offset` on.
#[derive(Default)]
pub(super) struct Page {
    /// Files with hits at or after `offset`, in order.
    pub(super) done: Vec<FileHits>,
    /// Hits handed on, counted from the first file (offset included).
    pub(super) units: usize,
}

impl Page {
    /// Takes the next file's hits; true once there are enough.
    pub(super) fn take(&mut self, mut hits: FileHits, settings: &Settings) -> bool {
        let units = settings.units(&hits);
        if units > 0 {
            let skip = settings.offset.saturating_sub(self.units).min(units);
            self.units = self.units.saturating_add(units);
            // Wholly before the page: counted, not kept.
            if skip < units {
                if skip > 0 {
                    if hits.complete {
                        hits.matches.drain(..skip.min(hits.matches.len()));
                    } else {
                        hits.matches = Vec::new();
                        hits.rescan_from = Some(skip);
                    }
                }
                if hits.rescan_from.is_none() {
                    hits.source = None;
                }
                self.done.push(hits);
            }
        }
        self.units >= settings.wanted
    }
}

/// The page: at most `max_results` results after `offset`, cut where the
/// answer would outgrow [`MAX_RESULT_CHARS`].
pub(super) fn assemble(
    input: &SearchInput,
    path: String,
    settings: &Settings,
    found: Page,
) -> SearchOutput {
    let available = found.units.saturating_sub(settings.offset);
    let mut output = SearchOutput {
        status: Status::Success,
        query: input.query.clone(),
        path,
        matches: None,
        files: None,
        counts: None,
        count: 0,
        truncated: false,
        note: None,
    };
    match input.output_mode {
        OutputMode::Content => output.matches = Some(Vec::new()),
        OutputMode::FilesWithMatches => output.files = Some(Vec::new()),
        OutputMode::Count => output.counts = Some(Vec::new()),
    }
    let mut budget = JsonBudget::new(MAX_RESULT_CHARS, &output);
    let mut cut = false;
    match input.output_mode {
        OutputMode::Content => {
            let mut matches = Vec::new();
            for hit in found.done.into_iter().flat_map(|hits| hits.matches) {
                if matches.len() == settings.max_results {
                    break;
                }
                if !budget.take(&hit) {
                    cut = true;
                    break;
                }
                matches.push(hit);
            }
            output.count = matches.len();
            output.matches = Some(matches);
        }
        OutputMode::FilesWithMatches | OutputMode::Count => {
            let mut page = Vec::new();
            for hits in found.done {
                if page.len() == settings.max_results {
                    break;
                }
                let item = FileCount {
                    file: hits.file,
                    count: hits.count,
                };
                let fits = if input.output_mode == OutputMode::Count {
                    budget.take(&item)
                } else {
                    budget.take(&item.file)
                };
                if !fits {
                    cut = true;
                    break;
                }
                page.push(item);
            }
            output.count = page.len();
            if input.output_mode == OutputMode::Count {
                output.counts = Some(page);
            } else {
                output.files = Some(page.into_iter().map(|c| c.file).collect());
            }
        }
    }
    output.truncated = cut || available > output.count;
    output
}
