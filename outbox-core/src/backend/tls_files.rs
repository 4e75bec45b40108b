//! The certificate and key files a PostgreSQL or MySQL URL names, checked before connecting.

use crate::error::Error;

/// The URL parameters that name a CA, client certificate or client key file, in the
/// spellings sqlx takes for PostgreSQL (`sslrootcert`, `sslcert`, `sslkey`, …) and for
/// MySQL/MariaDB (`ssl-ca`, `ssl-cert`, `ssl-key`, …).
const FILE_PARAMETERS: &[&str] = &[
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
];

/// Fails with the parameter and the path when a certificate or key file that `url` names
/// (`sslrootcert=`, `ssl-ca=`, `sslcert=`, `sslkey=`, …) cannot be read.
///
/// sqlx reads these files only during the TLS handshake and reports a missing one as a
/// bare "No such file or directory", naming neither. `outbox::postgres::connect`,
/// `outbox::mysql::connect` and the `outbox` command check first. A value that is PEM text
/// itself (starting with `-----BEGIN`) is left to sqlx.
pub fn check_tls_files(url: &str) -> Result<(), Error> {
    let Some((_, query)) = url.split_once('?') else {
        return Ok(());
    };
    let query = query.split('#').next().unwrap_or_default();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !FILE_PARAMETERS.contains(&key) {
            continue;
        }
        let path = form_decode(value);
        if path.trim_start().starts_with("-----BEGIN") {
            continue;
        }
        if let Err(e) = std::fs::File::open(&path) {
            return Err(Error::Config(format!(
                "cannot read `{path}`, given as {key}= in the database URL: {e}; \
                 give the path of a PEM file this process can read"
            )));
        }
    }
    Ok(())
}

/// A query value decoded as sqlx decodes it (`application/x-www-form-urlencoded`: `%XX`
/// escapes, `+` for a space).
fn form_decode(value: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| Some(hex(bytes[i + 1])? * 16 + hex(bytes[i + 2])?))
            .flatten();
        match (escaped, bytes[i]) {
            (Some(b), _) => {
                out.push(b);
                i += 3;
                continue;
            }
            (None, b'+') => out.push(b' '),
            (None, b) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_named_with_its_parameter() {
        let err = check_tls_files(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=/no/such%20dir/ca.pem",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`/no/such dir/ca.pem`, given as sslrootcert="),
            "{err}"
        );
        let err = check_tls_files("mysql://u@h/db?ssl-mode=VERIFY_CA&ssl-ca=/no/ca.pem")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`/no/ca.pem`, given as ssl-ca="), "{err}");
    }

    #[test]
    fn urls_without_files_and_readable_files_pass() {
        check_tls_files("postgres://u@h/db").unwrap();
        check_tls_files("postgres://u@h/db?sslmode=require").unwrap();
        check_tls_files("mysql://u@h/db?ssl-mode=VERIFY_CA&ssl-ca=/etc/passwd").unwrap();
        check_tls_files("postgres://u@h/db?sslrootcert=-----BEGIN%20CERTIFICATE-----").unwrap();
        assert_eq!(form_decode("a%2Fb+c%zz%4"), "a/b c%zz%4");
    }
}
