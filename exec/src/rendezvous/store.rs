//! Rank 0's store: a small key-value table served over TCP to the job's ranks only (each
//! connection proves the job's secret first), with set-once keys a rank may set only for
//! itself, and caps on connections, keys and bytes.
//!
//! Invariant: nothing is read or written before the peer proved the secret; an accept
//! error backs off instead of spinning; a handshake that stalls is dropped at its deadline.

use super::wire::read_hello;
use super::*;
use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// What the store is serving: the job it answers and its limits.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub key: JobKey,
    pub world_size: u32,
    /// How long a get waits for its key.
    pub timeout: Duration,
}

#[derive(Default)]
struct Table {
    values: HashMap<String, Vec<u8>>,
    bytes: usize,
}

struct Shared {
    table: Mutex<Table>,
    cv: Condvar,
    pending: AtomicUsize,
    per_rank: Mutex<HashMap<u32, usize>>,
    cfg: StoreConfig,
}

/// Serves the store on `listener` until the process ends: one thread per connection
/// within the caps; a get waits for its key until the configured timeout.
pub fn serve(listener: TcpListener, cfg: StoreConfig) {
    let shared = Arc::new(Shared {
        table: Mutex::new(Table::default()),
        cv: Condvar::new(),
        pending: AtomicUsize::new(0),
        per_rank: Mutex::new(HashMap::new()),
        cfg,
    });
    std::thread::spawn(move || {
        let mut backoff = Duration::from_millis(10);
        loop {
            let conn = match listener.accept() {
                Ok((c, _)) => {
                    backoff = Duration::from_millis(10);
                    c
                }
                Err(e) => {
                    // Out of file descriptors (EMFILE) or a transient error: wait instead of
                    // spinning on accept.
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        std::thread::sleep(backoff);
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                    continue;
                }
            };
            if shared.pending.fetch_add(1, Ordering::SeqCst) >= MAX_PENDING {
                shared.pending.fetch_sub(1, Ordering::SeqCst);
                drop(conn); // over the cap: closed at once, no thread
                continue;
            }
            let shared = shared.clone();
            let spawned = std::thread::Builder::new().name("kc-store".into()).spawn({
                let shared = shared.clone();
                move || {
                    let peer = conn
                        .peer_addr()
                        .map(|a| a.to_string())
                        .unwrap_or_else(|_| "?".into());
                    if let Err(e) = handle(conn, &shared) {
                        if !matches!(e, RendezvousError::Message(ref m) if m.starts_with("closed"))
                        {
                            eprintln!("kc rank store: peer {peer}: {e}");
                        }
                    }
                }
            });
            if spawned.is_err() {
                shared.pending.fetch_sub(1, Ordering::SeqCst);
            }
        }
    });
}

/// Proves the job to a connecting peer and learns its rank; the connection is counted as
/// pending until this returns.
fn handshake(conn: &mut TcpStream, s: &Shared) -> Result<u32, RendezvousError> {
    let io = |e: std::io::Error| RendezvousError::Message(format!("handshake: {e}"));
    conn.set_read_timeout(Some(HANDSHAKE_DEADLINE))
        .map_err(io)?;
    conn.set_write_timeout(Some(HANDSHAKE_DEADLINE))
        .map_err(io)?;
    let ours: [u8; 16] = nonce();
    let mut challenge = Vec::with_capacity(21);
    challenge.extend_from_slice(MAGIC);
    challenge.push(VERSION);
    challenge.extend_from_slice(&ours);
    conn.write_all(&challenge).map_err(io)?;
    let h = read_hello(conn)?;
    let key = &s.cfg.key;
    let rank = h.rank.to_le_bytes();
    let expect = mac(&key.secret, &[b"client", &ours, &h.nonce, &h.job_id, &rank]);
    let refuse = |conn: &mut TcpStream, st: u8, why: String| {
        let _ = conn.write_all(&[st]);
        Err(RendezvousError::Message(why))
    };
    if !same_mac(&expect, &h.mac) {
        return refuse(
            conn,
            ST_BAD_PROOF,
            "refused: it does not know the job's secret".into(),
        );
    }
    if h.job_id != key.id {
        return refuse(
            conn,
            ST_OTHER_JOB,
            format!("refused: a rank of another job (job id {})", hex(&h.job_id)),
        );
    }
    if h.rank >= s.cfg.world_size {
        return refuse(
            conn,
            ST_BAD_RANK,
            format!(
                "refused: rank {} outside a world of {}",
                h.rank, s.cfg.world_size
            ),
        );
    }
    let mut reply = vec![ST_OK];
    reply.extend_from_slice(&mac(&key.secret, &[b"store", &h.nonce, &ours, &rank]));
    conn.write_all(&reply).map_err(io)?;
    Ok(h.rank)
}

fn handle(mut conn: TcpStream, s: &Shared) -> Result<(), RendezvousError> {
    let proven = handshake(&mut conn, s);
    s.pending.fetch_sub(1, Ordering::SeqCst);
    let rank = proven?;
    {
        let mut per = s
            .per_rank
            .lock()
            .map_err(|_| RendezvousError::Message("poisoned".into()))?;
        let n = per.entry(rank).or_default();
        if *n >= MAX_PER_RANK {
            return Err(RendezvousError::Message(format!(
                "refused: rank {rank} already holds {MAX_PER_RANK} connections"
            )));
        }
        *n += 1;
    }
    // A proven rank may idle between requests for as long as its replay runs.
    let _ = conn.set_read_timeout(None);
    let result = serve_requests(&mut conn, s, rank);
    if let Ok(mut per) = s.per_rank.lock() {
        if let Some(n) = per.get_mut(&rank) {
            *n = n.saturating_sub(1);
        }
    }
    result
}

/// Whether `rank` may set `key` (already stripped of the job id): `blob` is rank 0's,
/// a key ending in a rank number is that rank's; ranks lie inside the world.
pub(crate) fn key_allowed(key: &str, rank: u32, world: u32, setting: bool) -> bool {
    if key == "blob" {
        return !setting || rank == 0;
    }
    let Some(last) = key.rsplit('/').next() else {
        return false;
    };
    let Ok(r) = last.parse::<u32>() else {
        return false;
    };
    key.contains('/')
        && last.bytes().all(|b| b.is_ascii_digit())
        && r < world
        && (!setting || r == rank)
}

fn serve_requests(conn: &mut TcpStream, s: &Shared, rank: u32) -> Result<(), RendezvousError> {
    let io = |e: std::io::Error| RendezvousError::Message(e.to_string());
    let prefix = format!("{}/", s.cfg.key.id_hex());
    let reply = |conn: &mut TcpStream, st: u8, v: &[u8]| -> Result<(), RendezvousError> {
        let mut out = Vec::with_capacity(5 + v.len());
        out.push(st);
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
        conn.write_all(&out).map_err(io)
    };
    while let Some(m) = read_message(conn)? {
        let setting = matches!(m, Message::Set { .. });
        let full_key = match &m {
            Message::Set { key, .. } | Message::Get { key } => key.clone(),
        };
        let Some(key) = full_key.strip_prefix(&prefix) else {
            reply(conn, ST_BAD_KEY, b"")?;
            continue;
        };
        if !key_allowed(key, rank, s.cfg.world_size, setting) {
            reply(conn, ST_BAD_KEY, b"")?;
            continue;
        }
        let mut t = s
            .table
            .lock()
            .map_err(|_| RendezvousError::Message("poisoned".into()))?;
        match m {
            Message::Set { value, .. } => {
                let st = if t.values.contains_key(&full_key) {
                    ST_ALREADY_SET
                } else if t.values.len() >= MAX_KEYS
                    || t.bytes + full_key.len() + value.len() > MAX_STORE_BYTES
                {
                    ST_FULL
                } else {
                    t.bytes += full_key.len() + value.len();
                    t.values.insert(full_key, value);
                    s.cv.notify_all();
                    ST_OK
                };
                drop(t);
                reply(conn, st, b"")?;
            }
            Message::Get { .. } => {
                let deadline = Instant::now() + s.cfg.timeout;
                let value = loop {
                    if let Some(v) = t.values.get(&full_key) {
                        break Some(v.clone());
                    }
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break None;
                    }
                    t =
                        s.cv.wait_timeout(t, left)
                            .map_err(|_| RendezvousError::Message("poisoned".into()))?
                            .0;
                };
                drop(t);
                match value {
                    Some(v) => reply(conn, ST_OK, &v)?,
                    None => reply(conn, ST_TIMEOUT, b"")?,
                }
            }
        }
    }
    Err(RendezvousError::Message("closed".into()))
}
