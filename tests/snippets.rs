//! "Copy as code" gives the workbench's chunks: each Python snippet `chunkscope knobs --as`
//! prints is run for real, on example files, and its chunks must equal the workbench's for the
//! same knobs. LangChain runs in CHUNKSCOPE_PYTHON (the .venv of scripts/test.sh); semantic-text-
//! splitter, semchunk, Haystack and chonkie in CHUNKSCOPE_SPLITTERS_PYTHON (its .venv-splitters);
//! LlamaIndex in CHUNKSCOPE_REF_PYTHON (its .venv-ref).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use chunkscope_core::chunk::snippet::{snippet, Framework};
use chunkscope_core::chunk::{ChunkSettings, Preset, Strategy};
use chunkscope_core::corpus::{Corpus, CorpusRules};
use chunkscope_core::engine::Engine;
use chunkscope_core::tokenize::Unit;
use chunkscope_core::window::WindowSpec;
use common::{model, repo};

/// A Markdown file and a plain text file of the example corpus.
const FILES: [&str; 2] = ["guides/incident-handbook.md", "notes/oncall-faq.txt"];

/// The example corpus, read and tokenized once.
fn engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| {
        let corpus = Corpus::load(&repo().join("examples"), &CorpusRules::default()).unwrap();
        Engine::new(model().clone(), common::tokenizer(), corpus).unwrap()
    })
}

/// The workbench's chunk texts of each of `FILES` for `s`.
fn workbench_chunks(s: &ChunkSettings) -> Vec<Vec<String>> {
    let e = engine();
    let chunking = e
        .chunk_all(s, &std::sync::atomic::AtomicBool::new(false))
        .expect("not cancelled");
    FILES
        .iter()
        .map(|path| {
            let f = chunking
                .files
                .iter()
                .find(|f| e.corpus.docs[f.doc].path == *path)
                .unwrap_or_else(|| panic!("{path} was read"));
            let doc = &e.corpus.docs[f.doc];
            assert_eq!(
                doc.text,
                std::fs::read_to_string(repo().join("examples").join(path)).unwrap(),
                "{path}: the workbench reads the file as it is"
            );
            f.chunks
                .iter()
                .map(|c| c.text(&doc.text).to_string())
                .collect()
        })
        .collect()
}

/// A folder of this test process's own for snippets and tiktoken's cache.
fn scratch() -> &'static Path {
    static D: OnceLock<PathBuf> = OnceLock::new();
    D.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("chunkscope-snippets-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

/// tiktoken's cache holding cl100k_base, copied from the ranks file tiktoken-rs bundles (the same
/// file), so that `tiktoken.get_encoding("cl100k_base")` needs no network. `None` when the cargo
/// registry has no tiktoken-rs source: tiktoken then uses its own cache or downloads.
fn tiktoken_cache() -> Option<PathBuf> {
    static C: OnceLock<Option<PathBuf>> = OnceLock::new();
    C.get_or_init(|| {
        let cargo = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
        let asset = std::fs::read_dir(cargo.join("registry/src"))
            .ok()?
            .flatten()
            .flat_map(|index| {
                std::fs::read_dir(index.path())
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .map(|krate| krate.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("tiktoken-rs-"))
            })
            .map(|p| p.join("assets/cl100k_base.tiktoken"))
            .find(|p| p.is_file())?;
        let dir = scratch().join("tiktoken");
        std::fs::create_dir_all(&dir).ok()?;
        // tiktoken names a cached file by the sha1 of its URL (this one is cl100k_base's).
        std::fs::copy(&asset, dir.join("9b5ad71b2ce5302211f9c61530b329a4922fc6a4")).ok()?;
        Some(dir)
    })
    .clone()
}

/// Run `code` under `python` on each of `FILES`; its chunks, one list per file.
fn run_snippet(python: &Path, name: &str, code: &str) -> Vec<Vec<String>> {
    // Not `haystack.py` or `semchunk.py`: a script named like its library would import itself.
    let script = scratch().join(format!("snippet_{}.py", name.replace('-', "_")));
    std::fs::write(&script, code).unwrap();
    FILES
        .iter()
        .map(|path| {
            let mut cmd = Command::new(python);
            cmd.arg(&script)
                .arg(repo().join("examples").join(path))
                .env("HF_HUB_OFFLINE", "1")
                .env("HAYSTACK_TELEMETRY_ENABLED", "False")
                .env("TOKENIZERS_PARALLELISM", "false");
            if let Some(dir) = tiktoken_cache() {
                cmd.env("TIKTOKEN_CACHE_DIR", dir);
            }
            let out = cmd
                .output()
                .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
            assert!(
                out.status.success(),
                "the {name} snippet failed on {path} under {}:\n{}\n--- snippet ---\n{code}",
                python.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "{name} on {path}: not a JSON list of strings ({e}):\n{}",
                    String::from_utf8_lossy(&out.stdout)
                )
            })
        })
        .collect()
}

/// The snippet for `s` (the strategy's framework; the model by its folder, so the tokenizer loads
/// offline) gives the workbench's chunks on every file.
fn check(python: &Path, name: &str, s: &ChunkSettings) {
    s.validate().unwrap();
    let framework = Framework::for_strategy(s.strategy);
    let model_dir = model().dir.display().to_string();
    let code = snippet(s, WindowSpec::Auto, &model_dir, framework).unwrap();
    let theirs = run_snippet(python, name, &code);
    let ours = workbench_chunks(s);
    for ((path, ours), theirs) in FILES.iter().zip(&ours).zip(&theirs) {
        if ours != theirs {
            let i = ours
                .iter()
                .zip(theirs)
                .position(|(a, b)| a != b)
                .unwrap_or(ours.len().min(theirs.len()));
            let show = |c: Option<&String>| c.map(|t| t.chars().take(200).collect::<String>());
            panic!(
                "{name} ({}) on {path}: workbench {} chunks, snippet {}; first difference at chunk {i}:\n workbench: {:?}\n   snippet: {:?}\n--- snippet ---\n{code}",
                s.label(),
                ours.len(),
                theirs.len(),
                show(ours.get(i)),
                show(theirs.get(i))
            );
        }
    }
    assert!(
        ours.iter().any(|c| c.len() > 1),
        "{name}: every file is one chunk, nothing was split"
    );
    eprintln!(
        "{name} ({}): {} chunks identical over {} files",
        s.label(),
        ours.iter().map(Vec::len).sum::<usize>(),
        FILES.len()
    );
}

fn knobs(strategy: Strategy, unit: Unit, size: usize, overlap: usize) -> ChunkSettings {
    ChunkSettings {
        strategy,
        unit,
        size,
        overlap,
        ..ChunkSettings::default()
    }
}

fn preset(p: Preset) -> ChunkSettings {
    let mut s = ChunkSettings::default();
    p.apply(&mut s);
    s
}

/// CHUNKSCOPE_PYTHON (else .venv) when it has LangChain's splitters, tiktoken and tokenizers.
fn langchain_python() -> Option<PathBuf> {
    common::python_module_or_skip(
        "snippets: langchain",
        "langchain_text_splitters, tiktoken, tokenizers",
    )
    .then(common::python_exe)
}

/// CHUNKSCOPE_SPLITTERS_PYTHON (else .venv-splitters) when it has the splitter libraries;
/// otherwise `test` is reported as skipped (a failure under CI=true).
fn splitters_python(test: &str) -> Option<PathBuf> {
    let exe = std::env::var_os("CHUNKSCOPE_SPLITTERS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv-splitters/bin/python"));
    let ok = Command::new(&exe)
        .args([
            "-c",
            "import semantic_text_splitter, semchunk, haystack, tokenizers, transformers",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        common::skip(
            test,
            &format!(
                "{} cannot import the splitters; run scripts/test.sh (it sets up .venv-splitters) or set CHUNKSCOPE_SPLITTERS_PYTHON",
                exe.display()
            ),
        );
    }
    ok.then_some(exe)
}

#[test]
fn langchain_chars_snippet_gives_the_workbench_chunks() {
    let Some(py) = langchain_python() else {
        return;
    };
    check(&py, "langchain-chars", &preset(Preset::LangchainChars));
    check(
        &py,
        "langchain-chars-small",
        &knobs(Strategy::Langchain, Unit::Chars, 300, 40),
    );
}

#[test]
fn langchain_cl100k_snippet_gives_the_workbench_chunks() {
    let Some(py) = langchain_python() else {
        return;
    };
    check(
        &py,
        "langchain-cl100k",
        &knobs(Strategy::Langchain, Unit::Cl100k, 200, 20),
    );
}

#[test]
fn langchain_tokens_snippet_gives_the_workbench_chunks() {
    let Some(py) = langchain_python() else {
        return;
    };
    check(&py, "langchain-tokens", &preset(Preset::LangchainTokens));
}

#[test]
fn text_splitter_snippet_gives_the_workbench_chunks() {
    let Some(py) = splitters_python("snippets: text-splitter") else {
        return;
    };
    check(&py, "text-splitter", &preset(Preset::TextSplitter));
    check(
        &py,
        "text-splitter-chars",
        &knobs(Strategy::TextSplitter, Unit::Chars, 400, 50),
    );
    check(
        &py,
        "text-splitter-cl100k",
        &knobs(Strategy::TextSplitter, Unit::Cl100k, 64, 0),
    );
}

#[test]
fn semchunk_snippet_gives_the_workbench_chunks() {
    let Some(py) = splitters_python("snippets: semchunk") else {
        return;
    };
    check(&py, "semchunk", &preset(Preset::Semchunk));
    check(
        &py,
        "semchunk-overlap",
        &knobs(Strategy::Semchunk, Unit::Embed, 64, 16),
    );
}

#[test]
fn haystack_snippet_gives_the_workbench_chunks() {
    let Some(py) = splitters_python("snippets: haystack") else {
        return;
    };
    let mut s = preset(Preset::Haystack);
    check(&py, "haystack", &s);
    s.size = 50;
    s.overlap = 10;
    check(&py, "haystack-overlap", &s);
    // RecursiveDocumentSplitter reads NLTK's punkt_tab where NLTK_DATA points, on both sides.
    let mut s = preset(Preset::HaystackRecursive);
    if let Err(e) = s.validate() {
        panic!("haystack-recursive: {e} (scripts/test.sh sets NLTK_DATA)");
    }
    check(&py, "haystack-recursive", &s);
    s.size = 50;
    s.overlap = 10;
    check(&py, "haystack-recursive-overlap", &s);
}

#[test]
fn chonkie_snippets_give_the_workbench_chunks() {
    let Some(py) = splitters_python("snippets: chonkie") else {
        return;
    };
    let has_chonkie = Command::new(&py)
        .args(["-c", "import chonkie"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_chonkie {
        common::skip(
            "snippets: chonkie",
            &format!(
                "{} cannot import chonkie; run scripts/test.sh (it installs chonkie==1.7.0 into .venv-splitters)",
                py.display()
            ),
        );
        return;
    }
    check(&py, "chonkie", &preset(Preset::Chonkie));
    check(
        &py,
        "chonkie-small",
        &knobs(Strategy::Chonkie, Unit::Chars, 300, 0),
    );
    check(&py, "chonkie-tokens", &preset(Preset::ChonkieTokens));
    check(
        &py,
        "chonkie-tokens-overlap",
        &knobs(Strategy::ChonkieTokens, Unit::Chars, 200, 50),
    );
}

/// CHUNKSCOPE_REF_PYTHON (else .venv-ref) when it has llama-index-core; otherwise the test is
/// reported as skipped (a failure under CI=true).
fn llamaindex_python() -> Option<PathBuf> {
    let exe = std::env::var_os("CHUNKSCOPE_REF_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv-ref/bin/python"));
    let ok = Command::new(&exe)
        .args(["-c", "import llama_index.core, tokenizers"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        common::skip(
            "snippets: llamaindex",
            &format!(
                "{} cannot import llama_index.core; run scripts/test.sh (it sets up .venv-ref) or set CHUNKSCOPE_REF_PYTHON",
                exe.display()
            ),
        );
    }
    ok.then_some(exe)
}

#[test]
fn llamaindex_snippets_give_the_workbench_chunks() {
    let Some(py) = llamaindex_python() else {
        return;
    };
    check(&py, "llamaindex", &preset(Preset::LlamaIndex));
    check(
        &py,
        "llamaindex-small",
        &knobs(Strategy::LlamaIndex, Unit::Cl100k, 128, 20),
    );
    check(
        &py,
        "llamaindex-chars",
        &knobs(Strategy::LlamaIndex, Unit::Chars, 400, 50),
    );
    check(&py, "llamaindex-tokens", &preset(Preset::LlamaIndexTokens));
    check(
        &py,
        "llamaindex-tokens-small",
        &knobs(Strategy::LlamaIndexTokens, Unit::Cl100k, 100, 10),
    );
    check(
        &py,
        "llamaindex-markdown",
        &preset(Preset::LlamaIndexMarkdown),
    );
    check(
        &py,
        "llamaindex-markdown-embed",
        &knobs(Strategy::LlamaIndexMarkdown, Unit::Embed, 100, 10),
    );
}

/// `chunkscope knobs --as` prints the core's snippet for the knobs (flags over workbench.toml),
/// the strategy's own framework by default, and fails naming what is missing.
#[test]
fn knobs_command_prints_the_snippet() {
    let config = scratch().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_chunkscope"))
            .arg("knobs")
            .arg("--config")
            .arg(&config)
            .args(args)
            .current_dir(scratch())
            .output()
            .unwrap()
    };
    let model = chunkscope_core::model::DEFAULT_MODEL;
    for (args, settings, framework) in [
        (
            &["--preset", "haystack", "--as", "haystack"][..],
            preset(Preset::Haystack),
            Framework::Haystack,
        ),
        (&[][..], ChunkSettings::default(), Framework::SpringAi),
        (
            &[
                "--preset",
                "chonkie-tokens",
                "--overlap",
                "100",
                "--as",
                "chonkie",
            ][..],
            ChunkSettings {
                overlap: 100,
                ..preset(Preset::ChonkieTokens)
            },
            Framework::Chonkie,
        ),
        (
            &["--preset", "langchain-tokens", "--size", "200"][..],
            ChunkSettings {
                size: 200,
                ..preset(Preset::LangchainTokens)
            },
            Framework::Langchain,
        ),
        (
            &["--preset", "markdown"][..],
            preset(Preset::Markdown),
            Framework::Toml,
        ),
        (
            &["--preset", "llamaindex-markdown", "--size", "512"][..],
            ChunkSettings {
                size: 512,
                ..preset(Preset::LlamaIndexMarkdown)
            },
            Framework::LlamaIndex,
        ),
    ] {
        let out = run(args);
        assert!(
            out.status.success(),
            "knobs {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            snippet(&settings, WindowSpec::Auto, model, framework).unwrap(),
            "knobs {args:?}"
        );
    }
    for (args, says) in [
        (
            &["--as", "haystack"][..],
            "--as haystack needs the haystack strategy (current: spring-ai)",
        ),
        (
            &["--as", "llamaindex"][..],
            "--as llamaindex needs the llamaindex strategy (current: spring-ai); set it with --strategy llamaindex or --preset llamaindex",
        ),
        (
            &["--as", "chonkie"][..],
            "--as chonkie needs the chonkie strategy (current: spring-ai); set it with --strategy chonkie or --preset chonkie",
        ),
        (&["--as", "crewai"][..], "unknown framework 'crewai'"),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "knobs {args:?}: {err}");
        assert!(err.contains(says), "knobs {args:?}: {err}");
        assert!(out.stdout.is_empty(), "knobs {args:?} printed a snippet");
    }
}
