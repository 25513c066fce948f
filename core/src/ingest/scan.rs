//! A streaming splitter for Chrome-trace JSON: it reads the top-level object (or bare
//! array) in bounded chunks and hands out each element of `traceEvents` as a byte slice
//! with its absolute byte offset, keeping the other top-level keys as raw JSON. Memory use
//! is the chunk size plus the largest single event, never the file size.
//!
//! Invariant: a slice handed out is exactly one complete JSON value as it appears in the
//! file; structural errors (truncation, a missing comma, `traceEvents` not an array) are
//! reported with the byte offset where they were found.

use std::io::{self, Read};

const CHUNK: usize = 4 << 20;

/// The largest single event (or kept top-level value) kc reads: Kineto events are a few
/// hundred bytes, the largest seen in real traces (graph launches, long `Concrete Inputs`)
/// some kilobytes. A larger one is refused with its offset rather than buffered, so memory
/// stays bounded whatever the input holds.
pub const MAX_VALUE_BYTES: usize = 64 << 20;

/// Top-level keys whose values ingest reads; every other key's value is skipped as it
/// streams past, without being copied, however large it is.
pub const KEPT_HEADER_KEYS: &[&str] = &[
    "baseTimeNanoseconds",
    "distributedInfo",
    "cuda_runtime_version",
    "cuda_driver_version",
    "deviceProperties",
];

/// A structural problem in the file, with the byte offset it was found at.
#[derive(Debug)]
pub enum ScanError {
    Io(io::Error),
    /// The file ended inside a value or before the closing bracket.
    Truncated {
        offset: u64,
        context: &'static str,
    },
    /// A byte that cannot start or continue the expected structure.
    Unexpected {
        offset: u64,
        found: u8,
        expected: &'static str,
    },
    /// The input is a known kind of file that is not JSON (a kc plan or graph, a tar
    /// archive).
    NotATrace {
        what: &'static str,
    },
    /// `traceEvents` holds something other than an array.
    EventsNotArray {
        offset: u64,
    },
    /// One event or kept value is larger than [`MAX_VALUE_BYTES`].
    TooLarge {
        offset: u64,
        context: &'static str,
    },
    Empty,
}

impl From<io::Error> for ScanError {
    fn from(e: io::Error) -> Self {
        ScanError::Io(e)
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum State {
    Start,
    ObjectKey { first: bool },
    Events { first: bool, bare: bool },
    Done,
}

/// One element of `traceEvents`: its bytes, absolute offset and position in the array.
pub struct RawEventSlice<'a> {
    pub bytes: &'a [u8],
    /// Position of the event in the scanner's storage (its file offset when mapped).
    pub start: usize,
    pub offset: u64,
    pub index: u64,
}

/// Where the scanner's bytes live: a buffer it refills from a reader, or the whole input
/// mapped into memory, where events are handed out in place without being copied.
pub enum Storage {
    Owned(Vec<u8>),
    Mapped(std::sync::Arc<memmap2::Mmap>),
}

impl std::ops::Deref for Storage {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Storage::Owned(v) => v,
            Storage::Mapped(m) => m,
        }
    }
}

pub struct EventScanner<R: Read> {
    reader: R,
    buf: Storage,
    pos: usize,
    len: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    state: State,
    next_index: u64,
    saw_events: bool,
    /// `traceEvents` appeared more than once (every array is read).
    pub repeated_events_key: bool,
    /// Top-level keys other than `traceEvents`, as raw JSON text.
    pub header: Vec<(String, Vec<u8>)>,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

impl<R: Read> EventScanner<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            buf: Storage::Owned(vec![0; CHUNK]),
            pos: 0,
            len: 0,
            base: 0,
            eof: false,
            state: State::Start,
            next_index: 0,
            saw_events: false,
            repeated_events_key: false,
            header: Vec::new(),
        }
    }

    /// A scanner over a whole mapped file: nothing is read or copied; events are slices of
    /// the mapping at the positions `RawEventSlice::start` gives.
    pub fn mapped(map: std::sync::Arc<memmap2::Mmap>, reader: R) -> Self {
        let len = map.len();
        Self {
            reader,
            buf: Storage::Mapped(map),
            pos: 0,
            len,
            base: 0,
            eof: true,
            state: State::Start,
            next_index: 0,
            saw_events: false,
            repeated_events_key: false,
            header: Vec::new(),
        }
    }

    /// Bytes scanned so far (the file offset of the scan position).
    pub fn position(&self) -> u64 {
        self.offset()
    }

    /// Whether a `traceEvents` array (or a bare top-level array) was found.
    pub fn saw_events(&self) -> bool {
        self.saw_events
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Moves unread bytes to the front and reads more. Returns false at end of input.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        let Storage::Owned(buf) = &mut self.buf else {
            self.eof = true;
            return Ok(false);
        };
        if self.pos > 0 {
            buf.copy_within(self.pos..self.len, 0);
            self.base += self.pos as u64;
            self.len -= self.pos;
            self.pos = 0;
        }
        if self.len == buf.len() {
            // One value is larger than the buffer: grow it.
            let new_len = buf.len() * 2;
            buf.resize(new_len, 0);
        }
        loop {
            match self.reader.read(&mut buf[self.len..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.len += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The next non-whitespace byte, not consumed; `None` at end of input.
    fn peek_non_ws(&mut self) -> io::Result<Option<u8>> {
        loop {
            while self.pos < self.len {
                let b = self.buf[self.pos];
                if !is_ws(b) {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Length of the JSON value starting at `pos`, reading more input as needed. With
    /// `keep`, the value stays whole in the buffer (and may be at most [`MAX_VALUE_BYTES`]);
    /// without, the bytes scanned are dropped at every refill, so a value of any size is
    /// skipped in bounded memory and the length returned counts from the advanced `pos`.
    fn value_len(&mut self, context: &'static str, keep: bool) -> Result<usize, ScanError> {
        let start_offset = self.offset();
        let too_large = ScanError::TooLarge {
            offset: start_offset,
            context,
        };
        let truncated = ScanError::Truncated {
            offset: start_offset,
            context,
        };
        if self.pos >= self.len && !self.fill()? {
            return Err(truncated);
        }
        let first = self.buf[self.pos];
        let mut rel = 1usize;
        match first {
            b'{' | b'[' => {
                let mut depth = 1u32;
                let mut in_str = false;
                // The character at the scan position is escaped (a block ended on an
                // unescaped backslash inside a string).
                let mut escaped_next = false;
                loop {
                    let mut i = self.pos + rel;
                    let len = self.len;
                    let buf = &self.buf[..len];
                    // Whole 64-byte blocks first: classify every byte at once and only
                    // visit the brackets outside strings.
                    while i + 64 <= len {
                        if let Some(end) =
                            block_end(buf, &mut i, &mut depth, &mut in_str, &mut escaped_next)
                        {
                            return Ok(end - self.pos);
                        }
                    }
                    if escaped_next && i < len {
                        i += 1;
                        escaped_next = false;
                    }
                    while i < len && !escaped_next {
                        if in_str {
                            match memchr::memchr2(b'"', b'\\', &buf[i..]) {
                                Some(k) => {
                                    i += k;
                                    if buf[i] == b'\\' {
                                        if i + 1 >= len {
                                            break;
                                        }
                                        i += 2;
                                    } else {
                                        in_str = false;
                                        i += 1;
                                    }
                                }
                                None => i = len,
                            }
                        } else {
                            let b = buf[i];
                            i += 1;
                            match b {
                                b'"' => in_str = true,
                                b'{' | b'[' => depth += 1,
                                b'}' | b']' => {
                                    depth -= 1;
                                    if depth == 0 {
                                        return Ok(i - self.pos);
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    rel = i - self.pos;
                    if keep && rel > MAX_VALUE_BYTES {
                        return Err(too_large);
                    }
                    if !keep {
                        self.pos = i;
                        rel = 0;
                    }
                    if !self.fill()? {
                        return Err(ScanError::Truncated {
                            offset: self.base + self.len as u64,
                            context,
                        });
                    }
                }
            }
            b'"' => loop {
                let mut i = self.pos + rel;
                while i < self.len {
                    match self.buf[i] {
                        b'\\' if i + 1 < self.len => i += 2,
                        b'\\' => break,
                        b'"' => return Ok(i + 1 - self.pos),
                        _ => i += 1,
                    }
                }
                rel = i - self.pos;
                if keep && rel > MAX_VALUE_BYTES {
                    return Err(too_large);
                }
                if !keep {
                    self.pos = i;
                    rel = 0;
                }
                if !self.fill()? {
                    return Err(truncated);
                }
            },
            _ => loop {
                let mut i = self.pos + rel;
                while i < self.len {
                    let b = self.buf[i];
                    if matches!(b, b',' | b'}' | b']') || is_ws(b) {
                        return Ok(i - self.pos);
                    }
                    i += 1;
                }
                rel = i - self.pos;
                if keep && rel > MAX_VALUE_BYTES {
                    return Err(too_large);
                }
                if !keep {
                    self.pos = i;
                    rel = 0;
                }
                if !self.fill()? {
                    return Ok(rel);
                }
            },
        }
    }

    fn expect(&mut self, want: u8, expected: &'static str) -> Result<(), ScanError> {
        match self.peek_non_ws()? {
            Some(b) if b == want => {
                self.pos += 1;
                Ok(())
            }
            Some(found) => Err(ScanError::Unexpected {
                offset: self.offset(),
                found,
                expected,
            }),
            None => Err(ScanError::Truncated {
                offset: self.offset(),
                context: expected,
            }),
        }
    }

    /// The next event, or `None` when the top-level value is complete.
    pub fn next_event(&mut self) -> Result<Option<RawEventSlice<'_>>, ScanError> {
        loop {
            match self.state {
                State::Start => match self.peek_non_ws()? {
                    Some(b'{') => {
                        self.pos += 1;
                        self.state = State::ObjectKey { first: true };
                    }
                    Some(b'[') => {
                        self.pos += 1;
                        self.saw_events = true;
                        self.state = State::Events {
                            first: true,
                            bare: true,
                        };
                    }
                    Some(found) => {
                        let window = &self.buf[self.pos..self.len.min(self.pos + 512)];
                        let what = crate::files::binary_kind(window).or_else(|| {
                            (window.get(257..262) == Some(b"ustar".as_slice()))
                                .then_some("a tar archive")
                        });
                        return Err(match what {
                            Some(what) if self.offset() == 0 => ScanError::NotATrace { what },
                            _ => ScanError::Unexpected {
                                offset: self.offset(),
                                found,
                                expected: "a JSON object or array",
                            },
                        });
                    }
                    None => return Err(ScanError::Empty),
                },
                State::ObjectKey { first } => {
                    match self.peek_non_ws()? {
                        Some(b'}') => {
                            self.pos += 1;
                            self.state = State::Done;
                            continue;
                        }
                        None => {
                            return Err(ScanError::Truncated {
                                offset: self.offset(),
                                context: "the top-level object",
                            })
                        }
                        _ => {}
                    }
                    if !first {
                        self.expect(b',', "',' or '}' in the top-level object")?;
                    }
                    match self.peek_non_ws()? {
                        Some(b'"') => {}
                        Some(found) => {
                            return Err(ScanError::Unexpected {
                                offset: self.offset(),
                                found,
                                expected: "a key string",
                            })
                        }
                        None => {
                            return Err(ScanError::Truncated {
                                offset: self.offset(),
                                context: "the top-level object",
                            })
                        }
                    }
                    let key_offset = self.offset();
                    let n = self.value_len("a key", true)?;
                    let key: String = serde_json::from_slice(&self.buf[self.pos..self.pos + n])
                        .map_err(|_| ScanError::Unexpected {
                            offset: key_offset,
                            found: b'"',
                            expected: "a valid key string",
                        })?;
                    self.pos += n;
                    self.expect(b':', "':' after a key")?;
                    self.peek_non_ws()?;
                    if key == "traceEvents" {
                        self.repeated_events_key |= self.saw_events;
                        match self.peek_non_ws()? {
                            Some(b'[') => {
                                self.pos += 1;
                                self.saw_events = true;
                                self.state = State::Events {
                                    first: true,
                                    bare: false,
                                };
                            }
                            Some(_) => {
                                return Err(ScanError::EventsNotArray {
                                    offset: self.offset(),
                                })
                            }
                            None => {
                                return Err(ScanError::Truncated {
                                    offset: self.offset(),
                                    context: "traceEvents",
                                })
                            }
                        }
                    } else {
                        // Every key is listed (its name tells an Execution Trace from a
                        // trace), but only the values ingest reads are kept.
                        let keep = KEPT_HEADER_KEYS.contains(&key.as_str());
                        let n = self.value_len("a top-level value", keep)?;
                        let value = if keep {
                            self.buf[self.pos..self.pos + n].to_vec()
                        } else {
                            Vec::new()
                        };
                        self.header.push((key, value));
                        self.pos += n;
                        self.state = State::ObjectKey { first: false };
                    }
                }
                State::Events { first, bare } => {
                    match self.peek_non_ws()? {
                        Some(b']') => {
                            self.pos += 1;
                            self.state = if bare {
                                State::Done
                            } else {
                                State::ObjectKey { first: false }
                            };
                            continue;
                        }
                        None => {
                            return Err(ScanError::Truncated {
                                offset: self.offset(),
                                context: "traceEvents (no closing ']')",
                            })
                        }
                        _ => {}
                    }
                    if !first {
                        self.expect(b',', "',' or ']' between events")?;
                        if self.peek_non_ws()?.is_none() {
                            return Err(ScanError::Truncated {
                                offset: self.offset(),
                                context: "traceEvents",
                            });
                        }
                    }
                    let offset = self.offset();
                    let n = self.value_len("an event", true)?;
                    self.state = State::Events { first: false, bare };
                    let start = self.pos;
                    self.pos += n;
                    let index = self.next_index;
                    self.next_index += 1;
                    return Ok(Some(RawEventSlice {
                        bytes: &self.buf[start..start + n],
                        start,
                        offset,
                        index,
                    }));
                }
                State::Done => {
                    return match self.peek_non_ws()? {
                        None => Ok(None),
                        Some(found) => Err(ScanError::Unexpected {
                            offset: self.offset(),
                            found,
                            expected: "end of file after the top-level value",
                        }),
                    };
                }
            }
        }
    }
}

/// Bit masks of one 64-byte block: quotes, backslashes, opening and closing brackets.
#[cfg(target_arch = "x86_64")]
#[inline]
fn classify(block: &[u8]) -> [u64; 4] {
    use std::arch::x86_64::*;
    debug_assert!(block.len() >= 64);
    let mut m = [0u64; 4];
    // SAFETY: SSE2 is part of the x86_64 baseline, and the four unaligned 16-byte loads stay
    // inside `block`, which holds at least 64 bytes.
    unsafe {
        let (q, bs) = (_mm_set1_epi8(b'"' as i8), _mm_set1_epi8(b'\\' as i8));
        let (o1, o2) = (_mm_set1_epi8(b'{' as i8), _mm_set1_epi8(b'[' as i8));
        let (c1, c2) = (_mm_set1_epi8(b'}' as i8), _mm_set1_epi8(b']' as i8));
        for lane in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(lane * 16) as *const __m128i);
            let mask = |x: __m128i| u64::from(_mm_movemask_epi8(x) as u32) << (lane * 16);
            m[0] |= mask(_mm_cmpeq_epi8(v, q));
            m[1] |= mask(_mm_cmpeq_epi8(v, bs));
            m[2] |= mask(_mm_or_si128(_mm_cmpeq_epi8(v, o1), _mm_cmpeq_epi8(v, o2)));
            m[3] |= mask(_mm_or_si128(_mm_cmpeq_epi8(v, c1), _mm_cmpeq_epi8(v, c2)));
        }
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn classify(block: &[u8]) -> [u64; 4] {
    let mut m = [0u64; 4];
    for (k, &b) in block[..64].iter().enumerate() {
        let bit = 1u64 << k;
        match b {
            b'"' => m[0] |= bit,
            b'\\' => m[1] |= bit,
            b'{' | b'[' => m[2] |= bit,
            b'}' | b']' => m[3] |= bit,
            _ => {}
        }
    }
    m
}

/// Bits of characters escaped by a backslash (simdjson's `find_escaped`): runs of
/// backslashes escape alternately; `carry` says whether the previous block's last
/// backslash escapes this block's first character.
#[inline]
fn escaped_bits(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let backslash = backslash & !*carry;
    let follows_escape = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (even_starts, overflow) = odd_starts.overflowing_add(backslash);
    *carry = u64::from(overflow);
    let invert = even_starts << 1;
    (EVEN ^ invert) & follows_escape
}

/// Bit k set when an odd number of bits at positions <= k are set.
#[inline]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Scans the 64-byte block at `*i` with the bracket `depth`, string state and escape carry
/// so far. Returns the offset just past the bracket that brings the depth to zero, or
/// advances `*i` by 64.
#[inline]
pub(crate) fn block_end(
    buf: &[u8],
    i: &mut usize,
    depth: &mut u32,
    in_str: &mut bool,
    escaped_next: &mut bool,
) -> Option<usize> {
    let [q, bs, open, close] = classify(&buf[*i..*i + 64]);
    let mut carry = u64::from(*escaped_next);
    let escaped = escaped_bits(bs, &mut carry);
    *escaped_next = carry != 0;
    let mut inside = prefix_xor(q & !escaped);
    if *in_str {
        inside = !inside;
    }
    *in_str = inside >> 63 == 1;
    let mut brackets = (open | close) & !inside;
    while brackets != 0 {
        let k = brackets.trailing_zeros() as usize;
        if (open >> k) & 1 == 1 {
            *depth += 1;
        } else {
            *depth -= 1;
            if *depth == 0 {
                return Some(*i + k + 1);
            }
        }
        brackets &= brackets - 1;
    }
    *i += 64;
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Result<(Vec<String>, Vec<String>), ScanError> {
        let mut s = EventScanner::new(text.as_bytes());
        s.buf = Storage::Owned(vec![0; 8]); // tiny chunks exercise every refill path
        let mut evs = Vec::new();
        while let Some(e) = s.next_event()? {
            evs.push(String::from_utf8(e.bytes.to_vec()).unwrap());
        }
        let keys = s.header.iter().map(|(k, _)| k.clone()).collect();
        Ok((evs, keys))
    }

    #[test]
    fn splits_events_across_tiny_chunks() {
        let (evs, keys) = split(
            r#"{"schemaVersion": 1, "traceEvents": [{"a": "x}\"]"}, {"b": [1, {"c": 2}]} ,3], "x": {"y": [1]}}"#,
        )
        .unwrap();
        assert_eq!(
            evs,
            vec![r#"{"a": "x}\"]"}"#, r#"{"b": [1, {"c": 2}]}"#, "3"]
        );
        assert_eq!(keys, vec!["schemaVersion", "x"]);
    }

    /// Events with every awkward string (escaped quotes, backslash runs, brackets inside
    /// strings, multi-byte UTF-8) at every alignment against the 64-byte blocks come back
    /// exactly, with tiny and large buffers.
    #[test]
    fn block_scanner_matches_the_events_at_every_alignment() {
        let pieces = [
            r#"{"a": 1}"#,
            r#"{"name": "void f<{lambda()#1}>(int)", "x": [1, [2, {"y": "]}"}]]}"#,
            r#"{"s": "quote \" inside", "t": "backslash \\", "u": "\\\" three"}"#,
            r#"{"k": "\\\\\\\\", "v": {"w": {"z": "}}}}"}}}"#,
            r#"{"utf": "µs ∑ 変換 {", "n": -1.5e3}"#,
            r#"{"long": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}"#,
        ];
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        for pad in 0..70 {
            let mut evs: Vec<String> = Vec::new();
            for _ in 0..40 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                evs.push(pieces[(rng % pieces.len() as u64) as usize].to_string());
            }
            let text = format!(
                "{{{}\"traceEvents\": [{}]}}",
                " ".repeat(pad),
                evs.join(",\n ")
            );
            for chunk in [8usize, 100, 1 << 20] {
                let mut sc = EventScanner::new(text.as_bytes());
                sc.buf = Storage::Owned(vec![0; chunk]);
                let mut got = Vec::new();
                while let Some(e) = sc.next_event().unwrap() {
                    got.push(String::from_utf8(e.bytes.to_vec()).unwrap());
                }
                assert_eq!(got, evs, "pad {pad} chunk {chunk}");
            }
        }
    }

    #[test]
    fn escapes_follow_simdjson() {
        // `\\"` : the two backslashes escape each other, the quote is real.
        let mut carry = 0;
        let e = escaped_bits(0b0110, &mut carry);
        assert_eq!(e & 0b1000, 0);
        assert_eq!(e & 0b0100, 0b0100);
        // A backslash in bit 63 escapes the next block's first byte.
        let mut carry = 0;
        escaped_bits(1 << 63, &mut carry);
        assert_eq!(carry, 1);
        assert_eq!(prefix_xor(0b1001), 0b0111);
    }

    /// Values under keys kc does not read stream past without being kept, whatever their
    /// size and the buffer's; kept keys and events stay whole.
    #[test]
    fn unread_header_values_are_skipped_and_kept_ones_kept() {
        let big = "x".repeat(10_000);
        let text = format!(
            r#"{{"junk": "{big}", "deviceProperties": [{{"id": 0}}], "more": {{"a": [{big:?}]}}, "traceEvents": [{{"ph": "X"}}], "tail": 5}}"#
        );
        let mut s = EventScanner::new(text.as_bytes());
        s.buf = Storage::Owned(vec![0; 8]);
        let mut n = 0;
        while s.next_event().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 1);
        let keys: Vec<(&str, usize)> = s
            .header
            .iter()
            .map(|(k, v)| (k.as_str(), v.len()))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("junk", 0),
                ("deviceProperties", 11),
                ("more", 0),
                ("tail", 0)
            ]
        );
        // The buffer never had to hold the 10 kB values.
        let Storage::Owned(buf) = &s.buf else {
            unreachable!()
        };
        assert!(buf.len() < 1024, "buffer grew to {}", buf.len());
    }

    #[test]
    fn bare_arrays_are_events() {
        let (evs, _) = split(r#"[{"ph":"X"},{"ph":"i"}]"#).unwrap();
        assert_eq!(evs.len(), 2);
    }

    #[test]
    fn truncation_is_reported_with_an_offset() {
        match split(r#"{"traceEvents": [{"ph": "X"}, {"ph": "#) {
            Err(ScanError::Truncated { offset, .. }) => assert!(offset >= 30),
            other => panic!("expected truncation, got {:?}", other.map(|x| x.0)),
        }
        assert!(matches!(
            split(r#"{"traceEvents": [{"ph": "X"}"#),
            Err(ScanError::Truncated { .. })
        ));
    }

    #[test]
    fn non_array_events_and_garbage_are_errors() {
        assert!(matches!(
            split(r#"{"traceEvents": 5}"#),
            Err(ScanError::EventsNotArray { offset: 16 })
        ));
        assert!(matches!(
            split("hello"),
            Err(ScanError::Unexpected { offset: 0, .. })
        ));
        assert!(matches!(split("   "), Err(ScanError::Empty)));
        assert!(matches!(
            split(r#"{"traceEvents": [{"a":1} {"b":2}]}"#),
            Err(ScanError::Unexpected { offset: 25, .. })
        ));
    }
}
