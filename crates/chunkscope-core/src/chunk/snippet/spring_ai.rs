//! Spring AI's TokenTextSplitter builder, in Java (the spring-ai strategy).

use super::SnippetError;
use crate::chunk::ChunkSettings;

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

pub(super) fn snippet(s: &ChunkSettings) -> Result<String, SnippetError> {
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
