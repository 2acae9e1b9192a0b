//! Mutation tests of every reader of user input: documents (PDF, DOCX, HTML, plain text) read as
//! a corpus, workbench.toml (with its keys and the knobs saved back into it), evaluation cases
//! (SQuAD JSON, TSV, JSONL query logs, BEIR folders), stores (JSONL, a LlamaIndex folder) and
//! model folders (config.json and the sentence-transformers module files, loaded and run by the
//! native embedder when it accepts them). Real files are truncated, bit-flipped, spliced with
//! each other, overwritten, given inserted, deleted and repeated bytes and extreme numbers (half
//! of the PDF mutants then get their cross-reference table rebuilt, as a repair tool would, so
//! that they reach the objects and page streams); each reader must answer every mutant without a
//! panic escaping, within a time limit, with either a result or an error whose message is not
//! empty and, where the reader is given a path, names it.
//!
//! Deterministic: mutant `i` of a reader comes from its own generator, seeded by the reader's
//! name, `i` and `CHUNKSCOPE_MUTATION_SEED` (a fixed default). `CHUNKSCOPE_MUTANTS=K` runs K
//! times the default number of mutants (K may be a fraction; about 8,000 at 1, some 10 s of CPU);
//! `CHUNKSCOPE_MUTANT=i` runs mutant `i` alone (what a failure report says to rerun);
//! `CHUNKSCOPE_MUTANT_TIMEOUT_S` sets the time limit of one call (default 5 s);
//! `CHUNKSCOPE_MUTANT_LOG=1` prints every refusal's message. A failing mutant is written under
//! the temporary folder and its path printed; a crash that no harness catches (an abort) leaves
//! the last mutant and `last-mutant.txt` in `$TMPDIR/chunkscope-mutations-PID-READER`.
//!
//! The PDF, DOCX and HTML seeds are made by the producers of tests/documents.rs (fpdf2 and
//! python-docx through Python-Markdown, tests/reference/md_to_docs.py); without that Python the
//! document readers run on the seeds that need none (the broken PDFs of tests/fixtures, a
//! hand-written DOCX and HTML) and the narrower run is reported as a SKIP. The LlamaIndex seed
//! (tests/fixtures/llamaindex-mini) was written by llama-index-core 0.14 (`persist()`).

mod common;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use chunkscope_core::cases::Cases;
use chunkscope_core::config::Config;
use chunkscope_core::corpus::{Corpus, CorpusRules};

// ---------------------------------------------------------------------------------------------
// The generator and the mutations.

/// splitmix64: small, seedable, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Byte strings that matter to one parser or another: delimiters, escapes, PDF and XML syntax,
/// line ends, a half UTF-8 sequence, a BOM.
const TOKENS: &[&[u8]] = &[
    b"\0",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    b"\xc3",
    b"\xf0\x9f\x98",
    "😀".as_bytes(),
    b"{",
    b"}",
    b"[",
    b"]",
    b"[[[[[[[[[[[[[[[[",
    b"{\"a\":{\"a\":{\"a\":",
    b"\"",
    b"\\",
    b"\\u",
    b"\\uD800",
    b",",
    b":",
    b"=",
    b"\n",
    b"\r\n",
    b"\r",
    b"\t",
    b"#",
    b"'''",
    b"\"\"\"",
    b"[keys]\n",
    b"[[a]]\n",
    b"<",
    b">",
    b"</",
    b"<!--",
    b"<![CDATA[",
    b"<!DOCTYPE x [<!ENTITY e \"&e;&e;\">]>",
    b"&amp;",
    b"&#0;",
    b"&#x10FFFF;",
    b"&e;",
    b"<table><tr><td>",
    b"<ol><li><ul><li>",
    b"<w:p>",
    b"<w:t>",
    b"</w:body>",
    b"obj",
    b"endobj",
    b"stream\n",
    b"endstream",
    b"0 0 R",
    b"99999 0 R",
    b"/Length",
    b"/Filter /FlateDecode",
    b"xref\n",
    b"trailer",
    b"startxref",
    b"%%EOF",
    b"BT",
    b"ET",
    b"Tf",
    b"Tj",
    b"TJ",
    b"Td",
    b"Tm",
    b"cm",
    b"q",
    b"Q",
    b"/Font",
    b"/Type /Page",
    b"/Kids [",
    b"/Parent",
    b"/Count",
    b"/MediaBox [0 0 0 0]",
    b"/Encrypt",
    b"PK\x03\x04",
    b"PK\x01\x02",
    b"PK\x05\x06",
    b"null",
    b"true",
    b"NaN",
    b"-",
    b".",
];

/// Numbers at the edges: zero, negatives, the limits of 32 and 64 bits, too large for any,
/// floats that are not finite in f32.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1",
    "2",
    "3",
    "7",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e308",
    "1e39",
    "-1e39",
    "1.5",
    "0.0",
    "1e-45",
];

/// A run of ASCII digits (a number in a text format), as a byte range.
fn a_number(rng: &mut Rng, bytes: &[u8]) -> Option<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let s = i;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            runs.push((s, i));
        } else {
            i += 1;
        }
    }
    (!runs.is_empty()).then(|| *rng.pick(&runs))
}

/// One mutation of `bytes` (`others`: the reader's other seeds, to splice with), and what it
/// did in words.
fn mutate_once(rng: &mut Rng, bytes: &mut Vec<u8>, others: &[&[u8]]) -> String {
    let len = bytes.len();
    match rng.below(100) {
        // Truncation, anywhere.
        0..=9 => {
            let at = rng.below(len + 1);
            bytes.truncate(at);
            format!("truncated at {at}")
        }
        // 1..8 bit flips.
        10..=29 => {
            let n = rng.range(1, 8);
            for _ in 0..n {
                if !bytes.is_empty() {
                    let at = rng.below(bytes.len());
                    bytes[at] ^= 1 << rng.below(8);
                }
            }
            format!("{n} bits flipped")
        }
        // A splice: this file's head, another's tail.
        30..=39 => {
            let other = if others.is_empty() {
                &bytes[..]
            } else {
                *rng.pick(others)
            }
            .to_vec();
            let a = rng.below(len + 1);
            let b = rng.below(other.len() + 1);
            bytes.truncate(a);
            bytes.extend_from_slice(&other[b..]);
            format!("spliced at {a} with another seed from {b}")
        }
        // Bytes overwritten in place (offsets into the file stay right): a token or random.
        40..=51 => {
            let new: Vec<u8> = if rng.chance(60) {
                rng.pick(TOKENS).to_vec()
            } else {
                (0..rng.range(1, 16)).map(|_| rng.next() as u8).collect()
            };
            let n = new.len().min(len);
            let at = rng.below(len - n + 1);
            bytes[at..at + n].copy_from_slice(&new[..n]);
            format!("{n} bytes overwritten at {at}")
        }
        // Inserted bytes: a token, or random bytes.
        52..=65 => {
            let at = rng.below(len + 1);
            let ins: Vec<u8> = if rng.chance(70) {
                rng.pick(TOKENS).to_vec()
            } else {
                (0..rng.range(1, 32)).map(|_| rng.next() as u8).collect()
            };
            let n = ins.len();
            bytes.splice(at..at, ins);
            format!("{n} bytes inserted at {at}")
        }
        // A deleted range, short or long.
        66..=75 => {
            let n = if rng.chance(70) {
                rng.range(1, 16)
            } else {
                rng.range(1, len.max(1))
            }
            .min(len);
            let at = rng.below(len - n + 1);
            bytes.drain(at..at + n);
            format!("{n} bytes deleted at {at}")
        }
        // A repeated chunk (deep nesting, long lines, many objects).
        76..=87 => {
            let n = rng.range(1, 64).min(len);
            let at = rng.below(len - n + 1);
            let times = if rng.chance(20) {
                rng.range(64, 2000)
            } else {
                rng.range(2, 16)
            };
            let piece = bytes[at..at + n].to_vec();
            let rep: Vec<u8> = piece
                .iter()
                .copied()
                .cycle()
                .take(n * times.min(65536 / n.max(1)))
                .collect();
            bytes.splice(at..at, rep);
            format!("{n} bytes at {at} repeated {times} times")
        }
        // A number swapped for an extreme one.
        _ => match a_number(rng, bytes) {
            Some((s, e)) => {
                let n = *rng.pick(NUMBERS);
                bytes.splice(s..e, n.bytes());
                format!("number at {s} set to {n}")
            }
            None => {
                let at = rng.below(len + 1);
                let n = *rng.pick(NUMBERS);
                bytes.splice(at..at, n.bytes());
                format!("{n} inserted at {at}")
            }
        },
    }
}

/// One to three mutations.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>, others: &[&[u8]]) -> String {
    let mut what = vec![mutate_once(rng, bytes, others)];
    while what.len() < 3 && rng.chance(25) {
        what.push(mutate_once(rng, bytes, others));
    }
    what.join(", then ")
}

/// A PDF's cross-reference table rebuilt from where its objects now start (what a repair tool
/// does), so that a mutant whose bytes moved reaches the objects and page streams instead of
/// stopping at the first wrong offset. None for what is not a PDF.
fn rebuild_xref(pdf: &[u8]) -> Option<Vec<u8>> {
    if !pdf.starts_with(b"%PDF-") {
        return None;
    }
    let find_last = |needle: &[u8]| pdf.windows(needle.len()).rposition(|w| w == needle);
    let body = &pdf[..find_last(b"\nxref").map_or(pdf.len(), |i| i + 1)];
    // "N G obj" at the start of a line.
    let mut objects: Vec<(usize, usize)> = Vec::new();
    for at in 0..body.len() {
        if at > 0 && body[at - 1] != b'\n' && body[at - 1] != b'\r' {
            continue;
        }
        let rest = &body[at..body.len().min(at + 24)];
        let digits = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
        let n = digits(rest);
        if n == 0 || n > 7 || rest.get(n) != Some(&b' ') {
            continue;
        }
        let g = digits(&rest[n + 1..]);
        if g == 0 || !rest[n + 1 + g..].starts_with(b" obj") {
            continue;
        }
        let num: usize = std::str::from_utf8(&rest[..n]).ok()?.parse().ok()?;
        objects.push((num, at));
    }
    let catalog = objects
        .iter()
        .find(|&&(_, at)| {
            let obj = &body[at..(at + 400).min(body.len())];
            let end = obj
                .windows(6)
                .position(|w| w == b"endobj")
                .unwrap_or(obj.len());
            obj[..end].windows(14).any(|w| w == b"/Type /Catalog")
        })
        .map_or(1, |&(n, _)| n);
    let size = objects.iter().map(|&(n, _)| n + 1).max().unwrap_or(1);
    let mut offsets = vec![None; size];
    for &(n, at) in &objects {
        offsets[n] = Some(at);
    }
    let mut out = body.to_vec();
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {size}\n").as_bytes());
    for o in offsets {
        out.extend_from_slice(
            match o {
                Some(at) => format!("{at:010} 00000 n \n"),
                None => "0000000000 65535 f \n".to_string(),
            }
            .as_bytes(),
        );
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {size} /Root {catalog} 0 R >>\nstartxref\n{xref}\n%%EOF\n")
            .as_bytes(),
    );
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// A DOCX written as a stored (uncompressed) zip, so that mutations of its XML parts reach the
// converter rather than stopping at a checksum.

fn crc32(data: &[u8]) -> u32 {
    static TABLE: OnceLock<[u32; 256]> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8)
    })
}

fn stored_zip(parts: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    let u16le = |v: &mut Vec<u8>, x: u16| v.extend_from_slice(&x.to_le_bytes());
    let u32le = |v: &mut Vec<u8>, x: u32| v.extend_from_slice(&x.to_le_bytes());
    for (name, data) in parts {
        let offset = out.len() as u32;
        let crc = crc32(data);
        u32le(&mut out, 0x0403_4b50);
        for x in [20u16, 0, 0, 0, 0x21] {
            u16le(&mut out, x);
        }
        u32le(&mut out, crc);
        u32le(&mut out, data.len() as u32);
        u32le(&mut out, data.len() as u32);
        u16le(&mut out, name.len() as u16);
        u16le(&mut out, 0);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        u32le(&mut central, 0x0201_4b50);
        for x in [20u16, 20, 0, 0, 0, 0x21] {
            u16le(&mut central, x);
        }
        u32le(&mut central, crc);
        u32le(&mut central, data.len() as u32);
        u32le(&mut central, data.len() as u32);
        for x in [name.len() as u16, 0, 0, 0, 0] {
            u16le(&mut central, x);
        }
        u32le(&mut central, 0);
        u32le(&mut central, offset);
        central.extend_from_slice(name.as_bytes());
    }
    let at = out.len() as u32;
    let size = central.len() as u32;
    out.extend_from_slice(&central);
    u32le(&mut out, 0x0605_4b50);
    for x in [0u16, 0, parts.len() as u16, parts.len() as u16] {
        u16le(&mut out, x);
    }
    u32le(&mut out, size);
    u32le(&mut out, at);
    u16le(&mut out, 0);
    out
}

const W_NS: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

/// A small DOCX written by hand (headings, a list, a table), for runs without python-docx.
fn handmade_docx_parts() -> Vec<(String, Vec<u8>)> {
    let types = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;
    let rels = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;
    let p = |style: &str, text: &str, num: Option<(u32, u32)>| {
        let num = num
            .map(|(id, lvl)| {
                format!("<w:numPr><w:ilvl w:val=\"{lvl}\"/><w:numId w:val=\"{id}\"/></w:numPr>")
            })
            .unwrap_or_default();
        format!(
            "<w:p><w:pPr><w:pStyle w:val=\"{style}\"/>{num}</w:pPr><w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>"
        )
    };
    let cell = |t: &str| format!("<w:tc><w:p><w:r><w:t>{t}</w:t></w:r></w:p></w:tc>");
    let body = [
        p("Heading1", "Refund policy", None),
        p("Normal", "Annual plans are refunded pro rata &amp; monthly plans are not.", None),
        p("Heading2", "Steps", None),
        p("ListBullet", "Open the ticket", Some((1, 0))),
        p("ListBullet", "Check the plan", Some((1, 1))),
        p("ListNumber", "Refund", Some((2, 0))),
        format!(
            "<w:tbl><w:tr>{}{}</w:tr><w:tr>{}{}</w:tr></w:tbl>",
            cell("Plan"),
            cell("Refund"),
            cell("Annual"),
            cell("pro rata")
        ),
        "<w:p><w:r><w:delText>deleted</w:delText></w:r><w:r><w:instrText>PAGE</w:instrText></w:r></w:p>".into(),
    ]
    .concat();
    let document = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:document xmlns:w=\"{W_NS}\"><w:body>{body}<w:sectPr/></w:body></w:document>"
    );
    let style = |id: &str, name: &str, outline: Option<u32>| {
        let o = outline
            .map(|l| format!("<w:pPr><w:outlineLvl w:val=\"{l}\"/></w:pPr>"))
            .unwrap_or_default();
        format!("<w:style w:type=\"paragraph\" w:styleId=\"{id}\"><w:name w:val=\"{name}\"/><w:basedOn w:val=\"Normal\"/>{o}</w:style>")
    };
    let styles = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:styles xmlns:w=\"{W_NS}\">{}{}{}{}{}</w:styles>",
        style("Normal", "Normal", None),
        style("Heading1", "heading 1", Some(0)),
        style("Heading2", "heading 2", Some(1)),
        style("ListBullet", "List Bullet", None),
        style("ListNumber", "List Number", None),
    );
    let level = |l: u32, fmt: &str| {
        format!(
            "<w:lvl w:ilvl=\"{l}\"><w:numFmt w:val=\"{fmt}\"/><w:lvlText w:val=\"%1.\"/></w:lvl>"
        )
    };
    let numbering = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:numbering xmlns:w=\"{W_NS}\"><w:abstractNum w:abstractNumId=\"0\">{}{}</w:abstractNum><w:abstractNum w:abstractNumId=\"1\">{}</w:abstractNum><w:num w:numId=\"1\"><w:abstractNumId w:val=\"0\"/></w:num><w:num w:numId=\"2\"><w:abstractNumId w:val=\"1\"/></w:num></w:numbering>",
        level(0, "bullet"),
        level(1, "bullet"),
        level(0, "decimal"),
    );
    [
        ("[Content_Types].xml", types.to_string()),
        ("_rels/.rels", rels.to_string()),
        ("word/document.xml", document),
        ("word/styles.xml", styles),
        ("word/numbering.xml", numbering),
    ]
    .into_iter()
    .map(|(n, t)| (n.to_string(), t.into_bytes()))
    .collect()
}

// ---------------------------------------------------------------------------------------------
// Seeds.

#[derive(Clone)]
struct Seed {
    /// Shown in reports: where the seed came from.
    name: String,
    /// The file mutated.
    bytes: Vec<u8>,
    /// DOCX parts: a mutant is one part mutated and the whole written as a stored zip.
    parts: Option<Vec<(String, Vec<u8>)>>,
    /// Folder readers: the folder mirrored, with `file` replaced by the mutant.
    folder: Option<PathBuf>,
    /// The mutant's file name (its extension chooses the format), or its path in `folder`.
    file: String,
}

impl Seed {
    fn file(name: impl Into<String>, file: impl Into<String>, bytes: Vec<u8>) -> Seed {
        Seed {
            name: name.into(),
            bytes,
            parts: None,
            folder: None,
            file: file.into(),
        }
    }

    fn path(p: &Path) -> Seed {
        let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let name = p
            .strip_prefix(common::repo())
            .unwrap_or(p)
            .display()
            .to_string();
        Seed::file(name, p.file_name().unwrap().to_string_lossy(), bytes)
    }

    fn in_folder(folder: &Path, file: &str) -> Seed {
        let mut s = Seed::path(&folder.join(file));
        s.folder = Some(folder.to_path_buf());
        s.file = file.to_string();
        s
    }
}

/// The PDF, DOCX and HTML seeds made by the real producers (None without their Python).
struct Made {
    pdf: Vec<Seed>,
    docx: Vec<Seed>,
    html: Vec<Seed>,
}

const MAKE_SEEDS: &str = r#"
import json, os, sys, zipfile
req = json.load(sys.stdin)
sys.path.insert(0, req["reference"])
import docx, markdown, md_to_docs
from fpdf import FPDF

KEEP = ["[Content_Types].xml", "_rels/.rels", "word/_rels/document.xml.rels",
        "word/document.xml", "word/styles.xml", "word/numbering.xml"]
res = {"pdf": [], "docx": [], "html": [], "parts": []}
for d in req["docs"]:
    html = markdown.markdown(d["markdown"], extensions=["tables", "fenced_code"])
    base = os.path.join(req["out"], d["name"])
    md_to_docs.make_pdf(html, base + ".pdf")
    res["pdf"].append(base + ".pdf")
    # The same with uncompressed content streams: mutations reach the page operators.
    pdf = FPDF()
    pdf.set_compression(False)
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.write_html(md_to_docs.latin1(html))
    pdf.output(base + "-uncompressed.pdf")
    res["pdf"].append(base + "-uncompressed.pdf")
    document = docx.Document()
    builder = md_to_docs.DocxBuilder(document)
    builder.feed(html)
    builder.flush()
    document.save(base + ".docx")
    res["docx"].append(base + ".docx")
    with zipfile.ZipFile(base + ".docx") as z:
        names = z.namelist()
        res["parts"].append([[n, z.read(n).decode("utf-8")] for n in KEEP if n in names])
    with open(base + ".html", "w", encoding="utf-8") as f:
        f.write("<!doctype html><html><head><title>t</title><style>body{margin:0}</style></head>"
                "<body><nav><a href='/'>Home</a></nav><main>" + html + "</main>"
                "<script>console.log(1)</script><footer>(c)</footer></body></html>")
    res["html"].append(base + ".html")
json.dump(res, sys.stdout)
"#;

/// The example documents the producers convert: short ones, so that a mutant converts fast.
const DOC_SOURCES: &[&str] = &[
    "policy/refunds.md",
    "docs/deploy.rst",
    "notes/oncall-faq.txt",
];

fn made() -> Option<&'static Made> {
    static MADE: OnceLock<Option<Made>> = OnceLock::new();
    MADE.get_or_init(|| {
        let python = common::python_exe();
        let ok = std::process::Command::new(&python)
            .args(["-c", "import markdown, fpdf, docx, pypdf"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            return None;
        }
        let out = std::env::temp_dir().join(format!("chunkscope-mutation-seeds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let ex = common::repo().join("examples");
        let docs: Vec<serde_json::Value> = DOC_SOURCES
            .iter()
            .map(|p| {
                let name = Path::new(p).file_stem().unwrap().to_str().unwrap();
                serde_json::json!({ "name": name, "markdown": std::fs::read_to_string(ex.join(p)).unwrap() })
            })
            .collect();
        let req = serde_json::json!({
            "out": out,
            "reference": common::repo().join("tests/reference"),
            "docs": docs,
        });
        let mut child = std::process::Command::new(&python)
            .args(["-c", MAKE_SEEDS])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(req.to_string().as_bytes())
                .unwrap();
        }
        let o = child.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "making the document seeds failed under {}:\n{}",
            python.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let paths = |k: &str| -> Vec<Seed> {
            v[k].as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    let p = Path::new(p.as_str().unwrap());
                    let mut s = Seed::path(p);
                    s.name = format!("made {}", s.file);
                    s
                })
                .collect()
        };
        let mut docx = paths("docx");
        for (i, parts) in v["parts"].as_array().unwrap().iter().enumerate() {
            let parts: Vec<(String, Vec<u8>)> = parts
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p[0].as_str().unwrap().to_string(),
                        p[1].as_str().unwrap().as_bytes().to_vec(),
                    )
                })
                .collect();
            let stem = Path::new(DOC_SOURCES[i]).file_stem().unwrap().to_string_lossy();
            docx.push(Seed {
                name: format!("made {stem}.docx, its XML parts"),
                bytes: stored_zip(&parts),
                parts: Some(parts),
                folder: None,
                file: format!("{stem}.docx"),
            });
        }
        let made = Made {
            pdf: paths("pdf"),
            docx,
            html: paths("html"),
        };
        let _ = std::fs::remove_dir_all(&out);
        Some(made)
    })
    .as_ref()
}

// ---------------------------------------------------------------------------------------------
// The harness: a worker thread per reader, each call under catch_unwind and a time limit.

/// A mutant as the reader sees it.
struct Mutant<'a> {
    /// The mutant file, or the folder that holds it.
    path: &'a Path,
    bytes: &'a [u8],
}

/// What a reader does with a mutant: Ok, or a problem (an empty message, a message that does
/// not name the file, an impossible result).
type Check = Arc<dyn Fn(&Mutant) -> Result<(), String> + Send + Sync>;

/// A repair applied to a mutant (None: it does not apply).
type Repair = fn(&[u8]) -> Option<Vec<u8>>;

struct Reader {
    name: &'static str,
    seeds: Vec<Seed>,
    /// Mutants at CHUNKSCOPE_MUTANTS=1.
    mutants: usize,
    check: Check,
    /// Applied to half the mutants: a repair that gets them past the first check (PDF).
    repair: Option<Repair>,
}

fn env_num<T: std::str::FromStr>(key: &str) -> Option<T> {
    std::env::var(key).ok().and_then(|v| v.trim().parse().ok())
}

fn base_seed() -> u64 {
    env_num("CHUNKSCOPE_MUTATION_SEED").unwrap_or(0x6368_756e_6b73_636f)
}

/// The mutant `index` of `reader`: its seed, bytes and what was done.
fn make_mutant(reader: &Reader, index: usize) -> (usize, Vec<u8>, String) {
    let mut rng = Rng::new(
        base_seed() ^ fnv(reader.name) ^ (index as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93),
    );
    let s = rng.below(reader.seeds.len());
    let seed = &reader.seeds[s];
    match &seed.parts {
        Some(parts) => {
            // Mostly the body; sometimes the styles or the numbering; now and then the zip.
            if rng.chance(10) {
                let others: Vec<&[u8]> = reader.seeds.iter().map(|o| &o.bytes[..]).collect();
                let mut b = seed.bytes.clone();
                let what = mutate(&mut rng, &mut b, &others);
                return (s, b, format!("the zip: {what}"));
            }
            let wanted = match rng.below(10) {
                0..=6 => "word/document.xml",
                7 => "word/styles.xml",
                _ => "word/numbering.xml",
            };
            let i = parts
                .iter()
                .position(|(n, _)| n == wanted)
                .unwrap_or_else(|| rng.below(parts.len()));
            let others: Vec<&[u8]> = reader
                .seeds
                .iter()
                .filter_map(|o| o.parts.as_ref())
                .filter_map(|p| p.iter().find(|(n, _)| *n == parts[i].0))
                .map(|(_, b)| &b[..])
                .collect();
            let mut parts = parts.clone();
            let what = mutate(&mut rng, &mut parts[i].1, &others);
            let what = format!("{}: {what}", parts[i].0);
            (s, stored_zip(&parts), what)
        }
        None => {
            let others: Vec<&[u8]> = reader
                .seeds
                .iter()
                // A folder's file splices with the same file of other folders.
                .filter(|o| seed.folder.is_none() || o.file == seed.file)
                .map(|o| &o.bytes[..])
                .collect();
            let mut b = seed.bytes.clone();
            let mut what = mutate(&mut rng, &mut b, &others);
            if let Some(repair) = reader.repair.filter(|_| rng.chance(50)) {
                if let Some(r) = repair(&b) {
                    b = r;
                    what.push_str(", then repaired");
                }
            }
            (s, b, what)
        }
    }
}

/// Mirror `folder` into `dir` (files as symlinks), with `file` written as `bytes`.
fn mirror(folder: &Path, dir: &Path, file: &str, bytes: &[u8]) {
    fn link_all(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let p = e.path();
            let t = to.join(e.file_name());
            if p.is_dir() {
                link_all(&p, &t);
            } else {
                std::os::unix::fs::symlink(&p, &t).unwrap();
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    link_all(folder, dir);
    let target = dir.join(file);
    let _ = std::fs::remove_file(&target);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(target, bytes).unwrap();
}

/// The mutant on disk: the folder (folder readers) or the file. One in eight document mutants
/// loses its extension, so that the format is found by content or the file read as text.
fn place(work: &Path, seed: &Seed, index: usize, bytes: &[u8], document: bool) -> PathBuf {
    match &seed.folder {
        Some(folder) => {
            let dir = work.join("model");
            mirror(folder, &dir, &seed.file, bytes);
            dir
        }
        None => {
            let _ = std::fs::remove_dir_all(work.join("doc"));
            std::fs::create_dir_all(work.join("doc")).unwrap();
            let name = if document && index % 8 == 7 {
                Path::new(&seed.file)
                    .file_stem()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            } else {
                seed.file.clone()
            };
            let p = work.join("doc").join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        }
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

struct Job {
    index: usize,
    seed: usize,
    bytes: Vec<u8>,
}

/// Run every mutant of `reader`; panics at the end with every problem found.
fn run(reader: Reader, document: bool) {
    let scale: f64 = env_num("CHUNKSCOPE_MUTANTS").unwrap_or(1.0);
    let count = ((reader.mutants as f64 * scale).round() as usize).max(1);
    let only: Option<usize> = env_num("CHUNKSCOPE_MUTANT");
    let limit = Duration::from_secs_f64(env_num("CHUNKSCOPE_MUTANT_TIMEOUT_S").unwrap_or(5.0));
    let work = std::env::temp_dir().join(format!(
        "chunkscope-mutations-{}-{}",
        std::process::id(),
        reader.name
    ));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let reader = Arc::new(reader);

    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let (res_tx, res_rx) = mpsc::channel::<(bool, Result<(), String>)>();
    let worker = {
        let reader = reader.clone();
        let work = work.clone();
        std::thread::Builder::new()
            .name(format!("mutants-{}", reader.name))
            .spawn(move || {
                for job in job_rx {
                    let seed = &reader.seeds[job.seed];
                    let path = place(&work, seed, job.index, &job.bytes, document);
                    let m = Mutant {
                        path: &path,
                        bytes: &job.bytes,
                    };
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        (reader.check)(&m)
                    }))
                    .unwrap_or_else(|p| Err(format!("PANIC escaped: {}", panic_text(&*p))));
                    let refused = REFUSED.with(|r| r.replace(false));
                    if res_tx.send((refused, r)).is_err() {
                        break;
                    }
                }
            })
            .unwrap()
    };

    let started = Instant::now();
    let mut problems: Vec<String> = Vec::new();
    let mut hung = false;
    let mut ran = 0;
    let mut refusals = 0;
    let indices: Vec<usize> = match only {
        Some(i) => vec![i],
        None => (0..count).collect(),
    };
    for &index in &indices {
        let (seed, bytes, what) = make_mutant(&reader, index);
        // What a crash (an abort, which no test harness catches) leaves behind to say which
        // mutant it was; the mutant itself is in the same folder.
        let _ = std::fs::write(
            work.join("last-mutant.txt"),
            format!(
                "{} mutant #{index} of {}: {what}\n",
                reader.name, reader.seeds[seed].name
            ),
        );
        job_tx
            .send(Job {
                index,
                seed,
                bytes: bytes.clone(),
            })
            .unwrap();
        let t0 = Instant::now();
        let problem = match res_rx.recv_timeout(limit) {
            Ok((refused, Ok(()))) => {
                refusals += refused as usize;
                None
            }
            Ok((_, Err(p))) => Some(p),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                hung = true;
                Some(format!(
                    "HANG: no answer after {:.1} s",
                    limit.as_secs_f64()
                ))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Some("the worker thread died".to_string()),
        };
        ran += 1;
        if let Some(p) = problem {
            let s = &reader.seeds[seed];
            let dir =
                std::env::temp_dir().join(format!("chunkscope-mutants-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let kept = dir.join(format!(
                "{}-{index}-{}",
                reader.name,
                s.file.replace('/', "_")
            ));
            std::fs::write(&kept, &bytes).unwrap();
            problems.push(format!(
                "{} mutant #{index} of {} ({what}), {:.1} s: {p}\n    mutant written to {}{}\n    rerun: CHUNKSCOPE_MUTATION_SEED={} CHUNKSCOPE_MUTANT={index} cargo test --test mutations {}",
                reader.name,
                s.name,
                t0.elapsed().as_secs_f64(),
                kept.display(),
                s.folder
                    .as_ref()
                    .map(|f| format!(" (as {} in a copy of {})", s.file, f.display()))
                    .unwrap_or_default(),
                base_seed(),
                reader.name,
            ));
            if hung || problems.len() >= 30 {
                break;
            }
        }
    }
    drop(job_tx);
    if !hung {
        let _ = worker.join();
        let _ = std::fs::remove_dir_all(&work);
    }
    eprintln!(
        "{}: {ran} mutants of {} seeds in {:.1} s: {} read, {refusals} refused with a message, {} problems",
        reader.name,
        reader.seeds.len(),
        started.elapsed().as_secs_f64(),
        ran - refusals - problems.len(),
        problems.len()
    );
    assert!(
        problems.is_empty(),
        "{} of {ran} {} mutants failed:\n{}",
        problems.len(),
        reader.name,
        problems.join("\n")
    );
}

thread_local! {
    /// Set when a reader refused the mutant with a message (for the tally).
    static REFUSED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// An error message must say something and, when the reader was given a path, name it.
fn message(what: &str, msg: &str, names: Option<&Path>) -> Result<(), String> {
    REFUSED.with(|r| r.set(true));
    if std::env::var_os("CHUNKSCOPE_MUTANT_LOG").is_some() {
        eprintln!("refused ({what}): {msg}");
    }
    if msg.trim().is_empty() {
        return Err(format!("{what}: an error with an empty message"));
    }
    if let Some(p) = names {
        let shown = p.display().to_string();
        if !msg.contains(&shown) {
            return Err(format!("{what}: the message does not name {shown}: {msg}"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Documents: a mutant file read as a corpus (a single file as the root).

fn check_document(m: &Mutant) -> Result<(), String> {
    let name = m.path.file_name().unwrap().to_string_lossy().into_owned();
    let corpus = match Corpus::load(m.path, &CorpusRules::default()) {
        Ok(c) => c,
        Err(e) => return message("Corpus::load", &format!("{e:#}"), Some(m.path)),
    };
    match (corpus.docs.as_slice(), corpus.skipped.as_slice()) {
        ([d], []) => {
            if d.path != name {
                return Err(format!("the document is named {:?}, not {name:?}", d.path));
            }
            let mut last = 0;
            for &p in &d.pages {
                if p < last || p > d.text.len() || !d.text.is_char_boundary(p) {
                    return Err(format!(
                        "page start {p} is not a place in the text of {} bytes (pages {:?})",
                        d.text.len(),
                        d.pages
                    ));
                }
                last = p;
            }
            if d.source_format == "text" && d.offsets.file_byte(d.text.len()) > m.bytes.len() {
                return Err(format!(
                    "the text's end maps to file byte {}, past the file's {} bytes",
                    d.offsets.file_byte(d.text.len()),
                    m.bytes.len()
                ));
            }
            Ok(())
        }
        ([], [s]) => {
            if s.path != name {
                return Err(format!(
                    "skipped as {:?}, not {name:?}: {}",
                    s.path, s.reason
                ));
            }
            message("the skip reason", &s.reason, None)
        }
        (d, s) => Err(format!(
            "one file became {} documents and {} skipped",
            d.len(),
            s.len()
        )),
    }
}

fn document_reader(name: &'static str, seeds: Vec<Seed>, mutants: usize) -> Reader {
    Reader {
        name,
        seeds,
        mutants,
        check: Arc::new(check_document),
        repair: None,
    }
}

fn broken_pdfs() -> Vec<Seed> {
    common::walk(&common::repo().join("tests/fixtures/broken"))
        .iter()
        .map(|p| Seed::path(p))
        .collect()
}

fn narrower(test: &str, made: Option<&Made>, what: &str) {
    if made.is_none() {
        common::skip(
            test,
            &format!(
                "{} cannot import markdown, fpdf, docx, pypdf: mutants of {what} only; run scripts/test.sh (it sets up .venv) or set CHUNKSCOPE_PYTHON",
                common::python_exe().display()
            ),
        );
    }
}

#[test]
fn pdf_mutants() {
    let made = made();
    narrower(
        "pdf_mutants (fpdf2 documents)",
        made,
        "the broken PDFs of tests/fixtures",
    );
    let mut seeds = broken_pdfs();
    if let Some(m) = made {
        seeds.extend(m.pdf.iter().cloned());
    }
    let mut reader = document_reader("pdf", seeds, 600);
    reader.repair = Some(rebuild_xref);
    run(reader, true);
}

#[test]
fn docx_mutants() {
    let made = made();
    narrower(
        "docx_mutants (python-docx documents)",
        made,
        "a hand-written DOCX",
    );
    let parts = handmade_docx_parts();
    let mut seeds = vec![Seed {
        name: "hand-written DOCX".into(),
        bytes: stored_zip(&parts),
        parts: Some(parts),
        folder: None,
        file: "handmade.docx".into(),
    }];
    if let Some(m) = made {
        seeds.extend(m.docx.iter().cloned());
    }
    run(document_reader("docx", seeds, 600), true);
}

const HANDMADE_HTML: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Rotate keys</title>\
<style>p{margin:0}</style><script>var x = '<main>';</script></head><body><nav><a href=\"/\">Home</a></nav>\
<article><h1>Rotate keys</h1><p>Keys are rotated every <b>90 days</b> &amp; staging keys weekly.</p>\
<h2>Steps</h2><ol><li>Open <code>kubectl</code><ul><li>nested <i>item</i></li></ul></li><li>Patch</li></ol>\
<pre><code class=\"language-sh\">kubectl -n payments patch deployment gateway\n</code></pre>\
<table><thead><tr><th>Env</th><th>Period</th></tr></thead><tbody><tr><td>prod</td><td>90 d</td></tr>\
<tr><td colspan=\"2\">staging | weekly</td></tr></tbody></table><blockquote><p>Never reuse a key.</p></blockquote>\
<p>Café, Łódź, 中文, emoji 😀, &#x2014; &nbsp; &lt;tag&gt;</p><img src=\"x.png\" alt=\"diagram\"></article>\
<footer>(c) Northwind</footer></body></html>\n";

#[test]
fn html_mutants() {
    let made = made();
    narrower(
        "html_mutants (Python-Markdown pages)",
        made,
        "a hand-written page",
    );
    let mut seeds = vec![
        Seed::file("hand-written page", "handmade.html", HANDMADE_HTML.as_bytes().to_vec()),
        Seed::file(
            "hand-written XHTML",
            "page.xhtml",
"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><body><main><h1>Title</h1><p>One<br/>two</p></main></body></html>".to_string()
            .into_bytes(),
        ),
    ];
    if let Some(m) = made {
        seeds.extend(m.html.iter().cloned());
    }
    run(document_reader("html", seeds, 500), true);
}

#[test]
fn text_mutants() {
    let ex = common::repo().join("examples");
    let mut seeds: Vec<Seed> = common::walk(&ex).iter().map(|p| Seed::path(p)).collect();
    // A UTF-16 file (with its BOM), decoded rather than read as bytes.
    let faq = std::fs::read_to_string(ex.join("notes/oncall-faq.txt")).unwrap();
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(faq.encode_utf16().flat_map(|u| u.to_le_bytes()));
    seeds.push(Seed::file(
        "oncall-faq.txt as UTF-16LE",
        "faq-utf16.txt",
        utf16,
    ));
    run(document_reader("text", seeds, 500), true);
}

// ---------------------------------------------------------------------------------------------
// workbench.toml: read as the workbench reads it, its keys laid over the keymap, and the knobs
// written back into it.

const TOML_SEEDS: &[(&str, &str)] = &[
    (
        "keys and store",
        "[model]\nid = \"sentence-transformers/all-MiniLM-L6-v2\"\nwindow = 256\nendpoint = \"\"\ncompare = [\"BAAI/bge-small-en-v1.5\"]\nprecision = \"bf16\"\n\n[chunking]\npreset = \"langchain-tokens\"\n\n[keys]\nquit = [\"x\", \"ctrl-q\"]\n\n[keys.eval]\nmisses = [\"M\"]\n\n[keys.query]\nfocus = [\"/\"]\n\n[store]\nuri = \"jsonl:chunks.jsonl\"\ntext = \"page_content\"\npage = 500\n",
    ),
    (
        "maxmin and remote",
        "[model]\nid = \"m\"\nendpoint = \"http://127.0.0.1:7997\"\nserved_model = \"x\"\nbatch = 16\nin_flight = 2\ntimeout_s = 2.5\nmax_retries = 3\noverflow = \"truncate\"\n\n[chunking]\nstrategy = \"maxmin\"\nunit = \"embed\"\nsize = 200\noverlap = 0\nparents = \"section\"\n\n[maxmin]\nfixed_threshold = 0.45\nc = 0.9\ninit_constant = 1.5\n\n[metadata]\nfile = \"embed\"\nheading = \"none\"\n\n[search]\nk = 10\nrrf_k = 60\n\n[ui]\ntheme = \"light\"\nmouse = true\nlog_file = \"x.log\"\n",
    ),
    (
        "spring-ai",
        "[chunking]\nstrategy = \"spring-ai\"\nseparators = [\"\\n\\n\", \"\\n\", \". \"]\n\n[spring_ai]\nmin_chunk_size_chars = 350\nmin_chunk_length_to_embed = 5\nmax_num_chunks = 10000\nkeep_separator = false\n\n[corpus]\ninclude = [\"*.md\", \"*.pdf\"]\nexclude = [\"drafts/**\"]\nmax_file_bytes = 1000\nmax_document_bytes = 100000\ngitignore = false\n",
    ),
];

#[test]
fn workbench_toml_mutants() {
    let mut seeds = vec![Seed::path(&common::repo().join("workbench.toml"))];
    for (name, text) in TOML_SEEDS {
        seeds.push(Seed::file(
            *name,
            "workbench.toml",
            text.as_bytes().to_vec(),
        ));
    }
    let check: Check = Arc::new(|m: &Mutant| {
        let c = match Config::discover(Some(m.path), None) {
            Ok(c) => c,
            Err(e) => return message("Config::discover", &e.to_string(), Some(m.path)),
        };
        let name = m.path.display().to_string();
        let (_, errors) = chunkscope::app::keymap::Keymap::with_overrides(&c.keys, &name);
        for e in errors {
            message("a [keys] error", &e.to_string(), Some(m.path))?;
        }
        // The knobs written back into the same file (the workbench's save): an error is a
        // message, and what it writes reads again.
        let text = String::from_utf8_lossy(m.bytes);
        match chunkscope_core::config::save::with_knobs(&text, &c.chunking, c.window) {
            Ok(saved) => {
                if let Err(e) = Config::parse(&saved, &name) {
                    return Err(format!(
                        "the file saved from a readable one does not read: {e}\n--- saved:\n{saved}"
                    ));
                }
                Ok(())
            }
            Err(e) => message("save::with_knobs", &format!("{e:#}"), None),
        }
    });
    run(
        Reader {
            name: "workbench_toml",
            seeds,
            mutants: 1500,
            check,
            repair: None,
        },
        false,
    );
}

// ---------------------------------------------------------------------------------------------
// Evaluation cases.

/// Every case's span lies on character boundaries of its document.
fn spans_hold(cases: &Cases, corpus: &Corpus) -> Result<(), String> {
    for c in &cases.cases {
        let Some(d) = corpus.docs.get(c.doc) else {
            return Err(format!(
                "case at {} names document {} of {}",
                c.line,
                c.doc,
                corpus.docs.len()
            ));
        };
        if c.start > c.end
            || c.end > d.text.len()
            || !d.text.is_char_boundary(c.start)
            || !d.text.is_char_boundary(c.end)
        {
            return Err(format!(
                "case at {}: span {}..{} is not a place in {} ({} bytes)",
                c.line,
                c.start,
                c.end,
                d.path,
                d.text.len()
            ));
        }
    }
    match cases.bad.iter().find(|b| b.reason.trim().is_empty()) {
        Some(b) => Err(format!("line {} is bad for no reason given", b.line)),
        None => Ok(()),
    }
}

/// A SQuAD file made from example documents: one article per document, a paragraph per
/// Markdown block, a question per paragraph whose answer starts at its third word.
fn squad_from_examples() -> Vec<u8> {
    let ex = common::repo().join("examples");
    let mut data = Vec::new();
    for p in ["policy/refunds.md", "runbooks/rotate-keys.md"] {
        let text = std::fs::read_to_string(ex.join(p)).unwrap();
        let mut paragraphs = Vec::new();
        for (i, para) in text
            .split("\n\n")
            .filter(|s| s.trim().len() > 20)
            .take(6)
            .enumerate()
        {
            let words: Vec<(usize, &str)> = para
                .char_indices()
                .filter(|&(b, c)| {
                    !c.is_whitespace() && (b == 0 || para[..b].ends_with(char::is_whitespace))
                })
                .map(|(b, _)| (b, para[b..].split_whitespace().next().unwrap()))
                .collect();
            let (b, w) = words[words.len().min(3) - 1];
            paragraphs.push(serde_json::json!({
                "context": para,
                "qas": [{
                    "id": format!("{p}-{i}"),
                    "question": format!("What is word three of paragraph {i}?"),
                    "answers": [{"text": w, "answer_start": para[..b].chars().count()}],
                }],
            }));
        }
        data.push(serde_json::json!({"title": p, "paragraphs": paragraphs}));
    }
    serde_json::to_vec_pretty(&serde_json::json!({"version": "1.1", "data": data})).unwrap()
}

#[test]
fn squad_mutants() {
    let mut seeds = vec![Seed::file(
        "SQuAD made from examples",
        "cases.json",
        squad_from_examples(),
    )];
    if let Some(shared) = common::shared_or_skip("squad_mutants (XQuAD seeds)") {
        for lang in ["en", "es", "zh"] {
            // The first article's first two paragraphs, as XQuAD writes them.
            let p = shared.join(format!("data/xquad/xquad.{lang}.json"));
            let mut v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            let art = &mut v["data"].as_array_mut().unwrap()[0];
            art["paragraphs"].as_array_mut().unwrap().truncate(2);
            v["data"].as_array_mut().unwrap().truncate(1);
            seeds.push(Seed::file(
                format!("xquad.{lang}.json, first article"),
                "cases.json",
                serde_json::to_vec(&v).unwrap(),
            ));
        }
    }
    let check: Check = Arc::new(|m: &Mutant| match Cases::from_squad(m.path) {
        Ok((corpus, cases)) => spans_hold(&cases, &corpus),
        Err(e) => message("Cases::from_squad", &format!("{e:#}"), Some(m.path)),
    });
    run(
        Reader {
            name: "squad",
            seeds,
            mutants: 800,
            check,
            repair: None,
        },
        false,
    );
}

fn examples_corpus() -> &'static Corpus {
    static C: OnceLock<Corpus> = OnceLock::new();
    C.get_or_init(|| {
        Corpus::load(&common::repo().join("examples"), &CorpusRules::default()).unwrap()
    })
}

#[test]
fn tsv_mutants() {
    let ex = common::repo().join("examples");
    let mut seeds = vec![Seed::path(&ex.join("cases.tsv"))];
    // Without the file column, with comments, blank lines and CRLF line ends.
    let tsv = std::fs::read_to_string(ex.join("cases.tsv")).unwrap();
    let two: String = tsv
        .lines()
        .take(12)
        .map(|l| l.splitn(3, '\t').take(2).collect::<Vec<_>>().join("\t") + "\r\n")
        .collect();
    seeds.push(Seed::file(
        "cases.tsv, two columns, CRLF",
        "cases.tsv",
        format!("# question\tanswer\r\n\r\n{two}").into_bytes(),
    ));
    let check: Check = Arc::new(|m: &Mutant| {
        let corpus = examples_corpus();
        match Cases::from_tsv(m.path, corpus) {
            Ok(cases) => spans_hold(&cases, corpus),
            Err(e) => message("Cases::from_tsv", &format!("{e:#}"), Some(m.path)),
        }
    });
    run(
        Reader {
            name: "tsv",
            seeds,
            mutants: 300,
            check,
            repair: None,
        },
        false,
    );
}

/// Relevance judgments over examples/ (the queries of tests/judged.rs): graded, a name the
/// corpus lacks, an answer located as a span.
type JudgedQuery = (&'static str, &'static str, &'static [(&'static str, u32)]);

const JUDGED: &[JudgedQuery] = &[
    (
        "q1",
        "How often are the regional RSA response signing keys rotated?",
        &[("runbooks/rotate-keys.md", 2)],
    ),
    (
        "q2",
        "What is the refund window for the Scale annual plan?",
        &[("policy/refunds.md", 2), ("README.md", 0)],
    ),
    (
        "q5",
        "How do you restart the payments ledger pods one at a time?",
        &[
            ("runbooks/restart-payments.md", 3),
            ("guides/incident-handbook.md", 1),
            ("runbooks/retired.md", 1),
        ],
    ),
];

#[test]
fn query_log_mutants() {
    let mut listed = String::new();
    let mut graded = String::new();
    for (i, (id, text, judged)) in JUDGED.iter().enumerate() {
        let names: Vec<&str> = judged.iter().map(|(d, _)| *d).collect();
        let mut line = serde_json::json!({"query": text, "relevant": names});
        if i == 0 {
            line["answer"] = "every 90 days".into();
        }
        listed.push_str(&format!("{line}\n"));
        let grades: serde_json::Map<String, serde_json::Value> = judged
            .iter()
            .map(|(d, g)| (format!("./{d}"), (*g).into()))
            .collect();
        graded.push_str(&format!(
            "{}\n",
            serde_json::json!({"id": id, "query": text, "relevant": grades, "answer": "zebra"})
        ));
    }
    let seeds = vec![
        Seed::file(
            "query log, lists and an answer",
            "log.jsonl",
            listed.into_bytes(),
        ),
        Seed::file(
            "query log, grades and ids",
            "log.jsonl",
            graded.into_bytes(),
        ),
    ];
    let check: Check = Arc::new(|m: &Mutant| {
        let corpus = examples_corpus();
        match Cases::load(m.path, None, corpus) {
            Ok(cases) => spans_hold(&cases, corpus),
            Err(e) => message("Cases::load(query log)", &format!("{e:#}"), Some(m.path)),
        }
    });
    run(
        Reader {
            name: "query_log",
            seeds,
            mutants: 500,
            check,
            repair: None,
        },
        false,
    );
}

/// A BEIR folder made from examples/: each file a document whose `_id` is its path, the queries
/// above and their qrels as `qrels/test.tsv`.
fn beir_folder() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d =
            std::env::temp_dir().join(format!("chunkscope-mutation-beir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("qrels")).unwrap();
        let ex = common::repo().join("examples");
        let mut corpus = String::new();
        for p in [
            "policy/refunds.md",
            "docs/deploy.rst",
            "notes/oncall-faq.txt",
            "README.md",
        ] {
            let text = std::fs::read_to_string(ex.join(p)).unwrap();
            let title = if p.ends_with(".md") { "Policy" } else { "" };
            corpus.push_str(&format!(
                "{}\n",
                serde_json::json!({"_id": p, "title": title, "text": text})
            ));
        }
        std::fs::write(d.join("corpus.jsonl"), corpus).unwrap();
        let mut queries = String::new();
        let mut qrels = String::from("query-id\tcorpus-id\tscore\n");
        for (id, text, judged) in JUDGED {
            queries.push_str(&format!(
                "{}\n",
                serde_json::json!({"_id": id, "text": text})
            ));
            for (doc, grade) in *judged {
                qrels.push_str(&format!("{id}\t{doc}\t{grade}\n"));
            }
        }
        std::fs::write(d.join("queries.jsonl"), queries).unwrap();
        std::fs::write(d.join("qrels/test.tsv"), qrels).unwrap();
        d
    })
}

#[test]
fn beir_mutants() {
    let dir = beir_folder();
    let seeds: Vec<Seed> = ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"]
        .iter()
        .map(|f| Seed::in_folder(dir, f))
        .collect();
    let check: Check = Arc::new(|m: &Mutant| {
        let corpus =
            match chunkscope_core::cases::load_corpus(m.path, &CorpusRules::default(), &mut |_| {})
            {
                Ok(c) => c,
                Err(e) => return message("load_corpus(BEIR)", &format!("{e:#}"), Some(m.path)),
            };
        match Cases::load(m.path, None, &corpus) {
            Ok(cases) => spans_hold(&cases, &corpus),
            Err(e) => message("Cases::load(BEIR)", &format!("{e:#}"), Some(m.path)),
        }
    });
    run(
        Reader {
            name: "beir",
            seeds,
            mutants: 500,
            check,
            repair: None,
        },
        false,
    );
}

// ---------------------------------------------------------------------------------------------
// Stores.

/// Chunks of the examples as two ecosystems export them: LangChain Documents (page_content,
/// metadata with source and start_index, an embedding) and LlamaIndex nodes (id_, text,
/// start_char_idx/end_char_idx, metadata).
fn jsonl_seeds() -> Vec<Seed> {
    let ex = common::repo().join("examples");
    let mut lc = String::new();
    let mut li = String::new();
    let mut n = 0;
    for p in ["policy/refunds.md", "notes/oncall-faq.txt"] {
        let text = std::fs::read_to_string(ex.join(p)).unwrap();
        let mut start = 0;
        for piece in text.split_inclusive("\n\n").take(5) {
            let v: Vec<f32> = (0..8)
                .map(|k| ((n * 8 + k) as f32 * 0.37).sin() * 0.5)
                .collect();
            lc.push_str(
                &serde_json::json!({
                    "id": format!("lc-{n:04}"),
                    "page_content": piece,
                    "metadata": {"source": p, "start_index": start},
                    "embedding": v,
                })
                .to_string(),
            );
            lc.push('\n');
            li.push_str(
                &serde_json::json!({
                    "id_": format!("node-{n}"),
                    "text": piece,
                    "start_char_idx": text[..start].chars().count(),
                    "end_char_idx": text[..start + piece.len()].chars().count(),
                    "metadata": {"file_path": p, "page": 1},
                    "ref_doc_id": p,
                })
                .to_string(),
            );
            li.push('\n');
            start += piece.len();
            n += 1;
        }
    }
    vec![
        Seed::file("LangChain Documents", "chunks.jsonl", lc.into_bytes()),
        Seed::file("LlamaIndex nodes", "chunks.jsonl", li.into_bytes()),
    ]
}

#[test]
fn jsonl_store_mutants() {
    let check: Check = Arc::new(|m: &Mutant| {
        let uri = format!("jsonl:{}", m.path.display());
        let opts = chunkscope_core::store::StoreOptions::default();
        match chunkscope_core::store::open(&uri, &opts, &mut |_, _| {}) {
            Ok(store) => {
                for c in &store.chunks {
                    let _ = c.embedded(&c.text);
                }
                Ok(())
            }
            Err(e) => message("store::open(jsonl)", &e.to_string(), Some(m.path)),
        }
    });
    run(
        Reader {
            name: "jsonl_store",
            seeds: jsonl_seeds(),
            mutants: 600,
            check,
            repair: None,
        },
        false,
    );
}

#[test]
fn llamaindex_store_mutants() {
    let dir = common::repo().join("tests/fixtures/llamaindex-mini");
    let seeds: Vec<Seed> = [
        "docstore.json",
        "default__vector_store.json",
        "index_store.json",
    ]
    .iter()
    .map(|f| Seed::in_folder(&dir, f))
    .collect();
    let check: Check = Arc::new(|m: &Mutant| {
        let uri = format!("llamaindex:{}", m.path.display());
        match chunkscope_core::store::open(&uri, &Default::default(), &mut |_, _| {}) {
            Ok(_) => Ok(()),
            Err(e) => message("store::open(llamaindex)", &e.to_string(), Some(m.path)),
        }
    });
    run(
        Reader {
            name: "llamaindex_store",
            seeds,
            mutants: 600,
            check,
            repair: None,
        },
        false,
    );
}

// ---------------------------------------------------------------------------------------------
// Model folders: config.json and the sentence-transformers files, read by every reader that
// reads them, and a folder the native embedder accepts loaded and run on a few tokens.

/// The JSON files of the tiny model folders that a reader reads.
const MODEL_FILES: &[&str] = &[
    "config.json",
    "config.json",
    "config.json",
    "modules.json",
    "1_Pooling/config.json",
    "2_Dense/config.json",
    "2_Dense/config.json",
    "2_Dense/config.json",
    "config_sentence_transformers.json",
    "sentence_bert_config.json",
    "tokenizer_config.json",
];

#[test]
fn model_config_mutants() {
    use chunkscope_core::embed::bert::{Bert, BertConfig};
    use chunkscope_core::embed::{hf_config, st::StModules};
    use chunkscope_core::model::ModelInfo;
    let mut seeds = Vec::new();
    for root in ["tests/fixtures/tiny", "tests/fixtures/tiny-st3"] {
        let root = common::repo().join(root);
        let mut folders: Vec<PathBuf> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        folders.sort();
        for f in folders {
            // config.json thrice (what most readers read), the Dense config thrice (one folder
            // has one).
            for file in MODEL_FILES {
                if f.join(file).is_file() {
                    seeds.push(Seed::in_folder(&f, file));
                }
            }
        }
    }
    assert!(
        seeds.len() > 50,
        "the tiny model folders are in tests/fixtures"
    );
    let check: Check = Arc::new(|m: &Mutant| {
        let dir = m.path;
        let config = dir.join("config.json");
        if let Err(e) = hf_config::read(&config) {
            message("hf_config::read", &format!("{e:#}"), Some(&config))?;
        }
        let bert = BertConfig::from_file(&config);
        if let Err(e) = &bert {
            message("BertConfig::from_file", &format!("{e:#}"), Some(&config))?;
        }
        if let Err(e) = StModules::read(dir) {
            message("StModules::read", &format!("{e:#}"), Some(dir))?;
        }
        if let Err(e) = ModelInfo::from_dir("mutant", dir, "a test") {
            message("ModelInfo::from_dir", &format!("{e:#}"), Some(dir))?;
        }
        if bert.is_ok() {
            match Bert::load(dir) {
                Ok(b) => {
                    let v = b.embed(&[vec![1, 5, 7, 2]]);
                    if v.len() != 1 {
                        return Err(format!("one sequence embedded as {} vectors", v.len()));
                    }
                }
                // Its errors name config.json or model.safetensors in the folder.
                Err(e) => message("Bert::load", &format!("{e:#}"), Some(dir))?,
            }
        }
        Ok(())
    });
    run(
        Reader {
            name: "model_config",
            seeds,
            mutants: 1000,
            check,
            repair: None,
        },
        false,
    );
}

/// The mutants that crashed or panicked before their fixes, kept as fixed cases: model configs
/// whose sizes overflowed the load's arithmetic or reserved terabytes (an abort), HTML and DOCX
/// nested deeper than the converters' recursion fits in a thread's stack (an abort).
#[test]
fn known_crashers_are_refused_with_a_message() {
    use chunkscope_core::embed::bert::{Bert, BertConfig};
    let work =
        std::env::temp_dir().join(format!("chunkscope-known-crashers-{}", std::process::id()));
    let tiny = common::repo().join("tests/fixtures/tiny");
    for (folder, from, to) in [
        (
            "bert-relu",
            "\"num_hidden_layers\": 2",
            "\"num_hidden_layers\": 4294967296",
        ),
        (
            "bert-relu",
            "\"hidden_size\": 32",
            "\"hidden_size\": 4294967296",
        ),
        (
            "bert-relu",
            "\"max_position_embeddings\": 128",
            "\"max_position_embeddings\": 18446744073709551615",
        ),
        (
            "xlm-roberta-e5",
            "\"pad_token_id\": 1",
            "\"pad_token_id\": 18446744073709551615",
        ),
        (
            "mpnet-mean",
            "\"num_attention_heads\": 2",
            "\"num_attention_heads\": 18446744073709551615",
        ),
    ] {
        let src = tiny.join(folder);
        let config = std::fs::read_to_string(src.join("config.json")).unwrap();
        assert!(config.contains(from), "{folder}: {from}");
        let dir = work.join(folder);
        mirror(
            &src,
            &dir,
            "config.json",
            config.replace(from, to).as_bytes(),
        );
        let file = dir.join("config.json");
        let e = BertConfig::from_file(&file).map(|_| ()).unwrap_err();
        message(to, &format!("{e:#}"), Some(&file)).unwrap();
        let e = Bert::load(&dir).map(|_| ()).unwrap_err();
        message(to, &format!("{e:#}"), Some(&file)).unwrap();
    }
    // Documents nested past what the converters recurse into, read as a corpus on a thread of
    // the default (2 MB) stack.
    let docs = work.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
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
    let page: String = (0..20_000)
        .map(|i| format!("<{}>w{i} ", tags[i % tags.len()]))
        .collect();
    std::fs::write(docs.join("deep.html"), page).unwrap();
    let mut parts = handmade_docx_parts();
    parts[2].1 = format!(
        "<w:document xmlns:w=\"{W_NS}\"><w:body><w:p>{}<w:r><w:t>deep</w:t></w:r>{}</w:p></w:body></w:document>",
        "<w:smartTag>".repeat(100_000),
        "</w:smartTag>".repeat(100_000)
    )
    .into_bytes();
    std::fs::write(docs.join("deep.docx"), stored_zip(&parts)).unwrap();
    let corpus = std::thread::spawn(move || Corpus::load(&docs, &CorpusRules::default()).unwrap())
        .join()
        .unwrap();
    let reasons: Vec<(&str, &str)> = corpus
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    for (_, r) in &reasons {
        assert!(r.contains("nested more than"), "{reasons:?}");
    }
    let _ = std::fs::remove_dir_all(&work);
}
