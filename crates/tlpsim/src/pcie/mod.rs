//! The PCI Express protocol, one module per specification layer.
//!
//! - [`phy`]: signalling rate, encoding, lane width, SKP ordered sets.
//! - [`dll`]: TLP framing, DLLPs, the Ack and UpdateFC latency timers; the transmitting
//!   end (sequence numbers, replay buffer, replay timer) and the receiving end (Ack, Nak).
//! - [`flow_control`]: credit types, the transmitter's credit gate, the receiver's credits.
//! - [`tlp`]: TLP kinds, header sizes, MPS/MRRS/RCB splitting.
//! - [`completion_timeout`]: how long a requester waits for its completions (the spec's
//!   Completion Timeout ranges).
//! - [`flit`]: the flit layout of flit mode (Gen6 and above).
//! - [`ltssm`]: link retraining (the time in Recovery).
//! - [`wire`]: serialization timing of one link direction (the simulator's clock).

pub mod completion_timeout;
pub mod dll;
pub mod flit;
pub mod flow_control;
pub mod ltssm;
pub mod phy;
pub mod tlp;
pub mod wire;
