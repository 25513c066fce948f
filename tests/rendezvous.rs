//! The rank bootstrap between processes on localhost (issue 15, no GPU): ranks started as
//! torchrun would start them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) meet through rank
//! 0's store and all receive rank 0's blob; a rank that never starts ends the others with an
//! error naming it, within the deadline, not a hang.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// When the test binary runs as one rank (see `spawn_rank`, which names this test by its
/// path in the integration binary, `rendezvous::rank_process`), this is that rank's body.
#[test]
fn rank_process() {
    if std::env::var("KC_TEST_RANK_CHILD").is_err() {
        return;
    }
    let env = kc::exec::rendezvous::RankEnv::from_env(|k| std::env::var(k).ok()).unwrap();
    let secs: u64 = std::env::var("KC_TEST_TIMEOUT_S").unwrap().parse().unwrap();
    let timeout = Duration::from_secs(secs);
    if std::env::var("KC_TEST_JOB").is_ok() {
        // A job's agreements after the rendezvous, as a replay makes them: every rank
        // reports how many replays it launched and tops up to the most; a barrier; leave.
        let run = || -> Result<(u64, u64), kc::exec::rendezvous::RendezvousError> {
            let (mut job, _) = kc::exec::rendezvous::Job::join(&env, timeout, Vec::new)?;
            let most = job.agree_max("launched", 100 + u64::from(env.rank) * 7)?;
            job.barrier("unit 5")?;
            let all = job.all_gather("ok", u64::from(env.rank))?;
            job.finish()?;
            Ok((most, all.iter().sum()))
        };
        match run() {
            Ok((most, sum)) => println!("\nRANK-OK {} {most} {sum}", env.rank),
            Err(e) => println!("\nRANK-ERR {} {e}", env.rank),
        }
        return;
    }
    match kc::exec::rendezvous::rendezvous(&env, timeout, || (0u8..128).collect()) {
        Ok(blob) => println!(
            "\nRANK-OK {} {}",
            env.rank,
            blob.iter().map(|b| u64::from(*b)).sum::<u64>()
        ),
        Err(e) => println!("\nRANK-ERR {} {e}", env.rank),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn_rank(rank: u32, world: u32, port: u16, timeout_s: u64) -> Child {
    spawn_rank_with(rank, world, port, timeout_s, &[])
}

fn spawn_rank_with(
    rank: u32,
    world: u32,
    port: u16,
    timeout_s: u64,
    extra: &[(&str, &str)],
) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "rendezvous::rank_process",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("KC_TEST_RANK_CHILD", "1")
        .env("KC_JOB_SECRET", "a test job's secret, 32 chars..")
        .env_remove("KC_JOB_ID")
        .env("KC_TEST_TIMEOUT_S", timeout_s.to_string())
        .env("RANK", rank.to_string())
        .env("WORLD_SIZE", world.to_string())
        .env("LOCAL_RANK", rank.to_string())
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
        .envs(extra.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

fn outcome(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.find("RANK-").map(|i| l[i..].to_string()))
        .unwrap_or_else(|| "no outcome".into())
}

#[test]
fn ranks_meet_through_rank_zeros_store() {
    let port = free_port();
    // Later ranks first: they wait for rank 0 to come up.
    let mut children: Vec<(u32, Child)> = (1..4)
        .rev()
        .map(|r| (r, spawn_rank(r, 4, port, 20)))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    children.push((0, spawn_rank(0, 4, port, 20)));
    for (r, c) in children {
        let o = outcome(c);
        // Every rank got the 128-byte blob 0..127 (sum 8128).
        assert_eq!(o, format!("RANK-OK {r} 8128"), "rank {r}");
    }
}

#[test]
fn a_rank_that_never_starts_ends_the_others_with_its_name() {
    let port = free_port();
    let t = Instant::now();
    // World of 3; rank 2 is never started.
    let c0 = spawn_rank(0, 3, port, 3);
    let c1 = spawn_rank(1, 3, port, 3);
    for (r, c) in [(0, c0), (1, c1)] {
        let o = outcome(c);
        assert!(
            o.starts_with(&format!("RANK-ERR {r}")) && o.contains("rank 2 of 3 did not arrive"),
            "{o}"
        );
    }
    assert!(t.elapsed() < Duration::from_secs(30));
    // Without rank 0 at all, a rank says nobody answered.
    let port = free_port();
    let o = outcome(spawn_rank(1, 2, port, 2));
    assert!(o.contains("no rank 0 answered"), "{o}");
}

#[test]
fn a_job_agrees_on_launch_counts_and_meets_at_barriers() {
    let port = free_port();
    let children: Vec<(u32, Child)> = (0..3)
        .map(|r| (r, spawn_rank_with(r, 3, port, 20, &[("KC_TEST_JOB", "1")])))
        .collect();
    for (r, c) in children {
        // The most launched is rank 2's 114; the ranks' numbers sum to 3.
        assert_eq!(outcome(c), format!("RANK-OK {r} 114 3"), "rank {r}");
    }
}

/// Two jobs on one MASTER_PORT (torchrun's default 29500 is common): the second job's
/// rank 0 fails at once (the port is taken), and its rank 1 refuses the first job's store
/// (another job id), so it never reads the first job's blob.
#[test]
fn a_second_job_on_the_same_port_joins_nothing() {
    let port = free_port();
    let a0 = spawn_rank_with(0, 2, port, 4, &[("KC_JOB_ID", "job-a")]);
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let b0 = spawn_rank_with(0, 2, port, 4, &[("KC_JOB_ID", "job-b")]);
    let o = outcome(b0);
    assert!(o.contains("rank 0 cannot listen"), "{o}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let b1 = spawn_rank_with(1, 2, port, 4, &[("KC_JOB_ID", "job-b")]);
    let o = outcome(b1);
    assert!(o.contains("serves another job"), "{o}");
    // Job A's rank 0 was joined by nobody: it names its missing rank 1.
    let o = outcome(a0);
    assert!(o.contains("rank 1 of 2 did not arrive"), "{o}");
    // A rank with another secret is refused by the store.
    let port = free_port();
    let a0 = spawn_rank_with(0, 2, port, 3, &[]);
    let x1 = spawn_rank_with(
        1,
        2,
        port,
        3,
        &[("KC_JOB_SECRET", "another secret of 32 characters")],
    );
    let o = outcome(x1);
    assert!(o.contains("refused our proof"), "{o}");
    let _ = outcome(a0);
}

/// The battery's attacks while a legitimate 8-rank job meets on the same port: strangers
/// reading, setting and half-sending, many connections at once. Every attack is refused
/// (the stranger never gets a status-0 reply), and all 8 ranks meet, get rank 0's blob and
/// finish.
#[test]
fn an_eight_rank_job_is_unaffected_by_strangers_on_its_port() {
    use std::io::{Read, Write};
    let port = free_port();
    let mut ranks: Vec<(u32, Child)> = (0..8).map(|r| (r, spawn_rank(r, 8, port, 20))).collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let attackers: Vec<_> = (0..4)
        .map(|a| {
            let (stop, accepted) = (stop.clone(), accepted.clone());
            std::thread::spawn(move || {
                let mut held = Vec::new();
                let mut tries = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) && tries < 400 {
                    tries += 1;
                    let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    };
                    let _ = c.set_read_timeout(Some(Duration::from_millis(300)));
                    // A set of rank 1's arrival and a get of the blob, as a stranger would.
                    let key = b"arrived/1";
                    let mut m = vec![1u8];
                    m.extend_from_slice(&(key.len() as u32).to_le_bytes());
                    m.extend_from_slice(key);
                    m.extend_from_slice(&1u32.to_le_bytes());
                    m.push(b'1');
                    if a % 2 == 0 {
                        let _ = c.write_all(&m);
                        let mut b = [0u8; 1];
                        if c.read_exact(&mut b).is_ok() && b[0] == 0 {
                            accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                    } else {
                        let _ = c.write_all(&[1, 5, 0]); // half a header, then silence
                        held.push(c);
                        if held.len() > 50 {
                            held.clear();
                        }
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        })
        .collect();
    for (r, c) in ranks.drain(..) {
        assert_eq!(outcome(c), format!("RANK-OK {r} 8128"), "rank {r}");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for a in attackers {
        a.join().unwrap();
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// `kc exec PLAN --ranks all` on a machine where the ranks cannot replay (no GPU executor
/// in this build): every rank fails, the job ends with an error naming a rank and its log,
/// quickly, not a hang.
#[test]
fn ranks_all_ends_with_the_failing_rank_named() {
    let dir = tempfile::tempdir().unwrap();
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/h200x2");
    let kc = env!("CARGO_BIN_EXE_kc");
    let g = dir.path().join("tp.kcir");
    let l = dir.path().join("tp.l.kcir");
    let p = dir.path().join("tp.kcplan");
    for args in [
        vec![
            "ingest",
            shared.to_str().unwrap(),
            "-o",
            g.to_str().unwrap(),
        ],
        vec![
            "lower",
            "--tiers",
            g.to_str().unwrap(),
            "-o",
            l.to_str().unwrap(),
        ],
        vec!["plan", l.to_str().unwrap(), "-o", p.to_str().unwrap()],
    ] {
        assert!(Command::new(kc)
            .args(&args)
            .output()
            .unwrap()
            .status
            .success());
    }
    let t = Instant::now();
    // Run where the plan is: results and rank logs go to the working directory.
    let out = Command::new(kc)
        .current_dir(p.parent().unwrap())
        .args(["exec", p.to_str().unwrap(), "--ranks", "all", "--no-energy"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("of 2 failed") && err.contains("the job was stopped"),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(60));
    // --ranks replays every rank; asking for one rank as well is refused.
    let both = Command::new(kc)
        .args(["exec", p.to_str().unwrap(), "--ranks", "all", "--rank", "0"])
        .output()
        .unwrap();
    assert!(!both.status.success());
    let err = String::from_utf8_lossy(&both.stderr);
    assert!(err.contains("cannot be used with"), "{err}");
}
