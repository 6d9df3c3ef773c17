//! How the server is shipped and installed: the container image, the
//! Claude Desktop bundle, the release configuration, the host configs and
//! the real host CLIs that start it, and the evidence run by independent
//! clients.

mod container;
mod evidence;
mod host_configs;
mod hosts_cli;
mod mcpb_bundle;
mod release_config;
