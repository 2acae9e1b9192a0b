//! DOCX (Office Open XML) to Markdown: headings from the Heading styles (or a style's outline
//! level), paragraphs, bulleted and numbered lists with their nesting, and tables by row.
//! Deleted revisions, field codes and text boxes are left out.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use roxmltree::{Document, Node};

use super::{escape_line_start, ConvertError, Converted};

const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

/// Parts larger than this are refused (a zip bomb guard).
const MAX_PART_BYTES: u64 = 256 * 1024 * 1024;

/// The deepest element nesting of the body converted: the paragraph walk recurses once per
/// level (a body nested 100,000 deep overflowed a 2 MB thread stack, which aborts the process);
/// Word's own documents stay within a few dozen.
const MAX_DEPTH: usize = 1024;

pub(super) fn to_markdown(bytes: &[u8]) -> Result<Converted, ConvertError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|cause| ConvertError::NotDocx { cause })?;
    let body = part(&mut zip, "word/document.xml")?.ok_or(ConvertError::NoDocxBody)?;
    let styles = part(&mut zip, "word/styles.xml")?;
    let numbering = part(&mut zip, "word/numbering.xml")?;
    let styles = styles.as_deref().map(Styles::parse).transpose()?;
    let lists = numbering.as_deref().map(bullets).transpose()?;
    let doc = parse(&body, "word/document.xml")?;
    if nested_deeper(&doc, MAX_DEPTH) {
        return Err(ConvertError::DocxTooDeep {
            part: "word/document.xml",
            limit: MAX_DEPTH,
        });
    }
    let ctx = Ctx {
        styles: styles.unwrap_or_default(),
        bullets: lists.unwrap_or_default(),
    };
    let mut blocks = Vec::new();
    if let Some(b) = doc.descendants().find(|n| is(n, "body")) {
        ctx.blocks(b, &mut blocks);
    }
    let mut text = String::new();
    let mut prev_list = false;
    for block in blocks {
        if !text.is_empty() {
            text.push_str(if prev_list && block.list {
                "\n"
            } else {
                "\n\n"
            });
        }
        prev_list = block.list;
        text.push_str(&block.text);
    }
    text.push('\n');
    Ok(Converted {
        text,
        pages: Vec::new(),
        lossy: false,
    })
}

fn part<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    part: &'static str,
) -> Result<Option<String>, ConvertError> {
    let file = match zip.by_name(part) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(cause) => return Err(ConvertError::DocxZip { part, cause }),
    };
    let mut s = String::new();
    file.take(MAX_PART_BYTES)
        .read_to_string(&mut s)
        .map_err(|cause| ConvertError::DocxRead { part, cause })?;
    Ok(Some(s))
}

fn parse<'a>(xml: &'a str, part: &'static str) -> Result<Document<'a>, ConvertError> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    Document::parse_with_options(xml, opts).map_err(|cause| ConvertError::DocxXml { part, cause })
}

/// True when some node lies deeper than `limit` (found without recursion: nodes come in
/// document order, each after its parent).
fn nested_deeper(doc: &Document, limit: usize) -> bool {
    let mut depth: Vec<usize> = Vec::new();
    for n in doc.root().descendants() {
        let d = n.parent().map_or(0, |p| depth[p.id().get_usize()] + 1);
        if d > limit {
            return true;
        }
        let id = n.id().get_usize();
        if depth.len() <= id {
            depth.resize(id + 1, 0);
        }
        depth[id] = d;
    }
    false
}

fn is(n: &Node, name: &str) -> bool {
    n.is_element() && n.tag_name().name() == name && n.tag_name().namespace() == Some(W)
}

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children().find(|c| is(c, name))
}

fn val<'a>(n: Option<Node<'a, '_>>) -> Option<&'a str> {
    n?.attribute((W, "val"))
}

/// A paragraph style: its name, parent, outline level and list numbering.
#[derive(Default)]
struct Style {
    name: String,
    based_on: Option<String>,
    outline: Option<usize>,
    numbered: Option<(String, usize)>,
}

#[derive(Default)]
struct Styles(HashMap<String, Style>);

impl Styles {
    fn parse(xml: &str) -> Result<Styles, ConvertError> {
        let doc = parse(xml, "word/styles.xml")?;
        let mut map = HashMap::new();
        for s in doc.descendants().filter(|n| is(n, "style")) {
            let Some(id) = s.attribute((W, "styleId")) else {
                continue;
            };
            let ppr = child(s, "pPr");
            let num = ppr.and_then(|p| child(p, "numPr"));
            map.insert(
                id.to_string(),
                Style {
                    name: val(child(s, "name")).unwrap_or(id).to_ascii_lowercase(),
                    based_on: val(child(s, "basedOn")).map(str::to_string),
                    outline: val(ppr.and_then(|p| child(p, "outlineLvl")))
                        .and_then(|v| v.parse().ok()),
                    numbered: num.and_then(|n| {
                        let id = val(child(n, "numId"))?.to_string();
                        let lvl = val(child(n, "ilvl")).and_then(|v| v.parse().ok());
                        Some((id, lvl.unwrap_or(0)))
                    }),
                },
            );
        }
        Ok(Styles(map))
    }

    /// The style and its ancestors, nearest first.
    fn chain(&self, id: &str) -> Vec<&Style> {
        let mut out = Vec::new();
        let mut next = Some(id);
        while let Some(id) = next.filter(|_| out.len() < 16) {
            let Some(s) = self.0.get(id) else { break };
            out.push(s);
            next = s.based_on.as_deref();
        }
        out
    }

    /// The heading level a style gives: "Heading N" (or a style based on it), "Title", or an
    /// outline level.
    fn heading_level(&self, id: &str) -> Option<usize> {
        for s in self.chain(id) {
            if let Some(n) = s.name.strip_prefix("heading") {
                if let Ok(n) = n.trim().parse::<usize>() {
                    return Some(n.clamp(1, 6));
                }
            }
            if s.name == "title" {
                return Some(1);
            }
            if let Some(l) = s.outline.filter(|&l| l < 9) {
                return Some((l + 1).min(6));
            }
        }
        None
    }

    /// The list numbering a style carries, and whether its name says numbered.
    fn list(&self, id: &str) -> Option<((String, usize), bool)> {
        let chain = self.chain(id);
        let named_number = chain.iter().any(|s| s.name.contains("number"));
        chain
            .iter()
            .find_map(|s| s.numbered.clone())
            .map(|n| (n, named_number))
    }
}

/// For each list (numId) and level: true when it is bulleted, false when numbered.
fn bullets(xml: &str) -> Result<HashMap<(String, usize), bool>, ConvertError> {
    let doc = parse(xml, "word/numbering.xml")?;
    let mut abstracts: HashMap<&str, HashMap<usize, bool>> = HashMap::new();
    for a in doc.descendants().filter(|n| is(n, "abstractNum")) {
        let Some(id) = a.attribute((W, "abstractNumId")) else {
            continue;
        };
        let levels = a
            .children()
            .filter(|n| is(n, "lvl"))
            .filter_map(|l| {
                let i = l.attribute((W, "ilvl"))?.parse().ok()?;
                Some((i, val(child(l, "numFmt")) == Some("bullet")))
            })
            .collect();
        abstracts.insert(id, levels);
    }
    let mut out = HashMap::new();
    for n in doc.descendants().filter(|n| is(n, "num")) {
        let (Some(id), Some(abs)) = (n.attribute((W, "numId")), val(child(n, "abstractNumId")))
        else {
            continue;
        };
        for (lvl, bullet) in abstracts.get(abs).into_iter().flatten() {
            out.insert((id.to_string(), *lvl), *bullet);
        }
    }
    Ok(out)
}

struct Block {
    text: String,
    list: bool,
}

struct Ctx {
    styles: Styles,
    bullets: HashMap<(String, usize), bool>,
}

impl Ctx {
    fn blocks(&self, parent: Node, out: &mut Vec<Block>) {
        for n in parent.children().filter(|n| n.is_element()) {
            if is(&n, "p") {
                out.extend(self.paragraph(n));
            } else if is(&n, "tbl") {
                out.extend(table(n));
            } else if is(&n, "sdt") || is(&n, "sdtContent") || is(&n, "customXml") {
                self.blocks(n, out);
            }
        }
    }

    fn paragraph(&self, p: Node) -> Option<Block> {
        let text = paragraph_text(p);
        let text = text.trim();
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return None;
        }
        let ppr = child(p, "pPr");
        let style = val(ppr.and_then(|x| child(x, "pStyle"))).unwrap_or("Normal");
        let outline = val(ppr.and_then(|x| child(x, "outlineLvl")))
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&l| l < 9);
        if let Some(level) = outline
            .map(|l| (l + 1).min(6))
            .or_else(|| self.styles.heading_level(style))
        {
            return Some(Block {
                text: format!("{} {flat}", "#".repeat(level)),
                list: false,
            });
        }
        let own = ppr.and_then(|x| child(x, "numPr")).and_then(|n| {
            let id = val(child(n, "numId"))?.to_string();
            let lvl = val(child(n, "ilvl")).and_then(|v| v.parse().ok());
            Some((id, lvl.unwrap_or(0)))
        });
        let (num, named_number) = match own {
            Some(n) => (Some(n), false),
            None => match self.styles.list(style) {
                Some((n, named)) => (Some(n), named),
                None => (None, false),
            },
        };
        // numId 0 switches numbering off.
        match num.filter(|(id, _)| id != "0") {
            Some((id, lvl)) => {
                let bullet = self
                    .bullets
                    .get(&(id, lvl))
                    .copied()
                    .unwrap_or(!named_number);
                let marker = if bullet { "-" } else { "1." };
                Some(Block {
                    text: format!("{}{marker} {flat}", "  ".repeat(lvl.min(8))),
                    list: true,
                })
            }
            None => Some(Block {
                text: text
                    .lines()
                    .map(escape_line_start)
                    .collect::<Vec<_>>()
                    .join("\n"),
                list: false,
            }),
        }
    }
}

/// The text of a paragraph's runs, hyperlinks and fields, without deleted text, field codes or
/// text boxes.
fn paragraph_text(p: Node) -> String {
    fn walk(n: Node, out: &mut String) {
        for c in n.children().filter(|c| c.is_element()) {
            match c.tag_name().name() {
                "t" => out.push_str(c.text().unwrap_or("")),
                "tab" if c.parent().is_some_and(|p| is(&p, "r")) => out.push(' '),
                "br" | "cr" => out.push('\n'),
                "noBreakHyphen" => out.push('-'),
                "del" | "instrText" | "delText" | "txbxContent" | "pPr" | "rPr" | "drawing"
                | "pict" | "footnoteReference" | "endnoteReference" => {}
                _ => walk(c, out),
            }
        }
    }
    let mut s = String::new();
    walk(p, &mut s);
    s
}

/// A table as Markdown rows, the first row as header; cells' paragraphs joined by spaces.
fn table(t: Node) -> Option<Block> {
    let rows: Vec<Vec<String>> = t
        .children()
        .filter(|r| is(r, "tr"))
        .map(|r| {
            r.children()
                .filter(|c| is(c, "tc"))
                .map(|c| {
                    let text: Vec<String> = c
                        .descendants()
                        .filter(|p| is(p, "p"))
                        .map(paragraph_text)
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect();
                    text.join(" ").replace('|', "\\|")
                })
                .collect()
        })
        .filter(|r: &Vec<String>| !r.is_empty())
        .collect();
    let width = rows.iter().map(Vec::len).max()?;
    let line = |r: &[String]| {
        let mut cells: Vec<&str> = r.iter().map(String::as_str).collect();
        cells.resize(width, "");
        format!("| {} |", cells.join(" | "))
    };
    let mut text = line(&rows[0]);
    text.push('\n');
    text.push_str(&format!("|{}", " --- |".repeat(width)));
    for r in &rows[1..] {
        text.push('\n');
        text.push_str(&line(r));
    }
    Some(Block { text, list: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn docx(document: &str, styles: &str) -> Vec<u8> {
        let mut buf = Cursor::new(Vec::new());
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default();
        z.start_file("word/document.xml", opts).unwrap();
        z.write_all(document.as_bytes()).unwrap();
        z.start_file("word/styles.xml", opts).unwrap();
        z.write_all(styles.as_bytes()).unwrap();
        z.finish().unwrap();
        buf.into_inner()
    }

    #[test]
    fn headings_lists_and_tables() {
        let ns = format!("xmlns:w=\"{W}\"");
        let styles = format!(
            "<w:styles {ns}><w:style w:type=\"paragraph\" w:styleId=\"Heading2\"><w:name w:val=\"heading 2\"/></w:style>\
             <w:style w:type=\"paragraph\" w:styleId=\"Custom\"><w:name w:val=\"My Title\"/><w:basedOn w:val=\"Heading2\"/></w:style>\
             <w:style w:type=\"paragraph\" w:styleId=\"ListBullet\"><w:name w:val=\"List Bullet\"/><w:pPr><w:numPr><w:numId w:val=\"3\"/></w:numPr></w:pPr></w:style></w:styles>"
        );
        let p = |style: &str, text: &str| {
            format!("<w:p><w:pPr><w:pStyle w:val=\"{style}\"/></w:pPr><w:r><w:t>{text}</w:t></w:r></w:p>")
        };
        let document = format!(
            "<w:document {ns}><w:body>{}{}<w:p><w:r><w:t xml:space=\"preserve\">Keys &amp; </w:t></w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del><w:r><w:t>tokens.</w:t></w:r></w:p>{}{}\
             <w:tbl><w:tr><w:tc><w:p><w:r><w:t>Plan</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Refund</w:t></w:r></w:p></w:tc></w:tr>\
             <w:tr><w:tc><w:p><w:r><w:t>Annual</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>a|b</w:t></w:r></w:p></w:tc></w:tr></w:tbl></w:body></w:document>",
            p("Heading2", "Rotation"),
            p("Custom", "Styled"),
            p("ListBullet", "first"),
            p("ListBullet", "second"),
        );
        let md = to_markdown(&docx(&document, &styles)).unwrap().text;
        assert_eq!(
            md,
            "## Rotation\n\n## Styled\n\nKeys & tokens.\n\n- first\n- second\n\n| Plan | Refund |\n| --- | --- |\n| Annual | a\\|b |\n"
        );
    }

    #[test]
    fn a_body_nested_a_hundred_thousand_deep_is_a_reason_not_a_crash() {
        // The paragraph walk recursed once per level and overflowed a 2 MB thread stack (an
        // abort; found by tests/mutations.rs), converted here on such a thread.
        let ns = format!("xmlns:w=\"{W}\"");
        let nested = |depth: usize| {
            let document = format!(
                "<w:document {ns}><w:body><w:p>{}<w:r><w:t>deep</w:t></w:r>{}</w:p></w:body></w:document>",
                "<w:smartTag>".repeat(depth),
                "</w:smartTag>".repeat(depth)
            );
            docx(&document, &format!("<w:styles {ns}/>"))
        };
        let (deep, shallow) = (nested(100_000), nested(1000));
        let (deep, shallow) = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || (to_markdown(&deep), to_markdown(&shallow)))
            .unwrap()
            .join()
            .unwrap();
        let e = deep.err().unwrap();
        assert!(
            matches!(e, ConvertError::DocxTooDeep { limit: 1024, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("nested more than 1024 deep"), "{e}");
        assert_eq!(shallow.unwrap().text, "deep\n");
    }
}
