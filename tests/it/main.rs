//! The integration tests, as one binary: each module starts the real server
//! and talks to it over stdio. One binary links once, which matters on
//! small machines (see uv's `tests/it`).

mod bounds;
mod checks;
mod common;
mod container;
mod demo_requests;
mod evidence;
mod freshness;
mod host_configs;
mod hostile;
mod hostile_gate;
mod hostile_process;
// The real host CLIs (npm packages) and a Unix shell: not in the Wine
// prefix Windows is tested in; host_configs checks the Windows snippets.
#[cfg(unix)]
mod hosts_cli;
mod index;
mod mcpb_bundle;
mod protocol;
mod release_config;
mod roots;
mod schemas;
mod security;
mod tools_docs;
mod tools_list_find;
mod tools_read;
mod tools_search;
mod tools_symbols;
