//! Amazon SES settings (feature `providers`): the region, the configuration set, the
//! message tags, where AWS credentials come from, and the API endpoint.

use std::{collections::BTreeMap, fmt, sync::Arc};

use super::endpoint::ApiEndpoint;
use crate::ConfigError;

/// The most message tags (`EmailTags`) one email may carry: SES's limit is 50 tags, the
/// same as for recipients.
const MAX_TAGS: usize = 50;

/// Sending through Amazon SES's v2 API (`SendEmail` with the rendered MIME as `Raw`
/// content, signed with AWS Signature Version 4), feature `providers`: from the URL
/// `ses://eu-west-1?configuration_set=transactional&tag=campaign:nov`.
///
/// No AWS key is ever written in the URL. Credentials come from, in this order (the order
/// of the AWS SDKs for Java 2 and Python):
///
/// 1. the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and, for temporary
///    keys, `AWS_SESSION_TOKEN`;
/// 2. a web identity (EKS IAM roles for service accounts): `AWS_WEB_IDENTITY_TOKEN_FILE`
///    and `AWS_ROLE_ARN` (and `AWS_ROLE_SESSION_NAME`), exchanged through STS
///    `AssumeRoleWithWebIdentity` at `sts.REGION.amazonaws.com` (the region of
///    `AWS_REGION`, else `AWS_DEFAULT_REGION`, else SES's; `AWS_ENDPOINT_URL_STS` or
///    `AWS_ENDPOINT_URL` names another endpoint);
/// 3. the shared files `~/.aws/credentials` and `~/.aws/config` (`AWS_SHARED_CREDENTIALS_FILE`,
///    `AWS_CONFIG_FILE`), profile `AWS_PROFILE` (else `default`; `[profile NAME]` in the
///    config file): **static keys only** (`aws_access_key_id`, `aws_secret_access_key`,
///    `aws_session_token`). A profile that assumes a role, uses SSO or runs a
///    `credential_process` is refused with a message saying so;
/// 4. a container's credentials endpoint (ECS, EKS Pod Identity):
///    `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` (at `169.254.170.2`) or
///    `AWS_CONTAINER_CREDENTIALS_FULL_URI`, with `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`
///    or `AWS_CONTAINER_AUTHORIZATION_TOKEN`;
/// 5. the EC2 instance's role through the instance metadata service, IMDSv2 only (a
///    session token first), 1 s timeouts so that a host outside EC2 fails fast;
///    `AWS_EC2_METADATA_SERVICE_ENDPOINT` names another endpoint,
///    `AWS_EC2_METADATA_DISABLED=true` skips it.
///
/// Temporary credentials are kept until 5 minutes before they expire and then fetched
/// again, once for all concurrent sends. When none is found the email is not sent: the
/// error (the outbox's "down": the breaker opens, no attempt is spent) lists what was
/// tried. [`credentials`](Self::credentials) gives keys from the program instead, and
/// [`environment`](Self::environment) reads the variables above from a map instead of
/// the process environment.
///
/// `Display` and `Debug` never show a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct SesConfig {
    pub(crate) region: String,
    /// `email.REGION.amazonaws.com` (`.amazonaws.com.cn` in China): the API host unless
    /// the endpoint names another.
    pub(crate) default_host: String,
    pub(crate) configuration_set: Option<String>,
    pub(crate) tags: Vec<(String, String)>,
    pub(crate) credentials: Option<SesCredentials>,
    pub(crate) environment: Option<Arc<BTreeMap<String, String>>>,
    /// An empty `host` means [`default_host`](Self::default_host).
    pub(crate) endpoint: ApiEndpoint,
}

/// Keys given by the program ([`SesConfig::credentials`]).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SesCredentials {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: String,
    pub(crate) session_token: Option<String>,
}

impl SesConfig {
    /// Sends through SES in `region` (e.g. `eu-west-1`) at `email.REGION.amazonaws.com`
    /// over HTTPS, with credentials from the chain described above.
    pub fn new(region: impl Into<String>) -> Self {
        let region = region.into();
        let suffix = match region.starts_with("cn-") {
            true => "amazonaws.com.cn",
            false => "amazonaws.com",
        };
        Self {
            default_host: format!("email.{region}.{suffix}"),
            region,
            configuration_set: None,
            tags: Vec::new(),
            credentials: None,
            environment: None,
            endpoint: ApiEndpoint::new(""),
        }
    }

    /// The configuration set (`ConfigurationSetName`: its event destinations, IP pool,
    /// suppression settings); URL `?configuration_set=NAME`.
    pub fn configuration_set(mut self, name: impl Into<String>) -> Self {
        self.configuration_set = Some(name.into());
        self
    }

    /// A message tag (`EmailTags`) put on every email, for event publishing; URL
    /// `?tag=NAME:VALUE`, repeated for more. Names and values are ASCII letters, digits,
    /// `_` and `-`, at most 256 characters.
    pub fn tag(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.tags.push((name.into(), value.into()));
        self
    }

    /// Signs with these keys instead of looking for credentials: an access key id, its
    /// secret and, for temporary keys, the session token. Never from the URL.
    pub fn credentials(
        mut self,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        session_token: Option<String>,
    ) -> Self {
        self.credentials = Some(SesCredentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token,
        });
        self
    }

    /// Reads the credential chain's variables (`AWS_ACCESS_KEY_ID`, `AWS_PROFILE`,
    /// `HOME`, `AWS_CONTAINER_CREDENTIALS_FULL_URI`, ...) from `vars` alone instead of the
    /// process environment: settings kept elsewhere, or a test.
    pub fn environment<K: Into<String>, V: Into<String>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let vars = vars
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self.environment = Some(Arc::new(vars));
        self
    }

    super::endpoint::api_endpoint_builders!();

    /// The region.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The configuration set, if one is set.
    pub fn configuration_set_name(&self) -> Option<&str> {
        self.configuration_set.as_deref()
    }

    /// The message tags put on every email (name, value).
    pub fn tags(&self) -> &[(String, String)] {
        &self.tags
    }

    /// The API host: `email.REGION.amazonaws.com` unless another was named.
    pub fn api_host(&self) -> &str {
        match self.endpoint.host.is_empty() {
            true => &self.default_host,
            false => &self.endpoint.host,
        }
    }

    /// The endpoint with its host filled in.
    pub(crate) fn resolved_endpoint(&self) -> ApiEndpoint {
        let mut endpoint = self.endpoint.clone();
        if endpoint.host.is_empty() {
            endpoint.host = self.default_host.clone();
        }
        endpoint
    }

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        let region_ok = self
            .region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && self.region.starts_with(|c: char| c.is_ascii_lowercase())
            && self.region.ends_with(|c: char| c.is_ascii_digit());
        if !region_ok {
            return Err(ConfigError::new(
                "region",
                format!(
                    "{:?} is not an AWS region such as eu-west-1 or us-east-1: ses://eu-west-1",
                    self.region
                ),
            ));
        }
        if let Some(set) = &self.configuration_set {
            if set.is_empty() || set.len() > 64 || !set.chars().all(tag_char) {
                return Err(ConfigError::new(
                    "configuration_set",
                    format!(
                        "{set:?} is not a configuration set name (1 to 64 ASCII letters, digits, \
                         '_' and '-')"
                    ),
                ));
            }
        }
        if self.tags.len() > MAX_TAGS {
            return Err(ConfigError::new(
                "tag",
                format!("{} tags; SES takes at most {MAX_TAGS}", self.tags.len()),
            ));
        }
        for (name, value) in &self.tags {
            let ok = |s: &str| s.len() <= 256 && s.chars().all(tag_char);
            if name.is_empty() || !ok(name) || !ok(value) {
                return Err(ConfigError::new(
                    "tag",
                    format!(
                        "{name:?}:{value:?} is not a message tag: a name and a value of ASCII \
                         letters, digits, '_' and '-', at most 256 characters each \
                         (tag=campaign:november)"
                    ),
                ));
            }
        }
        if let Some(c) = &self.credentials {
            if c.access_key_id.trim().is_empty() || c.secret_access_key.is_empty() {
                return Err(ConfigError::new(
                    "credentials",
                    "the access key id or the secret access key is empty",
                ));
            }
        }
        self.resolved_endpoint()
            .check("SES", "request signature (and a session token)")
    }
}

fn tag_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// As a URL (credentials never are in one).
impl fmt::Display for SesConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ses://{}?", self.region)?;
        if let Some(set) = &self.configuration_set {
            write!(f, "configuration_set={set}&")?;
        }
        for (name, value) in &self.tags {
            write!(f, "tag={name}:{value}&")?;
        }
        self.endpoint.write_params(f, true)
    }
}

impl fmt::Debug for SesConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SesConfig")
            .field("region", &self.region)
            .field("configuration_set", &self.configuration_set)
            .field("tags", &self.tags)
            .field("credentials", &self.credentials.as_ref().map(|_| "***"))
            .field(
                "environment",
                &self
                    .environment
                    .as_ref()
                    .map(|vars| format!("{} variables", vars.len())),
            )
            .field("api_host", &self.api_host())
            .field("endpoint", &self.endpoint)
            .finish()
    }
}
