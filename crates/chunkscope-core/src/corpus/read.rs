//! Reading one file of the corpus: its format by extension or by its first bytes, documents
//! converted, text decoded, binary and oversized files refused with a reason.

use std::fs;
use std::io::Read;
use std::path::Path;

use super::decode::utf16_units;
use super::{convert, decode, CorpusRules, Document, FileOffsets, ReadError};

/// Extensions of formats that are never plain text and not converted (images, archives, office
/// documents other than DOCX, media, fonts, compiled code, model weights): listed as skipped
/// without being read.
const BINARY_EXTENSIONS: &[&str] = &[
    "png",
    "jpg",
    "jpeg",
    "gif",
    "bmp",
    "ico",
    "webp",
    "tif",
    "tiff",
    "heic",
    "doc",
    "xls",
    "xlsx",
    "ppt",
    "pptx",
    "odt",
    "ods",
    "odp",
    "epub",
    "zip",
    "gz",
    "tgz",
    "bz2",
    "xz",
    "zst",
    "7z",
    "rar",
    "tar",
    "jar",
    "war",
    "class",
    "so",
    "dll",
    "dylib",
    "exe",
    "bin",
    "o",
    "a",
    "obj",
    "wasm",
    "pyc",
    "woff",
    "woff2",
    "ttf",
    "otf",
    "eot",
    "mp3",
    "mp4",
    "wav",
    "ogg",
    "flac",
    "mov",
    "avi",
    "mkv",
    "webm",
    "sqlite",
    "db",
    "parquet",
    "npy",
    "npz",
    "pt",
    "safetensors",
    "onnx",
    "gguf",
];

/// Bytes sniffed to tell text from binary.
const SNIFF_BYTES: usize = 8192;

/// One file as a document, or the reason it is skipped.
pub(super) fn read_file(
    path: &Path,
    rel: &str,
    rules: &CorpusRules,
) -> Result<Document, ReadError> {
    let document = |format: convert::Format, bytes: Vec<u8>| {
        // A converted document's offsets index its converted text.
        convert::convert(format, &bytes)
            .map(|c| Document {
                path: rel.to_string(),
                text: c.text.clone(),
                lossy: c.lossy,
                offsets: FileOffsets::default(),
                source_format: format.name(),
                pages: c.pages.clone(),
            })
            .map_err(|cause| ReadError::Convert {
                path: path.to_path_buf(),
                format,
                cause,
            })
    };
    let from_disk = |format: convert::Format| {
        read_bytes(path, rules.max_document_bytes, "max_document_bytes")
            .and_then(|bytes| document(format, bytes))
    };
    // The format by extension; else the file is read once and its first bytes say whether
    // it is a document after all (a PDF or DOCX without an extension).
    match convert::format_of(path, &[]) {
        Some(format) => from_disk(format),
        None => match read_bytes(path, rules.max_file_bytes, "max_file_bytes") {
            Ok(bytes) => match convert::format_of(path, &bytes[..bytes.len().min(SNIFF_BYTES)]) {
                Some(format) => document(format, bytes),
                None => text_document(path, &bytes).map(|(text, offsets, lossy)| Document {
                    offsets,
                    lossy,
                    ..Document::plain(rel.to_string(), text)
                }),
            },
            // Over the text limit: a document may still be within its own.
            Err(too_large) => match convert::format_of(path, &head_bytes(path)) {
                Some(format) => from_disk(format),
                None => Err(too_large),
            },
        },
    }
}

/// Read a file, refusing binary and oversized ones with a reason a user can act on.
pub fn read_document(
    path: &Path,
    max_bytes: u64,
) -> Result<(String, FileOffsets, bool), ReadError> {
    text_document(path, &read_bytes(path, max_bytes, "max_file_bytes")?)
}

/// A file's bytes as text, refused as binary when its first bytes hold a NUL (UTF-16 aside).
fn text_document(path: &Path, bytes: &[u8]) -> Result<(String, FileOffsets, bool), ReadError> {
    if utf16_units(bytes).is_none() && bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(ReadError::Binary {
            path: path.to_path_buf(),
        });
    }
    Ok(decode(bytes))
}

/// A file's bytes, up to `max_bytes` (the `corpus.KEY` limit named in the reason).
fn read_bytes(path: &Path, max_bytes: u64, key: &'static str) -> Result<Vec<u8>, ReadError> {
    let unreadable = |cause| ReadError::Unreadable {
        path: path.to_path_buf(),
        cause,
    };
    let mut file = fs::File::open(path).map_err(unreadable)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > max_bytes {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            len,
            key,
            max_bytes,
        });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.by_ref()
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError::GrewTooLarge {
            path: path.to_path_buf(),
            key,
            max_bytes,
        });
    }
    Ok(bytes)
}

/// The first bytes of a file (empty when it cannot be read; reading it later says why).
fn head_bytes(path: &Path) -> Vec<u8> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    let _ = fs::File::open(path).and_then(|f| f.take(SNIFF_BYTES as u64).read_to_end(&mut head));
    head
}

/// Ok when a file not named by the include globs is a document format (by content) or looks
/// like text: not a known binary format and no NUL byte in its first bytes. Else the reason it
/// is skipped.
pub(super) fn sniff(path: &Path) -> Result<(), ReadError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let head = head_bytes(path);
    if convert::format_of(path, &head).is_some() {
        return Ok(());
    }
    if let Some(ext) = ext.filter(|e| BINARY_EXTENSIONS.contains(&e.as_str())) {
        return Err(ReadError::BinaryFormat {
            path: path.to_path_buf(),
            ext,
        });
    }
    fs::File::open(path).map_err(|cause| ReadError::Unreadable {
        path: path.to_path_buf(),
        cause,
    })?;
    if utf16_units(&head).is_none() && head.contains(&0) {
        return Err(ReadError::Binary {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}
