//! Max-min fair sharing where each resource weighs its flows its own way.
//!
//! A link direction serves one TLP per input in turn, so flows held back by one full link
//! get equal TLP rates there: a flow's share of a resource is `level × weight`, the weight
//! being the flow's payload bytes per TLP on that resource (one weight per flow on the
//! other resources). The solve is the bottleneck algorithm of max-min fairness: each round
//! takes every resource's level (its capacity left over the active flows' weighted use),
//! gives every active flow the least of its shares and its own limit, and freezes the flows
//! whose least is their own limit and those of every resource that is the tightest of all
//! its active flows. Frozen flows only free capacity for the rest, so levels never fall
//! and each freeze is final; with one weight per flow this is weighted max-min fairness.
//! With weights per resource a round can find no resource the tightest of all its flows;
//! then each resource is levelled again with the flows that another one holds below their
//! share there taken at what they get ([`relevel`]), and only if still none settles does
//! the least share go first.

/// A flow as the solver sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Demand {
    /// Resources it uses: (index, units of the resource per unit of the flow's rate, the
    /// flow's weight there, > 0).
    pub uses: Vec<(usize, f64, f64)>,
    /// The most it may run at (its own limit: a rate cap, a window over a round trip);
    /// infinite when it has none.
    pub limit: f64,
}

/// What stopped a flow from rising.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Resource `i` filled up.
    Resource(usize),
    /// It reached its own limit.
    Limit,
    /// Nothing (it uses no limited resource and has no limit: its rate is infinite).
    Unbound,
}

/// Relative tolerance of "as tight as".
const EPS: f64 = 1e-9;

/// The rate of every flow of `demands` sharing resources of `capacity`, and what bound it.
pub fn solve(capacity: &[f64], demands: &[Demand]) -> (Vec<f64>, Vec<Bound>) {
    let n = demands.len();
    let mut rate = vec![0.0; n];
    let mut bound = vec![Bound::Unbound; n];
    let mut active: Vec<bool> = demands.iter().map(|d| d.limit > 0.0).collect();
    for (i, a) in active.iter().enumerate() {
        if !a {
            bound[i] = Bound::Limit;
        }
    }
    let mut frozen_load = vec![0.0; capacity.len()];
    // Each round freezes at least one flow.
    for _ in 0..=n {
        if !active.iter().any(|&a| a) {
            break;
        }
        let mut weighted = vec![0.0; capacity.len()];
        for (_, d) in demands.iter().enumerate().filter(|(i, _)| active[*i]) {
            for &(r, a, w) in &d.uses {
                weighted[r] += a * w;
            }
        }
        let level: Vec<f64> = (0..capacity.len())
            .map(|r| {
                if weighted[r] > 0.0 {
                    (capacity[r] - frozen_load[r]).max(0.0) / weighted[r]
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        let mut cand = candidates(demands, &active, &level);
        let mut freeze = settling(demands, &active, &level, &cand);
        if freeze.is_empty() {
            // No resource is the tightest of all its flows: each is held somewhere by a
            // flow that another resource holds below its share there. Such a flow leaves
            // the rest of its share to the others: level each resource again with it at its
            // candidate, until the candidates settle (random fabric `--host` seed 322: a
            // writer held by its link left a reader a ninth of the memory, its share by
            // their TLP sizes, though the memory was half idle).
            let mut level = level;
            for _ in 0..=n {
                let next = relevel(capacity, &frozen_load, demands, &active, (&level, &cand));
                let again = candidates(demands, &active, &next);
                let same = again == cand;
                (level, cand) = (next, again);
                if same {
                    break;
                }
            }
            freeze = settling(demands, &active, &level, &cand);
        }
        if freeze.is_empty() {
            // Still none: the least share goes first.
            let least = (0..n)
                .filter(|&i| active[i])
                .min_by(|&a, &b| cand[a].0.total_cmp(&cand[b].0));
            freeze.extend(least);
        }
        for i in freeze {
            active[i] = false;
            rate[i] = cand[i].0;
            bound[i] = cand[i].1;
            if rate[i].is_finite() {
                for &(r, a, _) in &demands[i].uses {
                    frozen_load[r] += a * rate[i];
                }
            }
        }
    }
    (rate, bound)
}

/// Whether rate `x` is tighter than rate `y` (below it by more than [`EPS`]).
fn below(x: f64, y: f64) -> bool {
    x < y * (1.0 - EPS)
}

/// Each active flow's least share at `level` or its own limit, and what gives it.
fn candidates(demands: &[Demand], active: &[bool], level: &[f64]) -> Vec<(f64, Bound)> {
    let mut cand = vec![(f64::INFINITY, Bound::Unbound); demands.len()];
    for (i, d) in demands.iter().enumerate().filter(|(i, _)| active[*i]) {
        let mut best = (d.limit, Bound::Limit);
        for &(r, a, w) in &d.uses {
            let share = level[r] * w;
            if a > 0.0 && below(share, best.0) {
                best = (share, Bound::Resource(r));
            }
        }
        if !best.0.is_finite() {
            best.1 = Bound::Unbound;
        }
        cand[i] = best;
    }
    cand
}

/// The active flows that may freeze at their candidates `cand`: those at their own limit,
/// and those whose resource is settled, the tightest of every active flow on it.
fn settling(
    demands: &[Demand],
    active: &[bool],
    level: &[f64],
    cand: &[(f64, Bound)],
) -> Vec<usize> {
    let mut settled = vec![true; level.len()];
    for (i, d) in demands.iter().enumerate().filter(|(i, _)| active[*i]) {
        for &(r, a, w) in &d.uses {
            if a > 0.0 && below(cand[i].0, level[r] * w) {
                settled[r] = false;
            }
        }
    }
    (0..demands.len())
        .filter(|&i| active[i])
        .filter(|&i| match cand[i].1 {
            Bound::Limit | Bound::Unbound => true,
            Bound::Resource(r) => settled[r],
        })
        .collect()
}

/// Each resource's level with the active flows that their candidates `cand` hold below
/// their share at `level` there taken at their candidates, the rest sharing what is left.
fn relevel(
    capacity: &[f64],
    frozen_load: &[f64],
    demands: &[Demand],
    active: &[bool],
    (level, cand): (&[f64], &[(f64, Bound)]),
) -> Vec<f64> {
    let mut held = frozen_load.to_vec();
    let mut weighted = vec![0.0; capacity.len()];
    for (i, d) in demands.iter().enumerate().filter(|(i, _)| active[*i]) {
        for &(r, a, w) in &d.uses {
            if below(cand[i].0, level[r] * w) {
                held[r] += a * cand[i].0;
            } else {
                weighted[r] += a * w;
            }
        }
    }
    (0..capacity.len())
        .map(|r| {
            if weighted[r] > 0.0 {
                (capacity[r] - held[r]).max(0.0) / weighted[r]
            } else {
                level[r]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(uses: &[(usize, f64)], weight: f64, limit: f64) -> Demand {
        Demand {
            uses: uses.iter().map(|&(r, a)| (r, a, weight)).collect(),
            limit,
        }
    }

    #[test]
    fn one_flow_gets_the_whole_resource() {
        let (r, b) = solve(&[10.0], &[flow(&[(0, 1.0)], 1.0, f64::INFINITY)]);
        assert!((r[0] - 10.0).abs() < 1e-9);
        assert_eq!(b[0], Bound::Resource(0));
    }

    #[test]
    fn two_flows_share_equally_and_a_capped_one_leaves_the_rest() {
        let inf = f64::INFINITY;
        let (r, _) = solve(
            &[10.0],
            &[flow(&[(0, 1.0)], 1.0, inf), flow(&[(0, 1.0)], 1.0, inf)],
        );
        assert!((r[0] - 5.0).abs() < 1e-9 && (r[1] - 5.0).abs() < 1e-9);
        let (r, b) = solve(
            &[10.0],
            &[flow(&[(0, 1.0)], 1.0, 2.0), flow(&[(0, 1.0)], 1.0, inf)],
        );
        assert!((r[0] - 2.0).abs() < 1e-9 && (r[1] - 8.0).abs() < 1e-9);
        assert_eq!((b[0], b[1]), (Bound::Limit, Bound::Resource(0)));
    }

    #[test]
    fn weights_split_a_shared_resource_in_their_ratio() {
        let inf = f64::INFINITY;
        let (r, _) = solve(
            &[12.0],
            &[flow(&[(0, 1.0)], 1.0, inf), flow(&[(0, 1.0)], 2.0, inf)],
        );
        assert!((r[0] - 4.0).abs() < 1e-9 && (r[1] - 8.0).abs() < 1e-9);
    }

    #[test]
    fn per_resource_weights_let_a_flow_fill_its_own_link_first() {
        // f0 reads: big requests (weight 2) on resource 0, its data alone on resource 1;
        // f1 writes on resource 0 (weight 1). Round robin per TLP on resource 0 lets f0
        // reach resource 1's limit, and f1 takes what is left of resource 0.
        let inf = f64::INFINITY;
        let d = [
            Demand {
                uses: vec![(0, 0.1, 2.0), (1, 1.0, 1.0)],
                limit: inf,
            },
            Demand {
                uses: vec![(0, 1.0, 1.0)],
                limit: inf,
            },
        ];
        let (r, b) = solve(&[10.0, 9.0], &d);
        assert!((r[0] - 9.0).abs() < 1e-9, "{r:?}");
        assert!((r[1] - 9.1).abs() < 1e-9, "{r:?}");
        assert_eq!((b[0], b[1]), (Bound::Resource(1), Bound::Resource(0)));
    }

    #[test]
    fn max_min_across_two_resources() {
        // f0 crosses both, f1 only the first, f2 only the second (smaller).
        let inf = f64::INFINITY;
        let d = [
            flow(&[(0, 1.0), (1, 1.0)], 1.0, inf),
            flow(&[(0, 1.0)], 1.0, inf),
            flow(&[(1, 1.0)], 1.0, inf),
        ];
        let (r, b) = solve(&[10.0, 4.0], &d);
        assert!((r[0] - 2.0).abs() < 1e-9 && (r[2] - 2.0).abs() < 1e-9);
        assert!((r[1] - 8.0).abs() < 1e-9);
        assert_eq!(b[1], Bound::Resource(0));
    }

    #[test]
    fn a_flow_another_resource_holds_leaves_its_share_to_the_rest() {
        // A reader (f0: a tenth of a link's bytes per byte in requests, 64-byte completions
        // at the memory, its window 3) and a writer (f1: 512-byte writes) through a 4 GB/s
        // link and a 10 GB/s memory. By TLP sizes the memory gives f0 a ninth (1.11), but
        // the link holds f1 to 3.6, under its share of the memory, and f0's requests leave
        // most of the link to f1: neither resource is the tightest of both. The memory f1
        // cannot use is f0's: f0 runs at its window, f1 at what the link leaves it.
        let d = [
            Demand {
                uses: vec![(0, 0.1, 512.0), (1, 1.0, 64.0)],
                limit: 3.0,
            },
            Demand {
                uses: vec![(0, 1.0, 512.0), (1, 1.0, 512.0)],
                limit: f64::INFINITY,
            },
        ];
        let (r, b) = solve(&[4.0, 10.0], &d);
        assert_eq!(b, vec![Bound::Limit, Bound::Resource(0)]);
        assert!((r[0] - 3.0).abs() < 1e-9, "{r:?}");
        assert!((r[1] - 3.7).abs() < 1e-9, "{r:?}");
    }
}
