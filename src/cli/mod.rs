//! The headless commands, one module each, over the same engine as the screen.

pub mod audit;
pub mod eval;
pub mod export;
pub mod knobs;
pub mod model;
mod prepare;
pub mod query;
pub mod text;
