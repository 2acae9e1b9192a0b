//! The headless commands, one module each, over the same engine as the screen.

pub mod audit;
pub mod eval;
pub mod export;
pub mod knobs;
pub mod knobs_as;
pub mod model;
mod prepare;
pub mod query;
mod store;

/// Standard output of the headless commands. A write to a closed pipe (`chunkscope chunks ... |
/// head`) fails with [`StdoutClosed`] inside, and `main` then ends quietly, as Unix tools do,
/// where any other broken pipe (a store's socket) stays an error.
pub struct Out(std::io::StdoutLock<'static>);

pub fn out() -> Out {
    Out(std::io::stdout().lock())
}

/// The reader of standard output went away.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output closed")
    }
}

impl std::error::Error for StdoutClosed {}

fn marked(e: std::io::Error) -> std::io::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::io::Error::new(std::io::ErrorKind::BrokenPipe, StdoutClosed)
    } else {
        e
    }
}

impl std::io::Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(marked)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf).map_err(marked)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(marked)
    }
}

/// True when `e` comes from standard output's reader going away.
pub fn stdout_closed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .is_some_and(|inner| inner.is::<StdoutClosed>())
    })
}

/// The corpus argument, which only `--store` makes optional.
fn corpus_arg(corpus: &Option<std::path::PathBuf>) -> anyhow::Result<std::path::PathBuf> {
    corpus
        .clone()
        .ok_or_else(|| anyhow::anyhow!("a CORPUS folder is needed (or --store URI)"))
}
pub mod text;
