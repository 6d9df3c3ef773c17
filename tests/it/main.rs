//! The integration tests, as one binary: each module starts the real server
//! and talks to it over stdio. One binary links once, which matters on
//! small machines (see uv's `tests/it`). Modules are named by the behaviour
//! they test: a tool (search, read, list_find, docs, symbols, checks), a
//! property every call has (gate, bounds, freshness, index, trees, process,
//! protocol, schemas, roots), or how the server is shipped (packaging).

mod bounds;
mod checks;
mod common;
mod demo_requests;
mod docs;
mod freshness;
mod gate;
mod index;
mod index_cache;
mod list_find;
mod packaging;
mod process;
mod protocol;
mod read;
mod references;
mod roots;
mod schemas;
mod search;
mod symbols;
mod trees;
