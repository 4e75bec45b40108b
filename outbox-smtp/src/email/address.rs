//! Mailboxes: an address with an optional display name, as the application writes them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An email address with an optional display name (`Ada Lovelace <ada@example.com>`).
///
/// Converting from a string never fails: `"ada@example.com"` and
/// `"Ada Lovelace <ada@example.com>"` are split into name and address, and anything else
/// is kept as it is, so that [`Email::validate`](crate::Email) (run by the builder and
/// again at enqueue) reports it with the field it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mailbox {
    /// The display name, if any (`Ada Lovelace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The address (`ada@example.com`).
    pub address: String,
}

impl Mailbox {
    /// A mailbox with a display name.
    pub fn named(name: impl Into<String>, address: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            address: address.into(),
        }
    }

    /// A bare address without a display name.
    pub fn address(address: impl Into<String>) -> Self {
        Self {
            name: None,
            address: address.into(),
        }
    }

    /// The domain part of the address, if it has one.
    pub fn domain(&self) -> Option<&str> {
        self.address
            .rsplit_once('@')
            .map(|(_, domain)| domain)
            .filter(|d| !d.is_empty())
    }

    /// Checks the name and the address; `Err` says what is wrong.
    pub(crate) fn check(&self) -> Result<(), String> {
        if let Some(name) = &self.name {
            check_header_text(name).map_err(|why| format!("the display name {why}"))?;
        }
        check_header_text(&self.address).map_err(|why| format!("the address {why}"))?;
        self.to_lettre().map(|_| ())
    }

    /// The lettre mailbox for this one; `Err` explains why the address is not valid.
    pub(crate) fn to_lettre(&self) -> Result<lettre::message::Mailbox, String> {
        let email: lettre::Address = self.address.trim().parse().map_err(|e| {
            format!(
                "{:?} is not a valid email address ({e}); write it as user@example.com",
                self.address
            )
        })?;
        let name = self
            .name
            .as_ref()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty());
        Ok(lettre::message::Mailbox::new(name, email))
    }
}

/// Refuses text that would break out of a header: line breaks and other control
/// characters (a tab is allowed).
pub(crate) fn check_header_text(text: &str) -> Result<(), String> {
    if text.contains(['\r', '\n']) {
        return Err(
            "contains a line break (CR or LF), which could inject headers; \
                    remove it"
                .into(),
        );
    }
    if let Some(c) = text.chars().find(|c| c.is_control() && *c != '\t') {
        return Err(format!("contains the control character {c:?}; remove it"));
    }
    Ok(())
}

impl From<&str> for Mailbox {
    fn from(text: &str) -> Self {
        if text.contains(['\r', '\n']) {
            return Self::address(text);
        }
        match text.parse::<lettre::message::Mailbox>() {
            Ok(m) => Self {
                name: m.name.filter(|n| !n.is_empty()),
                address: m.email.to_string(),
            },
            Err(_) => Self::address(text),
        }
    }
}

impl From<String> for Mailbox {
    fn from(text: String) -> Self {
        Self::from(text.as_str())
    }
}

impl From<&String> for Mailbox {
    fn from(text: &String) -> Self {
        Self::from(text.as_str())
    }
}

impl<N: Into<String>, A: Into<String>> From<(N, A)> for Mailbox {
    /// `(name, address)`.
    fn from((name, address): (N, A)) -> Self {
        Self::named(name, address)
    }
}

impl fmt::Display for Mailbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_lettre() {
            Ok(m) => fmt::Display::fmt(&m, f),
            Err(_) => f.write_str(&self.address),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_split_into_name_and_address() {
        let m = Mailbox::from("Ada Lovelace <ada@example.com>");
        assert_eq!(m, Mailbox::named("Ada Lovelace", "ada@example.com"));
        assert_eq!(
            Mailbox::from("bob@example.com"),
            Mailbox::address("bob@example.com")
        );
        assert_eq!(Mailbox::from("nonsense").address, "nonsense");
        assert_eq!(Mailbox::from("a@b.example").domain(), Some("b.example"));
    }

    #[test]
    fn checks_refuse_bad_addresses_and_line_breaks() {
        assert!(Mailbox::from("nonsense").check().is_err());
        assert!(
            Mailbox::named("Ada\r\nBcc: x@evil.example", "ada@example.com")
                .check()
                .unwrap_err()
                .contains("line break")
        );
        assert!(Mailbox::from("Ada <ada@example.com>").check().is_ok());
    }
}
