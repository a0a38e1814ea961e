//! Every call of the safe API in one process: lifecycle, options and
//! metadata, put / get in every mode, typed messages, loans, views, errors.
mod common;
use common::{watchdog, TestChan};
use nerve::{Access, Channel, Error, Options, Wait, Which};
use std::time::Duration;

fn small() -> Options {
    Options::new().slots(8).data_size(4096)
}

#[test]
fn errors_map_one_to_one_with_the_c_codes() {
    let mut codes = std::collections::BTreeSet::new();
    for &e in Error::ALL {
        assert_eq!(Error::from_code(e.code()), e);
        assert!(codes.insert(e.code()), "{e:?} shares a code");
        assert!(e.code() < 0);
        // Names come from the C table: "E" + letters, never "UNKNOWN".
        assert!(
            e.name().starts_with('E') && e.name() != "UNKNOWN",
            "{}",
            e.name()
        );
        assert!(!e.message().is_empty() && e.message() != "unknown error");
    }
    assert_eq!(Error::ALL.len(), 32);
    assert_eq!(Error::Again.code(), -libc_errno::EAGAIN);
    assert_eq!(Error::Again.name(), "EAGAIN");
    assert_eq!(Error::Corrupt.raw_os_error(), None);
    // An errno nerve gives no meaning of its own passes through.
    let eio = Error::from_code(-5);
    assert_eq!(eio, Error::Os(-5));
    assert_eq!(eio.name(), "EIO");
    assert_eq!(
        std::io::Error::from(Error::NoEnt).kind(),
        std::io::ErrorKind::NotFound
    );
    assert!(Error::Stale.to_string().contains("ESTALE"));
}

mod libc_errno {
    pub const EAGAIN: i32 = 11;
}

#[test]
fn create_open_unlink_with_options_and_metadata() {
    let _w = watchdog(Duration::from_secs(60));
    let name = TestChan::fresh_name("life");
    let opts = Options::new()
        .slots(16)
        .data_size(8192)
        .mode(0o600)
        .type_name("sensor_msgs/msg/Imu")
        .encoding("cdr")
        .schema(b"float64 x\n");
    nerve::create(&name, &opts).unwrap();
    assert_eq!(nerve::create(&name, &opts), Err(Error::Exist));
    nerve::create(&name, &opts.clone().exist_ok(true)).unwrap();
    assert_eq!(
        nerve::create(&name, &opts.clone().slots(32).exist_ok(true)),
        Err(Error::Mismatch)
    );

    let ch = Channel::open(&name, Access::Read).unwrap();
    assert_eq!(ch.name(), name);
    let m = ch.meta();
    assert_eq!(m.type_name, "sensor_msgs/msg/Imu");
    assert_eq!(m.encoding, "cdr");
    assert_eq!(m.schema, b"float64 x\n");
    let st = ch.stats().unwrap();
    assert_eq!(st.slots, 16);
    assert_eq!(st.data_size, 8192);
    assert_eq!(st.mode, 0o600);
    assert_eq!(st.head_seq, 0);
    assert_eq!(st.layout_version, nerve::LAYOUT_VERSION);
    assert_eq!(nerve::stat_name(&name).unwrap().slots, 16);
    // Where the file is and what it holds, from the library.
    let file = nerve::path(&name).unwrap();
    assert!(file.ends_with(&format!("nerve.{name}")), "{file}");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), st.file_size);
    assert_eq!((st.lock_owner_tid, st.lock_flags), (0, 0));
    assert_eq!(nerve::path("bad name").err(), Some(Error::Inval));
    let (base, len) = ch.ring();
    assert!(!base.is_null());
    assert_eq!(len, 2 * 8192);

    nerve::chmod(&name, 0o640).unwrap();
    assert_eq!(nerve::stat_name(&name).unwrap().mode, 0o640);
    assert!(nerve::list().unwrap().contains(&name));
    let (ok, msg) = nerve::check(&name);
    assert_eq!(ok, Ok(()));
    assert!(msg.starts_with("ok"), "{msg}");
    let (rep, _) = nerve::repair(&name, false);
    assert_eq!(rep, Ok(false));

    let mut ro = ch;
    assert_eq!(ro.put(b"x"), Err(Error::ReadOnly));
    nerve::unlink(&name).unwrap();
    // The open handle keeps working after unlink.
    assert_eq!(
        ro.get(Which::Next, &mut [0u8; 8], Wait::No),
        Err(Error::Again)
    );
    assert_eq!(nerve::unlink(&name), Err(Error::NoEnt));
    assert_eq!(Channel::open(&name, Access::Read).err(), Some(Error::NoEnt));
}

#[test]
fn bad_names_and_metadata_are_errors() {
    assert_eq!(nerve::name_check("ok.name-1_2"), Ok(()));
    assert_eq!(nerve::name_check(".hidden"), Err(Error::Inval));
    assert_eq!(nerve::name_check("a/b"), Err(Error::Inval));
    // The library's detail names the rule the name broke, as the C verbs
    // and the Python binding show it.
    let detail = Error::Inval.detail();
    assert_ne!(detail, Error::Inval.message(), "{detail}");
    assert!(detail.contains('/'), "{detail}");
    assert_eq!(
        nerve::name_check(&"x".repeat(nerve::NAME_MAX + 1)),
        Err(Error::NameTooLong)
    );
    assert_eq!(nerve::create("a\0b", &Options::new()), Err(Error::Inval));
    assert_eq!(
        Channel::open("nul\0", Access::Read).err(),
        Some(Error::Inval)
    );
    let name = TestChan::fresh_name("badmeta");
    assert_eq!(
        nerve::create(&name, &Options::new().type_name("t\0")),
        Err(Error::Inval)
    );
    assert_eq!(
        nerve::create(&name, &Options::new().schema(b"a\0b")),
        Err(Error::Inval)
    );
    assert_eq!(nerve::stat_name(&name).err(), Some(Error::NoEnt));
}

#[test]
fn put_and_get_every_mode_with_missed() {
    let _w = watchdog(Duration::from_secs(60));
    let t = TestChan::new("modes", &small());
    let mut w = Channel::open(&t.name, Access::Write).unwrap();
    let mut r = Channel::open(&t.name, Access::Read).unwrap();
    let mut buf = [0u8; 64];

    assert_eq!(r.get(Which::Next, &mut buf, Wait::No), Err(Error::Again));
    let mut times = Vec::new();
    for i in 1..=3u8 {
        let info = w.put(&[i; 10]).unwrap();
        assert_eq!(info.seq, i as u64);
        assert!(!info.recovered);
        times.push(info.time_ns);
    }
    let g = r.get(Which::Next, &mut buf, Wait::No).unwrap();
    assert_eq!((g.seq, g.missed, g.len), (1, 0, 10));
    assert_eq!(&buf[..10], &[1; 10]);
    assert_eq!(g.time_ns, times[0]);
    assert_eq!(r.cursor(), 1);

    let g = r.get(Which::Newest, &mut buf, Wait::No).unwrap();
    assert_eq!((g.seq, g.missed), (3, 1));
    assert_eq!(r.get(Which::Newest, &mut buf, Wait::No), Err(Error::Again));
    assert_eq!(
        r.get(Which::NewestRepeat, &mut buf, Wait::No).unwrap().seq,
        3
    );

    let g = r.get(Which::Seq(2), &mut buf, Wait::No).unwrap();
    assert_eq!((g.seq, buf[0]), (2, 2));
    assert_eq!(r.cursor(), 3, "SEQ does not move the cursor");
    assert_eq!(r.get(Which::Seq(4), &mut buf, Wait::No), Err(Error::Again));

    assert_eq!(
        r.get(Which::At(times[1]), &mut buf, Wait::No).unwrap().seq,
        2
    );
    assert_eq!(
        r.get(Which::At(times[2] + 1_000_000), &mut buf, Wait::No)
            .unwrap()
            .seq,
        3
    );

    // Too small a buffer: MsgSize, the cursor stays.
    r.seek(0);
    assert_eq!(
        r.get(Which::Next, &mut [0u8; 4], Wait::No),
        Err(Error::MsgSize)
    );
    assert_eq!(r.cursor(), 0);
    let (v, g) = r.get_vec(Which::Next, Wait::No).unwrap();
    assert_eq!((v, g.seq), (vec![1u8; 10], 1));

    // Lap the reader: 8 slots, 20 more puts; NEXT skips to the oldest.
    for i in 0..20u8 {
        w.put(&[i]).unwrap();
    }
    let g = r.get(Which::Next, &mut buf, Wait::No).unwrap();
    assert_eq!(g.seq, 23 - 8 + 1);
    assert_eq!(g.missed, g.seq - 2);
    assert_eq!(
        r.get(Which::Seq(2), &mut buf, Wait::No),
        Err(Error::Overwritten)
    );
    assert_eq!(
        r.get(Which::At(times[0]), &mut buf, Wait::No),
        Err(Error::Overwritten)
    );

    let mut v = Vec::new();
    r.seek(22);
    assert_eq!(r.get_into(Which::Next, &mut v, Wait::No).unwrap().seq, 23);
    assert_eq!(v, vec![19u8]);

    assert_eq!(w.put(&vec![0u8; 4097]), Err(Error::MsgSize));
    let st = w.stats().unwrap();
    assert_eq!(st.head_seq, 23);
    assert_eq!(st.tail_seq, 16);
}

#[test]
fn put_at_keeps_times_ordered() {
    let t = TestChan::new("at", &small());
    let mut w = Channel::open(&t.name, Access::Write).unwrap();
    let now = nerve::clock::now_ns();
    let a = w.put_at(b"a", now - 1_000_000).unwrap();
    assert_eq!(a.time_ns, now - 1_000_000);
    let b = w.put_at(b"b", now - 2_000_000).unwrap();
    assert_eq!(b.time_ns, a.time_ns, "clamped to the previous time");
    let c = w.put_at(b"c", i64::MAX).unwrap();
    assert!(c.time_ns <= nerve::clock::now_ns(), "clamped to now");
    assert!(nerve::clock::to_realtime_ns(c.time_ns) > 1_500_000_000_000_000_000);
}

#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Imu {
    stamp_ns: i64,
    accel: [f32; 3],
    seq: u32,
}

#[test]
fn typed_plain_old_data() {
    let t = TestChan::new("pod", &small());
    let mut w = Channel::open(&t.name, Access::Write).unwrap();
    let mut r = Channel::open(&t.name, Access::Read).unwrap();
    let m = Imu {
        stamp_ns: 42,
        accel: [0.0, 0.0, 9.81],
        seq: 7,
    };
    w.put_pod(&m).unwrap();
    let (got, info) = r.get_pod::<Imu>(Which::Next, Wait::No).unwrap();
    assert_eq!((got, info.len), (m, core::mem::size_of::<Imu>()));
    w.put_pod(&1234u32).unwrap();
    assert_eq!(r.get_pod::<u32>(Which::Next, Wait::No).unwrap().0, 1234);
    // Wrong sizes are Decode errors, both ways, and the message is consumed.
    w.put(b"abc").unwrap();
    assert_eq!(r.get_pod::<u32>(Which::Next, Wait::No), Err(Error::Decode));
    w.put_pod(&m).unwrap();
    assert_eq!(r.get_pod::<u32>(Which::Next, Wait::No), Err(Error::Decode));
    assert_eq!(r.cursor(), 4);
    let v = r.view(Which::NewestRepeat, Wait::No).unwrap();
    assert_eq!(v.read_pod::<Imu>(), Ok(m));
    assert_eq!(v.read_pod::<u64>(), Err(Error::Decode));
}

#[test]
fn loans_commit_abort_and_drop() {
    let _w = watchdog(Duration::from_secs(60));
    let t = TestChan::new("loan", &small());
    let mut w = Channel::open(&t.name, Access::Write).unwrap();
    let mut r = Channel::open(&t.name, Access::Read).unwrap();

    let mut loan = w.loan(100).unwrap();
    assert_eq!(loan.len(), 100);
    assert_eq!(loan.as_ptr() as usize % 64, 0, "64-byte aligned");
    loan[..5].copy_from_slice(b"hello");
    let info = loan.commit(5).unwrap();
    assert_eq!(info.seq, 1);
    assert_eq!(r.get_vec(Which::Next, Wait::No).unwrap().0, b"hello");

    // Dropped without commit: nothing published, the lock is free again.
    {
        let mut loan = w.loan(10).unwrap();
        loan.fill(0xee);
    }
    assert_eq!(
        r.get(Which::Next, &mut [0; 16], Wait::No),
        Err(Error::Again)
    );
    w.loan(10).unwrap().abort().unwrap();
    // Commit of more than reserved: Inval, and the reservation is aborted.
    assert_eq!(w.loan(10).unwrap().commit(11), Err(Error::Inval));
    assert_eq!(
        r.get(Which::Next, &mut [0; 16], Wait::No),
        Err(Error::Again)
    );

    let now = nerve::clock::now_ns();
    let mut loan = w.loan(3).unwrap();
    loan.copy_from_slice(b"abc");
    assert_eq!(loan.commit_at(3, now - 10).unwrap().time_ns, now - 10);
    assert_eq!(w.loan(16).unwrap().commit_pod(&7u64).unwrap().seq, 3);
    assert_eq!(w.loan(2).unwrap().commit_pod(&7u64), Err(Error::MsgSize));
    assert_eq!(r.get_vec(Which::Next, Wait::No).unwrap().0, b"abc");
    assert_eq!(r.get_pod::<u64>(Which::Next, Wait::No).unwrap().0, 7);

    // A second handle of the same channel in the thread holding the lock.
    let mut w2 = Channel::open(&t.name, Access::Write).unwrap();
    let loan = w.loan(8).unwrap();
    assert_eq!(w2.put_with(b"x", Wait::No), Err(Error::DeadLock));
    drop(loan);
    // The lock held by another thread: try-once put times out.
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        s.spawn(move || {
            let loan = w2.loan(8).unwrap();
            tx.send(()).unwrap();
            done_rx.recv().unwrap();
            loan.commit(8).unwrap();
        });
        rx.recv().unwrap();
        assert_eq!(w.put_with(b"y", Wait::No), Err(Error::TimedOut));
        assert_eq!(
            w.put_with(b"y", Wait::For(Duration::from_millis(1))),
            Err(Error::TimedOut)
        );
        done_tx.send(()).unwrap();
    });
    assert_eq!(w.put(b"z").unwrap().seq, 5);
    // Reservations larger than the ring fail.
    assert_eq!(w.loan(4097).err(), Some(Error::MsgSize));
}

#[test]
fn views_are_validated_and_lapped_views_are_stale() {
    let _w = watchdog(Duration::from_secs(60));
    let t = TestChan::new("view", &small());
    let mut w = Channel::open(&t.name, Access::Write).unwrap();
    let mut r = Channel::open(&t.name, Access::Read).unwrap();
    w.put(b"first message").unwrap();
    {
        let v = r.view(Which::Next, Wait::No).unwrap();
        assert_eq!(v.info().seq, 1);
        assert_eq!(v.len(), 13);
        assert_eq!(v.check(), Ok(()));
        assert_eq!(v.read(|b| b.len()), Ok(13));
        assert_eq!(v.to_vec().unwrap(), b"first message");
        // In place: single bytes, a slice, a value; past the end is None.
        let (b0, last, past) = v.read(|b| (b.get(0), b.get(12), b.get(13))).unwrap();
        assert_eq!((b0, last, past), (Some(b'f'), Some(b'e'), None));
        let mut word = [0u8; 7];
        assert_eq!(v.read(|b| b.copy_to(6, &mut word)), Ok(Some(())));
        assert_eq!(&word, b"message");
        assert_eq!(v.read(|b| b.copy_to(7, &mut word)), Ok(None));
        assert_eq!(
            v.read(|b| b.read_pod_at::<u32>(9)),
            Ok(Some(u32::from_le_bytes(*b"sage")))
        );
        assert_eq!(v.read(|b| b.iter().filter(|&c| c == b's').count()), Ok(3));
        // Validated copies out: into a buffer (too small: MsgSize), onto a Vec.
        let mut buf = [0u8; 16];
        assert_eq!(v.copy_to(&mut buf), Ok(13));
        assert_eq!(&buf[..13], b"first message");
        assert_eq!(v.copy_to(&mut buf[..12]), Err(Error::MsgSize));
        let mut acc = b"> ".to_vec();
        assert_eq!(v.append_to(&mut acc), Ok(()));
        assert_eq!(acc, b"> first message");
        assert!(!v.as_ptr().is_null());
    }
    assert_eq!(r.cursor(), 1);

    // A writer laps the reader while it holds the view: 8 slots and a
    // 4 KiB ring; 20 puts of 1 KiB overwrite message 2's bytes.
    w.put(b"second").unwrap();
    let v = r.view(Which::Next, Wait::No).unwrap();
    assert_eq!(v.to_vec().unwrap(), b"second");
    for _ in 0..20 {
        w.put(&[0xab; 1024]).unwrap();
    }
    assert_eq!(v.check(), Err(Error::Stale));
    assert_eq!(v.read(|b| b.to_vec()), Err(Error::Stale));
    assert_eq!(v.to_vec(), Err(Error::Stale));
    let mut acc = b"kept".to_vec();
    assert_eq!(v.append_to(&mut acc), Err(Error::Stale));
    assert_eq!(acc, b"kept"); // a stale copy is taken back out
                              // Asking a view for an overwritten sequence number fails up front.
    assert_eq!(
        r.view(Which::Seq(2), Wait::No).err(),
        Some(Error::Overwritten)
    );
    let v = r.view(Which::Newest, Wait::No).unwrap();
    assert_eq!(v.info().seq, 22);
    assert_eq!(v.check(), Ok(()));
}

#[test]
fn empty_messages() {
    let t = TestChan::new("empty", &small());
    let mut w = Channel::open(&t.name, Access::Write).unwrap();
    let mut r = Channel::open(&t.name, Access::Read).unwrap();
    w.put(b"").unwrap();
    assert_eq!(r.get(Which::Next, &mut [], Wait::No).unwrap().len, 0);
    w.loan(0).unwrap().commit(0).unwrap();
    let v = r.view(Which::Next, Wait::No).unwrap();
    assert!(v.is_empty());
    assert_eq!(v.read(|b| b.len()), Ok(0));
}

#[test]
fn version_and_thread_markers() {
    let (n, text) = nerve::version();
    assert_eq!(n / 10000, nerve_sys::NERVE_VERSION_MAJOR);
    assert!(text.contains('.'));
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Channel>();
    send_sync::<nerve::Canceller>();
    send_sync::<nerve::View<'static>>();
    send_sync::<Error>();
}

#[test]
fn debug_of_an_error_carries_the_detail() {
    // What `fn main() -> Result<(), nerve::Error>` prints after `Error: `.
    let name = TestChan::fresh_name("nosuch");
    let e = Channel::open(&name, Access::Read).unwrap_err();
    assert_eq!(
        format!("{e:?}"),
        format!("NoEnt (ENOENT): {name}: no such channel")
    );
    let e = Channel::open("/camera/image", Access::Read).unwrap_err();
    let text = format!("{e:?}");
    assert!(
        text.starts_with("Inval (EINVAL): /camera/image: '/' is not allowed")
            && text.contains("the ROS topic /camera/image is the channel camera.image"),
        "{text}"
    );
    // A later failure with the same code replaces the channel named.
    let other = TestChan::fresh_name("nosuch2");
    let _ = nerve::stat_name(&other).unwrap_err();
    assert!(format!("{:?}", Error::NoEnt).contains(&other));
    // An error no call returned: the code's message.
    assert_eq!(
        format!("{:?}", Error::Corrupt),
        "Corrupt (ECORRUPT): channel file is corrupt"
    );
}
