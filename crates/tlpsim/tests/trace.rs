//! The wire trace: it changes no result, holds what the counters count, keeps each wire's
//! packets in order without overlap, marks replays, and stops at its limit.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use tlpsim::scenario::load_str;
use tlpsim::sim::trace::{Packet, Trace, Written};
use tlpsim::sim::{result::RunResult, run, run_traced, run_traced_to};

/// A root complex and an endpoint writing to each other on one x4 Gen1 link; `pcie` adds
/// keys to `[pcie]`. No warmup, so the counters and the trace cover the same time.
fn writes_both_ways(pcie: &str) -> String {
    format!(
        "[simulation]\nduration = \"100us\"\nwarmup = \"0ns\"\nseed = 5\n[pcie]\nmps = 128\n{pcie}\n\
         [[root_complex]]\nname = \"rc\"\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\nwidth = 4\n\
         [[workload]]\nname = \"up\"\nkind = \"dma\"\nendpoint = \"ep\"\ndirection = \"write\"\n\
         transfer_size = \"4KiB\"\n\
         [[workload]]\nname = \"down\"\nkind = \"dma\"\nendpoint = \"rc\"\ntarget = \"ep\"\n\
         direction = \"write\"\ntransfer_size = \"4KiB\"\n"
    )
}

fn traced(text: &str, limit: usize) -> (RunResult, Trace) {
    let sys = load_str(text, "<test>").unwrap();
    run_traced(&sys, limit, &mut |_| true).unwrap()
}

fn without_wall(mut r: RunResult) -> RunResult {
    r.wall_s = 0.0;
    r
}

#[test]
fn tracing_changes_no_result() {
    let text = writes_both_ways("ber = 1e-5");
    let plain = run(&load_str(&text, "<test>").unwrap()).unwrap();
    let (with, _) = traced(&text, 1000);
    assert_eq!(without_wall(plain), without_wall(with));
}

#[test]
fn the_trace_holds_what_the_counters_count_in_wire_order() {
    let (r, trace) = traced(&writes_both_ways("ber = 1e-5"), usize::MAX);
    assert_eq!(trace.dropped, 0);
    assert!(
        r.links.iter().any(|l| l.replays > 0),
        "1e-5 should cause replays"
    );
    for (c, link) in r.links.iter().enumerate() {
        let mine: Vec<_> = trace
            .events()
            .iter()
            .filter(|e| e.chan as usize == c)
            .collect();
        let tlps = mine
            .iter()
            .filter(|e| matches!(e.packet, Packet::Tlp { replay: false, .. }))
            .count() as u64;
        let replays = mine
            .iter()
            .filter(|e| {
                matches!(
                    e.packet,
                    Packet::Tlp { replay: true, .. } | Packet::Duplicate { .. }
                )
            })
            .count() as u64;
        let dllps = mine
            .iter()
            .filter(|e| matches!(e.packet, Packet::Dllp(_)))
            .count() as u64;
        assert_eq!(
            (tlps, replays, dllps),
            (link.tlps, link.replays, link.dllps),
            "{link:?}"
        );
        // One wire: each packet starts after the one before it ended.
        for pair in mine.windows(2) {
            assert!(pair[1].start >= pair[0].end, "{pair:?}");
        }
    }
}

#[test]
fn a_trace_stops_at_its_limit_and_counts_the_rest() {
    let (r, trace) = traced(&writes_both_ways(""), 100);
    assert_eq!(trace.events().len(), 100);
    // Every packet is either kept or counted as dropped.
    let sent: u64 = r.links.iter().map(|l| l.tlps + l.replays + l.dllps).sum();
    assert_eq!(trace.dropped + 100, sent);
    // Chrome trace JSON: a named track per link direction, a slice per packet.
    let sys = load_str(&writes_both_ways(""), "<test>").unwrap();
    let json: serde_json::Value = serde_json::from_str(&trace.to_chrome_json(&sys)).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rc-ep down", "rc-ep up"]);
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), 100);
    assert_eq!(json["dropped"].as_u64(), Some(trace.dropped));
    let first = events.iter().find(|e| e["cat"] == "tlp").unwrap();
    assert_eq!(first["name"], "MWr 128 B");
    // 128 B of payload + 16 B header (64-bit addressing) + 8 B framing = 152 B, at 1 B/ns
    // on x4 Gen1 (4 lanes x 2 Gb/s after 8b/10b).
    assert!(
        (first["dur"].as_f64().unwrap() - 0.152).abs() < 1e-9,
        "{first}"
    );
}

/// A writer into shared bytes that fails once it holds `room` bytes (a full disk).
#[derive(Clone)]
struct Disk {
    bytes: Arc<Mutex<Vec<u8>>>,
    room: usize,
}

impl Write for Disk {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut bytes = self.bytes.lock().unwrap();
        let n = buf.len().min(self.room - bytes.len());
        if n == 0 && !buf.is_empty() {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left"));
        }
        bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `text` run with its trace streamed to a disk of `room` bytes: the result, what the
/// trace wrote, and the bytes on the disk.
fn streamed(text: &str, limit: usize, room: usize) -> (RunResult, io::Result<Written>, Vec<u8>) {
    let sys = load_str(text, "<test>").unwrap();
    let disk = Disk {
        bytes: Arc::default(),
        room,
    };
    let (r, written) = run_traced_to(&sys, limit, Box::new(disk.clone()), &mut |_| true).unwrap();
    let bytes = disk.bytes.lock().unwrap().clone();
    (r, written, bytes)
}

#[test]
fn a_streamed_trace_is_the_same_json_as_one_kept_in_memory() {
    // Streaming writes each packet as it goes (memory stays flat, however long the trace);
    // the file is what the trace kept in memory would have written, byte for byte, below
    // and past the limit.
    let text = writes_both_ways("ber = 1e-5");
    let sys = load_str(&text, "<test>").unwrap();
    for limit in [100, 1_000_000] {
        let (r, trace) = traced(&text, limit);
        let (s, written, bytes) = streamed(&text, limit, usize::MAX);
        assert_eq!(without_wall(r), without_wall(s));
        let written = written.unwrap();
        assert_eq!(written.kept, trace.events().len());
        assert_eq!(written.dropped, trace.dropped);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            trace.to_chrome_json(&sys)
        );
    }
}

#[test]
fn a_full_disk_stops_the_trace_not_the_run_and_says_so() {
    let text = writes_both_ways("");
    let plain = run(&load_str(&text, "<test>").unwrap()).unwrap();
    // The trace's buffer reaches the disk in 1 MiB pieces: 100 kB of room fills at once.
    let (r, written, bytes) = streamed(&text, 1_000_000, 100_000);
    assert_eq!(without_wall(plain), without_wall(r));
    let e = written.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
    assert!(bytes.len() <= 100_000);
}

#[test]
fn a_streamed_trace_reaches_its_writer_while_the_run_goes() {
    // Not held until the end: most of the file is on the disk before the run ends.
    let text = writes_both_ways("").replace("duration = \"100us\"", "duration = \"10ms\"");
    let sys = load_str(&text, "<test>").unwrap();
    let disk = Disk {
        bytes: Arc::default(),
        room: usize::MAX,
    };
    let seen = disk.bytes.clone();
    let mut on_disk_before_end = 0;
    let (_, written) = run_traced_to(&sys, 1_000_000, Box::new(disk), &mut |done| {
        if done < 1.0 {
            on_disk_before_end = seen.lock().unwrap().len();
        }
        true
    })
    .unwrap();
    let written = written.unwrap();
    let total = seen.lock().unwrap().len();
    assert!(written.kept > 10_000, "{written:?}");
    assert!(
        on_disk_before_end > 1 << 20,
        "{on_disk_before_end} of {total} bytes"
    );
}
