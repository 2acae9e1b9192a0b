//! Memory freed by a knob turn handed back to the system once the knobs rest.
//!
//! A knob turn replaces a chunking of the whole corpus, and glibc keeps what was freed inside
//! its arenas (one per worker thread): without help the resident size only grows, to 1.3 GB for
//! under 600 MB in use at 105 MB of corpus after seven presets. `soon` asks one thread to return
//! the allocator's free pages (`malloc_trim`, which also releases pages in the middle of an
//! arena) after a second in which nothing more was freed. Not at once: while the knob turns,
//! each chunking would fault back in the pages the last one returned (a fifth slower at 20 MB).
//! Measured in the workbench at 105 MB, seven presets 15 s apart: peak 1.2 GB, 0.91-0.94 GB
//! resident once the knobs rest (without: 1.3 GB and growing).

use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;
use std::time::Duration;

/// How long no large drop must happen before free memory is returned.
const QUIET: Duration = Duration::from_secs(1);

/// Return free memory to the system once no `soon` has come for a second.
pub fn soon() {
    static TO: OnceLock<Option<Sender<()>>> = OnceLock::new();
    let to = TO.get_or_init(|| {
        let (tx, rx) = channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("reclaim".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    while rx.recv_timeout(QUIET).is_ok() {}
                    trim();
                }
            });
        spawned.ok().map(|_| tx)
    });
    if let Some(tx) = to {
        let _ = tx.send(());
    }
}

/// Set glibc's allocator for a program that holds hundreds of megabytes and replaces most of
/// them at each knob turn; call it first in `main`, before any thread starts. Each setting is
/// left alone when its environment variable (`MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`) says
/// otherwise.
/// - At most one arena per core (at least two). By default it may open eight per core, and each
///   thread that frees a chunking or an index leaves that memory in its own arena, where no
///   other thread reuses it: at 105 MB of corpus over three presets the resident peak was
///   700 MB for 520 MB in use, 587 MB with two arenas on two cores (knob times within a few
///   percent).
/// - Blocks of 256 KiB and more mapped on their own, returned to the system when freed. By
///   default glibc raises that threshold to the size of each such block freed (up to 32 MB),
///   after which an index's or a chunking's large buffers come from the arenas and stay there:
///   over five presets at 105 MB the resident peak was 539 MB for 445 MB in use, 500 MB with
///   the threshold fixed (128 KiB and 1 MiB gave the same; knob times unchanged).
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::raw::c_int;
        /// glibc's `M_ARENA_MAX` and `M_MMAP_THRESHOLD` (malloc.h).
        const M_ARENA_MAX: c_int = -8;
        const M_MMAP_THRESHOLD: c_int = -3;
        const MMAP_THRESHOLD: c_int = 256 * 1024;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        let unset = |name: &str| std::env::var_os(name).is_none();
        // SAFETY: mallopt takes two integers and may be called at any time; called before other
        // threads start, it changes only how later allocations are served.
        if unset("MALLOC_ARENA_MAX") {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            let arenas = c_int::try_from(cores.max(2)).unwrap_or(c_int::MAX);
            unsafe {
                mallopt(M_ARENA_MAX, arenas);
            }
        }
        if unset("MALLOC_MMAP_THRESHOLD_") {
            unsafe {
                mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            }
        }
    }
}

/// Return the allocator's free pages to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::os::raw::c_int;
    }
    // SAFETY: glibc's malloc_trim takes no pointer, locks each arena itself and may be called
    // from any thread at any time.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
