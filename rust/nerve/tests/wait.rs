//! Blocking reads: timeouts, wake-ups by a writer thread, cancel from
//! another thread, and wait_any. No test asserts how long anything took:
//! a wake-up is proven by the message it delivers, a timeout by its error.
mod common;
use common::{watchdog, TestChan};
use nerve::{wait_any, Access, Channel, Error, Options, Wait, Which};
use std::sync::mpsc;
use std::time::Duration;

fn small() -> Options {
    Options::new().slots(16).data_size(4096)
}

#[test]
fn timeouts_relative_and_absolute() {
    let _w = watchdog(Duration::from_secs(60));
    let t = TestChan::new("tmo", &small());
    let mut r = Channel::open(&t.name, Access::Read).unwrap();
    let mut buf = [0u8; 8];
    let d = Duration::from_millis(5);
    assert_eq!(
        r.get(Which::Next, &mut buf, Wait::For(d)),
        Err(Error::TimedOut)
    );
    assert_eq!(r.get(Which::Next, &mut buf, Wait::No), Err(Error::Again));
    let until = nerve::clock::now_ns() + 5_000_000;
    assert_eq!(
        r.get(Which::Next, &mut buf, Wait::Until(until)),
        Err(Error::TimedOut)
    );
    // A deadline already passed tries once.
    assert_eq!(
        r.view(Which::Newest, Wait::Until(0)).err(),
        Some(Error::TimedOut)
    );
}

#[test]
fn a_blocked_reader_wakes_for_a_writer_thread() {
    let _w = watchdog(Duration::from_secs(60));
    let t = TestChan::new("wake", &small());
    let mut r = Channel::open(&t.name, Access::Read).unwrap();
    let mut w = Channel::open(&t.name, Access::Write).unwrap();
    let (tx, rx) = mpsc::channel::<u8>();
    let writer = std::thread::spawn(move || {
        for i in 0..10u8 {
            rx.recv().unwrap();
            w.put(&[i]).unwrap();
        }
    });
    let mut buf = [0u8; 8];
    for i in 0..10u8 {
        tx.send(i).unwrap(); // the put may land before or during the wait
        let g = r.get(Which::Next, &mut buf, Wait::Forever).unwrap();
        assert_eq!((g.seq, buf[0]), (i as u64 + 1, i));
    }
    writer.join().unwrap();
}

#[test]
fn cancel_from_another_thread_ends_waits() {
    let _w = watchdog(Duration::from_secs(60));
    let t = TestChan::new("cancel", &small());
    let mut r = Channel::open(&t.name, Access::Read).unwrap();
    let cancel = r.canceller();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 8];
        started_tx.send(()).unwrap();
        let got = r.get(Which::Next, &mut buf, Wait::Forever);
        (r, got)
    });
    started_rx.recv().unwrap();
    // Whether the cancel lands before or during the wait, the wait ends.
    cancel.cancel();
    let (mut r, got) = reader.join().unwrap();
    assert_eq!(got, Err(Error::Canceled));
    // Sticky until cleared, for views and wait_any too.
    assert_eq!(
        r.view(Which::Next, Wait::Forever).err(),
        Some(Error::Canceled)
    );
    assert_eq!(wait_any(&mut [&mut r], Wait::Forever), Err(Error::Canceled));
    cancel.clear();
    assert_eq!(
        r.get(
            Which::Next,
            &mut [0u8; 8],
            Wait::For(Duration::from_millis(1))
        ),
        Err(Error::TimedOut)
    );
    // The canceller keeps the C handle open after the channel is dropped.
    drop(r);
    cancel.cancel();
    cancel.clear();
}

#[test]
fn wait_any_reports_the_ready_channels() {
    let _w = watchdog(Duration::from_secs(60));
    let (a, b, c) = (
        TestChan::new("wa", &small()),
        TestChan::new("wb", &small()),
        TestChan::new("wc", &small()),
    );
    let mut ra = Channel::open(&a.name, Access::Read).unwrap();
    let mut rb = Channel::open(&b.name, Access::Read).unwrap();
    let mut rc = Channel::open(&c.name, Access::Read).unwrap();
    let mut wb = Channel::open(&b.name, Access::Write).unwrap();
    let mut wc = Channel::open(&c.name, Access::Write).unwrap();

    let d = Duration::from_millis(2);
    assert_eq!(
        wait_any(&mut [&mut ra, &mut rb, &mut rc], Wait::For(d)),
        Err(Error::TimedOut)
    );
    assert_eq!(wait_any(&mut [], Wait::No), Err(Error::Inval));

    wc.put(b"c").unwrap();
    let ready = wait_any(&mut [&mut ra, &mut rb, &mut rc], Wait::Forever).unwrap();
    assert_eq!(ready.iter().collect::<Vec<_>>(), vec![2]);
    assert_eq!(ready.count(), 1);
    // Reads nothing: c is still ready.
    wb.put(b"b").unwrap();
    let ready = wait_any(&mut [&mut ra, &mut rb, &mut rc], Wait::No).unwrap();
    assert!(!ready.contains(0) && ready.contains(1) && ready.contains(2));
    assert_eq!(rc.get_vec(Which::Next, Wait::No).unwrap().0, b"c");

    // A writer thread wakes a blocked wait_any.
    let (tx, rx) = mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        rx.recv().unwrap();
        wc.put(b"again").unwrap();
    });
    rb.get_vec(Which::Next, Wait::No).unwrap();
    tx.send(()).unwrap();
    let ready = wait_any(&mut [&mut ra, &mut rb, &mut rc], Wait::Forever).unwrap();
    assert_eq!(ready.iter().collect::<Vec<_>>(), vec![2]);
    writer.join().unwrap();

    // A cancel of one handle from another thread ends the wait.
    let cancel_a = ra.canceller();
    let canceller = std::thread::spawn(move || cancel_a.cancel());
    rc.get_vec(Which::Next, Wait::No).unwrap();
    assert_eq!(
        wait_any(&mut [&mut ra, &mut rb, &mut rc], Wait::Forever),
        Err(Error::Canceled)
    );
    canceller.join().unwrap();

    // More than WAIT_MAX handles is an error.
    let mut many: Vec<Channel> = (0..=nerve::WAIT_MAX)
        .map(|_| Channel::open(&a.name, Access::Read).unwrap())
        .collect();
    let mut refs: Vec<&mut Channel> = many.iter_mut().collect();
    assert_eq!(wait_any(&mut refs, Wait::No), Err(Error::Inval));
}
