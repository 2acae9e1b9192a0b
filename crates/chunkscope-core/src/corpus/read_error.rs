//! Why one file of the corpus is not read. The message is the reason in the skipped list, which
//! names the file itself; each variant still carries the path for callers of
//! [`super::read_document`].

use std::path::PathBuf;

use super::convert::{ConvertError, Format};

/// A file refused or failed while reading it as a document.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("unreadable: {cause}")]
    Unreadable {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// Larger than the `corpus.{key}` limit by its size on disk.
    #[error("too large: {len} bytes > corpus.{key} {max_bytes}")]
    TooLarge {
        path: PathBuf,
        len: u64,
        key: &'static str,
        max_bytes: u64,
    },
    /// Grew past the limit while being read.
    #[error("too large: over corpus.{key} {max_bytes}")]
    GrewTooLarge {
        path: PathBuf,
        key: &'static str,
        max_bytes: u64,
    },
    /// A NUL byte among the first bytes (and not UTF-16).
    #[error("binary: contains NUL bytes")]
    Binary { path: PathBuf },
    /// An extension of a format that is never text and not converted.
    #[error("binary format (.{ext}): not read")]
    BinaryFormat { path: PathBuf, ext: String },
    /// A PDF, DOCX or HTML file the converter refused.
    #[error("{cause}")]
    Convert {
        path: PathBuf,
        format: Format,
        cause: ConvertError,
    },
}

impl ReadError {
    /// The file the error concerns.
    pub fn path(&self) -> &std::path::Path {
        match self {
            ReadError::Unreadable { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::GrewTooLarge { path, .. }
            | ReadError::Binary { path }
            | ReadError::BinaryFormat { path, .. }
            | ReadError::Convert { path, .. } => path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_file_and_keep_their_reason() {
        let d = std::env::temp_dir().join(format!("chunkscope-readerr-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let bin = d.join("blob");
        std::fs::write(&bin, b"ab\0cd").unwrap();
        let e = super::super::read_document(&bin, 100).unwrap_err();
        assert!(
            matches!(&e, ReadError::Binary { path } if path == &bin),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "binary: contains NUL bytes");
        let e = super::super::read_document(&bin, 2).unwrap_err();
        assert!(
            matches!(
                &e,
                ReadError::TooLarge {
                    len: 5,
                    key: "max_file_bytes",
                    max_bytes: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "too large: 5 bytes > corpus.max_file_bytes 2"
        );
        assert_eq!(e.path(), bin);
        let _ = std::fs::remove_dir_all(&d);
    }
}
