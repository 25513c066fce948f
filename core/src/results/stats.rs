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
