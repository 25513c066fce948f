//! Prints the round's entries of a plan (step, unit, counted or lead-in), one per line.
fn main() {
    let p = kc_core::plan::read(std::path::Path::new(&std::env::args().nth(1).unwrap())).unwrap();
    let e = kc_core::plan::schedule::round_order(&p, 0, |s| p.units[s.unit as usize].tier != kc_core::plan::types::PlanTier::NotReplayable, 1, kc_core::plan::schedule::RoundAt::First);
    for x in e.iter() {
        let u = &p.units[x.unit as usize];
        println!("{} {} {} {}", if x.counted {"C"} else {"L"}, x.step, x.unit, u.label);
    }
}
