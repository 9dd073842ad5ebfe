//! Quantities with units as scenario files write them: "200us", "150ns", "4KiB", "2.5GT/s".

use crate::engine::time::SimTime;
use crate::error::{ConfigError, Result};

/// Splits "150 ns" into (150.0, "ns"); the number may have a fraction or exponent.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == 'e' || c == 'E')
                    && t[i + 1..]
                        .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+'))
                || ((c == '-' || c == '+') && (i == 0 || matches!(&t[i - 1..i], "e" | "E"))))
        })
        .map_or(t.len(), |(i, _)| i);
    let value: f64 = t[..end].parse().ok()?;
    Some((value, t[end..].trim()))
}

/// Parses a duration: a number and one of `s`, `ms`, `us` (or `µs`), `ns`, `ps`.
pub fn parse_duration(setting: &'static str, text: &str) -> Result<SimTime> {
    let bad = || {
        ConfigError::not_allowed(
            setting,
            format!("{text:?}"),
            "a duration >= 0 with a unit: s, ms, us, ns, ps (e.g. \"150ns\")",
        )
    };
    let (value, unit) = split_number(text).ok_or_else(bad)?;
    let ps_per_unit = match unit {
        "s" => 1e12,
        "ms" => 1e9,
        "us" | "µs" => 1e6,
        "ns" => 1e3,
        "ps" => 1.0,
        _ => return Err(bad()),
    };
    let ps = value * ps_per_unit;
    if !(ps.is_finite() && ps >= 0.0) || ps * SimTime::TICKS_PER_PS as f64 > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(SimTime::from_ticks(
        (ps * SimTime::TICKS_PER_PS as f64).round() as u64,
    ))
}

/// Parses a byte count: a whole number with an optional unit `B`, `KiB`, `MiB`, `GiB`,
/// `KB`, `MB`, `GB` (decimal), or none (bytes).
pub fn parse_bytes(setting: &'static str, text: &str) -> Result<u64> {
    let bad = || {
        ConfigError::not_allowed(
            setting,
            format!("{text:?}"),
            "a whole number of bytes, optionally with B, KiB, MiB, GiB, KB, MB or GB (e.g. \"4KiB\")",
        )
    };
    let (value, unit) = split_number(text).ok_or_else(bad)?;
    let scale: u64 = match unit {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return Err(bad()),
    };
    let bytes = value * scale as f64;
    if !(bytes.is_finite() && bytes >= 0.0 && bytes.fract() == 0.0 && bytes < u64::MAX as f64) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// Parses a per-lane signalling rate "2.5GT/s" into a generation number (1–7).
pub fn parse_gt_per_s(setting: &'static str, text: &str) -> Result<u32> {
    let bad = || {
        ConfigError::not_allowed(
            setting,
            format!("{text:?}"),
            "2.5GT/s, 5GT/s, 8GT/s, 16GT/s, 32GT/s, 64GT/s, 128GT/s",
        )
    };
    let (value, unit) = split_number(text).ok_or_else(bad)?;
    if unit != "GT/s" {
        return Err(bad());
    }
    crate::pcie::phy::GENERATIONS
        .iter()
        .find(|g| g.gt_per_s() == value)
        .map(|g| g.number())
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("d", "150ns").unwrap(), SimTime::from_ns(150));
        assert_eq!(
            parse_duration("d", "200us").unwrap(),
            SimTime::from_ps(200_000_000)
        );
        assert_eq!(
            parse_duration("d", "1.5 ns").unwrap(),
            SimTime::from_ps(1500)
        );
        assert_eq!(parse_duration("d", "0s").unwrap(), SimTime::ZERO);
        assert_eq!(
            parse_duration("d", "1e-6s").unwrap(),
            SimTime::from_ps(1_000_000)
        );
        for bad in ["150", "ns", "-1ns", "5 parsecs", ""] {
            let e = parse_duration("latency", bad).unwrap_err().to_string();
            assert!(
                e.starts_with("latency ") && e.contains("s, ms, us, ns, ps"),
                "{e}"
            );
        }
    }

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("s", "4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("s", "64").unwrap(), 64);
        assert_eq!(parse_bytes("s", "2 MB").unwrap(), 2_000_000);
        assert_eq!(parse_bytes("s", "310KB").unwrap(), 310_000);
        for bad in ["1.5B", "-4KiB", "4 KiBs", "x", "18446744073709551616"] {
            assert!(parse_bytes("transfer_size", bad)
                .unwrap_err()
                .to_string()
                .contains("KiB"));
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_gt_per_s("rate", "2.5GT/s").unwrap(), 1);
        assert_eq!(parse_gt_per_s("rate", "128GT/s").unwrap(), 7);
        assert!(parse_gt_per_s("rate", "3GT/s").is_err());
    }
}
