//! What the HTTP clients (a Chroma server, an embedding server) share.

/// An answer's JSON, read whole first: parsing straight from the response's reader goes a byte at
/// a time through its layers (five times the CPU on pages of vectors).
pub(crate) fn json_body<T: serde::de::DeserializeOwned>(
    answer: ureq::Response,
) -> Result<T, String> {
    use std::io::Read;
    let mut body = Vec::new();
    answer
        .into_reader()
        .read_to_end(&mut body)
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&body).map_err(|e| e.to_string())
}
