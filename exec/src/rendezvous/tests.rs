//! The store, its handshake and the launcher's environment, tested on loopback.

use super::store::key_allowed;
use super::*;
use proptest::prelude::*;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

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
/// refused by the client, and so is one that says nothing (refused after the handshake's
/// deadline, not retried until the job's).
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
