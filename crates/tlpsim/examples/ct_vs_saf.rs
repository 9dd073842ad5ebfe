//! T5220 DMA read latency per slot with the switches cut-through (as built) and
//! store-and-forward: the slots behind the validation's cut-through reduction rows.
use tlpsim::validation::simulated::cell_cut_through_latencies;

fn main() {
    let cell = "t5220.dma_read_latency.cut_through_vs_store_and_forward_latency_reduction[0]";
    for (slot, ct, saf) in cell_cut_through_latencies(cell).expect("cell exists") {
        println!(
            "{slot}: cut-through {ct:.1} ns, store-and-forward {saf:.1} ns, reduction {:.1} %",
            100.0 * (saf - ct) / saf
        );
    }
}
