//! A span-based reader for one trace event object: it walks the object's keys once and
//! records where the values kc needs are, without building any value. Strings are
//! decoded only when used, and only strings with escapes or invalid UTF-8 are copied.
//! This is the ingest hot path: it replaces a generic deserializer, which spent most of
//! its time on values kc never reads.
//!
//! Invariant: [`read_event`] accepts exactly the objects whose keys are strings followed by
//! `:` and a value, separated by `,`; anything else is an error, and the caller then asks
//! serde_json for a precise message.

use std::borrow::Cow;

/// The event object is not well formed; the caller asks serde_json for the details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\r' | b'\t') {
        i += 1;
    }
    i
}

/// Walks `b[*j..limit]` a byte at a time, skipping strings and counting brackets of every
/// kind. Returns `Some(Some(end))` when `depth` reaches zero (`end` exclusive), `Some(None)`
/// when `limit` is reached first (with `*j` and `depth` ready to go on), and `None` when a
/// string does not end inside `b`. A string may run past `limit`; `*j` then lies beyond it.
#[inline]
fn walk_brackets(b: &[u8], j: &mut usize, limit: usize, depth: &mut u32) -> Option<Option<usize>> {
    while *j < limit {
        match b[*j] {
            b'"' => {
                *j = string_end(b, *j)?;
                continue;
            }
            b'{' | b'[' => *depth += 1,
            b'}' | b']' => {
                *depth -= 1;
                if *depth == 0 {
                    return Some(Some(*j + 1));
                }
            }
            _ => {}
        }
        *j += 1;
    }
    Some(None)
}

/// End (exclusive) of the string starting at `b[i] == '"'`. Most strings in a trace are
/// short keys and values, so a plain loop over the first bytes beats a vectorised search;
/// long ones (kernel names) switch to memchr.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let probe_end = (j + 24).min(b.len());
    while j < probe_end {
        match b[j] {
            b'"' => return Some(j + 1),
            b'\\' => break,
            _ => j += 1,
        }
    }
    loop {
        let k = memchr::memchr2(b'"', b'\\', &b[j..])?;
        j += k;
        if b[j] == b'\\' {
            j += 2;
            if j > b.len() {
                return None;
            }
        } else {
            return Some(j + 1);
        }
    }
}

/// End (exclusive) of a string whose opening quote came before `j` (j is inside it).
fn string_end_from(b: &[u8], j: usize) -> Option<usize> {
    let mut j = j;
    loop {
        let k = memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        j += k;
        if b[j] == b'\\' {
            j += 2;
        } else {
            return Some(j + 1);
        }
    }
}

/// End (exclusive) of the value starting at `b[i]`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            // Most nested values are short (grid, block, Input Dims): a byte loop over the
            // first 64 bytes ends them; longer ones continue in whole 64-byte blocks through
            // the splitter's classifier, and the tail byte by byte. All count every bracket
            // kind outside strings.
            let mut depth = 1u32;
            let mut j = i + 1;
            let quick_end = (i + 64).min(b.len());
            if let Some(end) = walk_brackets(b, &mut j, quick_end, &mut depth)? {
                return Some(end);
            }
            let (mut in_str, mut escaped_next) = (false, false);
            while j + 64 <= b.len() {
                if let Some(end) =
                    super::scan::block_end(b, &mut j, &mut depth, &mut in_str, &mut escaped_next)
                {
                    return Some(end);
                }
            }
            if escaped_next {
                j += 1;
            }
            if in_str {
                j = string_end_from(b, j)?;
            }
            walk_brackets(b, &mut j, b.len(), &mut depth)?
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// What a member callback did with a value.
pub enum Seen {
    /// Not read: the walker skips the value.
    Skip,
    /// Read in place by the callback, which returns the value's end offset in `b`.
    Consumed(usize),
}

/// Walks the object starting at `b[start]`, calling `f(key, value_start)` for every
/// member; returns the offset just past the closing brace. `key` is the raw key text
/// between its quotes.
pub fn walk<'a>(
    b: &'a [u8],
    start: usize,
    f: &mut impl FnMut(&'a [u8], usize) -> Result<Seen, Malformed>,
) -> Result<usize, Malformed> {
    let mut i = skip_ws(b, start);
    if b.get(i) != Some(&b'{') {
        return Err(Malformed);
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Ok(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return Err(Malformed);
        }
        let kend = string_end(b, i).ok_or(Malformed)?;
        let key = &b[i + 1..kend - 1];
        i = skip_ws(b, kend);
        if b.get(i) != Some(&b':') {
            return Err(Malformed);
        }
        i = skip_ws(b, i + 1);
        let vend = match f(key, i)? {
            Seen::Skip => value_end(b, i).ok_or(Malformed)?,
            Seen::Consumed(end) => end,
        };
        i = skip_ws(b, vend);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Ok(i + 1),
            _ => return Err(Malformed),
        }
    }
}

/// A JSON string value as text: borrowed when it has no escapes and is valid UTF-8.
/// Returns `None` for a value that is not a string; the flag is set when invalid UTF-8
/// was replaced.
pub fn string_value(raw: &[u8]) -> Option<(Cow<'_, str>, bool)> {
    if raw.len() < 2 || raw[0] != b'"' || raw[raw.len() - 1] != b'"' {
        return None;
    }
    let inner = &raw[1..raw.len() - 1];
    if memchr::memchr(b'\\', inner).is_none() {
        return Some(match std::str::from_utf8(inner) {
            Ok(s) => (Cow::Borrowed(s), false),
            Err(_) => (
                Cow::Owned(String::from_utf8_lossy(inner).into_owned()),
                true,
            ),
        });
    }
    match serde_json::from_slice::<String>(raw) {
        Ok(s) => Some((Cow::Owned(s), false)),
        Err(_) => {
            let lossy = String::from_utf8_lossy(raw).into_owned();
            serde_json::from_str::<String>(&lossy)
                .ok()
                .map(|s| (Cow::Owned(s), true))
        }
    }
}

/// The fields of an event kc reads, as raw value spans.
#[derive(Default)]
pub struct EventFields<'a> {
    pub ph: Option<&'a [u8]>,
    pub cat: Option<&'a [u8]>,
    pub name: Option<&'a [u8]>,
    pub pid: Option<&'a [u8]>,
    pub tid: Option<&'a [u8]>,
    pub ts: Option<&'a [u8]>,
    pub dur: Option<&'a [u8]>,
    /// The args object, read in the same walk; `args_raw` keeps its text for messages.
    pub args: Option<ArgFields<'a>>,
    pub args_raw: Option<&'a [u8]>,
    /// A field kc reads appeared twice (the last one is used).
    pub duplicate_key: bool,
    /// A key is not valid UTF-8 (so it cannot be the field it may have been meant as).
    pub bad_key: bool,
}

/// Whether a raw key is not valid UTF-8 (checked only when a non-ASCII byte is present).
fn key_is_bad_utf8(k: &[u8]) -> bool {
    !k.is_ascii() && std::str::from_utf8(k).is_err()
}

/// Reads an event and its `args` in one walk. A non-object `args` is kept raw in
/// `args_raw` with `args` unset, so the caller can name the problem.
pub fn read_event<'a>(b: &'a [u8]) -> Result<EventFields<'a>, Malformed> {
    let mut e = EventFields::default();
    let (mut dup, mut bad_key) = (false, false);
    let end = walk(b, 0, &mut |k, at| {
        let take = |slot: &mut Option<&'a [u8]>, dup: &mut bool| -> Result<Seen, Malformed> {
            let end = value_end(b, at).ok_or(Malformed)?;
            *dup |= slot.is_some();
            *slot = Some(&b[at..end]);
            Ok(Seen::Consumed(end))
        };
        match k {
            b"ph" => take(&mut e.ph, &mut dup),
            b"cat" => take(&mut e.cat, &mut dup),
            b"name" => take(&mut e.name, &mut dup),
            b"pid" => take(&mut e.pid, &mut dup),
            b"tid" => take(&mut e.tid, &mut dup),
            b"ts" => take(&mut e.ts, &mut dup),
            b"dur" => take(&mut e.dur, &mut dup),
            b"args" if b[at] == b'{' => {
                let (a, end) = read_args_at(b, at)?;
                dup |= e.args.is_some();
                e.args = Some(a);
                e.args_raw = Some(&b[at..end]);
                Ok(Seen::Consumed(end))
            }
            b"args" => take(&mut e.args_raw, &mut dup),
            _ => {
                bad_key |= key_is_bad_utf8(k);
                Ok(Seen::Skip)
            }
        }
    })?;
    e.duplicate_key = dup;
    e.bad_key = bad_key || e.args.as_ref().is_some_and(|a| a.bad_key);
    if skip_ws(b, end) != b.len() {
        return Err(Malformed);
    }
    Ok(e)
}

/// The `args` members kc reads.
#[derive(Default)]
pub struct ArgFields<'a> {
    pub external_id: Option<&'a [u8]>,
    pub correlation: Option<&'a [u8]>,
    pub device: Option<&'a [u8]>,
    pub stream: Option<&'a [u8]>,
    pub bytes: Option<&'a [u8]>,
    pub size: Option<&'a [u8]>,
    pub kind: Option<&'a [u8]>,
    pub grid: Option<&'a [u8]>,
    pub block: Option<&'a [u8]>,
    pub registers: Option<&'a [u8]>,
    pub shared_memory: Option<&'a [u8]>,
    pub input_dims: Option<&'a [u8]>,
    pub input_strides: Option<&'a [u8]>,
    pub input_type: Option<&'a [u8]>,
    pub concrete_inputs: Option<&'a [u8]>,
    pub record_function_id: Option<&'a [u8]>,
    pub sequence_number: Option<&'a [u8]>,
    pub wait_on_stream: Option<&'a [u8]>,
    pub wait_on_cuda_event_record_corr_id: Option<&'a [u8]>,
    pub cuda_sync_kind: Option<&'a [u8]>,
    pub collective_name: Option<&'a [u8]>,
    pub dtype: Option<&'a [u8]>,
    pub in_nelems: Option<&'a [u8]>,
    pub out_nelems: Option<&'a [u8]>,
    pub group_size: Option<&'a [u8]>,
    pub process_group: Option<&'a [u8]>,
    /// A compiled kernel's launch (torch.compile's Triton kernels).
    pub kernel_backend: Option<&'a [u8]>,
    pub kernel_file: Option<&'a [u8]>,
    pub num_warps: Option<&'a [u8]>,
    pub num_stages: Option<&'a [u8]>,
    pub kernel_kwargs: Option<&'a [u8]>,
    /// A key that is not valid UTF-8.
    pub bad_key: bool,
}

fn read_args_at(b: &[u8], start: usize) -> Result<(ArgFields<'_>, usize), Malformed> {
    let mut a = ArgFields::default();
    let end = walk(b, start, &mut |k, at| {
        let slot = match k {
            b"External id" | b"external id" => &mut a.external_id,
            b"correlation" => &mut a.correlation,
            b"device" => &mut a.device,
            b"stream" => &mut a.stream,
            b"bytes" => &mut a.bytes,
            b"size" => &mut a.size,
            b"kind" => &mut a.kind,
            b"grid" => &mut a.grid,
            b"block" => &mut a.block,
            b"registers per thread" => &mut a.registers,
            b"shared memory" => &mut a.shared_memory,
            b"Input Dims" | b"Input dims" => &mut a.input_dims,
            b"Input Strides" => &mut a.input_strides,
            b"Input type" => &mut a.input_type,
            b"Concrete Inputs" => &mut a.concrete_inputs,
            b"Record function id" => &mut a.record_function_id,
            b"Sequence number" => &mut a.sequence_number,
            b"wait_on_stream" => &mut a.wait_on_stream,
            b"wait_on_cuda_event_record_corr_id" => &mut a.wait_on_cuda_event_record_corr_id,
            b"cuda_sync_kind" => &mut a.cuda_sync_kind,
            b"Collective name" => &mut a.collective_name,
            b"dtype" => &mut a.dtype,
            b"In msg nelems" => &mut a.in_nelems,
            b"Out msg nelems" => &mut a.out_nelems,
            b"Group size" => &mut a.group_size,
            b"Process Group Name" => &mut a.process_group,
            b"kernel_backend" => &mut a.kernel_backend,
            b"kernel_file" => &mut a.kernel_file,
            b"num_warps" => &mut a.num_warps,
            b"num_stages" => &mut a.num_stages,
            b"kernel_kwargs" => &mut a.kernel_kwargs,
            _ => {
                a.bad_key |= key_is_bad_utf8(k);
                return Ok(Seen::Skip);
            }
        };
        let end = value_end(b, at).ok_or(Malformed)?;
        *slot = Some(&b[at..end]);
        Ok(Seen::Consumed(end))
    })?;
    Ok((a, end))
}

/// Reads an `args` object on its own.
pub fn read_args(b: &[u8]) -> Result<ArgFields<'_>, Malformed> {
    let (a, end) = read_args_at(b, 0)?;
    if skip_ws(b, end) != b.len() {
        return Err(Malformed);
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_members_and_skips_the_rest() {
        let ev = br#"{"ph": "X", "cat": "kernel", "name": "a\"b", "x": [1, {"y": "}"}], "ts": 12.5, "args": {"External id": 4, "grid": [8, 1, 1]}}"#;
        let e = read_event(ev).unwrap();
        assert_eq!(e.ph, Some(&br#""X""#[..]));
        assert_eq!(e.ts, Some(&b"12.5"[..]));
        assert_eq!(string_value(e.name.unwrap()).unwrap().0, "a\"b");
        let a = e.args.unwrap();
        assert_eq!(a.external_id, Some(&b"4"[..]));
        assert_eq!(read_args(e.args_raw.unwrap()).unwrap().correlation, None);
        assert_eq!(a.grid, Some(&b"[8, 1, 1]"[..]));
    }

    #[test]
    fn malformed_objects_are_errors() {
        for bad in [
            &b"{\"a\" 1}"[..],
            b"{\"a\": }",
            b"[1]",
            b"{\"a\": 1,}",
            b"{a: 1}",
            b"{\"a\": 1",
        ] {
            assert!(read_event(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert!(read_event(b"{}").is_ok());
        assert!(read_event(b"{\"args\": 5}").unwrap().args.is_none());
        assert!(read_event(b"{\"args\": {\"a\": 1} x}").is_err());
    }

    #[test]
    fn invalid_utf8_is_replaced_and_flagged() {
        let (s, replaced) = string_value(b"\"k\xff\"").unwrap();
        assert!(replaced);
        assert_eq!(s, "k\u{fffd}");
        assert!(string_value(b"12").is_none());
    }
}
