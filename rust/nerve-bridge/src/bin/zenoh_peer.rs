//! `nerve-zenoh-peer`: a bare Rust Zenoh publisher and subscriber for
//! bench/bridge/bench_bridge.py, the Rust counterpart of the Python
//! `zpub` / `zsub` of bench/bridge/peers.py. The same `zenoh` crate and
//! features as nerve-bridge-rs, the same configuration as the bridge
//! (peer, multicast scouting off, Zenoh shared memory off, the same drop
//! wait) and the same publisher settings (congestion control DROP,
//! priority DATA). Built only with `--features bench-peer` (not by
//! `make test`); the output is peers.py's: "ready" on stderr when the
//! subscriber is declared, then one JSON line on stdout.
//!
//!     nerve-zenoh-peer zsub LISTEN_EP N IDLE_S
//!     nerve-zenoh-peer zpub CONNECT_EP N SIZE RATE_HZ [express]
//!     nerve-zenoh-peer nwrite CHANNEL N SIZE RATE_HZ WAIT_S
//!
//! `nwrite` is peers.py's nerve writer in Rust (the `nerve` crate): the
//! bridge path's sender without Python's cost per message, to tell the
//! bridges' own rate from the sender's.
//!
//! Times are CLOCK_MONOTONIC (both hosts of the benchmark are namespaces of
//! one machine); the publisher's send time and index travel in the
//! attachment (two little-endian i64), so the subscriber never copies the
//! payload out of Zenoh, as peers.py's subscriber.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zenoh::qos::{CongestionControl, Priority};
use zenoh::Wait;

const KEY: &str = "bench/x";

fn clock(id: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn now_ns() -> i64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// CPU time of the whole process (all threads), nanoseconds.
fn cpu_ns() -> i64 {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn config(listen: Option<&str>, connect: Option<&str>) -> zenoh::Config {
    let mut c = zenoh::Config::default();
    let mut put = |k: &str, v: serde_json::Value| {
        c.insert_json5(k, &v.to_string())
            .unwrap_or_else(|e| panic!("config {k}: {e}"));
    };
    put("mode", "peer".into());
    put("scouting/multicast/enabled", false.into());
    put(
        "listen/endpoints",
        serde_json::json!(listen.into_iter().collect::<Vec<_>>()),
    );
    put(
        "connect/endpoints",
        serde_json::json!(connect.into_iter().collect::<Vec<_>>()),
    );
    put(
        "transport/link/tx/queue/congestion_control/drop/max_wait_before_drop_fragments",
        250_000.into(),
    );
    put("transport/shared_memory/enabled", false.into());
    c
}

#[derive(Default)]
struct Rx {
    lat: Vec<i64>,
    arr: Vec<i64>,
    first: i64,
    last: i64,
    cpu: [i64; 2],
    cpu_n: u64,
}

fn zsub(listen: &str, n: usize, idle_s: f64) {
    let s = zenoh::open(config(Some(listen), None))
        .wait()
        .expect("zenoh open");
    let rx = Arc::new(Mutex::new(Rx {
        lat: Vec::with_capacity(n),
        arr: Vec::with_capacity(n),
        ..Rx::default()
    }));
    let last = Arc::new(AtomicU64::new(0));
    let (r, l) = (rx.clone(), last.clone());
    let sub = s
        .declare_subscriber(KEY)
        .callback(move |sample| {
            let now = now_ns();
            let mut sent = 0i64;
            if let Some(a) = sample.attachment() {
                let b = a.to_bytes();
                if b.len() >= 8 {
                    sent = i64::from_le_bytes(b[..8].try_into().unwrap());
                }
            }
            std::hint::black_box(sample.payload().len());
            let mut x = r.lock().unwrap();
            x.lat.push(now - sent);
            x.arr.push(now);
            if x.first == 0 {
                x.first = now;
                x.cpu[0] = cpu_ns();
            } else if x.lat.len() % 1000 == 0 {
                x.cpu[1] = cpu_ns();
                x.cpu_n = x.lat.len() as u64;
            }
            x.last = now;
            l.store(x.lat.len() as u64, Ordering::Relaxed);
        })
        .wait()
        .expect("declare subscriber");
    eprintln!("ready");
    let end = Instant::now() + Duration::from_secs(120);
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(200));
        if last.load(Ordering::Relaxed) as usize >= n {
            break;
        }
        let t = rx.lock().unwrap().last;
        if t != 0 && (now_ns() - t) as f64 > idle_s * 1e9 {
            break;
        }
    }
    drop(sub);
    let x = rx.lock().unwrap();
    let cpu = if x.cpu_n > 1 {
        serde_json::json!((x.cpu[1] - x.cpu[0]) as f64 / 1e3 / x.cpu_n as f64)
    } else {
        serde_json::Value::Null
    };
    println!(
        "{}",
        serde_json::json!({"received": x.lat.len(), "lat_ns": x.lat, "arr_ns": x.arr,
                           "span_ns": x.last - x.first, "cpu_us_per_msg": cpu})
    );
    // As peers.py: leave without waiting for Zenoh's shutdown.
    std::process::exit(0);
}

fn zpub(connect: &str, n: usize, size: usize, rate: f64, express: bool) {
    let s = zenoh::open(config(None, Some(connect)))
        .wait()
        .expect("zenoh open");
    let p = s
        .declare_publisher(KEY)
        .congestion_control(CongestionControl::Drop)
        .priority(Priority::Data)
        .express(express)
        .wait()
        .expect("declare publisher");
    let end = Instant::now() + Duration::from_secs(20);
    while !p
        .matching_status()
        .wait()
        .map(|m| m.matching())
        .unwrap_or(false)
    {
        if Instant::now() > end {
            eprintln!("no subscriber");
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let body = vec![0x5au8; size];
    let mut put_ns = Vec::with_capacity(n);
    let c0 = cpu_ns();
    let t0 = now_ns();
    for i in 0..n {
        if rate > 0.0 {
            let due = t0 + (i as f64 * 1e9 / rate) as i64;
            let d = due - now_ns();
            if d > 0 {
                std::thread::sleep(Duration::from_nanos(d as u64));
            }
        }
        let ts = now_ns();
        let mut att = Vec::with_capacity(16);
        att.extend_from_slice(&ts.to_le_bytes());
        att.extend_from_slice(&(i as i64).to_le_bytes());
        // The payload is copied into a new buffer per message, as the
        // Python publisher's bytes become a new ZBytes per put.
        if let Err(e) = p.put(body.clone()).attachment(att).wait() {
            eprintln!("put: {e}");
        }
        put_ns.push(now_ns() - ts);
    }
    let t1 = now_ns();
    let cpu = cpu_ns() - c0;
    std::thread::sleep(Duration::from_secs(1));
    put_ns.sort_unstable();
    println!(
        "{}",
        serde_json::json!({"sent": n, "send_s": (t1 - t0) as f64 / 1e9,
                           "cpu_us_per_msg": cpu as f64 / 1e3 / n as f64,
                           "put_us_p50": put_ns[n / 2] as f64 / 1e3})
    );
    std::process::exit(0);
}

fn nwrite(name: &str, n: usize, size: usize, rate: f64, wait_s: f64) {
    let mut w = nerve::Channel::open(name, nerve::Access::Write)
        .unwrap_or_else(|e| panic!("open {name}: {e}"));
    std::thread::sleep(Duration::from_secs_f64(wait_s));
    let mut body = vec![0x5au8; size.max(8)];
    body.truncate(size);
    let c0 = cpu_ns();
    let t0 = now_ns();
    for i in 0..n {
        if rate > 0.0 {
            let due = t0 + (i as f64 * 1e9 / rate) as i64;
            let d = due - now_ns();
            if d > 0 {
                std::thread::sleep(Duration::from_nanos(d as u64));
            }
        }
        if body.len() >= 8 {
            body[..8].copy_from_slice(&(i as i64).to_le_bytes());
        }
        w.put(&body).unwrap_or_else(|e| panic!("put: {e}"));
    }
    let t1 = now_ns();
    let cpu = cpu_ns() - c0;
    println!(
        "{}",
        serde_json::json!({"sent": n, "send_s": (t1 - t0) as f64 / 1e9,
                           "cpu_us_per_msg": cpu as f64 / 1e3 / n as f64})
    );
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize| -> f64 {
        a.get(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| usage())
    };
    match a.first().map(String::as_str) {
        Some("zsub") if a.len() == 4 => zsub(&a[1], num(2) as usize, num(3)),
        Some("zpub") if a.len() == 5 || a.len() == 6 => zpub(
            &a[1],
            num(2) as usize,
            num(3) as usize,
            num(4),
            a.get(5).map(String::as_str) == Some("express"),
        ),
        Some("nwrite") if a.len() == 6 => {
            nwrite(&a[1], num(2) as usize, num(3) as usize, num(4), num(5))
        }
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: nerve-zenoh-peer zsub LISTEN_EP N IDLE_S | zpub CONNECT_EP N SIZE RATE_HZ [express] \
         | nwrite CHANNEL N SIZE RATE_HZ WAIT_S"
    );
    std::process::exit(2);
}
