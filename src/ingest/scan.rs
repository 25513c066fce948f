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
    /// `traceEvents` holds something other than an array.
    EventsNotArray {
        offset: u64,
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
    pub offset: u64,
    pub index: u64,
}

pub struct EventScanner<R: Read> {
    reader: R,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
    state: State,
    next_index: u64,
    saw_events: bool,
    /// Top-level keys other than `traceEvents`, as raw JSON text.
    pub header: Vec<(String, Vec<u8>)>,
    /// Bytes consumed so far, for progress display.
    pub bytes_read: u64,
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

impl<R: Read> EventScanner<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            buf: vec![0; CHUNK],
            pos: 0,
            len: 0,
            base: 0,
            eof: false,
            state: State::Start,
            next_index: 0,
            saw_events: false,
            header: Vec::new(),
            bytes_read: 0,
        }
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
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.base += self.pos as u64;
            self.len -= self.pos;
            self.pos = 0;
        }
        if self.len == self.buf.len() {
            // One value is larger than the buffer: grow it.
            let new_len = self.buf.len() * 2;
            self.buf.resize(new_len, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.len..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.len += n;
                    self.bytes_read += n as u64;
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

    /// Length of the JSON value starting at `pos`, reading more input as needed.
    fn value_len(&mut self, context: &'static str) -> Result<usize, ScanError> {
        let start_offset = self.offset();
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
                loop {
                    let mut i = self.pos + rel;
                    let len = self.len;
                    let buf = &self.buf[..len];
                    while i < len {
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
                        return Err(ScanError::Unexpected {
                            offset: self.offset(),
                            found,
                            expected: "a JSON object or array",
                        })
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
                    let n = self.value_len("a key")?;
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
                        let n = self.value_len("a top-level value")?;
                        self.header
                            .push((key, self.buf[self.pos..self.pos + n].to_vec()));
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
                    let n = self.value_len("an event")?;
                    self.state = State::Events { first: false, bare };
                    let start = self.pos;
                    self.pos += n;
                    let index = self.next_index;
                    self.next_index += 1;
                    return Ok(Some(RawEventSlice {
                        bytes: &self.buf[start..start + n],
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

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Result<(Vec<String>, Vec<String>), ScanError> {
        let mut s = EventScanner::new(text.as_bytes());
        s.buf = vec![0; 8]; // tiny chunks exercise every refill path
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
