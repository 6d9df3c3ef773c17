//! Helpers the unit tests of several modules share.

/// Makes a FIFO at `path`: a special file whose reader blocks until a
/// writer comes, the hostile input every opener must refuse without waiting.
#[cfg(unix)]
pub(crate) fn make_fifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}
