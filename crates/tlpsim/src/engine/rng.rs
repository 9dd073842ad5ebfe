//! Seeded random numbers: one named generator (xoshiro256++) so a scenario's seed gives the
//! same stream on every machine, and the latency distributions scenarios may ask for.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::SimTime;

/// The simulator's random stream: xoshiro256++ seeded through SplitMix64 from a `u64`.
#[derive(Debug, Clone)]
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// A stream fully determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// The next stream: this one moved 2^128 draws ahead and copied. Successive calls on a
    /// fresh [`Rng::new`] give streams that never overlap each other or the seed's own (a
    /// link's bit errors draw from one of these: whether they draw changes no other stream).
    pub fn next_stream(&mut self) -> Rng {
        self.0.jump();
        self.clone()
    }

    /// A uniform number in [0, 1) with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A whole number below `n` (n > 0), uniform but for a bias under n / 2^64 (the high
    /// half of a 64 × 64-bit product: one draw, no rejection).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.0.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p` (p ≤ 0 never draws a number, so streams without errors
    /// are unaffected by the error model).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }
}

/// A latency: fixed, or drawn per use from a distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Latency {
    /// Always this value.
    Fixed(SimTime),
    /// Uniform between `min` and `max`.
    Uniform {
        /// Smallest value.
        min: SimTime,
        /// Largest value.
        max: SimTime,
    },
    /// `min` plus an exponential with mean `mean - min` (a memory with occasional long waits).
    Exponential {
        /// Smallest value.
        min: SimTime,
        /// Mean value.
        mean: SimTime,
    },
}

impl Latency {
    /// One draw (a fixed latency draws nothing from `rng`).
    pub fn sample(&self, rng: &mut Rng) -> SimTime {
        match *self {
            Latency::Fixed(t) => t,
            Latency::Uniform { min, max } => {
                let span = (max - min).ticks() as f64;
                min + SimTime::from_ticks((rng.unit() * span) as u64)
            }
            Latency::Exponential { min, mean } => {
                let m = (mean - min).ticks() as f64;
                let u = 1.0 - rng.unit(); // (0, 1]
                min + SimTime::from_ticks((-u.ln() * m).min(1e18) as u64)
            }
        }
    }

    /// The mean value.
    pub fn mean(&self) -> SimTime {
        match *self {
            Latency::Fixed(t) => t,
            Latency::Uniform { min, max } => min + SimTime::from_ticks((max - min).ticks() / 2),
            Latency::Exponential { mean, .. } => mean,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_streams_differ_from_the_seed_stream_and_each_other() {
        let mut base = Rng::new(7);
        let (mut a, mut b) = (base.next_stream(), base.next_stream());
        let mut own = Rng::new(7);
        let first = [own.unit(), a.unit(), b.unit()];
        assert!(first[0] != first[1] && first[1] != first[2] && first[0] != first[2]);
        let mut again = Rng::new(7);
        assert_eq!(again.next_stream().unit(), first[1], "deterministic");
    }

    #[test]
    fn same_seed_same_stream_and_unit_interval() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            let x = a.unit();
            assert_eq!(x.to_bits(), b.unit().to_bits());
            assert!((0.0..1.0).contains(&x));
        }
        assert_ne!(Rng::new(8).unit().to_bits(), Rng::new(7).unit().to_bits());
    }

    #[test]
    fn distributions_have_their_means() {
        let mut rng = Rng::new(1);
        let ns = SimTime::from_ns;
        for lat in [
            Latency::Uniform {
                min: ns(100),
                max: ns(300),
            },
            Latency::Exponential {
                min: ns(100),
                mean: ns(200),
            },
        ] {
            let n = 200_000;
            let sum: f64 = (0..n).map(|_| lat.sample(&mut rng).as_ns_f64()).sum();
            assert!((sum / n as f64 - 200.0).abs() < 2.0, "{lat:?}");
            assert_eq!(lat.mean(), ns(200));
        }
        assert_eq!(Latency::Fixed(ns(5)).sample(&mut rng), ns(5));
    }
}
