//! The rank store of `kc exec --ranks env` (`kc::exec::rendezvous`) without a GPU: the
//! same `rendezvous` call a rank makes before it opens its GPU, so the store can be
//! exercised on any machine (../shared/examples/hostile2/repro.sh runs it). Build it with
//! `cargo build --release --example store_example`. Every rank and the store take the job's
//! secret from `KC_JOB_SECRET` (and an optional `KC_JOB_ID`), as `kc exec --ranks env` does.
//!
//!   store_example serve ADDR TIMEOUT_S   rank 0's store alone, until killed, for a world
//!                                        of WORLD_SIZE (default 2) ranks
//!                                        (prints `SERVING ADDR pid=PID`)
//!   store_example rank TIMEOUT_S         one rank, from RANK, WORLD_SIZE, MASTER_ADDR and
//!                                        MASTER_PORT; rank 0 serves the store and
//!                                        publishes $BLOB (default REAL-NCCL-ID), as it
//!                                        publishes the NCCL unique id in `kc exec`
//!
//! A rank prints `RANK-OK R blob=B after S s` or `RANK-ERR R MESSAGE after S s` (exit 1).
use kc::exec::rendezvous::{rendezvous, serve, JobKey, RankEnv, StoreConfig};
use std::io::Write;
use std::time::{Duration, Instant};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let secs =
        |s: Option<&String>| Duration::from_secs(s.and_then(|s| s.parse().ok()).unwrap_or(5));
    match a.get(1).map(String::as_str) {
        Some("serve") if a.len() >= 3 => {
            let secret = std::env::var("KC_JOB_SECRET").unwrap_or_default();
            let job = std::env::var("KC_JOB_ID").unwrap_or_default();
            let key = match JobKey::new(secret.as_bytes(), &job) {
                Ok(k) => k,
                Err(e) => {
                    println!("ENV-ERR {e}");
                    std::process::exit(2)
                }
            };
            let world_size = std::env::var("WORLD_SIZE")
                .ok()
                .and_then(|w| w.parse().ok())
                .unwrap_or(2);
            let l = match std::net::TcpListener::bind(&a[2]) {
                Ok(l) => l,
                Err(e) => {
                    println!("BIND-ERR {e}");
                    std::process::exit(2)
                }
            };
            serve(
                l,
                StoreConfig {
                    key,
                    world_size,
                    timeout: secs(a.get(3)),
                },
            );
            println!("SERVING {} pid={}", a[2], std::process::id());
            let _ = std::io::stdout().flush();
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        Some("rank") => {
            let timeout = secs(a.get(2));
            let env = match RankEnv::from_env(|k| std::env::var(k).ok()) {
                Ok(e) => e,
                Err(e) => {
                    println!("ENV-ERR {e}");
                    std::process::exit(2)
                }
            };
            let blob = std::env::var("BLOB")
                .unwrap_or_else(|_| "REAL-NCCL-ID".into())
                .into_bytes();
            let t0 = Instant::now();
            match rendezvous(&env, timeout, move || blob) {
                Ok(b) => println!(
                    "RANK-OK {} blob={} after {:.1} s",
                    env.rank,
                    String::from_utf8_lossy(&b),
                    t0.elapsed().as_secs_f64()
                ),
                Err(e) => {
                    println!(
                        "RANK-ERR {} {e} after {:.1} s",
                        env.rank,
                        t0.elapsed().as_secs_f64()
                    );
                    std::process::exit(1)
                }
            }
        }
        _ => {
            eprintln!("usage: store_example serve ADDR TIMEOUT_S | store_example rank TIMEOUT_S");
            std::process::exit(2)
        }
    }
}
