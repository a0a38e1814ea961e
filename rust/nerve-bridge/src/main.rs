//! `nerve-bridge-rs`: the data path of `nerve bridge` (docs/bridge.md) in
//! Rust, on the `zenoh` crate and the `nerve` crate: the only data path.
//! The Python command `nerve bridge` is the launcher: it checks the
//! arguments and runs this program with them (and keeps `--ros2` over
//! rmw_zenoh and `nerve bridge ls` itself); the flags, key expressions,
//! header, description, counters, log lines and exit status are those
//! docs/bridge.md specifies.
//!
//!     nerve-bridge-rs [--listen EP]... [--connect EP]... [--config FILE]
//!                     [--domain N] [--export GLOB]... [--import GLOB]...
//!                     [--scout] [--stats SEC] [--id NAME] [--priority P]
//!                     [--express]
//!
//! Exit status: 0 after SIGINT/SIGTERM, 1 when Zenoh cannot start, 2 for
//! usage errors (an unknown option, a malformed endpoint, a bad --config).
mod engine;
mod limits;
mod registry;
mod text;
mod wire;
use engine::{Bridge, BridgeOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use zenoh::qos::Priority;
use zenoh::Wait;

const PROG: &str = "nerve bridge";
/// How long a large message's fragments may wait for room in Zenoh's
/// transmission queue before it is dropped (unless --config).
const DROP_FRAGMENTS_WAIT_US: u64 = 250_000;
/// The version of the `zenoh` crate this program is built with (pinned in
/// Cargo.toml: the same as python-tools' eclipse-zenoh).
const ZENOH_VERSION: &str = "1.10.2";

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

const USAGE: &str = "usage: nerve bridge [--listen ENDPOINT]... [--connect ENDPOINT]... \
[--config ZENOH_JSON5] [--domain N] [--export GLOB]... [--import GLOB]... [--scout] \
[--stats SEC] [--id NAME] [--priority PRIO] [--express] [--max-channel-size SIZE] \
[--max-import-total SIZE]";

fn usage_error(msg: &str) -> ! {
    eprintln!("{USAGE}\n{PROG}: error: {}", text::escape(msg));
    std::process::exit(2);
}

/// How long a channel made for a peer that left is kept before it is
/// removed and its import budget returned: $NERVE_IMPORT_GRACE seconds
/// (default 10; the peer may come back meanwhile).
fn import_grace() -> Duration {
    match std::env::var("NERVE_IMPORT_GRACE") {
        Err(_) => Duration::from_secs(10),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && (0.0..=86400.0).contains(&s) => Duration::from_secs_f64(s),
            _ => usage_error(&format!(
                "bad NERVE_IMPORT_GRACE '{v}': seconds from 0 to 86400"
            )),
        },
    }
}

fn die(msg: &str, code: i32) -> ! {
    eprintln!("{PROG}: {}", text::escape(msg));
    std::process::exit(code);
}

#[derive(Default)]
struct Args {
    listen: Vec<String>,
    connect: Vec<String>,
    config: Option<String>,
    domain: u64,
    exports: Vec<String>,
    imports: Vec<String>,
    scout: bool,
    stats: Option<f64>,
    ident: Option<String>,
    priority: String,
    express: bool,
    max_channel_size: Option<String>,
    max_import_total: Option<String>,
}
fn parse(argv: &[String]) -> Args {
    let mut a = Args {
        priority: "data".into(),
        ..Default::default()
    };
    let mut i = 0;
    while i < argv.len() {
        let (flag, inline) = match argv[i].split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (argv[i].clone(), None),
        };
        i += 1;
        let mut value = |what: &str| -> String {
            if let Some(v) = inline.clone() {
                return v;
            }
            if i >= argv.len() {
                usage_error(&format!("argument {flag}: expected one argument ({what})"));
            }
            i += 1;
            argv[i - 1].clone()
        };
        match flag.as_str() {
            "--listen" => a.listen.push(value("ENDPOINT")),
            "--connect" => a.connect.push(value("ENDPOINT")),
            "--config" => a.config = Some(value("ZENOH_JSON5")),
            "--domain" => {
                let v = value("N");
                a.domain = match v.parse::<i64>() {
                    Ok(d) if d >= 0 => d as u64,
                    Ok(_) => usage_error("--domain must be >= 0"),
                    Err(_) => usage_error(&format!("argument --domain: invalid int value: '{v}'")),
                }
            }
            "--export" => {
                let g = value("GLOB");
                engine::check_glob("--export", &g).unwrap_or_else(|e| die(&e, 2));
                a.exports.push(g)
            }
            "--import" => a.imports.push(value("GLOB")),
            "--scout" => a.scout = true,
            "--stats" => {
                let v = value("SEC");
                match v.parse::<f64>() {
                    Ok(s) if s > 0.0 && s.is_finite() => a.stats = Some(s),
                    Ok(_) => usage_error("--stats must be positive"),
                    Err(_) => usage_error(&format!("argument --stats: invalid float value: '{v}'")),
                }
            }
            "--id" => a.ident = Some(value("NAME")),
            "--priority" => a.priority = value("PRIO"),
            "--express" => a.express = true,
            "--max-channel-size" => a.max_channel_size = Some(value("SIZE")),
            "--max-import-total" => a.max_import_total = Some(value("SIZE")),
            "--poll" => {
                let v = value("USEC");
                if v.parse::<f64>().map(|p| p != 0.0).unwrap_or(true) {
                    usage_error("--poll was retired with the Python data path: this one waits on the channels");
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}\n\nMirror nerve channels across hosts through Eclipse Zenoh (docs/bridge.md).");
                std::process::exit(0);
            }
            "--version" => {
                println!(
                    "nerve-bridge-rs {} (data path: rust, zenoh {ZENOH_VERSION})",
                    env!("CARGO_PKG_VERSION")
                );
                std::process::exit(0);
            }
            other => usage_error(&format!("unrecognized arguments: {other}")),
        }
    }
    a
}

/// 8 hex digits that tell this host's bridges apart without configuration,
/// as the launcher computes them too (bridge.wire.instance_tag): the
/// SHA-256 of the kernel's boot id, the machine id, the network namespace
/// and the /dev/shm this bridge serves. Stable while these are, so a
/// restarted bridge keeps its name, whichever data path runs it.
fn instance_tag() -> String {
    use std::os::unix::fs::MetadataExt;
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let ino = |p: &str| {
        std::fs::metadata(p)
            .map(|m| format!("{}:{}", m.dev(), m.ino()))
            .unwrap_or_default()
    };
    let mut parts = vec![
        read("/proc/sys/kernel/random/boot_id"),
        read("/etc/machine-id"),
        ino("/proc/self/ns/net"),
        ino("/dev/shm"),
    ];
    if parts.iter().all(String::is_empty) {
        // Nothing to go by: unique per run.
        let mut r = [0u8; 16];
        let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut r);
        parts.push(r.iter().map(|b| format!("{b:02x}")).collect());
    }
    let d = ring::digest::digest(&ring::digest::SHA256, parts.join("\0").as_bytes());
    d.as_ref()[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// This bridge's name on the network: --id, or the host name (made a valid
/// key-expression chunk) and the instance tag, e.g. `robot-3fa9c2d1`.
fn host_id(name: Option<&str>) -> String {
    if let Some(n) = name {
        if !wire::valid_host(n) || n.trim_matches('.') != n {
            usage_error(&format!(
                "bad --id '{n}': use letters, digits, '_', '.', '-'"
            ));
        }
        return n.to_string();
    }
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length; gethostname NUL-terminates
    // within it on success (or truncates, which CStr handles below).
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) } == 0;
    let raw = if ok {
        std::ffi::CStr::from_bytes_until_nul(&buf)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        String::new()
    };
    let out: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let out = out.trim_matches('.').to_string();
    let host = if out.is_empty() {
        "host".to_string()
    } else {
        out
    };
    format!("{host}-{}", instance_tag())
}

/// Refuse an endpoint that is not Zenoh's PROTO/ADDRESS syntax, or whose
/// port is not a number in 1..65535.
fn check_endpoint(ep: &str) {
    let core = ep
        .split('?')
        .next()
        .unwrap_or("")
        .split('#')
        .next()
        .unwrap_or("");
    let Some((proto, addr)) = core
        .split_once('/')
        .filter(|(p, a)| !p.is_empty() && !a.is_empty())
    else {
        usage_error(&format!(
            "bad endpoint '{ep}': Zenoh endpoints are PROTOCOL/ADDRESS, e.g. tcp/192.0.2.1:7447"
        ));
    };
    if ["tcp", "udp", "tls", "quic", "ws"].contains(&proto) {
        let ok = addr.rsplit_once(':').is_some_and(|(h, p)| {
            !h.is_empty()
                && !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u32>().is_ok_and(|n| (1..65536).contains(&n))
        });
        if !ok {
            usage_error(&format!(
                "bad endpoint '{ep}': {proto} needs HOST:PORT with a port in 1..65535"
            ));
        }
    }
}

fn short_error(e: &dyn std::fmt::Display) -> String {
    // Zenoh's error text without its Rust source locations.
    let s = e.to_string();
    match s.find(" at /") {
        Some(i) if s[i..].contains(".rs:") => s[..i].trim().to_string(),
        _ => s.trim().to_string(),
    }
}

/// The Zenoh configuration: the file, then the flags.
fn make_config(a: &Args) -> zenoh::Config {
    for ep in a.listen.iter().chain(&a.connect) {
        check_endpoint(ep);
    }
    let mut conf = match &a.config {
        Some(f) => zenoh::Config::from_file(f)
            .unwrap_or_else(|e| die(&format!("bad --config {f}: {}", short_error(&e)), 2)),
        None => zenoh::Config::default(),
    };
    let default = zenoh::Config::default();
    let put = |conf: &mut zenoh::Config, key: &str, value: serde_json::Value| {
        if let Err(e) = conf.insert_json5(key, &value.to_string()) {
            die(&format!("bad {key} {value}: {}", short_error(&e)), 2);
        }
    };
    let unset = |conf: &zenoh::Config, key: &str| match (conf.get_json(key), default.get_json(key))
    {
        (Ok(a), Ok(b)) => a == b,
        _ => true,
    };
    if unset(&conf, "mode") {
        put(&mut conf, "mode", "peer".into());
    }
    // Nothing leaves the host unless asked.
    put(&mut conf, "scouting/multicast/enabled", a.scout.into());
    if !a.listen.is_empty() {
        put(&mut conf, "listen/endpoints", a.listen.clone().into());
    } else if unset(&conf, "listen/endpoints") {
        put(&mut conf, "listen/endpoints", serde_json::json!([]));
    }
    if !a.connect.is_empty() {
        put(&mut conf, "connect/endpoints", a.connect.clone().into());
    }
    let key = "transport/link/tx/queue/congestion_control/drop/max_wait_before_drop_fragments";
    if unset(&conf, key) {
        put(&mut conf, key, DROP_FRAGMENTS_WAIT_US.into());
    }
    if unset(&conf, "transport/shared_memory/enabled") {
        put(&mut conf, "transport/shared_memory/enabled", false.into());
    }
    conf
}

fn priority(p: &str) -> Priority {
    match p {
        "real_time" => Priority::RealTime,
        "interactive_high" => Priority::InteractiveHigh,
        "interactive_low" => Priority::InteractiveLow,
        "data_high" => Priority::DataHigh,
        "data" => Priority::Data,
        "data_low" => Priority::DataLow,
        "background" => Priority::Background,
        _ => usage_error(&format!(
            "bad priority '{p}': one of background, data, data_high, data_low, interactive_high, \
             interactive_low, real_time"
        )),
    }
}

fn connected(s: &zenoh::Session) -> usize {
    s.info().peers_zid().wait().count() + s.info().routers_zid().wait().count()
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let a = parse(&argv);
    let budget = limits::resolve(
        a.max_channel_size.as_deref(),
        limits::ENV_MAX_CHANNEL,
        limits::DEFAULT_MAX_CHANNEL,
        "--max-channel-size",
    )
    .and_then(|c| {
        let t = limits::resolve(
            a.max_import_total.as_deref(),
            limits::ENV_MAX_TOTAL,
            limits::DEFAULT_MAX_TOTAL,
            "--max-import-total",
        )?;
        Ok(limits::ImportBudget::new(c, t))
    })
    .unwrap_or_else(|e| usage_error(&e));
    let imports: Vec<(Option<String>, String)> = a
        .imports
        .iter()
        .map(|g| engine::split_import(g).unwrap_or_else(|e| die(&e, 2)))
        .collect();
    let ident = host_id(a.ident.as_deref());
    let prio = priority(&a.priority);
    let import_grace = import_grace();
    let conf = make_config(&a);
    let session = zenoh::open(conf).wait().unwrap_or_else(|e| {
        let mut why = short_error(&e);
        if why.contains("Address already in use") {
            why += " (the port is taken: another nerve bridge or Zenoh program?)";
        }
        die(&format!("cannot start Zenoh: {why}"), 1)
    });
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let mut bridge = Bridge::new(
        session,
        BridgeOptions {
            domain: a.domain,
            ident: ident.clone(),
            exports: a.exports.clone(),
            imports,
            priority: prio,
            express: a.express,
            budget,
            import_grace,
        },
    );
    if let Err(e) = bridge.start() {
        die(&format!("cannot start: {e}"), 1);
    }
    let mut what = Vec::new();
    if !a.exports.is_empty() {
        what.push(format!("exporting {}", a.exports.join(", ")));
    }
    if !a.imports.is_empty() {
        what.push(format!("importing {}", a.imports.join(", ")));
    }
    let what = if what.is_empty() {
        "nothing exported or imported".to_string()
    } else {
        what.join("; ")
    };
    eprintln!(
        "{PROG}: ready: id {ident}, domain {}, {}; data path: rust (zenoh {ZENOH_VERSION})",
        a.domain,
        text::escape(&what)
    );
    if !a.connect.is_empty() {
        let end = Instant::now() + Duration::from_secs(3);
        while connected(bridge.session()) == 0
            && Instant::now() < end
            && !STOP.load(Ordering::Relaxed)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        if connected(bridge.session()) == 0 {
            eprintln!(
                "{PROG}: warning: no peer reachable yet at {}; still trying",
                text::escape(&a.connect.join(", "))
            );
        }
    }
    let print_stats = |b: &Bridge| println!("{}", b.stats());
    let period = a.stats.map(Duration::from_secs_f64);
    let mut next_stats = period.map(|p| Instant::now() + p);
    while !STOP.load(Ordering::Relaxed) {
        bridge.step(Duration::from_millis(100));
        if let (Some(t), Some(p)) = (next_stats, period) {
            if Instant::now() >= t {
                next_stats = Some(t + p);
                print_stats(&bridge);
            }
        }
    }
    let final_stats = bridge.stats();
    bridge.close();
    if a.stats.is_some() {
        println!("{final_stats}");
    }
    drop(bridge);
}
