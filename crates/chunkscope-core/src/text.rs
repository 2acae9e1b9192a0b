//! Small text helpers shared by the chunkers.

/// Python's `str.isspace()`: Unicode White_Space plus the four information separators
/// U+001C..U+001F, which Python also treats as whitespace.
pub fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Java's `String.trim()` removes every char <= U+0020 at both ends.
pub fn is_java_trim(c: char) -> bool {
    c <= '\u{20}'
}

/// Shrink `[start, end)` of `text` by dropping chars matching `strip` at both ends.
pub fn strip_range(
    text: &str,
    start: usize,
    end: usize,
    strip: fn(char) -> bool,
) -> (usize, usize) {
    let slice = &text[start..end];
    let left = slice.len() - slice.trim_start_matches(strip).len();
    let right = slice.trim_end_matches(strip).len();
    if right <= left {
        (start + left, start + left)
    } else {
        (start + left, start + right)
    }
}

/// Largest char boundary <= `i`.
pub fn floor_char(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Smallest char boundary >= `i`.
pub fn ceil_char(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Number of UTF-16 code units, which is what Java's `String.length()` counts.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_handles_all_space() {
        assert_eq!(strip_range("  \n ", 0, 4, is_python_space), (4, 4));
        assert_eq!(strip_range(" ab ", 0, 4, is_python_space), (1, 3));
        assert_eq!(strip_range("\u{1f}a\u{a0}", 0, 4, is_python_space), (1, 2));
        assert_eq!(strip_range("\u{a0}a ", 0, 4, is_java_trim), (0, 3));
    }

    #[test]
    fn char_snapping() {
        let t = "aé😀";
        assert_eq!(floor_char(t, 2), 1);
        assert_eq!(ceil_char(t, 2), 3);
        assert_eq!(ceil_char(t, 4), 7);
        assert_eq!(utf16_len(t), 4);
    }
}
