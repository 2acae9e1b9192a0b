//! Documents as the commands read them: encodings, HTML as Markdown, files skipped with their
//! reasons and the corpus left untouched.

use super::*;

/// A UTF-8 BOM, UTF-16 (both byte orders) and invalid UTF-8: chunk offsets index the file's
/// bytes, verbatim chunks are exactly those bytes, and the BOM file's first heading is found.
#[test]
fn offsets_index_the_files_bytes_whatever_the_encoding() {
    let d = tmp("encodings");
    let body = "# Rotate keys\n\nKeys are rotated every ninety days. Ask the on-call engineer first.\n\n## Staging\n\nStaging goes first, then production.\n";
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(body.as_bytes());
    std::fs::write(d.join("bom.md"), &bom).unwrap();
    for (name, le) in [("le.md", true), ("be.md", false)] {
        let mut b: Vec<u8> = if le {
            vec![0xFF, 0xFE]
        } else {
            vec![0xFE, 0xFF]
        };
        for u in body.encode_utf16() {
            b.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
        }
        std::fs::write(d.join(name), b).unwrap();
    }
    let mut bad = body.as_bytes().to_vec();
    bad.splice(20..20, [0xff, 0xfe]);
    std::fs::write(d.join("bad.md"), &bad).unwrap();
    let o = run(&[
        "chunks",
        d.to_str().unwrap(),
        "--preset",
        "markdown",
        "--size",
        "12",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = jsonl(&o);
    for name in ["bom.md", "le.md", "be.md", "bad.md"] {
        let file = std::fs::read(d.join(name)).unwrap();
        let chunks: Vec<_> = lines.iter().filter(|l| l["file"] == name).collect();
        assert!(chunks.len() > 1, "{name}");
        assert_eq!(
            chunks[0]["heading"], "Rotate keys",
            "{name}: the first heading is found"
        );
        for c in &chunks {
            let (s, e) = (
                c["start_byte"].as_u64().unwrap() as usize,
                c["end_byte"].as_u64().unwrap() as usize,
            );
            assert!(
                s <= e && e <= file.len(),
                "{name}: {s}..{e} of {}",
                file.len()
            );
            if c["verbatim"] == true {
                assert_eq!(
                    &file[s..e],
                    c["text"].as_str().unwrap().as_bytes(),
                    "{name}"
                );
            }
        }
        let expect_verbatim = matches!(name, "bom.md");
        assert_eq!(
            chunks.iter().all(|c| c["verbatim"] == true),
            expect_verbatim,
            "{name}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// An HTML page is read as Markdown: `text` prints what is read, and the chunks' offsets index
/// that text (`source_format` html).
#[test]
fn html_is_read_as_markdown_and_text_shows_it() {
    let d = tmp("html");
    std::fs::write(
        d.join("page.html"),
        "<html><head><style>x{}</style></head><body><nav>Home</nav><main><h1>Rotate keys</h1>\
         <p>Keys are rotated every ninety days.</p><h2>Staging</h2><p>Staging goes first.</p>\
         </main></body></html>",
    )
    .unwrap();
    let o = run(&["text", d.join("page.html").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.starts_with("# Rotate keys") && text.contains("## Staging"),
        "{text}"
    );
    assert!(!text.contains("Home") && !text.contains("x{}"), "{text}");
    let o = run(&["chunks", d.to_str().unwrap(), "--preset", "markdown"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = jsonl(&o);
    assert!(!lines.is_empty());
    for c in &lines {
        assert_eq!(c["source_format"], "html");
        let (s, e) = (
            c["start_byte"].as_u64().unwrap() as usize,
            c["end_byte"].as_u64().unwrap() as usize,
        );
        assert_eq!(&text[s..e], c["text"].as_str().unwrap());
    }
    assert_eq!(lines.last().unwrap()["heading"], "Rotate keys > Staging");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_files_are_skipped_with_reasons_and_corpus_is_untouched() {
    let d = tmp("corpus");
    std::fs::write(d.join("ok.md"), "# Title\n\nSome text.").unwrap();
    std::fs::write(d.join("bin.txt"), b"\x00\x01\x02binary").unwrap();
    std::fs::write(d.join("latin1.txt"), b"caf\xe9 cr\xe8me").unwrap();
    let before: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let o = run(&["audit", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("skipped bin.txt: binary"), "{out}");
    assert!(out.contains("latin1.txt: invalid UTF-8 replaced"), "{out}");
    let after: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(before, after, "the corpus must not be written to");
    let _ = std::fs::remove_dir_all(&d);
}
