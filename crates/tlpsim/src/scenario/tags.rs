//! A requester's read tags: the width of its Tag field (`tag_bits`), how many tags it uses
//! (`tags`), and the width a PCIe engineer expects for the link's generation when neither
//! is given.

use super::error::{BuildError, Place};
use super::links::Topology;
use super::nodes::NodeTable;
use crate::fabric::NodeId;

/// The Tag field widths and the outstanding non-posted requests each allows (PCI Express
/// Base Specification, section 2.2.6.2: 5-bit tags give 32; Extended Tag Field Enable gives
/// 256; 10-bit tags give 768, the 256 values whose upper two bits are 00 being unused).
pub const TAG_FIELDS: [(i64, u32); 3] = [(5, 32), (8, 256), (10, 768)];

/// The Tag field a requester has unless told: 5 bits at 2.5 and 5 GT/s, 8 bits (Extended
/// Tag, enabled by default on nearly every Gen3 and Gen4 device) at 8 and 16 GT/s, and 10
/// bits from 32 GT/s, where GPUs and NVMe drives need more than 256 reads in flight
/// (10-Bit Tag Completer support is required of every function at 16 GT/s and above).
pub fn default_tag_bits(gen: u32) -> i64 {
    match gen {
        0..=2 => 5,
        3 | 4 => 8,
        _ => 10,
    }
}

/// The tags a requester's section asks for, before the link's generation is known.
#[derive(Debug, Clone)]
pub struct TagRequest {
    /// The requester.
    pub node: NodeId,
    /// `tag_bits` as written.
    pub bits: Option<i64>,
    /// `tags` as written.
    pub tags: Option<i64>,
    /// Its section.
    pub place: Place,
}

impl TagRequest {
    /// The tags, if the section settles them without the link: `tags` (checked against
    /// `tag_bits`, or against the widest field) or the whole of `tag_bits`' field.
    pub fn settled(&self) -> Result<Option<u32>, BuildError> {
        let field = match self.bits {
            None => None,
            Some(b) => Some(limit(b).ok_or_else(|| {
                BuildError::not_allowed(&self.place, "tag_bits", b, "5, 8 or 10")
            })?),
        };
        match (self.tags, field) {
            (None, field) => Ok(field),
            (Some(t), Some(max)) if !(1..=max as i64).contains(&t) => Err(BuildError::not_allowed(
                &self.place,
                "tags",
                t,
                format!(
                    "1 to {max} with tag_bits = {} (a wider tag field allows more: 5, 8 \
                         or 10 bits give 32, 256 or 768)",
                    self.bits.unwrap_or_default()
                ),
            )),
            (Some(t), None) if !(1..=768).contains(&t) => Err(BuildError::not_allowed(
                &self.place,
                "tags",
                t,
                "1 to 768 (10-bit tags; 8-bit tags allow 256, 5-bit tags 32)",
            )),
            (Some(t), _) => Ok(Some(t as u32)),
        }
    }
}

/// The outstanding requests a `bits`-wide Tag field allows, if it is one.
fn limit(bits: i64) -> Option<u32> {
    TAG_FIELDS.iter().find(|f| f.0 == bits).map(|f| f.1)
}

/// Gives every requester whose section left its tags open the whole Tag field its upstream
/// link's generation implies.
pub fn default_tags(open: &[TagRequest], nodes: &mut NodeTable, topology: &Topology) {
    for r in open {
        let Some(link) = topology.upstream_link(r.node) else {
            continue; // check_tree has refused a requester with no link
        };
        let bits = default_tag_bits(link.gen.number());
        let tags = limit(bits).expect("a default width is a Tag field width");
        if let Some(t) = nodes.nodes_mut()[r.node].kind.read_tags_mut() {
            *t = tags;
        }
    }
}
