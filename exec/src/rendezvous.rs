//! Bootstrapping a multi-rank replay the way torchrun does: every process reads `RANK`,
//! `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT` and the job's secret
//! `KC_JOB_SECRET`; rank 0 serves a small TCP key-value store, every rank connects to it,
//! rank 0 publishes a blob (the NCCL unique id) and every rank reads it, then all meet at a
//! barrier. The same code runs under torchrun, Slurm or mpirun (which set the rank
//! variables; the secret is the user's) and under `kc exec --ranks all` (which makes one).
//!
//! Wire format. On accepting, the store sends a challenge: `KCRS`, version `u8` (1), a
//! 16-byte nonce. The client answers with the job id (8 bytes), its rank `u32` LE, a
//! 16-byte nonce of its own and HMAC-SHA-256(secret, "client" ‖ store nonce ‖ client nonce
//! ‖ job id ‖ rank). The store replies `0` and HMAC(secret, "store" ‖ client nonce ‖ store
//! nonce ‖ rank), proving it knows the secret too, or a refusal status (2: wrong proof,
//! 3: another job, 5: rank outside the world) and closes. Then, on the same connection,
//! one request, one reply: a request is `op: u8` (1 = set, 2 = get), key length `u32` LE,
//! key bytes, value length `u32` LE, value bytes (empty for get); a reply is `status: u8`
//! (0 = ok, 1 = timed out, 4 = already set, 6 = refused key, 7 = store full), value length
//! `u32` LE, value bytes.
//!
//! Invariants: nothing is read from or written to the store before both sides proved the
//! job's secret; keys carry the job id, are set once, and a rank sets only its own keys
//! (`blob` is rank 0's) with ranks inside `0..WORLD_SIZE`; connections, keys and stored
//! bytes are capped, a handshake has a 5 s deadline and accept errors back off; a
//! malformed message is an error naming what and where, never a panic or an allocation
//! beyond the limits; every wait has a deadline, so a rank that dies or never starts ends
//! the job on every other rank with an error that names it, not a hang.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub const MAX_KEY: usize = 256;
/// The largest value a rank stores: the NCCL id is 128 bytes, an agreement 8.
pub const MAX_VALUE: usize = 64 << 10;
/// What the whole store may hold: a job needs a few keys per rank and agreement.
pub const MAX_STORE_BYTES: usize = 16 << 20;
pub const MAX_KEYS: usize = 1 << 18;
/// Connections still proving themselves at once; more are closed as they arrive.
pub const MAX_PENDING: usize = 16;
/// Proven connections per rank (kc's ranks hold one).
pub const MAX_PER_RANK: usize = 2;
/// How long a peer has to answer the challenge.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);
/// The environment variable that holds the job's secret (at least 16 characters).
pub const SECRET_VAR: &str = "KC_JOB_SECRET";
/// An optional job name mixed into the job id (`--ranks all` sets one; torchrun's
/// `TORCHELASTIC_RUN_ID`, Slurm's `SLURM_JOB_ID` or Open MPI's job id stand in for it).
pub const JOB_ID_VAR: &str = "KC_JOB_ID";
/// `--ranks all` hands rank 0 the listening socket it bound (no port race).
pub const STORE_FD_VAR: &str = "KC_STORE_FD";

const MAGIC: &[u8; 4] = b"KCRS";
const VERSION: u8 = 1;
const HELLO_LEN: usize = 8 + 4 + 16 + 32;

const ST_OK: u8 = 0;
const ST_TIMEOUT: u8 = 1;
const ST_BAD_PROOF: u8 = 2;
const ST_OTHER_JOB: u8 = 3;
const ST_ALREADY_SET: u8 = 4;
const ST_BAD_RANK: u8 = 5;
const ST_BAD_KEY: u8 = 6;
const ST_FULL: u8 = 7;

#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    #[error("{0} is not set: launch with torchrun, Slurm, mpirun or `kc exec --ranks all`, which set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT")]
    MissingVar(&'static str),
    #[error("KC_JOB_SECRET is not set: every rank of a job needs the same secret of at least 16 characters (e.g. `export KC_JOB_SECRET=$(head -c 24 /dev/urandom | base64)` before torchrun/srun/mpirun; `kc exec --ranks all` makes one)")]
    MissingSecret,
    #[error("{name}={value:?} is not a valid {what}")]
    BadVar {
        name: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("rank store at {addr}: {why}")]
    Store { addr: String, why: String },
    #[error("rank store message: {0}")]
    Message(String),
    #[error("{0}")]
    Timeout(String),
}

/// The job's secret and the job id derived from it; `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct JobKey {
    secret: Vec<u8>,
    id: [u8; 8],
}

impl std::fmt::Debug for JobKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "JobKey {{ id: {}, secret: <{} bytes> }}",
            self.id_hex(),
            self.secret.len()
        )
    }
}

impl JobKey {
    /// A key from a secret (at least 16 bytes) and an optional job name.
    pub fn new(secret: &[u8], job_name: &str) -> Result<Self, RendezvousError> {
        if secret.len() < 16 {
            return Err(RendezvousError::BadVar {
                name: SECRET_VAR,
                value: "<hidden>".into(),
                what: "secret (at least 16 characters)",
            });
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&mac(secret, &[b"kc job id", job_name.as_bytes()])[..8]);
        Ok(Self {
            secret: secret.to_vec(),
            id,
        })
    }

    /// A fresh random secret, hex-encoded (for `--ranks all`).
    pub fn fresh_secret() -> String {
        hex(&nonce::<24>())
    }

    pub fn id_hex(&self) -> String {
        hex(&self.id)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn mac(secret: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// Compares two MACs in time independent of where they differ.
fn same_mac(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn nonce<const N: usize>() -> [u8; N] {
    let mut n = [0u8; N];
    getrandom::getrandom(&mut n).expect("the OS random source");
    n
}

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

fn read_blob(r: &mut impl Read, limit: usize, what: &str) -> Result<Vec<u8>, RendezvousError> {
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
fn key_allowed(key: &str, rank: u32, world: u32, setting: bool) -> bool {
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
                Err(Retry::Closed(e)) if Instant::now() < deadline => {
                    let _ = e;
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
        conn.read_exact(&mut challenge)
            .map_err(|e| Retry::Closed(not_kc_err(format!("no challenge ({e})"))))?;
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

/// Where this process stands in the job, from the launcher's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankEnv {
    pub rank: u32,
    pub world_size: u32,
    pub local_rank: u32,
    pub master: String,
    /// The job's secret and id (`KC_JOB_SECRET`, and `KC_JOB_ID` or the launcher's job id).
    pub key: JobKey,
}

impl RankEnv {
    /// Reads torchrun's variables; where one is missing, the one Slurm (`SLURM_PROCID`,
    /// `SLURM_NTASKS`, `SLURM_LOCALID`) or Open MPI (`OMPI_COMM_WORLD_RANK`, `_SIZE`,
    /// `_LOCAL_RANK`) sets for it. `MASTER_ADDR`/`MASTER_PORT` and `KC_JOB_SECRET` are always
    /// the user's; the job id comes from `KC_JOB_ID`, else torchrun's run id, Slurm's job
    /// and step, or Open MPI's job id, so that two jobs sharing a secret and a port still
    /// refuse each other.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, RendezvousError> {
        let aliases = |name: &str| -> &'static [&'static str] {
            match name {
                "RANK" => &["SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"],
                "WORLD_SIZE" => &["SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"],
                "LOCAL_RANK" => &["SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"],
                _ => &[],
            }
        };
        let get = |name: &str| get(name).or_else(|| aliases(name).iter().find_map(|a| get(a)));
        // Digits only: `+29500` or ` 1` are not what a launcher writes.
        let num = |name: &'static str| -> Result<u32, RendezvousError> {
            let v = get(name).ok_or(RendezvousError::MissingVar(name))?;
            let bad = || RendezvousError::BadVar {
                name,
                value: v.clone(),
                what: "number (digits only)",
            };
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            v.parse().map_err(|_| bad())
        };
        let rank = num("RANK")?;
        let world_size = num("WORLD_SIZE")?;
        if world_size == 0 || rank >= world_size {
            return Err(RendezvousError::BadVar {
                name: "RANK",
                value: rank.to_string(),
                what: "rank below WORLD_SIZE",
            });
        }
        let local_rank = match get("LOCAL_RANK") {
            Some(_) => num("LOCAL_RANK")?,
            None => rank,
        };
        let addr = get("MASTER_ADDR").ok_or(RendezvousError::MissingVar("MASTER_ADDR"))?;
        let port = num("MASTER_PORT")?;
        if port == 0 || port > 65535 {
            return Err(RendezvousError::BadVar {
                name: "MASTER_PORT",
                value: port.to_string(),
                what: "port",
            });
        }
        let secret = get(SECRET_VAR).ok_or(RendezvousError::MissingSecret)?;
        let job_name = get(JOB_ID_VAR)
            .or_else(|| get("TORCHELASTIC_RUN_ID"))
            .or_else(|| {
                get("SLURM_JOB_ID")
                    .map(|j| format!("{j}.{}", get("SLURM_STEP_ID").unwrap_or_default()))
            })
            .or_else(|| get("OMPI_MCA_ess_base_jobid"))
            .unwrap_or_default();
        Ok(Self {
            rank,
            world_size,
            local_rank,
            master: format!("{addr}:{port}"),
            key: JobKey::new(secret.as_bytes(), &job_name)?,
        })
    }
}

/// Joins the job: rank 0 serves the store and publishes `blob` (made by `make_blob`, e.g.
/// the NCCL unique id), every rank reads it and waits for all to arrive. Returns the blob.
pub fn rendezvous(
    env: &RankEnv,
    timeout: Duration,
    make_blob: impl FnOnce() -> Vec<u8>,
) -> Result<Vec<u8>, RendezvousError> {
    let (job, blob) = Job::join(env, timeout, make_blob)?;
    job.finish()?;
    Ok(blob)
}

/// A joined job: the connection to rank 0's store, kept for the agreements a replay needs
/// after the rendezvous (barriers, and how many replays every rank runs, so that no rank
/// waits in a collective its partners never launch). Every rank makes the same calls in
/// the same order; each call takes the next key of a sequence.
pub struct Job {
    client: Client,
    pub env: RankEnv,
    timeout: Duration,
    seq: u64,
}

impl Job {
    /// [`rendezvous`]'s first half: joined, the blob read, every rank arrived.
    pub fn join(
        env: &RankEnv,
        timeout: Duration,
        make_blob: impl FnOnce() -> Vec<u8>,
    ) -> Result<(Job, Vec<u8>), RendezvousError> {
        // Rank 0 listens first: when it cannot (the port is taken, by another job perhaps)
        // it fails at once instead of after a deadline.
        if env.rank == 0 {
            let listener = store_listener(env)?;
            serve(
                listener,
                StoreConfig {
                    key: env.key.clone(),
                    world_size: env.world_size,
                    timeout,
                },
            );
        }
        let result = join(env, timeout, make_blob);
        if env.rank == 0 && result.is_err() {
            // Rank 0 keeps serving for one more deadline: every other rank's pending wait
            // began before rank 0's ended, so each ends with the store's answer (naming the
            // missing rank) rather than a dropped connection. Bounded: 2 x timeout.
            std::thread::sleep(timeout);
        }
        let (client, blob) = result?;
        Ok((
            Job {
                client,
                env: env.clone(),
                timeout,
                seq: 0,
            },
            blob,
        ))
    }

    /// Every rank's `value` for the next agreement, in rank order.
    pub fn all_gather(&mut self, what: &str, value: u64) -> Result<Vec<u64>, RendezvousError> {
        self.seq += 1;
        // The rank number ends the key, so the store can tell whose it is.
        let what_key: String = what
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let key = |r: u32| format!("{}/{what_key}/{r}", self.seq);
        self.client.set(&key(self.env.rank), &value.to_le_bytes())?;
        let mut out = Vec::with_capacity(self.env.world_size as usize);
        for r in 0..self.env.world_size {
            let v = self.client.get(&key(r))?.ok_or_else(|| {
                RendezvousError::Timeout(format!(
                    "rank {}: rank {r} did not reach \"{what}\" within {:.0} s (did it fail or die?)",
                    self.env.rank,
                    self.timeout.as_secs_f64()
                ))
            })?;
            let b: [u8; 8] = v.as_slice().try_into().map_err(|_| {
                RendezvousError::Message(format!("{what}: rank {r} sent {} bytes, not 8", v.len()))
            })?;
            out.push(u64::from_le_bytes(b));
        }
        Ok(out)
    }

    /// The largest of every rank's `value` (e.g. replays launched, so each rank tops its
    /// own up to it).
    pub fn agree_max(&mut self, what: &str, value: u64) -> Result<u64, RendezvousError> {
        Ok(self
            .all_gather(what, value)?
            .into_iter()
            .max()
            .unwrap_or(value))
    }

    /// Waits until every rank got here.
    pub fn barrier(&mut self, what: &str) -> Result<(), RendezvousError> {
        self.all_gather(what, 0).map(|_| ())
    }

    /// Leaves the job: rank 0's store must outlive every other rank's last request, so
    /// rank 0 returns only when all have said they are done.
    pub fn finish(mut self) -> Result<(), RendezvousError> {
        let env = self.env.clone();
        let done = self.client.set(&format!("done/{}", env.rank), b"1");
        if env.rank == 0 {
            done?;
            wait_all(
                &mut self.client,
                &env,
                self.timeout,
                "done",
                "finish",
                "did it die?",
            )?;
        }
        Ok(())
    }
}

/// Rank 0's listening socket: the one `--ranks all` bound and handed over (`KC_STORE_FD`,
/// so no other program can take the port in between), else MASTER_ADDR:MASTER_PORT.
fn store_listener(env: &RankEnv) -> Result<TcpListener, RendezvousError> {
    let cannot = |why: String| RendezvousError::Store {
        addr: env.master.clone(),
        why: format!("rank 0 cannot listen: {why}"),
    };
    #[cfg(unix)]
    if let Some(fd) = std::env::var(STORE_FD_VAR)
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    {
        use std::os::unix::io::FromRawFd;
        // SAFETY: `--ranks all` left this descriptor open for rank 0 alone; it is checked
        // to be a listening TCP socket on MASTER_PORT before use.
        let l = unsafe { TcpListener::from_raw_fd(fd) };
        let want = env.master.rsplit(':').next().unwrap_or_default();
        match l.local_addr() {
            Ok(a) if a.port().to_string() == want => {
                return Ok(l);
            }
            _ => {
                std::mem::forget(l); // not ours to close
                return Err(cannot(format!(
                    "{STORE_FD_VAR}={fd} is not the store's socket"
                )));
            }
        }
    }
    TcpListener::bind(&env.master).map_err(|e| cannot(e.to_string()))
}

/// Waits until every rank has set `KEY/RANK`; names the first missing rank otherwise.
fn wait_all(
    c: &mut Client,
    env: &RankEnv,
    timeout: Duration,
    key: &str,
    verb: &str,
    hint: &str,
) -> Result<(), RendezvousError> {
    for r in 0..env.world_size {
        if c.get(&format!("{key}/{r}"))?.is_none() {
            return Err(RendezvousError::Timeout(format!(
                "rank {}: rank {r} of {} did not {verb} within {:.0} s ({hint})",
                env.rank,
                env.world_size,
                timeout.as_secs_f64()
            )));
        }
    }
    Ok(())
}

fn join(
    env: &RankEnv,
    timeout: Duration,
    make_blob: impl FnOnce() -> Vec<u8>,
) -> Result<(Client, Vec<u8>), RendezvousError> {
    let mut c = Client::connect(&env.master, &env.key, env.rank, timeout)?;
    if env.rank == 0 {
        c.set("blob", &make_blob())?;
    }
    let blob = c.get("blob")?.ok_or_else(|| {
        RendezvousError::Timeout(format!(
            "rank {}: rank 0 did not publish the job's id within {:.0} s",
            env.rank,
            timeout.as_secs_f64()
        ))
    })?;
    c.set(&format!("arrived/{}", env.rank), b"1")?;
    wait_all(
        &mut c,
        env,
        timeout,
        "arrived",
        "arrive",
        "did it die or never start?",
    )?;
    Ok((c, blob))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever arrives on the wire, reading returns a message, the end, or an error.
        #[test]
        fn any_bytes_read_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut r = bytes.as_slice();
            for _ in 0..8 {
                match read_message(&mut r) {
                    Ok(Some(_)) => continue,
                    _ => break,
                }
            }
        }

        /// Every message reads back as written.
        #[test]
        fn messages_round_trip(key in "[a-z/0-9]{0,40}", value in proptest::collection::vec(any::<u8>(), 0..300), get in any::<bool>()) {
            let m = if get { Message::Get { key } } else { Message::Set { key, value } };
            let bytes = encode(&m);
            prop_assert_eq!(read_message(&mut bytes.as_slice()).unwrap(), Some(m));
        }
    }

    #[test]
    fn oversized_fields_are_refused_before_allocating() {
        let mut b = vec![1u8];
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        let e = read_message(&mut b.as_slice()).unwrap_err().to_string();
        assert!(e.contains("more than the 256 allowed"), "{e}");
    }

    #[test]
    fn the_environment_is_read_as_torchrun_sets_it() {
        let env = |pairs: &[(&str, &str)]| {
            let mut m: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            m.entry(SECRET_VAR.into())
                .or_insert_with(|| "0123456789abcdef".into());
            RankEnv::from_env(move |k| m.get(k).cloned())
        };
        let ok = env(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29500"),
        ])
        .unwrap();
        assert_eq!(
            (ok.rank, ok.local_rank, ok.master.as_str()),
            (1, 1, "127.0.0.1:29500")
        );
        assert!(env(&[
            ("RANK", "2"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "1")
        ])
        .is_err());
        let e = env(&[("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_PORT", "1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("MASTER_ADDR is not set"), "{e}");
        // Slurm's and Open MPI's names stand in for torchrun's.
        let slurm = env(&[
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_LOCALID", "1"),
            ("MASTER_ADDR", "node0"),
            ("MASTER_PORT", "29500"),
        ])
        .unwrap();
        assert_eq!((slurm.rank, slurm.world_size, slurm.local_rank), (3, 8, 1));
        let mpi = env(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "2"),
        ])
        .unwrap();
        assert_eq!((mpi.rank, mpi.world_size, mpi.local_rank), (1, 2, 1));
        // Digits only: a leading '+' or a space is not a port or a rank.
        for bad in ["+29637", " 29637", "29637 ", "2e3", ""] {
            let e = env(&[
                ("RANK", "0"),
                ("WORLD_SIZE", "2"),
                ("MASTER_ADDR", "h"),
                ("MASTER_PORT", bad),
            ])
            .unwrap_err()
            .to_string();
            assert!(e.contains("MASTER_PORT"), "{bad:?}: {e}");
        }
        // The secret is required, at least 16 characters, and never printed.
        let mut m: HashMap<String, String> = [
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "2"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let e = RankEnv::from_env(|k| m.get(k).cloned()).unwrap_err();
        assert!(matches!(e, RendezvousError::MissingSecret));
        m.insert(SECRET_VAR.into(), "short".into());
        assert!(RankEnv::from_env(|k| m.get(k).cloned()).is_err());
        m.insert(SECRET_VAR.into(), "a long enough secret".into());
        let ok = RankEnv::from_env(|k| m.get(k).cloned()).unwrap();
        assert!(!format!("{ok:?}").contains("long enough"));
    }

    fn store(world: u32) -> (String, JobKey) {
        let key = JobKey::new(b"the job's secret, 24 bytes", "t").unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        serve(
            l,
            StoreConfig {
                key: key.clone(),
                world_size: world,
                timeout: Duration::from_millis(300),
            },
        );
        (addr, key)
    }

    /// Speaks the old, unauthenticated protocol: what a stranger on the port can do.
    fn stranger_request(addr: &str, op: u8, key: &str, value: &[u8]) -> Option<u8> {
        let mut c = TcpStream::connect(addr).ok()?;
        c.set_read_timeout(Some(Duration::from_secs(8))).ok()?;
        let m = if op == 1 {
            Message::Set {
                key: key.into(),
                value: value.to_vec(),
            }
        } else {
            Message::Get { key: key.into() }
        };
        c.write_all(&encode(&m)).ok()?;
        let mut b = [0u8; 1];
        c.read_exact(&mut b).ok()?;
        Some(b[0])
    }

    /// A stranger who knows only the port reads nothing and sets nothing: what it gets
    /// back is the challenge, never a reply with status 0.
    #[test]
    fn a_stranger_without_the_secret_reads_and_sets_nothing() {
        let (addr, key) = store(2);
        let mut r0 = Client::connect(&addr, &key, 0, Duration::from_secs(2)).unwrap();
        r0.set("blob", b"REAL-NCCL-ID").unwrap();
        let id = format!("{}/blob", key.id_hex());
        for (op, k) in [
            (2, "blob"),
            (2, id.as_str()),
            (1, "blob"),
            (1, "arrived/1"),
            (1, id.as_str()),
        ] {
            assert_eq!(
                stranger_request(&addr, op, k, b"STRANGER"),
                Some(MAGIC[0]),
                "{op} {k}"
            );
        }
        // With a wrong secret the proof is refused.
        let wrong = JobKey::new(b"not the job's secret, 24 b", "t").unwrap();
        let e = Client::connect(&addr, &wrong, 1, Duration::from_secs(2))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("refused our proof"), "{e}");
        // Another job (same secret, another job id) is told so.
        let other = JobKey::new(b"the job's secret, 24 bytes", "u").unwrap();
        let e = Client::connect(&addr, &other, 1, Duration::from_secs(2))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("another job"), "{e}");
        // A rank outside the world is refused.
        let e = Client::connect(&addr, &key, 7, Duration::from_secs(2))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("outside its world"), "{e}");
        let mut r1 = Client::connect(&addr, &key, 1, Duration::from_secs(2)).unwrap();
        assert_eq!(r1.get("blob").unwrap().unwrap(), b"REAL-NCCL-ID");
        // Set once; a rank sets only its own keys, inside the world; the blob is rank 0's.
        let e = r1.set("blob", b"X").unwrap_err().to_string();
        assert!(e.contains("refused key"), "{e}");
        assert!(r1.set("arrived/0", b"1").is_err());
        assert!(r1.set("arrived/7", b"1").is_err());
        assert!(r1.set("arrived/4294967295", b"1").is_err());
        r1.set("arrived/1", b"1").unwrap();
        let e = r1.set("arrived/1", b"1").unwrap_err().to_string();
        assert!(e.contains("already set"), "{e}");
        let e = r0.set("blob", b"OTHER").unwrap_err().to_string();
        assert!(e.contains("already set"), "{e}");
        assert_eq!(r1.get("blob").unwrap().unwrap(), b"REAL-NCCL-ID");
        // A key that never comes times out with status 1, not an error.
        assert_eq!(r1.get("arrived/0").unwrap(), None);
    }

    /// A server that does not prove the secret (a stranger's store on MASTER_PORT) is
    /// refused by the client.
    #[test]
    fn a_store_that_does_not_prove_the_secret_is_refused() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for c in l.incoming().flatten().take(2) {
                let mut c = c;
                let mut hello = Vec::from(&MAGIC[..]);
                hello.push(VERSION);
                hello.extend_from_slice(&[7u8; 16]);
                let _ = c.write_all(&hello);
                let mut b = [0u8; HELLO_LEN];
                let _ = c.read_exact(&mut b);
                let _ = c.write_all(&[ST_OK]);
                let _ = c.write_all(&[9u8; 32]);
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        let key = JobKey::new(b"the job's secret, 24 bytes", "t").unwrap();
        let e = Client::connect(&addr, &key, 1, Duration::from_secs(2))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("does not prove the job's secret"), "{e}");
    }

    /// Connections that never finish the handshake are capped and closed by the deadline;
    /// a proven rank is served meanwhile.
    #[test]
    fn half_open_connections_are_capped_and_a_rank_is_still_served() {
        let (addr, key) = store(2);
        let held: Vec<TcpStream> = (0..3 * MAX_PENDING)
            .filter_map(|_| {
                let mut c = TcpStream::connect(&addr).ok()?;
                c.write_all(&[1, 5, 0]).ok()?;
                Some(c)
            })
            .collect();
        assert!(held.len() >= MAX_PENDING);
        // Over the cap, connections are closed at once: a read sees the end of stream
        // (or the challenge, for those that got a slot).
        let t = Instant::now();
        let mut r0 = Client::connect(&addr, &key, 0, Duration::from_secs(10)).unwrap();
        assert!(t.elapsed() <= HANDSHAKE_DEADLINE + Duration::from_secs(3));
        r0.set("blob", b"ok").unwrap();
        assert_eq!(r0.get("blob").unwrap().unwrap(), b"ok");
    }

    proptest! {
        /// Whatever a client sends as its answer to the challenge reads without panic and
        /// allocates nothing beyond the fixed size.
        #[test]
        fn any_hello_reads_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = read_hello(&mut bytes.as_slice());
        }

        /// The store's key rule: a rank sets only keys ending in its own rank, inside the
        /// world; the blob only rank 0.
        #[test]
        fn key_rule(rank in 0u32..8, r in 0u32..20, world in 1u32..9) {
            let k = format!("3/x/{r}");
            prop_assert_eq!(key_allowed(&k, rank, world, true), r == rank && r < world);
            prop_assert_eq!(key_allowed(&k, rank, world, false), r < world);
            prop_assert_eq!(key_allowed("blob", rank, world, true), rank == 0);
        }
    }
}
