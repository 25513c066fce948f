//! The rank store's wire format: requests and replies, and a client's answer to the
//! store's challenge. Invariant: a malformed message is an error naming what and where,
//! never a panic or an allocation beyond [`super::MAX_KEY`] and [`super::MAX_VALUE`].

use super::{RendezvousError, HELLO_LEN, MAX_KEY, MAX_VALUE};
use std::io::Read;

/// One request or reply as read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Set { key: String, value: Vec<u8> },
    Get { key: String },
}

/// Reads one request. `Ok(None)` at a clean end of stream.
pub fn read_message(r: &mut impl Read) -> Result<Option<Message>, RendezvousError> {
    let mut op = [0u8; 1];
    match r.read(&mut op) {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(e) => return Err(RendezvousError::Message(format!("cannot read: {e}"))),
    }
    let key = read_blob(r, MAX_KEY, "key")?;
    let key = String::from_utf8(key).map_err(|e| {
        RendezvousError::Message(format!(
            "key is not UTF-8 at byte {}",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let value = read_blob(r, MAX_VALUE, "value")?;
    match op[0] {
        1 => Ok(Some(Message::Set { key, value })),
        2 if value.is_empty() => Ok(Some(Message::Get { key })),
        2 => Err(RendezvousError::Message("a get carries a value".into())),
        other => Err(RendezvousError::Message(format!(
            "unknown op {other} at byte 0"
        ))),
    }
}

pub(crate) fn read_blob(
    r: &mut impl Read,
    limit: usize,
    what: &str,
) -> Result<Vec<u8>, RendezvousError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)
        .map_err(|e| RendezvousError::Message(format!("{what} length: {e}")))?;
    let len = u32::from_le_bytes(len) as usize;
    if len > limit {
        return Err(RendezvousError::Message(format!(
            "{what} of {len} bytes, more than the {limit} allowed"
        )));
    }
    let mut v = vec![0u8; len];
    r.read_exact(&mut v)
        .map_err(|e| RendezvousError::Message(format!("{what} of {len} bytes: {e}")))?;
    Ok(v)
}

/// Encodes a request.
pub fn encode(m: &Message) -> Vec<u8> {
    let (op, key, value): (u8, &str, &[u8]) = match m {
        Message::Set { key, value } => (1, key, value),
        Message::Get { key } => (2, key, &[]),
    };
    let mut out = Vec::with_capacity(9 + key.len() + value.len());
    out.push(op);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
    out
}

/// A client's answer to the store's challenge, as read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub job_id: [u8; 8],
    pub rank: u32,
    pub nonce: [u8; 16],
    pub mac: [u8; 32],
}

/// Reads a client's answer: exactly [`HELLO_LEN`] bytes, nothing allocated.
pub fn read_hello(r: &mut impl Read) -> Result<Hello, RendezvousError> {
    let mut b = [0u8; HELLO_LEN];
    r.read_exact(&mut b)
        .map_err(|e| RendezvousError::Message(format!("handshake: {e}")))?;
    let mut h = Hello {
        job_id: [0; 8],
        rank: u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
        nonce: [0; 16],
        mac: [0; 32],
    };
    h.job_id.copy_from_slice(&b[..8]);
    h.nonce.copy_from_slice(&b[12..28]);
    h.mac.copy_from_slice(&b[28..60]);
    Ok(h)
}
