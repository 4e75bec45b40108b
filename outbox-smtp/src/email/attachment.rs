//! Small files sent with an email; they travel inside the queued message.

use std::fmt;

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The most attachment bytes one email may carry, all attachments together (1 MiB).
///
/// Attachments are stored in the queued row (base64 in JSON), so large files slow the queue
/// down for every message; put them in object storage and send a link instead.
pub const MAX_ATTACHMENT_BYTES: usize = 1024 * 1024;

/// A file attached to an email: its name, its MIME type and its bytes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The file name shown to the recipient (`invoice-42.pdf`), without a directory.
    pub file_name: String,
    /// The MIME type (`application/pdf`, `text/csv; charset=utf-8`).
    pub content_type: String,
    /// The file's bytes (stored as base64 in the queued message).
    #[serde(serialize_with = "to_base64", deserialize_with = "from_base64")]
    pub bytes: Vec<u8>,
}

impl Attachment {
    /// An attachment named `file_name` of type `content_type`.
    pub fn new(
        file_name: impl Into<String>,
        content_type: impl Into<String>,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        Self {
            file_name: file_name.into(),
            content_type: content_type.into(),
            bytes: bytes.into(),
        }
    }

    /// Checks the name and type (the size is checked across all attachments).
    pub(crate) fn check(&self) -> Result<(), String> {
        let name = self.file_name.trim();
        if name.is_empty() {
            return Err("the file name is empty; give the file a name such as report.pdf".into());
        }
        super::address::check_header_text(&self.file_name)
            .map_err(|why| format!("the file name {why}"))?;
        if name.contains(['/', '\\']) {
            return Err(format!(
                "the file name {:?} contains a path separator; give the bare file name",
                self.file_name
            ));
        }
        super::address::check_header_text(&self.content_type)
            .map_err(|why| format!("the content type {why}"))?;
        lettre::message::header::ContentType::parse(self.content_type.trim()).map_err(|_| {
            format!(
                "the content type {:?} is not a MIME type; write it as type/subtype, \
                 e.g. application/pdf",
                self.content_type
            )
        })?;
        Ok(())
    }
}

impl fmt::Debug for Attachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attachment")
            .field("file_name", &self.file_name)
            .field("content_type", &self.content_type)
            .field("bytes", &format_args!("{} bytes", self.bytes.len()))
            .finish()
    }
}

fn to_base64<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn from_base64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let text = String::deserialize(d)?;
    base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .map_err(|e| serde::de::Error::custom(format!("attachment bytes are not base64: {e}")))
}
