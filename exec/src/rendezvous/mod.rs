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

mod client;
mod store;
mod wire;

pub use client::Client;
pub use store::{serve, StoreConfig};
pub use wire::{encode, read_hello, read_message, Hello, Message};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::net::TcpListener;
use std::time::Duration;

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

pub(crate) const MAGIC: &[u8; 4] = b"KCRS";
pub(crate) const VERSION: u8 = 1;
pub(crate) const HELLO_LEN: usize = 8 + 4 + 16 + 32;

pub(crate) const ST_OK: u8 = 0;
pub(crate) const ST_TIMEOUT: u8 = 1;
pub(crate) const ST_BAD_PROOF: u8 = 2;
pub(crate) const ST_OTHER_JOB: u8 = 3;
pub(crate) const ST_ALREADY_SET: u8 = 4;
pub(crate) const ST_BAD_RANK: u8 = 5;
pub(crate) const ST_BAD_KEY: u8 = 6;
pub(crate) const ST_FULL: u8 = 7;

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
    pub(crate) secret: Vec<u8>,
    pub(crate) id: [u8; 8],
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

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn mac(secret: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// Compares two MACs in time independent of where they differ.
pub(crate) fn same_mac(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

pub(crate) fn nonce<const N: usize>() -> [u8; N] {
    let mut n = [0u8; N];
    getrandom::getrandom(&mut n).expect("the OS random source");
    n
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
mod tests;
