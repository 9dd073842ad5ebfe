//! T5220 DMA read latency with the switches cut-through (as built) and store-and-forward.
use tlpsim::validation::simulated::cell_scenario;

fn latency(text: &str) -> f64 {
    let sys = tlpsim::scenario::load_str(text, "<t5220>").expect("valid");
    tlpsim::sim::run(&sys).expect("runs").flows[0]
        .latency_ns
        .mean
}

fn main() {
    for r in [
        "t5220.dma_read_latency.t5220_pcie2[3]",
        "t5220.dma_read_latency.t5220_pcie5[3]",
        "t5220.dma_read_latency.t5220_x4_slots[3]",
    ] {
        let text = cell_scenario(r).expect("cell exists");
        let ct = latency(&text);
        let saf = latency(&text.replace("cut-through", "store-and-forward"));
        println!(
            "{r}: cut-through {ct:.1} ns, store-and-forward {saf:.1} ns, reduction {:.1} %",
            100.0 * (saf - ct) / saf
        );
    }
}
