//! Document formats converted to Markdown, so that structure-first chunking, heading paths and
//! tables by row work on them as on Markdown files. Offsets of a converted document index its
//! converted text; a paged format also says where each page starts in it.
//!
//! Conversions are cached by content hash for the life of the process: a reload after a save
//! converts only the files whose bytes changed, and a knob turn converts nothing.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};

mod docx;
mod error;
mod html;
mod pdf;

pub use error::ConvertError;
pub use html::html_to_markdown;

/// A document format read by conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Html,
    Pdf,
    Docx,
}

impl Format {
    /// The name used in exports (`source_format`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Pdf => "pdf",
            Format::Docx => "docx",
        }
    }
}

/// The format of a file, from its extension, else from its first bytes (a PDF or DOCX without
/// an extension, or with a wrong one).
pub fn format_of(path: &Path, head: &[u8]) -> Option<Format> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("html" | "htm" | "xhtml") => return Some(Format::Html),
        Some("pdf") => return Some(Format::Pdf),
        Some("docx") => return Some(Format::Docx),
        _ => {}
    }
    if head.starts_with(b"%PDF-") {
        Some(Format::Pdf)
    } else if head.starts_with(b"PK\x03\x04") && contains(head, b"word/") {
        Some(Format::Docx)
    } else {
        None
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A converted document: Markdown text, and for paged formats the byte offset in it where each
/// page starts (page 1 first).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Converted {
    pub text: String,
    pub pages: Vec<usize>,
    /// True when the source text had invalid bytes replaced (HTML only).
    pub lossy: bool,
}

/// Bytes of converted text kept in the cache before the oldest entries are dropped.
const CACHE_BYTES: usize = 512 * 1024 * 1024;

struct Cache {
    entries: HashMap<(Format, u64, usize), Arc<Converted>>,
    order: Vec<(Format, u64, usize)>,
    bytes: usize,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// Convert a document's bytes, or return the conversion of identical bytes made earlier in this
/// process. A failure is the converter's reason, for the skipped list.
pub fn convert(format: Format, bytes: &[u8]) -> Result<Arc<Converted>, ConvertError> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    let key = (format, h.finish(), bytes.len());
    if let Some(hit) = CACHE
        .lock()
        .ok()
        .and_then(|c| c.as_ref().and_then(|c| c.entries.get(&key).cloned()))
    {
        return Ok(hit);
    }
    let converted = Arc::new(convert_uncached(format, bytes)?);
    if let Ok(mut guard) = CACHE.lock() {
        let cache = guard.get_or_insert_with(|| Cache {
            entries: HashMap::new(),
            order: Vec::new(),
            bytes: 0,
        });
        cache.bytes += converted.text.len();
        cache.entries.insert(key, converted.clone());
        cache.order.push(key);
        while cache.bytes > CACHE_BYTES && cache.order.len() > 1 {
            let old = cache.order.remove(0);
            if let Some(e) = cache.entries.remove(&old) {
                cache.bytes -= e.text.len();
            }
        }
    }
    Ok(converted)
}

/// Convert a document's bytes without the cache (what the conversion benchmark times).
pub fn convert_uncached(format: Format, bytes: &[u8]) -> Result<Converted, ConvertError> {
    contained(|| match format {
        Format::Html => {
            let (text, _, lossy) = super::decode(bytes);
            html_to_markdown(&text).map(|text| Converted {
                text,
                pages: Vec::new(),
                lossy,
            })
        }
        Format::Pdf => pdf::to_markdown(bytes),
        Format::Docx => docx::to_markdown(bytes),
    })
}

/// Run a converter, turning a panic inside a third-party parser (malformed PDFs can trigger
/// them) into a skip reason. The panic is not printed, so the terminal of a running workbench
/// is left alone.
fn contained(
    f: impl FnOnce() -> Result<Converted, ConvertError>,
) -> Result<Converted, ConvertError> {
    crate::panics::contain(f).unwrap_or_else(|why| Err(ConvertError::Panicked(why)))
}

/// Ligatures and other presentation forms that PDFs carry as single glyphs, spelled out.
pub(crate) fn expand_ligature(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{FB00}' => "ff",
        '\u{FB01}' => "fi",
        '\u{FB02}' => "fl",
        '\u{FB03}' => "ffi",
        '\u{FB04}' => "ffl",
        '\u{FB05}' | '\u{FB06}' => "st",
        '\u{0132}' => "IJ",
        '\u{0133}' => "ij",
        '\u{2002}'..='\u{200A}' | '\u{00A0}' => " ",
        '\u{00AD}' => "",
        _ => return None,
    })
}

/// Markdown that a line of plain text would be misread as (a heading mark, a list marker, a
/// table pipe or a fence at its start), escaped so that it stays text.
pub(crate) fn escape_line_start(line: &str) -> String {
    let t = line.trim_start();
    let risky = t.starts_with('#')
        || t.starts_with("```")
        || t.starts_with("~~~")
        || t.starts_with('>')
        || t.starts_with('|')
        || t.starts_with("- ")
        || t.starts_with("* ")
        || t.starts_with("+ ")
        || t.starts_with("---")
        || t.starts_with("===")
        || t.split_once(". ").is_some_and(|(n, _)| {
            !n.is_empty() && n.len() < 10 && n.bytes().all(|b| b.is_ascii_digit())
        });
    if risky {
        format!("\\{t}")
    } else {
        t.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_extension_then_by_content() {
        assert_eq!(format_of(Path::new("a/B.HTM"), b""), Some(Format::Html));
        assert_eq!(
            format_of(Path::new("manual"), b"%PDF-1.7\n"),
            Some(Format::Pdf)
        );
        assert_eq!(
            format_of(Path::new("report"), b"PK\x03\x04....word/document.xml"),
            Some(Format::Docx)
        );
        assert_eq!(format_of(Path::new("x.zip"), b"PK\x03\x04 other"), None);
        assert_eq!(format_of(Path::new("notes"), b"# title"), None);
    }

    #[test]
    fn identical_bytes_convert_once() {
        let html = b"<h1>Cached</h1><p>body</p>".to_vec();
        let a = convert(Format::Html, &html).unwrap();
        let b = convert(Format::Html, &html).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let c = convert(Format::Html, b"<h1>Other</h1>").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
    }

    #[test]
    fn a_broken_document_is_a_reason_not_a_panic() {
        let e = convert(Format::Pdf, b"%PDF-1.4\nnot really a pdf").unwrap_err();
        assert!(matches!(e, ConvertError::NotPdf { .. }), "{e:?}");
        assert!(!e.to_string().is_empty());
        let e = convert(Format::Docx, b"PK\x03\x04 truncated").unwrap_err();
        assert!(matches!(e, ConvertError::NotDocx { .. }), "{e:?}");
        assert!(e.to_string().contains("DOCX"), "{e}");
        let e = contained(|| panic!("broken table")).unwrap_err();
        assert!(
            matches!(&e, ConvertError::Panicked(p) if p.message == "broken table"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "the converter failed on this file: broken table"
        );
    }

    #[test]
    fn markdown_lookalikes_stay_text() {
        assert_eq!(escape_line_start("# 1 in the queue"), "\\# 1 in the queue");
        assert_eq!(escape_line_start("12. Refunds"), "\\12. Refunds");
        assert_eq!(escape_line_start("Refunds are due."), "Refunds are due.");
    }
}
