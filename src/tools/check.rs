//! `run_project_check`: runs one check from the operator's whitelist (see
//! [`crate::checks`]) and turns how it ended into the tool's answer.

use std::future::Future;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Status, ToolError};
use crate::checks::{CheckCatalog, CheckProgress};
use crate::runner::Ending;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CheckInput {
    /// Name of a whitelisted check, e.g. `tests`.
    #[schemars(length(max = super::MAX_CHECK_NAME_CHARS))]
    pub check_name: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckOutput {
    /// `success` when the check ran to its end (whether it passed or not),
    /// `error` when it timed out.
    pub status: Status,
    pub check_name: String,
    /// Why the check did not run to its end (only with `status: error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The program's exit code; null when it timed out or a signal ended it.
    pub exit_code: Option<i32>,
    /// True when exit_code is 0.
    pub passed: bool,
    pub duration_ms: u64,
    /// The last characters the check wrote to stdout.
    pub stdout: String,
    /// The last characters the check wrote to stderr.
    pub stderr: String,
    /// stdout or stderr was longer than what is returned.
    pub truncated: bool,
}

/// Runs the check: `Ok(None)` when the client cancelled (the process tree
/// was killed); a timed-out check is an output with `status: error`.
pub async fn run_check(
    catalog: &CheckCatalog,
    input: &CheckInput,
    on_progress: impl FnMut(CheckProgress),
    cancelled: impl Future<Output = ()>,
) -> Result<Option<CheckOutput>, ToolError> {
    let name = input.check_name.as_str();
    ToolError::check_size("check_name", name, super::MAX_CHECK_NAME_CHARS)?;
    let Some(run) = catalog
        .run(name, on_progress, cancelled)
        .await
        .map_err(|refused| ToolError::invalid(refused.to_string()))?
    else {
        return Ok(None);
    };
    let outcome = run.outcome;
    let mut output = CheckOutput {
        status: Status::Success,
        check_name: name.to_string(),
        error: None,
        exit_code: None,
        passed: false,
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
        truncated: outcome.stdout.truncated || outcome.stderr.truncated,
        stdout: outcome.stdout.text,
        stderr: outcome.stderr.text,
    };
    match outcome.ending {
        Ending::Exited { code } => {
            output.exit_code = code;
            output.passed = code == Some(0);
        }
        Ending::TimedOut => {
            output.status = Status::Error;
            output.error = Some(format!("check timed out after {}s", run.timeout.as_secs()));
        }
        Ending::Cancelled => return Ok(None),
    }
    Ok(Some(output))
}
