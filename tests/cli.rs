//! The headless commands as a user runs them: exit codes, JSONL fields, and clear messages for bad
//! input that name the file and line.

mod common;
#[path = "cli/documents.rs"]
mod documents;
#[path = "cli/search.rs"]
mod search;

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    common::model(); // make sure the model is in place before the binary looks for it
    let mut c = Command::new(env!("CARGO_BIN_EXE_chunkscope"));
    c.env("HF_HUB_OFFLINE", "1");
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output read as JSON Lines.
fn jsonl(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chunkscope-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn examples() -> String {
    common::repo().join("examples").display().to_string()
}

#[test]
fn audit_fail_on_tail_sets_the_exit_code() {
    let over = run(&["audit", &examples(), "--fail-on-tail"]);
    assert_eq!(over.status.code(), Some(1), "{}", stderr(&over));
    let out = String::from_utf8_lossy(&over.stdout);
    assert!(out.contains("worst chunks"), "{out}");
    assert!(out.contains("TOTAL"));

    let fits = run(&[
        "audit",
        &examples(),
        "--fail-on-tail",
        "--strategy",
        "recursive",
        "--unit",
        "embed",
        "--size",
        "100",
        "--overlap",
        "10",
    ]);
    assert_eq!(
        fits.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&fits.stdout)
    );
}

/// The table's columns line up whatever the paths' lengths (a docs site's paths ran past the
/// name column and pushed their rows' figures right).
#[test]
fn audit_table_columns_line_up_past_long_paths() {
    let d = tmp("long-paths");
    let deep = d.join("reference/attributes/diagnostics-and-the-long-named-lints");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(d.join("a.md"), "# A\n\nShort text.\n").unwrap();
    std::fs::write(
        deep.join("unused-results-must-use.md"),
        "# B\n\nMore words here.\n",
    )
    .unwrap();
    let o = run(&["audit", &d.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("file "))
        .take(4)
        .collect();
    assert_eq!(table.len(), 4, "{out}");
    assert!(table[2].starts_with("reference/"), "{out}");
    assert!(table.iter().all(|l| l.len() == table[0].len()), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn audit_json_has_totals_and_files() {
    let o = run(&["audit", &examples(), "--json", "--window", "st"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["window"], 256);
    assert!(v["total"]["chunks"].as_u64().unwrap() > 0);
    assert_eq!(v["files"].as_array().unwrap().len(), common::example_docs());
}

#[test]
fn chunks_jsonl_fields() {
    let o = run(&[
        "chunks",
        &examples(),
        "--format",
        "jsonl",
        "--preset",
        "langchain-tokens",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for key in [
            "file",
            "index",
            "start_byte",
            "end_byte",
            "text",
            "embed_tokens",
            "window",
            "tail_start",
            "tail_tokens",
            "chars",
            "cl100k_tokens",
            "heading",
        ] {
            assert!(v.get(key).is_some(), "missing {key} in {line}");
        }
        assert_eq!(v["window"], 128);
        let tail = v["tail_start"].as_u64();
        assert_eq!(tail.is_some(), v["embed_tokens"].as_u64().unwrap() > 128);
        n += 1;
    }
    assert!(n > 10);
}

#[test]
fn overlap_not_below_size_is_refused_by_name() {
    let o = run(&[
        "audit",
        &examples(),
        "--strategy",
        "fixed",
        "--size",
        "100",
        "--overlap",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("chunking.overlap (100) must be smaller than chunking.size (100)"),
        "{}",
        stderr(&o)
    );
    let o = run(&["audit", &examples(), "--unit", "bytes"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--unit: unknown unit 'bytes'"),
        "{}",
        stderr(&o)
    );
}

/// A window past the model's 512 positions is measured as the 512 the network reads: the same
/// tails as `--window 512`, never fewer.
#[test]
fn a_window_past_the_positions_is_clamped() {
    let audit = |w: &str| {
        let o = run(&["audit", &examples(), "--window", w, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let (huge, max) = (audit("100000"), audit("512"));
    assert_eq!(huge["window"], 512);
    assert_eq!(huge["total"], max["total"]);
}

/// The command line the workbench copies (y) reproduces its knobs: audit reports the same
/// settings for every preset, with metadata and parents on.
#[test]
fn the_copied_command_line_reproduces_the_knobs() {
    use chunkscope_core::chunk::{ChunkSettings, Preset};
    use chunkscope_core::metadata::Use;
    use chunkscope_core::window::WindowSpec;
    for p in Preset::ALL {
        let mut s = ChunkSettings::default();
        p.apply(&mut s);
        s.metadata.heading = Use::Embed;
        s.parents = true;
        let flags = chunkscope_core::config::save::command_flags(&s, WindowSpec::St);
        let mut args = vec!["audit".to_string(), examples(), "--json".into()];
        args.extend(flags);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&args);
        assert!(o.status.success(), "{}: {}", p.name(), stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["settings"], s.label(), "{}", p.name());
        assert_eq!(v["window"], 256);
    }
}

/// A key bound to two actions in one pane stops a headless command with the file and the line.
#[test]
fn a_key_bound_twice_in_a_pane_names_its_line() {
    let d = tmp("keys");
    let cfg = d.join("keys.toml");
    std::fs::write(
        &cfg,
        "[keys]\nhelp = [\"?\"]\n\n[keys.eval]\nmisses = [\"q\"]\n",
    )
    .unwrap();
    let o = run(&["audit", &examples(), "--config", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("keys.toml:5") && e.contains("'q' is bound to both"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn malformed_config_names_file_and_line() {
    let d = tmp("config");
    let cfg = d.join("bad.toml");
    std::fs::write(&cfg, "[chunking]\nstrategy = \"fixed\"\nsize = \"big\"\n").unwrap();
    let o = run(&["audit", &examples(), "--config", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("bad.toml:3"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn missing_model_folder_is_explained() {
    let o = run(&["audit", &examples(), "--model", "/nonexistent/model"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/model"), "{}", stderr(&o));
    let cache = tmp("nocache");
    let o = bin()
        .args(["audit", &examples(), "--model", "someone/not-a-model"])
        .env("HF_HOME", &cache)
        .env("CHUNKSCOPE_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("Tried:") && e.contains("HF_HUB_OFFLINE") && e.contains("--model DIR"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn structure_first_fields_and_flags() {
    // Embedded heading, parent sections, cited file: every field reaches the JSONL.
    let out = run(&[
        "chunks",
        &examples(),
        "--preset",
        "markdown",
        "--embed-metadata",
        "heading",
        "--drop-metadata",
        "index",
        "--parents",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = jsonl(&out);
    assert!(lines.len() > 50);
    for v in &lines {
        let heading = v["heading"].as_str();
        let prefix = v["embedded_prefix"].as_str();
        match heading {
            Some(h) => {
                assert_eq!(prefix, Some(format!("section: {h}\n\n").as_str()));
                assert!(v["prefix_tokens"].as_u64().unwrap() > 0);
            }
            None => assert!(prefix.is_none()),
        }
        assert!(v["metadata"]["file"].is_string(), "file is cited");
        assert!(v["metadata"].get("chunk").is_none(), "index is dropped");
        let parent = v["parent"].as_str().expect("parent id");
        assert!(parent.starts_with(&format!("{}#s", v["file"].as_str().unwrap())));
        assert!(v["parent_start_byte"].as_u64() <= v["start_byte"].as_u64());
        assert!(v["parent_end_byte"].as_u64() >= v["end_byte"].as_u64());
    }
    // Max-Min from the command line: thresholds and a maximum size.
    let ex = examples();
    let maxmin = [
        "chunks",
        &ex,
        "--preset",
        "maxmin",
        "--fixed-threshold",
        "0.3",
        "--size",
        "80",
    ];
    let out = run(&maxmin);
    assert!(out.status.success(), "{}", stderr(&out));
    let mm = jsonl(&out);
    assert!(mm.len() > 20);
    assert!(mm.iter().all(|v| v["unit_len"].as_u64().unwrap() <= 80));
    // Again: every sentence vector is read back from the cache file, the same chunks.
    let again = run(&maxmin);
    assert!(
        stderr(&again).contains("every sentence vector from the cache, nothing embedded"),
        "{}",
        stderr(&again)
    );
    assert_eq!(jsonl(&again), mm);
    // A bad metadata use in workbench.toml names the file and the line.
    let d = tmp("meta");
    std::fs::write(d.join("a.md"), "# A\n\ntext\n").unwrap();
    std::fs::write(
        d.join("workbench.toml"),
        "[metadata]\nfile = \"cite\"\nheading = \"sometimes\"\n",
    )
    .unwrap();
    let config = d.join("workbench.toml");
    let out = run(&[
        "audit",
        d.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("workbench.toml:3") && err.contains("sometimes"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// chunkscope's own cache (models, embeddings, the log) inside the corpus is never read as
/// corpus files: here the model folder linked into it holds a README.md the walk would take.
#[test]
fn own_cache_inside_the_corpus_is_not_corpus() {
    let d = tmp("owncache");
    std::fs::write(d.join("note.md"), "# Note\n\nRotate the keys.\n").unwrap();
    let cache = d.join("cache");
    std::fs::create_dir_all(cache.join("models")).unwrap();
    std::os::unix::fs::symlink(
        &common::model().dir,
        cache.join("models/sentence-transformers--all-MiniLM-L6-v2"),
    )
    .unwrap();
    std::fs::write(cache.join("chunkscope.log"), "a log line\n").unwrap();
    let o = bin()
        .args(["chunks", d.to_str().unwrap()])
        .env("CHUNKSCOPE_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let files: std::collections::BTreeSet<String> = jsonl(&o)
        .iter()
        .map(|r| r["file"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(files.into_iter().collect::<Vec<_>>(), ["note.md"]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    use std::io::Read;
    // Far more output than a pipe holds (64 KiB), so the writer meets the closed pipe.
    let d = tmp("pipe");
    let line = "Keys are rotated every quarter by the on-call engineer. ";
    std::fs::write(d.join("long.md"), line.repeat(40_000)).unwrap();
    let mut child = bin()
        .args(["chunks", &d.display().to_string(), "--format", "jsonl"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?} {}", out.status, stderr(&out));
    assert!(!stderr(&out).contains("Broken pipe"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&d);
}
