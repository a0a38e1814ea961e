//! nerve-peer-iceoryx2: the ping-pong shapes of `nerve bench --pingpong`,
//! run over iceoryx2, so that both can be measured side by side in one run
//! with the same CPU placement (bench/peers/run.sh).
//!
//! Shape (the same as nerve's, see bench/pingpong.c): the parent forks two
//! processes pinned to CPU A (ping) and CPU B (pong). Ping sends a message
//! on service a2b, pong waits for it and answers on b2a, ping waits for the
//! answer: one round trip is two hops. Ping reads CLOCK_MONOTONIC once per
//! round trip, so the round-trip samples add up exactly to the timed total;
//! the average one-way hop is total / (2 x iterations) and the per-hop
//! percentiles are those of the round trips halved. Warm-up round trips
//! come first and are not timed (their count is reported). Every round trip
//! of the timed loop is kept: none is dropped.
//!
//! Rows:
//!   poll-zc          publish-subscribe: loan, send without touching the payload; the reader
//!                    spins on receive() and drops the sample unread
//!                    (the shape of iceoryx2's benchmark-publish-subscribe)
//!   poll-copy        publish-subscribe: loan, copy the payload in from a buffer, send; the
//!                    reader copies the payload out into a buffer
//!   wait-event       event service: notify / blocking wait, no payload (the shape of
//!                    iceoryx2's benchmark-event)
//!
//! Unlike iceoryx2's own benchmarks (two threads of one process, the next
//! sample loaned before waiting), this uses two processes and loans each
//! sample just before it is sent, as nerve's bench does.
//!
//! Output: a table with the columns of `nerve bench --pingpong`, and with
//! --json one JSON line per row with the same field names.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use iceoryx2::prelude::*;

const IOX2_VERSION: &str = "0.10.0";
const HELP: &str = "\
usage: nerve-peer-iceoryx2 [options]
Ping-pong between two pinned processes over iceoryx2 (see src/main.rs).
  --cpus A,B        CPUs of ping and pong (default 0,1)
  --size LIST       payload sizes, K and M suffixes (default 64,4K,64K,1M)
  --duration SEC    timed seconds per row, over all rounds (default 1)
  --iterations N    exactly N timed round trips per row and round
                    (default: as many as --duration allows, at most 2M)
  --warmup N        untimed round trips first (default 1000)
  --rounds N        run every row N times in alternation (default 3)
  --rows LIST       any of poll-zc, poll-copy, wait-event (default all)
  --json FILE       one JSON line per row ('-': stdout, table on stderr)
  --quiet           no table
Exit 0 when every row ran, 1 when one failed, 2 on usage errors.
";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Row {
    PubSubZc,
    PubSubCopy,
    Event,
}

impl Row {
    fn name(self) -> &'static str {
        match self {
            Row::PubSubZc => "poll-zc",
            Row::PubSubCopy => "poll-copy",
            Row::Event => "wait-event",
        }
    }
}

struct Opts {
    cpus: [usize; 2],
    cpus_text: String,
    sizes: Vec<usize>,
    duration: f64,
    iterations: u64, // 0: by duration
    warmup: u64,
    rounds: u32,
    rows: Vec<Row>,
    json: Option<String>,
    quiet: bool,
}

const MAX_SAMPLES: u64 = 1 << 21;
/// A wait for the peer gives up after this long: a dead peer is an error,
/// never a hang.
const PEER_TIMEOUT: Duration = Duration::from_secs(20);

/// The page the parent and its two children share (MAP_SHARED anonymous).
#[repr(C)]
struct Ctl {
    pong_ready: AtomicU32,
    ping_ready: AtomicU32,
    go: AtomicU32,
    stop: AtomicU32,
    failed: AtomicU32,
    _pad: u32,
    iterations: AtomicU64,
    total_ns: AtomicU64,
    error: [u8; 256],
}

/// The round-trip samples follow the control block in the shared mapping.
const SAMPLES_OFF: usize = 4096;

fn usage(msg: &str) -> ! {
    eprintln!("nerve-peer-iceoryx2: {msg}\nTry 'nerve-peer-iceoryx2 --help'.");
    std::process::exit(2);
}

fn parse_size(s: &str) -> Option<usize> {
    let t = s.trim_end_matches(['B', 'b']).trim_end_matches('i');
    let (num, shift) = if let Some(n) = t.strip_suffix(['K', 'k']) {
        (n, 10)
    } else if let Some(n) = t.strip_suffix(['M', 'm']) {
        (n, 20)
    } else {
        (t, 0)
    };
    let v: usize = num.parse().ok()?;
    let v = v.checked_shl(shift)?;
    if (8..=(256 << 20)).contains(&v) {
        Some(v)
    } else {
        None
    }
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        cpus: [0, 1],
        cpus_text: "0,1".into(),
        sizes: vec![64, 4096, 65536, 1 << 20],
        duration: 1.0,
        iterations: 0,
        warmup: 1000,
        rounds: 3,
        rows: vec![Row::PubSubZc, Row::PubSubCopy, Row::Event],
        json: None,
        quiet: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let mut val = || -> String {
            i += 1;
            args.get(i)
                .cloned()
                .unwrap_or_else(|| usage(&format!("missing value for {a}")))
        };
        match a {
            "--help" | "-h" => {
                print!("{HELP}");
                std::process::exit(0);
            }
            "--cpus" => {
                let v = val();
                let p: Vec<Option<usize>> = v.split(',').map(|x| x.parse().ok()).collect();
                if p.len() != 2 || p.iter().any(|x| x.is_none()) {
                    usage(&format!("bad --cpus '{v}' (two CPUs, e.g. 0,1)"));
                }
                o.cpus = [p[0].unwrap(), p[1].unwrap()];
                o.cpus_text = v;
            }
            "--size" => {
                let v = val();
                let s: Option<Vec<usize>> = v.split(',').map(parse_size).collect();
                o.sizes = s.filter(|s| !s.is_empty()).unwrap_or_else(|| {
                    usage(&format!("bad --size '{v}' (8 bytes to 256M, a list)"))
                });
            }
            "--duration" => {
                let v = val();
                o.duration = v
                    .parse()
                    .ok()
                    .filter(|d: &f64| *d > 0.0 && *d <= 3600.0)
                    .unwrap_or_else(|| usage(&format!("bad --duration '{v}'")));
            }
            "--iterations" => {
                let v = val();
                o.iterations = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_SAMPLES).contains(n))
                    .unwrap_or_else(|| usage(&format!("bad --iterations '{v}' (1 to 2097152)")));
            }
            "--warmup" => {
                let v = val();
                o.warmup = v
                    .parse()
                    .ok()
                    .filter(|n| *n <= 1_000_000)
                    .unwrap_or_else(|| usage(&format!("bad --warmup '{v}'")));
            }
            "--rounds" => {
                let v = val();
                o.rounds = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=100).contains(n))
                    .unwrap_or_else(|| usage(&format!("bad --rounds '{v}'")));
            }
            "--rows" => {
                let v = val();
                let mut rows = Vec::new();
                for r in v.split(',') {
                    rows.push(match r {
                        "poll-zc" => Row::PubSubZc,
                        "poll-copy" => Row::PubSubCopy,
                        "wait-event" => Row::Event,
                        _ => usage(&format!("bad --rows '{v}' (poll-zc, poll-copy, wait-event)")),
                    });
                }
                o.rows = rows;
            }
            "--json" => o.json = Some(val()),
            "--quiet" => o.quiet = true,
            _ => usage(&format!("unknown option '{a}'")),
        }
        i += 1;
    }
    o
}

fn set_error(ctl: &Ctl, msg: &str) {
    if ctl
        .failed
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        let p = &ctl.error as *const [u8; 256] as *mut u8;
        let b = msg.as_bytes();
        let n = b.len().min(255);
        // Written once, by the first process that fails; the parent reads
        // it after both children exited.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), p, n);
            *p.add(n) = 0;
        }
    }
}

fn child_fail(ctl: &Ctl, who: &str, msg: &str) -> ! {
    set_error(ctl, &format!("{who}: {msg}"));
    unsafe { libc_exit(1) }
}

extern "C" {
    fn _exit(code: i32) -> !;
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn kill(pid: i32, sig: i32) -> i32;
    fn getpid() -> i32;
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn sched_setaffinity(pid: i32, size: usize, mask: *const u8) -> i32;
    fn munmap(addr: *mut u8, len: usize) -> i32;
}

unsafe fn libc_exit(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    _exit(code)
}

fn pin(cpu: usize) -> Result<(), String> {
    let mut mask = [0u8; 128];
    if cpu >= mask.len() * 8 {
        return Err(format!("cpu {cpu} out of range"));
    }
    mask[cpu / 8] |= 1 << (cpu % 8);
    let r = unsafe { sched_setaffinity(0, mask.len(), mask.as_ptr()) };
    if r != 0 {
        return Err(format!(
            "sched_setaffinity(cpu {cpu}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Spin (or call `poll` in a loop) until it returns true; gives up after
/// PEER_TIMEOUT or when the other side failed. The clock is read once every
/// 4096 tries only.
fn spin_until(ctl: &Ctl, mut poll: impl FnMut() -> bool) -> Result<(), String> {
    let mut n: u32 = 0;
    let mut start: Option<Instant> = None;
    loop {
        if poll() {
            return Ok(());
        }
        n = n.wrapping_add(1);
        if n % 4096 == 0 {
            if ctl.failed.load(Ordering::Relaxed) != 0 {
                return Err("the peer failed".into());
            }
            let s = *start.get_or_insert_with(Instant::now);
            if s.elapsed() > PEER_TIMEOUT {
                return Err(format!("no answer from the peer within {PEER_TIMEOUT:?}"));
            }
        }
    }
}

struct Plan {
    row: Row,
    size: usize,
    duration: f64,
    iterations: u64,
    warmup: u64,
}

fn service_names(tag: &str) -> Result<(ServiceName, ServiceName), String> {
    let a = ServiceName::new(&format!("nerve-peer/{tag}/a2b")).map_err(|e| format!("{e:?}"))?;
    let b = ServiceName::new(&format!("nerve-peer/{tag}/b2a")).map_err(|e| format!("{e:?}"))?;
    Ok((a, b))
}

/// The timed loop of ping. `round_trip` does one round trip. Returns the
/// round-trip samples (ns) and the total.
fn ping_loop(
    ctl: &Ctl,
    plan: &Plan,
    mut round_trip: impl FnMut(bool) -> Result<(), String>,
) -> Result<(Vec<u32>, u64), String> {
    for _ in 0..plan.warmup {
        round_trip(false)?;
    }
    let cap = if plan.iterations > 0 {
        plan.iterations
    } else {
        MAX_SAMPLES
    };
    let mut samples: Vec<u32> = Vec::with_capacity(cap as usize);
    // Fault the sample array in before the timed loop.
    samples.resize(cap as usize, 0);
    samples.clear();
    let limit = Duration::from_secs_f64(plan.duration);
    let t0 = Instant::now();
    let mut prev = t0;
    while (samples.len() as u64) < cap {
        round_trip(false)?;
        let now = Instant::now();
        let d = (now - prev).as_nanos();
        samples.push(d.min(u32::MAX as u128) as u32);
        prev = now;
        if plan.iterations == 0 && now - t0 >= limit {
            break;
        }
    }
    let total = (prev - t0).as_nanos() as u64;
    // The last message tells pong to stop; it does not answer it.
    ctl.stop.store(1, Ordering::Release);
    round_trip(true)?;
    Ok((samples, total))
}

/// Hands the samples to the parent through the shared mapping (its room
/// holds MAX_SAMPLES, the most ping_loop takes).
fn report(ctl: &Ctl, samples: Vec<u32>, total: u64) {
    let dst = unsafe { (ctl as *const Ctl as *mut u8).add(SAMPLES_OFF) as *mut u32 };
    unsafe { std::ptr::copy_nonoverlapping(samples.as_ptr(), dst, samples.len()) };
    ctl.total_ns.store(total, Ordering::Relaxed);
    ctl.iterations.store(samples.len() as u64, Ordering::Release);
}

fn handshake(ctl: &Ctl, ping: bool) -> Result<(), String> {
    if ping {
        spin_until(ctl, || ctl.pong_ready.load(Ordering::Acquire) != 0)?;
        ctl.ping_ready.store(1, Ordering::Release);
        spin_until(ctl, || ctl.go.load(Ordering::Acquire) != 0)
    } else {
        ctl.pong_ready.store(1, Ordering::Release);
        spin_until(ctl, || ctl.ping_ready.load(Ordering::Acquire) != 0)?;
        ctl.go.store(1, Ordering::Release);
        Ok(())
    }
}

fn run_pubsub(ctl: &Ctl, plan: &Plan, ping: bool, tag: &str) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Debug| format!("{x:?}");
    let node = NodeBuilder::new()
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<ipc::Service>()
        .map_err(|x| e(&x))?;
    let (na, nb) = service_names(tag)?;
    let mk = |name: &ServiceName| {
        node.service_builder(name)
            .publish_subscribe::<[u8]>()
            .max_publishers(1)
            .max_subscribers(1)
            .history_size(0)
            .subscriber_max_buffer_size(1)
            .enable_safe_overflow(true)
            .open_or_create()
            .map_err(|x| e(&x))
    };
    let (out_name, in_name) = if ping { (&na, &nb) } else { (&nb, &na) };
    let out_svc = mk(out_name)?;
    let in_svc = mk(in_name)?;
    let publisher = out_svc
        .publisher_builder()
        .initial_max_slice_len(plan.size)
        .create()
        .map_err(|x| e(&x))?;
    let subscriber = in_svc.subscriber_builder().create().map_err(|x| e(&x))?;
    let copy = plan.row == Row::PubSubCopy;
    let src = vec![0x5au8; plan.size];
    let mut dst = vec![0u8; plan.size];
    handshake(ctl, ping)?;
    let send = || -> Result<(), String> {
        let sample = publisher.loan_slice_uninit(plan.size).map_err(|x| e(&x))?;
        let sample = if copy {
            sample.write_from_slice(&src)
        } else {
            // The payload is not touched (zero-copy, as iceoryx2's own
            // benchmark does).
            unsafe { sample.assume_init() }
        };
        let delivered = sample.send().map_err(|x| e(&x))?;
        if delivered != 1 {
            return Err(format!("sample delivered to {delivered} subscribers, not 1"));
        }
        Ok(())
    };
    let recv = |dst: &mut Vec<u8>| -> Result<(), String> {
        let mut err = None;
        spin_until(ctl, || match subscriber.receive() {
            Ok(Some(s)) => {
                if copy {
                    dst.copy_from_slice(s.payload());
                }
                true
            }
            Ok(None) => false,
            Err(x) => {
                err = Some(e(&x));
                true
            }
        })?;
        match err {
            Some(x) => Err(x),
            None => Ok(()),
        }
    };
    if ping {
        let (samples, total) = ping_loop(ctl, plan, |last| {
            send()?;
            if !last {
                recv(&mut dst)?;
            }
            Ok(())
        })?;
        report(ctl, samples, total);
    } else {
        loop {
            recv(&mut dst)?;
            if ctl.stop.load(Ordering::Acquire) != 0 {
                break;
            }
            send()?;
        }
    }
    std::hint::black_box(&dst);
    Ok(())
}

fn run_event(ctl: &Ctl, plan: &Plan, ping: bool, tag: &str) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Debug| format!("{x:?}");
    let node = NodeBuilder::new()
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<ipc::Service>()
        .map_err(|x| e(&x))?;
    let (na, nb) = service_names(tag)?;
    let mk = |name: &ServiceName| {
        node.service_builder(name)
            .event()
            .max_notifiers(1)
            .max_listeners(1)
            .open_or_create()
            .map_err(|x| e(&x))
    };
    let (out_name, in_name) = if ping { (&na, &nb) } else { (&nb, &na) };
    let out_svc = mk(out_name)?;
    let in_svc = mk(in_name)?;
    let notifier = out_svc.notifier_builder().create().map_err(|x| e(&x))?;
    let listener = in_svc.listener_builder().create().map_err(|x| e(&x))?;
    handshake(ctl, ping)?;
    let notify = || -> Result<(), String> {
        let n = notifier.notify().map_err(|x| e(&x))?;
        if n != 1 {
            return Err(format!("notified {n} listeners, not 1"));
        }
        Ok(())
    };
    let wait = || -> Result<(), String> {
        let start = Instant::now();
        loop {
            let mut got = 0u64;
            listener
                .timed_wait(|_| got += 1, Duration::from_millis(100))
                .map_err(|x| e(&x))?;
            if got > 0 {
                return Ok(());
            }
            if ctl.failed.load(Ordering::Relaxed) != 0 {
                return Err("the peer failed".into());
            }
            if start.elapsed() > PEER_TIMEOUT {
                return Err(format!("no event from the peer within {PEER_TIMEOUT:?}"));
            }
        }
    };
    if ping {
        let (samples, total) = ping_loop(ctl, plan, |last| {
            notify()?;
            if !last {
                wait()?;
            }
            Ok(())
        })?;
        report(ctl, samples, total);
    } else {
        loop {
            wait()?;
            if ctl.stop.load(Ordering::Acquire) != 0 {
                break;
            }
            notify()?;
        }
    }
    Ok(())
}

/// One row's results: over one round, or pooled over all of them.
struct Result1 {
    row: Row,
    size: usize,
    warmup: u64,
    total_ns: u64,
    samples: Vec<u32>, // round trips, ns
    round_n: Vec<u64>,
    round_hop: Vec<f64>,
    error: Option<String>,
}

struct Summary {
    iterations: u64,
    hop: f64,
    p50: f64,
    p99: f64,
    p999: f64,
    max: f64,
    min: f64,
}

/// Per-hop statistics: the average hop is total / (2 x round trips); the
/// percentiles are nearest-rank percentiles of the round trips, halved.
fn summarise(r: &Result1) -> Summary {
    let mut s = r.samples.clone();
    s.sort_unstable();
    let n = s.len() as u64;
    let pct = |p: f64| -> f64 {
        let rank = ((p / 100.0 * n as f64).ceil() as u64).clamp(1, n);
        s[(rank - 1) as usize] as f64 / 2.0
    };
    Summary {
        iterations: n,
        hop: r.total_ns as f64 / (2.0 * n as f64),
        p50: pct(50.0),
        p99: pct(99.0),
        p999: pct(99.9),
        max: *s.last().unwrap() as f64 / 2.0,
        min: s[0] as f64 / 2.0,
    }
}

fn run_row(o: &Opts, plan: &Plan, round: u32) -> Result1 {
    let len = SAMPLES_OFF + MAX_SAMPLES as usize * 4;
    let mut res = Result1 {
        row: plan.row,
        size: plan.size,
        warmup: plan.warmup,
        total_ns: 0,
        samples: Vec::new(),
        round_n: Vec::new(),
        round_hop: Vec::new(),
        error: None,
    };
    // PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS|MAP_NORESERVE
    let p = unsafe { mmap(std::ptr::null_mut(), len, 3, 0x01 | 0x20 | 0x4000, -1, 0) };
    if p as isize == -1 {
        res.error = Some("mmap failed".into());
        return res;
    }
    let ctl: &Ctl = unsafe { &*(p as *const Ctl) }; // zero-filled
    let tag = format!("{}-{}-{}-{}", unsafe { getpid() }, plan.row.name(), plan.size, round);
    let mut pids = [0i32; 2];
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // pong first (index 1), then ping (index 0).
    for idx in [1usize, 0] {
        let pid = unsafe { fork() };
        if pid == 0 {
            let ping = idx == 0;
            let who = if ping { "ping" } else { "pong" };
            if let Err(m) = pin(o.cpus[idx]) {
                child_fail(ctl, who, &m);
            }
            let r = match plan.row {
                Row::Event => run_event(ctl, plan, ping, &tag),
                _ => run_pubsub(ctl, plan, ping, &tag),
            };
            match r {
                Ok(()) => unsafe { libc_exit(0) },
                Err(m) => child_fail(ctl, who, &m),
            }
        }
        if pid < 0 {
            set_error(ctl, "fork failed");
        }
        pids[idx] = pid;
    }
    // Every wait in the children is bounded by PEER_TIMEOUT; the parent
    // still kills them if a row runs far beyond its plan.
    let limit = Instant::now()
        + Duration::from_secs_f64(plan.duration * 4.0 + 60.0)
        + if plan.iterations > 0 {
            Duration::from_secs(120)
        } else {
            Duration::ZERO
        };
    let mut ok = true;
    for idx in [0usize, 1] {
        let pid = pids[idx];
        if pid <= 0 {
            continue;
        }
        let mut st = 0i32;
        loop {
            let w = unsafe { waitpid(pid, &mut st, 1 /* WNOHANG */) };
            if w == pid {
                break;
            }
            let killed = w < 0
                || Instant::now() > limit
                || (idx == 1 && ctl.failed.load(Ordering::Acquire) != 0);
            if killed {
                // Past the limit, or ping failed and pong would wait for
                // it until PEER_TIMEOUT.
                unsafe {
                    kill(pid, 9);
                    waitpid(pid, &mut st, 0);
                }
                set_error(ctl, "a process did not finish in time and was killed");
                ok = false;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if (st & 0x7f) != 0 || ((st >> 8) & 0xff) != 0 {
            ok = false;
        }
    }
    let n = ctl.iterations.load(Ordering::Acquire);
    if ctl.failed.load(Ordering::Acquire) != 0 || !ok || n == 0 {
        let e = &ctl.error;
        let k = e.iter().position(|&b| b == 0).unwrap_or(e.len());
        let msg = String::from_utf8_lossy(&e[..k]).into_owned();
        res.error = Some(if msg.is_empty() {
            "a process failed".into()
        } else {
            msg
        });
    } else {
        let src = unsafe { p.add(SAMPLES_OFF) as *const u32 };
        res.samples = unsafe { std::slice::from_raw_parts(src, n as usize) }.to_vec();
        res.total_ns = ctl.total_ns.load(Ordering::Relaxed);
        res.round_n.push(n);
        res.round_hop.push(res.total_ns as f64 / (2.0 * n as f64));
    }
    unsafe { munmap(p, len) };
    res
}

fn json_escape(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

fn read_first_line(path: &str, key: Option<&str>) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match key {
        None => text.lines().next().unwrap_or("").trim().to_string(),
        Some(k) => text
            .lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into()),
    }
}

fn host_json() -> String {
    let cpu = read_first_line("/proc/cpuinfo", Some("model name"));
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let kernel = read_first_line("/proc/sys/kernel/osrelease", None);
    let vm = read_first_line("/proc/cpuinfo", Some("flags"))
        .split_whitespace()
        .any(|f| f == "hypervisor");
    format!(
        "{{\"cpu\":\"{}\",\"cores\":{},\"kernel\":\"{}\",\"vm\":{}}}",
        json_escape(&cpu),
        cores,
        json_escape(&kernel),
        vm
    )
}

fn row_labels(row: Row) -> (&'static str, bool) {
    match row {
        Row::PubSubZc => ("poll", false),
        Row::PubSubCopy => ("poll", true),
        Row::Event => ("wait", false),
    }
}

/// The row's columns as `nerve bench --pingpong` prints them (xFLOOR and
/// FLOOR are nerve's: the floors run there).
fn table_line(r: &Result1) -> String {
    let size = if r.row == Row::Event {
        "-".to_string()
    } else {
        r.size.to_string()
    };
    let head = format!("{:<9} {:<10} {size:>8} ", "iceoryx2", r.row.name());
    if let Some(e) = &r.error {
        return format!("{head}error: {e}");
    }
    let s = summarise(r);
    format!(
        "{head}{:>9} {:>10.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>7} -",
        s.iterations, s.hop, s.p50, s.p99, s.p999, s.max, "-"
    )
}

fn json_line(r: &Result1, o: &Opts, host: &str) -> String {
    let (mode, copy) = row_labels(r.row);
    let size = if r.row == Row::Event {
        "null".to_string()
    } else {
        r.size.to_string()
    };
    let mut line = format!(
        "{{\"bench\":\"pingpong\",\"impl\":\"iceoryx2\",\"version\":\"{IOX2_VERSION}\",\"row\":\"{}\",\"mode\":\"{mode}\",\"copy\":{},\"size\":{size},\"lines\":null,\"unit\":\"hop\",\"per_sample\":2,\"rounds\":{},\"cpus\":\"{}\"",
        r.row.name(),
        if r.row == Row::Event { "null".to_string() } else { copy.to_string() },
        o.rounds,
        json_escape(&o.cpus_text)
    );
    match &r.error {
        Some(e) => {
            let _ = write!(line, ",\"error\":\"{}\"", json_escape(e));
        }
        None => {
            let s = summarise(r);
            let list = |v: Vec<String>| v.join(",");
            let _ = write!(
                line,
                ",\"iterations\":{},\"warmup\":{},\"total_ns\":{},\"hop_ns\":{:.1},\"p50_ns\":{:.1},\"p99_ns\":{:.1},\"p999_ns\":{:.1},\"max_ns\":{:.1},\"min_ns\":{:.1},\"samples\":{},\"round_iterations\":[{}],\"round_hop_ns\":[{}],\"floor\":null,\"floor_ns\":null,\"x_floor\":null",
                s.iterations, r.warmup, r.total_ns, s.hop, s.p50, s.p99, s.p999, s.max, s.min,
                r.samples.len(),
                list(r.round_n.iter().map(|v| v.to_string()).collect()),
                list(r.round_hop.iter().map(|v| format!("{v:.1}")).collect())
            );
        }
    }
    let _ = write!(line, ",\"host\":{host}}}");
    line
}

fn main() {
    let o = parse_opts();
    let mut plans = Vec::new();
    for &row in &o.rows {
        if row == Row::Event {
            plans.push(Plan {
                row,
                size: 0,
                duration: o.duration / o.rounds as f64,
                iterations: o.iterations,
                warmup: o.warmup.min(100),
            });
            continue;
        }
        for &size in &o.sizes {
            plans.push(Plan {
                row,
                size,
                duration: o.duration / o.rounds as f64,
                iterations: o.iterations,
                warmup: o.warmup,
            });
        }
    }
    set_log_level(LogLevel::Error);
    let host = host_json();
    let mut json_out: Option<Box<dyn std::io::Write>> = match o.json.as_deref() {
        None => None,
        Some("-") => Some(Box::new(std::io::stdout())),
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Some(Box::new(f)),
            Err(err) => {
                eprintln!("nerve-peer-iceoryx2: {path}: {err}");
                std::process::exit(1);
            }
        },
    };
    let to_stderr = o.json.as_deref() == Some("-");
    let table = |line: &str| {
        if o.quiet {
        } else if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    // Rounds alternate the rows, so that all rows share the machine's
    // conditions; each row's rounds are pooled (every sample of every
    // round).
    let mut status = 0;
    let mut pooled: Vec<Result1> = Vec::new();
    for round in 0..o.rounds {
        for (k, plan) in plans.iter().enumerate() {
            let r = run_row(&o, plan, round);
            if r.error.is_some() {
                status = 1;
            }
            if round == 0 {
                pooled.push(r);
                continue;
            }
            let p = &mut pooled[k];
            if p.error.is_none() {
                if r.error.is_some() {
                    p.error = r.error;
                } else {
                    p.total_ns += r.total_ns;
                    p.samples.extend_from_slice(&r.samples);
                    p.round_n.extend_from_slice(&r.round_n);
                    p.round_hop.extend_from_slice(&r.round_hop);
                }
            }
        }
    }
    table(&format!(
        "{:<9} {:<10} {:>8} {:>9} {:>10} {:>9} {:>9} {:>9} {:>10} {:>7} {}",
        "IMPL", "ROW", "SIZE", "ITERS", "HOP(ns)", "P50(ns)", "P99(ns)", "P99.9(ns)", "MAX(ns)",
        "xFLOOR", "FLOOR"
    ));
    for r in &pooled {
        table(&table_line(r));
        if let Some(out) = json_out.as_mut() {
            let _ = writeln!(out, "{}", json_line(r, &o, &host));
        }
    }
    if let Some(out) = json_out.as_mut() {
        let _ = out.flush();
    }
    std::process::exit(status);
}
