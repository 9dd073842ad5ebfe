//! The host CPU's side of its register accesses to NICs: its own cookie and what it hears
//! of those TLPs (a register write left the root complex or took effect at its NIC, a
//! register read completed). The cores themselves run in `nic`.

use crate::sim::{Simulator, Tlp};

/// What a TLP of the host CPU is to it (below the root complex's own bit, see
/// [`cpu_owner`](super::root::cpu_owner)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sim) enum CpuTlp {
    /// A register write whose effect is entry `r` of `Nics::regs`.
    RegWrite(u32),
    /// A register read by this core, and its completion.
    RegRead(u32),
}

impl CpuTlp {
    /// Its cookie: bit 30 set for a read, the entry or core below.
    pub(in crate::sim) fn cookie(self) -> u32 {
        match self {
            CpuTlp::RegWrite(r) => r,
            CpuTlp::RegRead(core) => 1 << 30 | core,
        }
    }

    /// The TLP a cookie made by [`Self::cookie`] stands for.
    pub(in crate::sim) fn of(cookie: u32) -> Self {
        let i = cookie & ((1 << 30) - 1);
        if cookie & 1 << 30 != 0 {
            CpuTlp::RegRead(i)
        } else {
            CpuTlp::RegWrite(i)
        }
    }
}

impl Simulator<'_> {
    /// TLP `id` of the CPU (`cookie` its own) left the root complex: a register write frees
    /// its posted slot.
    pub(in crate::sim) fn cpu_tlp_left(&mut self, _id: u32, cookie: u32) {
        if let CpuTlp::RegWrite(_) = CpuTlp::of(cookie) {
            self.nics.posted_queued -= 1;
            if let Some(core) = self.nics.posted_waiters.pop() {
                let now = self.now();
                let ev = self.cpu_ev(core);
                self.q.schedule(now, ev);
            }
        }
    }

    /// The completion of the CPU's register read (`cookie` its own) reached the root
    /// complex: the core goes on.
    pub(in crate::sim) fn cpu_read_done(&mut self, cookie: u32) {
        if let CpuTlp::RegRead(core) = CpuTlp::of(cookie) {
            self.advance(core);
        }
    }

    /// The CPU's register write `t` (`cookie` its own) took effect at its NIC.
    pub(in crate::sim) fn cpu_tlp_written(&mut self, _t: &Tlp, cookie: u32) {
        if let CpuTlp::RegWrite(r) = CpuTlp::of(cookie) {
            let e = self.nics.regs[r as usize];
            self.nics.free_regs.push(r);
            self.registers_written(e);
        }
    }
}
