//! Setting values read from text (a URL's query), shared by every transport's settings.

use std::time::Duration;

use crate::ConfigError;

/// `500ms`, `10s`, `2m`, `1h`, or a number of seconds.
pub(crate) fn duration(key: &str, value: &str) -> Result<Duration, ConfigError> {
    let bad = || {
        ConfigError::new(
            key,
            format!("{value:?} is not a duration such as 500ms, 10s, 2m or 1h"),
        )
    };
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: u64 = digits.parse().map_err(|_| bad())?;
    Ok(match &value[digits.len()..] {
        "ms" => Duration::from_millis(n),
        "" | "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(bad()),
    })
}
