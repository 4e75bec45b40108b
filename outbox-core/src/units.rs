//! How rates and durations read, in one form everywhere: the command line, the web admin
//! and the texts the core writes (a shaping rule's action, the warning about due messages
//! that no worker takes).

use std::time::Duration;

/// A rate given in messages per second, in the unit that reads best: per second from one a
/// second up (`2/s`, `2.5/s`); per minute when that is a whole number or at least ten
/// (`30/min`, `1/min`, `12.5/min`); per hour otherwise (`100/h`, `1/h`, `0.5/h`). At most
/// two decimals, without trailing zeros.
pub fn rate(per_second: f64) -> String {
    let per_minute = per_second * 60.0;
    let whole_minutes =
        per_minute.round() >= 1.0 && (per_minute - per_minute.round()).abs() < 0.005;
    if per_second >= 1.0 {
        format!("{}/s", number(per_second))
    } else if per_minute >= 10.0 || whole_minutes {
        format!("{}/min", number(per_minute))
    } else {
        format!("{}/h", number(per_second * 3600.0))
    }
}

/// A duration exactly, largest unit first, the units that are zero left out: `0s`, `1.5s`,
/// `45s`, `10m`, `3m 20s`, `1h 30m`, `2h`, `1d 2h 3m 4s`. Seconds keep up to three decimals
/// (whole milliseconds; less than a millisecond reads `0s`): callers showing an age or an
/// estimate pass it cut to the second.
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    let (days, rest) = (ms / 86_400_000, ms % 86_400_000);
    let (hours, rest) = (rest / 3_600_000, rest % 3_600_000);
    let (minutes, rest) = (rest / 60_000, rest % 60_000);
    let mut parts = Vec::new();
    for (n, unit) in [(days, "d"), (hours, "h"), (minutes, "m")] {
        if n > 0 {
            parts.push(format!("{n}{unit}"));
        }
    }
    if rest > 0 || parts.is_empty() {
        let (secs, millis) = (rest / 1000, rest % 1000);
        parts.push(if millis == 0 {
            format!("{secs}s")
        } else {
            let millis = format!("{millis:03}");
            format!("{secs}.{}s", millis.trim_end_matches('0'))
        });
    }
    parts.join(" ")
}

/// `x` with at most two decimals and no trailing zeros.
fn number(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_in_the_unit_that_reads_best() {
        assert_eq!(rate(20.0), "20/s");
        assert_eq!(rate(2.0), "2/s");
        assert_eq!(rate(2.5), "2.5/s");
        assert_eq!(rate(0.5), "30/min");
        assert_eq!(rate(600.0 / 3600.0), "10/min");
        assert_eq!(rate(60.0 / 3600.0), "1/min");
        assert_eq!(rate(1.0 / 60.0), "1/min");
        assert_eq!(rate(750.0 / 3600.0), "12.5/min");
        // Not a whole number a minute, and under ten: per hour.
        assert_eq!(rate(100.0 / 3600.0), "100/h");
        assert_eq!(rate(90.0 / 3600.0), "90/h");
        assert_eq!(rate(1.0 / 3600.0), "1/h");
        assert_eq!(rate(0.5 / 3600.0), "0.5/h");
        assert_eq!(rate(0.0), "0/h");
    }

    #[test]
    fn durations_read_exactly_largest_unit_first() {
        assert_eq!(duration(Duration::ZERO), "0s");
        assert_eq!(duration(Duration::from_micros(300)), "0s");
        assert_eq!(duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(duration(Duration::from_millis(250)), "0.25s");
        assert_eq!(duration(Duration::from_secs(45)), "45s");
        assert_eq!(duration(Duration::from_secs(600)), "10m");
        assert_eq!(duration(Duration::from_secs(200)), "3m 20s");
        assert_eq!(duration(Duration::from_secs(3600)), "1h");
        assert_eq!(duration(Duration::from_secs(3725)), "1h 2m 5s");
        assert_eq!(duration(Duration::from_secs(5400)), "1h 30m");
        assert_eq!(duration(Duration::from_secs(7200)), "2h");
        assert_eq!(duration(Duration::from_secs(86_400 + 3600)), "1d 1h");
        assert_eq!(duration(Duration::from_secs(30 * 86_400)), "30d");
        assert_eq!(
            duration(Duration::from_millis(93_784_005)),
            "1d 2h 3m 4.005s"
        );
    }
}
