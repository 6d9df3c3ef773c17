//! mcp-project-helper: an MCP server over ONE project directory.
//!
//! Arrows point down: `main` -> `server` -> `tools` -> the core. The core
//! is `security` (the one path gate), `walk` and `glob` (the one walker and
//! its matcher), `matcher` (the search's line matcher), `index` (the live model of the tree behind them), `runner` (the one process runner), `checks` (the check
//! catalog), `config` (resolved once at start-up) and `project` (what the
//! tools work on). `tools` has one protocol-free module per tool; `server`
//! registers them and converts results; `main`, `report` and
//! `hosts` are the command line. See docs/architecture.md.

pub mod cancel;
pub mod checks;
pub mod cli;
pub mod config;
pub mod corpus;
pub mod glob;
pub mod hosts;
pub mod index;
pub mod logging;
pub mod matcher;
pub mod project;
pub mod report;
pub mod runner;
pub mod security;
pub mod server;
pub mod symbols;
pub mod tools;
pub mod transport;
pub mod walk;
