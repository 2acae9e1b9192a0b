//! File names as text: paths relative to the corpus root, names that are not UTF-8 escaped so
//! they map back to their bytes.

use std::path::Path;

pub(super) fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| name_of(c.as_os_str()))
        .collect::<Vec<_>>()
        .join("/")
}

/// A file name as text. A name that is not UTF-8 is written with each byte that is not part of
/// a UTF-8 character as `\xNN` and each backslash doubled, so the text maps back to the bytes
/// ([`name_bytes`]); UTF-8 names are kept as they are.
pub fn name_of(name: &std::ffi::OsStr) -> String {
    if let Some(s) = name.to_str() {
        return s.to_string();
    }
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in name.as_bytes().utf8_chunks() {
        out.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// The bytes of a name written by [`name_of`] (escapes undone when it has any `\x`).
pub fn name_bytes(text: &str) -> Vec<u8> {
    if !text.contains("\\x") {
        return text.as_bytes().to_vec();
    }
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'\\', Some(b'\\')) => {
                out.push(b'\\');
                i += 2;
            }
            (b'\\', Some(b'x')) if i + 4 <= b.len() => {
                match u8::from_str_radix(&text[i + 2..i + 4], 16) {
                    Ok(v) => out.push(v),
                    Err(_) => out.extend_from_slice(&b[i..i + 4]),
                }
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}
