//! How the server is shipped and installed: the container image, the
//! Claude Desktop bundle, the release configuration, the host configs and
//! the real host CLIs that start it, and the evidence run by independent
//! clients.

mod container;
mod evidence;
mod host_configs;
// The real host CLIs (npm packages) and a Unix shell: not in the Wine
// prefix Windows is tested in; host_configs checks the Windows snippets.
#[cfg(unix)]
mod hosts_cli;
mod mcpb_bundle;
mod release_config;
