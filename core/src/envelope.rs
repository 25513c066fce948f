//! The container shared by kc's binary files (graphs `.kcir`, plans `.kcplan`): a magic,
//! a format version, the writing kc's version, the body length and a CRC32 of the writer's
//! version and the body,
//! then the bincode-encoded body. Invariant: a file is decoded only after its magic,
//! version, length and checksum all match, so a flipped byte or a file from another format
//! version is rejected with a clear error and never decoded into a wrong value.

use serde::{de::DeserializeOwned, Serialize};
use std::io::Read;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: cannot write: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a kc {what} file (bad magic at byte 0)")]
    BadMagic { path: String, what: &'static str },
    #[error("{path}: {what} format version {found}, this kc reads version {expected} (written by kc {writer}); re-run the step that made it")]
    Version {
        path: String,
        what: &'static str,
        found: u32,
        expected: u32,
        writer: String,
    },
    #[error("{path}: corrupt {what} file: {why}")]
    Corrupt {
        path: String,
        what: &'static str,
        why: String,
    },
    #[error("cannot encode {what}: {0}", what = .1)]
    Encode(String, &'static str),
}

/// Identifies one kind of kc file.
pub struct Kind {
    pub magic: [u8; 8],
    pub version: u32,
    pub what: &'static str,
}

const HEADER_FIXED: usize = 8 + 4 + 2;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ 1 << 34 }>()
}

/// Decodes a body with an allocation limit scaled to its size: a length field claims at
/// most 64 times the body's own bytes (real graphs and plans stay far below), so a small
/// crafted body can never make kc allocate gigabytes. bincode takes the limit as a
/// constant, hence the buckets.
fn decode_body<T: DeserializeOwned>(
    body: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    use bincode::serde::decode_from_slice;
    let std = bincode::config::standard();
    match body.len() {
        n if n <= 1 << 20 => decode_from_slice(body, std.with_limit::<{ 64 << 20 }>()),
        n if n <= 16 << 20 => decode_from_slice(body, std.with_limit::<{ 1 << 30 }>()),
        n if n <= 256 << 20 => decode_from_slice(body, std.with_limit::<{ 16 << 30 }>()),
        _ => decode_from_slice(body, config()),
    }
}

/// CRC32 over the writer's version and the body: every byte after the fixed header
/// fields is covered, so no flipped byte goes unnoticed.
fn checksum(writer: &[u8], body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(writer);
    h.update(body);
    h.finalize()
}

pub fn encode<T: Serialize>(kind: &Kind, value: &T) -> Result<Vec<u8>, EnvelopeError> {
    let body = bincode::serde::encode_to_vec(value, config())
        .map_err(|e| EnvelopeError::Encode(e.to_string(), kind.what))?;
    Ok(seal(kind, &body))
}

/// Wraps raw body bytes in a valid envelope (right magic, version, length and CRC), so
/// fuzzing and tests can reach the decoder and everything after it with arbitrary bodies.
pub fn seal(kind: &Kind, body: &[u8]) -> Vec<u8> {
    let kc_version = env!("CARGO_PKG_VERSION").as_bytes();
    let mut out = Vec::with_capacity(body.len() + 64);
    out.extend_from_slice(&kind.magic);
    out.extend_from_slice(&kind.version.to_le_bytes());
    out.extend_from_slice(&(kc_version.len() as u16).to_le_bytes());
    out.extend_from_slice(kc_version);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(kc_version, body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

pub fn decode<T: DeserializeOwned>(
    kind: &Kind,
    bytes: &[u8],
    path: &str,
) -> Result<T, EnvelopeError> {
    let (_, body) = checked_body(kind, bytes, path, &[])?;
    decode_whole(kind, body, path)
}

/// Like [`decode`], and also reads files of the older format versions in `older`, whose
/// body lacks only fields later versions appended at the end of its top-level value: each
/// entry's bytes (the encoding of those fields' default values) are appended to a body of
/// that version before decoding.
pub fn decode_appended<T: DeserializeOwned>(
    kind: &Kind,
    bytes: &[u8],
    path: &str,
    older: &[(u32, &[u8])],
) -> Result<T, EnvelopeError> {
    let versions: Vec<u32> = older.iter().map(|o| o.0).collect();
    let (version, body) = checked_body(kind, bytes, path, &versions)?;
    let Some((_, defaults)) = older.iter().find(|o| o.0 == version) else {
        return decode_whole(kind, body, path);
    };
    let mut upgraded = Vec::with_capacity(body.len() + defaults.len());
    upgraded.extend_from_slice(body);
    upgraded.extend_from_slice(defaults);
    decode_whole(kind, &upgraded, path)
}

/// Encodes `value` as a body fragment (for [`decode_appended`]'s defaults).
pub fn encode_fragment<T: Serialize>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, bincode::config::standard()).unwrap_or_default()
}

fn decode_whole<T: DeserializeOwned>(
    kind: &Kind,
    body: &[u8],
    path: &str,
) -> Result<T, EnvelopeError> {
    let corrupt = |why: String| EnvelopeError::Corrupt {
        path: path.to_string(),
        what: kind.what,
        why,
    };
    let (value, used) =
        decode_body(body).map_err(|e| corrupt(format!("body does not decode: {e}")))?;
    if used != body.len() {
        return Err(corrupt(format!(
            "{} trailing bytes after the body",
            body.len() - used
        )));
    }
    Ok(value)
}

/// The body of a kc file whose magic, version (the kind's, or one of `also`), length and CRC
/// match, with the version found.
fn checked_body<'a>(
    kind: &Kind,
    bytes: &'a [u8],
    path: &str,
    also: &[u32],
) -> Result<(u32, &'a [u8]), EnvelopeError> {
    let corrupt = |why: String| EnvelopeError::Corrupt {
        path: path.to_string(),
        what: kind.what,
        why,
    };
    if bytes.len() < 8 || bytes[..8] != kind.magic {
        return Err(EnvelopeError::BadMagic {
            path: path.to_string(),
            what: kind.what,
        });
    }
    if bytes.len() < HEADER_FIXED {
        return Err(corrupt(format!("header truncated at byte {}", bytes.len())));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    let vlen = u16::from_le_bytes(bytes[12..14].try_into().unwrap()) as usize;
    let writer_end = HEADER_FIXED + vlen;
    if bytes.len() < writer_end + 12 {
        return Err(corrupt(format!("header truncated at byte {}", bytes.len())));
    }
    let writer = String::from_utf8_lossy(&bytes[HEADER_FIXED..writer_end]).into_owned();
    if version != kind.version && !also.contains(&version) {
        return Err(EnvelopeError::Version {
            path: path.to_string(),
            what: kind.what,
            found: version,
            expected: kind.version,
            writer,
        });
    }
    let body_len = u64::from_le_bytes(bytes[writer_end..writer_end + 8].try_into().unwrap());
    let crc = u32::from_le_bytes(bytes[writer_end + 8..writer_end + 12].try_into().unwrap());
    let body = &bytes[writer_end + 12..];
    if body.len() as u64 != body_len {
        return Err(corrupt(format!(
            "body is {} bytes, header says {body_len} (truncated or padded)",
            body.len()
        )));
    }
    if checksum(&bytes[HEADER_FIXED..writer_end], body) != crc {
        return Err(corrupt(format!(
            "checksum mismatch over bytes {}..{}",
            writer_end + 12,
            bytes.len()
        )));
    }
    Ok((version, body))
}

/// A writer that checksums and counts what passes through it.
struct Checksummed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<W: std::io::Write> std::io::Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Encodes `value` straight into the file at `path`, without holding the body in memory:
/// the header's length and checksum are written last, then the file is renamed into place
/// (atomic, like [`write_atomic`]).
pub fn write_streamed<T: Serialize>(
    kind: &Kind,
    value: &T,
    path: &Path,
) -> Result<(), EnvelopeError> {
    use std::io::{Seek, SeekFrom, Write};
    let p = path.display().to_string();
    let io = |source| EnvelopeError::Write {
        path: p.clone(),
        source,
    };
    // A directory, symlink, device or FIFO at `path` is refused before any work; the
    // final rename checks again.
    if let Some(kind) = crate::files::non_regular_kind(path) {
        return Err(EnvelopeError::Write {
            path: p,
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("refusing to replace it: it is {kind}"),
            ),
        });
    }
    let tmp = crate::files::temp_beside(path);
    let result = (|| {
        let kc_version = env!("CARGO_PKG_VERSION").as_bytes();
        let mut f = std::fs::File::create(tmp.path()).map_err(io)?;
        let mut head = Vec::with_capacity(64);
        head.extend_from_slice(&kind.magic);
        head.extend_from_slice(&kind.version.to_le_bytes());
        head.extend_from_slice(&(kc_version.len() as u16).to_le_bytes());
        head.extend_from_slice(kc_version);
        let fixed = head.len() as u64;
        head.extend_from_slice(&[0u8; 12]);
        f.write_all(&head).map_err(io)?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(kc_version);
        // Buffered before the checksum, so the CRC sees large chunks, not bincode's many
        // small writes.
        let mut w = std::io::BufWriter::with_capacity(
            1 << 20,
            Checksummed {
                inner: f,
                crc,
                bytes: 0,
            },
        );
        bincode::serde::encode_into_std_write(value, &mut w, config())
            .map_err(|e| EnvelopeError::Encode(e.to_string(), kind.what))?;
        w.flush().map_err(io)?;
        let c = w.into_inner().map_err(|e| io(e.into_error()))?;
        let (bytes, crc, mut f) = (c.bytes, c.crc.finalize(), c.inner);
        f.seek(SeekFrom::Start(fixed)).map_err(io)?;
        let mut tail = Vec::with_capacity(12);
        tail.extend_from_slice(&bytes.to_le_bytes());
        tail.extend_from_slice(&crc.to_le_bytes());
        f.write_all(&tail).map_err(io)?;
        Ok(())
    })();
    // On error the temporary is removed when `tmp` drops.
    result?;
    tmp.persist(path)
        .map_err(|source| EnvelopeError::Write { path: p, source })
}

pub fn read<T: DeserializeOwned>(kind: &Kind, path: &Path) -> Result<T, EnvelopeError> {
    let bytes = read_bytes(kind, path)?;
    decode(kind, &bytes, &path.display().to_string())
}

/// The largest body a kc file may declare (the bincode limit `decode` applies).
const MAX_BODY: u64 = 1 << 34;

/// Reads a kc file by its header: the magic first, then exactly the body length the header
/// declares (plus one byte, to notice trailing data). What is not a kc file is refused after
/// its first 8 bytes, so `/dev/zero` or a trace given by mistake is never read whole.
pub fn read_bytes(kind: &Kind, path: &Path) -> Result<Vec<u8>, EnvelopeError> {
    let p = path.display().to_string();
    let io = |source| EnvelopeError::Io {
        path: p.clone(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::with_capacity(64);
    let mut read_up_to = |bytes: &mut Vec<u8>, n: u64| -> Result<(), EnvelopeError> {
        let want = n.saturating_sub(bytes.len() as u64);
        (&mut f).take(want).read_to_end(bytes).map_err(io)?;
        Ok(())
    };
    read_up_to(&mut bytes, HEADER_FIXED as u64)?;
    if bytes.len() < 8 || bytes[..8] != kind.magic {
        return Err(EnvelopeError::BadMagic {
            path: p.clone(),
            what: kind.what,
        });
    }
    if bytes.len() < HEADER_FIXED {
        return Ok(bytes); // decode names the truncation
    }
    let vlen = u16::from_le_bytes([bytes[12], bytes[13]]) as u64;
    let head = HEADER_FIXED as u64 + vlen + 12;
    read_up_to(&mut bytes, head)?;
    if (bytes.len() as u64) < head {
        return Ok(bytes);
    }
    let at = (head - 12) as usize;
    let body_len = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    if body_len > MAX_BODY {
        return Err(EnvelopeError::Corrupt {
            path: p.clone(),
            what: kind.what,
            why: format!("header declares a body of {body_len} bytes (limit {MAX_BODY})"),
        });
    }
    read_up_to(&mut bytes, head + body_len + 1)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: Kind = Kind {
        magic: *b"KCTEST\0\0",
        version: 3,
        what: "test",
    };

    #[test]
    fn streamed_and_in_memory_files_are_identical() {
        let value: Vec<(u32, String)> = (0..5000).map(|i| (i, format!("item {i}"))).collect();
        let dir = std::env::temp_dir().join(format!("kc-envelope-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("v.bin");
        write_streamed(&K, &value, &p).unwrap();
        let on_disk = std::fs::read(&p).unwrap();
        assert_eq!(on_disk, encode(&K, &value).unwrap());
        let back: Vec<(u32, String)> = decode(&K, &on_disk, "v.bin").unwrap();
        assert_eq!(back, value);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
