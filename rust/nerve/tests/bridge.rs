//! The bridge kernel through Rust (`nerve::bridge`): the shared conformance
//! table `tests/bridge/cases.txt`, which the C test (`test_bridge_kernel`)
//! and the Python test (`tests/python/test_bridge_kernel.py`) read too, and
//! the channel directory's events through its descriptor, and the
//! own-sequence guard (its threads: the C test `test_bridge_own`).
use nerve::bridge::{self, Budget, ChannelDir, DirEvent, OwnGuard, OwnStats};
use nerve::{Error, Options};
use std::os::fd::AsRawFd;

const TABLE: &str = include_str!("../../../tests/bridge/cases.txt");

fn error_of(name: &str) -> Error {
    *Error::ALL
        .iter()
        .find(|e| e.name().trim_start_matches("NERVE_") == name)
        .unwrap_or_else(|| panic!("unknown error {name} in the table"))
}

fn size(text: &str) -> u64 {
    nerve::parse_size(text).unwrap()
}

fn budget_line(b: &mut Option<Budget>, f: &[&str]) {
    match f {
        ["budget", chan, total] => *b = Some(Budget::new(size(chan), size(total)).unwrap()),
        ["admit", name, slots, data, want] => {
            let opts = Options::new().slots(size(slots)).data_size(size(data));
            let got = b.as_ref().unwrap().admit(name, &opts, true);
            match *want {
                "0" => assert_eq!(got, nerve::file_size(&opts), "admit {name}"),
                e => assert_eq!(got, Err(error_of(e)), "admit {name}"),
            }
        }
        ["release", name, want] => {
            assert_eq!(b.as_ref().unwrap().release(name), *want == "0", "{name}")
        }
        ["refused", n] => assert_eq!(b.as_ref().unwrap().stats().refused, n.parse().unwrap()),
        _ => panic!("bad table line {f:?}"),
    }
}

#[test]
fn the_shared_table() {
    let mut b = None;
    let mut cases = 0;
    for line in TABLE.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() || f[0].starts_with('#') {
            continue;
        }
        cases += 1;
        match f.as_slice() {
            ["topic" | "channel", dom, input, want] => {
                let d: u32 = dom.parse().unwrap();
                let got = if f[0] == "topic" {
                    bridge::topic_of_channel(input, d)
                } else {
                    bridge::channel_of_topic(input, d)
                };
                match want.chars().next() {
                    Some('A'..='Z') => assert_eq!(got, Err(error_of(want)), "{line}"),
                    _ => assert_eq!(got.as_deref(), Ok(*want), "{line}"),
                }
            }
            ["glob", glob, name, want] => {
                let got = bridge::glob_match(glob, name);
                match *want {
                    "1" | "0" => assert_eq!(got, Ok(*want == "1"), "{line}"),
                    e => assert_eq!(got, Err(error_of(e)), "{line}"),
                }
            }
            _ => budget_line(&mut b, &f),
        }
    }
    assert!(cases >= 50, "{cases} cases");
}

#[test]
fn budget_reasons_and_dir_events() {
    let b = Budget::new(64 << 20, 3 << 20).unwrap();
    let big = Options::new().slots(8).data_size(4 << 30);
    let e = b.admit("big", &big, false).unwrap_err();
    assert_eq!(e, Error::MsgSize);
    assert!(e.detail().contains("data ring of 4 GiB"), "{}", e.detail());
    assert_eq!(b.stats().refused, 0);

    let pre = format!("rst-bk-{}", std::process::id());
    for scan in [false, true] {
        let glob = format!("{pre}.*");
        let mut d = ChannelDir::open(&[glob.as_str()], scan).unwrap();
        assert!(d.as_raw_fd() >= 0);
        assert!(!scan || !d.inotify());
        assert_eq!(d.next(), Ok(None));
        let name = format!("{pre}.a");
        nerve::create(&name, &Options::new().slots(4).data_size(4096)).unwrap();
        let created = wait(&mut d);
        nerve::unlink(&name).unwrap();
        assert_eq!(created, DirEvent::Created(name.clone()));
        assert_eq!(wait(&mut d), DirEvent::Removed(name));
    }
    assert!(ChannelDir::open(&["no/slash"], false).is_err());
}

#[test]
fn own_guard() {
    let g = OwnGuard::new().unwrap();
    g.begin().commit(7);
    drop(g.begin()); // a put that failed: nothing recorded, nothing in flight
    assert!(g.is_own(7) && !g.is_own(8) && !g.is_own(0));
    let n = u64::from(nerve_sys::NERVE_OWN_N);
    for seq in 8..8 + n {
        g.begin().commit(seq);
    }
    assert!(!g.is_own(7) && g.is_own(7 + n)); // the table wrapped
    let want = OwnStats {
        committed: n + 1,
        waited: 0,
        late: 0,
    };
    assert_eq!(g.stats(), want);
    g.reset(); // the channel made again
    assert!(!g.is_own(7 + n));
}

/// The next event within a generous bound, polling the descriptor.
fn wait(d: &mut ChannelDir) -> DirEvent {
    for _ in 0..100 {
        if let Some(ev) = d.next().unwrap() {
            return ev;
        }
        let mut p = libc_pollfd(d.as_raw_fd());
        // SAFETY: one valid pollfd.
        unsafe { poll(&mut p, 1, 200) };
    }
    panic!("no channel directory event within 20 s");
}

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}

fn libc_pollfd(fd: i32) -> PollFd {
    PollFd {
        fd,
        events: 1, /* POLLIN */
        revents: 0,
    }
}

extern "C" {
    fn poll(fds: *mut PollFd, n: u64, timeout_ms: i32) -> i32;
}
