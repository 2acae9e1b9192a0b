//! Decoding a file's bytes into text, with the way back: byte offsets of the text mapped to byte
//! offsets of the file.

/// The map from byte offsets of a document's decoded text to byte offsets of its file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOffsets {
    /// (text byte, file byte) where a run of text that is a verbatim copy of the file begins;
    /// empty means the text is the file, byte for byte.
    points: Vec<(usize, usize)>,
    /// Text byte ranges that are not a copy of the file's bytes (U+FFFD replacements, or all of
    /// a UTF-16 file).
    not_verbatim: Vec<(usize, usize)>,
}

impl FileOffsets {
    /// The file byte of text byte `at`.
    pub fn file_byte(&self, at: usize) -> usize {
        match self.points.partition_point(|&(t, _)| t <= at) {
            0 => at,
            i => {
                let (t, f) = self.points[i - 1];
                f + (at - t)
            }
        }
    }

    /// True when text bytes `start..end` are the file's bytes unchanged.
    pub fn verbatim(&self, start: usize, end: usize) -> bool {
        !self
            .not_verbatim
            .iter()
            .any(|&(a, b)| a < end.max(start + 1) && start < b)
    }
}

/// Decode a file's bytes: a UTF-8 BOM stripped, UTF-16 (LE or BE, with BOM) decoded, invalid
/// UTF-8 replaced by U+FFFD; with the map back to the file's bytes and whether anything was
/// replaced.
pub fn decode(bytes: &[u8]) -> (String, FileOffsets, bool) {
    let mut offsets = FileOffsets::default();
    if let Some(units) = utf16_units(bytes) {
        let mut text = String::with_capacity(bytes.len() / 2);
        let mut unit = 0;
        let mut lossy = false;
        for r in char::decode_utf16(units.iter().copied()) {
            let c = r.unwrap_or_else(|_| {
                lossy = true;
                char::REPLACEMENT_CHARACTER
            });
            offsets.points.push((text.len(), 2 + 2 * unit));
            unit += c.len_utf16();
            text.push(c);
        }
        offsets.points.push((text.len(), 2 + 2 * unit));
        offsets.not_verbatim.push((0, text.len()));
        return (text, offsets, lossy);
    }
    let (body, base) = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => (rest, 3),
        None => (bytes, 0),
    };
    let mut text = String::with_capacity(body.len());
    let mut file = base;
    let mut lossy = false;
    if base > 0 {
        offsets.points.push((0, base));
    }
    for chunk in body.utf8_chunks() {
        text.push_str(chunk.valid());
        file += chunk.valid().len();
        if !chunk.invalid().is_empty() {
            lossy = true;
            offsets.points.push((text.len(), file));
            offsets.not_verbatim.push((
                text.len(),
                text.len() + char::REPLACEMENT_CHARACTER.len_utf8(),
            ));
            text.push(char::REPLACEMENT_CHARACTER);
            file += chunk.invalid().len();
            offsets.points.push((text.len(), file));
        }
    }
    (text, offsets, lossy)
}

/// The UTF-16 code units of a file that starts with a UTF-16 BOM.
pub(super) fn utf16_units(bytes: &[u8]) -> Option<Vec<u16>> {
    let le = match bytes.get(..2)? {
        [0xFF, 0xFE] => true,
        [0xFE, 0xFF] => false,
        _ => return None,
    };
    Some(
        bytes[2..]
            .chunks_exact(2)
            .map(|p| {
                if le {
                    u16::from_le_bytes([p[0], p[1]])
                } else {
                    u16::from_be_bytes([p[0], p[1]])
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_keeps_the_way_back_to_the_file() {
        // UTF-8 BOM: stripped, offsets count its three bytes.
        let (t, o, lossy) = decode(b"\xEF\xBB\xBF# Title\nbody");
        assert_eq!((t.as_str(), lossy), ("# Title\nbody", false));
        assert_eq!((o.file_byte(0), o.file_byte(2)), (3, 5));
        assert!(o.verbatim(0, t.len()));
        // Invalid UTF-8: each bad run one U+FFFD, offsets of what follows still the file's.
        let bytes = b"caf\xe9 ok \xff\xfe\xfdend";
        let (t, o, lossy) = decode(bytes);
        assert!(lossy);
        assert_eq!(t, String::from_utf8_lossy(bytes));
        let at = t.find("ok").unwrap();
        assert_eq!(&bytes[o.file_byte(at)..o.file_byte(at) + 2], b"ok");
        let end = t.find("end").unwrap();
        assert_eq!(&bytes[o.file_byte(end)..], b"end");
        assert_eq!(o.file_byte(t.len()), bytes.len());
        assert!(!o.verbatim(0, at) && o.verbatim(at, at + 2));
        // UTF-16 with BOM, both byte orders.
        for le in [true, false] {
            let s = "Zażółć 😀 ok";
            let mut bytes: Vec<u8> = if le {
                vec![0xFF, 0xFE]
            } else {
                vec![0xFE, 0xFF]
            };
            for u in s.encode_utf16() {
                bytes.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
            }
            let (t, o, lossy) = decode(&bytes);
            assert_eq!((t.as_str(), lossy), (s, false));
            let ok = t.find("ok").unwrap();
            let units_before = s[..ok].encode_utf16().count();
            assert_eq!(o.file_byte(ok), 2 + 2 * units_before);
            assert_eq!(o.file_byte(t.len()), bytes.len());
            assert!(
                !o.verbatim(0, 1),
                "decoded UTF-16 is never the file's bytes"
            );
        }
    }
}
