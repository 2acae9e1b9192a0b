//! MarkdownNodeParser: the text cut into sections at headings (outside code fences), each section
//! then split by SentenceSplitter with its `header_path` metadata taken off the size.

use super::{sentence_split, Counter, Locator};
use crate::chunk::Chunk;
use crate::text::is_python_space;

/// One section as MarkdownNodeParser builds it.
struct MdSection {
    text: String,
    /// Where `text` starts in the document if it was copied from there unchanged (it is not
    /// when a heading was written with a tab: the parser rebuilds heading lines with a space).
    start: usize,
    /// The `header_path` metadata: "/" or "/A/B/" (the enclosing headings).
    header_path: String,
    /// The heading path including the section's own heading, "A > B > C".
    heading: Option<crate::chunk::Heading>,
}

/// `^(#+)\s(.*)`: the level and the title of a heading line.
fn heading_line(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|&b| b == b'#').count();
    if level == 0 {
        return None;
    }
    let rest = &line[level..];
    let c = rest.chars().next()?;
    is_python_space(c).then(|| (level, &rest[c.len_utf8()..]))
}

fn md_sections(text: &str) -> Vec<MdSection> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut fence = false;
    // Where `current` starts in `text`, and where the next line does.
    let (mut current_at, mut line_at) = (0, 0);
    let push = |current: &str, at: usize, stack: &[(usize, String)], out: &mut Vec<MdSection>| {
        let body = current.trim_matches(is_python_space);
        if body.is_empty() {
            return;
        }
        let lead = current.len() - current.trim_start_matches(is_python_space).len();
        let parents = stack[..stack.len().saturating_sub(1)]
            .iter()
            .map(|h| h.1.as_str())
            .collect::<Vec<_>>()
            .join("/");
        let heading = (!stack.is_empty()).then(|| {
            stack
                .iter()
                .map(|h| h.1.trim_matches(is_python_space))
                .collect::<Vec<_>>()
                .join(" > ")
                .into()
        });
        out.push(MdSection {
            text: body.to_string(),
            start: at + lead,
            header_path: if parents.is_empty() {
                "/".to_string()
            } else {
                format!("/{parents}/")
            },
            heading,
        });
    };
    for line in text.split('\n') {
        let this_line = line_at;
        line_at += line.len() + 1;
        if line.trim_start_matches(is_python_space).starts_with("```") {
            fence = !fence;
            current.push_str(line);
            current.push('\n');
            continue;
        }
        if !fence {
            if let Some((level, title)) = heading_line(line) {
                push(&current, current_at, &stack, &mut out);
                current_at = this_line;
                while stack.last().is_some_and(|h| h.0 >= level) {
                    stack.pop();
                }
                stack.push((level, title.to_string()));
                current = format!("{} {title}\n", "#".repeat(level));
                continue;
            }
        }
        current.push_str(line);
        current.push('\n');
    }
    push(&current, current_at, &stack, &mut out);
    out
}

pub(super) fn markdown(text: &str, size: usize, overlap: usize, counter: &Counter) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut place = Locator::default();
    for sec in md_sections(text) {
        let meta = format!("header_path: {}", sec.header_path);
        let room = size.saturating_sub(counter.count(&meta)).max(1);
        // The section as a slice of the document where its text is one (its heading was written
        // with a single space), so that counting can use the document's tokens.
        let body = text
            .get(sec.start..sec.start + sec.text.len())
            .filter(|t| *t == sec.text)
            .unwrap_or(&sec.text);
        let body_at = counter.offset_in_doc(body);
        for (s, e) in sentence_split(body, room, overlap, counter) {
            let mut c = match body_at {
                // A slice of the document is searched for from its own place (`find_slice`).
                Some(at) => place.slice(text, at + s, at + e),
                None => place.chunk(text, &body[s..e]),
            };
            c.heading = sec.heading.clone();
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_sections_and_paths() {
        let s = md_sections("intro\n# A\ntext\n## B\n```\n# not\n```\nmore\n# C\nend");
        let got: Vec<(&str, &str)> = s
            .iter()
            .map(|s| (s.text.as_str(), s.header_path.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("intro", "/"),
                ("# A\ntext", "/"),
                ("## B\n```\n# not\n```\nmore", "/A/"),
                ("# C\nend", "/")
            ]
        );
        assert_eq!(s[2].heading.as_deref().map(String::as_str), Some("A > B"));
    }

    #[test]
    fn markdown_sections_know_where_they_start() {
        let t = "  intro\n# A\ntext\n##\tB\nmore\n";
        let s = md_sections(t);
        assert_eq!(&t[s[0].start..s[0].start + s[0].text.len()], "intro");
        assert_eq!(&t[s[1].start..s[1].start + s[1].text.len()], "# A\ntext");
        // The parser writes the tab heading back with a space: no longer the document's slice.
        assert_eq!(s[2].text, "## B\nmore");
        assert_ne!(&t[s[2].start..s[2].start + s[2].text.len()], s[2].text);
    }
}
