//! What every Python snippet shares: string literals, the embedder's tokenizer, and the
//! program's layout (header, imports, setup, `split`, `__main__`).

use std::path::Path;

use crate::chunk::ChunkSettings;

/// A Python string literal.
pub(super) fn py_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if c.is_control() => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// How the embedder's tokenizer is loaded: from its folder when `model_id` is one (as chunkscope
/// looks a model up), else from the hub.
fn local_folder(model_id: &str) -> Option<String> {
    let p = Path::new(model_id);
    p.is_dir().then(|| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    })
}

/// `MODEL = ...`: the embedder's hub id, or its folder (absolute) when `model_id` is one.
fn model_line(model_id: &str) -> String {
    let id = local_folder(model_id).unwrap_or_else(|| model_id.to_string());
    format!("MODEL = {}", py_str(&id))
}

/// The embedder's tokenizer (after `model_line`), counting as chunkscope's embed unit does.
pub(super) fn tokenizer_lines(model_id: &str) -> Vec<String> {
    let load = if local_folder(model_id).is_some() {
        "tokenizer = Tokenizer.from_file(MODEL + \"/tokenizer.json\")"
    } else {
        "tokenizer = Tokenizer.from_pretrained(MODEL)"
    };
    vec![
        model_line(model_id),
        load.into(),
        "# Content tokens only, never truncated or padded: what chunkscope's embed unit counts."
            .into(),
        "tokenizer.no_truncation()".into(),
        "tokenizer.no_padding()".into(),
    ]
}

const COUNT_TOKENS: &str = "def count_tokens(text: str) -> int:\n    return len(tokenizer.encode(text, add_special_tokens=False).ids)";

/// The embedder's tokenizer and a `count_tokens` over it, for splitters that take a length
/// function.
pub(super) fn count_tokens_setup(py: &mut Py, model_id: &str) {
    py.imports.push("from tokenizers import Tokenizer".into());
    py.setup.extend(tokenizer_lines(model_id));
    py.setup.push("\n".into());
    py.setup.push(COUNT_TOKENS.into());
    py.setup.push("\n".into());
}

/// One Python program: header comments, imports, setup, `split`, and the `__main__` block.
pub(super) struct Py {
    pub(super) about: Vec<String>,
    pub(super) stdlib: Vec<&'static str>,
    pub(super) imports: Vec<String>,
    pub(super) setup: Vec<String>,
    pub(super) split: String,
    pub(super) markdown: bool,
}

impl Py {
    pub(super) fn render(mut self, s: &ChunkSettings) -> String {
        let mut out = format!("# chunkscope knobs: {}\n", s.label());
        for l in &self.about {
            out.push_str(&format!("# {l}\n"));
        }
        self.stdlib.extend(["json", "sys"]);
        self.stdlib.sort();
        self.stdlib.dedup();
        for m in &self.stdlib {
            out.push_str(&format!("import {m}\n"));
        }
        out.push('\n');
        // isort's order: `import x` before `from x import y`, each alphabetical.
        self.imports
            .sort_by(|a, b| (a.starts_with("from "), a).cmp(&(b.starts_with("from "), b)));
        self.imports.dedup();
        for l in &self.imports {
            out.push_str(l);
            out.push('\n');
        }
        out.push('\n');
        for l in &self.setup {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str("\n\n");
        out.push_str(&self.split);
        out.push_str("\n\n\n");
        out.push_str("if __name__ == \"__main__\":\n");
        out.push_str("    # The file's text as chunkscope reads a .md or .txt file (a BOM dropped, line ends kept).\n");
        out.push_str("    path = sys.argv[1]\n");
        out.push_str("    with open(path, encoding=\"utf-8-sig\", newline=\"\") as f:\n");
        out.push_str("        text = f.read()\n");
        if self.markdown {
            out.push_str(
                "    markdown = path.lower().endswith((\".md\", \".markdown\", \".mdx\"))\n",
            );
            out.push_str("    print(json.dumps(split(text, markdown), ensure_ascii=False))\n");
        } else {
            out.push_str("    print(json.dumps(split(text), ensure_ascii=False))\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_escape() {
        assert_eq!(py_str("a\"b\\c\n\u{1}é"), r#""a\"b\\c\n\u0001é""#);
    }
}
