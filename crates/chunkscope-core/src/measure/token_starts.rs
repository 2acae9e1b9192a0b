//! Where each embed token of a chunk starts, held in about one byte a token: every chunking on
//! screen keeps this for all its chunks (two while a knob is turned), so four bytes a token
//! would cost more than the corpus text itself.
//!
//! Each token is stored as the distance from the previous token's start; a distance of 255 or
//! more, or one that goes back, is marked and its start kept aside.

/// The mark of a start kept in `TokenStarts::far`.
const FAR: u8 = u8::MAX;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenStarts {
    steps: Box<[u8]>,
    /// (token, start) of the tokens marked `FAR`, by token.
    far: Box<[(u32, u32)]>,
}

impl FromIterator<u32> for TokenStarts {
    fn from_iter<I: IntoIterator<Item = u32>>(starts: I) -> Self {
        let starts = starts.into_iter();
        let mut b = StartsBuilder::with_capacity(starts.size_hint().0);
        starts.for_each(|s| b.push(s));
        b.finish()
    }
}

/// `TokenStarts` built one start at a time, in order.
pub struct StartsBuilder {
    steps: Vec<u8>,
    far: Vec<(u32, u32)>,
    prev: u32,
}

impl StartsBuilder {
    /// A builder with room for `tokens` starts.
    pub fn with_capacity(tokens: usize) -> StartsBuilder {
        StartsBuilder {
            steps: Vec::with_capacity(tokens),
            far: Vec::new(),
            prev: 0,
        }
    }

    pub fn push(&mut self, start: u32) {
        match start.checked_sub(self.prev) {
            Some(d) if d < u32::from(FAR) => self.steps.push(d as u8),
            _ => {
                self.far.push((self.steps.len() as u32, start));
                self.steps.push(FAR);
            }
        }
        self.prev = start;
    }

    pub fn finish(self) -> TokenStarts {
        TokenStarts {
            steps: self.steps.into_boxed_slice(),
            far: self.far.into_boxed_slice(),
        }
    }
}

impl TokenStarts {
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Every start, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let mut far = self.far.iter();
        self.steps.iter().scan(0u32, move |at, &d| {
            *at = match d {
                FAR => far.next().map_or(*at, |&(_, s)| s),
                d => *at + u32::from(d),
            };
            Some(*at)
        })
    }

    /// The start of token `k`.
    pub fn get(&self, k: usize) -> Option<u32> {
        if k >= self.len() {
            return None;
        }
        // Walk from the last start kept aside at or before `k`.
        let f = self.far.partition_point(|&(t, _)| t as usize <= k);
        let (from, mut at) = match f.checked_sub(1) {
            Some(i) => (self.far[i].0 as usize, self.far[i].1),
            None => (0, u32::from(self.steps[0])),
        };
        for &d in &self.steps[from + 1..=k] {
            at += u32::from(d);
        }
        Some(at)
    }

    /// The token that byte `b` falls in: the last one starting at or before `b` (0 if none).
    pub fn token_at_byte(&self, b: usize) -> usize {
        self.iter()
            .take_while(|&s| s as usize <= b)
            .count()
            .saturating_sub(1)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.steps.len() + self.far.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_come_back() {
        let want = [0u32, 3, 3, 7, 400, 401, 2, 2000, 2254, 2255];
        let t: TokenStarts = want.iter().copied().collect();
        assert_eq!(t.iter().collect::<Vec<_>>(), want);
        let got: Vec<u32> = (0..want.len()).map(|k| t.get(k).unwrap()).collect();
        assert_eq!(got, want);
        assert_eq!(t.get(want.len()), None);
        assert_eq!(t.token_at_byte(5), 2);
        assert_eq!(t.token_at_byte(0), 0);
        assert!(t.heap_bytes() < want.len() * 4);
        // A first start past 254 is kept aside too.
        let t: TokenStarts = [300u32, 301].into_iter().collect();
        assert_eq!(t.iter().collect::<Vec<_>>(), [300, 301]);
        assert_eq!(t.get(1), Some(301));
    }
}
