//! Reading a [`MailerConfig`] from a URL. Errors never quote the URL (it may hold a
//! password), only the part that is wrong.

use std::path::PathBuf;

use super::{values::duration, MailerConfig, Security, SmtpConfig, Transport};
use crate::{ConfigError, TestRedirect};

/// Query parameters every transport accepts.
const COMMON: &str = "message_id_domain, test_redirect, test_redirect_domain, test_redirect_only";
/// Query parameters only Postmark accepts (besides the endpoint's).
#[cfg(feature = "providers")]
const POSTMARK_ONLY: &str = "stream";
/// Query parameters only Mailgun accepts (besides the endpoint's).
#[cfg(feature = "providers")]
const MAILGUN_ONLY: &str = "region (us, eu)";
/// Query parameters only Amazon SES accepts (besides the endpoint's).
#[cfg(feature = "providers")]
const SES_ONLY: &str = "configuration_set, tag (NAME:VALUE, repeated)";
/// Query parameters only SendGrid accepts (besides the endpoint's).
#[cfg(feature = "providers")]
const SENDGRID_ONLY: &str = "region (global, eu)";
/// Query parameters only SMTP accepts.
const SMTP_ONLY: &str = "tls, pool, helo, connect_timeout, timeout, idle_timeout, ca_file";

pub(super) fn parse(text: &str) -> Result<MailerConfig, ConfigError> {
    let text = text.trim();
    let (scheme, rest) = text.split_once("://").ok_or_else(|| {
        ConfigError::new(
            "url",
            "expected scheme://..., e.g. smtp://user:password@host:587, smtps://host, \
             file:///path/to/dir or log://",
        )
    })?;
    let (before_query, query) = match rest.split_once('?') {
        Some((a, q)) => (a, q),
        None => (rest, ""),
    };
    let params: Vec<(String, String)> = ::url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let config = match scheme.to_ascii_lowercase().as_str() {
        "smtp" | "smtps" => smtp(text, scheme == "smtps")?,
        "postmark" => postmark(text)?,
        "mailgun" => mailgun(text)?,
        "ses" => ses(text)?,
        "sendgrid" => sendgrid(text)?,
        "resend" => resend(text)?,
        "file" => {
            if before_query.is_empty() {
                return Err(ConfigError::new(
                    "url",
                    "file:// needs a directory: file:///absolute/dir or file://relative/dir",
                ));
            }
            MailerConfig::file(PathBuf::from(before_query))
        }
        "log" => {
            if !before_query.is_empty() {
                return Err(ConfigError::new(
                    "url",
                    "log:// takes no host or path; write log://",
                ));
            }
            MailerConfig::log()
        }
        "capture" => {
            if !before_query.is_empty() {
                return Err(ConfigError::new(
                    "url",
                    "capture:// takes no host or path; write capture://",
                ));
            }
            MailerConfig::capture()
        }
        other => {
            return Err(ConfigError::new(
                "url",
                format!(
                    "unknown scheme {other:?}; use smtp, smtps, postmark, mailgun, ses, sendgrid, \
                     resend, file, log or capture"
                ),
            ))
        }
    };
    apply_params(config, &params)
}

/// The SMTP part: scheme, credentials, host and port. Query parameters come later.
fn smtp(text: &str, implicit: bool) -> Result<MailerConfig, ConfigError> {
    let url = ::url::Url::parse(text)
        .map_err(|e| ConfigError::new("url", format!("not a valid SMTP URL: {e}")))?;
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| ConfigError::new("host", "the URL has no host: smtp://host:587"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if !url.path().is_empty() && url.path() != "/" {
        return Err(ConfigError::new(
            "url",
            "an SMTP URL has no path; put settings in the query (?pool=8)",
        ));
    }
    let mut smtp = SmtpConfig::new(host);
    if implicit {
        smtp = smtp.security(Security::Implicit);
    }
    if let Some(port) = url.port() {
        smtp = smtp.port(port);
    }
    if !url.username().is_empty() {
        let user = decode(url.username(), "user")?;
        let password = decode(url.password().unwrap_or(""), "password")?;
        smtp = smtp.credentials(user, password);
    }
    Ok(MailerConfig::smtp(smtp))
}

/// The Postmark part: the server token and the API host. Query parameters come later.
#[cfg(feature = "providers")]
fn postmark(text: &str) -> Result<MailerConfig, ConfigError> {
    // `postmark://TOKEN@` (no host) means Postmark's own API host.
    let text = match text.split_once('?') {
        Some((head, query)) if head.ends_with('@') => {
            format!("{head}{}?{query}", super::POSTMARK_API_HOST)
        }
        None if text.ends_with('@') => format!("{text}{}", super::POSTMARK_API_HOST),
        _ => text.to_owned(),
    };
    let url = ::url::Url::parse(&text)
        .map_err(|e| ConfigError::new("url", format!("not a valid Postmark URL: {e}")))?;
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .unwrap_or(super::POSTMARK_API_HOST);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if !url.path().is_empty() && url.path() != "/" {
        return Err(ConfigError::new(
            "url",
            "a Postmark URL has no path; put settings in the query (?stream=outbound)",
        ));
    }
    if url.password().is_some() {
        return Err(ConfigError::new(
            "token",
            "write the server token as the user part alone: postmark://SERVER_TOKEN@host",
        ));
    }
    let token = decode(url.username(), "token")?;
    if token.is_empty() {
        return Err(ConfigError::new(
            "token",
            "the URL has no server token: postmark://SERVER_TOKEN@api.postmarkapp.com",
        ));
    }
    let mut config = super::PostmarkConfig::new(token);
    if host != super::POSTMARK_API_HOST || url.port().is_some() {
        config = config.host(host, url.port());
    }
    Ok(MailerConfig::postmark(config))
}

#[cfg(not(feature = "providers"))]
fn postmark(_: &str) -> Result<MailerConfig, ConfigError> {
    Err(ConfigError::new(
        "url",
        "postmark:// needs the cargo feature `providers` (of outbox or outbox-smtp)",
    ))
}

/// The Mailgun part: the API key and the sending domain. Query parameters come later.
#[cfg(feature = "providers")]
fn mailgun(text: &str) -> Result<MailerConfig, ConfigError> {
    let no_domain = || {
        ConfigError::new(
            "domain",
            "the URL has no sending domain: mailgun://API_KEY@mg.example.com",
        )
    };
    if text.split('?').next().unwrap_or_default().ends_with('@') {
        return Err(no_domain());
    }
    let url = ::url::Url::parse(text)
        .map_err(|e| ConfigError::new("url", format!("not a valid Mailgun URL: {e}")))?;
    if !url.path().is_empty() && url.path() != "/" {
        return Err(ConfigError::new(
            "url",
            "a Mailgun URL has no path; put settings in the query (?region=eu)",
        ));
    }
    if url.port().is_some() {
        return Err(ConfigError::new(
            "url",
            "the host part of a Mailgun URL is the sending domain, without a port; name \
             another API host with ?host=HOST:PORT",
        ));
    }
    if url.password().is_some() {
        return Err(ConfigError::new(
            "key",
            "write the API key as the user part alone: mailgun://API_KEY@DOMAIN",
        ));
    }
    let key = decode(url.username(), "key")?;
    if key.is_empty() {
        return Err(ConfigError::new(
            "key",
            "the URL has no API key: mailgun://API_KEY@mg.example.com",
        ));
    }
    let domain = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(no_domain)?;
    let config = super::MailgunConfig::new(key, domain.to_ascii_lowercase());
    Ok(MailerConfig::mailgun(config))
}

#[cfg(not(feature = "providers"))]
fn mailgun(_: &str) -> Result<MailerConfig, ConfigError> {
    Err(ConfigError::new(
        "url",
        "mailgun:// needs the cargo feature `providers` (of outbox or outbox-smtp)",
    ))
}

/// The API key of `scheme://API_KEY` (a trailing `@` allowed), percent-decoded.
#[cfg(feature = "providers")]
fn key_only(text: &str, provider: &str, scheme: &str) -> Result<String, ConfigError> {
    let rest = text.split_once("://").map(|(_, r)| r).unwrap_or_default();
    let head = rest.split(['?', '#']).next().unwrap_or_default();
    let head = head.strip_suffix('@').unwrap_or(head);
    if head.is_empty() {
        return Err(ConfigError::new(
            "key",
            format!("the URL has no API key: {scheme}://API_KEY"),
        ));
    }
    if head.contains(['@', '/', ':']) {
        return Err(ConfigError::new(
            "url",
            format!(
                "a {provider} URL is {scheme}://API_KEY with nothing else before the query: \
                 percent-encode a '/', ':' or '@' in the key, and name another API host with \
                 ?host=HOST:PORT"
            ),
        ));
    }
    decode(head, "key")
}

/// SendGrid: `sendgrid://API_KEY`. Query parameters come later.
#[cfg(feature = "providers")]
fn sendgrid(text: &str) -> Result<MailerConfig, ConfigError> {
    let key = key_only(text, "SendGrid", "sendgrid")?;
    Ok(MailerConfig::sendgrid(super::SendGridConfig::new(key)))
}

/// Resend: `resend://API_KEY`. Query parameters come later.
#[cfg(feature = "providers")]
fn resend(text: &str) -> Result<MailerConfig, ConfigError> {
    let key = key_only(text, "Resend", "resend")?;
    Ok(MailerConfig::resend(super::ResendConfig::new(key)))
}

#[cfg(not(feature = "providers"))]
fn sendgrid(_: &str) -> Result<MailerConfig, ConfigError> {
    Err(ConfigError::new(
        "url",
        "sendgrid:// needs the cargo feature `providers` (of outbox or outbox-smtp)",
    ))
}

#[cfg(not(feature = "providers"))]
fn resend(_: &str) -> Result<MailerConfig, ConfigError> {
    Err(ConfigError::new(
        "url",
        "resend:// needs the cargo feature `providers` (of outbox or outbox-smtp)",
    ))
}

#[cfg(feature = "providers")]
fn sendgrid_param(
    sendgrid: &mut super::SendGridConfig,
    key: &str,
    value: &str,
) -> Result<(), ConfigError> {
    use super::{SENDGRID_API_HOST, SENDGRID_EU_API_HOST};
    if key == "region" {
        if sendgrid.endpoint.host_named() {
            return Err(ConfigError::new(
                key,
                "the API host is named twice (region and host): give one of them",
            ));
        }
        sendgrid.endpoint.host = match value.to_ascii_lowercase().as_str() {
            "global" | "us" => SENDGRID_API_HOST,
            "eu" => SENDGRID_EU_API_HOST,
            _ => {
                return Err(ConfigError::new(
                    "region",
                    format!("{value:?} is not one of global, eu"),
                ))
            }
        }
        .to_owned();
        return Ok(());
    }
    endpoint_param(&mut sendgrid.endpoint, key, value, SENDGRID_ONLY)
}

/// Amazon SES: `ses://REGION`, never with keys. Query parameters come later.
#[cfg(feature = "providers")]
fn ses(text: &str) -> Result<MailerConfig, ConfigError> {
    let rest = text.split_once("://").map(|(_, r)| r).unwrap_or_default();
    let head = rest.split(['?', '#']).next().unwrap_or_default();
    if head.contains('@') {
        return Err(never_keys_in_url());
    }
    let region = head.strip_suffix('/').unwrap_or(head);
    if region.is_empty() {
        return Err(ConfigError::new(
            "region",
            "the URL has no region: ses://eu-west-1",
        ));
    }
    if region.contains(['/', ':']) {
        return Err(ConfigError::new(
            "url",
            "an SES URL is ses://REGION with nothing else before the query; name another \
             API host with ?host=HOST:PORT",
        ));
    }
    Ok(MailerConfig::ses(super::SesConfig::new(
        region.to_ascii_lowercase(),
    )))
}

#[cfg(feature = "providers")]
fn never_keys_in_url() -> ConfigError {
    ConfigError::new(
        "credentials",
        "AWS keys are never written in the URL: give them through the environment \
         (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), ~/.aws/credentials, an instance or \
         container role, or SesConfig::credentials, and write ses://REGION",
    )
}

#[cfg(not(feature = "providers"))]
fn ses(_: &str) -> Result<MailerConfig, ConfigError> {
    Err(ConfigError::new(
        "url",
        "ses:// needs the cargo feature `providers` (of outbox or outbox-smtp)",
    ))
}

#[cfg(feature = "providers")]
fn ses_param(ses: &mut super::SesConfig, key: &str, value: &str) -> Result<(), ConfigError> {
    match key {
        "configuration_set" => {
            if ses.configuration_set.is_some() {
                return Err(ConfigError::new(key, "named twice: give one"));
            }
            ses.configuration_set = Some(value.to_owned());
        }
        "tag" => {
            let (name, value) = value.split_once(':').ok_or_else(|| {
                ConfigError::new(
                    "tag",
                    format!("{value:?} is not NAME:VALUE (tag=campaign:november)"),
                )
            })?;
            ses.tags.push((name.to_owned(), value.to_owned()));
        }
        _ if ["key", "secret", "token", "password"]
            .iter()
            .any(|word| key.to_ascii_lowercase().contains(word)) =>
        {
            return Err(never_keys_in_url())
        }
        _ => endpoint_param(&mut ses.endpoint, key, value, SES_ONLY)?,
    }
    Ok(())
}

#[cfg(feature = "providers")]
fn mailgun_param(
    mailgun: &mut super::MailgunConfig,
    key: &str,
    value: &str,
) -> Result<(), ConfigError> {
    use super::{MAILGUN_API_HOST, MAILGUN_EU_API_HOST};
    if key == "region" {
        if mailgun.endpoint.host_named() {
            return Err(ConfigError::new(
                key,
                "the API host is named twice (region and host): give one of them",
            ));
        }
        mailgun.endpoint.host = match value.to_ascii_lowercase().as_str() {
            "us" => MAILGUN_API_HOST,
            "eu" => MAILGUN_EU_API_HOST,
            _ => {
                return Err(ConfigError::new(
                    "region",
                    format!("{value:?} is not one of us, eu"),
                ))
            }
        }
        .to_owned();
        return Ok(());
    }
    endpoint_param(&mut mailgun.endpoint, key, value, MAILGUN_ONLY)
}

#[cfg(feature = "providers")]
fn postmark_param(
    postmark: &mut super::PostmarkConfig,
    key: &str,
    value: &str,
) -> Result<(), ConfigError> {
    if key == "stream" && !value.is_empty() {
        postmark.stream = Some(value.to_owned());
        return Ok(());
    }
    endpoint_param(&mut postmark.endpoint, key, value, POSTMARK_ONLY)
}

/// A parameter of the API endpoint, or a mistake named with what `provider_only` and
/// every API transport accept.
#[cfg(feature = "providers")]
fn endpoint_param(
    endpoint: &mut super::ApiEndpoint,
    key: &str,
    value: &str,
    provider_only: &str,
) -> Result<(), ConfigError> {
    if endpoint.param(key, value)? {
        return Ok(());
    }
    let provider_only = match provider_only {
        "" => String::new(),
        only => format!("{only}, "),
    };
    Err(ConfigError::new(
        key,
        format!(
            "unknown parameter; accepted: {provider_only}{}, {COMMON}",
            super::endpoint::ENDPOINT_PARAMS
        ),
    ))
}

fn decode(part: &str, what: &str) -> Result<String, ConfigError> {
    percent_encoding::percent_decode_str(part)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| ConfigError::new(what, "is not UTF-8 after percent-decoding"))
}

fn apply_params(
    mut config: MailerConfig,
    params: &[(String, String)],
) -> Result<MailerConfig, ConfigError> {
    let mut redirect: Option<TestRedirect> = None;
    let mut only: Option<Vec<String>> = None;
    for (key, value) in params {
        match (key.as_str(), &mut config.transport) {
            ("message_id_domain", _) => config.message_id_domain = Some(value.clone()),
            ("test_redirect", _) => redirect = Some(TestRedirect::to_address(value)),
            ("test_redirect_domain", _) => redirect = Some(TestRedirect::to_domain(value)),
            ("test_redirect_only", _) => {
                only = Some(
                    value
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect(),
                )
            }
            (_, Transport::Smtp(smtp)) => smtp_param(smtp, key, value)?,
            #[cfg(feature = "providers")]
            (_, Transport::Postmark(postmark)) => postmark_param(postmark, key, value)?,
            #[cfg(feature = "providers")]
            (_, Transport::Mailgun(mailgun)) => mailgun_param(mailgun, key, value)?,
            #[cfg(feature = "providers")]
            (_, Transport::Ses(ses)) => ses_param(ses, key, value)?,
            #[cfg(feature = "providers")]
            (_, Transport::SendGrid(sendgrid)) => sendgrid_param(sendgrid, key, value)?,
            #[cfg(feature = "providers")]
            (_, Transport::Resend(resend)) => endpoint_param(&mut resend.endpoint, key, value, "")?,
            _ => {
                return Err(ConfigError::new(
                    key,
                    format!("unknown parameter for this transport; accepted: {COMMON}"),
                ))
            }
        }
    }
    match (redirect, only) {
        (Some(r), Some(only)) => config.redirect = Some(r.only(only)),
        (Some(r), None) => config.redirect = Some(r),
        (None, Some(_)) => {
            return Err(ConfigError::new(
                "test_redirect_only",
                "needs test_redirect or test_redirect_domain",
            ))
        }
        (None, None) => {}
    }
    Ok(config)
}

fn smtp_param(smtp: &mut SmtpConfig, key: &str, value: &str) -> Result<(), ConfigError> {
    match key {
        "tls" => {
            smtp.security = match (value, smtp.security) {
                (_, Security::Implicit) => {
                    return Err(ConfigError::new(
                        "tls",
                        "smtps:// always uses TLS; use smtp:// with ?tls=... for STARTTLS",
                    ))
                }
                ("opportunistic", _) => Security::Opportunistic,
                ("required", _) => Security::StartTlsRequired,
                ("none", _) => Security::None,
                _ => {
                    return Err(ConfigError::new(
                        "tls",
                        format!("{value:?} is not one of opportunistic, required, none"),
                    ))
                }
            }
        }
        "pool" => {
            smtp.pool_size = value
                .parse()
                .map_err(|_| ConfigError::new("pool", format!("{value:?} is not a whole number")))?
        }
        "helo" => smtp.hello_name = Some(value.to_owned()),
        "connect_timeout" => smtp.connect_timeout = duration(key, value)?,
        "timeout" => smtp.command_timeout = duration(key, value)?,
        "idle_timeout" => smtp.idle_timeout = duration(key, value)?,
        "ca_file" => {
            let pem = std::fs::read(value)
                .map_err(|e| ConfigError::new("ca_file", format!("cannot read {value:?}: {e}")))?;
            smtp.root_certificates
                .push(super::smtp::RootCertificate(pem));
        }
        _ => {
            return Err(ConfigError::new(
                key,
                format!("unknown parameter; accepted: {SMTP_ONLY}, {COMMON}"),
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn smtp_of(url: &str) -> SmtpConfig {
        match parse(url).unwrap().transport {
            Transport::Smtp(s) => s,
            other => panic!("not smtp: {other:?}"),
        }
    }

    #[test]
    fn smtp_urls() {
        let s = smtp_of("smtp://user%40x:p%40ss+w@mail.example.com?tls=required&pool=8&timeout=5s");
        assert_eq!(s.host, "mail.example.com");
        assert_eq!(s.effective_port(), 587);
        assert_eq!(s.security, Security::StartTlsRequired);
        assert_eq!(s.pool_size, 8);
        assert_eq!(s.command_timeout, Duration::from_secs(5));
        let c = s.credentials.unwrap();
        assert_eq!((c.user.as_str(), c.password.as_str()), ("user@x", "p@ss+w"));

        let s = smtp_of("smtps://mail.example.com");
        assert_eq!((s.security, s.effective_port()), (Security::Implicit, 465));
        let s = smtp_of("smtp://127.0.0.1:2525?tls=none&connect_timeout=500ms&helo=me.example");
        assert_eq!(s.effective_port(), 2525);
        assert_eq!(s.connect_timeout, Duration::from_millis(500));
        assert_eq!(s.hello_name.as_deref(), Some("me.example"));
    }

    #[test]
    fn dev_urls() {
        assert!(matches!(parse("log://").unwrap().transport, Transport::Log));
        match parse("file://mail-out?message_id_domain=x.example").unwrap() {
            MailerConfig {
                transport: Transport::File(dir),
                message_id_domain,
                ..
            } => {
                assert_eq!(dir, PathBuf::from("mail-out"));
                assert_eq!(message_id_domain.as_deref(), Some("x.example"));
            }
            other => panic!("{other:?}"),
        }
        match parse("file:///tmp/outbox").unwrap().transport {
            Transport::File(dir) => assert_eq!(dir, PathBuf::from("/tmp/outbox")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mistakes_are_named() {
        for (url, setting) in [
            ("ftp://x", "url"),
            ("smtp://h?tls=maybe", "tls"),
            ("smtp://h?pool=many", "pool"),
            ("smtp://h?bogus=1", "bogus"),
            ("log://?pool=1", "pool"),
            ("smtp://h?timeout=5x", "timeout"),
            ("smtps://h?tls=none", "tls"),
        ] {
            assert_eq!(parse(url).unwrap_err().setting, setting, "{url}");
        }
    }

    #[cfg(feature = "providers")]
    #[test]
    fn postmark_urls() {
        let postmark_of = |url: &str| match parse(url).unwrap().transport {
            Transport::Postmark(p) => p,
            other => panic!("not postmark: {other:?}"),
        };
        let p = postmark_of("postmark://tok%2Fen@api.postmarkapp.com?stream=outbound");
        assert_eq!(p.token, "tok/en");
        assert_eq!(
            (p.api_host(), p.effective_port(), p.is_tls()),
            ("api.postmarkapp.com", 443, true)
        );
        assert_eq!(p.message_stream(), Some("outbound"));
        let p = postmark_of("postmark://secret-token@?stream=broadcast");
        assert_eq!(p.api_host(), "api.postmarkapp.com");
        let p = postmark_of("postmark://secret-token@127.0.0.1:8025?tls=none&timeout=5s");
        assert_eq!(
            (p.api_host(), p.effective_port(), p.is_tls()),
            ("127.0.0.1", 8025, false)
        );
        assert_eq!(p.endpoint.timeout, Duration::from_secs(5));
        assert!(parse("postmark://t@[::1]:9?tls=none")
            .unwrap()
            .check()
            .is_ok());
        assert!(parse("postmark://t@localhost:9?tls=none")
            .unwrap()
            .check()
            .is_ok());

        let config =
            parse("postmark://secret-token@127.0.0.1:8025?tls=none&stream=outbound").unwrap();
        let shown = format!("{config} {config:?}");
        assert!(!shown.contains("secret-token"), "{shown}");
        assert!(
            shown.starts_with("postmark://***@127.0.0.1:8025?stream=outbound&tls=none&"),
            "{shown}"
        );
        // What Display shows reads back as the same settings (but the token).
        let again = parse(&config.to_string().replace("***", "secret-token")).unwrap();
        assert_eq!(format!("{again:?}"), format!("{config:?}"));

        // Plain HTTP to anything but loopback is refused, naming the host.
        let remote = parse("postmark://t@api.postmarkapp.com?tls=none").unwrap();
        let e = remote.check().unwrap_err();
        assert_eq!(e.setting, "tls");
        assert!(e.reason.contains("api.postmarkapp.com"), "{e}");
        assert!(parse("postmark://t@10.0.0.1:80?tls=none")
            .unwrap()
            .check()
            .is_err());
        for (url, setting) in [
            ("postmark://api.postmarkapp.com", "token"),
            ("postmark://a:b@api.postmarkapp.com", "token"),
            ("postmark://t@h?pool=0", "pool"),
            ("postmark://t@h?region=eu", "region"),
            ("postmark://t@h?tls=maybe", "tls"),
            ("postmark://t@h/email", "url"),
        ] {
            assert_eq!(parse(url).unwrap_err().setting, setting, "{url}");
        }
    }

    #[cfg(feature = "providers")]
    #[test]
    fn mailgun_urls() {
        use crate::config::MailgunConfig;
        let mailgun_of = |url: &str| match parse(url).unwrap().transport {
            Transport::Mailgun(m) => m,
            other => panic!("not mailgun: {other:?}"),
        };
        let m = mailgun_of("mailgun://key-3ax6%2Fxy@mg.example.com");
        assert_eq!(m.key, "key-3ax6/xy");
        assert_eq!(m.domain(), "mg.example.com");
        assert_eq!(
            (m.api_host(), m.effective_port(), m.is_tls()),
            ("api.mailgun.net", 443, true)
        );
        let m = mailgun_of("mailgun://k@mg.example.com?region=eu");
        assert_eq!(m.api_host(), "api.eu.mailgun.net");
        assert_eq!(m, MailgunConfig::new("k", "mg.example.com").eu());
        assert_eq!(
            mailgun_of("mailgun://k@mg.example.com?region=us").api_host(),
            "api.mailgun.net"
        );
        let m = mailgun_of("mailgun://k@mg.example.com?host=127.0.0.1:8025&tls=none&timeout=5s");
        assert_eq!(
            (m.api_host(), m.effective_port(), m.is_tls()),
            ("127.0.0.1", 8025, false)
        );
        assert_eq!(m.endpoint.timeout, Duration::from_secs(5));
        for url in [
            "mailgun://k@mg.example.com?host=[::1]:9&tls=none",
            "mailgun://k@mg.example.com?host=localhost:9&tls=none",
            "mailgun://k@mg.example.com?host=127.0.0.1&tls=none",
        ] {
            assert!(parse(url).unwrap().check().is_ok(), "{url}");
        }
        assert_eq!(
            mailgun_of("mailgun://k@mg.example.com?host=[::1]:9").api_host(),
            "::1"
        );

        // The key is never shown; what is shown reads back as the same settings.
        for url in [
            "mailgun://secret-key-9f@mg.example.com?host=127.0.0.1:8025&tls=none",
            "mailgun://secret-key-9f@mg.example.com?region=eu&message_id_domain=example.com",
            "mailgun://secret-key-9f@mg.example.com",
            "mailgun://secret-key-9f@mg.example.com?host=[::1]:8025&tls=none",
        ] {
            let config = parse(url).unwrap();
            let shown = format!("{config} {config:?}");
            assert!(!shown.contains("secret-key-9f"), "{shown}");
            assert!(
                shown.starts_with("mailgun://***@mg.example.com?"),
                "{shown}"
            );
            let again = parse(&config.to_string().replace("***", "secret-key-9f")).unwrap();
            assert_eq!(format!("{again:?}"), format!("{config:?}"), "{url}");
        }
        let error = parse("mailgun://secret-key-9f@mg.example.com?region=mars").unwrap_err();
        assert!(!error.to_string().contains("secret-key-9f"));

        // Plain HTTP to anything but loopback is refused, naming the host.
        let e = parse("mailgun://k@mg.example.com?tls=none")
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(e.setting, "tls");
        assert!(e.reason.contains("api.mailgun.net"), "{e}");
        for url in [
            "mailgun://k@mg.example.com?host=10.0.0.1:80&tls=none",
            "mailgun://k@mg.example.com?region=eu&tls=none",
            "mailgun://k@mg.example.com?host=mailgun.example.net&tls=none",
        ] {
            assert_eq!(
                parse(url).unwrap().check().unwrap_err().setting,
                "tls",
                "{url}"
            );
        }
        for (url, setting) in [
            ("mailgun://mg.example.com", "key"),
            ("mailgun://a:b@mg.example.com", "key"),
            ("mailgun://k@", "domain"),
            ("mailgun://k@mg.example.com:8080", "url"),
            ("mailgun://k@mg.example.com/messages", "url"),
            ("mailgun://k@mg.example.com?region=mars", "region"),
            ("mailgun://k@mg.example.com?region=eu&host=h", "host"),
            ("mailgun://k@mg.example.com?host=h&region=eu", "region"),
            ("mailgun://k@mg.example.com?host=h:port", "host"),
            ("mailgun://k@mg.example.com?tls=maybe", "tls"),
            ("mailgun://k@mg.example.com?stream=outbound", "stream"),
        ] {
            assert_eq!(parse(url).unwrap_err().setting, setting, "{url}");
        }
        assert_eq!(
            parse("mailgun://k@mg_example.com")
                .map(|c| c.check().unwrap_err().setting)
                .unwrap_or_else(|e| e.setting),
            "domain"
        );
    }

    #[cfg(feature = "providers")]
    #[test]
    fn sendgrid_urls() {
        use crate::config::SendGridConfig;
        let sendgrid_of = |url: &str| match parse(url).unwrap().transport {
            Transport::SendGrid(s) => s,
            other => panic!("not sendgrid: {other:?}"),
        };
        let s = sendgrid_of("sendgrid://SG.abc_DEF-1.xyz%2F9");
        assert_eq!(s.key, "SG.abc_DEF-1.xyz/9");
        assert_eq!(
            (s.api_host(), s.effective_port(), s.is_tls()),
            ("api.sendgrid.com", 443, true)
        );
        assert_eq!(sendgrid_of("sendgrid://SG.k@").key, "SG.k");
        let s = sendgrid_of("sendgrid://SG.k?region=eu");
        assert_eq!(s.api_host(), "api.eu.sendgrid.com");
        assert_eq!(s, SendGridConfig::new("SG.k").eu());
        assert_eq!(
            sendgrid_of("sendgrid://SG.k?region=global").api_host(),
            "api.sendgrid.com"
        );
        let s = sendgrid_of("sendgrid://SG.k?host=127.0.0.1:8025&tls=none&timeout=5s&pool=2");
        assert_eq!(
            (s.api_host(), s.effective_port(), s.is_tls()),
            ("127.0.0.1", 8025, false)
        );
        assert_eq!(s.endpoint.timeout, Duration::from_secs(5));
        assert_eq!(s.endpoint.pool, 2);
        assert!(parse("sendgrid://SG.k?host=[::1]:9&tls=none")
            .unwrap()
            .check()
            .is_ok());

        // The key is never shown; what is shown reads back as the same settings.
        for url in [
            "sendgrid://SG.secret-key-9f",
            "sendgrid://SG.secret-key-9f?region=eu&message_id_domain=example.com",
            "sendgrid://SG.secret-key-9f?host=127.0.0.1:8025&tls=none",
        ] {
            let config = parse(url).unwrap();
            let shown = format!("{config} {config:?}");
            assert!(!shown.contains("secret-key-9f"), "{shown}");
            assert!(shown.starts_with("sendgrid://***?"), "{shown}");
            let again = parse(&config.to_string().replace("***", "SG.secret-key-9f")).unwrap();
            assert_eq!(format!("{again:?}"), format!("{config:?}"), "{url}");
        }
        let e = parse("sendgrid://SG.k?tls=none")
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(e.setting, "tls");
        assert!(e.reason.contains("api.sendgrid.com"), "{e}");
        for (url, setting) in [
            ("sendgrid://", "key"),
            ("sendgrid://?region=eu", "key"),
            ("sendgrid://SG.k@api.sendgrid.com", "url"),
            ("sendgrid://SG.k:x", "url"),
            ("sendgrid://SG.k/v3", "url"),
            ("sendgrid://SG.k?region=mars", "region"),
            ("sendgrid://SG.k?region=eu&host=h", "host"),
            ("sendgrid://SG.k?host=h&region=eu", "region"),
            ("sendgrid://SG.k?stream=outbound", "stream"),
        ] {
            let e = parse(url).unwrap_err();
            assert_eq!(e.setting, setting, "{url}");
            assert!(!e.to_string().contains("SG.k"), "{e}");
        }
        let unknown = parse("sendgrid://SG.k?stream=x").unwrap_err().reason;
        assert!(unknown.starts_with("unknown parameter; accepted: region (global, eu), host"));
        assert_eq!(
            parse("sendgrid://%20")
                .unwrap()
                .check()
                .unwrap_err()
                .setting,
            "key"
        );
    }

    #[cfg(feature = "providers")]
    #[test]
    fn resend_urls() {
        let resend_of = |url: &str| match parse(url).unwrap().transport {
            Transport::Resend(r) => r,
            other => panic!("not resend: {other:?}"),
        };
        let r = resend_of("resend://re_123abc");
        assert_eq!(r.key, "re_123abc");
        assert_eq!(
            (r.api_host(), r.effective_port(), r.is_tls()),
            ("api.resend.com", 443, true)
        );
        let r = resend_of("resend://re_1?host=localhost:8025&tls=none&connect_timeout=1s");
        assert_eq!(
            (r.api_host(), r.effective_port(), r.is_tls()),
            ("localhost", 8025, false)
        );
        assert_eq!(r.endpoint.connect_timeout, Duration::from_secs(1));
        for url in [
            "resend://re_secret9f",
            "resend://re_secret9f?host=127.0.0.1:8025&tls=none&test_redirect=qa@example.com",
        ] {
            let config = parse(url).unwrap();
            let shown = format!("{config} {config:?}");
            assert!(!shown.contains("re_secret9f"), "{shown}");
            assert!(shown.starts_with("resend://***?"), "{shown}");
            let again = parse(&config.to_string().replace("***", "re_secret9f")).unwrap();
            assert_eq!(format!("{again:?}"), format!("{config:?}"), "{url}");
        }
        let e = parse("resend://re_1?host=10.0.0.1:80&tls=none")
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(e.setting, "tls");
        for (url, setting) in [
            ("resend://", "key"),
            ("resend://re_1@api.resend.com", "url"),
            ("resend://re_1?region=eu", "region"),
        ] {
            assert_eq!(parse(url).unwrap_err().setting, setting, "{url}");
        }
        let unknown = parse("resend://re_1?region=eu").unwrap_err().reason;
        assert!(
            unknown.starts_with("unknown parameter; accepted: host"),
            "{unknown}"
        );
    }

    #[cfg(feature = "providers")]
    #[test]
    fn ses_urls() {
        use crate::config::SesConfig;
        let ses_of = |url: &str| match parse(url).unwrap().transport {
            Transport::Ses(s) => s,
            other => panic!("not ses: {other:?}"),
        };
        let s = ses_of(
            "ses://eu-west-1?configuration_set=transactional&tag=campaign:nov&tag=kind:receipt",
        );
        assert_eq!(s.region(), "eu-west-1");
        assert_eq!(s.configuration_set_name(), Some("transactional"));
        assert_eq!(
            s.tags(),
            [
                ("campaign".to_owned(), "nov".to_owned()),
                ("kind".to_owned(), "receipt".to_owned())
            ]
        );
        assert_eq!(
            (s.api_host(), s.effective_port(), s.is_tls()),
            ("email.eu-west-1.amazonaws.com", 443, true)
        );
        assert_eq!(
            s,
            SesConfig::new("eu-west-1")
                .configuration_set("transactional")
                .tag("campaign", "nov")
                .tag("kind", "receipt")
        );
        assert_eq!(
            ses_of("ses://cn-northwest-1").api_host(),
            "email.cn-northwest-1.amazonaws.com.cn"
        );
        let s = ses_of("ses://us-east-1/?host=127.0.0.1:4566&tls=none&timeout=5s");
        assert_eq!(
            (s.api_host(), s.effective_port(), s.is_tls()),
            ("127.0.0.1", 4566, false)
        );
        assert_eq!(s.endpoint.timeout, Duration::from_secs(5));
        assert!(parse("ses://us-east-1?host=[::1]:9&tls=none")
            .unwrap()
            .check()
            .is_ok());

        // What is shown reads back as the same settings.
        for url in [
            "ses://eu-west-1",
            "ses://eu-west-1?configuration_set=transactional&tag=campaign:nov&tag=kind:receipt",
            "ses://us-east-1?host=127.0.0.1:4566&tls=none&pool=2&message_id_domain=example.com",
            "ses://us-east-1?host=[::1]:4566&tls=none",
        ] {
            let config = parse(url).unwrap();
            let shown = config.to_string();
            assert!(shown.starts_with(url.split('?').next().unwrap()), "{shown}");
            let again = parse(&shown).unwrap();
            assert_eq!(format!("{again:?}"), format!("{config:?}"), "{url}");
        }
        // Programmatic keys are never shown.
        let config = MailerConfig::ses(SesConfig::new("eu-west-1").credentials(
            "AKIAEXAMPLEKEYID",
            "secret-access-key-9f",
            Some("session-token-9f".to_owned()),
        ));
        let shown = format!("{config} {config:?}");
        for secret in [
            "secret-access-key-9f",
            "session-token-9f",
            "AKIAEXAMPLEKEYID",
        ] {
            assert!(!shown.contains(secret), "{shown}");
        }

        // Plain HTTP to anything but loopback is refused, naming the host.
        let e = parse("ses://eu-west-1?tls=none")
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(e.setting, "tls");
        assert!(e.reason.contains("email.eu-west-1.amazonaws.com"), "{e}");
        for (url, setting) in [
            ("ses://AKIAX:secret@eu-west-1", "credentials"),
            ("ses://AKIAX@eu-west-1", "credentials"),
            ("ses://eu-west-1?aws_secret_access_key=x", "credentials"),
            ("ses://eu-west-1?access_key_id=x", "credentials"),
            ("ses://", "region"),
            ("ses://?configuration_set=x", "region"),
            ("ses://eu-west-1:443", "url"),
            ("ses://eu-west-1/v2", "url"),
            ("ses://eu-west-1?tag=campaign", "tag"),
            (
                "ses://eu-west-1?configuration_set=a&configuration_set=b",
                "configuration_set",
            ),
            ("ses://eu-west-1?stream=outbound", "stream"),
            ("ses://eu-west-1?region=eu", "region"),
            ("ses://eu-west-1?tls=maybe", "tls"),
        ] {
            let e = parse(url).unwrap_err();
            assert_eq!(e.setting, setting, "{url}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
        for (url, setting) in [
            ("ses://eu_west_1", "region"),
            ("ses://eu-west-1?configuration_set=a.b", "configuration_set"),
            ("ses://eu-west-1?tag=a:b%20c", "tag"),
            ("ses://eu-west-1?tag=:b", "tag"),
            ("ses://eu-west-1?pool=0", "pool"),
        ] {
            let setting_found = parse(url)
                .map(|c| c.check().unwrap_err().setting)
                .unwrap_or_else(|e| e.setting);
            assert_eq!(setting_found, setting, "{url}");
        }
    }

    #[test]
    fn a_pool_larger_than_the_semaphore_holds_is_refused_not_a_panic() {
        let too_large = parse("smtp://h?pool=2305843009213693952").unwrap();
        assert_eq!(too_large.check().unwrap_err().setting, "pool");
        assert!(parse("smtp://h?pool=1024").unwrap().check().is_ok());
    }
}
