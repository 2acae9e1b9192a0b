//! Watching the corpus: notify's native watcher (inotify here), recursive, debounced, with a
//! fallback to polling when native watching cannot start. Every burst of changes (an editor's
//! atomic save, a branch switch touching hundreds of files) becomes one `FilesChanged` message.

use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use notify::{Event, EventKind, PollWatcher, RecommendedWatcher, RecursiveMode, Watcher};

use super::{Emitter, Event as JobEvent};

/// Quiet time that ends a burst, and the longest a burst may be held back.
const QUIET: Duration = Duration::from_millis(200);
const MAX_HOLD: Duration = Duration::from_millis(1500);

/// Why the corpus cannot be watched (the workbench goes on without reloading on changes).
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// Neither notify's native watcher nor polling could watch the folder.
    #[error("cannot watch {}: {cause}", root.display())]
    Watch { root: PathBuf, cause: notify::Error },
    /// The thread that gathers bursts of changes could not be started.
    #[error("cannot watch {}: no watcher thread: {cause}", root.display())]
    Thread {
        root: PathBuf,
        cause: std::io::Error,
    },
}

/// Keeps the watcher alive; dropping it stops watching.
pub enum CorpusWatcher {
    Native(RecommendedWatcher),
    Polling(PollWatcher),
}

impl CorpusWatcher {
    pub fn mode(&self) -> &'static str {
        match self {
            CorpusWatcher::Native(_) => "watching",
            CorpusWatcher::Polling(_) => "watching (polling)",
        }
    }
}

/// True for events that can change what the corpus holds (not reads, not .git internals or
/// hidden files, which the walk skips anyway).
fn relevant(ev: &Event, root: &Path) -> bool {
    if matches!(ev.kind, EventKind::Access(_)) {
        return false;
    }
    ev.paths.iter().any(|p| {
        let rel = p.strip_prefix(root).unwrap_or(p);
        !rel.components().any(|c| match c {
            Component::Normal(s) => s.to_string_lossy().starts_with('.'),
            _ => false,
        })
    })
}

/// Watch `root` recursively and send `FilesChanged` after each burst of changes.
pub fn watch<M: From<JobEvent> + Send + 'static>(
    root: &Path,
    out: Sender<M>,
) -> Result<CorpusWatcher, WatchError> {
    let out = Emitter::new(out);
    let (tx, rx) = channel::<Event>();
    let root_owned = root.to_path_buf();
    // Our own cache and log inside the corpus: writing them is no corpus change (else each log
    // line would start a reload).
    let own: Vec<std::path::PathBuf> = crate::corpus::own_dirs_under(root)
        .into_iter()
        .flat_map(|d| [std::fs::canonicalize(&d).ok(), Some(d)])
        .flatten()
        .collect();
    let handler = move |res: notify::Result<Event>| match res {
        Ok(ev)
            if relevant(&ev, &root_owned)
                && !ev
                    .paths
                    .iter()
                    .all(|p| own.iter().any(|o| p.starts_with(o))) =>
        {
            let _ = tx.send(ev);
        }
        Ok(_) => {}
        Err(e) => log::warn!("watch error: {e}"),
    };
    let watcher = match notify::recommended_watcher(handler.clone()) {
        Ok(mut w) => match w.watch(root, RecursiveMode::Recursive) {
            Ok(()) => CorpusWatcher::Native(w),
            Err(e) => {
                log::warn!("native watching failed ({e}); polling instead");
                poll(root, handler)?
            }
        },
        Err(e) => {
            log::warn!("native watcher unavailable ({e}); polling instead");
            poll(root, handler)?
        }
    };
    thread::Builder::new()
        .name("watcher".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let started = Instant::now();
                let mut paths = first.paths.len();
                loop {
                    let left = MAX_HOLD.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        break;
                    }
                    match rx.recv_timeout(QUIET.min(left)) {
                        Ok(ev) => paths += ev.paths.len(),
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                log::debug!("corpus changed: {paths} paths in {:?}", started.elapsed());
                if !out.emit(JobEvent::FilesChanged { paths }) {
                    return;
                }
            }
        })
        .map_err(|cause| WatchError::Thread {
            root: root.to_path_buf(),
            cause,
        })?;
    Ok(watcher)
}

fn poll(root: &Path, handler: impl notify::EventHandler) -> Result<CorpusWatcher, WatchError> {
    let config = notify::Config::default().with_poll_interval(Duration::from_secs(1));
    let cannot = |cause| WatchError::Watch {
        root: root.to_path_buf(),
        cause,
    };
    let mut w = PollWatcher::new(handler, config).map_err(cannot)?;
    w.watch(root, RecursiveMode::Recursive).map_err(cannot)?;
    Ok(CorpusWatcher::Polling(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// notify's poller accepts any path (a missing folder too), so the error is built here: what
    /// is checked is that it names the root and reads as the workbench shows it.
    #[test]
    fn a_watch_error_names_the_root() {
        let root = Path::new("/corpus/docs");
        let err = WatchError::Watch {
            root: root.to_path_buf(),
            cause: notify::Error::path_not_found(),
        };
        assert!(
            matches!(&err, WatchError::Watch { root: r, .. } if r == root),
            "{err:?}"
        );
        assert!(
            err.to_string().starts_with("cannot watch /corpus/docs: "),
            "{err}"
        );
    }
}
