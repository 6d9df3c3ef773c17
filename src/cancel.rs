//! The cancellation flag every tool's blocking work watches.
//!
//! rmcp marks a request cancelled (`notifications/cancelled`) but does not
//! stop its handler, and blocking work cannot be aborted from outside. So
//! the server raises this flag when the request's token fires, and the
//! walker, the searcher, the reader and the docs loader check it between
//! entries, files and chunks: cancelled work ends within one such step.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Cheap to clone and to check; once raised it stays raised.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag that is never raised, for work nobody can cancel.
    pub fn never() -> Self {
        Self::default()
    }

    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
