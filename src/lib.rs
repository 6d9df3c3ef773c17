//! mcp-project-helper: an MCP server over ONE project directory.
//!
//! Layers, each with one job: `config` (resolved once at start-up),
//! `security` (the one path gate), `walk` (the one walker), `runner` (the
//! one process runner), `tools` (one
//! module per tool, protocol-free), `server` (registers the tools and
//! converts results), `main` (the command line).

pub mod cli;
pub mod config;
pub mod editor_config;
pub mod index;
pub mod logging;
pub mod project;
pub mod runner;
pub mod security;
pub mod server;
pub mod tools;
pub mod transport;
pub mod walk;
