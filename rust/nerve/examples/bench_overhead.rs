//! Overhead of the Rust API over the C API: put of one 64-byte sample and
//! a get of the newest, through `nerve` (`put_pod` + `get_pod`) against the
//! same two C calls made directly through `nerve-sys`, in one run, on one
//! channel, in one thread (as examples/bench_cxx_overhead.cpp does for
//! C++).
//!
//!     bench_overhead [--rounds 200] [--batch 2000] [--channel NAME]
//!
//! Each round times a batch through C and a batch through Rust back to back
//! (alternating which goes first); a batch's time / size is one sample of
//! ns/op. Prints both APIs' percentiles, the ratio of their medians and the
//! median of the per-round ratios Rust / C (the headline: pairing within a
//! round cancels most of a shared machine's drift), then one JSON line with
//! the host. Exits 1 only if an operation fails or reads a wrong sample.
use nerve::{Access, Channel, Options, Wait, Which};
use nerve_sys as sys;

/// 64 bytes of plain old data.
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Sample {
    stamp_ns: i64,
    seq: u64,
    values: [f64; 6],
}

fn sample(seq: u64) -> Sample {
    Sample {
        stamp_ns: seq as i64,
        seq,
        values: [0.0, 0.0, 9.81, 0.1, 0.2, 0.3],
    }
}

fn opt(args: &[String], key: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == key)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

struct Stats {
    p50: f64,
    p99: f64,
    p999: f64,
    max: f64,
    mean: f64,
}

fn summarize(mut v: Vec<f64>) -> Stats {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| v[((q * (v.len() - 1) as f64 + 0.5) as usize).min(v.len() - 1)];
    Stats {
        p50: at(0.5),
        p99: at(0.99),
        p999: at(0.999),
        max: *v.last().unwrap(),
        mean: v.iter().sum::<f64>() / v.len() as f64,
    }
}

fn first_line(path: &str, key: Option<&str>) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    for line in text.lines() {
        match key {
            None => return line.to_string(),
            Some(k) if line.starts_with(k) => {
                return line
                    .split_once(": ")
                    .map(|x| x.1)
                    .unwrap_or(line)
                    .to_string()
            }
            _ => {}
        }
    }
    String::new()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!(
            "usage: bench_overhead [--rounds 200] [--batch 2000] [--channel NAME]\n\
             Time a put + newest get of a 64-byte sample through the Rust API\n\
             against the same through the C API, alternating, and print the\n\
             ratio. The channel (default bench-rust-PID) is removed."
        );
        return;
    }
    let rounds: usize = opt(&args, "--rounds", "200").parse().expect("--rounds N");
    let batch: usize = opt(&args, "--batch", "2000").parse().expect("--batch N");
    let name = opt(
        &args,
        "--channel",
        &format!("bench-rust-{}", std::process::id()),
    );
    assert!(
        rounds >= 1 && batch >= 1,
        "--rounds and --batch must be >= 1"
    );

    let mut w = Channel::create(&name, &Options::new()).expect("create");
    let mut r = Channel::open(&name, Access::Read).expect("open");
    let cname = std::ffi::CString::new(name.clone()).unwrap();
    let (mut cw, mut cr) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: valid name and out-pointers; the handles are closed below.
    unsafe {
        assert_eq!(
            sys::nerve_chan_open(cname.as_ptr(), sys::NERVE_O_WRITE, &mut cw),
            0
        );
        assert_eq!(
            sys::nerve_chan_open(cname.as_ptr(), sys::NERVE_O_READ, &mut cr),
            0
        );
    }

    let mut seq = 0u64;
    let mut bad = false;
    let run_c = |seq: &mut u64, bad: &mut bool| {
        let t = nerve::clock::now_ns();
        for _ in 0..batch {
            *seq += 1;
            let m = sample(*seq);
            let mut out = Sample {
                stamp_ns: 0,
                seq: 0,
                values: [0.0; 6],
            };
            let mut pi = sys::nerve_put_info::default();
            let mut gi = sys::nerve_get_info::default();
            let size = std::mem::size_of::<Sample>();
            // SAFETY: open handles, valid buffers of `size` bytes.
            let ok = unsafe {
                sys::nerve_chan_put(
                    cw,
                    (&m as *const Sample).cast(),
                    size,
                    sys::NERVE_FOREVER,
                    &mut pi,
                    0,
                ) == 0
                    && sys::nerve_chan_get(
                        cr,
                        (&mut out as *mut Sample).cast(),
                        size,
                        0,
                        0,
                        &mut gi,
                        sys::NERVE_GET_NEWEST,
                    ) == 0
            };
            if !ok || gi.len as usize != size || out.seq != *seq {
                *bad = true;
            }
        }
        (nerve::clock::now_ns() - t) as f64 / batch as f64
    };
    let mut run_rust = |seq: &mut u64, bad: &mut bool| {
        let t = nerve::clock::now_ns();
        for _ in 0..batch {
            *seq += 1;
            let ok = w.put_pod(&sample(*seq)).is_ok()
                && matches!(r.get_pod::<Sample>(Which::Newest, Wait::No),
                            Ok((out, _)) if out.seq == *seq);
            if !ok {
                *bad = true;
            }
        }
        (nerve::clock::now_ns() - t) as f64 / batch as f64
    };

    run_c(&mut seq, &mut bad);
    run_rust(&mut seq, &mut bad);
    let (mut c_ns, mut rs_ns) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            c_ns.push(run_c(&mut seq, &mut bad));
            rs_ns.push(run_rust(&mut seq, &mut bad));
        } else {
            rs_ns.push(run_rust(&mut seq, &mut bad));
            c_ns.push(run_c(&mut seq, &mut bad));
        }
    }
    // SAFETY: the handles opened above, used by no one else.
    unsafe {
        sys::nerve_chan_close(cw);
        sys::nerve_chan_close(cr);
    }
    drop((w, r));
    let _ = nerve::unlink(&name);
    if bad {
        eprintln!("bench_overhead: an operation failed or read a wrong sample");
        std::process::exit(1);
    }

    let paired: Vec<f64> = rs_ns.iter().zip(&c_ns).map(|(r, c)| r / c).collect();
    let (c, x, pr) = (summarize(c_ns), summarize(rs_ns), summarize(paired));
    let ratio = x.p50 / c.p50;
    let size = std::mem::size_of::<Sample>();
    println!(
        "put + get newest of a {size}-byte sample, {rounds} rounds x {batch} ops (ns/op per batch)"
    );
    println!(
        "{:<6} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "api", "p50", "p99", "p99.9", "max", "mean"
    );
    for (api, s) in [("C", &c), ("Rust", &x)] {
        println!(
            "{:<6} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
            api, s.p50, s.p99, s.p999, s.max, s.mean
        );
    }
    println!("ratio of medians Rust / C: {ratio:.4}");
    println!(
        "overhead of Rust (median of per-round ratios): {:+.2} % (goal <= +5 %)",
        (pr.p50 - 1.0) * 100.0
    );
    let kernel = first_line("/proc/sys/kernel/osrelease", None);
    let version = first_line("/proc/sys/kernel/version", None);
    println!(
        "{{\"bench\":\"rust_overhead\",\"msg_bytes\":{size},\"rounds\":{rounds},\"batch\":{batch},\
         \"c_ns\":{{\"p50\":{:.1},\"p99\":{:.1},\"p999\":{:.1},\"max\":{:.1}}},\
         \"rust_ns\":{{\"p50\":{:.1},\"p99\":{:.1},\"p999\":{:.1},\"max\":{:.1}}},\
         \"ratio_p50\":{ratio:.4},\"paired_ratio_p50\":{:.4},\"host\":{{\"cpu\":\"{}\",\
         \"ncpu\":{},\"kernel\":\"{kernel}\",\"governor\":\"{}\",\"isolated\":\"{}\",\
         \"preempt_rt\":{}}}}}",
        c.p50,
        c.p99,
        c.p999,
        c.max,
        x.p50,
        x.p99,
        x.p999,
        x.max,
        pr.p50,
        first_line("/proc/cpuinfo", Some("model name")),
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        first_line(
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            None
        ),
        first_line("/sys/devices/system/cpu/isolated", None),
        version.contains("PREEMPT_RT"),
    );
}
