//! How the build yields to tool calls.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::Shared;

/// Longest pause of the build for calls at a time, and how long it then
/// works before it pauses again: a client whose calls never stop still gets
/// its index, at a fifth of the pace.
pub(super) const MAX_PAUSE: Duration = Duration::from_secs(1);
pub(super) const WORK_AFTER_PAUSE: Duration = Duration::from_millis(250);
pub(super) const PAUSE_STEP: Duration = Duration::from_millis(1);

/// How the build yields to calls. Its lower priority is not enough on two
/// cores: the build would still take a share of the cores a search's
/// threads need, so it pauses while calls run.
#[derive(Default)]
pub(super) struct Pacer {
    /// After a pause that calls outlasted, the build works until then.
    pub(super) working_until: Option<Instant>,
}

impl Pacer {
    /// Waits while tool calls run, between two files or entries, where the
    /// build holds no lock a call could need.
    pub(super) fn yield_to_calls(&mut self, shared: &Shared) {
        // Serving the index from disk is what calls wait for (or, past
        // their wait, what would spare them the scan): it does not pause.
        if shared.restoring.load(Ordering::Relaxed) {
            return;
        }
        let busy = || shared.calls.load(Ordering::Relaxed) > 0;
        if !busy()
            || self
                .working_until
                .is_some_and(|until| Instant::now() < until)
        {
            return;
        }
        let paused = Instant::now();
        while busy() && !shared.cancelled.load(Ordering::Relaxed) {
            if paused.elapsed() >= MAX_PAUSE {
                self.working_until = Some(Instant::now() + WORK_AFTER_PAUSE);
                return;
            }
            std::thread::sleep(PAUSE_STEP);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::TreeModel;

    #[test]
    pub(super) fn the_build_pauses_while_calls_run() {
        let model = TreeModel::off();
        let mut pacer = Pacer::default();
        let timed = |pacer: &mut Pacer| {
            let started = Instant::now();
            pacer.yield_to_calls(&model.shared);
            started.elapsed()
        };
        // Bounds far apart, so that a busy machine cannot blur them.
        assert!(timed(&mut pacer) < MAX_PAUSE / 2, "no call, no pause");
        // The pause lasts as long as the call.
        let call = model.busy();
        let ends = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            let ended = Instant::now();
            drop(call);
            ended
        });
        let paused = timed(&mut pacer);
        let resumed = Instant::now();
        let call_ended = ends.join().unwrap();
        // Ordered, not timed: the build resumes only after the call ended.
        assert!(resumed >= call_ended, "resumed before the call ended");
        assert!(paused < MAX_PAUSE, "{paused:?}");
        // A call that outlasts the longest pause: the build then works a
        // while before it pauses again.
        let _endless = model.busy();
        assert!(timed(&mut pacer) >= MAX_PAUSE);
        assert!(pacer.working_until.is_some());
        assert!(
            timed(&mut pacer) < MAX_PAUSE / 2,
            "works before it pauses again"
        );
    }
}
