//! Quantities with units as scenario files write them: "200us", "150ns", "4KiB", "2.5GT/s".

use crate::engine::time::SimTime;
use crate::error::{ConfigError, Result};

/// A number as [`split_number`] reads it, unsigned or with `+` (a regular expression: the
/// grammar of Rust's `f64` parse without `inf` and `nan`).
macro_rules! number_pattern {
    () => {
        r"\+?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
    };
}

/// The JSON Schema `pattern` of a duration: what [`parse_duration`] reads, but for a `-0` and
/// the range (a negative number is refused; whitespace is `\s`).
pub const DURATION_PATTERN: &str =
    concat!(r"^\s*", number_pattern!(), r"\s*(s|ms|us|µs|ns|ps)\s*$");

/// The JSON Schema `pattern` of a requester's `completion_timeout`: a duration, or `off`.
pub const DURATION_OR_OFF_PATTERN: &str = concat!(
    r"^\s*(off|",
    number_pattern!(),
    r"\s*(s|ms|us|µs|ns|ps))\s*$"
);

/// The JSON Schema `pattern` of a byte count: what [`parse_bytes`] reads, but for a `-0` and
/// the range (whether the count is whole is left to tlpsim).
pub const BYTES_PATTERN: &str = concat!(
    r"^\s*",
    number_pattern!(),
    r"\s*(B|KiB|MiB|GiB|KB|kB|MB|GB)?\s*$"
);

/// The JSON Schema `pattern` of a data rate: what [`parse_bandwidth`] reads, but for the range.
pub const RATE_PATTERN: &str = concat!(
    r"^\s*",
    number_pattern!(),
    r"\s*(GB/s|MB/s|KB/s|B/s|Gb/s|Gbps|Mb/s)\s*$"
);

/// The JSON Schema `pattern` of a signalling rate: a number and `GT/s`, as
/// [`parse_gt_per_s`] reads it (which numbers are generations is left to tlpsim).
pub const GT_PER_S_PATTERN: &str = concat!(r"^\s*", number_pattern!(), r"\s*GT/s\s*$");

/// The JSON Schema `pattern` of an address: what [`parse_address`] reads (hex or decimal with
/// underscores anywhere, or a byte count with a unit), but for a `-0` and the 64-bit range.
pub const ADDRESS_PATTERN: &str = concat!(
    r"^\s*(_*0_*[xX]_*\+?_*[0-9a-fA-F][_0-9a-fA-F]*|_*[0-9][_0-9]*|",
    number_pattern!(),
    r"\s*(B|KiB|MiB|GiB|KB|kB|MB|GB)?)\s*$"
);

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

/// Splits `text` into a number and a unit from `units`, returning number × the unit's scale.
///
/// Any failure, or a result that `accept` rejects, is a [`ConfigError`] naming `setting`,
/// the text and `allowed`.
fn parse_scaled(
    setting: &'static str,
    text: &str,
    units: &[(&str, f64)],
    allowed: &str,
    accept: impl Fn(f64) -> bool,
) -> Result<f64> {
    let scaled = split_number(text).and_then(|(value, unit)| {
        let (_, scale) = units.iter().find(|(u, _)| *u == unit)?;
        Some(value * scale).filter(|v| v.is_finite() && accept(*v))
    });
    scaled.ok_or_else(|| ConfigError::not_allowed(setting, format!("{text:?}"), allowed))
}

/// The units of a duration and their picoseconds.
const DURATION_UNITS: &[(&str, f64)] = &[
    ("s", 1e12),
    ("ms", 1e9),
    ("us", 1e6),
    ("µs", 1e6),
    ("ns", 1e3),
    ("ps", 1.0),
];

/// Parses a duration: a number and one of `s`, `ms`, `us` (or `µs`), `ns`, `ps`.
pub fn parse_duration(setting: &'static str, text: &str) -> Result<SimTime> {
    let ticks_per_ps = SimTime::TICKS_PER_PS as f64;
    let ps = parse_scaled(
        setting,
        text,
        DURATION_UNITS,
        "a duration >= 0 with a unit: s, ms, us, ns, ps (e.g. \"150ns\")",
        |ps| ps >= 0.0 && ps * ticks_per_ps < u64::MAX as f64,
    )?;
    Ok(SimTime::from_ticks((ps * ticks_per_ps).round() as u64))
}

/// What a byte count may be written as (the allowed values of [`parse_bytes`]).
const BYTES_ALLOWED: &str = "a whole number of bytes, optionally with B, KiB, MiB, GiB \
     (1024-based) or KB, MB, GB (1000-based) (e.g. \"4KiB\")";

/// The units of a byte count and their bytes.
const BYTES_UNITS: &[(&str, f64)] = &[
    ("", 1.0),
    ("B", 1.0),
    ("KiB", 1024.0),
    ("MiB", 1048576.0),
    ("GiB", 1073741824.0),
    ("KB", 1e3),
    ("kB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
];

/// Parses a byte count: a whole number with an optional unit `B`, `KiB`, `MiB`, `GiB`,
/// `KB`, `MB`, `GB` (decimal), or none (bytes).
pub fn parse_bytes(setting: &'static str, text: &str) -> Result<u64> {
    let bytes = parse_scaled(setting, text, BYTES_UNITS, BYTES_ALLOWED, |b| {
        b >= 0.0 && b.fract() == 0.0 && b < u64::MAX as f64
    })?;
    Ok(bytes as u64)
}

/// Parses a memory address (or window size): hex with `0x` (underscores allowed, e.g.
/// "0x8000_0000"), a plain decimal number, or a byte count with a unit ("2GiB").
pub fn parse_address(setting: &'static str, text: &str) -> Result<u64> {
    let t: String = text.trim().chars().filter(|&c| c != '_').collect();
    let exact = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(u64::from_str_radix(hex, 16).ok())
    } else if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        Some(t.parse::<u64>().ok())
    } else {
        None
    };
    match exact {
        Some(Some(a)) => Ok(a),
        Some(None) => Err(ConfigError::not_allowed(
            setting,
            format!("{text:?}"),
            "a 64-bit address, hex (\"0x8000_0000\") or decimal",
        )),
        None => parse_bytes(setting, text).map_err(|_| {
            ConfigError::not_allowed(
                setting,
                format!("{text:?}"),
                "an address: hex (\"0x8000_0000\"), decimal, or a size with a unit (\"2GiB\")",
            )
        }),
    }
}

/// The units of a data rate and their bytes per second.
const RATE_UNITS: &[(&str, f64)] = &[
    ("GB/s", 1e9),
    ("MB/s", 1e6),
    ("KB/s", 1e3),
    ("B/s", 1.0),
    ("Gb/s", 1e9 / 8.0),
    ("Gbps", 1e9 / 8.0),
    ("Mb/s", 1e6 / 8.0),
];

/// Parses a data rate into bytes per second: a number and one of `GB/s`, `MB/s`, `KB/s`,
/// `B/s` (decimal bytes) or `Gb/s`, `Mb/s` (bits).
pub fn parse_bandwidth(setting: &'static str, text: &str) -> Result<f64> {
    parse_scaled(
        setting,
        text,
        RATE_UNITS,
        "a rate of at least 1KB/s with a unit: GB/s, MB/s, KB/s, B/s, Gb/s, Mb/s (e.g. \"2.5GB/s\")",
        // The floor keeps every transfer's service time well within simulated time's range.
        |r| r >= 1e3,
    )
}

/// Parses a per-lane signalling rate "2.5GT/s" into a generation number (1–7).
pub fn parse_gt_per_s(setting: &'static str, text: &str) -> Result<u32> {
    let gens = crate::pcie::phy::GENERATIONS;
    let rate = parse_scaled(
        setting,
        text,
        &[("GT/s", 1.0)],
        "2.5GT/s, 5GT/s, 8GT/s, 16GT/s, 32GT/s, 64GT/s, 128GT/s",
        |r| gens.iter().any(|g| g.gt_per_s() == r),
    )?;
    Ok(gens
        .iter()
        .find(|g| g.gt_per_s() == rate)
        .map_or(0, |g| g.number()))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::string::string_regex;

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
    fn addresses() {
        assert_eq!(parse_address("a", "0x8000_0000").unwrap(), 0x8000_0000);
        assert_eq!(
            parse_address("a", "0xFFFF_FFFF_FFFF_F000").unwrap(),
            0xFFFF_FFFF_FFFF_F000
        );
        assert_eq!(parse_address("a", "4096").unwrap(), 4096);
        assert_eq!(parse_address("a", "2GiB").unwrap(), 1 << 31);
        for bad in ["0x1_0000_0000_0000_0000", "0xg", "two", ""] {
            let e = parse_address("base", bad).unwrap_err().to_string();
            assert!(e.starts_with("base ") && e.contains("0x8000_0000"), "{e}");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_gt_per_s("rate", "2.5GT/s").unwrap(), 1);
        assert_eq!(parse_gt_per_s("rate", "128GT/s").unwrap(), 7);
        assert!(parse_gt_per_s("rate", "3GT/s").is_err());
    }

    /// Strings `pattern` matches, as proptest generates them (its anchors dropped).
    fn matching(pattern: &'static str) -> impl Strategy<Value = String> {
        let core = pattern.strip_prefix('^').and_then(|p| p.strip_suffix('$'));
        string_regex(core.expect("the pattern is anchored")).expect("the pattern compiles")
    }

    /// The number `text` starts with and the scale of its unit, which `units` must list.
    fn scaled(text: &str, units: &[(&str, f64)]) -> (f64, f64) {
        let (v, unit) = split_number(text).unwrap_or_else(|| panic!("{text:?}: no number"));
        let found = units.iter().find(|(u, _)| *u == unit);
        (
            v,
            found.unwrap_or_else(|| panic!("{text:?}: unit {unit:?}")).1,
        )
    }

    /// Whether a byte count `text` (from [`BYTES_PATTERN`]) is small and whole, so that
    /// [`parse_bytes`] must take it.
    fn small_whole_bytes(text: &str) -> bool {
        let (v, scale) = scaled(text, BYTES_UNITS);
        v <= 1e3 && (v * scale).fract() == 0.0
    }

    proptest! {
        #[test]
        fn what_the_duration_patterns_match_parses(
            text in matching(DURATION_PATTERN),
            or_off in matching(DURATION_OR_OFF_PATTERN),
        ) {
            let (v, _) = scaled(&text, DURATION_UNITS);
            prop_assert!(v > 1e3 || parse_duration("d", &text).is_ok(), "{:?}", text);
            if or_off.trim() != "off" {
                let (v, _) = scaled(&or_off, DURATION_UNITS);
                prop_assert!(v > 1e3 || parse_duration("d", &or_off).is_ok(), "{:?}", or_off);
            }
        }

        #[test]
        fn what_the_bytes_pattern_matches_parses(text in matching(BYTES_PATTERN)) {
            prop_assert!(!small_whole_bytes(&text) || parse_bytes("b", &text).is_ok(), "{:?}", text);
        }

        #[test]
        fn what_the_rate_patterns_match_parses(
            text in matching(RATE_PATTERN),
            gt in matching(GT_PER_S_PATTERN),
        ) {
            let (v, scale) = scaled(&text, RATE_UNITS);
            let in_range = v <= 1e12 && v * scale >= 1e3;
            prop_assert!(!in_range || parse_bandwidth("r", &text).is_ok(), "{:?}", text);
            let (v, _) = scaled(&gt, &[("GT/s", 1.0)]);
            let known = crate::pcie::phy::GENERATIONS.iter().any(|g| g.gt_per_s() == v);
            prop_assert_eq!(known, parse_gt_per_s("g", &gt).is_ok(), "{:?}", gt);
        }

        #[test]
        fn what_the_address_pattern_matches_parses(text in matching(ADDRESS_PATTERN)) {
            let t: String = text.trim().chars().filter(|&c| c != '_').collect();
            let must = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                hex.trim_start_matches('+').trim_start_matches('0').len() <= 16
            } else if t.chars().all(|c| c.is_ascii_digit()) {
                t.parse::<u64>().is_ok()
            } else {
                small_whole_bytes(&text)
            };
            prop_assert!(!must || parse_address("a", &text).is_ok(), "{:?}", text);
        }
    }
}
