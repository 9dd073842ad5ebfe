//! Closed-form link model against the seed reports' arithmetic and the spec.

use proptest::prelude::*;
use tlpsim::analytic::{CompletionSize, DllpPolicy, LinkRequest};

fn seed_link(gen: i64, width: i64, payload: i64) -> LinkRequest {
    LinkRequest {
        gen,
        width,
        payload: Some(payload),
        addressing: 32,
        dllp: DllpPolicy::None,
        skp: false,
        ..LinkRequest::default()
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn pes24t6_figure2_x8_64_byte_payload() {
    let bw = seed_link(1, 8, 64).check().unwrap().bandwidth();
    assert_eq!(bw.tlp_wire_bytes, 84);
    assert!(
        close(2.0 * bw.write_gbps, 24.38, 0.01),
        "{}",
        2.0 * bw.write_gbps
    );
    assert!(close(bw.efficiency, 64.0 / 84.0, 1e-12));
}

#[test]
fn pes24t6_figure4_four_dllp_bytes_per_tlp() {
    let req = LinkRequest {
        dllp: DllpPolicy::PerTlp(4.0),
        ..seed_link(1, 8, 64)
    };
    let bw = req.check().unwrap().bandwidth();
    // 32 Gb/s of both directions after 8b/10b, 64 payload bytes per 88 wire bytes.
    assert!(close(2.0 * bw.write_gbps, 32.0 * 64.0 / 88.0, 1e-9));
}

#[test]
fn ntb_gen1_x4_64_byte_tlps() {
    let bw = seed_link(1, 4, 64).check().unwrap().bandwidth();
    assert!(close(bw.write_gbps, 6.10, 0.01), "{}", bw.write_gbps);
}

#[test]
fn ntb_figure9_protocol_header_reductions() {
    let link = seed_link(1, 4, 64).check().unwrap();
    let cases = [
        (16384, 0.008, 0.003),
        (8192, 0.016, 0.003),
        (4096, 0.032, 0.003),
        (512, 0.21, 0.015),
    ];
    for (size, published, tol) in cases {
        let m = link.message(size, 90).unwrap();
        assert!(
            close(m.reduction, published, tol),
            "{size}: {}",
            m.reduction
        );
    }
    let m16 = link.message(16384, 90).unwrap();
    assert!(close(m16.message_gbps, 6.05, 0.02), "{}", m16.message_gbps);
}

#[test]
fn pes24n3a_capacity_24_lanes() {
    // Three x8 ports of Gen1, both directions.
    let bw = seed_link(1, 8, 64).check().unwrap().bandwidth();
    assert!(close(3.0 * 2.0 * bw.raw_gbps, 120.0, 1e-9));
    assert!(close(3.0 * 2.0 * bw.encoded_gbps, 96.0, 1e-9));
}

#[test]
fn spec_encoded_rates() {
    let g3 = LinkRequest {
        gen: 3,
        width: 8,
        ..LinkRequest::default()
    };
    assert!(close(
        g3.check().unwrap().bandwidth().encoded_gbps,
        63.02,
        0.005
    ));
    let g5 = LinkRequest {
        gen: 5,
        width: 16,
        ..LinkRequest::default()
    };
    assert!(close(
        g5.check().unwrap().bandwidth().encoded_gbps,
        504.1,
        0.05
    ));
}

#[test]
fn gen6_x16_flit_mode_4k_writes() {
    let req = LinkRequest {
        gen: 6,
        width: 16,
        mps: 256,
        payload: Some(4096),
        skp: false,
        ..LinkRequest::default()
    };
    let bw = req.check().unwrap().bandwidth();
    assert!(bw.flit);
    assert_eq!(bw.write_tlps, 16);
    // 16 TLPs of 16 B header + 256 B data, no per-TLP framing; 236 of 256 flit bytes.
    assert_eq!(bw.tlp_wire_bytes, 16 * 272);
    let expected = 1024.0 * 236.0 / 256.0 * 256.0 / 272.0;
    assert!(
        close(bw.write_gbps, expected, 1e-9),
        "{} vs {expected}",
        bw.write_gbps
    );
}

#[test]
fn spec_dllp_overhead_at_gen1_x8_is_a_few_percent() {
    let spec = LinkRequest {
        gen: 1,
        width: 8,
        mps: 128,
        ..LinkRequest::default()
    };
    let none = LinkRequest {
        dllp: DllpPolicy::None,
        ..spec.clone()
    };
    let a = spec.check().unwrap().bandwidth();
    let b = none.check().unwrap().bandwidth();
    let overhead = 1.0 - a.write_gbps / b.write_gbps;
    assert!(overhead < 0.05, "{overhead}");
    assert!(overhead > 0.01, "{overhead}");
    // Treating the 67-symbol-time table value as 67 bytes would cost 16/67 = 24 %.
    assert!((overhead - 16.0 / 67.0).abs() > 0.15);
}

#[test]
fn t5220_scale_sanity_rcb_completions() {
    // Gen1 x8, MPS 128, 64-byte completions: reads near 1.5 GB/s, writes near 1.65 GB/s.
    let bw = LinkRequest {
        gen: 1,
        width: 8,
        mps: 128,
        payload: Some(4096),
        ..LinkRequest::default()
    }
    .check()
    .unwrap()
    .bandwidth();
    assert!(
        bw.read_gbps / 8.0 > 1.4 && bw.read_gbps / 8.0 < 1.55,
        "{}",
        bw.read_gbps
    );
    assert!(
        bw.write_gbps / 8.0 > 1.6 && bw.write_gbps / 8.0 < 1.75,
        "{}",
        bw.write_gbps
    );
    assert_eq!(bw.read_limit, "completions");
}

#[test]
fn mps_sized_completions_beat_cache_line_completions() {
    let base = LinkRequest {
        gen: 3,
        width: 8,
        mps: 256,
        payload: Some(4096),
        ..LinkRequest::default()
    };
    let rcb = base.check().unwrap().bandwidth();
    let mps = LinkRequest {
        completion: CompletionSize::Mps,
        ..base
    }
    .check()
    .unwrap()
    .bandwidth();
    assert!(mps.read_gbps > rcb.read_gbps);
    assert!(mps.read_gbps > 55.0, "{}", mps.read_gbps);
}

#[test]
fn bad_input_names_the_allowed_values() {
    let cases: [(LinkRequest, &str); 6] = [
        (
            LinkRequest {
                gen: 8,
                ..LinkRequest::default()
            },
            "1, 2, 3, 4, 5, 6, 7",
        ),
        (
            LinkRequest {
                width: 3,
                ..LinkRequest::default()
            },
            "1, 2, 4, 8, 12, 16, 32",
        ),
        (
            LinkRequest {
                mps: 100,
                ..LinkRequest::default()
            },
            "128, 256, 512, 1024, 2048, 4096",
        ),
        (
            LinkRequest {
                rcb: 32,
                ..LinkRequest::default()
            },
            "64, 128",
        ),
        (
            LinkRequest {
                payload: Some(0),
                ..LinkRequest::default()
            },
            "1 to",
        ),
        (
            LinkRequest {
                gen: 6,
                flit: Some(false),
                ..LinkRequest::default()
            },
            "flit mode",
        ),
    ];
    for (req, allowed) in cases {
        let msg = req.check().unwrap_err().to_string();
        assert!(msg.contains(allowed), "{msg}");
    }
}

#[test]
fn negative_values_get_the_same_clear_message() {
    let msg = LinkRequest {
        payload: Some(-5),
        ..LinkRequest::default()
    }
    .check()
    .unwrap_err()
    .to_string();
    assert!(msg.contains("payload -5") && msg.contains("1 to"), "{msg}");
    let msg = LinkRequest {
        width: -8,
        ..LinkRequest::default()
    }
    .check()
    .unwrap_err()
    .to_string();
    assert!(msg.contains("width -8"), "{msg}");
}

#[test]
fn dllp_and_completion_parse() {
    assert_eq!(DllpPolicy::parse("spec").unwrap(), DllpPolicy::Spec);
    assert_eq!(DllpPolicy::parse("None").unwrap(), DllpPolicy::None);
    assert_eq!(DllpPolicy::parse("4").unwrap(), DllpPolicy::PerTlp(4.0));
    for bad in ["-1", "lots", "nan", ""] {
        let msg = DllpPolicy::parse(bad).unwrap_err().to_string();
        assert!(msg.contains("spec, none"), "{msg}");
    }
    assert_eq!(CompletionSize::parse("mps").unwrap(), CompletionSize::Mps);
    assert!(CompletionSize::parse("line")
        .unwrap_err()
        .to_string()
        .contains("rcb"));
}

#[test]
fn one_gib_transfer_is_closed_form_not_a_loop() {
    let bw = LinkRequest {
        gen: 5,
        width: 16,
        payload: Some(1 << 30),
        ..LinkRequest::default()
    }
    .check()
    .unwrap()
    .bandwidth();
    assert_eq!(bw.write_tlps, (1u64 << 30) / 128);
    assert_eq!(bw.tlp_wire_bytes, bw.write_tlps * (128 + 16 + 8));
}

#[test]
fn message_tlp_larger_than_mps_is_rejected() {
    let link = LinkRequest {
        payload: Some(256),
        mps: 128,
        ..LinkRequest::default()
    }
    .check()
    .unwrap();
    assert!(link
        .message(4096, 90)
        .unwrap_err()
        .to_string()
        .contains("mps 128"));
}

fn any_request() -> impl Strategy<Value = LinkRequest> {
    (
        1i64..=7,
        prop::sample::select(vec![1i64, 2, 4, 8, 12, 16, 32]),
        prop::sample::select(vec![128i64, 256, 512, 1024, 2048, 4096]),
        prop::sample::select(vec![128i64, 256, 512, 1024, 2048, 4096]),
        prop::sample::select(vec![64i64, 128]),
        prop::option::of(1i64..=65536),
        prop::sample::select(vec![32i64, 64]),
        any::<bool>(),
        prop_oneof![
            Just(DllpPolicy::Spec),
            Just(DllpPolicy::None),
            (0.0f64..16.0).prop_map(DllpPolicy::PerTlp)
        ],
        any::<bool>(),
        prop::sample::select(vec![CompletionSize::Rcb, CompletionSize::Mps]),
    )
        .prop_map(
            |(gen, width, mps, mrrs, rcb, payload, addressing, ecrc, dllp, skp, completion)| {
                LinkRequest {
                    gen,
                    width,
                    mps,
                    mrrs,
                    rcb,
                    payload,
                    addressing,
                    ecrc,
                    dllp,
                    skp,
                    flit: None,
                    completion,
                }
            },
        )
}

const WIDTHS: [i64; 7] = [1, 2, 4, 8, 12, 16, 32];

proptest! {
    #[test]
    fn never_above_encoded_rate_and_efficiency_in_unit_interval(req in any_request()) {
        let bw = req.check().unwrap().bandwidth();
        prop_assert!(bw.write_gbps > 0.0 && bw.write_gbps <= bw.encoded_gbps);
        prop_assert!(bw.read_gbps > 0.0 && bw.read_gbps <= bw.encoded_gbps);
        prop_assert!(bw.efficiency > 0.0 && bw.efficiency <= 1.0);
        prop_assert!(bw.encoded_gbps <= bw.raw_gbps);
    }

    #[test]
    fn monotone_in_width(req in any_request()) {
        let i = WIDTHS.iter().position(|&w| w == req.width).unwrap();
        prop_assume!(i + 1 < WIDTHS.len());
        let wider = LinkRequest { width: WIDTHS[i + 1], ..req.clone() };
        let a = req.check().unwrap().bandwidth();
        let b = wider.check().unwrap().bandwidth();
        prop_assert!(b.write_gbps > a.write_gbps);
        prop_assert!(b.read_gbps > a.read_gbps);
    }

    #[test]
    fn monotone_in_generation(req in any_request()) {
        prop_assume!(req.gen < 7);
        let faster = LinkRequest { gen: req.gen + 1, ..req.clone() };
        let a = req.check().unwrap().bandwidth();
        let b = faster.check().unwrap().bandwidth();
        prop_assert!(b.write_gbps > a.write_gbps);
        prop_assert!(b.read_gbps > a.read_gbps);
    }
}
