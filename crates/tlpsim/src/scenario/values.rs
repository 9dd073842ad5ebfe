//! Values as a scenario file writes them and their checks: words from a fixed set, durations,
//! sizes and rates with units, latency distributions, credit counts, bounded counts.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::error::{at, BuildError, Place};
use crate::engine::rng::Latency;
use crate::engine::SimTime;
use crate::error::ConfigError;
use crate::fabric::Credits;
use crate::pcie::completion_timeout;
use crate::units;

/// Declares the words a key takes: an enum whose serde form is the word, whose JSON Schema is
/// a string `enum`, and whose parse error names the key, the value and every allowed word.
/// `default Variant` makes it the [`Default`] (serde fills it in for a key left out, the JSON
/// Schema shows it); `=> Target` adds a conversion to the same-named variants of `Target`.
macro_rules! words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident for $key:literal $(default $default:ident)? => $target:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal ),+ $(,)?
        }
    ) => {
        words! {
            $(#[$meta])*
            pub enum $name for $key $(default $default)? {
                $( $(#[$vmeta])* $variant = $word ),+
            }
        }

        impl From<$name> for $target {
            fn from(w: $name) -> Self {
                match w {
                    $( $name::$variant => $target::$variant ),+
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub enum $name:ident for $key:literal $(default $default:ident)? {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// The words, as a scenario file writes them, with their values.
            pub const WORDS: &'static [(&'static str, $name)] = &[$( ($word, $name::$variant) ),+];

            /// The word as a scenario file writes it.
            pub fn word(self) -> &'static str {
                match self {
                    $( $name::$variant => $word ),+
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::scenario::values::word(d, $key, Self::WORDS)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.word())
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $crate::scenario::values::word_schema(&[$( $word ),+])
            }
        }

        $(
            impl Default for $name {
                fn default() -> Self {
                    $name::$default
                }
            }
        )?
    };
}

pub(crate) use words;

/// Declares functions that return literal defaults, for `#[serde(default = "...")]`: serde
/// fills in a key left out with them and the JSON Schema shows them as `default`.
macro_rules! defaults {
    ($( $name:ident: $ty:ty = $value:expr; )+) => {
        $(
            fn $name() -> $ty {
                <$ty>::from($value)
            }
        )+
    };
}

pub(crate) use defaults;

/// Reads one of `words` for `key`; anything else is refused with the allowed words.
pub fn word<'de, D: Deserializer<'de>, T: Copy>(
    d: D,
    key: &'static str,
    words: &[(&'static str, T)],
) -> Result<T, D::Error> {
    let value = toml::Value::deserialize(d)?;
    if let Some((_, t)) = value
        .as_str()
        .and_then(|s| words.iter().find(|(w, _)| *w == s))
    {
        return Ok(*t);
    }
    let shown = match &value {
        toml::Value::String(s) => format!("{s:?}"),
        toml::Value::Table(_) => "{...}".to_string(),
        toml::Value::Float(f) => format!("{f:?}"),
        other => other.to_string().replace('\n', " "),
    };
    let allowed: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let guess = value
        .as_str()
        .map(|s| crate::error::did_you_mean(s, allowed.iter().copied()))
        .unwrap_or_default();
    Err(de::Error::custom(ConfigError::not_allowed(
        key,
        shown,
        format!("{}{guess}", allowed.join(", ")),
    )))
}

/// The JSON Schema of a word key: a string from `words`.
pub fn word_schema(words: &[&str]) -> Schema {
    json_schema!({ "type": "string", "enum": words })
}

/// A latency as written: "500ns", or a table naming a distribution.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum LatencyValue {
    /// A fixed value such as "500ns".
    Fixed(#[schemars(pattern(units::DURATION_PATTERN))] String),
    /// `{ distribution = "uniform", min = "400ns", max = "600ns" }` or
    /// `{ distribution = "exponential", min = "300ns", mean = "500ns" }`.
    Distribution(DistributionSection),
}

impl<'de> Deserialize<'de> for LatencyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A string is a fixed latency, a table a distribution (with its own key errors).
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = LatencyValue;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a duration such as \"500ns\" or a table such as \
                     { distribution = \"uniform\", min = \"400ns\", max = \"600ns\" }",
                )
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<LatencyValue, E> {
                Ok(LatencyValue::Fixed(s.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LatencyValue, A::Error> {
                DistributionSection::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(LatencyValue::Distribution)
            }
        }
        d.deserialize_any(Either)
    }
}

words! {
    /// The shape of a latency distribution.
    pub enum DistributionWord for "distribution" {
        /// Uniform between `min` and `max`.
        Uniform = "uniform",
        /// `min` plus an exponential, with mean `mean`.
        Exponential = "exponential",
    }
}

/// A latency distribution.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistributionSection {
    /// "uniform" or "exponential".
    pub distribution: DistributionWord,
    /// Smallest value.
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub min: String,
    /// Largest value (uniform).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub max: Option<String>,
    /// Mean value (exponential).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub mean: Option<String>,
}

/// A duration for a DMA endpoint's read side and write side, as written: "15ns" for both,
/// or a table `{ read = "15ns", write = "17ns" }` (a side left out takes the key's default).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DurationSides {
    /// The same duration for both sides, such as "15ns".
    Both(#[schemars(pattern(units::DURATION_PATTERN))] String),
    /// `{ read = "15ns", write = "17ns" }`.
    Each(DurationSidesSection),
}

/// A duration per side of a DMA endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DurationSidesSection {
    /// Its DMA reads' value (the key's default when left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub read: Option<String>,
    /// Its DMA writes' value (the key's default when left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub write: Option<String>,
}

impl From<&str> for DurationSides {
    fn from(s: &str) -> Self {
        DurationSides::Both(s.to_string())
    }
}

impl<'de> Deserialize<'de> for DurationSides {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A string is both sides' duration, a table each side's.
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = DurationSides;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a duration such as \"15ns\" or a table such as \
                     { read = \"15ns\", write = \"17ns\" }",
                )
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<DurationSides, E> {
                Ok(DurationSides::Both(s.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DurationSides, A::Error> {
                DurationSidesSection::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(DurationSides::Each)
            }
        }
        d.deserialize_any(Either)
    }
}

/// The (read, write) durations of `key` as `v` gives them, `default` for a side left out.
pub fn duration_sides(
    place: &Place,
    key: &'static str,
    v: &DurationSides,
    default: SimTime,
) -> Result<(SimTime, SimTime), BuildError> {
    let side = |s: &Option<String>| match s {
        Some(s) => duration(place, key, s),
        None => Ok(default),
    };
    match v {
        DurationSides::Both(s) => {
            let d = duration(place, key, s)?;
            Ok((d, d))
        }
        DurationSides::Each(e) => Ok((side(&e.read)?, side(&e.write)?)),
    }
}

/// A count for a DMA endpoint's read side and write side, as written: 2 for both, or a table
/// `{ read = 2, write = 1 }` (a side left out takes the key's default).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum CountSides {
    /// The same count for both sides.
    Both(i64),
    /// `{ read = 2, write = 1 }`.
    Each(CountSidesSection),
}

/// A count per side of a DMA endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountSidesSection {
    /// Its DMA reads' count (the key's default when left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<i64>,
    /// Its DMA writes' count (the key's default when left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<i64>,
}

impl<'de> Deserialize<'de> for CountSides {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A number is both sides' count, a table each side's.
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = CountSides;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a whole number such as 2 or a table such as { read = 2, write = 1 }")
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<CountSides, E> {
                Ok(CountSides::Both(n))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CountSides, A::Error> {
                CountSidesSection::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(CountSides::Each)
            }
        }
        d.deserialize_any(Either)
    }
}

/// The (read, write) counts of `key` as `v` gives them (None for a side left out), each in
/// `range` (`allowed` says it in words).
pub fn count_sides(
    place: &Place,
    key: &'static str,
    v: &CountSides,
    range: std::ops::RangeInclusive<i64>,
    allowed: &str,
) -> Result<(Option<u32>, Option<u32>), BuildError> {
    let one = |n: i64| count(place, key, n, range.clone(), allowed);
    match v {
        CountSides::Both(n) => {
            let n = one(*n)?;
            Ok((Some(n), Some(n)))
        }
        CountSides::Each(e) => Ok((e.read.map(one).transpose()?, e.write.map(one).transpose()?)),
    }
}

/// A credit count as written: a number or "infinite" (any word is read; [`credits`] checks
/// it, naming the credit type).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CreditValue {
    /// Credits (headers, or 16-byte data units).
    Count(i64),
    /// "infinite".
    Word(String),
}

impl<'de> Deserialize<'de> for CreditValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A whole number or a word.
        struct CountOrWord;
        impl Visitor<'_> for CountOrWord {
            type Value = CreditValue;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a credit count such as 32, or \"infinite\"")
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<CreditValue, E> {
                Ok(CreditValue::Count(n))
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<CreditValue, E> {
                Ok(CreditValue::Word(s.to_string()))
            }
        }
        d.deserialize_any(CountOrWord)
    }
}

/// Credits allowed in one credit type.
const CREDIT_RANGE: std::ops::RangeInclusive<i64> = 1..=1 << 20;

impl JsonSchema for CreditValue {
    fn schema_name() -> Cow<'static, str> {
        "CreditValue".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Credits (headers, or 16-byte data units), or \"infinite\".",
            "anyOf": [
                { "type": "integer", "minimum": CREDIT_RANGE.start(), "maximum": CREDIT_RANGE.end() },
                { "type": "string", "enum": ["infinite"] }
            ]
        })
    }
}

/// Advertised credits of a device's ingress ports; a type left out keeps the device's default.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditsSection {
    /// Posted headers.
    pub ph: Option<CreditValue>,
    /// Posted data, 16-byte units.
    pub pd: Option<CreditValue>,
    /// Non-posted headers.
    pub nph: Option<CreditValue>,
    /// Non-posted data.
    pub npd: Option<CreditValue>,
    /// Completion headers.
    pub cplh: Option<CreditValue>,
    /// Completion data.
    pub cpld: Option<CreditValue>,
}

impl CreditsSection {
    /// The credits `default` as a scenario file would write them (for the JSON Schema).
    pub fn written(default: [Option<u32>; 6]) -> Self {
        let v = |c: Option<u32>| {
            Some(match c {
                Some(n) => CreditValue::Count(n as i64),
                None => CreditValue::Word("infinite".into()),
            })
        };
        let [ph, pd, nph, npd, cplh, cpld] = default;
        CreditsSection {
            ph: v(ph),
            pd: v(pd),
            nph: v(nph),
            npd: v(npd),
            cplh: v(cplh),
            cpld: v(cpld),
        }
    }
}

/// A duration key such as "150ns".
pub fn duration(place: &Place, key: &'static str, text: &str) -> Result<SimTime, BuildError> {
    units::parse_duration(key, text).map_err(at(place))
}

/// A rate key such as "2.5GB/s", in bytes per second.
pub fn rate(place: &Place, key: &'static str, text: &str) -> Result<f64, BuildError> {
    units::parse_bandwidth(key, text).map_err(at(place))
}

/// An optional rate key: `None` (unlimited) when left out.
pub fn optional_rate(
    place: &Place,
    key: &'static str,
    text: &Option<String>,
) -> Result<Option<f64>, BuildError> {
    text.as_deref().map(|s| rate(place, key, s)).transpose()
}

/// An optional duration key: `None` when left out.
pub fn optional_duration(
    place: &Place,
    key: &'static str,
    text: &Option<String>,
) -> Result<Option<SimTime>, BuildError> {
    text.as_deref().map(|s| duration(place, key, s)).transpose()
}

/// A size key such as "4KiB", in bytes.
pub fn bytes(place: &Place, key: &'static str, text: &str) -> Result<u64, BuildError> {
    units::parse_bytes(key, text).map_err(at(place))
}

/// A count key that must lie in `range`; `allowed` says so in words.
pub fn count(
    place: &Place,
    key: &'static str,
    v: i64,
    range: std::ops::RangeInclusive<i64>,
    allowed: &str,
) -> Result<u32, BuildError> {
    if range.contains(&v) {
        Ok(v as u32)
    } else {
        Err(BuildError::not_allowed(place, key, v, allowed))
    }
}

/// A count key that must lie in `min..=1024`.
pub fn small_count(place: &Place, key: &'static str, v: i64, min: i64) -> Result<u32, BuildError> {
    count(place, key, v, min..=1024, &format!("{min} to 1024"))
}

/// A requester's `completion_timeout`: a duration the spec's ranges allow (50 us to 64 s),
/// or "off" (Completion Timeout Disable); [`completion_timeout::DEFAULT`] when left out.
/// None: no timeout.
pub fn completion_timeout(
    place: &Place,
    text: &Option<String>,
) -> Result<Option<SimTime>, BuildError> {
    const KEY: &str = "completion_timeout";
    const ALLOWED: &str = "a duration from 50us to 64s (the spec's ranges A to D), or \"off\"";
    let Some(text) = text else {
        return Ok(Some(completion_timeout::DEFAULT));
    };
    if text.trim() == "off" {
        return Ok(None);
    }
    let t = units::parse_duration(KEY, text)
        .map_err(|_| BuildError::not_allowed(place, KEY, format!("{text:?}"), ALLOWED))?;
    if !(completion_timeout::SHORTEST..=completion_timeout::LONGEST).contains(&t) {
        return Err(BuildError::not_allowed(
            place,
            KEY,
            format!("{text:?}"),
            ALLOWED,
        ));
    }
    Ok(Some(t))
}

/// A bit error rate: 0 to 1e-3.
pub fn ber(place: &Place, ber: f64) -> Result<f64, BuildError> {
    if (0.0..=1e-3).contains(&ber) {
        Ok(ber)
    } else {
        Err(BuildError::not_allowed(
            place,
            "ber",
            ber,
            "0 to 1e-3 (errors per bit)",
        ))
    }
}

/// A replay buffer size in bytes, up to 4 GiB.
pub fn replay_buffer(place: &Place, text: &str) -> Result<u32, BuildError> {
    let b = bytes(place, "replay_buffer", text)?;
    u32::try_from(b).map_err(|_| BuildError::not_allowed(place, "replay_buffer", b, "up to 4 GiB"))
}

/// The memory read latency `v` describes: fixed, uniform or exponential.
pub fn latency(place: &Place, v: &LatencyValue) -> Result<Latency, BuildError> {
    let key = "memory_read_latency";
    let d = match v {
        LatencyValue::Fixed(s) => return Ok(Latency::Fixed(duration(place, key, s)?)),
        LatencyValue::Distribution(d) => d,
    };
    let min = duration(place, "min", &d.min)?;
    let need = |name: &'static str, v: &Option<String>| -> Result<SimTime, BuildError> {
        let s = v.as_ref().ok_or_else(|| {
            BuildError::conflict(
                place,
                format!(
                    "{key}: a {} distribution needs `{name}`",
                    d.distribution.word()
                ),
            )
        })?;
        duration(place, name, s)
    };
    let (lat, upper) = match d.distribution {
        DistributionWord::Uniform => {
            let max = need("max", &d.max)?;
            (Latency::Uniform { min, max }, max)
        }
        DistributionWord::Exponential => {
            let mean = need("mean", &d.mean)?;
            (Latency::Exponential { min, mean }, mean)
        }
    };
    if upper < min {
        return Err(BuildError::conflict(
            place,
            format!("{key}: the upper value must not be below `min`"),
        ));
    }
    Ok(lat)
}

/// The credits `v` gives, each type left out taking its value from `default`.
pub fn credits(
    place: &Place,
    v: &Option<CreditsSection>,
    default: [Option<u32>; 6],
) -> Result<Credits, BuildError> {
    let mut out = default;
    let Some(c) = v else {
        return Ok(Credits(out));
    };
    let given = [&c.ph, &c.pd, &c.nph, &c.npd, &c.cplh, &c.cpld];
    let keys = [
        "credits.ph",
        "credits.pd",
        "credits.nph",
        "credits.npd",
        "credits.cplh",
        "credits.cpld",
    ];
    for (i, g) in given.iter().enumerate() {
        out[i] = match g {
            None => out[i],
            Some(CreditValue::Word(w)) if w == "infinite" => None,
            Some(CreditValue::Count(n)) if CREDIT_RANGE.contains(n) => Some(*n as u32),
            Some(other) => {
                let shown = match other {
                    CreditValue::Count(n) => n.to_string(),
                    CreditValue::Word(w) => format!("{w:?}"),
                };
                return Err(BuildError::not_allowed(
                    place,
                    keys[i],
                    shown,
                    "1 to 1048576, or \"infinite\"",
                ));
            }
        }
    }
    Ok(Credits(out))
}
