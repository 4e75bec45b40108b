//! AWS credentials for the SES transport, found the way the AWS SDKs find them, without the
//! SDK: a chain of sources tried in order, and a cache that keeps temporary credentials
//! until 5 minutes before they expire.
//!
//! The chain (the order of the AWS SDK for Java 2 and of botocore):
//!
//! 1. environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`;
//! 2. web identity: `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN` (+ `AWS_ROLE_SESSION_NAME`)
//!    exchanged at STS (`AssumeRoleWithWebIdentity`, an unsigned form POST; the answer is
//!    XML) at `sts.REGION.amazonaws.com`, or `AWS_ENDPOINT_URL_STS` / `AWS_ENDPOINT_URL`;
//! 3. shared files: `~/.aws/credentials` then `~/.aws/config` (`AWS_SHARED_CREDENTIALS_FILE`,
//!    `AWS_CONFIG_FILE`), profile `AWS_PROFILE` or `default`; static keys only;
//! 4. container credentials (ECS, EKS Pod Identity): `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`
//!    on `http://169.254.170.2`, or `AWS_CONTAINER_CREDENTIALS_FULL_URI` (HTTPS, or plain
//!    HTTP to loopback or the ECS/EKS addresses only), with the `Authorization` header from
//!    `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` or `AWS_CONTAINER_AUTHORIZATION_TOKEN`; the
//!    answer is JSON;
//! 5. EC2 instance metadata, IMDSv2: `PUT /latest/api/token` with
//!    `X-aws-ec2-metadata-token-ttl-seconds`, then `GET
//!    /latest/meta-data/iam/security-credentials/` (the role's name) and `.../ROLE` (JSON)
//!    with `X-aws-ec2-metadata-token`; `AWS_EC2_METADATA_SERVICE_ENDPOINT` (or
//!    `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6`) names the endpoint,
//!    `AWS_EC2_METADATA_DISABLED=true` skips it; 1 s timeouts.
//!
//! A source that is not set up is passed over (and named in the final error); a source
//! that is set up but fails (a token file that cannot be read, STS refusing the token, a
//! profile that assumes a role) ends the search with its error, as the SDKs do, so that a
//! mistake is not hidden behind another source's credentials.
//!
//! Variables are read through [`Env`]: the process environment, or a map given by the
//! program (and the unit tests, which never touch the process environment).

use std::{
    collections::BTreeMap,
    fmt,
    future::Future,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde_json::Value;

use super::http::{HttpClient, HttpFailure};
use crate::{config::ApiEndpoint, sigv4};

/// Temporary credentials are fetched again this long before they expire.
pub(crate) const REFRESH_BEFORE: Duration = Duration::from_secs(5 * 60);

/// How long the instance metadata service may take to connect and to answer each request.
const IMDS_TIMEOUT: Duration = Duration::from_secs(1);
/// The IMDSv2 session token's lifetime asked for (6 hours, the SDKs' default).
const IMDS_TOKEN_TTL: &str = "21600";
/// The container credentials endpoint's timeouts.
const CONTAINER_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const CONTAINER_TIMEOUT: Duration = Duration::from_secs(5);
/// STS's timeouts.
const STS_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const STS_TIMEOUT: Duration = Duration::from_secs(10);

/// An AWS access key, where it came from and, for temporary credentials, when it expires.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct AwsCredentials {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: String,
    pub(crate) session_token: Option<String>,
    /// `None` for long-term keys (kept until [`CredentialCache::forget`]).
    pub(crate) expiration: Option<SystemTime>,
    /// Where they came from, for logs and errors (`environment`, `EC2 instance metadata
    /// (role mailer)`...).
    pub(crate) source: String,
}

impl AwsCredentials {
    /// For the signer.
    pub(crate) fn for_signing(&self) -> sigv4::Credentials<'_> {
        sigv4::Credentials {
            access_key_id: &self.access_key_id,
            secret_access_key: &self.secret_access_key,
            session_token: self.session_token.as_deref(),
        }
    }

    /// True when they can be used at `now` without a refresh: long-term, or more than
    /// [`REFRESH_BEFORE`] from expiring.
    fn fresh_at(&self, now: SystemTime) -> bool {
        self.expiration
            .is_none_or(|expires| now + REFRESH_BEFORE < expires)
    }

    /// True when they have not expired at `now`.
    fn valid_at(&self, now: SystemTime) -> bool {
        self.expiration.is_none_or(|expires| now < expires)
    }
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"***")
            .field("session_token", &self.session_token.as_ref().map(|_| "***"))
            .field("expiration", &self.expiration)
            .field("source", &self.source)
            .finish()
    }
}

/// Where the chain reads its variables: the process environment, or only a map.
#[derive(Clone, Debug)]
pub(crate) enum Env {
    Process,
    Vars(Arc<BTreeMap<String, String>>),
}

impl Env {
    /// The value of `name`, when set and not empty.
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        let value = match self {
            Env::Process => std::env::var(name).ok(),
            Env::Vars(vars) => vars.get(name).cloned(),
        };
        value.filter(|v| !v.trim().is_empty())
    }

    /// The home directory (`HOME`, else `USERPROFILE`).
    fn home(&self) -> Option<PathBuf> {
        self.get("HOME")
            .or_else(|| self.get("USERPROFILE"))
            .map(PathBuf::from)
    }

    /// `path` with a leading `~/` made the home directory.
    fn expand(&self, path: &str) -> PathBuf {
        match (path.strip_prefix("~/"), self.home()) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(path),
        }
    }
}

/// Keeps the credentials last found and fetches new ones when they are about to expire:
/// one fetch at a time, whose result every send waiting for it takes.
#[derive(Default)]
pub(crate) struct CredentialCache {
    state: Mutex<CacheState>,
    /// Held while fetching.
    refresh: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct CacheState {
    current: Option<Arc<AwsCredentials>>,
    /// Fetches done so far.
    fetches: u64,
    /// Why the last fetch failed, when it did.
    last_error: Option<String>,
}

impl CredentialCache {
    /// The credentials to use at `now`: the kept ones while fresh, else the result of
    /// `fetch`. Sends that arrive while a fetch is under way wait for it and take its
    /// result, its error included (no second fetch). When a fetch fails and the kept
    /// credentials have not expired yet (the last 5 minutes), those are used.
    pub(crate) async fn get<F, Fut>(
        &self,
        now: SystemTime,
        fetch: F,
    ) -> Result<Arc<AwsCredentials>, String>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<AwsCredentials, String>>,
    {
        let seen = {
            let state = self.lock();
            if let Some(current) = state.current.as_ref().filter(|c| c.fresh_at(now)) {
                return Ok(current.clone());
            }
            state.fetches
        };
        let _fetching = self.refresh.lock().await;
        {
            let state = self.lock();
            if let Some(current) = state.current.as_ref().filter(|c| c.fresh_at(now)) {
                return Ok(current.clone());
            }
            if state.fetches != seen {
                if let Some(error) = &state.last_error {
                    return Err(error.clone());
                }
            }
        }
        let fetched = fetch().await;
        let mut state = self.lock();
        state.fetches += 1;
        match fetched {
            Ok(credentials) => {
                tracing::debug!(
                    source = %credentials.source, access_key_id = %credentials.access_key_id,
                    expiration = ?credentials.expiration, "AWS credentials found"
                );
                let credentials = Arc::new(credentials);
                state.current = Some(credentials.clone());
                state.last_error = None;
                Ok(credentials)
            }
            Err(error) => {
                state.last_error = Some(error.clone());
                match state.current.as_ref().filter(|c| c.valid_at(now)) {
                    Some(current) => {
                        tracing::warn!(
                            %error, expiration = ?current.expiration,
                            "cannot refresh the AWS credentials; using the current ones until \
                             they expire"
                        );
                        Ok(current.clone())
                    }
                    None => Err(error),
                }
            }
        }
    }

    /// Drops the kept credentials (AWS refused them): the next send fetches new ones.
    pub(crate) fn forget(&self) {
        self.lock().current = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The chain of sources, read through `env`, for a service in `region`.
pub(crate) struct CredentialChain {
    env: Env,
    region: String,
    cache: CredentialCache,
}

impl CredentialChain {
    pub(crate) fn new(env: Env, region: impl Into<String>) -> Self {
        Self {
            env,
            region: region.into(),
            cache: CredentialCache::default(),
        }
    }

    /// The credentials to sign with now.
    pub(crate) async fn credentials(&self) -> Result<Arc<AwsCredentials>, String> {
        self.cache
            .get(SystemTime::now(), || resolve(&self.env, &self.region))
            .await
    }

    /// Drops the kept credentials (AWS refused them).
    pub(crate) fn forget(&self) {
        self.cache.forget();
    }
}

/// What one source gave.
#[derive(Debug)]
enum Found {
    /// Credentials.
    Yes(AwsCredentials),
    /// The source is not set up here: why, for the final error.
    No(String),
}

/// Tries each source in turn: the first credentials found, the error of a source that is
/// set up but failed, or an error listing what was tried.
pub(crate) async fn resolve(env: &Env, region: &str) -> Result<AwsCredentials, String> {
    let mut tried = Vec::new();
    macro_rules! step {
        ($what:literal, $source:expr) => {
            match $source {
                Ok(Found::Yes(credentials)) => return Ok(credentials),
                Ok(Found::No(why)) => tried.push(format!("{}: {why}", $what)),
                Err(e) => return Err(format!("AWS credentials from {}: {e}", $what)),
            }
        };
    }
    step!("the environment", from_environment(env));
    step!("a web identity", web_identity(env, region).await);
    step!("the shared files", shared_files(env).await);
    step!("the container endpoint", container(env).await);
    step!("the EC2 instance metadata", instance_metadata(env).await);
    Err(format!(
        "no AWS credentials found; tried {}. Set AWS_ACCESS_KEY_ID and \
         AWS_SECRET_ACCESS_KEY, a profile in ~/.aws/credentials, an instance or container \
         role, or SesConfig::credentials",
        tried.join("; ")
    ))
}

/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
fn from_environment(env: &Env) -> Result<Found, String> {
    match (
        env.get("AWS_ACCESS_KEY_ID"),
        env.get("AWS_SECRET_ACCESS_KEY"),
    ) {
        (Some(access_key_id), Some(secret_access_key)) => Ok(Found::Yes(AwsCredentials {
            access_key_id: access_key_id.trim().to_owned(),
            secret_access_key,
            session_token: env.get("AWS_SESSION_TOKEN"),
            expiration: None,
            source: "the environment (AWS_ACCESS_KEY_ID)".to_owned(),
        })),
        (None, None) => Ok(Found::No(
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set".to_owned(),
        )),
        (Some(_), None) => Err("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".into()),
        (None, Some(_)) => Err("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not".into()),
    }
}

// ---- web identity (STS AssumeRoleWithWebIdentity) ----

/// The token in `AWS_WEB_IDENTITY_TOKEN_FILE` exchanged at STS for the role `AWS_ROLE_ARN`.
async fn web_identity(env: &Env, region: &str) -> Result<Found, String> {
    let Some(token_file) = env.get("AWS_WEB_IDENTITY_TOKEN_FILE") else {
        return Ok(Found::No(
            "AWS_WEB_IDENTITY_TOKEN_FILE is not set".to_owned(),
        ));
    };
    let role_arn = env
        .get("AWS_ROLE_ARN")
        .ok_or("AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not")?;
    let path = env.expand(&token_file);
    let token = tokio::fs::read_to_string(&path)
        .await
        .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
    let token = token.trim();
    if token.is_empty() {
        return Err(format!("the token file {} is empty", path.display()));
    }
    let session = env.get("AWS_ROLE_SESSION_NAME").unwrap_or_else(|| {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        format!("outbox-smtp-{secs}")
    });
    let sts_region = env
        .get("AWS_REGION")
        .or_else(|| env.get("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| region.to_owned());
    let url = env
        .get("AWS_ENDPOINT_URL_STS")
        .or_else(|| env.get("AWS_ENDPOINT_URL"))
        .unwrap_or_else(|| format!("https://sts.{sts_region}.{}", aws_domain(&sts_region)));
    let target = Target::parse(&url, STS_CONNECT_TIMEOUT, STS_TIMEOUT)?;
    if !target.endpoint.tls && !crate::config::is_loopback(&target.endpoint.host) {
        return Err(format!(
            "{url} is plain HTTP to a host that is not loopback: the credentials would \
             travel in clear"
        ));
    }
    let body = ::url::form_urlencoded::Serializer::new(String::new())
        .append_pair("Action", "AssumeRoleWithWebIdentity")
        .append_pair("Version", "2011-06-15")
        .append_pair("RoleArn", &role_arn)
        .append_pair("RoleSessionName", &session)
        .append_pair("WebIdentityToken", token)
        .finish();
    let client = target.client()?;
    let path = match target.path.as_str() {
        "" => "/",
        path => path,
    };
    let (answer, _) = client
        .request(
            hyper::Method::POST,
            path,
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Accept", "text/xml"),
            ],
            body.into_bytes(),
        )
        .await
        .map_err(|f| format!("STS at {url}: {}", failure(f)))?;
    let xml = String::from_utf8_lossy(&answer.body);
    if answer.status != 200 {
        let code = xml_text(&xml, "Code").unwrap_or_default();
        let message = xml_text(&xml, "Message").unwrap_or_else(|| short(&xml));
        return Err(format!(
            "STS AssumeRoleWithWebIdentity for {role_arn} answered HTTP {}: {code}: {message}",
            answer.status
        ));
    }
    let block = xml_text(&xml, "Credentials").ok_or_else(|| {
        format!(
            "STS AssumeRoleWithWebIdentity answered without Credentials: {}",
            short(&xml)
        )
    })?;
    let field = |name: &str| {
        xml_text(&block, name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("STS's Credentials lack {name}"))
    };
    Ok(Found::Yes(AwsCredentials {
        access_key_id: field("AccessKeyId")?,
        secret_access_key: field("SecretAccessKey")?,
        session_token: Some(field("SessionToken")?),
        expiration: Some(
            parse_time(&field("Expiration")?).ok_or("STS's Expiration is not an RFC 3339 time")?,
        ),
        source: format!("a web identity (role {role_arn})"),
    }))
}

/// `amazonaws.com`, or `amazonaws.com.cn` for a region in China.
pub(crate) fn aws_domain(region: &str) -> &'static str {
    match region.starts_with("cn-") {
        true => "amazonaws.com.cn",
        false => "amazonaws.com",
    }
}

/// The text inside the first `<tag>...</tag>` of `xml` (a namespace prefix or attributes on
/// the opening tag allowed), with the five XML entities and numeric references decoded.
pub(crate) fn xml_text(xml: &str, tag: &str) -> Option<String> {
    let mut from = 0;
    let start = loop {
        let at = from + xml[from..].find('<')?;
        let rest = &xml[at + 1..];
        let name_end = rest.find(['>', ' ', '/', '\t', '\r', '\n'])?;
        let name = &rest[..name_end];
        let local = name.rsplit(':').next().unwrap_or(name);
        if local == tag && !name.starts_with('/') {
            let open_end = at + 1 + rest.find('>')?;
            if xml[..open_end].ends_with('/') {
                return Some(String::new());
            }
            break open_end + 1;
        }
        from = at + 1;
    };
    // The closing tag, `</Code>` or `</sts:Code>`.
    let mut from = start;
    let end = loop {
        let at = from + xml[from..].find("</")?;
        let name_end = at + 2 + xml[at + 2..].find('>')?;
        let name = xml[at + 2..name_end].trim();
        if name.rsplit(':').next() == Some(tag) {
            break at;
        }
        from = at + 2;
    };
    Some(xml_unescape(xml[start..end].trim()))
}

fn xml_unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';') else { break };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

// ---- shared files (~/.aws/credentials, ~/.aws/config) ----

/// The static keys of profile `AWS_PROFILE` (or `default`) in the shared credentials file,
/// else the shared config file.
async fn shared_files(env: &Env) -> Result<Found, String> {
    let named = env.get("AWS_PROFILE");
    let profile = named.clone().unwrap_or_else(|| "default".to_owned());
    let file = |var: &str, default: &str| match env.get(var) {
        Some(path) => Some(env.expand(&path)),
        None => env.home().map(|home| home.join(".aws").join(default)),
    };
    let credentials_path = file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let config_path = file("AWS_CONFIG_FILE", "config");
    let mut notes = Vec::new();
    let mut settings: Option<(BTreeMap<String, String>, PathBuf)> = None;
    // The credentials file's values win over the config file's for the same profile.
    for (path, is_config) in [(&config_path, true), (&credentials_path, false)] {
        let Some(path) = path else {
            notes.push("no home directory (HOME) to find ~/.aws in".to_owned());
            continue;
        };
        let text = match tokio::fs::read_to_string(path).await {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                notes.push(format!("no {}", path.display()));
                continue;
            }
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        match profile_section(&text, &profile, is_config) {
            Some(section) => match &mut settings {
                Some((merged, from)) => {
                    merged.extend(section);
                    *from = path.clone();
                }
                None => settings = Some((section, path.clone())),
            },
            None => notes.push(format!("no profile `{profile}` in {}", path.display())),
        }
    }
    let Some((settings, path)) = settings else {
        notes.dedup();
        let why = notes.join(", ");
        return match named {
            // A profile asked for by name must exist.
            Some(_) => Err(format!(
                "AWS_PROFILE is `{profile}`, which is not set up: {why}"
            )),
            None => Ok(Found::No(why)),
        };
    };
    let key = settings.get("aws_access_key_id").filter(|v| !v.is_empty());
    let secret = settings
        .get("aws_secret_access_key")
        .filter(|v| !v.is_empty());
    match (key, secret) {
        (Some(key), Some(secret)) => Ok(Found::Yes(AwsCredentials {
            access_key_id: key.clone(),
            secret_access_key: secret.clone(),
            session_token: settings
                .get("aws_session_token")
                .filter(|v| !v.is_empty())
                .cloned(),
            expiration: None,
            source: format!("profile `{profile}` in {}", path.display()),
        })),
        (Some(_), None) | (None, Some(_)) => Err(format!(
            "profile `{profile}` needs both aws_access_key_id and aws_secret_access_key"
        )),
        (None, None) => {
            const UNSUPPORTED: [&str; 7] = [
                "role_arn",
                "source_profile",
                "credential_source",
                "credential_process",
                "web_identity_token_file",
                "sso_session",
                "sso_start_url",
            ];
            match UNSUPPORTED.iter().find(|k| settings.contains_key(**k)) {
                Some(setting) => Err(format!(
                    "profile `{profile}` uses {setting}, which this mailer does not support: \
                     only static keys (aws_access_key_id, aws_secret_access_key, \
                     aws_session_token) are read from the shared files; put the role's \
                     credentials in the environment, or use an instance or container role"
                )),
                None => Ok(Found::No(format!(
                    "profile `{profile}` has no aws_access_key_id"
                ))),
            }
        }
    }
}

/// The settings of `profile` in an AWS shared file (INI): `[NAME]` in the credentials file,
/// `[profile NAME]` in the config file (`[default]` in both). Names lower-cased; `#` and
/// `;` comment lines and indented sub-settings skipped; a profile written twice merges.
pub(crate) fn profile_section(
    text: &str,
    profile: &str,
    is_config: bool,
) -> Option<BTreeMap<String, String>> {
    let mut found: Option<BTreeMap<String, String>> = None;
    let mut inside = false;
    for line in text.lines() {
        let indented = line.starts_with([' ', '\t']);
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let name = header.split(']').next().unwrap_or_default().trim();
            let name = match is_config {
                true => match name.strip_prefix("profile") {
                    Some(rest) if rest.starts_with([' ', '\t']) => rest.trim(),
                    _ if name == "default" => name,
                    // `[sso-session x]`, `[services x]`: not a profile.
                    _ => "",
                },
                false => name,
            };
            inside = !name.is_empty() && name == profile;
            if inside {
                found.get_or_insert_with(BTreeMap::new);
            }
            continue;
        }
        if !inside || indented {
            continue;
        }
        if let (Some((key, value)), Some(section)) = (line.split_once('='), found.as_mut()) {
            let value = value.trim();
            // An inline comment needs a space before it.
            let value = value
                .split_once(" #")
                .or_else(|| value.split_once(" ;"))
                .map_or(value, |(v, _)| v)
                .trim();
            section.insert(key.trim().to_ascii_lowercase(), value.to_owned());
        }
    }
    found
}

// ---- container credentials (ECS, EKS Pod Identity) ----

/// The container credentials endpoint's host for a relative URI.
const ECS_HOST: &str = "169.254.170.2";

/// The endpoint of `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` or `_FULL_URI`, when set.
fn container_url(env: &Env) -> Result<Option<String>, String> {
    if let Some(relative) = env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
        let relative = relative.trim();
        let sep = if relative.starts_with('/') { "" } else { "/" };
        return Ok(Some(format!("http://{ECS_HOST}{sep}{relative}")));
    }
    let Some(full) = env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI") else {
        return Ok(None);
    };
    let url = ::url::Url::parse(full.trim())
        .map_err(|e| format!("AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL: {e}"))?;
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let allowed = url.scheme() == "https"
        || (url.scheme() == "http"
            && (crate::config::is_loopback(host)
                || matches!(host, ECS_HOST | "169.254.170.23" | "fd00:ec2::23")));
    if !allowed {
        return Err(format!(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI {full} must be HTTPS, or plain HTTP to \
             loopback, {ECS_HOST}, 169.254.170.23 or [fd00:ec2::23]"
        ));
    }
    Ok(Some(full.trim().to_owned()))
}

/// Credentials from the container's endpoint (JSON).
async fn container(env: &Env) -> Result<Found, String> {
    let Some(url) = container_url(env)? else {
        return Ok(Found::No(
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and AWS_CONTAINER_CREDENTIALS_FULL_URI \
             are not set"
                .to_owned(),
        ));
    };
    let token = match env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
        Some(file) => {
            let path = env.expand(&file);
            Some(
                tokio::fs::read_to_string(&path)
                    .await
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?
                    .trim()
                    .to_owned(),
            )
        }
        None => env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
    };
    if token.as_ref().is_some_and(|t| t.contains(['\r', '\n'])) {
        return Err("the container authorization token holds a line break".to_owned());
    }
    let target = Target::parse(&url, CONTAINER_CONNECT_TIMEOUT, CONTAINER_TIMEOUT)?;
    let client = target.client()?;
    let mut headers = vec![("Accept", "application/json")];
    if let Some(token) = &token {
        headers.push(("Authorization", token.as_str()));
    }
    let (answer, _) = client
        .request(hyper::Method::GET, &target.path, &headers, Vec::new())
        .await
        .map_err(|f| format!("{url}: {}", failure(f)))?;
    if answer.status != 200 {
        return Err(format!(
            "{url} answered HTTP {}: {}",
            answer.status,
            short(&String::from_utf8_lossy(&answer.body))
        ));
    }
    let credentials = json_credentials(&answer.body, &url)?;
    Ok(Found::Yes(AwsCredentials {
        source: format!("the container endpoint {url}"),
        ..credentials
    }))
}

/// `{"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}`, as the container
/// endpoint and the instance metadata service write them.
fn json_credentials(body: &[u8], from: &str) -> Result<AwsCredentials, String> {
    let json: Value = serde_json::from_slice(body)
        .map_err(|e| format!("{from} answered something that is not JSON: {e}"))?;
    if let Some(code) = json.get("Code").and_then(Value::as_str) {
        if code != "Success" {
            let message = json.get("Message").and_then(Value::as_str).unwrap_or("");
            return Err(format!("{from} answered Code {code}: {message}"));
        }
    }
    let field = |name: &str| {
        json.get(name)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let missing = |name: &str| format!("{from} answered without {name}");
    let expiration = match field("Expiration") {
        Some(text) => Some(
            parse_time(&text)
                .ok_or_else(|| format!("{from}: Expiration {text:?} is not a time"))?,
        ),
        None => None,
    };
    Ok(AwsCredentials {
        access_key_id: field("AccessKeyId").ok_or_else(|| missing("AccessKeyId"))?,
        secret_access_key: field("SecretAccessKey").ok_or_else(|| missing("SecretAccessKey"))?,
        session_token: field("Token"),
        expiration,
        source: from.to_owned(),
    })
}

// ---- EC2 instance metadata (IMDSv2) ----

/// The instance metadata service's endpoint.
fn imds_url(env: &Env) -> String {
    if let Some(url) = env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        return url.trim().trim_end_matches('/').to_owned();
    }
    match env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE") {
        Some(mode) if mode.eq_ignore_ascii_case("ipv6") => "http://[fd00:ec2::254]".to_owned(),
        _ => "http://169.254.169.254".to_owned(),
    }
}

/// The instance role's credentials through IMDSv2. Every failure here means "not on an EC2
/// instance with a role" and is reported as such, not as an error: it is the last source.
async fn instance_metadata(env: &Env) -> Result<Found, String> {
    if env
        .get("AWS_EC2_METADATA_DISABLED")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return Ok(Found::No(
            "disabled by AWS_EC2_METADATA_DISABLED".to_owned(),
        ));
    }
    let url = imds_url(env);
    match imds_fetch(&url).await {
        Ok(credentials) => Ok(Found::Yes(credentials)),
        Err(why) => Ok(Found::No(format!("{url}: {why}"))),
    }
}

async fn imds_fetch(url: &str) -> Result<AwsCredentials, String> {
    let target = Target::parse(url, IMDS_TIMEOUT, IMDS_TIMEOUT)?;
    let client = target.client()?;
    let base = target.path.trim_end_matches('/');
    let (answer, _) = client
        .request(
            hyper::Method::PUT,
            &format!("{base}/latest/api/token"),
            &[("X-aws-ec2-metadata-token-ttl-seconds", IMDS_TOKEN_TTL)],
            Vec::new(),
        )
        .await
        .map_err(failure)?;
    if answer.status != 200 {
        return Err(format!(
            "the IMDSv2 token request answered HTTP {}",
            answer.status
        ));
    }
    let token = String::from_utf8_lossy(&answer.body).trim().to_owned();
    if token.is_empty() || token.contains(['\r', '\n']) {
        return Err("the IMDSv2 token is empty or not one line".to_owned());
    }
    let get = |path: String| {
        let client = &client;
        let token = token.as_str();
        async move {
            let (answer, _) = client
                .request(
                    hyper::Method::GET,
                    &path,
                    &[("X-aws-ec2-metadata-token", token)],
                    Vec::new(),
                )
                .await
                .map_err(failure)?;
            match answer.status {
                200 => Ok(answer.body),
                404 => Err(format!(
                    "{path}: not found (no IAM role attached to the instance?)"
                )),
                status => Err(format!("{path} answered HTTP {status}")),
            }
        }
    };
    let roles_path = format!("{base}/latest/meta-data/iam/security-credentials/");
    let roles = get(roles_path.clone()).await?;
    let roles = String::from_utf8_lossy(&roles);
    let role = roles
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .ok_or("no IAM role attached to the instance")?
        .to_owned();
    if role.contains(['/', '?', '#', '%']) {
        return Err(format!("the role name {role:?} is not a name"));
    }
    let body = get(format!("{roles_path}{role}")).await?;
    let credentials = json_credentials(&body, &format!("{url} (role {role})"))?;
    Ok(AwsCredentials {
        source: format!("the EC2 instance metadata (role {role})"),
        ..credentials
    })
}

// ---- helpers ----

/// Where a credential source's request goes, from its URL.
struct Target {
    endpoint: ApiEndpoint,
    /// The path and query, as sent.
    path: String,
}

impl Target {
    fn parse(url: &str, connect_timeout: Duration, timeout: Duration) -> Result<Self, String> {
        let parsed = ::url::Url::parse(url).map_err(|e| format!("{url} is not a URL: {e}"))?;
        let tls = match parsed.scheme() {
            "https" => true,
            "http" => false,
            other => return Err(format!("{url}: the scheme {other} is not http or https")),
        };
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("{url} has no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let mut path = parsed.path().to_owned();
        if let Some(query) = parsed.query() {
            path.push('?');
            path.push_str(query);
        }
        Ok(Self {
            endpoint: ApiEndpoint {
                host,
                port: parsed.port(),
                tls,
                connect_timeout,
                timeout,
                pool: 1,
                ..ApiEndpoint::new("")
            },
            path,
        })
    }

    fn client(&self) -> Result<HttpClient, String> {
        HttpClient::new(&self.endpoint).map_err(|e| format!("cannot set up TLS: {e}"))
    }
}

fn failure(failure: HttpFailure) -> String {
    match failure {
        HttpFailure::Refused(what) | HttpFailure::Connection(what) => what,
        HttpFailure::Timeout(after) => format!("no answer within {after:?}"),
    }
}

/// At most 300 characters of `text`, trimmed.
fn short(text: &str) -> String {
    let text = text.trim();
    match text.is_empty() {
        true => "(no message)".to_owned(),
        false => text.chars().take(300).collect(),
    }
}

/// An RFC 3339 time (`2024-05-01T10:00:00Z`, `2024-05-01T10:00:00.123456Z`,
/// `2024-05-01T12:00:00+02:00`).
pub(crate) fn parse_time(text: &str) -> Option<SystemTime> {
    let text = text.trim();
    let num = |s: &str| -> Option<i64> {
        s.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| s.parse().ok())
            .flatten()
    };
    if text.len() < 20 || !text.is_char_boundary(10) {
        return None;
    }
    let (date, time) = (&text[..10], &text[11..]);
    if !matches!(text.as_bytes()[10], b'T' | b't' | b' ') {
        return None;
    }
    let mut d = date.split('-');
    let (year, month, day) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    if d.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (clock, offset) = match time.find(['Z', 'z', '+', '-']) {
        Some(at) => time.split_at(at),
        None => return None,
    };
    let clock = clock.split('.').next()?;
    let mut c = clock.split(':');
    let (hour, minute, second) = (num(c.next()?)?, num(c.next()?)?, num(c.next()?)?);
    if c.next().is_some() || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let offset_secs = match offset {
        "Z" | "z" => 0,
        _ => {
            let sign = if offset.starts_with('-') { -1 } else { 1 };
            let (h, m) = offset[1..].split_once(':')?;
            sign * (num(h)? * 3600 + num(m)? * 60)
        }
    };
    // Howard Hinnant's days_from_civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    u64::try_from(secs)
        .ok()
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::Vars(Arc::new(
            vars.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ))
    }

    /// A fresh directory under the system's temporary directory.
    fn temp_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("outbox-aws-{}", ulid::Ulid::generate()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn at(text: &str) -> SystemTime {
        parse_time(text).unwrap()
    }

    fn temporary(key: &str, expires: &str) -> AwsCredentials {
        AwsCredentials {
            access_key_id: key.to_owned(),
            secret_access_key: "secret".to_owned(),
            session_token: Some("token".to_owned()),
            expiration: Some(at(expires)),
            source: "test".to_owned(),
        }
    }

    #[test]
    fn rfc3339_times() {
        let epoch = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(epoch(0)));
        assert_eq!(
            parse_time("2024-02-29T23:59:59Z"),
            Some(epoch(1_709_251_199))
        );
        assert_eq!(
            parse_time("2026-11-28T01:27:35.627960Z"),
            Some(epoch(1_795_829_255))
        );
        assert_eq!(
            parse_time("2024-05-01T12:00:00+02:00"),
            parse_time("2024-05-01T10:00:00Z")
        );
        assert_eq!(
            parse_time("2024-05-01T08:30:00-01:30"),
            parse_time("2024-05-01T10:00:00Z")
        );
        for bad in [
            "",
            "2024-05-01",
            "2024-05-01T10:00:00",
            "2024-13-01T10:00:00Z",
            "2024-05-01T25:00:00Z",
            "yesterday at noon, UTC",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn xml_fields() {
        let xml = r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <SessionToken>AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE</SessionToken>
      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>
      <Expiration>2014-10-24T23:00:23Z</Expiration>
      <AccessKeyId>ASgeIAIOSFODNN7EXAMPLE</AccessKeyId>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>"#;
        let block = xml_text(xml, "Credentials").unwrap();
        assert_eq!(
            xml_text(&block, "AccessKeyId").as_deref(),
            Some("ASgeIAIOSFODNN7EXAMPLE")
        );
        assert_eq!(
            xml_text(&block, "SecretAccessKey").as_deref(),
            Some("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY")
        );
        assert_eq!(
            xml_text(&block, "Expiration").as_deref(),
            Some("2014-10-24T23:00:23Z")
        );
        assert_eq!(
            xml_text(
                "<a><Message>a &lt;b&gt; &amp; &#39;c&#x27;</Message></a>",
                "Message"
            )
            .as_deref(),
            Some("a <b> & 'c'")
        );
        assert_eq!(
            xml_text(r#"<sts:Code kind="x">Bad</sts:Code>"#, "Code").as_deref(),
            Some("Bad")
        );
        assert_eq!(xml_text("<MessageId>1</MessageId>", "Message"), None);
        assert_eq!(xml_text("<a><Code/></a>", "Code").as_deref(), Some(""));
        assert_eq!(xml_text("not xml", "Code"), None);
    }

    #[test]
    fn profile_files_are_read_as_the_aws_cli_reads_them() {
        let credentials = "\
# a comment
[default]
aws_access_key_id = AKIADEFAULT
aws_secret_access_key = secret/default+key

[mailer]
AWS_ACCESS_KEY_ID=AKIAMAILER   ; the mailer's key
aws_secret_access_key =mailer-secret
aws_session_token = session-token
";
        let default = profile_section(credentials, "default", false).unwrap();
        assert_eq!(default["aws_access_key_id"], "AKIADEFAULT");
        assert_eq!(default["aws_secret_access_key"], "secret/default+key");
        let mailer = profile_section(credentials, "mailer", false).unwrap();
        assert_eq!(mailer["aws_access_key_id"], "AKIAMAILER");
        assert_eq!(mailer["aws_secret_access_key"], "mailer-secret");
        assert_eq!(mailer["aws_session_token"], "session-token");
        assert_eq!(profile_section(credentials, "other", false), None);

        let config = "\
[default]
region = eu-west-1
[profile mailer]
region = us-east-1
aws_access_key_id = AKIACONFIG
s3 =
  max_concurrent_requests = 20
[sso-session corp]
sso_start_url = https://corp.awsapps.com/start
[mailer]
aws_access_key_id = NOT-A-PROFILE-IN-THE-CONFIG-FILE
";
        let mailer = profile_section(config, "mailer", true).unwrap();
        assert_eq!(mailer["aws_access_key_id"], "AKIACONFIG");
        assert_eq!(mailer["region"], "us-east-1");
        assert!(!mailer.contains_key("max_concurrent_requests"));
        assert_eq!(
            profile_section(config, "default", true).unwrap()["region"],
            "eu-west-1"
        );
        assert_eq!(profile_section(config, "corp", true), None);
        assert_eq!(
            profile_section("[profile a]\n", "a", true),
            Some(BTreeMap::new())
        );
    }

    #[tokio::test]
    async fn the_chain_takes_the_first_source_in_the_sdks_order() {
        let dir = temp_dir();
        std::fs::create_dir_all(dir.join(".aws")).unwrap();
        std::fs::write(
            dir.join(".aws/credentials"),
            "[default]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = p\n\
             [other]\naws_access_key_id = AKIAOTHER\naws_secret_access_key = o\n",
        )
        .unwrap();
        let home = dir.to_str().unwrap();
        let nothing_else = [("HOME", home), ("AWS_EC2_METADATA_DISABLED", "true")];

        // The environment comes first.
        let mut vars = nothing_else.to_vec();
        vars.extend([
            ("AWS_ACCESS_KEY_ID", "AKIAENV"),
            ("AWS_SECRET_ACCESS_KEY", "e"),
            ("AWS_SESSION_TOKEN", "t"),
        ]);
        let found = resolve(&env(&vars), "eu-west-1").await.unwrap();
        assert_eq!(found.access_key_id, "AKIAENV");
        assert_eq!(found.session_token.as_deref(), Some("t"));
        assert_eq!(found.expiration, None);

        // Then the shared files: the default profile, or AWS_PROFILE's.
        let found = resolve(&env(&nothing_else), "eu-west-1").await.unwrap();
        assert_eq!(found.access_key_id, "AKIAPROFILE");
        assert!(
            found.source.contains("profile `default`"),
            "{}",
            found.source
        );
        let mut vars = nothing_else.to_vec();
        vars.push(("AWS_PROFILE", "other"));
        let found = resolve(&env(&vars), "eu-west-1").await.unwrap();
        assert_eq!(found.access_key_id, "AKIAOTHER");

        // A web identity is tried before the shared files: set up but failing (no such
        // token file), it ends the search with its own error.
        let mut vars = nothing_else.to_vec();
        vars.extend([
            ("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token"),
            ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/mailer"),
        ]);
        let e = resolve(&env(&vars), "eu-west-1").await.unwrap_err();
        assert!(
            e.contains("a web identity: cannot read the token file"),
            "{e}"
        );

        // Half of the environment's pair is a mistake, not a reason to look further.
        let mut vars = nothing_else.to_vec();
        vars.push(("AWS_ACCESS_KEY_ID", "AKIAENV"));
        let e = resolve(&env(&vars), "eu-west-1").await.unwrap_err();
        assert!(e.contains("AWS_SECRET_ACCESS_KEY is not"), "{e}");

        // A profile named but missing is an error.
        let mut vars = nothing_else.to_vec();
        vars.push(("AWS_PROFILE", "missing"));
        let e = resolve(&env(&vars), "eu-west-1").await.unwrap_err();
        assert!(e.contains("AWS_PROFILE is `missing`"), "{e}");

        // Nothing anywhere: the error lists each source and why it gave nothing.
        let empty = temp_dir();
        let e = resolve(
            &env(&[
                ("HOME", empty.to_str().unwrap()),
                ("AWS_EC2_METADATA_DISABLED", "true"),
            ]),
            "eu-west-1",
        )
        .await
        .unwrap_err();
        for part in [
            "no AWS credentials found",
            "the environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set",
            "a web identity: AWS_WEB_IDENTITY_TOKEN_FILE is not set",
            "the shared files: no ",
            "the container endpoint: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "the EC2 instance metadata: disabled by AWS_EC2_METADATA_DISABLED",
            "SesConfig::credentials",
        ] {
            assert!(e.contains(part), "{part:?} in {e}");
        }
        std::fs::remove_dir_all(dir).unwrap();
        std::fs::remove_dir_all(empty).unwrap();
    }

    #[tokio::test]
    async fn a_profile_that_assumes_a_role_is_refused_with_the_reason() {
        let dir = temp_dir();
        let config = dir.join("config");
        std::fs::write(
            &config,
            "[profile ci]\nrole_arn = arn:aws:iam::123456789012:role/ci\nsource_profile = base\n",
        )
        .unwrap();
        let e = resolve(
            &env(&[
                ("AWS_CONFIG_FILE", config.to_str().unwrap()),
                ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials"),
                ("AWS_PROFILE", "ci"),
                ("AWS_EC2_METADATA_DISABLED", "true"),
            ]),
            "eu-west-1",
        )
        .await
        .unwrap_err();
        assert!(e.contains("profile `ci` uses role_arn"), "{e}");
        assert!(e.contains("only static keys"), "{e}");
        // The config file's static keys do; the credentials file wins for the same profile.
        let credentials = dir.join("credentials");
        std::fs::write(
            &config,
            "[profile p]\naws_access_key_id = AKIACONFIG\naws_secret_access_key = c\n",
        )
        .unwrap();
        std::fs::write(&credentials, "[p]\naws_access_key_id = AKIACREDENTIALS\n").unwrap();
        let found = resolve(
            &env(&[
                ("AWS_CONFIG_FILE", config.to_str().unwrap()),
                ("AWS_SHARED_CREDENTIALS_FILE", credentials.to_str().unwrap()),
                ("AWS_PROFILE", "p"),
            ]),
            "eu-west-1",
        )
        .await
        .unwrap();
        assert_eq!(
            (
                found.access_key_id.as_str(),
                found.secret_access_key.as_str()
            ),
            ("AKIACREDENTIALS", "c")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn container_and_metadata_endpoints() {
        assert_eq!(
            container_url(&env(&[(
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "/v2/credentials/8f2c"
            )])),
            Ok(Some("http://169.254.170.2/v2/credentials/8f2c".to_owned()))
        );
        for allowed in [
            "http://127.0.0.1:8080/creds",
            "http://169.254.170.23/v1/credentials",
            "http://[fd00:ec2::23]/v1/credentials",
            "https://credentials.example.com/role",
        ] {
            assert_eq!(
                container_url(&env(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", allowed)])),
                Ok(Some(allowed.to_owned())),
            );
        }
        let e = container_url(&env(&[(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "http://10.0.0.8/creds",
        )]))
        .unwrap_err();
        assert!(e.contains("must be HTTPS"), "{e}");
        assert_eq!(container_url(&env(&[])), Ok(None));

        assert_eq!(imds_url(&env(&[])), "http://169.254.169.254");
        assert_eq!(
            imds_url(&env(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv6")])),
            "http://[fd00:ec2::254]"
        );
        assert_eq!(
            imds_url(&env(&[(
                "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                "http://127.0.0.1:9/"
            )])),
            "http://127.0.0.1:9"
        );
        let target = Target::parse("http://[fd00:ec2::254]", IMDS_TIMEOUT, IMDS_TIMEOUT).unwrap();
        assert_eq!(target.endpoint.host, "fd00:ec2::254");
        assert_eq!(target.endpoint.effective_port(), 80);
    }

    #[test]
    fn instance_and_container_json() {
        let body = br#"{"Code":"Success","LastUpdated":"2024-05-01T10:00:00Z","Type":"AWS-HMAC",
            "AccessKeyId":"ASIAEXAMPLE","SecretAccessKey":"s","Token":"t",
            "Expiration":"2024-05-01T16:00:00Z"}"#;
        let c = json_credentials(body, "imds").unwrap();
        assert_eq!(c.access_key_id, "ASIAEXAMPLE");
        assert_eq!(c.session_token.as_deref(), Some("t"));
        assert_eq!(c.expiration, Some(at("2024-05-01T16:00:00Z")));
        let e = json_credentials(br#"{"Code":"Failure","Message":"no"}"#, "imds").unwrap_err();
        assert!(e.contains("Code Failure"), "{e}");
        assert!(json_credentials(b"{}", "ecs")
            .unwrap_err()
            .contains("AccessKeyId"));
        assert!(json_credentials(b"<html>", "ecs")
            .unwrap_err()
            .contains("not JSON"));
    }

    #[tokio::test]
    async fn credentials_are_kept_until_five_minutes_before_they_expire() {
        let cache = CredentialCache::default();
        let fetches = AtomicUsize::new(0);
        let fetch = |key: &'static str, expires: &'static str| {
            let fetches = &fetches;
            move || async move {
                fetches.fetch_add(1, Ordering::SeqCst);
                Ok(temporary(key, expires))
            }
        };
        let got = cache
            .get(
                at("2024-05-01T10:00:00Z"),
                fetch("ONE", "2024-05-01T11:00:00Z"),
            )
            .await
            .unwrap();
        assert_eq!(got.access_key_id, "ONE");
        // Kept while more than five minutes from expiring.
        let got = cache
            .get(
                at("2024-05-01T10:54:59Z"),
                fetch("TWO", "2024-05-01T12:00:00Z"),
            )
            .await
            .unwrap();
        assert_eq!(
            (got.access_key_id.as_str(), fetches.load(Ordering::SeqCst)),
            ("ONE", 1)
        );
        // Within five minutes of expiring: fetched again.
        let got = cache
            .get(
                at("2024-05-01T10:55:01Z"),
                fetch("TWO", "2024-05-01T12:00:00Z"),
            )
            .await
            .unwrap();
        assert_eq!(
            (got.access_key_id.as_str(), fetches.load(Ordering::SeqCst)),
            ("TWO", 2)
        );

        // A failed refresh keeps the current ones while they have not expired...
        let failing = || async { Err::<AwsCredentials, _>("IMDS is down".to_owned()) };
        let got = cache
            .get(at("2024-05-01T11:57:00Z"), failing)
            .await
            .unwrap();
        assert_eq!(got.access_key_id, "TWO");
        // ...and not after.
        let e = cache
            .get(at("2024-05-01T12:00:01Z"), failing)
            .await
            .unwrap_err();
        assert_eq!(e, "IMDS is down");

        // Long-term keys are kept until AWS refuses them.
        let cache = CredentialCache::default();
        let long_term = || async {
            Ok(AwsCredentials {
                expiration: None,
                ..temporary("LONG", "2024-05-01T11:00:00Z")
            })
        };
        cache
            .get(at("2024-05-01T10:00:00Z"), long_term)
            .await
            .unwrap();
        let got = cache
            .get(at("2099-01-01T00:00:00Z"), failing)
            .await
            .unwrap();
        assert_eq!(got.access_key_id, "LONG");
        cache.forget();
        assert!(cache
            .get(at("2099-01-01T00:00:00Z"), failing)
            .await
            .is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_sends_share_one_fetch() {
        let cache = Arc::new(CredentialCache::default());
        let fetches = Arc::new(AtomicUsize::new(0));
        let now = at("2024-05-01T10:00:00Z");
        let run = |fail: bool| {
            // Sends that came in: the fetch lasts until all sixteen are waiting for it (a
            // send reads the cache before it first waits), however slow the machine.
            let arrived = Arc::new(AtomicUsize::new(0));
            let tasks: Vec<_> = (0..16)
                .map(|_| {
                    let (cache, fetches) = (cache.clone(), fetches.clone());
                    let arrived = arrived.clone();
                    tokio::spawn(async move {
                        arrived.fetch_add(1, Ordering::SeqCst);
                        let everyone = arrived.clone();
                        cache
                            .get(now, || async move {
                                fetches.fetch_add(1, Ordering::SeqCst);
                                for _ in 0..2000 {
                                    if everyone.load(Ordering::SeqCst) == 16 {
                                        break;
                                    }
                                    tokio::time::sleep(Duration::from_millis(5)).await;
                                }
                                tokio::time::sleep(Duration::from_millis(20)).await;
                                match fail {
                                    true => Err("STS is down".to_owned()),
                                    false => Ok(temporary("SHARED", "2024-05-01T11:00:00Z")),
                                }
                            })
                            .await
                    })
                })
                .collect();
            futures_join(tasks)
        };
        // Sixteen sends while STS fails: one fetch, sixteen errors.
        let results = run(true).await;
        assert!(results
            .iter()
            .all(|r| r.as_ref().unwrap_err() == "STS is down"));
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        // Then sixteen while it works: one more fetch, the same credentials for all.
        let results = run(false).await;
        assert!(results
            .iter()
            .all(|r| r.as_ref().unwrap().access_key_id == "SHARED"));
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
    }

    async fn futures_join<T>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
        let mut out = Vec::with_capacity(tasks.len());
        for task in tasks {
            out.push(task.await.unwrap());
        }
        out
    }
}
