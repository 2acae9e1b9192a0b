//! The terminal itself: a guard that always restores it (on exit, on error, on panic and on
//! SIGTERM, SIGINT, SIGHUP and SIGQUIT), mouse capture and bracketed paste turned off on exit.

use std::io::{self, Write};

use anyhow::{Context, Result};
use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};

/// Restores the terminal when dropped.
pub(super) struct Guard {
    mouse: bool,
}

impl Guard {
    pub(super) fn enter(mouse: bool) -> Result<Guard> {
        enable_raw_mode().context("cannot switch the terminal to raw mode")?;
        let guard = Guard { mouse };
        execute!(
            io::stdout(),
            EnterAlternateScreen,
            cursor::Hide,
            EnableBracketedPaste
        )?;
        if mouse {
            execute!(io::stdout(), EnableMouseCapture)?;
        }
        Ok(guard)
    }
}

pub(super) fn restore_terminal(mouse: bool) {
    let mut out = io::stdout();
    if mouse {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(
        out,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore_terminal(self.mouse);
    }
}

/// The termination signals, turned into one call of `stop` each (from a thread of their own), so
/// the event loop ends, the guard restores the terminal and the workers stop. A second signal
/// while the first is being handled restores the terminal and exits at once.
pub(super) fn on_termination(mouse: bool, stop: impl Fn() + Send + 'static) -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT])
        .context("cannot install the signal handlers")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut seen = 0;
            for sig in signals.forever() {
                log::info!("signal {sig}: quitting");
                seen += 1;
                if seen > 1 {
                    restore_terminal(mouse);
                    std::process::exit(128 + sig);
                }
                stop();
            }
        })?;
    Ok(())
}
