//! `get_docs` (placeholder types).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Status, ToolError};
use crate::project::Project;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DocsInput {
    pub query: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DocsOutput {
    pub status: Status,
}

impl DocsInput {
    pub fn log_params(&self) -> String {
        format!("query={:?}", self.query)
    }
}

impl DocsOutput {
    pub fn log_summary(&self) -> String {
        String::new()
    }
}

pub fn get_docs(_project: &Project, _input: &DocsInput) -> Result<DocsOutput, ToolError> {
    Err(ToolError::invalid("get_docs is not implemented yet"))
}
