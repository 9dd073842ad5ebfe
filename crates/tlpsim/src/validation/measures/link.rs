//! Closed-form measures: figures of one link from the analytic model, for the link the
//! document states (`link`), optionally carrying netperf messages (`message`).

use super::super::cell::Cell;
use super::Measure;
use crate::error::Result;

/// The link figure `measure` names for the cell's link.
pub(super) fn figure(measure: Measure, cell: &Cell) -> Result<f64> {
    let link = cell.needs(&cell.link, "link")?.to_request()?.check()?;
    let bw = link.bandwidth();
    let scale = cell.scale;
    let message = || -> Result<_> {
        let m = cell.needs(&cell.message, "`message`")?;
        link.message(m.size, m.header)
    };
    Ok(match measure {
        Measure::RawGbps => bw.raw_gbps * scale,
        Measure::EncodedGbps => bw.encoded_gbps * scale,
        Measure::WriteGbps => bw.write_gbps * scale,
        Measure::ReadGbps => bw.read_gbps * scale,
        Measure::Efficiency => bw.efficiency,
        Measure::FramingBytes => (bw.tlp_wire_bytes - bw.payload_bytes) as f64,
        Measure::TlpsPerSMillions => {
            bw.write_gbps * 1e9 / 8.0 / bw.payload_bytes as f64 * bw.write_tlps as f64 / 1e6 * scale
        }
        Measure::OverheadGbps => (bw.encoded_gbps - bw.write_gbps) * scale,
        Measure::EncodingLoss => 1.0 - bw.encoded_gbps / bw.raw_gbps,
        Measure::FramingLoss => 1.0 - bw.efficiency,
        Measure::MessageGbps => message()?.message_gbps * scale,
        Measure::MessageReduction => message()?.reduction,
        other => {
            return Err(cell.error(format!("{other:?} is not a closed-form link figure")));
        }
    })
}
