//! chunkscope, the terminal workbench around [`chunkscope_core`]: the headless commands, the
//! TUI's model and update, its pure views and the terminal itself.
//! - [`cli`]: one module per headless command.
//! - [`app`]: the TUI's model and update function, one file per pane; the keymap.
//! - [`ui`]: pure view functions.
//! - [`tui`]: the terminal guard and the event loop.
//! - [`theme`] and [`layout`]: colours and screen geometry, which the app and the views share
//!   (the app never imports the views).

pub mod app;
pub mod cli;
pub mod layout;
pub mod theme;
pub mod tui;
pub mod ui;
