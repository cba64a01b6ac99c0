//! Attribute values: content cut to a size backends accept, counts as
//! integers.

use opentelemetry::Value;

/// Most bytes of a prompt, answer, argument or result kept with
/// `--trace-content` (backends refuse or truncate huge attributes anyway).
pub(crate) const CONTENT_CAP: usize = 8 * 1024;

/// `text` cut to [`CONTENT_CAP`] bytes, at a character boundary.
pub(super) fn capped(text: &str) -> String {
    if text.len() <= CONTENT_CAP {
        return text.to_owned();
    }
    let mut end = CONTENT_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

pub(super) fn int(n: u64) -> Value {
    Value::I64(i64::try_from(n).unwrap_or(i64::MAX))
}
