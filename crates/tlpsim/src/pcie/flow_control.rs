//! Flow control (PCI Express Base Specification, "Flow Control", §2.6): the credit types,
//! the transmitter's credit gate and the receiver's credit accounting.
//!
//! Credits count headers (one per TLP) and data (16-byte units) separately for each of the
//! three classes of the ordering rules, six types in all. A receiver advertises a buffer
//! size per type (InitFC), or infinite; the transmitter may send a TLP only while the
//! credits it has consumed stay within the limit the receiver granted, and the receiver
//! grants more with UpdateFC DLLPs as it frees buffer space. The spec keeps these counters
//! modulo 2^8 (headers) and 2^12 (data); here they are cumulative `u64` counts that never
//! wrap, so `consumed + need <= limit` is the whole gating rule.

use std::ops::{Index, IndexMut};

use super::dll::Dllp;

/// Traffic class of the ordering and credit rules: posted, non-posted, completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FcClass {
    /// Posted requests (MWr): header PH, data PD.
    Posted = 0,
    /// Non-posted requests (MRd): NPH, NPD.
    NonPosted = 1,
    /// Completions (CplD): CplH, CplD.
    Completion = 2,
}

/// The classes in queue order.
pub const CLASSES: [FcClass; 3] = [FcClass::Posted, FcClass::NonPosted, FcClass::Completion];

impl FcClass {
    /// The class's header credit type (PH, NPH, CplH).
    #[inline(always)]
    pub fn header(self) -> CreditType {
        CREDIT_TYPES[self.header_index()]
    }

    /// The class's data credit type (PD, NPD, CplD).
    #[inline(always)]
    pub fn data(self) -> CreditType {
        CREDIT_TYPES[self.header_index() + 1]
    }

    /// Where its header type sits in a [`PerCreditType`] (its data type is next): the
    /// counters' hot paths index by position, which compiles to plain arithmetic.
    #[inline(always)]
    fn header_index(self) -> usize {
        self as usize * 2
    }

    /// The class's bit in a set of classes (bit k: class k), as UpdateFC bookkeeping uses.
    #[inline(always)]
    pub fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The spec's short name: P, NP, Cpl (as in "UpdateFC-P").
    pub fn name(self) -> &'static str {
        match self {
            FcClass::Posted => "P",
            FcClass::NonPosted => "NP",
            FcClass::Completion => "Cpl",
        }
    }
}

/// Flow-control credit types, in the order of [`PerCreditType`]'s array (and of
/// `fabric::Credits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreditType {
    /// Posted request headers.
    Ph = 0,
    /// Posted request data (16-byte units).
    Pd = 1,
    /// Non-posted request headers.
    Nph = 2,
    /// Non-posted request data.
    Npd = 3,
    /// Completion headers.
    CplH = 4,
    /// Completion data.
    CplD = 5,
}

/// The six credit types, indexable by `CreditType as usize`.
pub const CREDIT_TYPES: [CreditType; 6] = [
    CreditType::Ph,
    CreditType::Pd,
    CreditType::Nph,
    CreditType::Npd,
    CreditType::CplH,
    CreditType::CplD,
];

impl CreditType {
    /// The spec's name: PH, PD, NPH, NPD, CplH, CplD.
    pub fn name(self) -> &'static str {
        ["PH", "PD", "NPH", "NPD", "CplH", "CplD"][self as usize]
    }

    /// The class it belongs to.
    pub fn class(self) -> FcClass {
        CLASSES[self as usize / 2]
    }
}

/// One value per credit type, indexed by [`CreditType`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerCreditType<T>(pub [T; 6]);

impl<T> PerCreditType<T> {
    /// Applies `f` to each value.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> PerCreditType<U> {
        PerCreditType(self.0.map(f))
    }
}

impl<T> Index<CreditType> for PerCreditType<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, ty: CreditType) -> &T {
        &self.0[ty as usize]
    }
}

impl<T> IndexMut<CreditType> for PerCreditType<T> {
    #[inline(always)]
    fn index_mut(&mut self, ty: CreditType) -> &mut T {
        &mut self.0[ty as usize]
    }
}

/// The transmitter's side of flow control: the spec's CREDIT_LIMIT (from InitFC and
/// UpdateFC) and CREDITS_CONSUMED per type, cumulative.
#[derive(Debug, Clone)]
pub struct FcTransmitter {
    /// Credit limit per type; `u64::MAX` for a type the receiver advertised as infinite
    /// (no count reaches it, so the gate never closes).
    limit: PerCreditType<u64>,
    /// Credits consumed per type.
    consumed: PerCreditType<u64>,
}

impl FcTransmitter {
    /// A transmitter whose receiver advertised `advertised` (`None`: infinite).
    pub fn new(advertised: PerCreditType<Option<u32>>) -> Self {
        FcTransmitter {
            limit: advertised.map(|c| c.map_or(u64::MAX, u64::from)),
            consumed: PerCreditType::default(),
        }
    }

    /// Ok if a TLP of `class` carrying `data` data credits may be sent now, else the credit
    /// type it lacks (the header type first).
    #[inline(always)]
    pub fn check(&self, class: FcClass, data: u32) -> Result<(), CreditType> {
        let (limit, consumed) = (&self.limit.0, &self.consumed.0);
        let h = class.header_index();
        // `consumed + need <= limit` (no subtraction to underflow; an infinite type's limit
        // is u64::MAX, which no count reaches).
        if consumed[h] >= limit[h] {
            Err(class.header())
        } else if data > 0 && consumed[h + 1] + data as u64 > limit[h + 1] {
            Err(class.data())
        } else {
            Ok(())
        }
    }

    /// Consumes the credits of a TLP of `class` carrying `data` data credits, sent for the
    /// first time; false if a finite count went beyond its limit (a flow-control violation).
    #[inline(always)]
    pub fn consume(&mut self, class: FcClass, data: u32) -> bool {
        let (limit, consumed) = (&self.limit.0, &mut self.consumed.0);
        let h = class.header_index();
        consumed[h] += 1;
        consumed[h + 1] += data as u64;
        consumed[h] <= limit[h] && consumed[h + 1] <= limit[h + 1]
    }

    /// Takes an UpdateFC for `class`: the receiver's cumulative allocation of `headers` and
    /// `data` credits. A limit only grows (an old UpdateFC overtaken by a newer one changes
    /// nothing).
    #[inline]
    pub fn update(&mut self, class: FcClass, headers: u64, data: u64) {
        let (limit, h) = (&mut self.limit.0, class.header_index());
        limit[h] = limit[h].max(headers);
        limit[h + 1] = limit[h + 1].max(data);
    }

    /// The credit limit of `ty` (`u64::MAX`: infinite).
    pub fn limit(&self, ty: CreditType) -> u64 {
        self.limit[ty]
    }

    /// Credits of `ty` consumed so far.
    pub fn consumed(&self, ty: CreditType) -> u64 {
        self.consumed[ty]
    }

    /// Credits of `ty` the transmitter may still consume (huge for an infinite type).
    pub fn available(&self, ty: CreditType) -> u64 {
        self.limit[ty].saturating_sub(self.consumed[ty])
    }
}

/// The receiver's side of flow control: the spec's CREDITS_ALLOCATED per type (advertised
/// plus freed), the receive buffer's use, and which classes owe an UpdateFC.
#[derive(Debug, Clone)]
pub struct FcReceiver {
    /// Credits allocated per type, cumulative: what UpdateFC reports.
    allocated: PerCreditType<u64>,
    /// Credits in use in the receive buffer per type.
    used: PerCreditType<u64>,
    /// Advertised size of the receive buffer per type (`None`: infinite).
    advertised: PerCreditType<Option<u32>>,
    /// Classes with freed credits not yet reported (bit k: class k).
    dirty: u8,
}

impl FcReceiver {
    /// A receiver advertising `advertised` (`None`: infinite).
    pub fn new(advertised: PerCreditType<Option<u32>>) -> Self {
        FcReceiver {
            allocated: advertised.map(|c| c.map_or(0, u64::from)),
            used: PerCreditType::default(),
            advertised,
            dirty: 0,
        }
    }

    /// Takes a TLP of `class` into the receive buffer: `h` header and `d` data credits.
    /// False if that overflows what it advertised (a flow-control violation).
    #[inline]
    pub fn take(&mut self, class: FcClass, h: u32, d: u32) -> bool {
        let (used, advertised) = (&mut self.used.0, &self.advertised.0);
        let ht = class.header_index();
        let mut ok = true;
        for (ty, n) in [(ht, h as u64), (ht + 1, d as u64)] {
            used[ty] += n;
            if let Some(adv) = advertised[ty] {
                ok &= used[ty] <= adv as u64;
            }
        }
        ok
    }

    /// [`Self::take`] then [`Self::free`] of the same credits at once (a TLP its receiver
    /// consumes as it arrives): whether the take kept within the advertised buffer, and
    /// whether the free owes an UpdateFC.
    #[inline(always)]
    pub fn pass(&mut self, class: FcClass, h: u32, d: u32) -> (bool, bool) {
        let (used, allocated) = (&self.used.0, &mut self.allocated.0);
        let ht = class.header_index();
        let (mut ok, mut finite) = (true, false);
        for (ty, n) in [(ht, h as u64), (ht + 1, d as u64)] {
            if let Some(adv) = self.advertised.0[ty] {
                ok &= used[ty] + n <= adv as u64;
                allocated[ty] += n;
                finite = true;
            }
        }
        if finite {
            self.dirty |= class.bit();
        }
        (ok, finite)
    }

    /// Frees `h` header and `d` data credits of `class` from the receive buffer; returns
    /// true (and marks the class as owing an UpdateFC) if either type is finite.
    #[inline]
    pub fn free(&mut self, class: FcClass, h: u32, d: u32) -> bool {
        let (used, allocated) = (&mut self.used.0, &mut self.allocated.0);
        let ht = class.header_index();
        let mut finite = false;
        for (ty, n) in [(ht, h as u64), (ht + 1, d as u64)] {
            used[ty] -= n.min(used[ty]);
            if self.advertised.0[ty].is_some() {
                allocated[ty] += n;
                finite = true;
            }
        }
        if finite {
            self.dirty |= class.bit();
        }
        finite
    }

    /// The classes owing an UpdateFC (bit k: class k), clearing them.
    #[inline]
    pub fn take_dirty(&mut self) -> u8 {
        std::mem::take(&mut self.dirty)
    }

    /// The UpdateFC DLLP for `class`: its cumulative header and data allocation.
    #[inline]
    pub fn update_fc(&self, class: FcClass) -> Dllp {
        let h = class.header_index();
        Dllp::UpdateFc(class, self.allocated.0[h], self.allocated.0[h + 1])
    }

    /// The classes with finite header or data credits (bit k: class k): those the periodic
    /// UpdateFC refresh reports (spec: every FC type with non-infinite credits).
    pub fn finite_classes(&self) -> u8 {
        CLASSES
            .into_iter()
            .filter(|c| {
                self.advertised[c.header()].is_some() || self.advertised[c.data()].is_some()
            })
            .fold(0, |m, c| m | c.bit())
    }

    /// The advertised buffer size of `ty` (`None`: infinite).
    pub fn advertised(&self, ty: CreditType) -> Option<u32> {
        self.advertised[ty]
    }

    /// Credits of `ty` allocated so far (advertised plus freed).
    pub fn allocated(&self, ty: CreditType) -> u64 {
        self.allocated[ty]
    }

    /// Credits of `ty` in use in the receive buffer.
    pub fn used(&self, ty: CreditType) -> u64 {
        self.used[ty]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finite credits: `ph` posted headers and `pd` posted data units, the rest infinite.
    fn posted(ph: u32, pd: u32) -> PerCreditType<Option<u32>> {
        let mut adv = PerCreditType([None; 6]);
        adv[CreditType::Ph] = Some(ph);
        adv[CreditType::Pd] = Some(pd);
        adv
    }

    #[test]
    fn a_pass_is_a_take_then_a_free() {
        for (ph, pd, held, d) in [(4, 64, 0, 8), (1, 8, 0, 9), (2, 16, 1, 8), (4, 64, 3, 0)] {
            let (mut a, mut b) = (
                FcReceiver::new(posted(ph, pd)),
                FcReceiver::new(posted(ph, pd)),
            );
            for r in [&mut a, &mut b] {
                r.take(FcClass::Posted, held, held * 8);
            }
            let ok = a.take(FcClass::Posted, 1, d);
            let finite = a.free(FcClass::Posted, 1, d);
            assert_eq!(b.pass(FcClass::Posted, 1, d), (ok, finite));
            for ty in [CreditType::Ph, CreditType::Pd] {
                assert_eq!((a.used(ty), a.allocated(ty)), (b.used(ty), b.allocated(ty)));
            }
            assert_eq!(a.take_dirty(), b.take_dirty());
        }
        // Infinite credits: nothing to check, nothing owed.
        let mut r = FcReceiver::new(PerCreditType([None; 6]));
        assert_eq!(r.pass(FcClass::Posted, 1, 8), (true, false));
    }

    #[test]
    fn classes_map_to_their_header_and_data_types() {
        for (k, class) in CLASSES.into_iter().enumerate() {
            assert_eq!(class.header() as usize, 2 * k);
            assert_eq!(class.data() as usize, 2 * k + 1);
            assert_eq!(class.header().class(), class);
            assert_eq!(class.data().class(), class);
        }
        let names: Vec<_> = CREDIT_TYPES.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["PH", "PD", "NPH", "NPD", "CplH", "CplD"]);
    }

    #[test]
    fn transmitter_blocks_when_headers_run_out() {
        let mut tx = FcTransmitter::new(posted(2, 100));
        for _ in 0..2 {
            assert_eq!(tx.check(FcClass::Posted, 8), Ok(()));
            assert!(tx.consume(FcClass::Posted, 8));
        }
        assert_eq!(tx.check(FcClass::Posted, 8), Err(CreditType::Ph));
        // A header-only posted TLP (a message) is blocked the same.
        assert_eq!(tx.check(FcClass::Posted, 0), Err(CreditType::Ph));
        assert_eq!(tx.available(CreditType::Ph), 0);
        assert_eq!(tx.available(CreditType::Pd), 84);
    }

    #[test]
    fn transmitter_blocks_when_data_runs_out() {
        let mut tx = FcTransmitter::new(posted(10, 20));
        assert!(tx.consume(FcClass::Posted, 16));
        // 4 data units left: a 4-unit TLP goes, an 8-unit one waits for PD.
        assert_eq!(tx.check(FcClass::Posted, 4), Ok(()));
        assert_eq!(tx.check(FcClass::Posted, 8), Err(CreditType::Pd));
        // Sending it anyway is a violation the audit counts.
        assert!(!tx.consume(FcClass::Posted, 8));
    }

    #[test]
    fn update_fc_raises_the_limit_and_never_lowers_it() {
        let mut tx = FcTransmitter::new(posted(1, 8));
        assert!(tx.consume(FcClass::Posted, 8));
        assert_eq!(tx.check(FcClass::Posted, 8), Err(CreditType::Ph));
        tx.update(FcClass::Posted, 2, 16);
        assert_eq!(tx.check(FcClass::Posted, 8), Ok(()));
        assert_eq!(tx.limit(CreditType::Ph), 2);
        // An older UpdateFC arriving late changes nothing.
        tx.update(FcClass::Posted, 1, 8);
        assert_eq!(tx.limit(CreditType::Pd), 16);
    }

    #[test]
    fn infinite_credits_never_block() {
        let mut tx = FcTransmitter::new(PerCreditType([None; 6]));
        for class in CLASSES {
            for _ in 0..10_000 {
                assert_eq!(tx.check(class, 256), Ok(()));
                assert!(tx.consume(class, 256));
            }
        }
        assert_eq!(tx.consumed(CreditType::CplD), 2_560_000);
        // An UpdateFC for an infinite class (the spec sends zeros) keeps it infinite.
        tx.update(FcClass::Completion, 0, 0);
        assert_eq!(tx.limit(CreditType::CplH), u64::MAX);
    }

    #[test]
    fn receiver_flags_an_overflow_beyond_what_it_advertised() {
        let mut rx = FcReceiver::new(posted(2, 16));
        assert!(rx.take(FcClass::Posted, 1, 8));
        assert!(rx.take(FcClass::Posted, 1, 8));
        assert!(
            !rx.take(FcClass::Posted, 1, 0),
            "a third header overflows PH"
        );
        let mut rx = FcReceiver::new(posted(2, 16));
        assert!(
            !rx.take(FcClass::Posted, 1, 17),
            "17 data units overflow PD"
        );
        // Infinite types never overflow.
        assert!(rx.take(FcClass::Completion, 1_000, 1_000_000));
    }

    #[test]
    fn freeing_credits_marks_the_class_for_an_update_fc() {
        let mut rx = FcReceiver::new(posted(4, 32));
        assert!(rx.take(FcClass::Posted, 1, 8));
        assert_eq!(rx.take_dirty(), 0);
        assert!(rx.free(FcClass::Posted, 1, 8));
        assert_eq!(rx.used(CreditType::Pd), 0);
        assert_eq!(rx.take_dirty(), FcClass::Posted.bit());
        assert_eq!(rx.take_dirty(), 0, "taking the set clears it");
        // The UpdateFC reports the cumulative allocation: advertised plus freed.
        assert_eq!(
            rx.update_fc(FcClass::Posted),
            Dllp::UpdateFc(FcClass::Posted, 5, 40)
        );
        assert_eq!(rx.allocated(CreditType::Ph), 5);
        // Freeing infinite credits owes nothing.
        assert!(!rx.free(FcClass::NonPosted, 1, 0));
        assert_eq!(rx.take_dirty(), 0);
        assert_eq!(rx.finite_classes(), FcClass::Posted.bit());
        // Finite data with infinite headers is refreshed too (a lost UpdateFC recovers).
        let mut adv = PerCreditType([None; 6]);
        adv[CreditType::CplD] = Some(64);
        assert_eq!(
            FcReceiver::new(adv).finite_classes(),
            FcClass::Completion.bit()
        );
    }

    #[test]
    fn receiver_updates_let_a_blocked_transmitter_go() {
        let adv = posted(1, 8);
        let (mut tx, mut rx) = (FcTransmitter::new(adv), FcReceiver::new(adv));
        assert!(tx.consume(FcClass::Posted, 8));
        assert!(rx.take(FcClass::Posted, 1, 8));
        assert_eq!(tx.check(FcClass::Posted, 8), Err(CreditType::Ph));
        rx.free(FcClass::Posted, 1, 8);
        let Dllp::UpdateFc(class, h, d) = rx.update_fc(FcClass::Posted) else {
            unreachable!()
        };
        tx.update(class, h, d);
        assert_eq!(tx.check(FcClass::Posted, 8), Ok(()));
    }
}
