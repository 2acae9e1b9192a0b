//! Metadata policy: for each field a chunk carries (file name, heading path, chunk index,
//! front-matter keys), whether it is embedded (prepended to the text the model reads, where it
//! takes window tokens), kept for citation only, or dropped.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// What happens to one metadata field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Use {
    /// Prepended to the embedded text ("heading: Runbook > Rotate keys").
    Embed,
    /// Exported with the chunk for citations; never embedded.
    #[default]
    Cite,
    /// Neither embedded nor exported.
    Drop,
}

impl Use {
    pub fn name(self) -> &'static str {
        match self {
            Use::Embed => "embed",
            Use::Cite => "cite",
            Use::Drop => "drop",
        }
    }
}

impl fmt::Display for Use {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Use {
    type Err = crate::names::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "embed" => Ok(Use::Embed),
            "cite" => Ok(Use::Cite),
            "drop" => Ok(Use::Drop),
            other => Err(crate::names::UnknownName::new(
                "metadata use",
                other,
                "embed, cite or drop",
            )),
        }
    }
}

/// The policy for every field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataPolicy {
    pub file: Use,
    pub heading: Use,
    pub index: Use,
    /// Default for front-matter keys not named in `keys`.
    pub front_matter: Use,
    /// Per front-matter key.
    pub keys: BTreeMap<String, Use>,
}

impl MetadataPolicy {
    /// True when some field may be embedded, so prefixes must be built.
    pub fn embeds_anything(&self) -> bool {
        self.file == Use::Embed
            || self.heading == Use::Embed
            || self.index == Use::Embed
            || self.front_matter == Use::Embed
            || self.keys.values().any(|u| *u == Use::Embed)
    }

    fn key_use(&self, key: &str) -> Use {
        self.keys.get(key).copied().unwrap_or(self.front_matter)
    }

    /// The fields of one chunk with their use, in prefix order, dropped ones left out.
    pub fn fields(
        &self,
        file: &str,
        heading: Option<&str>,
        index: usize,
        front_matter: &[(String, String)],
    ) -> Vec<(String, String, Use)> {
        let mut out = Vec::new();
        let mut add = |name: &str, value: String, u: Use| {
            if u != Use::Drop && !value.is_empty() {
                out.push((name.to_string(), value, u));
            }
        };
        add("file", file.to_string(), self.file);
        add("section", heading.unwrap_or("").to_string(), self.heading);
        add("chunk", index.to_string(), self.index);
        for (k, v) in front_matter {
            add(k, v.clone(), self.key_use(k));
        }
        out
    }

    /// The text prepended to a chunk before embedding: one "name: value" line per embedded field
    /// and a blank line, or `None` when nothing is embedded. It ends in whitespace, so the model's
    /// tokens of prefix + text are the prefix's tokens followed by the text's own.
    pub fn prefix(
        &self,
        file: &str,
        heading: Option<&str>,
        index: usize,
        front_matter: &[(String, String)],
    ) -> Option<String> {
        if !self.embeds_anything() {
            return None;
        }
        let lines: Vec<String> = self
            .fields(file, heading, index, front_matter)
            .into_iter()
            .filter(|f| f.2 == Use::Embed)
            .map(|(k, v, _)| format!("{k}: {v}"))
            .collect();
        (!lines.is_empty()).then(|| format!("{}\n\n", lines.join("\n")))
    }

    /// Short label for the status line, e.g. "embed section+file" or "cite all".
    pub fn label(&self) -> String {
        let mut embedded = Vec::new();
        if self.heading == Use::Embed {
            embedded.push("section".to_string());
        }
        if self.file == Use::Embed {
            embedded.push("file".to_string());
        }
        if self.index == Use::Embed {
            embedded.push("chunk".to_string());
        }
        if self.front_matter == Use::Embed {
            embedded.push("front matter".to_string());
        }
        embedded.extend(
            self.keys
                .iter()
                .filter(|(_, u)| **u == Use::Embed)
                .map(|(k, _)| k.clone()),
        );
        if embedded.is_empty() {
            "none embedded".into()
        } else {
            format!("embed {}", embedded.join("+"))
        }
    }

    /// The `m` key: nothing embedded -> section embedded -> section and file embedded -> back.
    pub fn cycle(&mut self) {
        let (heading, file) = match (self.heading, self.file) {
            (Use::Embed, Use::Embed) => (Use::Cite, Use::Cite),
            (Use::Embed, _) => (Use::Embed, Use::Embed),
            _ => (Use::Embed, Use::Cite),
        };
        self.heading = heading;
        self.file = file;
    }
}

/// Front matter at the very start of a document: a `---` line, `key: value` lines, a closing
/// `---` (or `...`) line. Only scalar values are read; quotes around a value are removed, nested
/// and list values are skipped. Returns the pairs and the byte where the body begins.
pub fn front_matter(text: &str) -> (Vec<(String, String)>, usize) {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = text.len() - body.len();
    let mut lines = body.split_inclusive('\n');
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => return (Vec::new(), 0),
    }
    let mut pos = bom + body.find('\n').map_or(body.len(), |i| i + 1);
    let mut pairs = Vec::new();
    for line in lines {
        pos += line.len();
        let l = line.trim_end();
        if l == "---" || l == "..." {
            return (pairs, pos);
        }
        if line.starts_with([' ', '\t', '-', '#']) || l.is_empty() {
            continue;
        }
        if let Some((k, v)) = l.split_once(':') {
            let k = k.trim();
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
                .unwrap_or(v);
            if !k.is_empty() && !v.is_empty() && !k.contains(' ') {
                pairs.push((k.to_string(), v.to_string()));
            }
        }
    }
    // No closing line: not front matter.
    (Vec::new(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_front_matter() {
        let t = "---\ntitle: \"Rotate keys\"\nowner: ops\ntags:\n  - a\n---\n# Body\n";
        let (pairs, body) = front_matter(t);
        assert_eq!(
            pairs,
            vec![
                ("title".to_string(), "Rotate keys".to_string()),
                ("owner".to_string(), "ops".to_string())
            ]
        );
        assert_eq!(&t[body..], "# Body\n");
        assert_eq!(front_matter("# No front matter\n---\n").0, vec![]);
        assert_eq!(front_matter("---\ntitle: open\n").1, 0);
    }

    #[test]
    fn prefix_holds_embedded_fields_only() {
        let mut p = MetadataPolicy::default();
        assert_eq!(p.prefix("a.md", Some("A > B"), 3, &[]), None);
        p.heading = Use::Embed;
        p.keys.insert("title".into(), Use::Embed);
        p.keys.insert("secret".into(), Use::Drop);
        let fm = vec![
            ("title".to_string(), "T".to_string()),
            ("secret".to_string(), "x".to_string()),
            ("owner".to_string(), "ops".to_string()),
        ];
        assert_eq!(
            p.prefix("a.md", Some("A > B"), 3, &fm).unwrap(),
            "section: A > B\ntitle: T\n\n"
        );
        let cited: Vec<String> = p
            .fields("a.md", Some("A > B"), 3, &fm)
            .into_iter()
            .map(|f| f.0)
            .collect();
        assert_eq!(cited, ["file", "section", "chunk", "title", "owner"]);
        // A chunk with no heading gets no section line, and no prefix when nothing is left.
        p.keys.clear();
        assert_eq!(p.prefix("a.md", None, 0, &[]), None);
    }
}
