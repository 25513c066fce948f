//! Bootstrapping a multi-rank replay the way torchrun does: every process reads `RANK`,
//! `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR` and `MASTER_PORT`; rank 0 serves a small TCP
//! key-value store, every rank connects to it, rank 0 publishes a blob (the NCCL unique id)
//! and every rank reads it, then all meet at a barrier. The same code runs under torchrun,
//! Slurm or mpirun (which set those variables) and under `kc exec --ranks all`.
//!
//! Wire format (one request, one reply, on a connection that stays open): a request is
//! `op: u8` (1 = set, 2 = get), key length `u32` LE, key bytes, value length `u32` LE, value
//! bytes (empty for get); a reply is `status: u8` (0 = ok, 1 = timed out), value length `u32`
//! LE, value bytes. Keys are at most [`MAX_KEY`] bytes, values at most [`MAX_VALUE`].
//! Invariants: a malformed message is an error naming what and where, never a panic or an
//! allocation beyond the limits; every wait has a deadline, so a rank that dies or never
//! starts ends the job on every other rank with an error that names it, not a hang.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub const MAX_KEY: usize = 256;
pub const MAX_VALUE: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    #[error("{0} is not set: launch with torchrun, Slurm, mpirun or `kc exec --ranks all`, which set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT")]
    MissingVar(&'static str),
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

type Table = Arc<(Mutex<HashMap<String, Vec<u8>>>, Condvar)>;

/// Serves the store on `listener` until the process ends: one thread per connection; a
/// get waits for its key until `timeout`.
pub fn serve(listener: TcpListener, timeout: Duration) {
    let table: Table = Arc::new((Mutex::new(HashMap::new()), Condvar::new()));
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let table = table.clone();
            std::thread::spawn(move || {
                let _ = handle(conn, &table, timeout);
            });
        }
    });
}

fn handle(mut conn: TcpStream, table: &Table, timeout: Duration) -> Result<(), RendezvousError> {
    let io = |e: std::io::Error| RendezvousError::Message(e.to_string());
    while let Some(m) = read_message(&mut conn)? {
        let (lock, cv) = &**table;
        match m {
            Message::Set { key, value } => {
                lock.lock()
                    .map_err(|_| RendezvousError::Message("poisoned".into()))?
                    .insert(key, value);
                cv.notify_all();
                conn.write_all(&[0, 0, 0, 0, 0]).map_err(io)?;
            }
            Message::Get { key } => {
                let deadline = Instant::now() + timeout;
                let mut t = lock
                    .lock()
                    .map_err(|_| RendezvousError::Message("poisoned".into()))?;
                let value = loop {
                    if let Some(v) = t.get(&key) {
                        break Some(v.clone());
                    }
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break None;
                    }
                    t = cv
                        .wait_timeout(t, left)
                        .map_err(|_| RendezvousError::Message("poisoned".into()))?
                        .0;
                };
                drop(t);
                let mut reply = vec![u8::from(value.is_none())];
                let v = value.unwrap_or_default();
                reply.extend_from_slice(&(v.len() as u32).to_le_bytes());
                reply.extend_from_slice(&v);
                conn.write_all(&reply).map_err(io)?;
            }
        }
    }
    Ok(())
}

/// A connection to the store.
pub struct Client {
    conn: TcpStream,
    addr: String,
}

impl Client {
    /// Connects, retrying until `timeout` (rank 0 may start after the others).
    pub fn connect(addr: &str, timeout: Duration) -> Result<Self, RendezvousError> {
        let deadline = Instant::now() + timeout;
        let store = |why: String| RendezvousError::Store {
            addr: addr.to_string(),
            why,
        };
        loop {
            let target = addr
                .to_socket_addrs()
                .map_err(|e| store(format!("cannot resolve: {e}")))?
                .next()
                .ok_or_else(|| store("resolves to no address".into()))?;
            match TcpStream::connect_timeout(&target, Duration::from_millis(500)) {
                Ok(conn) => {
                    // Replies come within the store's own deadline, plus slack.
                    let _ = conn.set_read_timeout(Some(timeout + Duration::from_secs(5)));
                    return Ok(Self {
                        conn,
                        addr: addr.to_string(),
                    });
                }
                Err(e) if Instant::now() >= deadline => {
                    return Err(store(format!(
                        "no rank 0 answered within {:.0} s ({e}): is rank 0 running, and MASTER_ADDR/MASTER_PORT right?",
                        timeout.as_secs_f64()
                    )))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
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
        Ok((status[0] == 0).then_some(value))
    }

    pub fn set(&mut self, key: &str, value: &[u8]) -> Result<(), RendezvousError> {
        self.request(&Message::Set {
            key: key.into(),
            value: value.to_vec(),
        })
        .map(|_| ())
    }

    /// The value of `key`, waiting for it as long as the store allows.
    pub fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, RendezvousError> {
        self.request(&Message::Get { key: key.into() })
    }
}

/// Where this process stands in the job, from the launcher's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankEnv {
    pub rank: u32,
    pub world_size: u32,
    pub local_rank: u32,
    pub master: String,
}

impl RankEnv {
    /// Reads torchrun's variables; where one is missing, the one Slurm (`SLURM_PROCID`,
    /// `SLURM_NTASKS`, `SLURM_LOCALID`) or Open MPI (`OMPI_COMM_WORLD_RANK`, `_SIZE`,
    /// `_LOCAL_RANK`) sets for it. `MASTER_ADDR`/`MASTER_PORT` are always the user's.
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
        let num = |name: &'static str| -> Result<u32, RendezvousError> {
            let v = get(name).ok_or(RendezvousError::MissingVar(name))?;
            v.trim().parse().map_err(|_| RendezvousError::BadVar {
                name,
                value: v,
                what: "number",
            })
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
        Ok(Self {
            rank,
            world_size,
            local_rank,
            master: format!("{addr}:{port}"),
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
        let key = |r: u32| format!("{}/{what}/{r}", self.seq);
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
    if env.rank == 0 {
        let listener = TcpListener::bind(&env.master).map_err(|e| RendezvousError::Store {
            addr: env.master.clone(),
            why: format!("rank 0 cannot listen: {e}"),
        })?;
        serve(listener, timeout);
    }
    let mut c = Client::connect(&env.master, timeout)?;
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
            let m: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
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
    }
}
