//! How the build yields to tool calls.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::Shared;

/// Longest pause of the build for calls that keep coming, and how long it
/// then works before it pauses again: a client whose calls never stop
/// still gets its index, at a fifth of the pace.
pub(super) const MAX_PAUSE: Duration = Duration::from_secs(1);
pub(super) const WORK_AFTER_PAUSE: Duration = Duration::from_millis(250);
/// Longest pause for the calls that were running when it began: one call
/// has the cores to itself for as long as it runs (the first search of a
/// large tree, which reads every file the build has not reached, takes
/// seconds), unless it hangs.
pub(super) const LONGEST_PAUSE: Duration = if cfg!(test) {
    Duration::from_secs(3)
} else {
    Duration::from_secs(60)
};
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
        let started_before = shared.calls_started.load(Ordering::Relaxed);
        while busy() && !shared.stopping() {
            let waited = paused.elapsed();
            let more_calls = shared.calls_started.load(Ordering::Relaxed) != started_before;
            if (waited >= MAX_PAUSE && more_calls) || waited >= LONGEST_PAUSE {
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

    fn timed(pacer: &mut Pacer, model: &TreeModel) -> Duration {
        let started = Instant::now();
        pacer.yield_to_calls(&model.shared);
        started.elapsed()
    }

    /// Ends `call` after `after`; returns when it did.
    fn end_later(
        call: crate::index::CallGuard,
        after: Duration,
    ) -> std::thread::JoinHandle<Instant> {
        std::thread::spawn(move || {
            std::thread::sleep(after);
            let ended = Instant::now();
            drop(call);
            ended
        })
    }

    #[test]
    pub(super) fn the_build_pauses_while_calls_run() {
        let model = TreeModel::off();
        let mut pacer = Pacer::default();
        // Bounds far apart, so that a busy machine cannot blur them.
        assert!(
            timed(&mut pacer, &model) < MAX_PAUSE / 2,
            "no call, no pause"
        );
        // The pause lasts as long as the call.
        let ends = end_later(model.busy(), Duration::from_millis(150));
        let paused = timed(&mut pacer, &model);
        let resumed = Instant::now();
        let call_ended = ends.join().unwrap();
        // Ordered, not timed: the build resumes only after the call ended.
        assert!(resumed >= call_ended, "resumed before the call ended");
        assert!(paused < MAX_PAUSE, "{paused:?}");
        // One call longer than the pause for calls that keep coming: the
        // build still waits for its end.
        let ends = end_later(model.busy(), MAX_PAUSE + MAX_PAUSE / 2);
        timed(&mut pacer, &model);
        let resumed = Instant::now();
        assert!(
            resumed >= ends.join().unwrap(),
            "resumed during one long call"
        );
        assert!(pacer.working_until.is_none());
        // A call that hangs: the build works again after the longest pause.
        let hanging = model.busy();
        assert!(timed(&mut pacer, &model) >= LONGEST_PAUSE);
        assert!(pacer.working_until.is_some());
        drop(hanging);
    }

    #[test]
    pub(super) fn calls_that_keep_coming_pause_the_build_a_while_at_a_time() {
        let model = TreeModel::off();
        let mut pacer = Pacer::default();
        let _first = model.busy();
        // A second call starts during the pause, and neither ends.
        let shared = model.shared.clone();
        let second = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            shared.calls.fetch_add(1, Ordering::Relaxed);
            shared.calls_started.fetch_add(1, Ordering::Relaxed);
            crate::index::CallGuard(shared)
        });
        let paused = timed(&mut pacer, &model);
        assert!(paused >= MAX_PAUSE && paused < LONGEST_PAUSE, "{paused:?}");
        assert!(pacer.working_until.is_some());
        let _second = second.join().unwrap();
        assert!(
            timed(&mut pacer, &model) < MAX_PAUSE / 2,
            "works before it pauses again"
        );
    }
}
