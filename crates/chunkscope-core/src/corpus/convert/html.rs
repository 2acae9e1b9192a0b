//! HTML and XHTML to Markdown (htmd).

use htmd::HtmlToMarkdown;

/// HTML to Markdown: headings, paragraphs, lists, tables and code blocks kept; scripts, styles
/// and navigation chrome dropped; the page's `main` (else `article`) when it has one.
pub fn html_to_markdown(html: &str) -> Result<String, String> {
    let converter = HtmlToMarkdown::builder()
        .skip_tags(vec![
            "head", "script", "style", "noscript", "template", "nav", "footer", "aside", "svg",
            "form", "button",
        ])
        .build();
    converter
        .convert(main_part(html))
        .map(|md| md.trim().to_string() + "\n")
        .map_err(|e| format!("HTML conversion failed: {e}"))
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
}
