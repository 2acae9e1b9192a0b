//! HTML and XHTML to Markdown (htmd).

use std::rc::Rc;

use htmd::element_handler::{HandlerResult, Handlers};
use htmd::{Element, HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;

use super::ConvertError;

/// The deepest nesting converted: the Markdown writer recurses once per level (a page nested
/// a few thousand deep overflowed a 2 MB thread stack, which aborts the process). Browsers
/// stop nesting at 512; real pages stay far below either.
const MAX_DEPTH: usize = 256;

/// HTML to Markdown: headings, paragraphs, lists, tables and code blocks kept; scripts, styles
/// and navigation chrome dropped; the page's `main` (else `article`) when it has one. A code
/// block is its text as the reader sees it (links and highlighting spans inside it would be
/// literal Markdown inside a fence), a link without text (an icon button: rustdoc's "Run
/// code") or a heading's permalink (`§`, `¶`, `#` pointing into the page) is dropped with its
/// address, and a link into the page inside a heading (mdBook's and rustdoc's headings link to
/// themselves) is its text. Table cells are not padded to their column's
/// width (htmd pads them: one long cell made every row of a wide table that long, and its
/// separator row as many dashes, each a token of the embedder's).
pub fn html_to_markdown(html: &str) -> Result<String, ConvertError> {
    let converter = HtmlToMarkdown::builder()
        .skip_tags(vec![
            "head", "script", "style", "noscript", "template", "nav", "footer", "aside", "svg",
            "form", "button",
        ])
        .add_handler(vec!["pre"], |_: &dyn Handlers, e: Element| {
            Some(HandlerResult::from(code_block(&e)))
        })
        .add_handler(vec!["table"], |h: &dyn Handlers, e: Element| {
            let table = h.fallback(e)?;
            Some(HandlerResult {
                content: unpadded(&table.content),
                markdown_translated: table.markdown_translated,
            })
        })
        .add_handler(vec!["a"], |h: &dyn Handlers, e: Element| {
            if shows_nothing(e.node) || is_permalink(&e) {
                Some(HandlerResult::from(String::new()))
            } else if into_page(&e) && inside_heading(e.node) {
                Some(h.walk_children(e.node))
            } else {
                h.fallback(e)
            }
        })
        .build();
    let tree = converter
        .html_to_tree(main_part(html))
        .map_err(|cause| ConvertError::Html { cause })?;
    if nested_deeper(&tree, MAX_DEPTH) {
        return Err(ConvertError::HtmlTooDeep { limit: MAX_DEPTH });
    }
    Ok(converter.tree_to_markdown(&tree).trim().to_string() + "\n")
}

/// A Markdown table with each cell trimmed and each separator cell `---`. htmd writes a table as
/// its caption lines, the header row, the separator row and one line a row, a `|` in a cell
/// escaped as `&#124;`: every `|` of a row line is a column edge. Only the lines around a
/// separator row change (a table without headers comes back as its cells' text, which may hold
/// a code block).
fn unpadded(table: &str) -> String {
    let cells = |line: &str| -> Option<Vec<String>> {
        let row = line.strip_prefix('|')?.strip_suffix('|')?;
        Some(row.split('|').map(|c| c.trim().to_string()).collect())
    };
    let separator = |cells: &[String]| {
        cells
            .iter()
            .all(|c| !c.is_empty() && c.bytes().all(|b| b == b'-'))
    };
    let lines: Vec<&str> = table.split('\n').collect();
    let Some(sep) = lines
        .iter()
        .position(|l| cells(l).is_some_and(|c| separator(&c)))
    else {
        return table.to_string();
    };
    let first = if sep > 0 && cells(lines[sep - 1]).is_some() {
        sep - 1
    } else {
        sep
    };
    let last = sep
        + lines[sep..]
            .iter()
            .take_while(|l| cells(l).is_some())
            .count();
    let mut out: Vec<String> = lines[..first].iter().map(|l| l.to_string()).collect();
    for (i, line) in lines[first..last].iter().enumerate() {
        let mut row = cells(line).unwrap_or_default();
        if first + i == sep {
            row.iter_mut().for_each(|c| *c = "---".to_string());
        }
        out.push(format!("| {} |", row.join(" | ")));
    }
    out.extend(lines[last..].iter().map(|l| l.to_string()));
    out.join("\n")
}

/// A `<pre>` as a fenced block of its text: the language from a `language-X` class on it or on
/// its `<code>`, the fence longer than any run of backticks inside.
fn code_block(pre: &Element) -> String {
    let mut text = String::new();
    text_of(pre.node, &mut text);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    // The language: a `language-X` class on the `<pre>`, else on its `<code>`.
    let class_of_pre = pre.attrs.iter().find(|a| &*a.name.local == "class");
    let mut language = class_of_pre.and_then(|a| language_of(&a.value));
    for c in pre.node.children.borrow().iter() {
        if let NodeData::Element { name, attrs, .. } = &c.data {
            if language.is_none() && &*name.local == "code" {
                let attrs = attrs.borrow();
                let class = attrs.iter().find(|a| &*a.name.local == "class");
                language = class.and_then(|a| language_of(&a.value));
            }
        }
    }
    let mut run = 0;
    let mut longest = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!(
        "\n\n{fence}{}\n{text}\n{fence}\n\n",
        language.unwrap_or_default()
    )
}

fn language_of(class: &str) -> Option<String> {
    class
        .split_ascii_whitespace()
        .find_map(|c| c.strip_prefix("language-"))
        .map(str::to_string)
}

/// The text a reader sees in `node`: its text nodes in order, a line break for `<br>`.
fn text_of(node: &Rc<Node>, out: &mut String) {
    let mut stack = vec![node.clone()];
    while let Some(n) = stack.pop() {
        match &n.data {
            NodeData::Text { contents } => out.push_str(&contents.borrow()),
            NodeData::Element { name, .. } if &*name.local == "br" => out.push('\n'),
            _ => {}
        }
        stack.extend(n.children.borrow().iter().rev().cloned());
    }
}

/// True for an element with no text and no image in it.
fn shows_nothing(node: &Rc<Node>) -> bool {
    let mut stack = vec![node.clone()];
    while let Some(n) = stack.pop() {
        match &n.data {
            NodeData::Text { contents } if !contents.borrow().trim().is_empty() => return false,
            NodeData::Element { name, .. } if &*name.local == "img" => return false,
            _ => {}
        }
        stack.extend(n.children.borrow().iter().cloned());
    }
    true
}

/// True for a link into the page whose text is a mark, not words: the `§` rustdoc puts before
/// each heading, Sphinx's `¶` after it, a `#`. Its text would open every section's heading path
/// and chunk.
fn is_permalink(a: &Element) -> bool {
    if !into_page(a) {
        return false;
    }
    let mut text = String::new();
    text_of(a.node, &mut text);
    let text = text.trim();
    text.chars().count() <= 2 && !text.chars().any(char::is_alphanumeric)
}

/// True for a link whose address is a place in this page (`#...`).
fn into_page(a: &Element) -> bool {
    a.attrs
        .iter()
        .any(|at| &*at.name.local == "href" && at.value.starts_with('#'))
}

/// True for a node inside an `h1`-`h6`.
fn inside_heading(node: &Rc<Node>) -> bool {
    let parent = |n: &Rc<Node>| {
        let weak = n.parent.take();
        let up = weak.as_ref().and_then(|w| w.upgrade());
        n.parent.set(weak);
        up
    };
    let mut at = parent(node);
    while let Some(n) = at {
        if let NodeData::Element { name, .. } = &n.data {
            if matches!(&*name.local, "h1" | "h2" | "h3" | "h4" | "h5" | "h6") {
                return true;
            }
        }
        at = parent(&n);
    }
    false
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
    fn code_blocks_are_text_and_links_that_say_nothing_go() {
        // rustdoc's shape: links and highlighting inside a code block, a "Run code" link
        // without text, a permalink before the heading (Sphinx's after it), a link into the
        // page with words.
        let html = "<main><h2><a href=\"#examples\">§</a>Examples</h2>\
            <h3>Panics<a class=\"headerlink\" href=\"#panics\" title=\"Link\">¶</a></h3>\
            <h2 id=\"intro\"><a class=\"header\" href=\"#intro\">The <code>Vec</code> intro</a></h2>\
            <h4>pub fn <a href=\"#method.new\">new</a>() -&gt; <a href=\"struct.Vec.html\">Vec</a></h4>\
            <p>See <a href=\"#examples\">the examples</a> and <a href=\"#n1\">1</a>.</p>\
            <pre class=\"rust item-decl\"><code>pub struct Vec&lt;T, A = <a href=\"../alloc/struct.Global.html\" \
            title=\"struct std::alloc::Global\">Global</a>&gt;<br>{ <span class=\"comment\">/* private_fields */</span> }</code></pre>\
            <pre><code class=\"language-sh\">echo `date` ```four```\n</code></pre>\
            <p>Run it <a class=\"test-arrow\" href=\"https://play.example/?code=fn+main\" title=\"Run code\"> </a>\
            or see <a href=\"vec.html\">the <em>vec</em> module</a> \
            <a href=\"logo.html\"><img src=\"logo.png\" alt=\"logo\"></a>.</p></main>";
        let md = super::html_to_markdown(html).unwrap();
        assert!(
            md.contains("```\npub struct Vec<T, A = Global>\n{ /* private_fields */ }\n```"),
            "{md}"
        );
        assert!(md.contains("````sh\necho `date` ```four```\n````"), "{md}");
        assert!(
            !md.contains("alloc/struct.Global") && !md.contains("play.example"),
            "{md}"
        );
        assert!(md.contains("## Examples\n"), "{md}");
        assert!(md.contains("### Panics\n"), "{md}");
        assert!(md.contains("## The `Vec` intro\n"), "{md}");
        assert!(
            md.contains("#### pub fn new() -> [Vec](struct.Vec.html)\n"),
            "{md}"
        );
        assert!(
            md.contains("See [the examples](#examples) and [1](#n1)."),
            "{md}"
        );
        assert!(md.contains("[the *vec* module](vec.html)"), "{md}");
        assert!(md.contains("[![logo](logo.png)](logo.html)"), "{md}");
    }

    #[test]
    fn table_cells_are_not_padded() {
        let long = "word ".repeat(60);
        let html = format!(
            "<table><caption>Rules</caption><tr><th>Rule</th><th>Tests</th><th>Uncovered</th></tr>\
             <tr><td>a|b</td><td>1</td><td>{long}</td></tr><tr><td>c</td><td></td><td>x</td></tr></table>"
        );
        let md = super::html_to_markdown(&html).unwrap();
        assert_eq!(
            md,
            format!(
                "Rules\n| Rule | Tests | Uncovered |\n| --- | --- | --- |\n\
                 | a&#124;b | 1 | {} |\n| c |  | x |\n",
                long.trim_end()
            ),
            "{md}"
        );
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
