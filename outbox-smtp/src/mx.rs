//! MX rollup over DNS (feature `mx`): the mail exchangers of a recipient domain, so that
//! domains served by the same exchangers share one traffic-shaping site
//! ([`EmailShaping::mx_lookup`](crate::EmailShaping::mx_lookup)).
//!
//! Lookups go through `hickory-resolver` (a maintained, pure-Rust DNS resolver): the
//! system's name servers by default, or one given server. Each lookup has a 2 s limit; the
//! outbox caches a domain's answer for an hour (a failed lookup for five minutes, the
//! domain being its own site meanwhile), so a campaign costs one lookup per distinct domain.

use std::{future::Future, net::SocketAddr, pin::Pin, time::Duration};

use hickory_resolver::{
    config::{ConnectionConfig, NameServerConfig, ResolverConfig},
    net::runtime::TokioRuntimeProvider,
    proto::rr::RData,
    TokioResolver,
};

use crate::MxLookup;

use crate::ConfigError;

/// How long one MX lookup may take.
pub const MX_LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// Looks up mail exchangers over DNS.
#[derive(Clone)]
pub struct DnsMx {
    resolver: TokioResolver,
}

impl std::fmt::Debug for DnsMx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsMx").finish_non_exhaustive()
    }
}

impl DnsMx {
    /// Through the system's name servers (`/etc/resolv.conf`); an error when it cannot be
    /// read.
    pub fn system() -> Result<Self, ConfigError> {
        let mut builder = TokioResolver::builder_tokio().map_err(|e| {
            ConfigError::new(
                "mx",
                format!("cannot read the system's DNS configuration: {e}; use DnsMx::with_server"),
            )
        })?;
        builder.options_mut().timeout = MX_LOOKUP_TIMEOUT;
        let resolver = builder
            .build()
            .map_err(|e| ConfigError::new("mx", format!("cannot build the DNS resolver: {e}")))?;
        Ok(Self { resolver })
    }

    /// Through the one name server at `addr` (UDP, then TCP for long answers).
    pub fn with_server(addr: SocketAddr) -> Result<Self, ConfigError> {
        let mut udp = ConnectionConfig::udp();
        udp.port = addr.port();
        let mut tcp = ConnectionConfig::tcp();
        tcp.port = addr.port();
        let mut server = NameServerConfig::udp_and_tcp(addr.ip());
        server.connections = vec![udp, tcp];
        let config = ResolverConfig::from_name_servers(vec![server]);
        let mut builder =
            TokioResolver::builder_with_config(config, TokioRuntimeProvider::default());
        builder.options_mut().timeout = MX_LOOKUP_TIMEOUT;
        builder.options_mut().attempts = 1;
        let resolver = builder
            .build()
            .map_err(|e| ConfigError::new("mx", format!("cannot build the DNS resolver: {e}")))?;
        Ok(Self { resolver })
    }
}

impl MxLookup for DnsMx {
    fn mx<'a>(
        &'a self,
        domain: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<String>, String>> + Send + 'a>> {
        Box::pin(async move {
            let fqdn = format!("{}.", domain.trim_end_matches('.'));
            let lookup = self.resolver.mx_lookup(fqdn.as_str());
            let answer = match tokio::time::timeout(MX_LOOKUP_TIMEOUT, lookup).await {
                Err(_) => return Err(format!("no answer within {MX_LOOKUP_TIMEOUT:?}")),
                Ok(Err(e)) if e.is_no_records_found() || e.is_nx_domain() => return Ok(vec![]),
                Ok(Err(e)) => return Err(e.to_string()),
                Ok(Ok(answer)) => answer,
            };
            let mut mx: Vec<(u16, String)> = answer
                .answers()
                .iter()
                .filter_map(|r| match &r.data {
                    RData::MX(mx) => Some((
                        mx.preference,
                        mx.exchange
                            .to_ascii()
                            .trim_end_matches('.')
                            .to_ascii_lowercase(),
                    )),
                    _ => None,
                })
                .collect();
            mx.sort();
            Ok(mx.into_iter().map(|(_, host)| host).collect())
        })
    }
}
