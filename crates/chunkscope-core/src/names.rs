//! The error of every `FromStr` that picks one of a fixed set of names (a unit, a backend, a
//! precision, a metadata use...): what was given and what would have been accepted.

/// A name that is none of the accepted ones. Reads as
/// `unknown unit 'words' (expected chars, cl100k or embed)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} '{given}' (expected {expected})")]
pub struct UnknownName {
    /// What was being named ("unit", "backend", "metadata use").
    pub what: &'static str,
    pub given: String,
    /// The accepted names, in words ("chars, cl100k or embed").
    pub expected: &'static str,
}

impl UnknownName {
    pub fn new(what: &'static str, given: &str, expected: &'static str) -> UnknownName {
        UnknownName {
            what,
            given: given.to_string(),
            expected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_the_name_and_the_choices() {
        let e = "words".parse::<crate::tokenize::Unit>().unwrap_err();
        assert!(
            matches!(&e, UnknownName { what: "unit", given, .. } if given == "words"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "unknown unit 'words' (expected chars, cl100k or embed)"
        );
    }
}
