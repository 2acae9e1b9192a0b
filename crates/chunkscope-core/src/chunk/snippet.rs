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

mod chonkie;
mod haystack;
mod langchain;
mod llamaindex;
mod python;
mod semchunk;
mod spring_ai;
mod text_splitter;

use std::fmt;
use std::str::FromStr;

use super::{ChunkSettings, SettingsError, Strategy};
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
    type Err = crate::names::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
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
            _ => Err(crate::names::UnknownName::new(
                "framework",
                s,
                "langchain, llamaindex, haystack, chonkie, semchunk, text-splitter, spring-ai or toml",
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
        Framework::SpringAi => spring_ai::snippet(s)?,
        Framework::Langchain => langchain::snippet(s, model_id),
        Framework::TextSplitter => text_splitter::snippet(s, model_id),
        Framework::Semchunk => semchunk::snippet(s, model_id),
        Framework::Haystack => haystack::snippet(s),
        Framework::Chonkie => chonkie::snippet(s),
        Framework::LlamaIndex => llamaindex::snippet(s, model_id),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::Preset;
    use crate::config::Config;
    use crate::tokenize::Unit;

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
        let e = "crewai".parse::<Framework>().unwrap_err().to_string();
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
}
