#!/usr/bin/env python3
r"""Reference port of Spring AI 2.0 TokenTextSplitter (spring-ai-commons,
org.springframework.ai.transformer.splitter), used to produce expected chunks
for chunkscope's tests.

Source read: spring-projects/spring-ai main branch (version 2.0.2-SNAPSHOT;
the splitting logic is identical in the v2.0.0 and v2.0.1 tags, only builder
argument validation was added after 2.0.0). Tokenizer in Spring AI: jtokkit
1.1.0, EncodingType.CL100K_BASE. Here: tiktoken "cl100k_base" (same ranks and
the same pre-tokenisation split; jtokkit's hand-written cl100k parser is meant
to be equivalent to the cl100k regex, including case-insensitive contractions).
Cross-checked chunk-for-chunk (prose, markdown, code, CJK, emoji runs, CRLF,
whitespace/control-only, special tokens, maxNumChunks cut-off, chunk sizes
1..800, keepSeparator on/off, plus a random multibyte fuzz) against the
unmodified Java class compiled with jtokkit 1.1.0 on JDK 17: identical output,
including U+FFFD placement.

Behaviour reproduced (every quirk of TokenTextSplitter.doSplit):

 1. Defaults: chunkSize=800 tokens, minChunkSizeChars=350, minChunkLengthToEmbed=5,
    maxNumChunks=10000, keepSeparator=true, punctuation marks ['.', '?', '!', '\n'].
    Builder validation: chunkSize > 0, maxNumChunks > 0, minChunkSizeChars >= 0,
    minChunkLengthToEmbed >= 0, punctuation list non-empty.
 2. "trim" everywhere is Java String.trim(): strips leading/trailing chars whose
    code is <= U+0020 (all ASCII control chars + space), and nothing else
    (U+00A0, U+3000, U+2028 ... survive).
 3. If text.trim() is empty -> no chunks at all.
 4. tokens = encode(text) once, for the whole text. jtokkit encode() (like
    tiktoken's encode() default) rejects text containing a special token such
    as "<|endoftext|>" (Java: UnsupportedOperationException; here: error).
 5. Loop while tokens remain and numChunks < maxNumChunks:
    a. window = first min(chunkSize, remaining) tokens;
       chunkText = decode(window) = concatenated token bytes decoded as UTF-8
       with replacement (Java new String(bytes, UTF_8) ~ bytes.decode('utf-8',
       'replace')). A window boundary inside a multi-byte character therefore
       yields U+FFFD at the end of this chunk (and at the start of the next).
    b. If chunkText.trim() is empty: drop the whole window (advance by the
       window length) and continue; this does NOT count toward maxNumChunks.
    c. Only if remaining token count > chunkSize (strictly; i.e. not for the
       final window): p = max over marks of chunkText.lastIndexOf(mark)
       (a UTF-16 index). If p != -1 and p > minChunkSizeChars (strict, compared
       in UTF-16 code units) then chunkText = chunkText.substring(0, p + 1)
       (keeps the punctuation char itself).
    d. keepSeparator=true  -> toAppend = chunkText.trim()
       keepSeparator=false -> toAppend = chunkText.replace(System.lineSeparator(),
       " ").trim()  (literal replace; lineSeparator is "\n" on Linux/macOS,
       "\r\n" on Windows; default here "\n"). keepSeparator=true leaves text as is.
    e. Keep toAppend only if toAppend.length() > minChunkLengthToEmbed (strict,
       UTF-16 code units: astral chars such as emoji count 2).
    f. Cursor advance = len(encode(chunkText)) -- the (possibly cut, UNtrimmed)
       chunk text is RE-ENCODED and that many tokens are dropped from the
       front of the ORIGINAL token list. This is not necessarily the number of
       tokens the chunk came from: U+FFFD from a split character re-encodes to
       a different token count, and BPE of a prefix may differ from the prefix
       of the BPE. So chunks can overlap / skip a token, and if the "final"
       window re-encodes shorter, the loop runs again on the leftover tail
       (an extra, often U+FFFD-led, chunk). If the re-encoded
       count exceeds the remaining token count, Java's subList throws
       IndexOutOfBoundsException (reproduced here as an error).
    g. numChunks += 1 (counted even when the chunk was dropped in e).
 6. After the loop (tokens are left only when maxNumChunks was reached):
    remaining = decode(all remaining tokens)
    .replace(lineSeparator, " ").trim() -- newline replacement happens here
    REGARDLESS of keepSeparator -- and it is appended (as ONE chunk, not
    re-split, no size limit) if its length() > minChunkLengthToEmbed.
 7. Multiple documents are split independently (TextSplitter.createDocuments);
    a null document text is treated as "".

Interface: JSON on stdin
  {"texts": [str, ...], "chunk_size": 800, "min_chunk_size_chars": 350,
   "min_chunk_length_to_embed": 5, "max_num_chunks": 10000,
   "keep_separator": true,
   "punctuation_marks": [".", "?", "!", "\n"],   (optional, single BMP chars)
   "line_separator": "\n",                       (optional, Java's lineSeparator)
   "cl100k_file": null}                             (optional, see load_cl100k)
JSON on stdout: {"chunks": [[str, ...] per input text]}; if a text raises the
Java-equivalent exception its entry is null and an "errors" list (message or
null per text) is added.
"""

import glob
import json
import os
import sys

import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as openai_public

JAVA_TRIM_CHARS = "".join(chr(c) for c in range(0x21))
DEFAULT_PUNCTUATION = [".", "?", "!", "\n"]


def _local_cl100k_candidates(explicit):
    if explicit:
        yield explicit
    env = os.environ.get("CL100K_BASE_TIKTOKEN")
    if env:
        yield env
    # tiktoken-rs ships the identical ranks file; reuse it when present.
    cargo_home = os.environ.get("CARGO_HOME") or os.path.expanduser("~/.cargo")
    pattern = os.path.join(
        cargo_home, "registry/src/*/tiktoken-rs-*/assets/cl100k_base.tiktoken")
    for path in sorted(glob.glob(pattern)):
        yield path


def load_cl100k(explicit_path=None):
    """cl100k_base as a tiktoken Encoding without needing network access.

    tiktoken.get_encoding() downloads the ranks file on first use. To work
    offline we feed tiktoken's own cl100k_base() constructor (official regex,
    special tokens and sha256 check) a local copy of the ranks file, looked up
    in: the "cl100k_file" request field, $CL100K_BASE_TIKTOKEN, then
    tiktoken-rs's bundled asset in the cargo registry ($CARGO_HOME). Falls back to
    tiktoken.get_encoding("cl100k_base") (download or TIKTOKEN_CACHE_DIR).
    """
    for path in _local_cl100k_candidates(explicit_path):
        if os.path.isfile(path):
            def from_local(_url, expected_hash=None, _path=path):
                return tiktoken.load.load_tiktoken_bpe(_path, expected_hash=expected_hash)
            saved = openai_public.load_tiktoken_bpe
            openai_public.load_tiktoken_bpe = from_local
            try:
                return tiktoken.Encoding(**openai_public.cl100k_base())
            finally:
                openai_public.load_tiktoken_bpe = saved
    return tiktoken.get_encoding("cl100k_base")


def java_trim(s):
    return s.strip(JAVA_TRIM_CHARS)


def utf16_len(s):
    # Java String.length(): UTF-16 code units.
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


class JavaIndexOutOfBounds(Exception):
    pass


class TokenTextSplitterPort:
    def __init__(self, chunk_size=800, min_chunk_size_chars=350,
                 min_chunk_length_to_embed=5, max_num_chunks=10000,
                 keep_separator=True, punctuation_marks=None,
                 line_separator="\n", cl100k_file=None):
        if chunk_size <= 0:
            raise ValueError("chunkSize must be greater than zero")
        if max_num_chunks <= 0:
            raise ValueError("maxNumChunks must be greater than zero")
        if min_chunk_size_chars < 0:
            raise ValueError("minChunkSizeChars must not be negative")
        if min_chunk_length_to_embed < 0:
            raise ValueError("minChunkLengthToEmbed must not be negative")
        marks = DEFAULT_PUNCTUATION if punctuation_marks is None else punctuation_marks
        if not marks:
            raise ValueError("punctuationMarks must not be empty")
        for m in marks:
            if len(m) != 1 or ord(m) > 0xFFFF:
                raise ValueError("each punctuation mark must be one Java char")
        self.enc = load_cl100k(cl100k_file)
        self.chunk_size = chunk_size
        self.min_chunk_size_chars = min_chunk_size_chars
        self.min_chunk_length_to_embed = min_chunk_length_to_embed
        self.max_num_chunks = max_num_chunks
        self.keep_separator = keep_separator
        self.marks = list(marks)
        self.line_separator = line_separator

    def _encode(self, text):
        # disallowed_special="all" (tiktoken default) raises on special-token
        # text, like jtokkit's encode().
        return self.enc.encode(text)

    def _decode(self, toks):
        return self.enc.decode_bytes(toks).decode("utf-8", "replace")

    def _last_punctuation(self, s):
        """Returns (python_index, java_utf16_index) of the last mark, or (-1, -1)."""
        p = max(s.rfind(m) for m in self.marks)
        if p == -1:
            return -1, -1
        return p, utf16_len(s[:p]) if p else 0

    def split(self, text):
        if text is None:
            text = ""
        if java_trim(text) == "":
            return []
        tokens = self._encode(text)
        n = len(tokens)
        pos = 0  # start of Java's "tokens" subList within the original list
        chunks = []
        num_chunks = 0
        while pos < n and num_chunks < self.max_num_chunks:
            remaining = n - pos
            window = tokens[pos:pos + min(self.chunk_size, remaining)]
            chunk_text = self._decode(window)

            if java_trim(chunk_text) == "":
                pos += len(window)
                continue

            if remaining > self.chunk_size:
                p, p16 = self._last_punctuation(chunk_text)
                if p != -1 and p16 > self.min_chunk_size_chars:
                    chunk_text = chunk_text[:p + 1]

            if self.keep_separator:
                to_append = java_trim(chunk_text)
            else:
                to_append = java_trim(chunk_text.replace(self.line_separator, " "))
            if utf16_len(to_append) > self.min_chunk_length_to_embed:
                chunks.append(to_append)

            advance = len(self._encode(chunk_text))
            if advance > remaining:
                raise JavaIndexOutOfBounds(
                    "subList fromIndex(%d) > toIndex(%d)" % (advance, remaining))
            pos += advance
            num_chunks += 1

        if pos < n:
            rest = java_trim(self._decode(tokens[pos:]).replace(self.line_separator, " "))
            if utf16_len(rest) > self.min_chunk_length_to_embed:
                chunks.append(rest)
        return chunks


def main():
    req = json.load(sys.stdin)
    splitter = TokenTextSplitterPort(
        chunk_size=req.get("chunk_size", 800),
        min_chunk_size_chars=req.get("min_chunk_size_chars", 350),
        min_chunk_length_to_embed=req.get("min_chunk_length_to_embed", 5),
        max_num_chunks=req.get("max_num_chunks", 10000),
        keep_separator=req.get("keep_separator", True),
        punctuation_marks=req.get("punctuation_marks"),
        line_separator=req.get("line_separator", "\n"),
        cl100k_file=req.get("cl100k_file"),
    )
    out_chunks, errors = [], []
    for text in req.get("texts", []):
        try:
            out_chunks.append(splitter.split(text))
            errors.append(None)
        except (JavaIndexOutOfBounds, ValueError) as e:
            out_chunks.append(None)
            errors.append("%s: %s" % (type(e).__name__, e))
    out = {"chunks": out_chunks}
    if any(e is not None for e in errors):
        out["errors"] = errors
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
