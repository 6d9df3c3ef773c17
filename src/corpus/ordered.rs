//! The ordered parallel executors: documents go to worker threads in path
//! order, their outcomes come back in any order and are handed on in path
//! order, and the work stops as soon as the consumer has enough. A walk
//! feeds its documents as it finds them ([`in_order_parallel`]); a list
//! (the index's candidates, which the thread reaching its end extends by
//! a page) is claimed document by document by the threads working it
//! ([`in_order_shared`]).
//!
//! Memory follows the consumer, never the tree: no thread runs more than a
//! bounded number of documents ahead of the outcomes handed on, and the
//! finished outcomes waiting for an earlier one are bounded by their
//! weight, so a slow document holds up only that much.

use std::collections::BTreeMap;
use std::io;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, TrySendError};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use super::{Document, Outcome};
use crate::cancel::Cancel;
use crate::walk::{self, EntryKind};

/// Documents the walk hands to a worker at once: one at a time put the
/// threads to sleep and woke them (a futex call each) for about every
/// file. The stop flag is still checked before each document. A list of
/// candidates no longer than this is worked through on the caller's
/// thread: starting workers would cost more than the documents.
pub(super) const BATCH_FILES: usize = 32;

/// How far the threads may work ahead of the outcomes handed on: at most
/// this many documents of a walk, while the finished outcomes waiting for
/// an earlier one weigh at most [`LOOKAHEAD_WEIGHT`] ([`Outcome::weight`]:
/// the search's JSON characters). A thread the scheduler sets aside
/// (another program busy on the cores) holds up every outcome after its
/// document; the others work on meanwhile, as far as this allows: 256
/// documents stalled them within a time slice, and the first search of
/// u-boot beside a CPU-bound process took 2-8 % longer than with 4,096.
const WALK_LOOKAHEAD: usize = 4096;
/// The same for a list of candidates, which a call often stops early: work
/// ahead of the stop is wasted, and a thread that sleeps leaves its core to
/// the one holding up the rest (a scan of u-boot's file list beside a
/// CPU-bound process: 183 ms at the median with 256, 233 with 4,096).
const LIST_LOOKAHEAD: usize = 256;
/// What the finished outcomes waiting for an earlier one may weigh, in
/// either executor (see [`WALK_LOOKAHEAD`]).
const LOOKAHEAD_WEIGHT: usize = 4 << 20;

/// Outcomes in path order: those finished out of order wait for their
/// turn; each one next in order is handed to `consume`.
struct InOrder<T, C> {
    waiting: BTreeMap<usize, T>,
    /// The total weight of the outcomes `waiting`.
    waiting_weight: usize,
    /// Index of the next outcome to hand on.
    next: usize,
    consume: C,
    /// `consume` has broken: it has enough.
    enough: bool,
}

impl<T: Outcome, C: FnMut(T) -> ControlFlow<()>> InOrder<T, C> {
    fn new(consume: C) -> Self {
        Self {
            waiting: BTreeMap::new(),
            waiting_weight: 0,
            next: 0,
            consume,
            enough: false,
        }
    }

    /// Records outcome `index` and hands on every outcome now next in
    /// order, until the consumer has enough; true from then on.
    fn finish(&mut self, index: usize, outcome: T) -> bool {
        if self.enough {
            return true;
        }
        if index != self.next {
            // The next outcome is still missing: nothing to hand on.
            self.waiting_weight += outcome.weight();
            self.waiting.insert(index, outcome);
            return false;
        }
        // In order (the common case) nothing is stored: no allocation.
        let mut ready = Some(outcome);
        while let Some(outcome) = ready.take() {
            self.next += 1;
            if (self.consume)(outcome).is_break() {
                self.enough = true;
                self.waiting.clear();
                self.waiting_weight = 0;
                break;
            }
            ready = self.waiting.remove(&self.next);
            if let Some(outcome) = &ready {
                self.waiting_weight -= outcome.weight();
            }
        }
        self.enough
    }

    /// Whether a thread may work on document `index` now, at most
    /// `lookahead` documents ahead (see [`WALK_LOOKAHEAD`]); the one every
    /// waiting outcome waits for always may.
    fn has_room_for(&self, index: usize, lookahead: usize) -> bool {
        index <= self.next
            || (index <= self.next + lookahead && self.waiting_weight <= LOOKAHEAD_WEIGHT)
    }
}

/// Works through `files` (a few) on this thread, in order, until the
/// consumer has enough or the call is cancelled.
pub(super) fn in_order_here<T: Outcome>(
    files: impl Iterator<Item = Document>,
    accept: &impl Fn(&Document) -> bool,
    mut work: impl FnMut(&Document) -> T,
    consume: impl FnMut(T) -> ControlFlow<()>,
    cancel: &Cancel,
) {
    let mut in_order = InOrder::new(consume);
    for (index, document) in files.filter(|document| accept(document)).enumerate() {
        if cancel.is_cancelled() {
            break;
        }
        if in_order.finish(index, work(&document)) {
            break;
        }
    }
}

/// Works through the documents `document` gives (by index, in path order,
/// `None` past the last) that `accept` keeps, on this thread and a helper
/// per other core, each with its own `state`, each claiming the next
/// document as it is free; hands the outcomes to `consume` in path order
/// and stops once it breaks or the call is cancelled. Nothing passes
/// between the threads but the claim of an index and the outcomes, so no
/// thread sleeps unless it is too far ahead of the outcomes handed on
/// ([`LIST_LOOKAHEAD`]): a list needs no thread to feed it, and
/// helpers woken batch by batch cost more CPU for no less time
/// (docs/performance.md, "Per call").
pub(super) fn in_order_shared<T: Outcome, S>(
    document: impl Fn(usize) -> Option<Document> + Sync,
    accept: impl Fn(&Document) -> bool + Sync,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &Document) -> T + Sync,
    consume: impl FnMut(T) -> ControlFlow<()> + Send,
    cancel: &Cancel,
) {
    let next_claim = AtomicUsize::new(0);
    // The index of the next outcome to hand on, as the lock last left it.
    let handed = AtomicUsize::new(0);
    // The outcomes waiting weigh more than the lookahead allows, as the
    // lock last left them.
    let crowded = AtomicBool::new(false);
    let sleepers = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let progress = Mutex::new(InOrder::new(consume));
    let advanced = Condvar::new();
    let halted = || stop.load(Ordering::Relaxed) || cancel.is_cancelled();
    let run = || {
        let mut state = state();
        loop {
            let index = next_claim.fetch_add(1, Ordering::Relaxed);
            if halted() {
                return;
            }
            if index > handed.load(Ordering::Relaxed) + LIST_LOOKAHEAD
                || crowded.load(Ordering::Relaxed)
            {
                // Counted before the lock is taken, read after it is left:
                // a thread that moves `next` on sees every sleeper.
                sleepers.fetch_add(1, Ordering::SeqCst);
                let room = wait_for_room(&progress, &advanced, index, LIST_LOOKAHEAD, &halted);
                sleepers.fetch_sub(1, Ordering::SeqCst);
                if !room {
                    return;
                }
            }
            let Some(document) = document(index) else {
                return;
            };
            let outcome = if accept(&document) && !halted() {
                work(&mut state, &document)
            } else {
                T::default()
            };
            let Ok(mut in_order) = progress.lock() else {
                return;
            };
            if in_order.finish(index, outcome) {
                stop.store(true, Ordering::Relaxed);
            }
            handed.store(in_order.next, Ordering::Relaxed);
            crowded.store(
                in_order.waiting_weight > LOOKAHEAD_WEIGHT,
                Ordering::Relaxed,
            );
            drop(in_order);
            if sleepers.load(Ordering::SeqCst) > 0 {
                advanced.notify_all();
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..walk::worker_threads() {
            scope.spawn(run);
        }
        run();
    });
}

/// Runs `feed` (a walk) on this thread while helper threads apply `work` to
/// the files `accept` keeps, each thread with its own `state`; hands the
/// outcomes to `consume` in path order, and stops both once `consume`
/// breaks or the call is cancelled. A file met once the run stopped gets
/// `T::default()` without being worked on.
///
/// The walk is about a third of a scan's time, so its thread works too,
/// beside one helper fewer than the worker count (the oldest batch waiting
/// when the helpers have no room, and what is left at the end). A feeding
/// thread beside a worker per core had the scheduler switch three threads
/// on two cores (a tenth of the scan's time) and left a core idle whenever
/// the workers waited for the walk: a scan of u-boot took 174 ms, 150 with
/// the walk's thread working.
pub(super) fn in_order_parallel<T: Outcome, S>(
    feed: impl FnOnce(&mut dyn FnMut(Document) -> ControlFlow<()>) -> io::Result<()>,
    accept: impl Fn(&Document) -> bool,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &Document) -> T + Sync,
    consume: impl FnMut(T) -> ControlFlow<()> + Send,
    cancel: &Cancel,
) -> io::Result<()> {
    let threads = walk::worker_threads();
    let stop = AtomicBool::new(false);
    let progress = Mutex::new(InOrder::new(consume));
    let advanced = Condvar::new();
    let (sender, receiver) = mpsc::sync_channel::<Vec<(usize, Document)>>(threads * 2);
    let receiver = Mutex::new(receiver);
    let halted = || stop.load(Ordering::Relaxed) || cancel.is_cancelled();
    // The oldest batch waiting for a helper, unless one is taking it now.
    let oldest_waiting = || {
        receiver
            .try_lock()
            .ok()
            .and_then(|receiver| receiver.try_recv().ok())
    };
    // False once the outcomes' lock is poisoned (a consumer panicked).
    let work_batch = |state: &mut S, batch: Vec<(usize, Document)>| {
        for (index, document) in batch {
            let outcome = if halted() {
                T::default()
            } else {
                work(state, &document)
            };
            let Ok(mut in_order) = progress.lock() else {
                return false;
            };
            if in_order.finish(index, outcome) {
                stop.store(true, Ordering::Relaxed);
            }
        }
        // Once per batch: a wake-up per file would cost a system call per
        // file.
        advanced.notify_all();
        true
    };

    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|| {
                let mut state = state();
                loop {
                    let next = match receiver.lock() {
                        Ok(receiver) => receiver.recv(),
                        Err(_) => break,
                    };
                    let Ok(batch) = next else { break };
                    if !work_batch(&mut state, batch) {
                        break;
                    }
                }
            });
        }
        // This thread's own state, made when it first works.
        let mut own = None;
        let mut index = 0;
        let mut batch = Vec::with_capacity(BATCH_FILES);
        let mut visit = |document: Document| {
            if halted() {
                return ControlFlow::Break(());
            }
            if document.entry.kind != EntryKind::File || !accept(&document) {
                return ControlFlow::Continue(());
            }
            batch.push((index, document));
            index += 1;
            if batch.len() < BATCH_FILES {
                return ControlFlow::Continue(());
            }
            if !wait_for_room(&progress, &advanced, index, WALK_LOOKAHEAD, &halted) {
                return ControlFlow::Break(());
            }
            let mut full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_FILES));
            loop {
                match sender.try_send(full) {
                    Ok(()) => return ControlFlow::Continue(()),
                    Err(TrySendError::Full(unsent)) => full = unsent,
                    Err(TrySendError::Disconnected(_)) => return ControlFlow::Break(()),
                }
                // No room: the oldest batch waiting first (outcomes are
                // handed on in path order, and an early stop wants the
                // first files first); its own when the helpers just took
                // them all.
                let own = own.get_or_insert_with(&state);
                let Some(oldest) = oldest_waiting() else {
                    return if work_batch(own, full) {
                        ControlFlow::Continue(())
                    } else {
                        ControlFlow::Break(())
                    };
                };
                if !work_batch(own, oldest) {
                    return ControlFlow::Break(());
                }
            }
        };
        let fed = feed(&mut visit);
        // The last batch, then the batches no helper has taken.
        let own = own.get_or_insert_with(&state);
        let mut next = Some(batch);
        while let Some(batch) = next.take() {
            if !work_batch(own, batch) {
                break;
            }
            next = oldest_waiting();
        }
        drop(sender);
        fed
    })
}

/// Blocks the thread while document `index` is too far ahead of the
/// outcomes handed on (`lookahead`: see [`WALK_LOOKAHEAD`]); false when the
/// run stopped meanwhile.
fn wait_for_room<T: Outcome, C: FnMut(T) -> ControlFlow<()>>(
    progress: &Mutex<InOrder<T, C>>,
    advanced: &Condvar,
    index: usize,
    lookahead: usize,
    halted: &impl Fn() -> bool,
) -> bool {
    let Ok(mut in_order) = progress.lock() else {
        return false;
    };
    while !in_order.has_room_for(index, lookahead) {
        if halted() {
            return false;
        }
        // The timeout re-checks the cancel flag, which nobody notifies.
        in_order = match advanced.wait_timeout(in_order, Duration::from_millis(20)) {
            Ok((in_order, _)) => in_order,
            Err(_) => return false,
        };
    }
    !halted()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::Entry;
    use std::path::PathBuf;

    /// The outcomes these tests hand on weigh nothing ([`Heavy`] does).
    macro_rules! weightless {
        ($($outcome:ty),*) => {$(
            impl Outcome for $outcome {
                fn renamed(&self, _: &Document) -> Option<Self> {
                    None
                }
                fn weight(&self) -> usize {
                    0
                }
            }
        )*};
    }
    weightless!(
        usize,
        Option<()>,
        Option<String>,
        Option<std::thread::ThreadId>
    );

    /// An outcome a third of [`LOOKAHEAD_WEIGHT`] heavy.
    #[derive(Default, Clone)]
    struct Heavy;

    impl Outcome for Heavy {
        fn renamed(&self, _: &Document) -> Option<Self> {
            None
        }
        fn weight(&self) -> usize {
            LOOKAHEAD_WEIGHT / 3
        }
    }

    fn file(index: usize) -> Document {
        Document {
            entry: Entry {
                relative: format!("f{index:04}"),
                path: PathBuf::from(format!("f{index:04}")),
                kind: EntryKind::File,
                depth: 1,
                size: None,
                ino: None,
            },
            awaited: false,
        }
    }

    /// A feed handing on `files` in order until told to stop.
    fn feed_of(
        files: &[Document],
    ) -> impl FnOnce(&mut dyn FnMut(Document) -> ControlFlow<()>) -> io::Result<()> + '_ {
        move |visit| {
            for entry in files.iter().cloned() {
                if visit(entry).is_break() {
                    break;
                }
            }
            Ok(())
        }
    }

    #[test]
    fn outcomes_are_handed_on_in_order_whatever_order_they_finish_in() {
        let mut seen = Vec::new();
        let mut in_order = InOrder::new(|n: usize| {
            seen.push(n);
            ControlFlow::Continue(())
        });
        for index in [2, 0, 3, 1, 4] {
            in_order.finish(index, index);
        }
        drop(in_order);
        assert_eq!(seen, [0, 1, 2, 3, 4]);
    }

    /// Which executor works `files`.
    #[derive(Clone, Copy, Debug)]
    enum Executor {
        Walk,
        Shared,
    }

    impl Executor {
        fn lookahead(self) -> usize {
            match self {
                Executor::Walk => WALK_LOOKAHEAD,
                Executor::Shared => LIST_LOOKAHEAD,
            }
        }
    }

    /// Works `files` with `executor`, `work` on each file `accept` keeps,
    /// until `cancel` is raised.
    fn run<T: Outcome>(
        executor: Executor,
        files: &[Document],
        accept: impl Fn(&Document) -> bool + Sync,
        work: impl Fn(&Document) -> T + Sync,
        consume: impl FnMut(T) -> ControlFlow<()> + Send,
        cancel: &Cancel,
    ) {
        let work = |_: &mut (), document: &Document| work(document);
        match executor {
            Executor::Walk => {
                in_order_parallel(feed_of(files), accept, || (), work, consume, cancel).unwrap()
            }
            Executor::Shared => in_order_shared(
                |index| files.get(index).cloned(),
                accept,
                || (),
                work,
                consume,
                cancel,
            ),
        }
    }

    #[test]
    fn the_parallel_runs_hand_on_in_path_order_and_stop_when_told() {
        let files: Vec<Document> = (0..2000).map(file).collect();
        let expected: Vec<String> = files
            .iter()
            .map(|document| document.name().to_string())
            .filter(|name| !name.ends_with('7'))
            .collect();
        for executor in [Executor::Walk, Executor::Shared] {
            let mut seen = Vec::new();
            run(
                executor,
                &files,
                |document| !document.name().ends_with('7'),
                |document| Some(document.name().to_string()),
                |name: Option<String>| {
                    seen.extend(name);
                    if seen.len() >= 500 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
                &Cancel::never(),
            );
            assert_eq!(seen, expected[..500], "{executor:?}");
        }
    }

    #[test]
    fn the_calling_thread_works_beside_the_helpers() {
        let files: Vec<Document> = (0..400).map(file).collect();
        let here = std::thread::current().id();
        for executor in [Executor::Walk, Executor::Shared] {
            let mut workers = Vec::new();
            let mut count = 0;
            run(
                executor,
                &files,
                |_| true,
                |_| {
                    // Long enough for the helpers to have started.
                    std::thread::sleep(Duration::from_micros(200));
                    Some(std::thread::current().id())
                },
                |worker: Option<std::thread::ThreadId>| {
                    count += 1;
                    workers.extend(worker);
                    ControlFlow::Continue(())
                },
                &Cancel::never(),
            );
            assert_eq!(count, files.len(), "{executor:?}");
            let by_this_thread = workers.iter().filter(|id| **id == here).count();
            let by_helpers = workers.len() - by_this_thread;
            assert!(
                by_this_thread > 0 && by_helpers > 0,
                "{executor:?}: {by_this_thread} {by_helpers}"
            );
        }
    }

    /// How many documents `executor` works while the first of many takes
    /// 300 ms, each made into `outcome`.
    fn worked_beside_a_slow_first<T: Outcome>(executor: Executor, outcome: fn() -> T) -> usize {
        let files: Vec<Document> = (0..6000).map(file).collect();
        let worked = AtomicUsize::new(0);
        let worked_before_the_first = AtomicUsize::new(0);
        let mut count = 0;
        run(
            executor,
            &files,
            |_| true,
            |document| {
                if document.name() == "f0000" {
                    std::thread::sleep(Duration::from_millis(300));
                    let others = worked.load(Ordering::SeqCst);
                    worked_before_the_first.store(others, Ordering::SeqCst);
                }
                worked.fetch_add(1, Ordering::SeqCst);
                outcome()
            },
            |_: T| {
                count += 1;
                ControlFlow::Continue(())
            },
            &Cancel::never(),
        );
        assert_eq!(count, files.len(), "{executor:?}");
        worked_before_the_first.load(Ordering::SeqCst)
    }

    #[test]
    fn a_slow_first_document_holds_up_a_bounded_number_and_weight_of_finished_ones() {
        let threads = walk::worker_threads();
        for executor in [Executor::Walk, Executor::Shared] {
            let ahead = worked_beside_a_slow_first(executor, || Some(()));
            assert!(ahead > 0, "{executor:?}: no helper worked beside it");
            assert!(
                ahead <= executor.lookahead() + BATCH_FILES + threads,
                "{executor:?}: {ahead} documents finished while the first was read"
            );
            // Three heavy outcomes reach the weight bound; the walk checks
            // it once a batch, with batches queued and in the helpers' hands.
            let heavy = worked_beside_a_slow_first(executor, || Heavy);
            assert!(heavy > 0, "{executor:?}: no helper worked beside it");
            assert!(
                heavy <= 4 + BATCH_FILES * (3 * threads + 1),
                "{executor:?}: {heavy} heavy outcomes finished while the first was read"
            );
        }
    }

    #[test]
    fn a_cancelled_run_stops_within_what_its_threads_had_claimed() {
        let files: Vec<Document> = (0..10_000).map(file).collect();
        for executor in [Executor::Walk, Executor::Shared] {
            let cancel = Cancel::default();
            let worked = AtomicUsize::new(0);
            let mut handed = 0;
            run(
                executor,
                &files,
                |_| true,
                |_| {
                    worked.fetch_add(1, Ordering::SeqCst);
                    Some(())
                },
                |_: Option<()>| {
                    handed += 1;
                    if handed == 100 {
                        cancel.cancel();
                    }
                    ControlFlow::Continue(())
                },
                &cancel,
            );
            let worked = worked.load(Ordering::SeqCst);
            // What was worked ahead of the outcomes handed on when the flag
            // rose, and a document each thread had started.
            assert!(
                worked <= 100 + executor.lookahead() + BATCH_FILES + walk::worker_threads(),
                "{executor:?}: {worked} worked after a cancel at 100"
            );
        }
    }
}
