//! Endpoints: the named downstreams of a message kind, stored with the queue so every
//! process sees one list — a webhook kind's customer URLs and their signing secrets, for
//! example. The core keeps each endpoint's settings as the kind's own JSON, whether it is
//! enabled (and why not), and since when it has only failed; what the settings mean is the
//! kind's business.
//!
//! A kind reads an endpoint when it delivers to it, and marks it failing or healthy when
//! its health changes (not on every delivery); operators list, disable and enable
//! endpoints through [`Admin::endpoints`](crate::admin::Admin::endpoints).

use std::time::SystemTime;

/// Longest kind name of an endpoint, in bytes.
pub const MAX_ENDPOINT_KIND_LEN: usize = 100;

/// Longest endpoint name, in bytes.
pub const MAX_ENDPOINT_NAME_LEN: usize = 255;

/// Largest settings of one endpoint, in bytes of JSON.
pub const MAX_ENDPOINT_SETTINGS: usize = 64 * 1024;

/// One endpoint as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The message kind it belongs to (`webhook`).
    pub kind: String,
    /// Its name, unique within the kind.
    pub name: String,
    /// The kind's settings for it, as JSON text.
    pub settings: String,
    /// When it was disabled, while it is.
    pub disabled_at: Option<SystemTime>,
    /// Why, while it is disabled.
    pub disabled_reason: Option<String>,
    /// Since when every delivery to it has failed, while that lasts.
    pub failing_since: Option<SystemTime>,
    /// When it was first stored.
    pub created_at: SystemTime,
    /// When its settings or its state last changed.
    pub updated_at: SystemTime,
}

impl Endpoint {
    /// Whether deliveries to it may go out.
    pub fn is_enabled(&self) -> bool {
        self.disabled_at.is_none()
    }
}

/// Checks an endpoint's kind and name (1 to [`MAX_ENDPOINT_KIND_LEN`] /
/// [`MAX_ENDPOINT_NAME_LEN`] bytes, no control characters) and its settings (JSON of at
/// most [`MAX_ENDPOINT_SETTINGS`] bytes); the error says which and why.
pub fn check_endpoint(kind: &str, name: &str, settings: Option<&str>) -> Result<(), String> {
    for (what, value, max) in [
        ("kind", kind, MAX_ENDPOINT_KIND_LEN),
        ("name", name, MAX_ENDPOINT_NAME_LEN),
    ] {
        if value.is_empty() || value.len() > max {
            return Err(format!(
                "an endpoint's {what} must be 1 to {max} bytes, not {} (`{}`)",
                value.len(),
                value.chars().take(40).collect::<String>()
            ));
        }
        if value.chars().any(char::is_control) {
            return Err(format!(
                "an endpoint's {what} may not hold control characters: {value:?}"
            ));
        }
    }
    if let Some(settings) = settings {
        if settings.len() > MAX_ENDPOINT_SETTINGS {
            return Err(format!(
                "endpoint `{name}`: its settings are {} bytes of JSON, more than the {} allowed",
                settings.len(),
                MAX_ENDPOINT_SETTINGS
            ));
        }
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(settings) {
            return Err(format!(
                "endpoint `{name}`: its settings are not JSON ({e})"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_settings_are_checked() {
        assert!(check_endpoint("webhook", "acme", Some("{}")).is_ok());
        assert!(check_endpoint("", "acme", None)
            .unwrap_err()
            .contains("kind"));
        assert!(check_endpoint("webhook", "", None)
            .unwrap_err()
            .contains("name"));
        assert!(check_endpoint("webhook", "a\nb", None)
            .unwrap_err()
            .contains("control"));
        let long = "x".repeat(256);
        assert!(check_endpoint("webhook", &long, None).is_err());
        assert!(check_endpoint("webhook", "acme", Some("{nope"))
            .unwrap_err()
            .contains("not JSON"));
        let big = format!("\"{}\"", "x".repeat(MAX_ENDPOINT_SETTINGS));
        assert!(check_endpoint("webhook", "acme", Some(&big))
            .unwrap_err()
            .contains("bytes"));
    }
}
