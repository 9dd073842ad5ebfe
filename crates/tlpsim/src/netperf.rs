//! netperf TCP_STREAM between two hosts: a host network stack with a per-packet CPU cost,
//! copies at the CPU's memcpy bandwidth, cores and an optional DMA engine, over loopback, an
//! ideal wire, Ethernet, or PCIe virtual Ethernet (the IDT System Interconnect).
//!
//! A stream is a pipeline: the sending CPU, the interface, and the receiving CPU work on
//! different messages at once, so the slowest stage sets the rate. Where one core runs both
//! ends (loopback on a single-core host) their work adds up instead.
//!
//! The copies follow the IDT System Interconnect note (AN-571 data movement, Figures 2 and 3):
//! netperf's send copies user data into the kernel (memory to memory); the System Interconnect
//! driver then moves the frame into the peer's receive buffer through the NTB window (memory
//! to MMIO: the DMA engine where the host has one, write-combined CPU stores otherwise); the
//! receiving driver copies the frame out of its receive buffer (memory to memory: DMA engine
//! or CPU), and TCP copies the data to netserver (memory to memory, CPU). Loopback and a NIC
//! need one CPU copy on each side.

use crate::error::{ConfigError, Result};

/// TCP/IP headers per packet, bytes (IPv4 20 + TCP 20).
pub const TCP_IP_HEADER: u32 = 40;
/// Ethernet header, bytes (destination, source, type).
pub const ETHERNET_HEADER: u32 = 14;
/// Ethernet bytes on the wire beyond the header: FCS 4 + preamble 8 + inter-frame gap 12.
pub const ETHERNET_WIRE_EXTRA: u32 = 24;

/// A host's network stack.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Host {
    /// CPU time per TCP packet on one side (socket call, TCP/IP, driver, interrupt), seconds.
    pub packet_cost: f64,
    /// memcpy bandwidth of one core, bytes per second (also its write-combined MMIO stores).
    pub copy_rate: f64,
    /// Cores; netperf and netserver run on different cores when there are two or more.
    pub cores: u32,
    /// A DMA engine (Intel I/OAT) does the driver's copies instead of the CPU.
    pub dma_engine: bool,
}

impl Host {
    /// Checks the values are usable.
    pub fn check(&self, name: &str) -> Result<()> {
        if !(self.packet_cost >= 0.0 && self.copy_rate > 0.0 && self.cores >= 1) {
            return Err(ConfigError::Conflict(format!(
                "host {name}: packet_cost must be >= 0, copy_rate > 0 and cores >= 1"
            )));
        }
        Ok(())
    }
}

/// What carries the stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Interface {
    /// Both ends on the sending host (127.0.0.1): one copy per side, no wire.
    Loopback,
    /// Two hosts joined by an interface that costs nothing: one copy per side.
    Wire,
    /// Ethernet through a NIC with its own DMA: one copy per side, segments of `mss` bytes.
    Ethernet {
        /// TCP maximum segment size, bytes.
        mss: u32,
        /// Line rate, bits per second.
        line_rate: f64,
    },
    /// Virtual Ethernet over PCIe: each message one frame of message + TCP/IP + Ethernet +
    /// `header` bytes, written in `line`-byte TLPs (the last one whole) at `path_rate`.
    Pcie {
        /// System Interconnect header per frame, bytes.
        header: u32,
        /// Bytes per write TLP (an x86 cache line).
        line: u32,
        /// Payload rate of `line`-sized writes from the sender into the receiver's memory,
        /// bytes per second (from the TLP-level simulation of the path).
        path_rate: f64,
    },
}

/// One stage of the pipeline and its time per message.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    /// What the stage is ("sender CPU", "PCIe path", ...).
    pub name: &'static str,
    /// Seconds per message.
    pub seconds: f64,
}

/// A stream's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    /// User data rate, Gb/s.
    pub gbps: f64,
    /// The stages, slowest first is `limit`.
    pub stages: Vec<Stage>,
    /// The stage that sets the rate.
    pub limit: &'static str,
}

/// Bytes of one frame on the PCIe path: the message with all headers, in whole lines.
pub fn pcie_frame_bytes(message: u32, header: u32, line: u32) -> u64 {
    let frame = (message + TCP_IP_HEADER + ETHERNET_HEADER + header) as u64;
    frame.div_ceil(line as u64) * line as u64
}

/// netperf TCP_STREAM throughput of `message`-byte sends from `tx` to `rx`.
pub fn tcp_stream(tx: &Host, rx: &Host, interface: Interface, message: u32) -> Stream {
    let m = message as f64;
    let copy = |h: &Host| m / h.copy_rate;
    // Packets per message: one frame per message, or MSS segments of the byte stream.
    let packets = match interface {
        Interface::Ethernet { mss, .. } => (m / mss as f64).max(1.0),
        _ => 1.0,
    };
    let mut stages = Vec::new();
    match interface {
        Interface::Loopback => {
            // Each end: one packet and one copy, on the sending host.
            let side = tx.packet_cost + copy(tx);
            if tx.cores >= 2 {
                stages.push(Stage {
                    name: "sender CPU",
                    seconds: side,
                });
                stages.push(Stage {
                    name: "receiver CPU",
                    seconds: side,
                });
            } else {
                stages.push(Stage {
                    name: "the one CPU core",
                    seconds: 2.0 * side,
                });
            }
        }
        Interface::Wire => {
            stages.push(Stage {
                name: "sender CPU",
                seconds: tx.packet_cost + copy(tx),
            });
            stages.push(Stage {
                name: "receiver CPU",
                seconds: rx.packet_cost + copy(rx),
            });
        }
        Interface::Ethernet { line_rate, .. } => {
            let per_packet_wire = (TCP_IP_HEADER + ETHERNET_HEADER + ETHERNET_WIRE_EXTRA) as f64;
            let wire = (m + packets * per_packet_wire) * 8.0 / line_rate;
            stages.push(Stage {
                name: "sender CPU",
                seconds: packets * tx.packet_cost + copy(tx),
            });
            stages.push(Stage {
                name: "Ethernet wire",
                seconds: wire,
            });
            stages.push(Stage {
                name: "receiver CPU",
                seconds: packets * rx.packet_cost + copy(rx),
            });
        }
        Interface::Pcie {
            header,
            line,
            path_rate,
        } => {
            let frame = pcie_frame_bytes(message, header, line) as f64;
            // The driver's copy of the frame: the DMA engine's work, or the CPU's.
            let driver_copy = |h: &Host| {
                if h.dma_engine {
                    0.0
                } else {
                    frame / h.copy_rate
                }
            };
            // Sender: user -> kernel always by the CPU; kernel -> MMIO by the DMA engine or by
            // write-combined stores.
            stages.push(Stage {
                name: "sender CPU",
                seconds: tx.packet_cost + copy(tx) + driver_copy(tx),
            });
            stages.push(Stage {
                name: "PCIe path",
                seconds: frame / path_rate,
            });
            // Receiver: receive buffer -> kernel by the DMA engine or the CPU; kernel -> user
            // by the CPU.
            stages.push(Stage {
                name: "receiver CPU",
                seconds: rx.packet_cost + driver_copy(rx) + copy(rx),
            });
        }
    }
    let slowest = stages
        .iter()
        .max_by(|a, b| a.seconds.total_cmp(&b.seconds))
        .expect("every interface has stages");
    Stream {
        gbps: m * 8.0 / slowest.seconds / 1e9,
        limit: slowest.name,
        stages: stages.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const XEON: Host = Host {
        packet_cost: 1e-6,
        copy_rate: 1e9,
        cores: 4,
        dma_engine: true,
    };

    #[test]
    fn a_stream_runs_at_its_slowest_stage() {
        let s = tcp_stream(&XEON, &XEON, Interface::Wire, 1000);
        // 1 us + 1000 B at 1 GB/s = 2 us per 1000 B message = 4 Gb/s.
        assert!((s.gbps - 4.0).abs() < 1e-9);
        let slow_path = Interface::Pcie {
            header: 36,
            line: 64,
            path_rate: 0.1e9,
        };
        let s = tcp_stream(&XEON, &XEON, slow_path, 1000);
        assert_eq!(s.limit, "PCIe path");
        // 1090 B -> 18 lines of 64 B = 1152 B at 0.1 GB/s.
        assert!((s.gbps - 1000.0 * 8.0 / 11.52e-6 / 1e9).abs() < 1e-9);
    }

    #[test]
    fn one_core_runs_both_ends_of_a_loopback_in_turn() {
        let one = Host { cores: 1, ..XEON };
        let two = tcp_stream(&XEON, &XEON, Interface::Loopback, 4096).gbps;
        let single = tcp_stream(&one, &one, Interface::Loopback, 4096).gbps;
        assert!((two / single - 2.0).abs() < 1e-9);
    }

    #[test]
    fn without_a_dma_engine_the_cpu_does_the_driver_copies() {
        let amd = Host {
            dma_engine: false,
            ..XEON
        };
        let path = Interface::Pcie {
            header: 36,
            line: 64,
            path_rate: 1e12,
        };
        let with = tcp_stream(&XEON, &XEON, path, 8192);
        let without = tcp_stream(&XEON, &amd, path, 8192);
        assert!(without.gbps < with.gbps);
        assert_eq!(without.limit, "receiver CPU");
    }

    #[test]
    fn frames_are_whole_cache_lines() {
        assert_eq!(pcie_frame_bytes(16384, 36, 64), 16512); // 16474 B -> 258 lines
        assert_eq!(pcie_frame_bytes(512, 36, 64), 640); // 602 B -> 10 lines
    }
}
