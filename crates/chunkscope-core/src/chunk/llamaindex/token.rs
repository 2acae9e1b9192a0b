//! TokenTextSplitter: the text cut at spaces (then line breaks, then characters) into pieces of at
//! most the size, merged greedily with whole pieces of overlap.

use super::{char_pieces, keep_sep, stripped, Counter};

/// Where TokenTextSplitter cuts `text[s..e]` when it is over the size: at spaces, else at line
/// breaks, else into characters (separators kept at the start of the next piece).
fn token_cut(text: &str, s: usize, e: usize) -> Vec<(usize, usize)> {
    let mut cut = keep_sep(text, s, e, " ");
    if cut.len() <= 1 {
        cut = keep_sep(text, s, e, "\n");
        if cut.len() <= 1 {
            cut = char_pieces(text, s, e);
        }
    }
    cut
}

/// One piece of a cut: kept when it fits (or when it is the cut's only piece), else cut again.
fn token_piece(
    text: &str,
    (a, b): (usize, usize),
    single: bool,
    size: usize,
    counter: &Counter,
    out: &mut Vec<(usize, usize, usize)>,
) {
    let tokens = counter.count(&text[a..b]);
    if tokens <= size || single {
        out.push((a, b, tokens));
    } else {
        token_pieces_of(text, a, b, size, counter, out);
    }
}

fn token_pieces_of(
    text: &str,
    s: usize,
    e: usize,
    size: usize,
    counter: &Counter,
    out: &mut Vec<(usize, usize, usize)>,
) {
    let tokens = counter.count(&text[s..e]);
    if tokens <= size {
        out.push((s, e, tokens));
        return;
    }
    let cut = token_cut(text, s, e);
    let single = cut.len() == 1;
    for piece in cut {
        token_piece(text, piece, single, size, counter, out);
    }
}

/// TokenTextSplitter's chunks of `text` as byte ranges (stripped, non-empty), stopping once
/// `limit` are found (pieces are made and merged in order, the text cut at spaces first, so
/// these are the whole text's first `limit`); and whether they are all of them.
pub(super) fn token_split(
    text: &str,
    size: usize,
    overlap: usize,
    counter: &Counter,
    limit: usize,
) -> (Vec<(usize, usize)>, bool) {
    let mut pieces: Vec<(usize, usize, usize)> = Vec::new();
    let mut chunks = Vec::new();
    // Pieces merged so far; the current chunk's first piece, and its tokens.
    let (mut merged, mut from, mut len) = (0usize, 0usize, 0usize);
    let mut merge = |pieces: &[(usize, usize, usize)], chunks: &mut Vec<(usize, usize)>| {
        for (i, &(_, _, tokens)) in pieces.iter().enumerate().skip(merged) {
            if len + tokens > size {
                if i > from {
                    chunks.push((pieces[from].0, pieces[i - 1].1));
                }
                while from < i && (len > overlap || len + tokens > size) {
                    len -= pieces[from].2;
                    from += 1;
                }
            }
            len += tokens;
        }
        merged = pieces.len();
    };
    // `token_pieces_of` on the whole text, one piece of its first cut at a time.
    let whole_count = counter.count(text);
    let cut = if whole_count <= size {
        vec![(0, text.len())]
    } else {
        token_cut(text, 0, text.len())
    };
    let single = cut.len() == 1;
    let (mut checked, mut kept) = (0, 0);
    for piece in cut {
        if whole_count <= size {
            pieces.push((piece.0, piece.1, whole_count));
        } else {
            token_piece(text, piece, single, size, counter, &mut pieces);
        }
        merge(&pieces, &mut chunks);
        if limit != usize::MAX {
            // Chunks that strip to nothing are dropped: only the others count.
            kept += stripped(text, chunks[checked..].iter().copied()).len();
            checked = chunks.len();
            if kept >= limit {
                return (stripped(text, chunks.into_iter()), false);
            }
        }
    }
    if pieces.len() > from {
        chunks.push((pieces[from].0, pieces[pieces.len() - 1].1));
    }
    (stripped(text, chunks.into_iter()), true)
}
