//! One check at a time per server (a server is one process). Waiters queue
//! in arrival order and report that they wait.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::MutexGuard;

static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// The name of the check holding the turn, for waiting messages.
static HOLDER: Mutex<Option<String>> = Mutex::new(None);

pub struct Turn {
    _guard: MutexGuard<'static, ()>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        *holder() = None;
    }
}

fn holder() -> std::sync::MutexGuard<'static, Option<String>> {
    HOLDER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits for the turn; `None` when cancelled while waiting.
pub async fn wait(
    name: &str,
    report: &mut impl FnMut(String),
    mut cancelled: Pin<&mut impl Future<Output = ()>>,
) -> Option<Turn> {
    let guard = match TURN.try_lock() {
        Ok(guard) => guard,
        Err(_) => {
            // Pinned once so that the place in the queue is kept.
            let lock = TURN.lock();
            tokio::pin!(lock);
            let mut ticker = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    guard = &mut lock => break guard,
                    () = &mut cancelled => return None,
                    _ = ticker.tick() => {
                        let running = holder().clone().unwrap_or_else(|| "another check".into());
                        report(format!(
                            "waiting: '{running}' is running and one check runs at a time; '{name}' starts when it ends"
                        ));
                    }
                }
            }
        }
    };
    *holder() = Some(name.to_string());
    Some(Turn { _guard: guard })
}
