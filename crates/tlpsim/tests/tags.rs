//! Read tags: the Tag field's width (`tag_bits`), its default by the link's generation, and
//! the check of `tags` against it.

use tlpsim::analytic::LinkRequest;
use tlpsim::fabric::NodeKind;
use tlpsim::scenario::load_str;
use tlpsim::sim::run;

/// A root complex and one DMA endpoint `ep` (with `keys`) reading 64 KiB transfers over a
/// Gen`gen` x16 link.
fn one_reader(gen: u32, keys: &str) -> String {
    format!(
        "[simulation]\nduration = \"100us\"\nwarmup = \"10us\"\n[pcie]\nmps = 256\nmrrs = 512\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"700ns\"\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n{keys}\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\ngen = {gen}\nwidth = 16\n\
         [[workload]]\nname = \"reads\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
         direction = \"read\"\ntransfer_size = \"64KiB\"\noutstanding = 16\n"
    )
}

/// The endpoint's tags as the loader settled them.
fn tags(gen: u32, keys: &str) -> Result<u32, String> {
    let sys = load_str(&one_reader(gen, keys), "t.toml").map_err(|e| e.to_string())?;
    let ep = sys.node("ep").unwrap();
    let NodeKind::Dma { tags, .. } = sys.nodes[ep].kind else {
        unreachable!("ep is a DMA endpoint")
    };
    Ok(tags)
}

#[test]
fn the_tag_field_defaults_by_the_links_generation() {
    // 5-bit tags at Gen1-2, 8-bit (Extended Tag) at Gen3-4, 10-bit from Gen5.
    let expected = [(1, 32), (2, 32), (3, 256), (4, 256), (5, 768), (6, 768)];
    for (gen, n) in expected {
        assert_eq!(tags(gen, ""), Ok(n), "Gen{gen}");
    }
}

#[test]
fn tag_bits_and_tags_set_what_they_say() {
    assert_eq!(tags(5, "tag_bits = 8"), Ok(256));
    assert_eq!(tags(1, "tag_bits = 10"), Ok(768));
    assert_eq!(tags(5, "tags = 100"), Ok(100));
    assert_eq!(tags(1, "tags = 200"), Ok(200)); // implies 8-bit tags, whatever the link
    assert_eq!(tags(3, "tag_bits = 5\ntags = 16"), Ok(16));
}

#[test]
fn tags_beyond_the_tag_field_are_refused_with_the_way_out() {
    let e = tags(3, "tag_bits = 8\ntags = 300").unwrap_err();
    assert!(
        e.contains("tags") && e.contains("1 to 256") && e.contains("10"),
        "{e}"
    );
    let e = tags(6, "tags = 1000").unwrap_err();
    assert!(e.contains("1 to 768"), "{e}");
    let e = tags(3, "tag_bits = 6").unwrap_err();
    assert!(e.contains("tag_bits") && e.contains("5, 8 or 10"), "{e}");
    let e = tags(3, "tags = 0").unwrap_err();
    assert!(e.contains("tags"), "{e}");
}

#[test]
fn a_gen5_x16_reader_with_default_tags_is_not_held_to_32_reads_in_flight() {
    // 32 tags of 512 B over a ~1 us round trip hold a read near 16 GB/s; 10-bit tags let it
    // fill the link up to the closed form's read ceiling (RCB-sized completions).
    let ceiling = tlpsim::link_bandwidth(&LinkRequest {
        gen: 5,
        width: 16,
        mps: 256,
        mrrs: 512,
        payload: Some(65536),
        ..LinkRequest::default()
    })
    .unwrap()
    .read_gbps;
    let sys = load_str(&one_reader(5, ""), "t.toml").unwrap();
    let wide = run(&sys).unwrap().flows[0].throughput_gbps;
    let sys = load_str(&one_reader(5, "tag_bits = 5"), "t.toml").unwrap();
    let narrow = run(&sys).unwrap().flows[0].throughput_gbps;
    assert!(
        wide > 0.98 * ceiling,
        "{wide} Gb/s with default tags, ceiling {ceiling}"
    );
    assert!(
        narrow < 0.5 * wide,
        "{narrow} Gb/s with 5-bit tags vs {wide}"
    );
}
