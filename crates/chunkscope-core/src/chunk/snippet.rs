//! "Copy as code": the knobs as the snippet that gives the same chunks in the user's own pipeline.
//!
//! Each Python snippet is a complete program: the imports, the splitter built with the current
//! size, overlap and unit (the embedder's tokenizer loaded by its hub id, or from its folder), a
//! `split(text) -> list[str]`, and a `__main__` that prints the chunks of the file named on the
//! command line as JSON. The constructions are the ones chunkscope's parity tests check chunk for
//! chunk (tests/reference/langchain_split.py, splitters_ref.py): LangChain's
//! RecursiveCharacterTextSplitter, semantic-text-splitter, semchunk, Haystack's
//! DocumentSplitter, chonkie's RecursiveChunker and TokenChunker, and LlamaIndex's
//! SentenceSplitter, TokenTextSplitter and MarkdownNodeParser (tests/reference/llamaindex_ref.py). Spring AI is Java: the `TokenTextSplitter` builder of Spring AI 2.0. TOML is
//! what `ctrl-s` writes into workbench.toml.
//!
//! A framework reproduces one strategy; asking for it with another strategy is an error that
//! names the strategy it needs.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use super::{ChunkSettings, SettingsError, Strategy, LANGCHAIN_SEPARATORS};
use crate::tokenize::Unit;
use crate::window::WindowSpec;

/// Where the snippet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framework {
    Langchain,
    LlamaIndex,
    Haystack,
    Chonkie,
    Semchunk,
    TextSplitter,
    SpringAi,
    Toml,
}

impl Framework {
    pub const ALL: [Framework; 8] = [
        Framework::Langchain,
        Framework::LlamaIndex,
        Framework::Haystack,
        Framework::Chonkie,
        Framework::Semchunk,
        Framework::TextSplitter,
        Framework::SpringAi,
        Framework::Toml,
    ];

    /// The word `--as` takes.
    pub fn name(self) -> &'static str {
        match self {
            Framework::Langchain => "langchain",
            Framework::LlamaIndex => "llamaindex",
            Framework::Haystack => "haystack",
            Framework::Chonkie => "chonkie",
            Framework::Semchunk => "semchunk",
            Framework::TextSplitter => "text-splitter",
            Framework::SpringAi => "spring-ai",
            Framework::Toml => "toml",
        }
    }

    /// The framework as its users call it.
    pub fn title(self) -> &'static str {
        match self {
            Framework::Langchain => "LangChain",
            Framework::LlamaIndex => "LlamaIndex",
            Framework::Haystack => "Haystack",
            Framework::Chonkie => "chonkie",
            Framework::Semchunk => "semchunk",
            Framework::TextSplitter => "semantic-text-splitter",
            Framework::SpringAi => "Spring AI",
            Framework::Toml => "workbench.toml",
        }
    }

    /// The snippet's language.
    pub fn language(self) -> &'static str {
        match self {
            Framework::SpringAi => "Java",
            Framework::Toml => "TOML",
            _ => "Python",
        }
    }

    /// The framework whose splitter a strategy reproduces; workbench.toml for chunkscope's own
    /// strategies (markdown, maxmin, recursive, fixed), which no framework has.
    pub fn for_strategy(strategy: Strategy) -> Framework {
        match strategy {
            Strategy::SpringAi => Framework::SpringAi,
            Strategy::Langchain => Framework::Langchain,
            Strategy::TextSplitter => Framework::TextSplitter,
            Strategy::Semchunk => Framework::Semchunk,
            Strategy::Haystack | Strategy::HaystackRecursive => Framework::Haystack,
            Strategy::Chonkie | Strategy::ChonkieTokens => Framework::Chonkie,
            Strategy::LlamaIndex | Strategy::LlamaIndexTokens | Strategy::LlamaIndexMarkdown => {
                Framework::LlamaIndex
            }
            Strategy::Markdown | Strategy::MaxMin | Strategy::Recursive | Strategy::Fixed => {
                Framework::Toml
            }
        }
    }

    /// The strategies this framework's snippet reproduces, the one to suggest first (empty: any,
    /// for TOML; or none yet).
    fn needs(self) -> &'static [Strategy] {
        match self {
            Framework::Langchain => &[Strategy::Langchain],
            Framework::Haystack => &[Strategy::Haystack, Strategy::HaystackRecursive],
            Framework::Semchunk => &[Strategy::Semchunk],
            Framework::TextSplitter => &[Strategy::TextSplitter],
            Framework::SpringAi => &[Strategy::SpringAi],
            Framework::Chonkie => &[Strategy::Chonkie, Strategy::ChonkieTokens],
            Framework::LlamaIndex => &[
                Strategy::LlamaIndex,
                Strategy::LlamaIndexTokens,
                Strategy::LlamaIndexMarkdown,
            ],
            Framework::Toml => &[],
        }
    }
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Framework {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "langchain" => Ok(Framework::Langchain),
            "llamaindex" | "llama-index" | "llama_index" => Ok(Framework::LlamaIndex),
            "haystack" => Ok(Framework::Haystack),
            "chonkie" => Ok(Framework::Chonkie),
            "semchunk" => Ok(Framework::Semchunk),
            "text-splitter" | "text_splitter" | "semantic-text-splitter" => {
                Ok(Framework::TextSplitter)
            }
            "spring-ai" | "spring_ai" | "springai" => Ok(Framework::SpringAi),
            "toml" | "workbench.toml" => Ok(Framework::Toml),
            _ => Err(format!(
                "unknown framework '{s}' (expected langchain, llamaindex, haystack, chonkie, semchunk, text-splitter, spring-ai or toml)"
            )),
        }
    }
}

/// Why there is no snippet for these knobs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SnippetError {
    #[error("--as {framework} needs the {needs} strategy (current: {current}); set it with --strategy {needs} or --preset {preset}")]
    WrongStrategy {
        framework: Framework,
        needs: Strategy,
        current: Strategy,
        preset: &'static str,
    },
    #[error("--as {}: no chunkscope preset reproduces {}'s splitters yet, so no snippet would give the workbench's chunks; --as toml writes the knobs as workbench.toml", .0.name(), .0.title())]
    NoPreset(Framework),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("--as spring-ai: the punctuation mark {0:?} is not one Java char (Spring AI takes a List<Character>)")]
    JavaChar(char),
    #[error("--as toml: {0}")]
    Toml(String),
}

/// The snippet that reproduces `settings` in `framework`. `model_id` is the embedder (a hub id,
/// or a local folder) whose tokenizer sizes chunks in the embed unit; `window` goes into the TOML.
pub fn snippet(
    settings: &ChunkSettings,
    window: WindowSpec,
    model_id: &str,
    framework: Framework,
) -> Result<String, SnippetError> {
    // The user's pipeline needs the knobs to make sense, not this machine's data files.
    settings.validate_knobs()?;
    if let Some(&needs) = framework.needs().first() {
        if !framework.needs().contains(&settings.strategy) {
            return Err(SnippetError::WrongStrategy {
                framework,
                needs,
                current: settings.strategy,
                preset: match needs {
                    Strategy::Langchain => "langchain-chars",
                    other => other.name(),
                },
            });
        }
    }
    let s = settings;
    Ok(match framework {
        Framework::Toml => {
            let body = crate::config::save::with_knobs("", s, window)
                .map_err(|e| SnippetError::Toml(format!("{e:#}")))?;
            format!("# workbench.toml: chunkscope knobs {}\n{body}", s.label())
        }
        Framework::SpringAi => spring_ai(s)?,
        Framework::Langchain => langchain(s, model_id),
        Framework::TextSplitter => text_splitter(s, model_id),
        Framework::Semchunk => semchunk(s, model_id),
        Framework::Haystack => haystack(s),
        Framework::Chonkie => chonkie(s),
        Framework::LlamaIndex => llamaindex(s, model_id),
    })
}

/// A Python string literal.
fn py_str(s: &str) -> String {
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

/// A Java char literal (octal escapes for control characters: `\u` escapes are read before the
/// lexer, so `'\u000a'` would not compile).
fn java_char(c: char) -> Result<String, SnippetError> {
    Ok(match c {
        '\n' => "'\\n'".into(),
        '\r' => "'\\r'".into(),
        '\t' => "'\\t'".into(),
        '\u{8}' => "'\\b'".into(),
        '\u{c}' => "'\\f'".into(),
        '\'' => "'\\''".into(),
        '\\' => "'\\\\'".into(),
        c if (c as u32) < 0x100 && c.is_control() => format!("'\\{:o}'", c as u32),
        c if (c as u32) > 0xFFFF => return Err(SnippetError::JavaChar(c)),
        c if c.is_control() => format!("'\\u{:04x}'", c as u32),
        c => format!("'{c}'"),
    })
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
fn tokenizer_lines(model_id: &str) -> Vec<String> {
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

/// One Python program: header comments, imports, setup, `split`, and the `__main__` block.
struct Py {
    about: Vec<String>,
    stdlib: Vec<&'static str>,
    imports: Vec<String>,
    setup: Vec<String>,
    split: String,
    markdown: bool,
}

impl Py {
    fn render(mut self, s: &ChunkSettings) -> String {
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

fn langchain(s: &ChunkSettings, model_id: &str) -> String {
    let mut py = Py {
        about: vec![
            "LangChain's RecursiveCharacterTextSplitter (chunkscope's langchain strategy).".into(),
            match s.unit {
                Unit::Chars => "pip install langchain-text-splitters==1.1.3",
                Unit::Cl100k => "pip install langchain-text-splitters==1.1.3 tiktoken",
                Unit::Embed => "pip install langchain-text-splitters==1.1.3 tokenizers",
            }
            .into(),
        ],
        stdlib: vec![],
        imports: vec!["from langchain_text_splitters import RecursiveCharacterTextSplitter".into()],
        setup: vec![],
        split: "def split(text: str) -> list[str]:\n    return splitter.split_text(text)".into(),
        markdown: false,
    };
    let separators = LANGCHAIN_SEPARATORS
        .iter()
        .map(|x| py_str(x))
        .collect::<Vec<_>>()
        .join(", ");
    let mut args = vec![
        format!("chunk_size={}", s.size),
        format!("chunk_overlap={}", s.overlap),
        format!("separators=[{separators}]"),
    ];
    let ctor = match s.unit {
        Unit::Chars => "RecursiveCharacterTextSplitter(",
        Unit::Cl100k => {
            // Special-token text ("<|endoftext|>") counts as ordinary text, as in chunkscope.
            args.insert(0, "encoding_name=\"cl100k_base\"".into());
            args.insert(1, "disallowed_special=()".into());
            "RecursiveCharacterTextSplitter.from_tiktoken_encoder("
        }
        Unit::Embed => {
            py.imports.push("from tokenizers import Tokenizer".into());
            py.setup.extend(tokenizer_lines(model_id));
            py.setup.push("\n".into());
            py.setup.push(COUNT_TOKENS.into());
            py.setup.push("\n".into());
            args.push("length_function=count_tokens".into());
            "RecursiveCharacterTextSplitter("
        }
    };
    py.setup.push(format!("splitter = {ctor}"));
    for a in args {
        py.setup.push(format!("    {a},"));
    }
    py.setup.push(")".into());
    py.render(s)
}

fn text_splitter(s: &ChunkSettings, model_id: &str) -> String {
    let mut py = Py {
        about: vec![
            "semantic-text-splitter, the Python binding of the text-splitter crate chunkscope links:"
                .into(),
            "TextSplitter, and MarkdownSplitter for Markdown files.".into(),
            match s.unit {
                Unit::Embed => "pip install semantic-text-splitter==0.33.1 tokenizers",
                _ => "pip install semantic-text-splitter==0.33.1",
            }
            .into(),
        ],
        stdlib: vec![],
        imports: vec!["from semantic_text_splitter import MarkdownSplitter, TextSplitter".into()],
        setup: vec![],
        split: "def split(text: str, markdown: bool = False) -> list[str]:\n    return (markdown_splitter if markdown else text_splitter).chunks(text)".into(),
        markdown: true,
    };
    let (ctor, first) = match s.unit {
        Unit::Chars => ("", String::new()),
        Unit::Cl100k => (".from_tiktoken_model", "\"gpt-4\", ".to_string()),
        Unit::Embed => {
            py.imports.push("from tokenizers import Tokenizer".into());
            py.setup.extend(tokenizer_lines(model_id));
            py.setup.push(String::new());
            (".from_huggingface_tokenizer", "tokenizer, ".to_string())
        }
    };
    for (var, class) in [
        ("text_splitter", "TextSplitter"),
        ("markdown_splitter", "MarkdownSplitter"),
    ] {
        py.setup.push(format!(
            "{var} = {class}{ctor}({first}{}, overlap={})",
            s.size, s.overlap
        ));
    }
    py.render(s)
}

fn semchunk(s: &ChunkSettings, model_id: &str) -> String {
    let mut py = Py {
        about: vec![
            "semchunk's chunker (chunkscope's semchunk strategy).".into(),
            match (s.unit, s.size) {
                (Unit::Embed, 0) => "pip install semchunk==4.1.1 tokenizers transformers",
                (Unit::Embed, _) => "pip install semchunk==4.1.1 tokenizers",
                (Unit::Cl100k, _) => "pip install semchunk==4.1.1 tiktoken",
                (Unit::Chars, _) => "pip install semchunk==4.1.1",
            }
            .into(),
        ],
        stdlib: vec![],
        imports: vec!["import semchunk".into()],
        setup: vec![],
        split: if s.overlap > 0 {
            format!(
                "def split(text: str) -> list[str]:\n    return chunker(text, overlap={})",
                s.overlap
            )
        } else {
            "def split(text: str) -> list[str]:\n    return chunker(text)".into()
        },
        markdown: false,
    };
    let counter = match s.unit {
        Unit::Chars => "len",
        Unit::Cl100k => {
            py.imports.push("import tiktoken".into());
            py.setup
                .push("encoding = tiktoken.get_encoding(\"cl100k_base\")".into());
            py.setup.push("\n".into());
            py.setup.push(
                "def count_tokens(text: str) -> int:\n    return len(encoding.encode_ordinary(text))"
                    .into(),
            );
            py.setup.push("\n".into());
            "count_tokens"
        }
        Unit::Embed => {
            py.imports.push("from tokenizers import Tokenizer".into());
            py.setup.extend(tokenizer_lines(model_id));
            py.setup.push("\n".into());
            py.setup.push(COUNT_TOKENS.into());
            py.setup.push("\n".into());
            "count_tokens"
        }
    };
    let size = if s.size == 0 {
        // validate() allows size 0 only with the embed unit.
        py.imports
            .push("from transformers import AutoTokenizer".into());
        py.setup.push(
            "# chunkerify's own size for the model: model_max_length less the special tokens."
                .into(),
        );
        py.setup.push(
            "chunk_size = semchunk.chunkerify(AutoTokenizer.from_pretrained(MODEL)).chunk_size"
                .into(),
        );
        "chunk_size".to_string()
    } else {
        s.size.to_string()
    };
    py.setup
        .push(format!("chunker = semchunk.chunkerify({counter}, {size})"));
    py.render(s)
}

fn haystack(s: &ChunkSettings) -> String {
    if s.strategy == Strategy::HaystackRecursive {
        return haystack_recursive(s);
    }
    Py {
        about: vec![
            "Haystack's DocumentSplitter by word (chunkscope's haystack strategy).".into(),
            "pip install haystack-ai==3.4.1".into(),
        ],
        stdlib: vec![],
        imports: vec![
            "from haystack import Document".into(),
            "from haystack.components.preprocessors import DocumentSplitter".into(),
        ],
        setup: vec![
            "splitter = DocumentSplitter(".into(),
            "    split_by=\"word\",".into(),
            format!("    split_length={},", s.size),
            format!("    split_overlap={},", s.overlap),
            "    split_threshold=0,".into(),
            ")".into(),
        ],
        split: "def split(text: str) -> list[str]:\n    documents = splitter.run(documents=[Document(content=text)])[\"documents\"]\n    return [d.content for d in documents]".into(),
        markdown: false,
    }
    .render(s)
}

fn haystack_recursive(s: &ChunkSettings) -> String {
    Py {
        about: vec![
            "Haystack's RecursiveDocumentSplitter by word (chunkscope's haystack-recursive strategy).".into(),
            "pip install haystack-ai==3.4.1 nltk==3.10.4".into(),
            "Its sentence level needs NLTK's punkt_tab data (python -m nltk.downloader punkt_tab).".into(),
        ],
        stdlib: vec![],
        imports: vec![
            "from haystack import Document".into(),
            "from haystack.components.preprocessors import RecursiveDocumentSplitter".into(),
        ],
        setup: vec![
            "splitter = RecursiveDocumentSplitter(".into(),
            format!("    split_length={},", s.size),
            format!("    split_overlap={},", s.overlap),
            "    split_unit=\"word\",".into(),
            "    separators=[\"\\n\\n\", \"sentence\", \"\\n\", \" \"],".into(),
            ")".into(),
            "splitter.warm_up()".into(),
        ],
        split: "def split(text: str) -> list[str]:\n    documents = splitter.run(documents=[Document(content=text)])[\"documents\"]\n    return [d.content for d in documents]".into(),
        markdown: false,
    }
    .render(s)
}

fn chonkie(s: &ChunkSettings) -> String {
    let (about, class, args) = if s.strategy == Strategy::ChonkieTokens {
        (
            "chonkie's TokenChunker with its character tokenizer (chunkscope's chonkie-tokens strategy).",
            "TokenChunker",
            vec![
                format!("    chunk_size={},", s.size),
                format!("    chunk_overlap={},", s.overlap),
            ],
        )
    } else {
        (
            "chonkie's RecursiveChunker with its default rules and character tokenizer (chunkscope's chonkie strategy).",
            "RecursiveChunker",
            vec![
                format!("    chunk_size={},", s.size),
                format!(
                    "    min_characters_per_chunk={},",
                    super::CHONKIE_MIN_CHARS
                ),
            ],
        )
    };
    let mut setup = vec![
        format!("chunker = {class}("),
        "    tokenizer=\"character\",".into(),
    ];
    setup.extend(args);
    setup.push(")".into());
    Py {
        about: vec![about.into(), "pip install chonkie==1.7.0".into()],
        stdlib: vec![],
        imports: vec![format!("from chonkie import {class}")],
        setup,
        split: "def split(text: str) -> list[str]:\n    return [chunk.text for chunk in chunker.chunk(text)]".into(),
        markdown: false,
    }
    .render(s)
}

fn llamaindex(s: &ChunkSettings, model_id: &str) -> String {
    let (about, class) = match s.strategy {
        Strategy::LlamaIndexTokens => (
            "LlamaIndex's TokenTextSplitter (chunkscope's llamaindex-tokens strategy).",
            "TokenTextSplitter",
        ),
        Strategy::LlamaIndexMarkdown => (
            "LlamaIndex's MarkdownNodeParser, then SentenceSplitter in each section (chunkscope's llamaindex-markdown strategy).",
            "SentenceSplitter",
        ),
        _ => (
            "LlamaIndex's SentenceSplitter (chunkscope's llamaindex strategy).",
            "SentenceSplitter",
        ),
    };
    let mut py = Py {
        about: vec![
            about.into(),
            "Documents without metadata: metadata a reader attaches (file_path) comes off the size."
                .into(),
            match s.unit {
                Unit::Embed => "pip install llama-index-core==0.14.25 tokenizers",
                _ => "pip install llama-index-core==0.14.25",
            }
            .into(),
        ],
        stdlib: vec![],
        imports: vec![
            "from llama_index.core import Document".into(),
            format!("from llama_index.core.node_parser import {class}"),
        ],
        setup: vec![],
        split: String::new(),
        markdown: false,
    };
    let mut args = vec![
        format!("chunk_size={}", s.size),
        format!("chunk_overlap={}", s.overlap),
    ];
    match s.unit {
        // LlamaIndex's default tokenizer: tiktoken's gpt-3.5-turbo encoding, cl100k_base.
        Unit::Cl100k => {}
        Unit::Chars => args.push("tokenizer=list".into()),
        Unit::Embed => {
            py.imports.push("from tokenizers import Tokenizer".into());
            py.setup.extend(tokenizer_lines(model_id));
            py.setup.push("\n".into());
            py.setup.push("def tokens(text: str) -> list[int]:\n    return tokenizer.encode(text, add_special_tokens=False).ids".into());
            py.setup.push("\n".into());
            args.push("tokenizer=tokens".into());
        }
    }
    let splitter = format!("{class}({})", args.join(", "));
    if s.strategy == Strategy::LlamaIndexMarkdown {
        py.imports.push(
            "from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter".into(),
        );
        py.imports
            .retain(|l| l != "from llama_index.core.node_parser import SentenceSplitter");
        py.imports
            .push("from llama_index.core.ingestion import IngestionPipeline".into());
        py.setup.push(format!(
            "pipeline = IngestionPipeline(transformations=[MarkdownNodeParser(), {splitter}])"
        ));
        py.split = "def split(text: str) -> list[str]:\n    nodes = pipeline.run(documents=[Document(text=text)])\n    return [node.get_content() for node in nodes]".into();
    } else {
        py.setup.push(format!("splitter = {splitter}"));
        py.split = "def split(text: str) -> list[str]:\n    nodes = splitter.get_nodes_from_documents([Document(text=text)])\n    return [node.get_content() for node in nodes]".into();
    }
    py.render(s)
}

fn spring_ai(s: &ChunkSettings) -> Result<String, SnippetError> {
    let p = &s.spring_ai;
    let marks = p
        .punctuation
        .iter()
        .map(|&c| java_char(c))
        .collect::<Result<Vec<_>, _>>()?
        .join(", ");
    Ok(format!(
        "// chunkscope knobs: {label}
// Spring AI 2.0's TokenTextSplitter (spring-ai-commons), counting cl100k_base tokens.
import java.util.List;

import com.knuddels.jtokkit.api.EncodingType;
import org.springframework.ai.document.Document;
import org.springframework.ai.transformer.splitter.TokenTextSplitter;

TokenTextSplitter splitter = TokenTextSplitter.builder()
        .withEncodingType(EncodingType.CL100K_BASE)
        .withChunkSize({size})
        .withMinChunkSizeChars({min_chars})
        .withMinChunkLengthToEmbed({min_embed})
        .withMaxNumChunks({max_chunks})
        .withKeepSeparator({keep})
        .withPunctuationMarks(List.of({marks}))
        .build();

List<Document> chunks = splitter.apply(documents);
",
        label = s.label(),
        size = s.size,
        min_chars = p.min_chunk_size_chars,
        min_embed = p.min_chunk_length_to_embed,
        max_chunks = p.max_num_chunks,
        keep = p.keep_separator,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::Preset;
    use crate::config::Config;

    fn preset(p: Preset) -> ChunkSettings {
        let mut s = ChunkSettings::default();
        p.apply(&mut s);
        s
    }

    const MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

    #[test]
    fn names_read_back() {
        for f in Framework::ALL {
            assert_eq!(f.name().parse::<Framework>(), Ok(f));
        }
        let e = "crewai".parse::<Framework>().unwrap_err();
        assert!(e.contains("crewai") && e.contains("langchain"), "{e}");
    }

    #[test]
    fn each_strategy_has_its_framework() {
        for st in Strategy::ALL {
            let f = Framework::for_strategy(st);
            let mut s = ChunkSettings::default();
            s.set_strategy(st);
            if st == Strategy::MaxMin {
                s.overlap = 0;
            }
            assert!(
                snippet(&s, WindowSpec::Auto, MODEL, f).is_ok(),
                "{st}: --as {f}"
            );
            assert!(f.needs().is_empty() || f.needs().contains(&st), "{st}");
        }
    }

    #[test]
    fn spring_ai_defaults_as_java() {
        let s = ChunkSettings::default();
        let java = snippet(&s, WindowSpec::Auto, MODEL, Framework::SpringAi).unwrap();
        assert_eq!(
            java,
            "// chunkscope knobs: spring-ai 800 cl100k overlap 0
// Spring AI 2.0's TokenTextSplitter (spring-ai-commons), counting cl100k_base tokens.
import java.util.List;

import com.knuddels.jtokkit.api.EncodingType;
import org.springframework.ai.document.Document;
import org.springframework.ai.transformer.splitter.TokenTextSplitter;

TokenTextSplitter splitter = TokenTextSplitter.builder()
        .withEncodingType(EncodingType.CL100K_BASE)
        .withChunkSize(800)
        .withMinChunkSizeChars(350)
        .withMinChunkLengthToEmbed(5)
        .withMaxNumChunks(10000)
        .withKeepSeparator(true)
        .withPunctuationMarks(List.of('.', '?', '!', '\\n'))
        .build();

List<Document> chunks = splitter.apply(documents);
"
        );
    }

    #[test]
    fn spring_ai_params_reach_the_builder() {
        let mut s = ChunkSettings {
            size: 64,
            spring_ai: crate::chunk::SpringAiParams {
                min_chunk_size_chars: 40,
                keep_separator: false,
                punctuation: vec!['。', '\'', '\\', '\u{1}'],
                ..Default::default()
            },
            ..ChunkSettings::default()
        };
        let java = snippet(&s, WindowSpec::Auto, MODEL, Framework::SpringAi).unwrap();
        assert!(java.contains(".withChunkSize(64)"), "{java}");
        assert!(java.contains(".withMinChunkSizeChars(40)"), "{java}");
        assert!(java.contains(".withKeepSeparator(false)"), "{java}");
        assert!(
            java.contains("List.of('。', '\\'', '\\\\', '\\1')"),
            "{java}"
        );
        s.spring_ai.punctuation = vec!['😀'];
        assert_eq!(
            snippet(&s, WindowSpec::Auto, MODEL, Framework::SpringAi),
            Err(SnippetError::JavaChar('😀'))
        );
    }

    #[test]
    fn toml_is_what_save_writes_and_reads_back() {
        for p in Preset::ALL {
            let mut s = preset(p);
            s.parents = p == Preset::Markdown;
            let t = snippet(&s, WindowSpec::Tokens(256), MODEL, Framework::Toml).unwrap();
            let body = crate::config::save::with_knobs("", &s, WindowSpec::Tokens(256)).unwrap();
            assert!(t.starts_with("# workbench.toml: chunkscope knobs "), "{t}");
            assert!(t.ends_with(&body), "{t}");
            let c = match Config::parse(&t, "snippet") {
                Ok(c) => c,
                // haystack-recursive reads NLTK's punkt_tab where NLTK_DATA points (scripts/test.sh
                // sets it); without it the file is refused for that reason alone.
                Err(e) if p == Preset::HaystackRecursive => {
                    assert!(
                        matches!(
                            e.problem,
                            crate::config::ConfigProblem::Settings(SettingsError::PunktData(_))
                        ),
                        "{e}"
                    );
                    assert!(t.contains("strategy = \"haystack-recursive\""), "{t}");
                    continue;
                }
                Err(e) => panic!("{e}"),
            };
            assert_eq!((c.chunking, c.window), (s, WindowSpec::Tokens(256)));
        }
    }

    #[test]
    fn a_framework_of_another_strategy_is_refused_with_the_one_it_needs() {
        let s = ChunkSettings::default();
        let e = snippet(&s, WindowSpec::Auto, MODEL, Framework::Haystack).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--as haystack needs the haystack strategy (current: spring-ai); set it with --strategy haystack or --preset haystack"
        );
        let e = snippet(&s, WindowSpec::Auto, MODEL, Framework::Langchain).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--as langchain needs the langchain strategy (current: spring-ai)")
                && e.to_string().contains("--preset langchain-chars"),
            "{e}"
        );
        let s = preset(Preset::Haystack);
        let e = snippet(&s, WindowSpec::Auto, MODEL, Framework::SpringAi).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--as spring-ai needs the spring-ai strategy (current: haystack)"),
            "{e}"
        );
        let s = preset(Preset::Markdown);
        for f in [
            Framework::Langchain,
            Framework::TextSplitter,
            Framework::Semchunk,
        ] {
            let e = snippet(&s, WindowSpec::Auto, MODEL, f).unwrap_err();
            assert!(e.to_string().contains("(current: markdown)"), "{e}");
        }
    }

    #[test]
    fn llamaindex_snippets_build_the_parsers() {
        let py = snippet(
            &preset(Preset::LlamaIndex),
            WindowSpec::Auto,
            MODEL,
            Framework::LlamaIndex,
        )
        .unwrap();
        assert!(
            py.contains("splitter = SentenceSplitter(chunk_size=1024, chunk_overlap=200)"),
            "{py}"
        );
        assert!(
            py.contains("get_nodes_from_documents([Document(text=text)])"),
            "{py}"
        );
        let py = snippet(
            &preset(Preset::LlamaIndexTokens),
            WindowSpec::Auto,
            MODEL,
            Framework::LlamaIndex,
        )
        .unwrap();
        assert!(
            py.contains("splitter = TokenTextSplitter(chunk_size=1024, chunk_overlap=20)"),
            "{py}"
        );
        let mut s = preset(Preset::LlamaIndexMarkdown);
        s.unit = Unit::Chars;
        let py = snippet(&s, WindowSpec::Auto, MODEL, Framework::LlamaIndex).unwrap();
        assert!(py.contains("[MarkdownNodeParser(), SentenceSplitter(chunk_size=1024, chunk_overlap=200, tokenizer=list)]"), "{py}");
        let e = snippet(
            &preset(Preset::Haystack),
            WindowSpec::Auto,
            MODEL,
            Framework::LlamaIndex,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--as llamaindex needs the llamaindex strategy (current: haystack)"),
            "{e}"
        );
    }

    #[test]
    fn invalid_settings_are_refused() {
        let mut s = preset(Preset::LangchainChars);
        s.overlap = s.size;
        assert!(matches!(
            snippet(&s, WindowSpec::Auto, MODEL, Framework::Langchain),
            Err(SnippetError::Settings(_))
        ));
    }

    #[test]
    fn python_snippets_carry_the_knobs() {
        let s = preset(Preset::LangchainChars);
        let py = snippet(&s, WindowSpec::Auto, MODEL, Framework::Langchain).unwrap();
        assert!(
            py.contains("chunk_size=1500,\n    chunk_overlap=150,"),
            "{py}"
        );
        assert!(py.contains(r#"separators=["\n\n", "\n", " ", ""]"#), "{py}");
        assert!(py.contains("def split(text: str) -> list[str]:"), "{py}");
        assert!(py.contains("if __name__ == \"__main__\":"), "{py}");

        let s = preset(Preset::LangchainTokens);
        let py = snippet(&s, WindowSpec::Auto, MODEL, Framework::Langchain).unwrap();
        assert!(py.contains(&format!("MODEL = \"{MODEL}\"")), "{py}");
        assert!(py.contains("Tokenizer.from_pretrained(MODEL)"), "{py}");
        assert!(py.contains("length_function=count_tokens"), "{py}");

        let mut s = preset(Preset::LangchainChars);
        s.unit = Unit::Cl100k;
        let py = snippet(&s, WindowSpec::Auto, MODEL, Framework::Langchain).unwrap();
        assert!(py.contains("from_tiktoken_encoder("), "{py}");

        let s = preset(Preset::Semchunk);
        let py = snippet(&s, WindowSpec::Auto, MODEL, Framework::Semchunk).unwrap();
        assert!(py.contains("AutoTokenizer.from_pretrained"), "{py}");
        assert!(py.contains("return chunker(text)"), "{py}");

        let mut s = preset(Preset::Haystack);
        s.overlap = 10;
        let py = snippet(&s, WindowSpec::Auto, MODEL, Framework::Haystack).unwrap();
        assert!(
            py.contains("split_length=200,\n    split_overlap=10,"),
            "{py}"
        );
    }

    #[test]
    fn a_local_model_folder_is_read_from_its_tokenizer_json() {
        let dir = std::env::temp_dir().join(format!("chunkscope-snippet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = preset(Preset::TextSplitter);
        let py = snippet(
            &s,
            WindowSpec::Auto,
            dir.to_str().unwrap(),
            Framework::TextSplitter,
        )
        .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            py.contains("Tokenizer.from_file(MODEL + \"/tokenizer.json\")"),
            "{py}"
        );
        assert!(!py.contains(&format!("MODEL = \"{MODEL}\"")), "{py}");
    }

    #[test]
    fn python_literals_escape() {
        assert_eq!(py_str("a\"b\\c\n\u{1}é"), r#""a\"b\\c\n\u0001é""#);
    }
}
