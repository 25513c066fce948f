//! The rank bootstrap between processes on localhost (issue 15, no GPU): ranks started as
//! torchrun would start them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) meet through rank
//! 0's store and all receive rank 0's blob; a rank that never starts ends the others with an
//! error naming it, within the deadline, not a hang.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// When the test binary runs as one rank (see `spawn_rank`), this is that rank's body.
#[test]
fn rank_process() {
    if std::env::var("KC_TEST_RANK_CHILD").is_err() {
        return;
    }
    let env = kc::exec::rendezvous::RankEnv::from_env(|k| std::env::var(k).ok()).unwrap();
    let secs: u64 = std::env::var("KC_TEST_TIMEOUT_S").unwrap().parse().unwrap();
    match kc::exec::rendezvous::rendezvous(&env, Duration::from_secs(secs), || (0u8..128).collect())
    {
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
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "rank_process",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("KC_TEST_RANK_CHILD", "1")
        .env("KC_TEST_TIMEOUT_S", timeout_s.to_string())
        .env("RANK", rank.to_string())
        .env("WORLD_SIZE", world.to_string())
        .env("LOCAL_RANK", rank.to_string())
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
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
