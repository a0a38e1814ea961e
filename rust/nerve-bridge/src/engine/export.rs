//! Export: one thread per exported local channel, and the channel
//! directory's watcher that starts and stops them.
use super::local::{ExportCounters, LocalChannel};
use super::{chan_ino, lock, real_offset, Bridge, Event};
use crate::wire::{self, Description};
use nerve::bridge::{ChannelDir, DirEvent};
use nerve::{Access, Channel, Error, Wait, Which};
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use zenoh::qos::CongestionControl;
use zenoh::Wait as _;

/// An exporter's wait for a message is cut in slices of this length.
const READ_SLICE: Duration = Duration::from_millis(250);
/// A batch holds messages smaller than BATCH_ITEM, at most BATCH_MAX of
/// them and about BATCH_BYTES in all.
const BATCH_ITEM: usize = 16 << 10;
const BATCH_MAX: usize = 256;
const BATCH_BYTES: usize = 64 << 10;

pub(super) struct ExportShared {
    desc: Description,
    head_seq: AtomicU64,
    rate: Mutex<VecDeque<(i64, u64)>>,
    pub(super) counters: Mutex<ExportCounters>,
    error: Mutex<Option<String>>,
}

impl ExportShared {
    fn rate(&self) -> f64 {
        let r = lock(&self.rate);
        match (r.front(), r.back()) {
            (Some(a), Some(b)) if r.len() >= 2 && b.0 != a.0 => {
                (b.1 as f64 - a.1 as f64) * 1e9 / (b.0 - a.0) as f64
            }
            _ => 0.0,
        }
    }
}

/// Publishes one local channel (its own thread).
pub(super) struct Exporter {
    pub(super) shared: Arc<ExportShared>,
    cancel: nerve::Canceller,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    _queryable: zenoh::query::Queryable<()>,
    _token: zenoh::liveliness::LivelinessToken,
}

/// One batch being filled by the exporter: messages back to back in
/// `data` (the buffer Zenoh sends from), one table entry each.
struct Batch {
    data: Vec<u8>,
    table: Vec<(u64, i64, i64)>,
    t0: i64,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            data: Vec::with_capacity(BATCH_BYTES + BATCH_ITEM),
            table: Vec::new(),
            t0: 0,
        }
    }
}

struct ExportLoop {
    ch: Channel,
    publisher: zenoh::pubsub::Publisher<'static>,
    shared: Arc<ExportShared>,
    local: Arc<LocalChannel>,
    epoch: i64,
    stop: Arc<AtomicBool>,
}

impl Exporter {
    fn new(b: &Bridge, name: &str) -> Result<Exporter, String> {
        let mut ch = Channel::open(name, Access::Read).map_err(|e| e.to_string())?;
        let st = ch.stats().map_err(|e| e.to_string())?;
        let meta = ch.meta();
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        let desc = Description {
            host: b.ident.clone(),
            name: name.to_string(),
            slots: st.slots,
            data_size: st.data_size,
            type_name: opt(meta.type_name),
            encoding: opt(meta.encoding),
            schema: (!meta.schema.is_empty()).then(|| meta.schema.to_vec()),
            epoch: st.created_ns,
            head_seq: 0,
            rate_hz: 0.0,
        };
        // New messages only, unless the channel appeared after the bridge
        // started (then everything still in its ring was written since).
        let from_start = st.created_ns >= b.started_real;
        ch.seek(if from_start {
            st.tail_seq - 1
        } else {
            st.head_seq
        });
        let shared = Arc::new(ExportShared {
            desc,
            head_seq: AtomicU64::new(st.head_seq),
            rate: Mutex::new(VecDeque::new()),
            counters: Mutex::new(ExportCounters::default()),
            error: Mutex::new(None),
        });
        let zerr = |e: zenoh::Error| e.to_string();
        let s = &b.session;
        let publisher = s
            .declare_publisher(wire::data_key(b.domain, &b.ident, name))
            .congestion_control(CongestionControl::Drop)
            .priority(b.priority)
            .express(b.express)
            .wait()
            .map_err(zerr)?;
        let q = shared.clone();
        let mkey = wire::meta_key(b.domain, &b.ident, name);
        let reply_key = mkey.clone();
        let queryable = s
            .declare_queryable(mkey)
            .callback(move |query| {
                let mut d = q.desc.clone();
                d.head_seq = q.head_seq.load(Ordering::Relaxed);
                d.rate_hz = q.rate();
                let _ = query.reply(reply_key.clone(), d.to_json()).wait(); // the querier left
            })
            .wait()
            .map_err(zerr)?;
        let token = s
            .liveliness()
            .declare_token(wire::live_key(b.domain, &b.ident, name))
            .wait()
            .map_err(zerr)?;
        let stop = Arc::new(AtomicBool::new(false));
        let cancel = ch.canceller();
        let lp = ExportLoop {
            ch,
            publisher,
            shared: shared.clone(),
            local: b.local_of(name),
            epoch: st.created_ns,
            stop: stop.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("export-{name}"))
            .spawn(move || lp.run())
            .map_err(|e| e.to_string())?;
        Ok(Exporter {
            shared,
            cancel,
            stop,
            thread: Some(thread),
            _queryable: queryable,
            _token: token,
        })
    }

    fn sample_rate(&self, now: i64) {
        let mut r = lock(&self.shared.rate);
        r.push_back((now, self.shared.head_seq.load(Ordering::Relaxed)));
        while r.len() > 2 && now - r[0].0 > 3_000_000_000 {
            r.pop_front();
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cancel.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The queryable and the token are undeclared when dropped.
    }
}

/// What one read gave.
enum Read {
    Msg,
    Nothing,
}

impl ExportLoop {
    fn run(mut self) {
        let mut batch = Batch::new();
        while !self.stop.load(Ordering::Relaxed) {
            match self.drain(&mut batch) {
                Ok(()) => {}
                Err(Error::Canceled) => break,
                Err(e) => {
                    *lock(&self.shared.error) = Some(e.to_string());
                    break;
                }
            }
        }
    }

    /// Wait for a message, then forward it and every message already
    /// waiting behind it.
    fn drain(&mut self, batch: &mut Batch) -> Result<(), Error> {
        let off = real_offset();
        let mut wait = Wait::For(READ_SLICE);
        while let Read::Msg = self.read_one(wait, batch, off)? {
            wait = Wait::No;
        }
        if !batch.table.is_empty() {
            self.send_batch(batch);
        }
        Ok(())
    }

    /// Read one message through a view: a large one is copied into a
    /// buffer of its own and sent at once (after the batch so far), a small
    /// one is appended to the batch. Both copies are validated before use.
    fn read_one(&mut self, wait: Wait, batch: &mut Batch, off: i64) -> Result<Read, Error> {
        let view = match self.ch.view(Which::Next, wait) {
            Ok(v) => v,
            Err(Error::Again | Error::TimedOut) => return Ok(Read::Nothing),
            Err(e) => return Err(e),
        };
        let info = view.info();
        self.shared.head_seq.store(info.seq, Ordering::Relaxed);
        // Asked before the counters' lock: it may wait for an importer.
        let own = self.local.imported.load(Ordering::Acquire) && self.local.is_own(info.seq);
        let mut c = lock(&self.shared.counters);
        c.dropped_congestion += info.missed;
        if own {
            c.looped += 1;
            return Ok(Read::Msg);
        }
        drop(c);
        let n = info.len;
        if n >= BATCH_ITEM {
            let data = match view.to_vec() {
                Ok(d) => d,
                Err(_) => {
                    lock(&self.shared.counters).dropped_error += 1; // overwritten while copied
                    return Ok(Read::Msg);
                }
            };
            if !batch.table.is_empty() {
                self.send_batch(batch);
            }
            let att = wire::pack_header(info.seq, info.time_ns + off, self.epoch, 0);
            self.send(data, att, 1, n, info.time_ns);
            return Ok(Read::Msg);
        }
        if view.append_to(&mut batch.data).is_err() {
            // Overwritten while copied; append_to took its bytes back out.
            lock(&self.shared.counters).dropped_error += 1;
            return Ok(Read::Msg);
        }
        if batch.table.is_empty() {
            batch.t0 = info.time_ns;
        }
        batch.table.push((info.seq, info.time_ns + off, n as i64));
        if batch.data.len() >= BATCH_BYTES || batch.table.len() >= BATCH_MAX {
            self.send_batch(batch);
        }
        Ok(Read::Msg)
    }

    fn send_batch(&mut self, batch: &mut Batch) {
        let data = std::mem::replace(
            &mut batch.data,
            Vec::with_capacity(BATCH_BYTES + BATCH_ITEM),
        );
        let k = batch.table.len();
        let att = if k == 1 {
            wire::pack_header(batch.table[0].0, batch.table[0].1, self.epoch, 0)
        } else {
            wire::pack_table(&batch.table, self.epoch)
        };
        let size = data.len();
        self.send(data, att, k as u64, size, batch.t0);
        batch.table.clear();
    }

    /// One Zenoh sample. The payload Vec becomes Zenoh's buffer (no copy).
    fn send(&mut self, data: Vec<u8>, att: Vec<u8>, k: u64, size: usize, t0: i64) {
        let r = self.publisher.put(data).attachment(att).wait();
        let mut c = lock(&self.shared.counters);
        if let Err(e) = r {
            // Zenoh refused the sample: counted, and the next scan
            // reports it and starts the export again.
            c.dropped_error += k;
            *lock(&self.shared.error) = Some(e.to_string());
            return;
        }
        c.send_age.add(nerve::clock::now_ns() - t0);
        c.forwarded += k;
        c.samples += 1;
        c.bytes += size as u64;
    }
}

impl Bridge {
    /// Watch /dev/shm for channels matching the --export globs (the bridge
    /// kernel's `ChannelDir`: inotify, else a scan every 500 ms) from a
    /// thread of its own that hands each change to the main thread as an
    /// `Event`, so a new channel is exported at once, not at the next scan.
    /// The thread ends when the bridge (the receiver) is gone.
    pub(super) fn watch_local(&mut self) -> Result<(), String> {
        let globs: Vec<&str> = self.exports_g.iter().map(String::as_str).collect();
        let mut dir = ChannelDir::open(&globs, false)
            .map_err(|e| format!("cannot watch /dev/shm: {}", e.detail()))?;
        // The channels there now are exported before start() returns (and
        // the bridge says it is ready), as the listing of old did.
        let mut now = Vec::new();
        while let Some(ev) = dir
            .next()
            .map_err(|e| format!("cannot list /dev/shm: {}", e.detail()))?
        {
            now.push(ev);
        }
        let tx = self.events_tx.clone();
        let alive = Arc::downgrade(&self.rep);
        std::thread::Builder::new()
            .name("nerve-dir".into())
            .spawn(move || {
                while alive.strong_count() > 0 {
                    let sent = match dir.next() {
                        Ok(Some(ev)) => tx.send(Event::Local(ev)),
                        Ok(None) => {
                            wait_readable(&dir);
                            Ok(())
                        }
                        Err(e) => {
                            std::thread::sleep(Duration::from_millis(500));
                            tx.send(Event::LocalError(e.detail()))
                        }
                    };
                    if sent.is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| format!("cannot start the /dev/shm watcher: {e}"))?;
        for ev in now {
            self.local_event(ev);
        }
        Ok(())
    }

    /// A local channel appeared or went: export it, or stop its export (a
    /// replaced file: stopped, then exported again).
    pub(super) fn local_event(&mut self, ev: DirEvent) {
        match ev {
            DirEvent::Removed(name) => {
                self.exporters.remove(&name);
                self.unexported.remove(&name);
            }
            DirEvent::Created(name) => {
                self.exporters.remove(&name);
                self.start_export(&name);
            }
        }
    }

    fn start_export(&mut self, name: &str) {
        self.local(name);
        match Exporter::new(self, name) {
            Ok(ex) => {
                self.unexported.remove(name);
                self.exporters.insert(name.to_string(), ex);
            }
            Err(e) => {
                self.unexported.insert(name.to_string());
                self.rep
                    .report(&format!("{name}: cannot export: {e}"), Some("export"));
            }
        }
    }

    /// Every 500 ms: the budget of channels whose file went, imports whose
    /// channel went, exports that failed (tried again) and their rates.
    pub(super) fn scan(&mut self) {
        for lc in self.locals.values() {
            let mut st = lock(&lc.state);
            if st.charged && (st.ino.is_none() || chan_ino(&lc.name) != st.ino) {
                st.charged = false; // its file is gone: no longer counted
                self.budget.release(&lc.name);
            }
        }
        for (key, st) in &self.streams {
            let lc = lock(&st.shared.local.state);
            let gone = lc.writer.is_none() || lc.ino.is_none() || chan_ino(&key.1) != lc.ino;
            drop(lc);
            if gone {
                self.rep.log(&format!(
                    "{}: the local channel was removed or recreated; importing it again",
                    key.1
                ));
                self.pending.insert(key.clone(), Instant::now());
            }
        }
        let failed: Vec<(String, String)> = self
            .exporters
            .iter()
            .filter_map(|(n, ex)| lock(&ex.shared.error).clone().map(|e| (n.clone(), e)))
            .collect();
        for (name, e) in failed {
            self.rep.log(&format!("{name}: export stopped: {e}"));
            self.exporters.remove(&name);
            self.start_export(&name);
        }
        for name in self.unexported.clone() {
            self.start_export(&name);
        }
        let now = nerve::clock::now_ns();
        for ex in self.exporters.values_mut() {
            ex.sample_rate(now);
        }
    }
}

/// Until `dir` may have news, or 500 ms (so that the watcher notices a
/// bridge that is gone).
fn wait_readable(dir: &ChannelDir) {
    let mut p = libc::pollfd {
        fd: dir.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, 500) };
}
