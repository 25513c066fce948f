//! Small helpers for messages in the user's words: counts with the right plural, so output
//! never reads "1 units" or "unit(s)".

/// `1 unit`, `2 units`, `0 units`.
pub fn count(n: impl Into<u64>, word: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn plurals() {
        assert_eq!(super::count(1u32, "unit"), "1 unit");
        assert_eq!(super::count(0u32, "unit"), "0 units");
        assert_eq!(super::count(44u64, "step"), "44 steps");
    }
}
