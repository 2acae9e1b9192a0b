//! Who has the cores: a chunking the user waits for goes first, the embedding worker's background
//! work (vectors, a BM25 build) waits for it between steps. At 105 MB the index build of the last
//! chunking, left to share two cores, made the next knob turn 1.1-1.3 s instead of 0.85 s.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long background work waits at most: a chunking outlasting it shares the cores again.
const PATIENCE: Duration = Duration::from_secs(20);
/// How often a waiting worker looks again.
const POLL: Duration = Duration::from_millis(5);

/// The chunkings running now; clones share the count.
#[derive(Clone, Debug, Default)]
pub struct Cores(Arc<AtomicUsize>);

/// A chunking running until this drops (also when its worker unwinds).
pub struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Cores {
    /// Mark a chunking as running until the guard drops.
    pub fn busy(&self) -> Busy {
        self.0.fetch_add(1, Ordering::AcqRel);
        Busy(Arc::clone(&self.0))
    }

    pub fn is_busy(&self) -> bool {
        self.0.load(Ordering::Acquire) > 0
    }

    /// Wait while a chunking runs, for `grace` at most or until `give_up()` says so: whether
    /// none runs any more (false: one still runs, or the wait was given up).
    pub fn idle_within(&self, grace: Duration, mut give_up: impl FnMut() -> bool) -> bool {
        let started = Instant::now();
        loop {
            if give_up() {
                return false;
            }
            if !self.is_busy() {
                return true;
            }
            if started.elapsed() >= grace {
                return false;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Wait while a chunking runs, until `give_up()` (asked between moments; it may answer the
    /// worker's urgent requests) says so or for `PATIENCE` at most.
    pub fn wait_idle(&self, give_up: impl FnMut() -> bool) {
        self.idle_within(PATIENCE, give_up);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_while_a_chunking_runs_and_not_after() {
        let cores = Cores::default();
        let started = Instant::now();
        cores.wait_idle(|| false);
        assert!(
            started.elapsed() < Duration::from_millis(100),
            "idle: no wait"
        );
        let busy = cores.busy();
        let other = cores.clone();
        let waiter = std::thread::spawn(move || {
            let started = Instant::now();
            other.wait_idle(|| false);
            started.elapsed()
        });
        std::thread::sleep(Duration::from_millis(200));
        drop(busy);
        let waited = waiter.join().unwrap();
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
        assert!(!cores.is_busy());
        // Giving up ends the wait though the chunking still runs.
        let _busy = cores.busy();
        let started = Instant::now();
        cores.wait_idle(|| true);
        assert!(started.elapsed() < Duration::from_millis(100));
    }

    #[test]
    fn idle_within_waits_no_longer_than_its_grace() {
        let cores = Cores::default();
        assert!(cores.idle_within(Duration::ZERO, || false), "idle");
        assert!(
            !cores.idle_within(Duration::from_secs(5), || true),
            "given up"
        );
        let busy = cores.busy();
        let started = Instant::now();
        assert!(!cores.idle_within(Duration::from_millis(50), || false));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(50), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        // A chunking that ends within the grace: idle.
        let other = cores.clone();
        let waiter =
            std::thread::spawn(move || other.idle_within(Duration::from_secs(10), || false));
        std::thread::sleep(Duration::from_millis(100));
        drop(busy);
        assert!(waiter.join().unwrap());
    }
}
