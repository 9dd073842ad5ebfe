//! The deadlock watchdog on credit states no scenario file can reach (a credit supply of
//! zero, a lost InitFC): a real deadlock is reported at a time that does not depend on the
//! run's length; credits the receiver granted but the transmitter never heard of come with
//! the UpdateFC refresh, errors or not.

use super::*;
use crate::pcie::flow_control::{CreditType, FcReceiver, FcTransmitter, PerCreditType};

/// DMA reads by an endpoint over one Gen1 x8 link, for `duration`.
fn reads(duration: &str) -> System {
    let text = format!(
        "[simulation]\nduration = \"{duration}\"\nwarmup = \"1us\"\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"100ns\"\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\ngen = 1\nwidth = 8\n\
         [[workload]]\nname = \"reads\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
         direction = \"read\"\ntransfer_size = \"4KiB\"\n"
    );
    crate::scenario::load_str(&text, "<test>").unwrap()
}

/// Completion credits: `cplh` headers and 64 data units, the rest infinite.
fn completions(cplh: u32) -> PerCreditType<Option<u32>> {
    let mut adv = PerCreditType([None; 6]);
    adv[CreditType::CplH] = Some(cplh);
    adv[CreditType::CplD] = Some(64);
    adv
}

/// Runs `sys` with the down channel's (completions toward the endpoint) transmitter knowing
/// `known` CplH credits while its receiver granted `granted`, on the general engine (the
/// lean kernel's restart would build the credits afresh from the scenario).
fn run_with_cplh(sys: &System, known: u32, granted: u32) -> Result<RunResult, RunError> {
    let mut sim = Simulator::new(sys);
    sim.kernel = Kernel::General;
    sim.chans[0].tx_credits = FcTransmitter::new(completions(known));
    sim.chans[0].rx_credits = FcReceiver::new(completions(granted));
    sim.run()
}

#[test]
fn a_credit_supply_that_can_never_come_is_a_deadlock_found_at_the_same_time() {
    let short = run_with_cplh(&reads("1ms"), 0, 0).unwrap_err().to_string();
    let long = run_with_cplh(&reads("20ms"), 0, 0).unwrap_err().to_string();
    assert!(short.starts_with("credit deadlock at "), "{short}");
    assert!(short.contains("waiting for CplH credits (0 available, 0 advertised by ep)"));
    assert_eq!(
        short, long,
        "the verdict does not depend on the run's length"
    );
}

#[test]
fn credits_granted_but_never_heard_of_come_with_the_update_fc_refresh() {
    // The InitFC told the transmitter nothing (as if lost); no bit errors on the link.
    let r = run_with_cplh(&reads("200us"), 0, 4).unwrap();
    assert!(r.audit.passed, "{:?}", r.audit);
    assert!(r.flows[0].bytes > 0);
}
