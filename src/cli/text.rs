//! `chunkscope text FILE`: the text chunkscope reads from a file (converted, decoded), so anyone
//! can check the offsets of its chunks.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;

use chunkscope_core::corpus::{Corpus, CorpusRules};

/// Print the text chunkscope reads from FILE: an HTML page as Markdown, a UTF-16 or BOM file
/// decoded. Chunk offsets of converted documents index this text.
#[derive(Args)]
pub struct TextArgs {
    file: PathBuf,
}

pub fn run(a: TextArgs) -> Result<ExitCode> {
    if !a.file.is_file() {
        bail!("{}: not a file", a.file.display());
    }
    let corpus = Corpus::load(&a.file, &CorpusRules::default())?;
    let Some(doc) = corpus.docs.first() else {
        let why = corpus
            .skipped
            .first()
            .map_or("not read".to_string(), |s| s.reason.clone());
        bail!("{}: {why}", a.file.display());
    };
    super::out().write_all(doc.text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
