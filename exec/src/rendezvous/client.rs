//! A rank's connection to the store: connects (retrying while rank 0 starts or the store is
//! at its cap), proves the job's secret, checks the store's proof, then sets and gets keys
//! under the job's id.
//!
//! Invariant: a store that does not prove the secret is never written to or read from.

use super::wire::{encode, read_blob, Message};
use super::*;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Instant;

/// A connection to the store, proven both ways.
pub struct Client {
    conn: TcpStream,
    addr: String,
    prefix: String,
}

/// Why one attempt to connect failed: the store closed before its challenge (at its cap:
/// worth another try), or anything else.
enum Retry {
    Closed(RendezvousError),
    Final(RendezvousError),
}

impl From<RendezvousError> for Retry {
    fn from(e: RendezvousError) -> Self {
        Retry::Final(e)
    }
}

impl Client {
    /// Connects, retrying until `timeout` (rank 0 may start after the others), and proves
    /// the job's secret to the store and the store's to us.
    pub fn connect(
        addr: &str,
        key: &JobKey,
        rank: u32,
        timeout: Duration,
    ) -> Result<Self, RendezvousError> {
        let deadline = Instant::now() + timeout;
        loop {
            match Self::connect_once(addr, key, rank, timeout, deadline) {
                // Closed before the challenge: the store is at its cap of connections still
                // proving themselves; try again until the deadline.
                Err(Retry::Closed(_)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(Retry::Closed(e)) | Err(Retry::Final(e)) => return Err(e),
                Ok(c) => return Ok(c),
            }
        }
    }

    fn connect_once(
        addr: &str,
        key: &JobKey,
        rank: u32,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<Self, Retry> {
        let store_err = |why: String| RendezvousError::Store {
            addr: addr.to_string(),
            why,
        };
        let store = |why: String| Retry::Final(store_err(why));
        let mut conn = loop {
            let target = addr
                .to_socket_addrs()
                .map_err(|e| store(format!("cannot resolve: {e}")))?
                .next()
                .ok_or_else(|| store("resolves to no address".into()))?;
            match TcpStream::connect_timeout(&target, Duration::from_millis(500)) {
                Ok(conn) => break conn,
                Err(e) if Instant::now() >= deadline => {
                    return Err(store(format!(
                        "no rank 0 answered within {:.0} s ({e}): is rank 0 running, and MASTER_ADDR/MASTER_PORT right?",
                        timeout.as_secs_f64()
                    )))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        };
        let _ = conn.set_read_timeout(Some(HANDSHAKE_DEADLINE));
        let not_kc_err = |what: String| {
            store_err(format!(
                "{what}: not kc's rank store of this job (another program on MASTER_PORT?)"
            ))
        };
        let not_kc = |what: String| Retry::Final(not_kc_err(what));
        let mut challenge = [0u8; 21];
        // Closed before the challenge: the store is at its cap (try again). Silent until
        // the deadline: whatever listens there is not kc's store (refused at once).
        conn.read_exact(&mut challenge).map_err(|e| {
            let err = not_kc_err(format!("no challenge ({e})"));
            match e.kind() {
                std::io::ErrorKind::UnexpectedEof
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe => Retry::Closed(err),
                _ => Retry::Final(err),
            }
        })?;
        if &challenge[..4] != MAGIC || challenge[4] != VERSION {
            return Err(not_kc("an unknown greeting".into()));
        }
        let theirs = &challenge[5..21];
        let ours: [u8; 16] = nonce();
        let r = rank.to_le_bytes();
        let mut hello = Vec::with_capacity(HELLO_LEN);
        hello.extend_from_slice(&key.id);
        hello.extend_from_slice(&r);
        hello.extend_from_slice(&ours);
        hello.extend_from_slice(&mac(&key.secret, &[b"client", theirs, &ours, &key.id, &r]));
        conn.write_all(&hello)
            .map_err(|e| store(format!("cannot send: {e}")))?;
        let mut st = [0u8; 1];
        conn.read_exact(&mut st)
            .map_err(|e| not_kc(format!("no answer to our proof ({e})")))?;
        match st[0] {
            ST_OK => {}
            ST_BAD_PROOF => {
                return Err(store(
                    "refused our proof: this rank's KC_JOB_SECRET is not rank 0's".into(),
                ))
            }
            ST_OTHER_JOB => return Err(store(
                "serves another job (its job id differs): is another job using this MASTER_PORT?"
                    .into(),
            )),
            ST_BAD_RANK => {
                return Err(store(format!(
                    "refused rank {rank}: outside its world (WORLD_SIZE differs from rank 0's?)"
                )))
            }
            other => return Err(not_kc(format!("status {other}"))),
        }
        let mut proof = [0u8; 32];
        conn.read_exact(&mut proof)
            .map_err(|e| not_kc(format!("no proof ({e})")))?;
        if !same_mac(&proof, &mac(&key.secret, &[b"store", &ours, theirs, &r])) {
            return Err(not_kc("it does not prove the job's secret".into()));
        }
        // Replies come within the store's own deadline, plus slack.
        let _ = conn.set_read_timeout(Some(timeout + Duration::from_secs(5)));
        Ok(Self {
            conn,
            addr: addr.to_string(),
            prefix: format!("{}/", key.id_hex()),
        })
    }

    fn request(&mut self, m: &Message) -> Result<Option<Vec<u8>>, RendezvousError> {
        let store = |why: String| RendezvousError::Store {
            addr: self.addr.clone(),
            why,
        };
        self.conn
            .write_all(&encode(m))
            .map_err(|e| store(format!("cannot send: {e} (rank 0 gone?)")))?;
        let mut status = [0u8; 1];
        self.conn
            .read_exact(&mut status)
            .map_err(|e| store(format!("no reply: {e} (rank 0 gone?)")))?;
        let value = read_blob(&mut self.conn, MAX_VALUE, "reply")?;
        let key = match m {
            Message::Set { key, .. } | Message::Get { key } => key,
        };
        match status[0] {
            ST_OK => Ok(Some(value)),
            ST_TIMEOUT => Ok(None),
            ST_ALREADY_SET => Err(store(format!("{key} is already set (set once per job)"))),
            ST_BAD_KEY => Err(store(format!("refused key {key}"))),
            ST_FULL => Err(store("full".into())),
            other => Err(store(format!("status {other}"))),
        }
    }

    pub fn set(&mut self, key: &str, value: &[u8]) -> Result<(), RendezvousError> {
        self.request(&Message::Set {
            key: format!("{}{key}", self.prefix),
            value: value.to_vec(),
        })
        .map(|_| ())
    }

    /// The value of `key`, waiting for it as long as the store allows.
    pub fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, RendezvousError> {
        self.request(&Message::Get {
            key: format!("{}{key}", self.prefix),
        })
    }
}
