//! Exact number handling for trace fields. Chrome-trace timestamps are microseconds written
//! as integers or decimals ("4410133507600.595"); kc turns the text itself into integer
//! nanoseconds, so absolute times of 10^15 µs and more never pass through lossy f64
//! arithmetic. Ids may be integers beyond i64, numbers written as strings, or hex strings.

/// Microseconds as JSON number text to integer nanoseconds, rounding half away from zero
/// below the nanosecond. Returns `None` for text that is not a number.
pub fn us_text_to_ns(text: &[u8]) -> Option<i64> {
    let text = trim_quotes(text);
    let (neg, digits) = match text.first()? {
        b'-' => (true, &text[1..]),
        _ => (false, text),
    };
    if digits.iter().any(|b| matches!(b, b'e' | b'E')) {
        let s = std::str::from_utf8(text).ok()?;
        let v: f64 = s.parse().ok()?;
        return v.is_finite().then(|| (v * 1000.0).round() as i64);
    }
    let (int_part, frac_part) = match memchr::memchr(b'.', digits) {
        Some(i) => (&digits[..i], &digits[i + 1..]),
        None => (digits, &digits[..0]),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut ns: i64 = 0;
    for &b in int_part {
        if !b.is_ascii_digit() {
            return None;
        }
        ns = ns.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
    }
    ns = ns.checked_mul(1000)?;
    let mut scale = 100;
    for (i, &b) in frac_part.iter().enumerate() {
        if !b.is_ascii_digit() {
            return None;
        }
        if i < 3 {
            ns += i64::from(b - b'0') * scale;
            scale /= 10;
        } else {
            if i == 3 && b >= b'5' {
                ns += 1;
            }
            if i >= 3 {
                // The remaining digits only decide the rounding done above.
                continue;
            }
        }
    }
    Some(if neg { -ns } else { ns })
}

fn trim_quotes(text: &[u8]) -> &[u8] {
    if text.len() >= 2 && text[0] == b'"' && text[text.len() - 1] == b'"' {
        &text[1..text.len() - 1]
    } else {
        text
    }
}

/// An unsigned integer from number text, a quoted decimal or a quoted hex string.
/// Negative values and non-integers give `None`.
pub fn u64_of(text: &[u8]) -> Option<u64> {
    let t = trim_quotes(text);
    // Plain decimal digits, the common case, without going through `str`.
    if !t.is_empty() && t.len() <= 19 && t.iter().all(u8::is_ascii_digit) {
        return Some(t.iter().fold(0u64, |v, &b| v * 10 + u64::from(b - b'0')));
    }
    if let Some(hex) = t.strip_prefix(b"0x") {
        return u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok();
    }
    let s = std::str::from_utf8(t).ok()?;
    if let Ok(v) = s.parse::<u64>() {
        return Some(v);
    }
    // Integral floats such as "7.0" occur in some exporters.
    let f: f64 = s.parse().ok()?;
    (f >= 0.0 && f.fract() == 0.0 && f < 1.9e19).then_some(f as u64)
}

/// A signed integer, for fields where -1 means "none".
pub fn i64_of(text: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(trim_quotes(text)).ok()?;
    s.parse::<i64>().ok().or_else(|| {
        s.parse::<f64>()
            .ok()
            .filter(|f| f.fract() == 0.0)
            .map(|f| f as i64)
    })
}

/// A pid/tid: an integer, or a string such as "stream 7" (legacy traces) whose trailing
/// number is used, or any other string, hashed stably (FNV-1a) into the upper half of u64.
pub fn thread_id_of(text: &[u8]) -> u64 {
    if let Some(v) = u64_of(text) {
        return v;
    }
    if let Some(v) = i64_of(text) {
        return v as u64;
    }
    let t = trim_quotes(text);
    let tail: Vec<u8> = t
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .copied()
        .collect();
    if !tail.is_empty() && tail.len() < t.len() && t[t.len() - tail.len() - 1] == b' ' {
        let digits: Vec<u8> = tail.into_iter().rev().collect();
        if let Some(v) = std::str::from_utf8(&digits)
            .ok()
            .and_then(|s| s.parse().ok())
        {
            return v;
        }
    }
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in t {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h | (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_exact() {
        assert_eq!(
            us_text_to_ns(b"4410133507600.595"),
            Some(4_410_133_507_600_595)
        );
        assert_eq!(
            us_text_to_ns(b"1665536373729077"),
            Some(1_665_536_373_729_077_000)
        );
        assert_eq!(us_text_to_ns(b"0.8"), Some(800));
        assert_eq!(us_text_to_ns(b"12.3456"), Some(12_346));
        assert_eq!(us_text_to_ns(b"12.3454"), Some(12_345));
        assert_eq!(us_text_to_ns(b"-3.5"), Some(-3_500));
        assert_eq!(us_text_to_ns(b"1.5e3"), Some(1_500_000));
        assert_eq!(us_text_to_ns(b"\"12\""), Some(12_000));
        assert_eq!(us_text_to_ns(b"abc"), None);
        assert_eq!(us_text_to_ns(b"99999999999999999999"), None);
    }

    #[test]
    fn ids_in_every_spelling() {
        assert_eq!(
            u64_of(b"10159970886766084423"),
            Some(10_159_970_886_766_084_423)
        );
        assert_eq!(u64_of(b"\"0x10\""), Some(16));
        assert_eq!(u64_of(b"-1"), None);
        assert_eq!(i64_of(b"-1"), Some(-1));
        assert_eq!(thread_id_of(b"\"stream 7\""), 7);
        assert_eq!(thread_id_of(b"\"1890023232\""), 1_890_023_232);
        assert!(thread_id_of(b"\"PyTorch Profiler\"") >= 1 << 63);
    }
}
