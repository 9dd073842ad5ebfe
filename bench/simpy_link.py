"""SimPy model of one saturated PCIe link: a speed baseline for tlpsim's engine.

The model obeys the same rules as the Rust simulator:

- Time is integer ticks of 1/64 ps. A packet of N bytes occupies a wire of `width` lanes
  for N / width symbol times; the sub-tick remainder is carried from one packet to the
  next, per wire. No SKP ordered sets.
- "down" (A -> B) carries memory-write TLPs (4DW header + MPS payload + 8 B framing);
  "up" (B -> A) carries only 8-byte DLLPs (Ack and UpdateFC-P). Each way adds `prop_ns`.
- Posted flow control: B advertises PH and PD credits; A needs 1 PH and
  ceil(payload / 16) PD credits to start a TLP and consumes them when it starts it.
  B frees the credits once the TLP has fully arrived and returns them (cumulatively) in
  UpdateFC DLLPs.
- Ack/Nak: A keeps every sent TLP in a replay buffer (bytes) until it is acknowledged and
  never starts a TLP that would overflow it. B acknowledges everything received so far.
- The Ack and UpdateFC timers share the spec interval
  floor((MPS + 28) * AckFactor / width) + InternalDelay symbol times. A timer starts when
  something becomes pending while it is stopped; at expiry it sends one DLLP carrying
  everything pending, and restarts if more became pending during the interval, else stops.
- A always has another TLP to send.

Run it as a script for the default point (Gen1 x8, MPS 128, 200 us), or call
`run_simpy(...)`.
"""

from __future__ import annotations

import argparse
import json
import time

import simpy

#: Ticks (1/64 ps) of one symbol time per lane, Gen1..Gen5.
SYMBOL_TICKS = {1: 256_000, 2: 128_000, 3: 65_000, 4: 32_500, 5: 16_250}
#: InternalDelay term of the timer formula, symbol times.
INTERNAL_DELAY_SYMBOLS = {1: 19, 2: 70, 3: 115, 4: 115, 5: 115}
TIMER_TLP_OVERHEAD_SYMBOLS = 28
TICKS_PER_NS = 64_000
TICKS_PER_US = 64_000_000

MWR_4DW_HEADER_BYTES = 16
TLP_FRAMING_BYTES = 8
DLLP_BYTES = 8
DATA_CREDIT_BYTES = 16
DEFAULT_PH_CREDITS = 32
DEFAULT_REPLAY_BYTES = 16_384

WIDTHS = (1, 2, 4, 8, 12, 16, 32)
MPS_VALUES = (128, 256, 512, 1024, 2048, 4096)


def ack_factor_tenths(mps: int, width: int) -> int:
    """AckFactor (= UpdateFactor) in tenths, by MPS and width (PCIe 1.1 Table 3-7)."""
    if mps <= 256:
        if width <= 4:
            return 14
        return 25 if width == 8 else 30
    return 10 if width <= 8 else 20


def timer_symbols(gen: int, width: int, mps: int) -> int:
    """Ack / UpdateFC latency interval in symbol times (integer arithmetic, truncated)."""
    return (mps + TIMER_TLP_OVERHEAD_SYMBOLS) * ack_factor_tenths(mps, width) // (10 * width) + INTERNAL_DELAY_SYMBOLS[
        gen
    ]


class Wire:
    """One direction of the link: serialization with carried sub-tick remainder, then delay.

    The owner process yields `transmit(nbytes)` (the serialization time) and then calls
    `deliver(packet)`; with a propagation delay the packet goes through a FIFO delay line
    (one process per wire), since every packet is delayed by the same amount.
    """

    def __init__(self, env: simpy.Environment, sym_ticks: int, width: int, prop_ticks: int, sink):
        self.env = env
        self.sym_ticks = sym_ticks
        self.width = width
        self.carry = 0
        self.prop_ticks = prop_ticks
        self.sink = sink
        if prop_ticks > 0:
            self.line = simpy.Store(env)
            env.process(self._delay_line())

    def transmit(self, nbytes: int) -> simpy.Timeout:
        total = nbytes * self.sym_ticks + self.carry
        ticks, self.carry = divmod(total, self.width)
        return self.env.timeout(ticks)

    def deliver(self, packet) -> None:
        if self.prop_ticks > 0:
            self.line.put((self.env.now + self.prop_ticks, packet))
        else:
            self.sink(packet)

    def _delay_line(self):
        env = self.env
        line = self.line
        sink = self.sink
        while True:
            arrive, packet = yield line.get()
            if arrive > env.now:
                yield env.timeout(arrive - env.now)
            sink(packet)


class LatencyTimer:
    """Ack or UpdateFC timer: one process, woken when something becomes pending.

    `has_pending()` says whether a DLLP has something to carry; `send()` queues that DLLP
    (carrying everything pending) on the up wire.
    """

    def __init__(self, env: simpy.Environment, interval: int, has_pending, send):
        self.env = env
        self.interval = interval
        self.has_pending = has_pending
        self.send = send
        self.running = False
        self.activity = False
        self.kick = env.event()
        env.process(self._run())

    def notify(self) -> None:
        """Something became pending."""
        if self.running:
            self.activity = True
        else:
            self.running = True
            self.activity = False
            self.kick.succeed()

    def _run(self):
        env = self.env
        while True:
            yield self.kick
            self.kick = env.event()
            while True:
                yield env.timeout(self.interval)
                if self.has_pending():
                    self.send()
                if not self.activity:
                    break
                self.activity = False
            self.running = False


class Link:
    def __init__(
        self,
        env: simpy.Environment,
        gen: int,
        width: int,
        mps: int,
        prop_ticks: int,
        ph_credits: int,
        pd_credits: int,
        replay_bytes: int,
    ):
        self.env = env
        sym = SYMBOL_TICKS[gen]
        self.tlp_bytes = MWR_4DW_HEADER_BYTES + mps + TLP_FRAMING_BYTES
        self.tlp_pd = -(-mps // DATA_CREDIT_BYTES)
        self.replay_capacity = replay_bytes

        # Transmitter (A) state. Credit counters are cumulative (modulo nothing: Python ints).
        self.ph_limit = ph_credits
        self.pd_limit = pd_credits
        self.ph_consumed = 0
        self.pd_consumed = 0
        self.next_seq = 0
        self.replay = []  # (seq, bytes) of unacknowledged TLPs, oldest first
        self.replay_head = 0
        self.replay_used = 0
        self.tx_wake = None  # event the blocked transmitter waits on

        # Receiver (B) state.
        self.rx_seq = 0  # TLPs received so far (= next expected sequence number)
        self.acked_seq = 0  # TLPs covered by the last Ack sent
        self.ph_freed = ph_credits  # cumulative credits allocated (initial + freed)
        self.pd_freed = pd_credits
        self.ph_advertised = ph_credits
        self.pd_advertised = pd_credits

        self.down = Wire(env, sym, width, prop_ticks, self._tlp_arrived)
        self.up = Wire(env, sym, width, prop_ticks, self._dllp_arrived)
        self.up_queue = simpy.Store(env)

        interval = timer_symbols(gen, width, mps) * sym
        self.ack_timer = LatencyTimer(env, interval, self._ack_pending, self._send_ack)
        self.fc_timer = LatencyTimer(env, interval, self._fc_pending, self._send_update_fc)

        env.process(self._transmitter())
        env.process(self._up_transmitter())

    # --- A: TLP transmitter -------------------------------------------------------------

    def _can_send(self) -> bool:
        return (
            self.ph_limit - self.ph_consumed >= 1
            and self.pd_limit - self.pd_consumed >= self.tlp_pd
            and self.replay_used + self.tlp_bytes <= self.replay_capacity
        )

    def _transmitter(self):
        env = self.env
        down = self.down
        nbytes = self.tlp_bytes
        while True:
            while not self._can_send():
                self.tx_wake = env.event()
                yield self.tx_wake
            self.ph_consumed += 1
            self.pd_consumed += self.tlp_pd
            seq = self.next_seq
            self.next_seq = seq + 1
            self.replay.append((seq, nbytes))
            self.replay_used += nbytes
            yield down.transmit(nbytes)
            down.deliver(seq)

    def _wake_transmitter(self) -> None:
        wake = self.tx_wake
        if wake is not None and not wake.triggered and self._can_send():
            self.tx_wake = None
            wake.succeed()

    def _dllp_arrived(self, dllp) -> None:
        kind, a, b = dllp
        if kind == "ack":
            # `a` = number of TLPs acknowledged (sequence numbers below it are released).
            replay = self.replay
            head = self.replay_head
            while head < len(replay) and replay[head][0] < a:
                self.replay_used -= replay[head][1]
                head += 1
            if head > 1024:
                del replay[:head]
                head = 0
            self.replay_head = head
        else:
            # UpdateFC-P: cumulative credit limits.
            self.ph_limit = max(self.ph_limit, a)
            self.pd_limit = max(self.pd_limit, b)
        self._wake_transmitter()

    # --- B: TLP receiver --------------------------------------------------------------------

    def _tlp_arrived(self, seq) -> None:
        self.rx_seq = seq + 1
        self.ph_freed += 1
        self.pd_freed += self.tlp_pd
        self.ack_timer.notify()
        self.fc_timer.notify()

    def _ack_pending(self) -> bool:
        return self.rx_seq > self.acked_seq

    def _send_ack(self) -> None:
        self.acked_seq = self.rx_seq
        self.up_queue.put(("ack", self.rx_seq, 0))

    def _fc_pending(self) -> bool:
        return self.ph_freed > self.ph_advertised or self.pd_freed > self.pd_advertised

    def _send_update_fc(self) -> None:
        self.ph_advertised = self.ph_freed
        self.pd_advertised = self.pd_freed
        self.up_queue.put(("fc", self.ph_freed, self.pd_freed))

    def _up_transmitter(self):
        up = self.up
        queue = self.up_queue
        while True:
            dllp = yield queue.get()
            yield up.transmit(DLLP_BYTES)
            up.deliver(dllp)


def run_simpy(gen: int = 1, width: int = 8, mps: int = 128, duration_us: float = 200.0, prop_ns: float = 0.0) -> dict:
    """Returns {"tlps": delivered TLP count, "payload_gbps": payload Gb/s over the run,
    "wall_s": seconds of wall time, "tlp_hops_per_s": tlps / wall_s}."""
    if gen not in SYMBOL_TICKS:
        raise ValueError(f"gen must be 1..5, got {gen}")
    if width not in WIDTHS:
        raise ValueError(f"width must be one of {WIDTHS}, got {width}")
    if mps not in MPS_VALUES:
        raise ValueError(f"mps must be one of {MPS_VALUES}, got {mps}")
    if not duration_us > 0:
        raise ValueError("duration_us must be positive")
    if prop_ns < 0:
        raise ValueError("prop_ns must not be negative")

    duration_ticks = round(duration_us * TICKS_PER_US)
    prop_ticks = round(prop_ns * TICKS_PER_NS)

    start = time.perf_counter()
    env = simpy.Environment()
    link = Link(
        env,
        gen,
        width,
        mps,
        prop_ticks,
        ph_credits=DEFAULT_PH_CREDITS,
        pd_credits=DEFAULT_PH_CREDITS * mps // DATA_CREDIT_BYTES,
        replay_bytes=DEFAULT_REPLAY_BYTES,
    )
    env.run(until=duration_ticks)
    wall_s = time.perf_counter() - start

    tlps = link.rx_seq
    seconds = duration_ticks / (TICKS_PER_US * 1e6)
    return {
        "tlps": tlps,
        "payload_gbps": tlps * mps * 8 / seconds / 1e9,
        "wall_s": wall_s,
        "tlp_hops_per_s": tlps / wall_s if wall_s > 0 else float("inf"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gen", type=int, default=1)
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--mps", type=int, default=128)
    parser.add_argument("--duration-us", type=float, default=200.0)
    parser.add_argument("--prop-ns", type=float, default=0.0)
    args = parser.parse_args()
    print(
        json.dumps(
            run_simpy(gen=args.gen, width=args.width, mps=args.mps, duration_us=args.duration_us, prop_ns=args.prop_ns)
        )
    )


if __name__ == "__main__":
    main()
