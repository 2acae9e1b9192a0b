//! HTML and XHTML to Markdown (htmd).

use std::rc::Rc;

use htmd::{HtmlToMarkdown, Node};

use super::ConvertError;

/// The deepest nesting converted: the Markdown writer recurses once per level (a page nested
/// a few thousand deep overflowed a 2 MB thread stack, which aborts the process). Browsers
/// stop nesting at 512; real pages stay far below either.
const MAX_DEPTH: usize = 256;

/// HTML to Markdown: headings, paragraphs, lists, tables and code blocks kept; scripts, styles
/// and navigation chrome dropped; the page's `main` (else `article`) when it has one.
pub fn html_to_markdown(html: &str) -> Result<String, ConvertError> {
    let converter = HtmlToMarkdown::builder()
        .skip_tags(vec![
            "head", "script", "style", "noscript", "template", "nav", "footer", "aside", "svg",
            "form", "button",
        ])
        .build();
    let tree = converter
        .html_to_tree(main_part(html))
        .map_err(|cause| ConvertError::Html { cause })?;
    if nested_deeper(&tree, MAX_DEPTH) {
        return Err(ConvertError::HtmlTooDeep { limit: MAX_DEPTH });
    }
    Ok(converter.tree_to_markdown(&tree).trim().to_string() + "\n")
}

/// True when some node lies deeper than `limit` below `root` (walked without recursion).
fn nested_deeper(root: &Rc<Node>, limit: usize) -> bool {
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        if depth > limit {
            return true;
        }
        stack.extend(
            node.children
                .borrow()
                .iter()
                .map(|c| (c.clone(), depth + 1)),
        );
    }
    false
}

/// The `<main>` element of a page, else its first `<article>`, else all of it.
fn main_part(html: &str) -> &str {
    let lower = html.to_ascii_lowercase();
    for tag in ["main", "article"] {
        let open = format!("<{tag}");
        let close = format!("</{tag}>");
        if let Some(a) = lower.find(&open) {
            if let Some(b) = lower[a..].find(&close) {
                return &html[a..a + b + close.len()];
            }
        }
    }
    html
}

#[cfg(test)]
mod tests {
    #[test]
    fn html_becomes_markdown_without_chrome() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body><nav>Home | About</nav>\
            <main><h1>Rotate keys</h1><p>Keys are rotated.</p><h2>Staging</h2><ul><li>first</li></ul>\
            <table><tr><th>Plan</th><th>Refund</th></tr><tr><td>Annual</td><td>pro rata</td></tr></table>\
            <script>alert(1)</script></main><footer>(c)</footer></body></html>";
        let md = super::html_to_markdown(html).unwrap();
        assert!(md.starts_with("# Rotate keys"), "{md}");
        assert!(
            md.contains("## Staging") && md.contains("first") && md.contains("| Plan"),
            "{md}"
        );
        for chrome in ["Home | About", "alert", "(c)", "p{}"] {
            assert!(!md.contains(chrome), "{chrome} in {md}");
        }
    }

    #[test]
    fn a_page_nested_thousands_deep_is_a_reason_not_a_crash() {
        // Deeper than the Markdown writer's recursion fits in a 2 MB thread stack (it aborted
        // the process; found by tests/mutations.rs), converted on such a thread.
        let tags = [
            "div",
            "blockquote",
            "ul",
            "li",
            "b",
            "ol",
            "li",
            "p",
            "em",
            "span",
        ];
        let page = move |depth: usize| {
            (0..depth)
                .map(|i| format!("<{}>w{i} ", tags[i % tags.len()]))
                .collect::<String>()
        };
        let (deep, shallow) = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                (
                    super::html_to_markdown(&page(20_000)),
                    super::html_to_markdown(&page(200)),
                )
            })
            .unwrap()
            .join()
            .unwrap();
        let e = deep.unwrap_err();
        assert!(
            matches!(e, super::ConvertError::HtmlTooDeep { limit: 256 }),
            "{e:?}"
        );
        assert!(e.to_string().contains("nested more than 256"), "{e}");
        assert!(shallow.unwrap().contains("w199"));
    }
}
