//! `search_project_files`: content search (placeholder types).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Status, ToolError};
use crate::security::PathGate;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SearchInput {
    pub query: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchOutput {
    pub status: Status,
}

impl SearchInput {
    pub fn log_params(&self) -> String {
        format!("query={:?}", self.query)
    }
}

impl SearchOutput {
    pub fn log_summary(&self) -> String {
        String::new()
    }
}

pub fn search(_gate: &PathGate, _input: &SearchInput) -> Result<SearchOutput, ToolError> {
    Err(ToolError::invalid("search is not implemented yet"))
}
