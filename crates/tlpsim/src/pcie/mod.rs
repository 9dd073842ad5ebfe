//! The PCI Express protocol, one module per specification layer.
//!
//! - [`phy`]: signalling rate, encoding, lane width, SKP ordered sets.
//! - [`dll`]: TLP framing, DLLPs, the Ack and UpdateFC latency timers.
//! - [`tlp`]: TLP kinds, header sizes, MPS/MRRS/RCB splitting.
//! - [`flit`]: the flit layout of flit mode (Gen6 and above).
//! - [`wire`]: serialization timing of one link direction (the simulator's clock).

pub mod dll;
pub mod flit;
pub mod phy;
pub mod tlp;
pub mod wire;
