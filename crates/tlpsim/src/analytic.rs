//! Closed-form bandwidth of one PCI Express link, per direction.
//!
//! The same arithmetic the simulator obeys: line encoding, SKP ordered sets, TLP
//! framing (or flit packing), headers, DLLP traffic on the spec's timers, MPS/MRRS/RCB
//! splitting. Both directions of the link are taken to be busy, as in every full-duplex
//! bandwidth figure of the seed reports:
//!
//! - writes: each direction carries its own posted writes plus, for the writes coming
//!   the other way, one Ack and one UpdateFC per timer interval;
//! - reads: the completion direction carries CplDs plus one Ack and one UpdateFC-NP per
//!   interval for the requests; the request direction carries MRds plus one Ack per
//!   interval for the completions (requesters advertise infinite completion credits, so
//!   no UpdateFC-Cpl flows). Read rate is the lower of the two directions' limits.

use crate::error::{ConfigError, Result};
use crate::pcie::dll::{spec_dllp_fraction, DLLP_BYTES, TLP_FRAMING_BYTES};
use crate::pcie::flit;
use crate::pcie::phy::{self, Generation};
use crate::pcie::tlp::{self, Addressing, TlpKind};

/// Largest transfer the closed form accepts, in bytes (1 GiB).
pub const MAX_TRANSFER_BYTES: u64 = 1 << 30;

/// How DLLP traffic is charged against a direction's capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DllpPolicy {
    /// One Ack and one UpdateFC per interval of the spec's timer tables (symbol times).
    Spec,
    /// No DLLP traffic at all.
    None,
    /// A fixed number of DLLP bytes charged per TLP (PES24T6 Fig. 4 uses 4); charged in
    /// flit mode too, as the caller's explicit assumption.
    PerTlp(f64),
}

impl DllpPolicy {
    /// Parses `spec`, `none`, or a number of DLLP bytes per TLP.
    pub fn parse(text: &str) -> Result<Self> {
        let t = text.trim();
        match t.to_ascii_lowercase().as_str() {
            "spec" => Ok(DllpPolicy::Spec),
            "none" => Ok(DllpPolicy::None),
            _ => match t.parse::<f64>() {
                Ok(b) if b.is_finite() && b >= 0.0 => Ok(DllpPolicy::PerTlp(b)),
                _ => Err(ConfigError::not_allowed(
                    "dllp",
                    format!("{t:?}"),
                    "spec, none, or a number of bytes per TLP >= 0",
                )),
            },
        }
    }
}

/// How a completer sizes its read completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionSize {
    /// One CplD per RCB-aligned block (e.g. one per 64-byte cache line).
    Rcb,
    /// CplDs as large as MPS allows.
    Mps,
}

impl CompletionSize {
    /// Parses `rcb` or `mps`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "rcb" => Ok(CompletionSize::Rcb),
            "mps" => Ok(CompletionSize::Mps),
            _ => Err(ConfigError::not_allowed(
                "completion",
                format!("{text:?}"),
                "rcb (one completion per RCB block), mps (MPS-sized completions)",
            )),
        }
    }
}

/// A link configuration as the user states it, before checking (raw integers, any sign).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkRequest {
    /// Generation number, 1–7.
    pub gen: i64,
    /// Lanes: 1, 2, 4, 8, 12, 16 or 32.
    pub width: i64,
    /// Max_Payload_Size in bytes.
    pub mps: i64,
    /// Max_Read_Request_Size in bytes.
    pub mrrs: i64,
    /// Read completion boundary in bytes (64 or 128).
    pub rcb: i64,
    /// Transfer size in bytes; `None` means one MPS-sized transfer.
    pub payload: Option<i64>,
    /// Address bits of memory requests (32 or 64).
    pub addressing: i64,
    /// Whether every TLP carries an ECRC.
    pub ecrc: bool,
    /// DLLP charging.
    pub dllp: DllpPolicy,
    /// Whether SKP ordered sets are charged.
    pub skp: bool,
    /// Flit mode: `None` means "flit mode exactly where the generation requires it".
    pub flit: Option<bool>,
    /// Completion sizing of the completer.
    pub completion: CompletionSize,
}

impl Default for LinkRequest {
    fn default() -> Self {
        LinkRequest {
            gen: 1,
            width: 1,
            mps: 128,
            mrrs: 512,
            rcb: 64,
            payload: None,
            addressing: 64,
            ecrc: false,
            dllp: DllpPolicy::Spec,
            skp: true,
            flit: None,
            completion: CompletionSize::Rcb,
        }
    }
}

/// A checked link configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Generation.
    pub gen: Generation,
    /// Lanes.
    pub width: u32,
    /// Max_Payload_Size in bytes.
    pub mps: u32,
    /// Max_Read_Request_Size in bytes.
    pub mrrs: u32,
    /// Read completion boundary in bytes.
    pub rcb: u32,
    /// Transfer size in bytes.
    pub payload: u64,
    /// Memory request addressing.
    pub addressing: Addressing,
    /// ECRC on every TLP.
    pub ecrc: bool,
    /// DLLP charging.
    pub dllp: DllpPolicy,
    /// SKP ordered sets charged.
    pub skp: bool,
    /// Flit mode on.
    pub flit: bool,
    /// Completion sizing.
    pub completion: CompletionSize,
}

impl LinkRequest {
    /// Checks every field against what the spec allows.
    pub fn check(&self) -> Result<LinkConfig> {
        let gen = Generation::from_number(self.gen)?;
        let width = phy::check_width(self.width)?;
        let mps = tlp::check_size("mps", self.mps)?;
        let mrrs = tlp::check_size("mrrs", self.mrrs)?;
        let rcb = tlp::check_rcb(self.rcb)?;
        let addressing = Addressing::from_bits(self.addressing)?;
        let payload = match self.payload {
            None => mps as u64,
            Some(p) if (1..=MAX_TRANSFER_BYTES as i64).contains(&p) => p as u64,
            Some(p) => {
                return Err(ConfigError::not_allowed(
                    "payload",
                    p,
                    format!("1 to {MAX_TRANSFER_BYTES} bytes"),
                ))
            }
        };
        if let DllpPolicy::PerTlp(b) = self.dllp {
            if !(b.is_finite() && b >= 0.0) {
                return Err(ConfigError::not_allowed(
                    "dllp",
                    b,
                    "spec, none, or a number of bytes per TLP >= 0",
                ));
            }
        }
        let flit = match self.flit {
            None => gen.requires_flit_mode(),
            Some(false) if gen.requires_flit_mode() => {
                return Err(ConfigError::Conflict(format!(
                    "flit mode cannot be off at {gen} ({} GT/s runs only in flit mode); \
                     leave flit unset or set it on",
                    gen.gt_per_s()
                )))
            }
            Some(f) => f,
        };
        Ok(LinkConfig {
            gen,
            width,
            mps,
            mrrs,
            rcb,
            payload,
            addressing,
            ecrc: self.ecrc,
            dllp: self.dllp,
            skp: self.skp,
            flit,
            completion: self.completion,
        })
    }
}

/// Closed-form results for one link, per direction.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkBandwidth {
    /// Generation number.
    pub gen: u32,
    /// Lanes.
    pub width: u32,
    /// Max_Payload_Size in bytes.
    pub mps: u32,
    /// Transfer size in bytes.
    pub payload_bytes: u64,
    /// Lanes × GT/s, in Gb/s.
    pub raw_gbps: f64,
    /// Byte rate after line encoding, in Gb/s.
    pub encoded_gbps: f64,
    /// Wire bytes of the write TLPs carrying one transfer (framing, header, data, ECRC).
    ///
    /// In flit mode there is no per-TLP framing: this is header + data (+ ECRC), and each
    /// of those bytes costs 256/236 bytes of link time through the flit's overhead.
    pub tlp_wire_bytes: u64,
    /// Payload rate of posted writes, in Gb/s, with writes flowing both ways (so this
    /// direction also carries the Acks and UpdateFCs for the other direction's writes).
    pub write_gbps: f64,
    /// Payload rate of DMA reads (completion data), in Gb/s.
    pub read_gbps: f64,
    /// `write_gbps / encoded_gbps`.
    pub efficiency: f64,
    /// Fraction of the write direction's capacity spent on DLLPs.
    pub dllp_fraction: f64,
    /// Fraction of link time spent on SKP ordered sets.
    pub skp_fraction: f64,
    /// Whether flit mode was used.
    pub flit: bool,
    /// Write TLPs per transfer.
    pub write_tlps: u64,
    /// Which direction limits reads: `"completions"` or `"requests"`.
    pub read_limit: &'static str,
}

impl LinkConfig {
    /// Bytes per second one direction can give to TLP bytes before DLLPs are charged.
    fn tlp_capacity_bytes_per_s(&self) -> f64 {
        let encoded = phy::encoded_gbps(self.gen, self.width) * 1e9 / 8.0;
        encoded * (1.0 - self.skp_fraction()) * if self.flit { flit::tlp_fraction() } else { 1.0 }
    }

    /// Fraction of link time spent on SKP ordered sets (0 when SKP is not charged).
    pub fn skp_fraction(&self) -> f64 {
        if self.skp {
            self.gen.encoding().skp_fraction()
        } else {
            0.0
        }
    }

    /// Fraction of a direction's TLP capacity taken by `dllps_per_interval` timer-driven DLLPs.
    fn timer_dllp_fraction(&self, dllps_per_interval: u32) -> f64 {
        match self.dllp {
            DllpPolicy::Spec if !self.flit => {
                spec_dllp_fraction(self.gen, self.width, self.mps, dllps_per_interval)
            }
            _ => 0.0,
        }
    }

    /// Framing bytes per TLP: 8 outside flit mode, none in flit mode.
    fn framing_bytes(&self) -> u32 {
        if self.flit {
            0
        } else {
            TLP_FRAMING_BYTES
        }
    }

    /// DLLP bytes charged per TLP (only with [`DllpPolicy::PerTlp`]).
    fn per_tlp_dllp_bytes(&self) -> f64 {
        match self.dllp {
            DllpPolicy::PerTlp(b) => b,
            _ => 0.0,
        }
    }

    /// Wire bytes of one TLP, excluding DLLPs charged per TLP.
    fn tlp_wire(&self, kind: TlpKind, payload: u32) -> u64 {
        (tlp::tlp_bytes(kind, self.addressing, payload, self.ecrc) + self.framing_bytes()) as u64
    }

    /// Completion payload size the completer uses.
    fn completion_bytes(&self) -> u32 {
        match self.completion {
            CompletionSize::Rcb => self.rcb.min(self.mps),
            CompletionSize::Mps => self.mps,
        }
    }

    /// Closed-form bandwidth of this link.
    pub fn bandwidth(&self) -> LinkBandwidth {
        let cap = self.tlp_capacity_bytes_per_s();
        let extra_dllp = self.per_tlp_dllp_bytes();

        // Posted writes, both directions busy: Ack + UpdateFC-P per interval.
        let write_tlps = tlp::pieces(self.payload, self.mps);
        let tlp_wire_bytes = tlp::sum_over_split(self.payload, self.mps, |p| {
            self.tlp_wire(TlpKind::MWr, p) as f64
        }) as u64;
        let write_charged = tlp_wire_bytes as f64 + extra_dllp * write_tlps as f64;
        let write_dllp = self.timer_dllp_fraction(2);
        // DLLP share of the capacity: the timer's DLLPs, then any charged per TLP.
        let per_tlp_share = extra_dllp * write_tlps as f64 / write_charged;
        let dllp_fraction = write_dllp + (1.0 - write_dllp) * per_tlp_share;
        let write_gbps = cap * (1.0 - write_dllp) * self.payload as f64 / write_charged * 8.0 / 1e9;

        // DMA reads: MRd at MRRS one way, CplD at the completion size the other way.
        let cpl = self.completion_bytes();
        let req_wire = tlp::pieces(self.payload, self.mrrs) as f64
            * (self.tlp_wire(TlpKind::MRd, 0) as f64 + extra_dllp);
        let cpl_wire = tlp::sum_over_split(self.payload, self.mrrs, |req| {
            tlp::sum_over_split(req as u64, cpl, |c| {
                self.tlp_wire(TlpKind::CplD, c) as f64 + extra_dllp
            })
        });
        // Timer-driven DLLPs go at most once per interval and at most once per TLP they
        // answer: the completion direction carries Ack + UpdateFC-NP for the requests, the
        // request direction an Ack for the completions. Whichever is rarer sets the cost.
        let n_req = tlp::pieces(self.payload, self.mrrs) as f64;
        let n_cpl = tlp::sum_over_split(self.payload, self.mrrs, |req| {
            tlp::pieces(req as u64, cpl) as f64
        });
        let answered = |wire: f64, dllps: u32, answered_tlps: f64| {
            let by_timer = cap * (1.0 - self.timer_dllp_fraction(dllps)) / wire;
            if self.timer_dllp_fraction(dllps) > 0.0 {
                let per_tlp = (dllps * DLLP_BYTES) as f64 * answered_tlps;
                by_timer.max(cap / (wire + per_tlp))
            } else {
                by_timer
            }
        };
        let by_cpl = answered(cpl_wire, 2, n_req);
        let by_req = answered(req_wire, 1, n_cpl);
        let (transfers_per_s, read_limit) = if by_cpl <= by_req {
            (by_cpl, "completions")
        } else {
            (by_req, "requests")
        };
        let read_gbps = transfers_per_s * self.payload as f64 * 8.0 / 1e9;

        let encoded_gbps = phy::encoded_gbps(self.gen, self.width);
        LinkBandwidth {
            gen: self.gen.number(),
            width: self.width,
            mps: self.mps,
            payload_bytes: self.payload,
            raw_gbps: phy::raw_gbps(self.gen, self.width),
            encoded_gbps,
            tlp_wire_bytes,
            write_gbps,
            read_gbps,
            efficiency: write_gbps / encoded_gbps,
            dllp_fraction,
            skp_fraction: self.skp_fraction(),
            flit: self.flit,
            write_tlps,
            read_limit,
        }
    }

    /// Payload rate of messages of `message` bytes plus `header` bytes of protocol headers,
    /// cut into write TLPs of `self.payload` bytes each (the netperf-over-PCIe case).
    ///
    /// Assumption for the last, partly filled TLP of a message: it is sent as a whole
    /// `payload`-sized TLP. x86 write combining (and a DMA engine copying whole cache lines)
    /// flushes whole 64-byte lines, so a message of S + H bytes costs
    /// `ceil((S + H) / payload)` full TLPs. With this assumption the NTB report's Figure 9
    /// reductions (0.8 %, 1.6 %, 3.2 %, 21 %) are reproduced; sending the tail as a short
    /// TLP instead would give 16 % at 512 B.
    pub fn message(&self, message: i64, header: i64) -> Result<MessageBandwidth> {
        if !(1..=MAX_TRANSFER_BYTES as i64).contains(&message) {
            return Err(ConfigError::not_allowed(
                "message",
                message,
                format!("1 to {MAX_TRANSFER_BYTES} bytes"),
            ));
        }
        if !(0..=MAX_TRANSFER_BYTES as i64).contains(&header) {
            return Err(ConfigError::not_allowed(
                "header",
                header,
                format!("0 to {MAX_TRANSFER_BYTES} bytes"),
            ));
        }
        if self.payload > self.mps as u64 {
            return Err(ConfigError::Conflict(format!(
                "payload {} is the size of each TLP of a message and must not exceed mps {}",
                self.payload, self.mps
            )));
        }
        let per_tlp = self.bandwidth();
        let (message, header) = (message as u64, header as u64);
        let tlps = (message + header).div_ceil(self.payload);
        let max_gbps = per_tlp.write_gbps;
        let message_gbps = max_gbps * message as f64 / (tlps * self.payload) as f64;
        Ok(MessageBandwidth {
            message_bytes: message,
            header_bytes: header,
            tlp_payload_bytes: self.payload,
            tlps_per_message: tlps,
            max_gbps,
            message_gbps,
            reduction: 1.0 - message_gbps / max_gbps,
        })
    }
}

/// Payload rate of messages segmented into TLPs.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageBandwidth {
    /// User bytes per message.
    pub message_bytes: u64,
    /// Protocol header bytes added to each message.
    pub header_bytes: u64,
    /// Payload bytes of each TLP.
    pub tlp_payload_bytes: u64,
    /// TLPs one message takes.
    pub tlps_per_message: u64,
    /// Payload rate of back-to-back TLPs of that size, in Gb/s.
    pub max_gbps: f64,
    /// Rate of message bytes, in Gb/s.
    pub message_gbps: f64,
    /// `1 - message_gbps / max_gbps`.
    pub reduction: f64,
}

/// Checks `request` and computes its closed-form bandwidth.
pub fn link_bandwidth(request: &LinkRequest) -> Result<LinkBandwidth> {
    Ok(request.check()?.bandwidth())
}
