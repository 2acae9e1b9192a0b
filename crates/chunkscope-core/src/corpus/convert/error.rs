//! Why a document could not be converted to Markdown. The message is the reason shown in the
//! corpus's skipped list (the file's path is named by the list, not here).

/// A conversion failure, by format and cause.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// htmd could not build the page's tree.
    #[error("HTML conversion failed: {cause}")]
    Html { cause: std::io::Error },
    #[error("HTML nested more than {limit} elements deep: not converted")]
    HtmlTooDeep { limit: usize },
    #[error("not a DOCX file: {cause}")]
    NotDocx { cause: zip::result::ZipError },
    #[error("not a DOCX file: no word/document.xml in the archive")]
    NoDocxBody,
    /// A part of the DOCX archive (`word/styles.xml`, ...) could not be opened.
    #[error("DOCX part {part}: {cause}")]
    DocxZip {
        part: &'static str,
        cause: zip::result::ZipError,
    },
    /// A part could not be read as UTF-8 text.
    #[error("DOCX part {part}: {cause}")]
    DocxRead {
        part: &'static str,
        cause: std::io::Error,
    },
    /// A part is not well-formed XML (roxmltree's message has the line and column).
    #[error("DOCX part {part}: {cause}")]
    DocxXml {
        part: &'static str,
        cause: roxmltree::Error,
    },
    #[error("DOCX part {part}: elements nested more than {limit} deep: not converted")]
    DocxTooDeep { part: &'static str, limit: usize },
    #[error("not a readable PDF: {cause}")]
    NotPdf { cause: pdf_extract::Error },
    #[error("encrypted PDF: it needs a password")]
    PdfEncrypted,
    #[error("PDF text extraction failed: {cause}")]
    PdfExtraction { cause: pdf_extract::OutputError },
    #[error("PDF without extractable text (scanned pages need OCR)")]
    PdfNoText,
    /// A third-party parser panicked on the file (malformed PDFs can make them).
    #[error("the converter failed on this file: {0}")]
    Panicked(crate::panics::Panicked),
}
