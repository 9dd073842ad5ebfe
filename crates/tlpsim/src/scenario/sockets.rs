//! `[[socket_link]]`: the inter-socket link (Intel UPI, AMD Infinity Fabric / xGMI) joining
//! two root complexes, each the top of its own tree. A DMA into the other socket's memory
//! and a peer-to-peer TLP between endpoints under the two root complexes cross it.
//!
//! Defaults, for one current part: Intel Xeon Platinum 8480+ (Sapphire Rapids), whose Intel
//! ARK entry lists 4 UPI links at 16 GT/s. A UPI link carries 2 bytes of data per transfer in
//! each direction (Intel's Skylake-SP figures: 10.4 GT/s is 20.8 GB/s per direction), so 16
//! GT/s is 32 GB/s per link and 128 GB/s per direction over the four. The latency is the one
//! the host memory model adds for remote memory (`remote_latency`, 53 ns: pcie-bench's Xeon
//! hosts, remote vs local socket, 64 B reads), within the 40 to 50 ns plus link time that
//! published two-socket Xeon measurements give for a remote DRAM access.

use schemars::JsonSchema;
use serde::Deserialize;

use super::error::{BuildError, Place};
use super::links::Topology;
use super::nodes::NodeTable;
use super::values;
use crate::fabric::{NodeKind, SocketLinkSpec};
use crate::host_memory_spec::RemoteSocketSpec;
use crate::units;

/// Payload bytes per second each way of the default socket link (4 UPI links at 16 GT/s);
/// `default_bandwidth` writes it out.
pub const DEFAULT_SOCKET_BANDWIDTH: f64 = 128e9;

/// `[[socket_link]]`: an inter-socket link between two root complexes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SocketLinkSection {
    /// The two root complexes it joins, e.g. ["rc0", "rc1"]; each is the top of its tree.
    pub between: Vec<String>,
    /// Payload bytes per second in each direction, e.g. "128GB/s" (default "128GB/s": an
    /// Intel Xeon Platinum 8480+'s 4 UPI links at 16 GT/s, 32 GB/s each per direction).
    #[schemars(default = "default_bandwidth")]
    #[schemars(pattern(units::RATE_PATTERN))]
    pub bandwidth: Option<String>,
    /// One-way latency added to every TLP that crosses it, e.g. "53ns" (default "53ns", the
    /// host memory model's `remote_latency`).
    #[schemars(default = "default_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub latency: Option<String>,
}

/// The schema's default of `bandwidth`.
fn default_bandwidth() -> String {
    "128GB/s".into()
}

/// The schema's default of `latency`.
fn default_latency() -> String {
    "53ns".into()
}

/// Builds the `[[socket_link]]` sections: two distinct root complexes at the tops of their
/// trees, at most one link between a pair.
pub fn socket_links(
    sections: &[SocketLinkSection],
    nodes: &NodeTable,
    topology: &Topology,
) -> Result<Vec<SocketLinkSpec>, BuildError> {
    let mut out: Vec<SocketLinkSpec> = Vec::new();
    for (i, s) in sections.iter().enumerate() {
        let place = Place::element(
            "socket_link",
            i,
            &format!("between {}", s.between.join(", ")),
        );
        let [a, b] = s.between.as_slice() else {
            return Err(BuildError::conflict(
                &place,
                format!(
                    "between names {} node(s); a socket link joins two root complexes, e.g. \
                     between = [\"rc0\", \"rc1\"]",
                    s.between.len()
                ),
            ));
        };
        let (a, b) = (
            nodes.lookup(&place, "between", a)?,
            nodes.lookup(&place, "between", b)?,
        );
        for n in [a, b] {
            check_end(&place, nodes, topology, n)?;
        }
        if a == b {
            return Err(BuildError::conflict(
                &place,
                "between names one root complex twice; a socket link joins two",
            ));
        }
        if out
            .iter()
            .any(|l| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a))
        {
            return Err(BuildError::conflict(
                &place,
                "a socket link between these two root complexes is already there; give one \
                 [[socket_link]] per pair, with the bandwidth of all its UPI or xGMI links",
            ));
        }
        let bandwidth = values::optional_rate(&place, "bandwidth", &s.bandwidth)?
            .unwrap_or(DEFAULT_SOCKET_BANDWIDTH);
        if !(bandwidth.is_finite() && bandwidth > 0.0) {
            return Err(BuildError::not_allowed(
                &place,
                "bandwidth",
                s.bandwidth.clone().unwrap_or_default(),
                "a rate above 0, e.g. \"128GB/s\"",
            ));
        }
        let latency = values::optional_duration(&place, "latency", &s.latency)?
            .unwrap_or(RemoteSocketSpec::default().remote_latency);
        let names = nodes.nodes();
        out.push(SocketLinkSpec {
            name: format!("{}-{}", names[a].name, names[b].name),
            a,
            b,
            bandwidth,
            latency,
        });
    }
    Ok(out)
}

/// Checks that node `n`, one end of a socket link, is a root complex at the top of its own
/// tree without the host memory model's own remote socket.
fn check_end(
    place: &Place,
    nodes: &NodeTable,
    topology: &Topology,
    n: usize,
) -> Result<(), BuildError> {
    let node = &nodes.nodes()[n];
    if !matches!(node.kind, NodeKind::RootComplex { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} is {}; a socket link joins two root complexes",
                node.name,
                node.kind.noun()
            ),
        ));
    }
    if topology.up(n).is_some() {
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} sits below a non-transparent bridge; a socket link joins root \
                     complexes at the tops of their own trees",
                node.name
            ),
        ));
    }
    if let NodeKind::RootComplex {
        host_memory: Some(h),
        ..
    } = &node.kind
    {
        if h.remote.is_some() {
            return Err(BuildError::conflict(
                place,
                format!(
                    "{:?} has memory_socket = \"remote\", the model of memory on a \
                         socket the file does not describe; with a socket link, put the \
                         buffer on the other socket with memory = \"<root complex>\" on \
                         the workload instead",
                    node.name
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units;

    #[test]
    fn schema_defaults_are_the_ones_used() {
        let bw = units::parse_bandwidth("bandwidth", &default_bandwidth()).unwrap();
        assert_eq!(bw, DEFAULT_SOCKET_BANDWIDTH);
        let lat = units::parse_duration("latency", &default_latency()).unwrap();
        assert_eq!(lat, RemoteSocketSpec::default().remote_latency);
    }
}
