//! What each kind of unit costs inside the model's program against its units alone
//! (`--kinds-left-out`, a diagnostic the prediction does not take): from the program
//! measured whole at the start and the end of the diagnostic and, for each kind, without
//! it and with it doubled ([`crate::results::KindsLeftOut`]), a kind's cost in the
//! program is the whole less the program without it, and a second run's cost the doubled
//! program less the whole; the whole is taken at each program's turn, linearly between
//! its two measurements by the order the programs ran, so that the chip's drift over the
//! diagnostic is not taken for a kind's cost. Beside them stand Σ time × invocations and
//! Σ energy × invocations of the kind's units alone, the plain sum's own figures.
//!
//! Invariant: every figure is per replay (one launch of the program runs one replay's
//! steps), read from the results or derived by the formula its field names; a kind's
//! uncertainty is its two measurements' standard errors combined.

use super::model::pct;
use crate::results::{KindsLeftOut, ProgramMeasure, UnitResult};
use serde::Serialize;

/// The program whole and what each kind of unit costs in it, per replay.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct KindsInProgram {
    /// The program's steps, and its time (us) and energy (J) per launch at the start and
    /// at the end of the diagnostic.
    pub steps: u32,
    pub whole_first_us: f64,
    pub whole_last_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole_first_j: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole_last_j: Option<f64>,
    /// The windows' mean end temperatures of the first and the last whole program, °C.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole_temperature_c: Option<[f64; 2]>,
    /// The whole: the mean of its two measurements, us and J.
    pub whole_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole_j: Option<f64>,
    /// Σ over every unit measured alone of time × invocations (us) and of energy ×
    /// invocations (J, where every unit's energy was measured), and each against the
    /// whole, percent.
    pub alone_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_j: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_vs_whole_time_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_vs_whole_energy_pct: Option<f64>,
    pub kinds: Vec<KindCost>,
    /// Σ over the kinds of a second run's cost (where every kind was doubled), us and J;
    /// Σ alone against it, and it against the whole, percent. Where the second runs sum
    /// to the whole, a kernel's second run costs what the program draws for it; where they
    /// do not, doubling a kind changed what the rest of the program draws (a kind that
    /// lengthens the program by half, GPT-2's LM head, session 28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_runs_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_runs_j: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_vs_second_runs_time_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_vs_second_runs_energy_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_runs_vs_whole_time_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_runs_vs_whole_energy_pct: Option<f64>,
    /// The program whole (the mean of its two measurements) less the sum of the kinds'
    /// costs: what the kinds cost together beyond their costs one at a time (a kind left
    /// out also changes what its neighbours find in L2), us and J.
    pub interaction_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interaction_j: Option<f64>,
    /// Windows of any program held down by the power cap.
    pub capped_windows: usize,
}

/// One kind: its units alone and its cost in the program, per replay.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct KindCost {
    pub kind: String,
    pub units: usize,
    pub invocations: u64,
    /// Σ time × invocations of its units alone, us, and Σ energy × invocations, J (where
    /// each of its units' energy was measured).
    pub alone_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_j: Option<f64>,
    /// The program whole less the program without the kind, us and J, each with its
    /// standard error.
    pub in_program_us: f64,
    pub in_program_sem_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_program_j: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_program_sem_j: Option<f64>,
    /// The program with the kind doubled less the whole: a second run of each of its
    /// steps right after the first, us and J, with their standard errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_run_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_run_sem_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_run_j: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_run_sem_j: Option<f64>,
    /// The units alone against their cost in the program, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_vs_program_time_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_vs_program_energy_pct: Option<f64>,
    /// The units alone against a second run of them in the program, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_vs_second_time_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_vs_second_energy_pct: Option<f64>,
    /// Its steps every program ran once, its own left out or doubled too (they write
    /// integer or boolean data in place or lead to indices another step reads): neither
    /// of its costs holds them.
    pub doubled_once: u32,
}

/// `k`'s figures beside the units alone `units`.
pub fn kinds_in_program(k: &KindsLeftOut, units: &[UnitResult]) -> KindsInProgram {
    // The order measured: the whole, each kind without it and doubled, the whole
    // (without doubled programs, before session 26's second call: each kind without it).
    let per_kind = if k.kinds.iter().all(|x| x.doubled.is_some()) {
        2
    } else {
        1
    };
    let last = (per_kind * k.kinds.len() + 1) as f64;
    // The whole at place `p` of that order, linear between its two measurements, and the
    // standard error of their mean.
    let at = |p: usize, f: &dyn Fn(&ProgramMeasure) -> Option<f64>| {
        let (a, b) = (f(&k.whole_first)?, f(&k.whole_last)?);
        Some(a + (b - a) * p as f64 / last)
    };
    let whole_sem = |f: &dyn Fn(&ProgramMeasure) -> Option<f64>| {
        Some(f(&k.whole_first)?.hypot(f(&k.whole_last)?) / 2.0)
    };
    let sum_of = |ids: &[u32], f: &dyn Fn(&UnitResult) -> Option<f64>| {
        let v: Vec<Option<f64>> = units
            .iter()
            .filter(|u| ids.contains(&u.id))
            .map(f)
            .collect();
        v.iter()
            .all(Option::is_some)
            .then(|| v.iter().flatten().sum::<f64>())
    };
    let t = |m: &ProgramMeasure| Some(m.time_us);
    let t_sem = |m: &ProgramMeasure| Some(m.time_sem_us);
    let e = |m: &ProgramMeasure| m.energy_j;
    let e_sem = |m: &ProgramMeasure| m.energy_sem_j;
    // `m`'s difference from the whole at place `p` (whole − m, or m − whole with
    // `added`), and its standard error, in time and in energy.
    let diff = |m: &ProgramMeasure, p: usize, added: bool| {
        let sign = if added { -1.0 } else { 1.0 };
        let us = sign * (at(p, &t).unwrap_or(0.0) - m.time_us);
        let sem_us = whole_sem(&t_sem).unwrap_or(0.0).hypot(m.time_sem_us);
        let j = at(p, &e).zip(m.energy_j).map(|(a, b)| sign * (a - b));
        let sem_j = whole_sem(&e_sem)
            .zip(m.energy_sem_j)
            .map(|(a, b)| a.hypot(b));
        (us, sem_us, j, sem_j)
    };
    let kinds: Vec<KindCost> = k
        .kinds
        .iter()
        .enumerate()
        .map(|(i, kind)| {
            let ours: Vec<&UnitResult> = units
                .iter()
                .filter(|u| kind.units.contains(&u.id))
                .collect();
            let alone_us = sum_of(&kind.units, &|u| u.predicted_us).unwrap_or(0.0);
            let alone_j = sum_of(&kind.units, &|u| u.predicted_energy_j);
            let (in_us, in_sem_us, in_j, in_sem_j) = diff(&kind.without, 1 + per_kind * i, false);
            let second = kind
                .doubled
                .as_ref()
                .map(|d| diff(d, 2 + per_kind * i, true));
            let second_us = second.map(|d| d.0);
            let second_j = second.and_then(|d| d.2);
            KindCost {
                kind: kind.kind.clone(),
                units: ours.len(),
                invocations: ours.iter().map(|u| u.invocations).sum(),
                alone_us,
                alone_j,
                in_program_us: in_us,
                in_program_sem_us: in_sem_us,
                in_program_j: in_j,
                in_program_sem_j: in_sem_j,
                second_run_us: second_us,
                second_run_sem_us: second.map(|d| d.1),
                second_run_j: second_j,
                second_run_sem_j: second.and_then(|d| d.3),
                alone_vs_program_time_pct: pct(alone_us, in_us),
                alone_vs_program_energy_pct: alone_j.zip(in_j).and_then(|(a, b)| pct(a, b)),
                alone_vs_second_time_pct: second_us.and_then(|s| pct(alone_us, s)),
                alone_vs_second_energy_pct: alone_j.zip(second_j).and_then(|(a, b)| pct(a, b)),
                doubled_once: kind.doubled_once,
            }
        })
        .collect();
    let mean = |f: &dyn Fn(&ProgramMeasure) -> Option<f64>| {
        Some((f(&k.whole_first)? + f(&k.whole_last)?) / 2.0)
    };
    let ids: Vec<u32> = k
        .kinds
        .iter()
        .flat_map(|x| x.units.iter().copied())
        .collect();
    let whole_us = mean(&t).unwrap_or(0.0);
    let whole_j = mean(&e);
    let alone_us = sum_of(&ids, &|u| u.predicted_us).unwrap_or(0.0);
    let alone_j = sum_of(&ids, &|u| u.predicted_energy_j);
    let interaction_j = kinds
        .iter()
        .map(|c| c.in_program_j)
        .sum::<Option<f64>>()
        .zip(whole_j)
        .map(|(s, w)| w - s);
    let second_runs_us: Option<f64> = kinds.iter().map(|c| c.second_run_us).sum();
    let second_runs_j: Option<f64> = kinds.iter().map(|c| c.second_run_j).sum();
    KindsInProgram {
        steps: k.whole_first.steps,
        whole_first_us: k.whole_first.time_us,
        whole_last_us: k.whole_last.time_us,
        whole_first_j: k.whole_first.energy_j,
        whole_last_j: k.whole_last.energy_j,
        whole_temperature_c: k
            .whole_first
            .temperature_c
            .zip(k.whole_last.temperature_c)
            .map(|(a, b)| [a, b]),
        whole_us,
        whole_j,
        alone_us,
        alone_j,
        alone_vs_whole_time_pct: pct(alone_us, whole_us),
        alone_vs_whole_energy_pct: alone_j.zip(whole_j).and_then(|(a, w)| pct(a, w)),
        interaction_us: whole_us - kinds.iter().map(|c| c.in_program_us).sum::<f64>(),
        interaction_j,
        second_runs_us,
        second_runs_j,
        alone_vs_second_runs_time_pct: second_runs_us.and_then(|s| pct(alone_us, s)),
        alone_vs_second_runs_energy_pct: alone_j.zip(second_runs_j).and_then(|(a, s)| pct(a, s)),
        second_runs_vs_whole_time_pct: second_runs_us.and_then(|s| pct(s, whole_us)),
        second_runs_vs_whole_energy_pct: second_runs_j.zip(whole_j).and_then(|(s, w)| pct(s, w)),
        kinds,
        capped_windows: k.whole_first.capped_windows
            + k.whole_last.capped_windows
            + k.kinds
                .iter()
                .map(|x| x.without.capped_windows)
                .sum::<usize>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::KindLeftOut;

    fn program(steps: u32, us: f64, j: f64) -> ProgramMeasure {
        ProgramMeasure {
            steps,
            time_us: us,
            time_sem_us: 1.0,
            energy_j: Some(j),
            energy_sem_j: Some(0.01),
            capped_windows: 0,
            temperature_c: Some(50.0),
            windows: 2,
        }
    }

    fn unit(id: u32, n: u64, us: f64, j: f64) -> UnitResult {
        UnitResult {
            id,
            status: "ok".into(),
            invocations: n,
            predicted_us: Some(us),
            predicted_energy_j: Some(j),
            ..Default::default()
        }
    }

    #[test]
    fn a_kind_costs_the_whole_less_the_program_without_it_the_whole_taken_at_its_turn() {
        // The whole drifts from 1000 to 1050 us and 10.0 to 10.5 J over the diagnostic;
        // two kinds were measured between, each left out then doubled, at places 1-4 of
        // 5.
        let k = KindsLeftOut {
            whole_first: program(10, 1000.0, 10.0),
            whole_last: program(10, 1050.0, 10.5),
            kinds: vec![
                KindLeftOut {
                    kind: "conv".into(),
                    units: vec![0, 1],
                    without: program(4, 410.0, 4.1),
                    doubled: Some(program(16, 1606.0, 16.1)),
                    doubled_once: 0,
                },
                KindLeftOut {
                    kind: "bn".into(),
                    units: vec![2],
                    without: program(6, 620.0, 6.0),
                    doubled: Some(program(14, 1424.0, 14.4)),
                    doubled_once: 1,
                },
            ],
        };
        let units = [
            unit(0, 3, 400.0, 4.4),
            unit(1, 3, 250.0, 2.2),
            unit(2, 4, 420.0, 4.4),
        ];
        let r = kinds_in_program(&k, &units);
        let conv = &r.kinds[0];
        assert!((conv.in_program_us - (1010.0 - 410.0)).abs() < 1e-9);
        assert!((conv.in_program_j.unwrap() - (10.1 - 4.1)).abs() < 1e-9);
        assert!((conv.second_run_us.unwrap() - (1606.0 - 1020.0)).abs() < 1e-9);
        assert!((conv.second_run_j.unwrap() - (16.1 - 10.2)).abs() < 1e-9);
        assert!(
            (conv.alone_vs_second_energy_pct.unwrap() - 100.0 * (6.6 / 5.9 - 1.0)).abs() < 1e-9
        );
        assert!((conv.alone_us - 650.0).abs() < 1e-9);
        assert!((conv.alone_j.unwrap() - 6.6).abs() < 1e-9);
        assert!((conv.alone_vs_program_energy_pct.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!((conv.units, conv.invocations), (2, 6));
        let bn = &r.kinds[1];
        assert_eq!(bn.doubled_once, 1);
        assert!((bn.in_program_us - (1030.0 - 620.0)).abs() < 1e-9);
        assert!((bn.in_program_j.unwrap() - (10.3 - 6.0)).abs() < 1e-9);
        assert!(
            (bn.alone_vs_program_time_pct.unwrap() - 100.0 * (420.0 / 410.0 - 1.0)).abs() < 1e-9
        );
        assert!((bn.second_run_us.unwrap() - (1424.0 - 1040.0)).abs() < 1e-9);
        assert!((bn.second_run_sem_us.unwrap() - (0.5f64.hypot(0.5)).hypot(1.0)).abs() < 1e-12);
        // The two measurements of the whole, each ± 0.01 J, and the program without.
        let sem = (0.01f64.hypot(0.01) / 2.0).hypot(0.01);
        assert!((bn.in_program_sem_j.unwrap() - sem).abs() < 1e-12);
        // The whole's mean less the kinds' costs.
        assert!((r.interaction_us - (1025.0 - 600.0 - 410.0)).abs() < 1e-9);
        assert!((r.interaction_j.unwrap() - (10.25 - 6.0 - 4.3)).abs() < 1e-9);
        assert!((r.alone_j.unwrap() - 11.0).abs() < 1e-9);
        assert!((r.whole_j.unwrap() - 10.25).abs() < 1e-9);
        assert!((r.alone_vs_whole_energy_pct.unwrap() - 100.0 * (11.0 / 10.25 - 1.0)).abs() < 1e-9);
        assert_eq!(r.whole_temperature_c, Some([50.0, 50.0]));
        // The second runs together: conv 1606 − 1020 and bn 1424 − 1040 us, 16.1 − 10.2
        // and 14.4 − 10.4 J, against Σ alone and the whole.
        let (s_us, s_j) = (586.0 + 384.0, 5.9 + 4.0);
        assert!((r.second_runs_us.unwrap() - s_us).abs() < 1e-9);
        assert!((r.second_runs_j.unwrap() - s_j).abs() < 1e-9);
        assert!(
            (r.alone_vs_second_runs_time_pct.unwrap() - 100.0 * (1070.0 / s_us - 1.0)).abs() < 1e-9
        );
        assert!(
            (r.alone_vs_second_runs_energy_pct.unwrap() - 100.0 * (11.0 / s_j - 1.0)).abs() < 1e-9
        );
        assert!(
            (r.second_runs_vs_whole_time_pct.unwrap() - 100.0 * (s_us / 1025.0 - 1.0)).abs() < 1e-9
        );
        assert!(
            (r.second_runs_vs_whole_energy_pct.unwrap() - 100.0 * (s_j / 10.25 - 1.0)).abs() < 1e-9
        );
        // Without doubled programs the kinds were measured at places 1-2 of 3.
        let mut old = k.clone();
        for x in &mut old.kinds {
            x.doubled = None;
        }
        let r_old = kinds_in_program(&old, &units);
        assert!(
            (r_old.kinds[1].in_program_j.unwrap() - (10.0 + 0.5 * 2.0 / 3.0 - 6.0)).abs() < 1e-9
        );
        assert_eq!(r_old.kinds[0].second_run_j, None);
        assert_eq!(
            (r_old.second_runs_us, r_old.second_runs_vs_whole_energy_pct),
            (None, None)
        );
        // A unit without energy leaves its kind's energy unsummed.
        let mut no_energy = units.clone();
        no_energy[2].predicted_energy_j = None;
        let r = kinds_in_program(&k, &no_energy);
        assert_eq!(r.kinds[1].alone_j, None);
        assert_eq!(r.kinds[1].alone_vs_program_energy_pct, None);
        assert_eq!(r.alone_j, None);
    }
}
