//! Latest wins: a knob turn bumps a generation and submits a job; the job in flight is told to
//! stop (its cancel token, checked between batches), a job still waiting is replaced, and results
//! carry their generation so the receiver drops stale ones.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Raised when a newer job replaces the one holding it.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag itself, for engine calls that poll an `AtomicBool`.
    pub fn flag(&self) -> &AtomicBool {
        &self.0
    }
}

/// A job with its generation and the token that cancels it.
#[derive(Debug)]
pub struct Stamped<J> {
    pub generation: u64,
    pub cancel: CancelToken,
    pub job: J,
}

/// What a waiting worker gets.
#[derive(Debug)]
pub enum Wait<J> {
    Job(Stamped<J>),
    /// Woken without a job (someone queued other work for the worker).
    Woken,
    /// No more jobs will come.
    Closed,
}

struct Slot<J> {
    pending: Option<Stamped<J>>,
    running: Option<CancelToken>,
    woken: bool,
    closed: bool,
}

/// One pending job at most; submitting cancels the running one. Cloned handles share the slot.
pub struct Latest<J> {
    shared: Arc<(Mutex<Slot<J>>, Condvar)>,
}

impl<J> Clone for Latest<J> {
    fn clone(&self) -> Self {
        Latest {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<J> Default for Latest<J> {
    fn default() -> Self {
        Latest {
            shared: Arc::new((
                Mutex::new(Slot {
                    pending: None,
                    running: None,
                    woken: false,
                    closed: false,
                }),
                Condvar::new(),
            )),
        }
    }
}

impl<J> Latest<J> {
    fn slot(&self) -> MutexGuard<'_, Slot<J>> {
        self.shared.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Submit `job`: the running job is cancelled and a pending one replaced.
    pub fn submit(&self, generation: u64, job: J) {
        self.submit_with(generation, |_| job);
    }

    /// Like `submit`, with the pending job it replaces (if any) handed to `merge`, for work that
    /// must not be lost (a reload behind a rechunk).
    pub fn submit_with(&self, generation: u64, merge: impl FnOnce(Option<J>) -> J) {
        let mut slot = self.slot();
        if let Some(t) = slot.running.take() {
            t.cancel();
        }
        let replaced = slot.pending.take().map(|p| {
            p.cancel.cancel();
            p.job
        });
        slot.pending = Some(Stamped {
            generation,
            cancel: CancelToken::default(),
            job: merge(replaced),
        });
        self.shared.1.notify_all();
    }

    /// Wake a waiting worker without a job.
    pub fn wake(&self) {
        self.slot().woken = true;
        self.shared.1.notify_all();
    }

    /// No more jobs: the worker's `wait` returns `Closed`; the running job is cancelled.
    pub fn close(&self) {
        let mut slot = self.slot();
        slot.closed = true;
        if let Some(t) = slot.running.take() {
            t.cancel();
        }
        self.shared.1.notify_all();
    }

    /// The pending job, if any, marked as running.
    pub fn try_take(&self) -> Option<Stamped<J>> {
        let mut slot = self.slot();
        let job = slot.pending.take()?;
        slot.running = Some(job.cancel.clone());
        Some(job)
    }

    /// Block until a job is pending, the worker is woken, or the slot is closed.
    pub fn wait(&self) -> Wait<J> {
        let mut slot = self.slot();
        loop {
            if slot.closed {
                return Wait::Closed;
            }
            if let Some(job) = slot.pending.take() {
                slot.running = Some(job.cancel.clone());
                slot.woken = false;
                return Wait::Job(job);
            }
            if std::mem::take(&mut slot.woken) {
                return Wait::Woken;
            }
            slot = self.shared.1.wait(slot).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    #[test]
    fn a_newer_job_overwrites_a_pending_one() {
        let l = Latest::default();
        l.submit(1, "a");
        l.submit(2, "b");
        let Wait::Job(j) = l.wait() else {
            panic!("a job is pending")
        };
        assert_eq!((j.generation, j.job), (2, "b"));
        assert!(l.try_take().is_none(), "the older job is gone");
    }

    #[test]
    fn merge_sees_the_job_it_replaces() {
        let l = Latest::default();
        l.submit(1, vec![1]);
        l.submit_with(2, |old| {
            let mut v = old.unwrap_or_default();
            v.push(2);
            v
        });
        assert_eq!(l.try_take().unwrap().job, vec![1, 2]);
    }

    #[test]
    fn cancel_stops_a_running_job_between_batches() {
        let l: Latest<u32> = Latest::default();
        let worker = l.clone();
        let (done_tx, done_rx) = channel();
        let t = std::thread::spawn(move || {
            while let Wait::Job(j) = worker.wait() {
                let mut batches = 0;
                while !j.cancel.is_cancelled() && batches < 10_000 {
                    std::thread::sleep(Duration::from_millis(1));
                    batches += 1;
                }
                done_tx.send((j.generation, batches)).unwrap();
            }
        });
        l.submit(1, 0);
        std::thread::sleep(Duration::from_millis(30));
        l.submit(2, 0);
        let (g, batches) = done_rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(g, 1);
        assert!(batches < 10_000, "the first job stopped early");
        let (g, _) = {
            std::thread::sleep(Duration::from_millis(30));
            l.close();
            done_rx.recv_timeout(Duration::from_secs(5)).unwrap()
        };
        assert_eq!(g, 2, "close cancels the running job too");
        t.join().unwrap();
    }

    #[test]
    fn wake_without_a_job() {
        let l: Latest<()> = Latest::default();
        l.wake();
        assert!(matches!(l.wait(), Wait::Woken));
        l.close();
        assert!(matches!(l.wait(), Wait::Closed));
    }
}
