//! A payload shown the way its kind's view reads it ([`PayloadView`]): a table of fields,
//! text bodies as preformatted text and HTML bodies in a sandboxed frame. The views come
//! from the registry by type tag ([`Views`](crate::kind::Views)); the email kind's shows an
//! `outbox.email` dead letter as the email it is.

use maud::{html, Markup};

use crate::kind::{BodyFormat, PayloadView};

/// The view's section. `remote_images` says whether the page's policy lets an HTML body
/// load them; `page` is the page's own URL, for the link that turns them on or off.
pub(crate) fn section(view: &PayloadView, remote_images: bool, page: &str) -> Markup {
    html! {
        section id=(view.anchor) {
            h2 { (view.title) }
            table {
                @for f in &view.fields {
                    tr {
                        th style="width:140px" { (f.name) }
                        @if f.muted { td.muted { (f.value) } } @else { td { (f.value) } }
                    }
                }
            }
            @for body in &view.bodies {
                h2 { (body.title) }
                @match body.format {
                    BodyFormat::Text => pre id=(body.anchor) { (body.content) },
                    BodyFormat::Html => {
                        p.muted.small #remote-images {
                            "Shown in a sandbox: no scripts, forms, or access to this page. "
                            @if remote_images {
                                "Remote images are loaded (their servers see that the message was opened). "
                                a href=(page) { "Block remote images" }
                            } @else {
                                "Remote images are blocked. "
                                a href={ (page) "?remote_images=1" } { "Load remote images" }
                                " (their servers see that the message was opened)"
                            }
                        }
                        iframe id=(body.anchor) sandbox="" referrerpolicy="no-referrer" srcdoc=(body.content) title=(body.title) {}
                    }
                }
            }
        }
    }
}
