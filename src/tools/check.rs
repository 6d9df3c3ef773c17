//! `run_project_check`: runs one whitelisted check (placeholder until the
//! runner lands: no checks are offered yet).

use std::path::Path;
use std::process::ExitCode;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Status, ToolError};
use crate::config::Config;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CheckInput {
    /// Name of a whitelisted check, e.g. `tests`.
    pub check_name: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckOutput {
    pub status: Status,
    pub check_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub exit_code: Option<i32>,
    pub passed: bool,
    pub duration_ms: u64,
    pub stdout: String,
    pub stderr: String,
    pub truncated: bool,
}

/// The checks offered for one project root.
#[derive(Debug, Clone, Default)]
pub struct CheckCatalog {}

impl CheckCatalog {
    pub fn detect(_config: &Config, _root: &Path) -> Self {
        Self {}
    }

    pub fn names(&self) -> Vec<String> {
        Vec::new()
    }

    pub fn run(&self, input: &CheckInput) -> Result<CheckOutput, ToolError> {
        Err(ToolError::invalid(format!(
            "no checks are configured, so '{}' cannot run",
            input.check_name
        )))
    }
}

pub fn print_catalog(_config: &Config) -> ExitCode {
    eprintln!("no checks are configured");
    ExitCode::SUCCESS
}
