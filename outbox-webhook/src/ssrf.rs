//! Where a delivery may connect: addresses refused unless allowed, checked at connect time.
//!
//! A webhook's URL is given by whoever registers the endpoint, so a delivery must not become
//! a way into the sender's own network (server-side request forgery): the cloud metadata
//! service, a database on `10.0.0.5`, an admin page on `127.0.0.1`. An [`AddressPolicy`]
//! refuses, by default, every address that is not public unicast:
//!
//! | IPv4 | what |
//! |---|---|
//! | `169.254.169.254`, `100.100.100.200` | cloud metadata services (AWS, GCP, Azure, ...; Alibaba) |
//! | `0.0.0.0/8` | "this network", the unspecified address |
//! | `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16` | private |
//! | `100.64.0.0/10` | shared address space (carrier-grade NAT) |
//! | `127.0.0.0/8` | loopback |
//! | `169.254.0.0/16` | link-local |
//! | `192.0.0.0/24` | IETF protocol assignments |
//! | `192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24` | documentation |
//! | `192.88.99.0/24` | 6to4 relay anycast |
//! | `198.18.0.0/15` | benchmarking |
//! | `224.0.0.0/4` | multicast |
//! | `255.255.255.255`, `240.0.0.0/4` | broadcast, reserved |
//!
//! | IPv6 | what |
//! |---|---|
//! | `::`, `::1` | unspecified, loopback |
//! | `::ffff:0:0/96` | IPv4-mapped: judged as the IPv4 address it maps |
//! | `::/96` | IPv4-compatible (deprecated) |
//! | `64:ff9b::/96` | NAT64: refused when the IPv4 address it embeds is |
//! | `64:ff9b:1::/48` | local-use NAT64 |
//! | `2002::/16` | 6to4: refused when the IPv4 address it embeds is |
//! | `2001::/32` | Teredo |
//! | `2001::/23` | IETF protocol assignments (benchmarking `2001:2::/48`, ORCHID, ...) |
//! | `100::/64` | discard-only |
//! | `2001:db8::/32`, `3fff::/20` | documentation |
//! | `fd00:ec2::254` | the AWS metadata service over IPv6 |
//! | `fc00::/7` | unique local |
//! | `fe80::/10`, `fec0::/10` | link-local, site-local (deprecated) |
//! | `ff00::/8` | multicast |
//! | outside `2000::/3` | not global unicast |
//!
//! [`AddressPolicy::allow`] makes exceptions (a webhook receiver on the same private
//! network, a test server on loopback), and plain `http://` URLs are refused unless
//! [`AddressPolicy::allow_http`] says otherwise.
//!
//! A host name is judged by every address it resolves to: one refused address refuses the
//! name (a name that resolves to a public and a private address is not quietly sent to the
//! public one; it is refused, so the endpoint's owner sees why). The delivery then connects
//! to an address that was checked, never resolving the name a second time, so a DNS answer
//! that changes between the check and the connection (DNS rebinding) cannot lead it
//! elsewhere; [`crate::client::WebhookClient`] does that.

use std::{
    fmt,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
};

pub use ipnet::IpNet;
use url::Url;

/// Which URLs and addresses deliveries may go to: the default refuses every address that
/// is not public unicast (see the [module](self)) and plain `http://`; exceptions are
/// added with [`allow`](Self::allow) and [`allow_http`](Self::allow_http).
///
/// ```
/// use outbox_webhook::ssrf::AddressPolicy;
///
/// // A receiver on the application's own private network, over plain HTTP.
/// let policy = AddressPolicy::default()
///     .allow("10.1.2.0/24".parse().unwrap())
///     .allow_http(true);
/// assert!(policy.check_ip("10.1.2.7".parse().unwrap()).is_ok());
/// assert!(policy.check_ip("10.1.3.7".parse().unwrap()).is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    allowed: Vec<IpNet>,
    allow_http: bool,
}

/// What [`AddressPolicy::check_url`] found in a URL that it accepts: where to connect
/// and what to call the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `https://` (TLS) or `http://`.
    pub https: bool,
    /// The host: a name to resolve, or an address given in the URL (already checked).
    pub host: TargetHost,
    /// The port: the URL's, or 443 / 80.
    pub port: u16,
    /// The `Host` header: the host as written in URLs (`[::1]` for IPv6), with the port
    /// when the URL gives one other than the scheme's default.
    pub authority: String,
}

/// A URL's host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TargetHost {
    /// A name to resolve (lowercase; international names in their ASCII form).
    Name(String),
    /// An address written in the URL (`https://203.0.113.9/`, `https://[2001:db8::1]/`).
    Ip(IpAddr),
}

impl fmt::Display for TargetHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetHost::Name(name) => f.write_str(name),
            TargetHost::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Why a URL or an address was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The URL's host (empty when the URL has none).
    pub host: String,
    /// The refused address, when an address was refused (not the scheme or the URL's form).
    pub address: Option<IpAddr>,
    /// Why: the range the address is in, or what is wrong with the URL, and how to allow
    /// it when it can be allowed.
    pub why: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_refusal(f, &self.host, self.address, &self.why)
    }
}

impl std::error::Error for Refusal {}

/// The text of a refusal (shared with the client's failure).
pub(crate) fn write_refusal(
    f: &mut fmt::Formatter<'_>,
    host: &str,
    address: Option<IpAddr>,
    why: &str,
) -> fmt::Result {
    match address {
        Some(address) if host.trim_matches(['[', ']']).parse() == Ok(address) => {
            write!(f, "delivery to {address} refused: {why}")
        }
        Some(address) => write!(
            f,
            "delivery to {host} refused: it resolves to {address}, {why}"
        ),
        None if host.is_empty() => write!(f, "delivery refused: {why}"),
        None => write!(f, "delivery to {host} refused: {why}"),
    }
}

impl AddressPolicy {
    /// The default policy: public unicast addresses over `https://` only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allows the addresses in `cidr` even when they are in a range refused by default
    /// (`10.1.2.0/24`, `127.0.0.1/32`, `::1/128`). An allowed IPv4 address is allowed in
    /// its IPv4-mapped form (`::ffff:10.1.2.3`) and in the NAT64 and 6to4 forms that embed
    /// it as well.
    pub fn allow(mut self, cidr: IpNet) -> Self {
        self.allowed.push(cidr.trunc());
        self
    }

    /// Whether plain `http://` URLs may be delivered to (default `false`: `https://`
    /// only). The addresses are checked all the same.
    pub fn allow_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// The ranges allowed by [`allow`](Self::allow).
    pub fn allowed(&self) -> &[IpNet] {
        &self.allowed
    }

    /// Whether plain `http://` URLs are allowed.
    pub fn http_allowed(&self) -> bool {
        self.allow_http
    }

    /// Checks what a URL says by itself: its scheme (`https`, or `http` when allowed), no
    /// user name or password in it, a host and a port (given, or the scheme's default), and,
    /// when the host is an address (`https://10.0.0.1/`), that address. A host name's
    /// addresses are checked with [`check_addresses`](Self::check_addresses) once resolved.
    pub fn check_url(&self, url: &Url) -> Result<Target, Refusal> {
        let host_str = url.host_str().unwrap_or_default();
        let refuse = |why: String| Refusal {
            host: host_str.to_owned(),
            address: None,
            why,
        };
        let https = match url.scheme() {
            "https" => true,
            "http" if self.allow_http => false,
            "http" => {
                return Err(refuse(
                    "plain http:// is refused, https:// is required \
                     (AddressPolicy::allow_http(true) allows http://)"
                        .to_owned(),
                ))
            }
            other => {
                return Err(refuse(format!(
                "the scheme {other}: is not deliverable, only https:// (and http:// when allowed)"
            )))
            }
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refuse(
                "a URL with a user name or password (user:password@host) is refused; \
                 send credentials in a header"
                    .to_owned(),
            ));
        }
        let host = match url.host() {
            None => return Err(refuse("the URL has no host".to_owned())),
            Some(url::Host::Domain("")) => return Err(refuse("the URL has no host".to_owned())),
            Some(url::Host::Domain(name)) => TargetHost::Name(name.to_ascii_lowercase()),
            Some(url::Host::Ipv4(ip)) => TargetHost::Ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => TargetHost::Ip(IpAddr::V6(ip)),
        };
        let port = match url.port_or_known_default() {
            Some(0) | None => return Err(refuse("the URL has no usable port".to_owned())),
            Some(port) => port,
        };
        if let TargetHost::Ip(ip) = host {
            self.check_addresses(host_str, &[ip])?;
        }
        let authority = match url.port() {
            Some(port) => format!("{host_str}:{port}"),
            None => host_str.to_owned(),
        };
        Ok(Target {
            https,
            host,
            port,
            authority,
        })
    }

    /// Checks every address `host` resolved to: the first refused one refuses the host
    /// (none is filtered out), and so does an empty list.
    pub fn check_addresses(&self, host: &str, addresses: &[IpAddr]) -> Result<(), Refusal> {
        if addresses.is_empty() {
            return Err(Refusal {
                host: host.to_owned(),
                address: None,
                why: "it resolves to no address".to_owned(),
            });
        }
        for &address in addresses {
            if let Err(range) = self.check_ip(address) {
                // The advice names the IPv4 address an IPv4-mapped one stands for.
                let allowed = canonical(address);
                let prefix = if allowed.is_ipv4() { 32 } else { 128 };
                return Err(Refusal {
                    host: host.to_owned(),
                    address: Some(address),
                    why: format!(
                        "{range}; to deliver there, allow it: AddressPolicy::allow(\"{allowed}/{prefix}\")"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Checks one address: `Err` names the refused range it is in (`loopback
    /// (127.0.0.0/8)`).
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), String> {
        let canonical = canonical(ip);
        if self.is_allowed(ip) || self.is_allowed(canonical) {
            return Ok(());
        }
        if let IpAddr::V6(v6) = canonical {
            if let Some(v4) = embedded_v4(v6) {
                if self.is_allowed(IpAddr::V4(v4)) {
                    return Ok(());
                }
            }
        }
        match refused_by_default(canonical) {
            Some(range) => Err(range),
            None => Ok(()),
        }
    }

    fn is_allowed(&self, ip: IpAddr) -> bool {
        self.allowed.iter().any(|net| net.contains(&ip))
    }
}

/// The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for; any other
/// address as it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        IpAddr::V4(_) => ip,
    }
}

/// The IPv4 address embedded in a NAT64 (`64:ff9b::/96`) or 6to4 (`2002::/16`) address.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(v6);
    if in_v6(bits, NAT64, 96) {
        Some(Ipv4Addr::from(bits as u32))
    } else if in_v6(bits, SIX_TO_FOUR, 16) {
        Some(Ipv4Addr::from((bits >> 80) as u32))
    } else {
        None
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

const fn v6(segments: [u16; 8]) -> u128 {
    let mut bits = 0u128;
    let mut i = 0;
    while i < 8 {
        bits = (bits << 16) | segments[i] as u128;
        i += 1;
    }
    bits
}

fn in_v4(ip: u32, net: u32, prefix: u32) -> bool {
    prefix == 0 || (ip ^ net) >> (32 - prefix) == 0
}

fn in_v6(ip: u128, net: u128, prefix: u32) -> bool {
    prefix == 0 || (ip ^ net) >> (128 - prefix) == 0
}

const NAT64: u128 = v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0]);
const SIX_TO_FOUR: u128 = v6([0x2002, 0, 0, 0, 0, 0, 0, 0]);

/// The IPv4 ranges refused by default, the most specific first.
const REFUSED_V4: &[(u32, u32, &str)] = &[
    (
        v4(169, 254, 169, 254),
        32,
        "a cloud metadata service (AWS, GCP, Azure, ...)",
    ),
    (
        v4(100, 100, 100, 200),
        32,
        "a cloud metadata service (Alibaba Cloud)",
    ),
    (v4(255, 255, 255, 255), 32, "broadcast"),
    (v4(0, 0, 0, 0), 8, "\"this network\" (unspecified)"),
    (v4(10, 0, 0, 0), 8, "private"),
    (
        v4(100, 64, 0, 0),
        10,
        "shared address space (carrier-grade NAT)",
    ),
    (v4(127, 0, 0, 0), 8, "loopback"),
    (v4(169, 254, 0, 0), 16, "link-local"),
    (v4(172, 16, 0, 0), 12, "private"),
    (v4(192, 0, 0, 0), 24, "IETF protocol assignments"),
    (v4(192, 0, 2, 0), 24, "documentation (TEST-NET-1)"),
    (v4(192, 88, 99, 0), 24, "6to4 relay anycast"),
    (v4(192, 168, 0, 0), 16, "private"),
    (v4(198, 18, 0, 0), 15, "benchmarking"),
    (v4(198, 51, 100, 0), 24, "documentation (TEST-NET-2)"),
    (v4(203, 0, 113, 0), 24, "documentation (TEST-NET-3)"),
    (v4(224, 0, 0, 0), 4, "multicast"),
    (v4(240, 0, 0, 0), 4, "reserved"),
];

/// The IPv6 ranges refused by default (after IPv4-mapped addresses were unmapped and NAT64
/// and 6to4 ones judged by the IPv4 address they embed), the most specific first.
const REFUSED_V6: &[(u128, u32, &str)] = &[
    (v6([0, 0, 0, 0, 0, 0, 0, 0]), 128, "unspecified"),
    (v6([0, 0, 0, 0, 0, 0, 0, 1]), 128, "loopback"),
    (
        v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254]),
        128,
        "a cloud metadata service (AWS)",
    ),
    (
        v6([0, 0, 0, 0, 0, 0xffff, 0, 0]),
        96,
        "IPv4-mapped (unmapped and judged as IPv4)",
    ),
    (
        v6([0, 0, 0, 0, 0, 0, 0, 0]),
        96,
        "IPv4-compatible (deprecated)",
    ),
    (v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0]), 48, "local-use NAT64"),
    (v6([0x100, 0, 0, 0, 0, 0, 0, 0]), 64, "discard-only"),
    (v6([0x2001, 0, 0, 0, 0, 0, 0, 0]), 32, "Teredo"),
    (v6([0x2001, 0x2, 0, 0, 0, 0, 0, 0]), 48, "benchmarking"),
    (
        v6([0x2001, 0, 0, 0, 0, 0, 0, 0]),
        23,
        "IETF protocol assignments",
    ),
    (v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0]), 32, "documentation"),
    (v6([0x3fff, 0, 0, 0, 0, 0, 0, 0]), 20, "documentation"),
    (v6([0xfc00, 0, 0, 0, 0, 0, 0, 0]), 7, "unique local"),
    (v6([0xfe80, 0, 0, 0, 0, 0, 0, 0]), 10, "link-local"),
    (
        v6([0xfec0, 0, 0, 0, 0, 0, 0, 0]),
        10,
        "site-local (deprecated)",
    ),
    (v6([0xff00, 0, 0, 0, 0, 0, 0, 0]), 8, "multicast"),
];

/// The refused range `ip` is in, described with the range (`loopback (127.0.0.0/8)`), or
/// `None` for a public unicast address.
fn refused_by_default(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(ip) => refused_v4(ip),
        IpAddr::V6(ip) => {
            if let Some(v4) = embedded_v4(ip) {
                let (net, prefix, name) = if in_v6(u128::from(ip), NAT64, 96) {
                    (NAT64, 96, "NAT64")
                } else {
                    (SIX_TO_FOUR, 16, "6to4")
                };
                return refused_v4(v4).map(|range| {
                    format!(
                        "{name} ({}/{prefix}) for {v4}, which is {range}",
                        Ipv6Addr::from(net)
                    )
                });
            }
            let bits = u128::from(ip);
            if let Some((net, prefix, what)) = REFUSED_V6
                .iter()
                .find(|(net, prefix, _)| in_v6(bits, *net, *prefix))
            {
                return Some(format!("{what} ({}/{prefix})", Ipv6Addr::from(*net)));
            }
            if !in_v6(bits, v6([0x2000, 0, 0, 0, 0, 0, 0, 0]), 3) {
                return Some("not global unicast (outside 2000::/3)".to_owned());
            }
            None
        }
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<String> {
    let bits = u32::from(ip);
    REFUSED_V4
        .iter()
        .find(|(net, prefix, _)| in_v4(bits, *net, *prefix))
        .map(|(net, prefix, what)| format!("{what} ({}/{prefix})", Ipv4Addr::from(*net)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn refused(policy: &AddressPolicy, s: &str) -> bool {
        policy.check_ip(ip(s)).is_err()
    }

    #[test]
    fn every_special_range_is_refused_by_default() {
        let policy = AddressPolicy::default();
        for address in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.254",
            "100.100.100.200",
            "127.0.0.1",
            "127.8.9.10",
            "169.254.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.7",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::8.8.8.8",
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:2::1",
            "2001:db8::1",
            "3fff::1",
            "100::1",
            "fc00::1",
            "fd00:ec2::254",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "4000::1",
        ] {
            assert!(refused(&policy, address), "{address} should be refused");
        }
    }

    #[test]
    fn public_unicast_is_allowed() {
        let policy = AddressPolicy::default();
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "192.0.1.1",
            "198.20.0.1",
            "223.255.255.254",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2002:808:808::1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
        ] {
            assert!(!refused(&policy, address), "{address} should be allowed");
        }
    }

    #[test]
    fn the_reason_names_the_range() {
        let policy = AddressPolicy::default();
        assert_eq!(
            policy.check_ip(ip("127.0.0.1")).unwrap_err(),
            "loopback (127.0.0.0/8)"
        );
        assert!(policy
            .check_ip(ip("169.254.169.254"))
            .unwrap_err()
            .contains("metadata"));
        assert!(policy
            .check_ip(ip("fd00:ec2::254"))
            .unwrap_err()
            .contains("metadata"));
        assert!(policy
            .check_ip(ip("100.100.100.200"))
            .unwrap_err()
            .contains("Alibaba"));
        assert_eq!(
            policy.check_ip(ip("::ffff:10.0.0.1")).unwrap_err(),
            "private (10.0.0.0/8)"
        );
        assert_eq!(
            policy.check_ip(ip("64:ff9b::7f00:1")).unwrap_err(),
            "NAT64 (64:ff9b::/96) for 127.0.0.1, which is loopback (127.0.0.0/8)"
        );
        assert_eq!(
            policy.check_ip(ip("2002:a00:1::")).unwrap_err(),
            "6to4 (2002::/16) for 10.0.0.1, which is private (10.0.0.0/8)"
        );
    }

    #[test]
    fn the_allow_list_makes_exceptions() {
        let policy = AddressPolicy::default()
            .allow("127.0.0.1/32".parse().unwrap())
            .allow("10.1.0.0/16".parse().unwrap())
            .allow("fd12::/16".parse().unwrap());
        assert!(!refused(&policy, "127.0.0.1"));
        assert!(refused(&policy, "127.0.0.2"));
        assert!(!refused(&policy, "::ffff:127.0.0.1"));
        assert!(!refused(&policy, "10.1.200.3"));
        assert!(!refused(&policy, "64:ff9b::10.1.2.3"));
        assert!(refused(&policy, "10.2.0.1"));
        assert!(!refused(&policy, "fd12:3456::1"));
        assert!(refused(&policy, "fd13::1"));
        assert!(refused(&policy, "::1"));
        // A host bit set in the range is ignored (10.1.2.3/16 is 10.1.0.0/16).
        let policy = AddressPolicy::default().allow("192.168.7.7/24".parse().unwrap());
        assert!(!refused(&policy, "192.168.7.1"));
    }

    #[test]
    fn a_name_is_refused_by_any_of_its_addresses() {
        let policy = AddressPolicy::default();
        let refusal = policy
            .check_addresses("hooks.example", &[ip("93.184.216.34"), ip("10.0.0.7")])
            .unwrap_err();
        assert_eq!(refusal.host, "hooks.example");
        assert_eq!(refusal.address, Some(ip("10.0.0.7")));
        assert_eq!(
            refusal.to_string(),
            "delivery to hooks.example refused: it resolves to 10.0.0.7, private (10.0.0.0/8); \
             to deliver there, allow it: AddressPolicy::allow(\"10.0.0.7/32\")"
        );
        assert!(policy.check_addresses("hooks.example", &[]).is_err());
        let mapped = policy
            .check_addresses("hooks.example", &[ip("::ffff:127.0.0.1")])
            .unwrap_err();
        assert!(
            mapped
                .why
                .ends_with("AddressPolicy::allow(\"127.0.0.1/32\")"),
            "{mapped}"
        );
        assert!(policy
            .check_addresses("hooks.example", &[ip("93.184.216.34"), ip("2606:4700::1")])
            .is_ok());
    }

    #[test]
    fn a_url_is_checked_by_itself() {
        let policy = AddressPolicy::default();
        let url = |s: &str| Url::parse(s).unwrap();

        let target = policy
            .check_url(&url("https://Hooks.Example.com/in?x=1"))
            .unwrap();
        assert_eq!(
            target,
            Target {
                https: true,
                host: TargetHost::Name("hooks.example.com".into()),
                port: 443,
                authority: "hooks.example.com".into(),
            }
        );
        let target = policy
            .check_url(&url("https://[2606:4700::1]:8443/"))
            .unwrap();
        assert_eq!(target.host, TargetHost::Ip(ip("2606:4700::1")));
        assert_eq!(
            (target.port, target.authority.as_str()),
            (8443, "[2606:4700::1]:8443")
        );

        let http = policy
            .check_url(&url("http://hooks.example.com/"))
            .unwrap_err();
        assert!(http.why.contains("allow_http(true)"), "{http}");
        assert!(policy.check_url(&url("ftp://hooks.example.com/")).is_err());
        assert!(policy
            .check_url(&url("https://user:pw@hooks.example.com/"))
            .is_err());
        assert!(policy
            .check_url(&url("https://user@hooks.example.com/"))
            .is_err());

        // Addresses in the URL, in every spelling the URL parser accepts.
        for refused in [
            "https://127.0.0.1/",
            "https://2130706433/",
            "https://0x7f.1/",
            "https://127.1/",
            "https://127.0.0.1./",
            "https://[::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://169.254.169.254/latest/meta-data/",
            "https://10.0.0.1/",
            "https://0.0.0.0/",
        ] {
            let refusal = policy.check_url(&url(refused)).unwrap_err();
            assert!(refusal.address.is_some(), "{refused}: {refusal}");
        }

        let open = AddressPolicy::default()
            .allow("127.0.0.1/32".parse().unwrap())
            .allow_http(true);
        let target = open.check_url(&url("http://127.0.0.1:8080/hook")).unwrap();
        assert_eq!(
            (target.https, target.port, target.authority.as_str()),
            (false, 8080, "127.0.0.1:8080")
        );
        assert_eq!(open.check_url(&url("http://127.0.0.1/")).unwrap().port, 80);
    }
}
