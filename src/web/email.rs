//! An `outbox.email` dead letter shown as the email it is: headers, Message-ID, text body
//! and the HTML body in a sandboxed frame.

use maud::{html, Markup};

use crate::{
    smtp::{Email, Mailbox},
    DeadLetter,
};

/// The email's section, or `None` if the payload is not an email this version reads.
/// `remote_images` says whether the page's policy lets the HTML body load them; `page` is
/// the page's own URL, for the link that turns them on or off.
pub(crate) fn section(
    d: &DeadLetter,
    message_id_domain: Option<&str>,
    remote_images: bool,
    page: &str,
) -> Option<Markup> {
    let email: Email = serde_json::from_slice(&d.payload).ok()?;
    let boxes = |list: &[Mailbox]| {
        list.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut headers: Vec<(String, String)> = vec![
        (
            "Message-ID".into(),
            email.message_id(&d.id, message_id_domain),
        ),
        ("From".into(), email.from.to_string()),
    ];
    for (name, list) in [("To", &email.to), ("Cc", &email.cc), ("Bcc", &email.bcc)] {
        if !list.is_empty() {
            headers.push((name.into(), boxes(list)));
        }
    }
    if let Some(r) = &email.reply_to {
        headers.push(("Reply-To".into(), r.to_string()));
    }
    headers.push(("Subject".into(), email.subject.clone()));
    headers.extend(
        email
            .headers
            .iter()
            .map(|h| (h.name.clone(), h.value.clone())),
    );
    Some(html! {
        section #email {
            h2 { "Email" }
            table {
                @for (name, value) in &headers {
                    tr { th style="width:140px" { (name) } td { (value) } }
                }
                @if !email.tags.is_empty() {
                    tr { th { "Tags" } td.muted { (email.tags.join(", ")) " (never sent)" } }
                }
                @for a in &email.attachments {
                    tr { th { "Attachment" } td { (a.file_name) " · " (a.content_type) " · " (a.bytes.len()) " bytes" } }
                }
            }
            @if let Some(text) = &email.text {
                h2 { "Text body" }
                pre #text-body { (text) }
            }
            @if let Some(body) = &email.html {
                h2 { "HTML body" }
                p.muted.small #remote-images {
                    "Shown in a sandbox: no scripts, forms, or access to this page. "
                    @if remote_images {
                        "Remote images are loaded (their servers see that the email was opened). "
                        a href=(page) { "Block remote images" }
                    } @else {
                        "Remote images are blocked. "
                        a href={ (page) "?remote_images=1" } { "Load remote images" }
                        " (their servers see that the email was opened)"
                    }
                }
                iframe #html-body sandbox="" referrerpolicy="no-referrer" srcdoc=(body) title="HTML body" {}
            }
        }
    })
}
