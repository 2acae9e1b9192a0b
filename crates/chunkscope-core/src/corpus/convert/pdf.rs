//! PDF to Markdown, page by page. Glyphs come from pdf-extract (fonts, encodings and ToUnicode
//! maps decoded by it); lines, paragraphs and headings are rebuilt here from glyph positions and
//! sizes: words split on gaps, lines joined into paragraphs with hyphenation undone, ligatures
//! spelled out, and lines set larger than the body text made headings, one level per size.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

use super::{escape_line_start, expand_ligature, ConvertError, Converted};

/// One glyph as placed on the page (y grows downwards).
struct Glyph {
    x: f64,
    y: f64,
    end: f64,
    size: f64,
    text: String,
}

#[derive(Default)]
struct Collector {
    page_height: f64,
    pages: Vec<Vec<Glyph>>,
}

impl OutputDev for Collector {
    fn begin_page(
        &mut self,
        _page: u32,
        media: &MediaBox,
        _art: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        self.page_height = media.ury - media.lly;
        self.pages.push(Vec::new());
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        text: &str,
    ) -> Result<(), OutputError> {
        // The glyph's size on the page: the side of a square with the area of the transformed
        // em box.
        let vx = font_size * (trm.m11 + trm.m21);
        let vy = font_size * (trm.m12 + trm.m22);
        let size = (vx * vy).abs().sqrt();
        let (x, y) = (trm.m31, self.page_height - trm.m32);
        if let Some(page) = self.pages.last_mut() {
            page.push(Glyph {
                x,
                y,
                end: x + width * size,
                size,
                text: text.to_string(),
            });
        }
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

/// A line of text on a page.
struct Line {
    text: String,
    y: f64,
    size: f64,
}

pub(super) fn to_markdown(bytes: &[u8]) -> Result<Converted, ConvertError> {
    let mut doc =
        pdf_extract::Document::load_mem(bytes).map_err(|cause| ConvertError::NotPdf { cause })?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err(ConvertError::PdfEncrypted);
    }
    let mut collector = Collector::default();
    pdf_extract::output_doc(&doc, &mut collector)
        .map_err(|cause| ConvertError::PdfExtraction { cause })?;
    let pages: Vec<Vec<Line>> = collector.pages.iter().map(|g| lines(g)).collect();
    if pages
        .iter()
        .all(|p| p.iter().all(|l| l.text.trim().is_empty()))
    {
        return Err(ConvertError::PdfNoText);
    }
    let body = body_size(&pages);
    let levels = heading_sizes(&pages, body);
    let mut out = Converted::default();
    for page in &pages {
        if !out.text.is_empty() {
            out.text.push('\n');
        }
        out.pages.push(out.text.len());
        for block in paragraphs(page, body, &levels) {
            out.text.push_str(&block);
            out.text.push_str("\n\n");
        }
    }
    Ok(out)
}

/// Glyphs in content order grouped into lines: a new line where the baseline moves by more than
/// half a glyph height; a space where the gap to the previous glyph exceeds a sixth of it.
fn lines(glyphs: &[Glyph]) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut last_end = f64::MIN;
    let mut sizes: Vec<f64> = Vec::new();
    for g in glyphs {
        let new_line = match out.last() {
            None => true,
            Some(l) => (g.y - l.y).abs() > 0.5 * g.size.max(l.size).max(1.0),
        };
        if new_line {
            if let Some(l) = out.last_mut() {
                l.size = median(&mut sizes);
            }
            sizes.clear();
            out.push(Line {
                text: String::new(),
                y: g.y,
                size: g.size,
            });
        } else if g.x > last_end + g.size / 6.0 || g.x + g.size < last_end - 2.0 * g.size {
            // A gap, or a jump back to the left on the same baseline (a new column cell).
            let l = out.last_mut().expect("a line was pushed");
            if !l.text.ends_with(' ') {
                l.text.push(' ');
            }
        }
        let l = out.last_mut().expect("a line was pushed");
        for c in g.text.chars() {
            match expand_ligature(c) {
                Some(s) => l.text.push_str(s),
                None if c.is_whitespace() => {
                    if !l.text.ends_with(' ') && !l.text.is_empty() {
                        l.text.push(' ');
                    }
                }
                None if c.is_control() => {}
                None => l.text.push(c),
            }
        }
        if !g.text.trim().is_empty() {
            sizes.push(g.size);
        }
        last_end = g.end;
    }
    if let Some(l) = out.last_mut() {
        l.size = median(&mut sizes);
    }
    for l in &mut out {
        l.text = l.text.trim().to_string();
    }
    out.retain(|l| !l.text.is_empty());
    out
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Sizes rounded to half points, so that one typeface size is one key.
fn size_key(size: f64) -> i64 {
    (size * 2.0).round() as i64
}

/// The size most characters are set in.
fn body_size(pages: &[Vec<Line>]) -> f64 {
    let mut counts = std::collections::HashMap::<i64, usize>::new();
    for l in pages.iter().flatten() {
        *counts.entry(size_key(l.size)).or_default() += l.text.chars().count();
    }
    counts
        .into_iter()
        .max_by_key(|&(k, n)| (n, -k))
        .map_or(0.0, |(k, _)| k as f64 / 2.0)
}

/// True when a line is set noticeably larger than the body and reads like a title.
fn is_heading(line: &Line, body: f64) -> bool {
    body > 0.0
        && line.size >= body * 1.15
        && line.text.chars().count() <= 150
        && line.text.chars().any(char::is_alphabetic)
}

/// The sizes of heading lines, largest first: index + 1 is the heading level.
fn heading_sizes(pages: &[Vec<Line>], body: f64) -> Vec<i64> {
    let mut sizes: Vec<i64> = pages
        .iter()
        .flatten()
        .filter(|l| is_heading(l, body))
        .map(|l| size_key(l.size))
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    sizes
}

/// A page's lines as Markdown blocks: headings, and paragraphs whose lines are joined (a
/// hyphen at a line end followed by a lowercase letter is a word broken across lines).
fn paragraphs(lines: &[Line], body: f64, levels: &[i64]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut para = String::new();
    let mut prev: Option<&Line> = None;
    let mut is_list = false;
    let flush = |para: &mut String, out: &mut Vec<String>, list: bool| {
        if !para.is_empty() {
            out.push(if list {
                para.clone()
            } else {
                escape_line_start(para)
            });
            para.clear();
        }
    };
    for l in lines {
        if is_heading(l, body) {
            let level = levels
                .iter()
                .position(|&s| s == size_key(l.size))
                .map_or(6, |i| (i + 1).min(6));
            let same_heading = prev.is_some_and(|p| {
                is_heading(p, body)
                    && size_key(p.size) == size_key(l.size)
                    && (l.y - p.y) < l.size * 1.6
            });
            if same_heading {
                // A title wrapped over two lines.
                if let Some(h) = out.last_mut() {
                    h.push(' ');
                    h.push_str(&l.text);
                }
            } else {
                flush(&mut para, &mut out, is_list);
                is_list = false;
                out.push(format!("{} {}", "#".repeat(level), l.text));
            }
            prev = Some(l);
            continue;
        }
        let item = list_item(&l.text);
        let breaks = match prev {
            None => true,
            Some(p) => {
                is_heading(p, body)
                    || size_key(p.size) != size_key(l.size)
                    || (l.y - p.y) > p.size.max(l.size) * 1.75
                    || l.y < p.y
            }
        };
        if let Some(item) = item {
            // A list item starts a line of its own; items of one list stay one block.
            if is_list {
                para.push('\n');
            } else {
                flush(&mut para, &mut out, false);
                is_list = true;
            }
            para.push_str(&item);
        } else if breaks {
            flush(&mut para, &mut out, is_list);
            is_list = false;
            para.push_str(&l.text);
        } else if hyphen_broken(&para, &l.text) {
            para.pop();
            para.push_str(&l.text);
        } else {
            para.push(' ');
            para.push_str(&l.text);
        }
        prev = Some(l);
    }
    flush(&mut para, &mut out, is_list);
    out
}

/// A line that starts a list item, as a Markdown item: a bullet glyph becomes "- ", a number
/// with a dot or parenthesis stays a numbered item.
fn list_item(line: &str) -> Option<String> {
    let mut chars = line.chars();
    let first = chars.next()?;
    if matches!(
        first,
        '\u{2022}' | '\u{25E6}' | '\u{25AA}' | '\u{25CF}' | '\u{2023}' | '\u{2043}' | '\u{00B7}'
    ) {
        return Some(format!("- {}", chars.as_str().trim_start()));
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &line[digits..];
    if (1..=3).contains(&digits) && (rest.starts_with(". ") || rest.starts_with(") ")) {
        return Some(format!("{}. {}", &line[..digits], rest[2..].trim_start()));
    }
    None
}

/// "informa-" then "tion ...": a word hyphenated at the line end.
fn hyphen_broken(before: &str, next: &str) -> bool {
    let mut back = before.chars().rev();
    back.next() == Some('-')
        && back.next().is_some_and(char::is_alphabetic)
        && next.chars().next().is_some_and(char::is_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, y: f64, size: f64) -> Line {
        Line {
            text: text.into(),
            y,
            size,
        }
    }

    #[test]
    fn paragraphs_headings_and_hyphens() {
        let page = vec![
            line("Rotating keys", 50.0, 18.0),
            line(
                "Keys are rotated every ninety days by the infor-",
                80.0,
                10.0,
            ),
            line("mation security team, without downtime.", 92.0, 10.0),
            line("Staging", 120.0, 14.0),
            line("Staging keys rotate weekly.", 140.0, 10.0),
        ];
        let body = body_size(std::slice::from_ref(&page));
        assert_eq!(body, 10.0);
        let levels = heading_sizes(std::slice::from_ref(&page), body);
        let blocks = paragraphs(&page, body, &levels);
        assert_eq!(
            blocks,
            [
                "# Rotating keys",
                "Keys are rotated every ninety days by the information security team, without downtime.",
                "## Staging",
                "Staging keys rotate weekly."
            ]
        );
    }

    #[test]
    fn glyphs_become_words_and_ligatures_letters() {
        let g = |x: f64, t: &str| Glyph {
            x,
            y: 10.0,
            end: x + 5.0,
            size: 10.0,
            text: t.into(),
        };
        let ls = lines(&[g(0.0, "a"), g(5.0, "\u{FB01}"), g(10.0, "x"), g(30.0, "b")]);
        assert_eq!(ls.len(), 1);
        assert_eq!(ls[0].text, "afix b");
    }
}
