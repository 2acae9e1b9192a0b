//! Panics the engine catches itself: a third-party parser's on a malformed file, a worker's on a
//! bug. While one is being caught the process-wide panic hook must stay quiet (the workbench's
//! hook restores the terminal), whichever hook was installed first.

use std::cell::Cell;
use std::sync::Once;

thread_local! {
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
}

/// True on a thread inside `contain`: a panic there is caught and reported by the engine, so a
/// process-wide hook must let it pass.
pub fn contained() -> bool {
    CONTAINED.with(|c| c.get())
}

/// A panic caught by [`contain`]; its message (or "unknown error" when the payload was not
/// text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Panicked {
    pub message: String,
}

/// Run `f`, turning a panic into its message. The panic is not printed.
pub fn contain<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !contained() {
                previous(info)
            }
        }));
    });
    let outer = CONTAINED.with(|c| c.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(outer));
    result.map_err(|p| Panicked {
        message: p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown error".into()),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_becomes_its_message_and_the_flag_is_restored() {
        assert_eq!(super::contain(|| 7), Ok(7));
        let why = super::contain(|| -> u8 { panic!("bad shape {}", 3) });
        assert!(matches!(&why, Err(super::Panicked { message }) if message == "bad shape 3"));
        assert_eq!(why.unwrap_err().to_string(), "bad shape 3");
        assert!(!super::contained());
        let nested =
            super::contain(|| super::contain(|| panic!("inner")).is_err() && super::contained());
        assert_eq!(nested, Ok(true));
    }
}
