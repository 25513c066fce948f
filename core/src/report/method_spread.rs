//! The method's own spread beside the prediction's error bar (`kc report --method-spread`):
//! how far the prediction from parts missed other models measured like with like, read from
//! a file of their answers (`tools/prediction_residuals.py` writes it from reports), as a
//! robust standard deviation (1.4826 × the median |error| around zero). The bar from the
//! repeats within one run holds only their spread, and on session 49's chart the model lay
//! outside it on 29 of 81 answers in time; with this spread beside it, on 8.
//!
//! Invariant: an answer of the model being reported (the same reference entry) never enters
//! its own spread; fewer than [`MIN_ANSWERS`] other answers give none; the prediction's
//! value and its own bar are left as they are, and the judgement with the method's spread
//! is reported beside them, labelled.

use serde::{Deserialize, Serialize};

/// The fewest other answers a spread is taken from.
pub const MIN_ANSWERS: usize = 10;

/// The normal distribution's standard deviation over its median absolute deviation.
const MAD_TO_SD: f64 = 1.4826;

/// One answer of the file: its reference entry and its prediction's errors, percent (the
/// file's `label`, for a reader, is not read).
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct Answer {
    pub entry: String,
    pub time_error_pct: Option<f64>,
    #[serde(default)]
    pub energy_error_pct: Option<f64>,
}

/// The file: where its answers come from, and the answers.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct Answers {
    pub source: String,
    pub answers: Vec<Answer>,
}

/// The spread the report gives: from how many other answers, as one standard deviation in
/// percent of the prediction, and the judgement of the target with it.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct MethodSpread {
    /// The file's `source`.
    pub source: String,
    pub time_answers: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_sd_pct: Option<f64>,
    pub energy_answers: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_sd_pct: Option<f64>,
    /// Answers of the reported entry, left out.
    pub left_out: usize,
    /// Whether the target lies outside the prediction ± 2 × (its standard uncertainty and
    /// the method's spread, combined).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_outside: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_outside: Option<bool>,
}

/// Reads the file's text; an error names what is wrong and where (serde's line and column).
pub fn parse(text: &str) -> Result<Answers, String> {
    let a: Answers = serde_json::from_str(text).map_err(|e| e.to_string())?;
    for (i, x) in a.answers.iter().enumerate() {
        let bad = |v: Option<f64>| v.is_some_and(|v| !v.is_finite());
        if bad(x.time_error_pct) || bad(x.energy_error_pct) {
            return Err(format!(
                "answer {i} ({}): an error that is not finite",
                x.entry
            ));
        }
    }
    Ok(a)
}

/// 1.4826 × the median of |errors| (percent), where there are at least [`MIN_ANSWERS`].
fn robust_sd(mut abs: Vec<f64>) -> Option<f64> {
    if abs.len() < MIN_ANSWERS {
        return None;
    }
    crate::results::stats::median(&mut abs).map(|m| MAD_TO_SD * m)
}

/// The spread for the answer of `entry`, from the others.
pub fn spread(answers: &Answers, entry: &str) -> MethodSpread {
    let others: Vec<&Answer> = answers
        .answers
        .iter()
        .filter(|a| a.entry != entry)
        .collect();
    let abs = |f: fn(&Answer) -> Option<f64>| -> Vec<f64> {
        others.iter().filter_map(|a| f(a)).map(f64::abs).collect()
    };
    let t = abs(|a| a.time_error_pct);
    let e = abs(|a| a.energy_error_pct);
    MethodSpread {
        source: answers.source.clone(),
        time_answers: t.len(),
        energy_answers: e.len(),
        time_sd_pct: robust_sd(t),
        energy_sd_pct: robust_sd(e),
        left_out: answers.answers.len() - others.len(),
        ..Default::default()
    }
}

/// Whether `target` (with its standard uncertainty) lies outside `predicted` ± 2 × its
/// standard uncertainty and `sd_pct` of it, combined; None without a target or a spread.
pub fn outside(
    predicted: f64,
    u: f64,
    target: Option<(f64, Option<f64>)>,
    sd_pct: Option<f64>,
) -> Option<bool> {
    let (t, ut) = target?;
    let m = sd_pct? / 100.0 * predicted.abs();
    Some((predicted - t).abs() > 2.0 * u.hypot(ut.unwrap_or(0.0)).hypot(m))
}

impl super::model::Report {
    /// Sets the method's spread over `answers` beside the prediction, this model's own
    /// answers (its reference entry) left out, and judges the target with it. Does
    /// nothing without a prediction; the entry is "" without a reference.
    pub fn add_method_spread(&mut self, answers: &Answers) {
        let entry = self
            .model
            .as_ref()
            .map(|m| m.reference.entry.clone())
            .unwrap_or_default();
        let Some(p) = self.prediction.as_mut() else {
            return;
        };
        let mut m = spread(answers, &entry);
        let target = |t: Option<f64>, u: Option<f64>| t.map(|t| (t, u));
        m.time_outside = outside(
            p.predicted_us,
            p.predicted_u_us,
            target(p.target_us, p.target_u_us),
            m.time_sd_pct,
        );
        m.energy_outside = p.predicted_energy_j.and_then(|e| {
            outside(
                e,
                p.predicted_energy_u_j.unwrap_or(0.0),
                target(p.target_energy_j, p.target_energy_u_j),
                m.energy_sd_pct,
            )
        });
        p.method_spread = Some(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(n: usize, err: f64) -> Answers {
        Answers {
            source: "test".into(),
            answers: (0..n)
                .map(|i| Answer {
                    entry: format!("m{i}"),
                    time_error_pct: Some(if i % 2 == 0 { err } else { -err }),
                    energy_error_pct: (i < 5).then_some(3.0),
                })
                .collect(),
        }
    }

    #[test]
    fn the_spread_leaves_the_reported_model_out_and_needs_ten_others() {
        let mut a = answers(12, 1.0);
        a.answers[0].time_error_pct = Some(50.0);
        // m0's own 50 % never enters its spread; the others' 1 % give 1.4826 %.
        let s = spread(&a, "m0");
        assert_eq!((s.left_out, s.time_answers), (1, 11));
        assert!((s.time_sd_pct.unwrap() - 1.4826).abs() < 1e-12);
        // Five energy errors are too few.
        assert_eq!(s.energy_sd_pct, None);
        assert_eq!(spread(&answers(10, 1.0), "m0").time_sd_pct, None);
        // 2 % off with a 0.5 % bar: outside alone, inside with a 1.48 % spread.
        assert_eq!(
            outside(100.0, 0.25, Some((98.0, None)), Some(0.0)),
            Some(true)
        );
        assert_eq!(
            outside(100.0, 0.25, Some((98.0, None)), s.time_sd_pct),
            Some(false)
        );
        assert_eq!(outside(100.0, 0.25, None, s.time_sd_pct), None);
        assert_eq!(outside(100.0, 0.25, Some((98.0, None)), None), None);
    }

    #[test]
    fn a_file_that_is_not_answers_is_refused_with_where() {
        let e = parse(r#"{"source": "s", "answers": [{"entry": 3}]}"#).unwrap_err();
        assert!(e.contains("line 1 column"), "{e}");
        assert!(
            parse(r#"{"source": "s", "answers": [{"entry": "a", "time_error_pct": 1e999}]}"#)
                .is_err()
        );
        let ok = parse(r#"{"source": "s", "answers": [{"entry": "a", "time_error_pct": -1.5}]}"#)
            .unwrap();
        assert_eq!(ok.answers[0].energy_error_pct, None);
    }
}
