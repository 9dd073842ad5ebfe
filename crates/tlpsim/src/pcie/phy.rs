//! Physical layer: generations, lane widths, line encodings and SKP ordered sets.
//!
//! Rates and encodings: PCI Express Base Specification, Chapter 4 (Physical
//! Layer Logical Block); summarised in `shared/FACTS.md`.

use crate::error::{ConfigError, Result};
use std::fmt;

/// A PCI Express generation (data rate per lane).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Generation {
    /// 2.5 GT/s, 8b/10b (PCIe 1.x).
    Gen1,
    /// 5.0 GT/s, 8b/10b (PCIe 2.x).
    Gen2,
    /// 8.0 GT/s, 128b/130b (PCIe 3.x).
    Gen3,
    /// 16.0 GT/s, 128b/130b (PCIe 4.0).
    Gen4,
    /// 32.0 GT/s, 128b/130b (PCIe 5.0).
    Gen5,
    /// 64.0 GT/s, PAM4, 1b/1b, flit mode only (PCIe 6.0).
    Gen6,
    /// 128.0 GT/s, PAM4, 1b/1b, flit mode only (PCIe 7.0).
    Gen7,
}

/// Every generation, in order.
pub const GENERATIONS: [Generation; 7] = [
    Generation::Gen1,
    Generation::Gen2,
    Generation::Gen3,
    Generation::Gen4,
    Generation::Gen5,
    Generation::Gen6,
    Generation::Gen7,
];

/// The link widths the specification defines (x1 to x32).
pub const LINK_WIDTHS: [u32; 7] = [1, 2, 4, 8, 12, 16, 32];

/// The line encoding of a generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// 8b/10b: every byte is a 10-bit symbol (Gen1, Gen2).
    E8b10b,
    /// 128b/130b: 16-byte blocks with a 2-bit sync header (Gen3 to Gen5).
    E128b130b,
    /// 1b/1b PAM4: no line code; errors handled by the flit's FEC and CRC (Gen6+).
    E1b1b,
}

impl Encoding {
    /// Fraction of raw bits that carry bytes (0.8, 128/130 or 1).
    pub fn efficiency(self) -> f64 {
        match self {
            Encoding::E8b10b => 8.0 / 10.0,
            Encoding::E128b130b => 128.0 / 130.0,
            Encoding::E1b1b => 1.0,
        }
    }

    /// Fraction of link time taken by SKP ordered sets at the shortest interval the spec allows.
    ///
    /// - 8b/10b: one SKP ordered set of 4 symbols (COM + 3 SKP) per 1180 symbol times
    ///   (spec: scheduled every 1180–1538 symbol times; we take the minimum, the worst case).
    /// - 128b/130b: one 16-symbol SKP ordered set block after every 370 data blocks
    ///   (spec: every 370–375 blocks), i.e. 1 block in 371.
    /// - 1b/1b flit mode: approximated as in 128b/130b (one 16-byte-per-lane SKP ordered
    ///   set per 370 data blocks of 16 bytes per lane); the spec's flit-mode interval is
    ///   not transcribed here, and the figure is below 0.3 % either way.
    pub fn skp_fraction(self) -> f64 {
        match self {
            Encoding::E8b10b => 4.0 / 1180.0,
            Encoding::E128b130b | Encoding::E1b1b => 1.0 / 371.0,
        }
    }
}

impl Generation {
    /// The generation with number `n` (1 to 7), or an error naming the allowed values.
    pub fn from_number(n: i64) -> Result<Self> {
        usize::try_from(n - 1)
            .ok()
            .and_then(|i| GENERATIONS.get(i))
            .copied()
            .ok_or_else(|| ConfigError::not_allowed("gen", n, "1, 2, 3, 4, 5, 6, 7"))
    }

    /// The generation's number (1 to 7).
    pub fn number(self) -> u32 {
        self as u32 + 1
    }

    /// Transfer rate per lane in GT/s.
    pub fn gt_per_s(self) -> f64 {
        match self {
            Generation::Gen1 => 2.5,
            Generation::Gen2 => 5.0,
            Generation::Gen3 => 8.0,
            Generation::Gen4 => 16.0,
            Generation::Gen5 => 32.0,
            Generation::Gen6 => 64.0,
            Generation::Gen7 => 128.0,
        }
    }

    /// The line encoding used at this rate in non-flit mode (Gen6+ only has flit mode).
    pub fn encoding(self) -> Encoding {
        match self {
            Generation::Gen1 | Generation::Gen2 => Encoding::E8b10b,
            Generation::Gen3 | Generation::Gen4 | Generation::Gen5 => Encoding::E128b130b,
            Generation::Gen6 | Generation::Gen7 => Encoding::E1b1b,
        }
    }

    /// True where the generation runs only in flit mode (Gen6 and Gen7).
    pub fn requires_flit_mode(self) -> bool {
        self >= Generation::Gen6
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gen{}", self.number())
    }
}

/// Checks that `width` is a lane count the spec defines.
pub fn check_width(width: i64) -> Result<u32> {
    if let Some(&w) = LINK_WIDTHS.iter().find(|&&w| w as i64 == width) {
        Ok(w)
    } else {
        Err(ConfigError::not_allowed(
            "width",
            width,
            "1, 2, 4, 8, 12, 16, 32 (lanes)",
        ))
    }
}

/// Raw signalling rate of a link per direction, in Gb/s (lanes × GT/s).
pub fn raw_gbps(gen: Generation, width: u32) -> f64 {
    gen.gt_per_s() * width as f64
}

/// Byte rate of a link per direction after line encoding, in Gb/s.
pub fn encoded_gbps(gen: Generation, width: u32) -> f64 {
    raw_gbps(gen, width) * gen.encoding().efficiency()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_rates_match_spec_arithmetic() {
        assert!((encoded_gbps(Generation::Gen1, 4) - 8.0).abs() < 1e-12);
        assert!((encoded_gbps(Generation::Gen1, 8) - 16.0).abs() < 1e-12);
        assert!((encoded_gbps(Generation::Gen3, 8) - 63.015).abs() < 1e-3);
        assert!((encoded_gbps(Generation::Gen5, 16) - 504.12).abs() < 1e-2);
        assert!((raw_gbps(Generation::Gen6, 16) - 1024.0).abs() < 1e-12);
    }

    #[test]
    fn generation_numbers_round_trip() {
        for n in 1..=7 {
            assert_eq!(Generation::from_number(n).unwrap().number() as i64, n);
        }
        let e = Generation::from_number(8).unwrap_err().to_string();
        assert!(
            e.contains("gen 8") && e.contains("1, 2, 3, 4, 5, 6, 7"),
            "{e}"
        );
        assert!(Generation::from_number(0).is_err());
    }

    #[test]
    fn width_three_is_rejected_with_the_allowed_list() {
        let e = check_width(3).unwrap_err().to_string();
        assert!(e.contains("width 3") && e.contains("12, 16, 32"), "{e}");
    }
}
