//! Log lines go to stderr and, when configured, are appended to a file.
//! stdout belongs to the protocol and is never written here.

use std::fs::OpenOptions;
use std::sync::Arc;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

use crate::config::Config;

pub fn init(config: &Config) -> Result<(), String> {
    let level = LevelFilter::from_level(config.log_level.as_tracing());
    // Libraries speak only of problems: rmcp's debug records can carry whole
    // messages (file contents), which the log must never hold.
    let filter = Targets::new()
        .with_default(level.min(LevelFilter::WARN))
        .with_target(env!("CARGO_CRATE_NAME"), level);
    let stderr = fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .with_filter(filter.clone());
    let file = match &config.log_file {
        Some(path) => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|error| {
                    format!("cannot create log folder {}: {error}", parent.display())
                })?;
            }
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|error| format!("cannot open log file {}: {error}", path.display()))?;
            Some(
                fmt::layer()
                    .with_writer(Arc::new(file))
                    .with_ansi(false)
                    .with_target(false)
                    .with_filter(filter),
            )
        }
        None => None,
    };
    tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .try_init()
        .map_err(|error| format!("cannot start logging: {error}"))
}
