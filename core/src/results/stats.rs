//! Summary statistics of repeated measurements: mean, min, max, sample standard
//! deviation, and nearest-rank percentiles. Invariant: computed from the samples exactly
//! as given (no outlier trimming), so a reader can recompute every figure.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Stats {
    pub n: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for one sample.
    pub std: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
}

/// The median of the samples (the mean of the middle two for an even count; sorts them),
/// or None for none.
pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// The smallest value at which the values up to it hold at least half the total weight
/// (pairs of value and weight; sorts them), or None for none.
pub fn weighted_median(v: &mut [(f64, f64)]) -> Option<f64> {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = v.iter().map(|x| x.1).sum();
    let mut acc = 0.0;
    v.iter().find_map(|&(e, w)| {
        acc += w;
        (acc >= total / 2.0).then_some(e)
    })
}

/// The nearest-rank percentile `q` (0..=100) of sorted samples.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Student's t at 97.5 % (two-sided 95 %) with `dof` degrees of freedom, over the normal's
/// 1.960: how much wider a spread estimated from that few repeats must be taken for ± two
/// standard uncertainties to keep their coverage (GUM, annex G). From the table below,
/// linear in 1/dof between its entries (within 0.3 % of the exact quantile); 1 for
/// infinitely many, and for none or a non-finite count the first entry's.
pub fn coverage_over_normal(dof: f64) -> f64 {
    // (degrees of freedom, t at 97.5 %)
    const T: [(f64, f64); 16] = [
        (1.0, 12.706),
        (2.0, 4.303),
        (3.0, 3.182),
        (4.0, 2.776),
        (5.0, 2.571),
        (6.0, 2.447),
        (7.0, 2.365),
        (8.0, 2.306),
        (10.0, 2.228),
        (12.0, 2.179),
        (15.0, 2.131),
        (20.0, 2.086),
        (30.0, 2.042),
        (60.0, 2.000),
        (120.0, 1.980),
        (f64::INFINITY, 1.960),
    ];
    let z = T[T.len() - 1].1;
    if dof.is_nan() || dof < 1.0 {
        return T[0].1 / z;
    }
    let x = 1.0 / dof;
    for w in T.windows(2) {
        let ((d0, t0), (d1, t1)) = (w[0], w[1]);
        if dof <= d1 {
            let (x0, x1) = (1.0 / d0, 1.0 / d1);
            return (t1 + (t0 - t1) * (x - x1) / (x0 - x1)) / z;
        }
    }
    1.0
}

/// The effective degrees of freedom of a mean of variance estimates, each `(variance,
/// its degrees of freedom)` (Welch-Satterthwaite): (Σ v)² / Σ (v² / dof). Infinite
/// where every variance is zero; a zero-dof estimate is left out.
pub fn pooled_dof(variances: &[(f64, f64)]) -> f64 {
    let used = variances.iter().filter(|(_, d)| *d > 0.0);
    let sum: f64 = used.clone().map(|(v, _)| v).sum();
    let den: f64 = used.map(|(v, d)| v * v / d).sum();
    if den > 0.0 {
        sum * sum / den
    } else {
        f64::INFINITY
    }
}

impl Stats {
    pub fn of(samples: &[f64]) -> Stats {
        if samples.is_empty() {
            return Stats::default();
        }
        let mut s: Vec<f64> = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let mean = s.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Stats {
            n,
            mean,
            min: s[0],
            max: s[n - 1],
            std: var.sqrt(),
            p50: percentile(&s, 50.0),
            p90: percentile(&s, 90.0),
            p99: percentile(&s, 99.0),
        }
    }

    /// Coefficient of variation, std / mean.
    pub fn cv(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            self.std / self.mean
        }
    }

    /// The standard error of the mean (0 for fewer than two samples).
    pub fn sem(&self) -> f64 {
        if self.n > 1 {
            self.std / (self.n as f64).sqrt()
        } else {
            0.0
        }
    }

    /// The same statistics with `d` added to every value (the spread unchanged).
    pub fn shifted(&self, d: f64) -> Stats {
        Stats {
            n: self.n,
            mean: self.mean + d,
            min: self.min + d,
            max: self.max + d,
            std: self.std,
            p50: self.p50 + d,
            p90: self.p90 + d,
            p99: self.p99 + d,
        }
    }

    /// The same statistics with every value divided by `k` (per-invocation figures from
    /// per-graph ones).
    pub fn scaled(&self, k: f64) -> Stats {
        Stats {
            n: self.n,
            mean: self.mean / k,
            min: self.min / k,
            max: self.max / k,
            std: self.std / k,
            p50: self.p50 / k,
            p90: self.p90 / k,
            p99: self.p99 / k,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coverage_factor_follows_students_t_over_the_normal() {
        let close = |a: f64, b: f64| (a - b).abs() < 2e-3;
        assert!(close(coverage_over_normal(2.0), 4.303 / 1.96));
        assert!(close(coverage_over_normal(10.0), 2.228 / 1.96));
        assert_eq!(coverage_over_normal(f64::INFINITY), 1.0);
        // Between entries, within 0.3 % of the exact quantile: t(9) = 2.262, t(25) = 2.060.
        assert!((coverage_over_normal(9.0) * 1.96 / 2.262 - 1.0).abs() < 3e-3);
        assert!((coverage_over_normal(25.0) * 1.96 / 2.060 - 1.0).abs() < 3e-3);
        // It only falls as the degrees of freedom grow; none counts as one.
        let mut last = f64::INFINITY;
        for d in [1.0, 1.5, 2.0, 3.5, 7.0, 11.0, 40.0, 200.0, 1e6] {
            let c = coverage_over_normal(d);
            assert!(c < last && c >= 1.0, "{d}");
            last = c;
        }
        assert_eq!(coverage_over_normal(0.0), coverage_over_normal(1.0));
        assert_eq!(coverage_over_normal(f64::NAN), coverage_over_normal(1.0));
    }

    #[test]
    fn pooled_variances_have_welch_satterthwaite_degrees_of_freedom() {
        // Equal variances add their degrees of freedom.
        assert!((pooled_dof(&[(1.0, 2.0), (1.0, 2.0), (1.0, 2.0)]) - 6.0).abs() < 1e-12);
        // One large variance dominates: close to its own.
        assert!((pooled_dof(&[(100.0, 1.0), (1.0, 1.0)]) - 10201.0 / 10001.0).abs() < 1e-12);
        assert_eq!(pooled_dof(&[(0.0, 2.0)]), f64::INFINITY);
        assert_eq!(pooled_dof(&[(1.0, 0.0), (1.0, 3.0)]), 3.0);
    }

    #[test]
    fn hand_computed() {
        let s = Stats::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.n, s.min, s.max, s.mean), (4, 1.0, 4.0, 2.5));
        // Sample variance of 1,2,3,4 is 5/3.
        assert!((s.std - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!((s.p50, s.p90, s.p99), (2.0, 4.0, 4.0));
        let one = Stats::of(&[7.0]);
        assert_eq!((one.std, one.p50, one.p99), (0.0, 7.0, 7.0));
        assert_eq!(Stats::of(&[]).n, 0);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 90.0), 90.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        let s = Stats::of(&v).scaled(10.0);
        assert_eq!(s.max, 10.0);
    }
}
