//! Host names to addresses, for a delivery: the operating system's resolver
//! ([`SystemResolver`], the default) or given DNS servers ([`DnsResolver`]).
//!
//! A delivery resolves its host once, checks every address with the
//! [`AddressPolicy`](crate::ssrf::AddressPolicy) and connects to a checked one; nothing here
//! caches answers on its own (the operating system's resolver may), so each delivery judges
//! what the name resolves to at that moment. How long a lookup may take is the client's
//! setting ([`WebhookClientBuilder::lookup_timeout`](crate::client::WebhookClientBuilder::lookup_timeout)).

use std::{
    fmt,
    future::Future,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    time::Duration,
};

use hickory_resolver::{
    config::{
        ConnectionConfig, LookupIpStrategy, NameServerConfig, ResolveHosts, ResolverConfig,
        ResolverOpts,
    },
    net::runtime::TokioRuntimeProvider,
    TokioResolver,
};

/// A lookup under way: the addresses of a host, or why there are none.
pub type Lookup<'a> = Pin<Box<dyn Future<Output = Result<Vec<IpAddr>, ResolveError>> + Send + 'a>>;

/// Resolves host names to addresses.
///
/// Implement it to resolve otherwise (a service registry, a fixed table in tests); every
/// address returned is checked against the policy before a connection is made.
pub trait Resolve: Send + Sync {
    /// The addresses of `host` (a name, never an address), in the order connections should
    /// be tried; an empty list is treated as "no such host".
    fn resolve<'a>(&'a self, host: &'a str) -> Lookup<'a>;
}

impl<R: Resolve + ?Sized> Resolve for std::sync::Arc<R> {
    fn resolve<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        (**self).resolve(host)
    }
}

/// Why a host name has no address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolveError {
    /// The name looked up.
    pub host: String,
    /// What the resolver said (`no such host`, a DNS server's error, a timeout).
    pub why: String,
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot resolve {}: {}", self.host, self.why)
    }
}

impl std::error::Error for ResolveError {}

/// The operating system's resolver (`getaddrinfo`, through [`tokio::net::lookup_host`]):
/// `/etc/hosts`, the configured DNS servers, whatever the system does.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        Box::pin(async move {
            let found = tokio::net::lookup_host((host, 0))
                .await
                .map_err(|e| ResolveError {
                    host: host.to_owned(),
                    why: e.to_string(),
                })?;
            let mut addresses: Vec<IpAddr> = Vec::new();
            for address in found.map(|a| a.ip()) {
                if !addresses.contains(&address) {
                    addresses.push(address);
                }
            }
            Ok(addresses)
        })
    }
}

/// A DNS client asking the given name servers (UDP, then TCP for long answers; A and AAAA
/// records, IPv4 addresses first), without a cache of its own and without the hosts file:
/// every lookup reaches a server.
#[derive(Clone)]
pub struct DnsResolver {
    servers: Vec<SocketAddr>,
    resolver: TokioResolver,
}

impl fmt::Debug for DnsResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DnsResolver")
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl DnsResolver {
    /// A resolver asking `servers` (tried in the order given), each query waiting up to
    /// 2 s for an answer, twice; the client's lookup timeout bounds the whole lookup.
    pub fn new(servers: impl IntoIterator<Item = SocketAddr>) -> std::io::Result<Self> {
        Self::with_query_timeout(servers, Duration::from_secs(2))
    }

    /// [`new`](Self::new), each query waiting up to `timeout` for an answer.
    pub fn with_query_timeout(
        servers: impl IntoIterator<Item = SocketAddr>,
        timeout: Duration,
    ) -> std::io::Result<Self> {
        let servers: Vec<SocketAddr> = servers.into_iter().collect();
        if servers.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a DNS resolver needs at least one name server",
            ));
        }
        let name_servers = servers
            .iter()
            .map(|server| {
                let connections = [ConnectionConfig::udp(), ConnectionConfig::tcp()]
                    .into_iter()
                    .map(|mut connection| {
                        connection.port = server.port();
                        connection
                    })
                    .collect();
                NameServerConfig::new(server.ip(), true, connections)
            })
            .collect();
        let mut options = ResolverOpts::default();
        options.timeout = timeout;
        options.attempts = 2;
        options.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
        options.use_hosts_file = ResolveHosts::Never;
        options.server_ordering_strategy =
            hickory_resolver::config::ServerOrderingStrategy::UserProvidedOrder;
        // No cache: an empty one, and nothing that could be kept is current past its
        // arrival.
        options.cache_size = 0;
        options.positive_max_ttl = Some(Duration::ZERO);
        options.negative_max_ttl = Some(Duration::ZERO);
        let resolver = TokioResolver::builder_with_config(
            ResolverConfig::from_name_servers(name_servers),
            TokioRuntimeProvider::default(),
        )
        .with_options(options)
        .build()
        .map_err(std::io::Error::other)?;
        Ok(Self { servers, resolver })
    }

    /// The name servers asked.
    pub fn servers(&self) -> &[SocketAddr] {
        &self.servers
    }
}

impl Resolve for DnsResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        Box::pin(async move {
            let error = |why: String| ResolveError {
                host: host.to_owned(),
                why,
            };
            match self.resolver.lookup_ip(host).await {
                Ok(found) => {
                    let mut addresses: Vec<IpAddr> = Vec::new();
                    for address in found.iter() {
                        if !addresses.contains(&address) {
                            addresses.push(address);
                        }
                    }
                    Ok(addresses)
                }
                Err(e) if e.is_nx_domain() => Err(error("no such host".to_owned())),
                Err(e) if e.is_no_records_found() => Err(error("no address records".to_owned())),
                Err(e) => Err(error(e.to_string())),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_system_resolver_knows_localhost() {
        let addresses = SystemResolver.resolve("localhost").await.unwrap();
        assert!(
            addresses.iter().all(|a| a.is_loopback()) && !addresses.is_empty(),
            "{addresses:?}"
        );
    }

    #[test]
    fn a_dns_resolver_needs_a_server() {
        assert!(DnsResolver::new([]).is_err());
    }
}
