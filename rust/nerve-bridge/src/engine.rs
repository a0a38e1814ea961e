//! The export/import machinery (docs/bridge.md), the same behaviour as the
//! Python data path it replaces (python-tools/src/nerve_tools/
//! bridge/engine.py), in Rust on the `zenoh` crate and the `nerve` crate:
//!
//! - `LocalChannel`: what the exporter and the importers of one local
//!   channel share: the sequence numbers the bridge itself put (never
//!   exported again: no loops), under a lock that the importer holds from
//!   its put until the number is recorded, so the exporter, which checks
//!   after reading, can never miss one.
//! - `Exporter`: one thread per exported channel. Sleeps in nerve's
//!   blocking wait, then takes every message already waiting through
//!   zero-copy views (one wake-up drains a burst into batches), copies each
//!   once, validated, into the buffer Zenoh sends from, and publishes with
//!   congestion control DROP; announces the channel with a liveliness token
//!   and a queryable answering its description.
//! - `ImportStream`: one Zenoh subscriber per (origin host, channel): checks
//!   the header, counts gaps, and writes each message from Zenoh's receive
//!   buffer straight into a reservation of the local channel, committed
//!   with its origin time translated to this host's CLOCK_MONOTONIC.
//! - `Bridge`: the globs, the periodic scan of local channels (one
//!   directory listing and one stat(2) per channel every 0.5 s), the
//!   liveliness events of remote channels, counters and the registry file
//!   for `nerve top`.
use crate::limits::ImportBudget;
use crate::wire::{self, Description};
use nerve::{Access, Channel, Error, Options, Wait, Which};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use zenoh::qos::{CongestionControl, Priority};
use zenoh::sample::{Locality, SampleKind};
use zenoh::{Session, Wait as _};

/// How long an importer waits for the local writer lock.
const PUT_TIMEOUT: Duration = Duration::from_millis(50);
/// An exporter's wait for a message is cut in slices of this length.
const READ_SLICE: Duration = Duration::from_millis(250);
/// Samples whose ages the counters summarise.
const AGES_KEPT: usize = 1024;
/// A batch holds messages smaller than BATCH_ITEM, at most BATCH_MAX of
/// them and about BATCH_BYTES in all.
const BATCH_ITEM: usize = 16 << 10;
const BATCH_MAX: usize = 256;
const BATCH_BYTES: usize = 64 << 10;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking thread leaves plain counters and sets: still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The inode of channel NAME's file (where the library says it is): it
/// tells whether the channel was recreated.
fn chan_ino(name: &str) -> Option<u64> {
    let path = nerve::path(name).ok()?;
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// This host's CLOCK_REALTIME - CLOCK_MONOTONIC, ns.
fn real_offset() -> i64 {
    nerve::clock::to_realtime_ns(0)
}

/// Logs problems to stderr, each kind once per channel when asked.
pub struct Reporter {
    seen: Mutex<HashSet<(String, String)>>,
}

impl Reporter {
    /// Every line the engine prints passes here: peer ids, channel names
    /// and keys in `msg` come from the network, so it is escaped.
    pub fn log(&self, msg: &str) {
        eprintln!("nerve bridge: {}", crate::text::escape(msg));
    }
    pub fn report(&self, msg: &str, once: Option<&str>) {
        if let Some(kind) = once {
            let first = msg.split(':').next().unwrap_or("").to_string();
            if !lock(&self.seen).insert((kind.to_string(), first)) {
                return;
            }
        }
        self.log(msg);
    }
}

/// The ages of the latest AGES_KEPT samples (ns).
#[derive(Default)]
struct Ages(VecDeque<i64>);

impl Ages {
    fn add(&mut self, ns: i64) {
        if self.0.len() == AGES_KEPT {
            self.0.pop_front();
        }
        self.0.push_back(ns);
    }
    fn summary(&self) -> Value {
        let mut v: Vec<i64> = self.0.iter().copied().collect();
        if v.is_empty() {
            return json!({"n": 0});
        }
        v.sort_unstable();
        let n = v.len();
        json!({"n": n, "p50": v[n / 2] as f64 / 1e3, "p99": v[(n * 99 / 100).min(n - 1)] as f64 / 1e3,
               "max": v[n - 1] as f64 / 1e3})
    }
}

#[derive(Default)]
struct ExportCounters {
    forwarded: u64,
    samples: u64,
    bytes: u64,
    dropped_congestion: u64,
    dropped_error: u64,
    looped: u64,
    send_age: Ages,
}

impl ExportCounters {
    fn as_json(&self) -> Value {
        json!({"forwarded": self.forwarded, "samples": self.samples, "bytes": self.bytes,
               "dropped_congestion": self.dropped_congestion, "dropped_error": self.dropped_error,
               "looped": self.looped, "send_age_us": self.send_age.summary()})
    }
}

#[derive(Default)]
struct ImportCounters {
    forwarded: u64,
    bytes: u64,
    gaps: u64,
    dropped_size: u64,
    dropped_error: u64,
    duplicates: u64,
    clamped: u64,
    put_age: Ages,
}

impl ImportCounters {
    fn as_json(&self, connected: bool) -> Value {
        json!({"forwarded": self.forwarded, "bytes": self.bytes, "gaps": self.gaps,
               "dropped_size": self.dropped_size, "dropped_error": self.dropped_error,
               "duplicates": self.duplicates, "clamped": self.clamped,
               "put_age_us": self.put_age.summary(), "connected": connected})
    }
}

/// The local writer side of one channel name.
struct LocalState {
    own: HashSet<u64>,
    writer: Option<Channel>,
    ino: Option<u64>,
    data_size: u64,
    slots: u64,
    /// Whether the bridge created the channel from a peer's description
    /// (then its file is charged to the import budget until it is gone).
    charged: bool,
}

/// The bridge's shared state for one local channel name.
pub struct LocalChannel {
    name: String,
    state: Mutex<LocalState>,
    /// Set (for good) before the first import into this channel: only then
    /// can an exported message be one of the bridge's own.
    imported: AtomicBool,
    /// Whether this bridge exports the channel: only then does the
    /// importer remember the sequence numbers it put.
    exported: bool,
}

impl LocalChannel {
    fn is_own(&self, seq: u64) -> bool {
        lock(&self.state).own.remove(&seq)
    }
}

fn prune(st: &mut LocalState, last_put: u64) {
    let keep = st.slots.max(64);
    if st.own.len() as u64 > 2 * keep {
        let from = last_put.saturating_sub(keep);
        st.own.retain(|&s| s > from);
    }
}

// ---- export -----------------------------------------------------------

struct ExportShared {
    desc: Description,
    head_seq: AtomicU64,
    rate: Mutex<VecDeque<(i64, u64)>>,
    counters: Mutex<ExportCounters>,
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
struct Exporter {
    ino: Option<u64>,
    shared: Arc<ExportShared>,
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
        let ino = chan_ino(name);
        let mut ch = Channel::open(name, Access::Read).map_err(|e| e.to_string())?;
        let st = ch.stats().map_err(|e| e.to_string())?;
        let ino = if chan_ino(name) == ino { ino } else { None };
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
            ino,
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
        let mut c = lock(&self.shared.counters);
        c.dropped_congestion += info.missed;
        if self.local.imported.load(Ordering::Acquire) && self.local.is_own(info.seq) {
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

// ---- import -----------------------------------------------------------

struct StreamState {
    counters: ImportCounters,
    last_seq: u64,
    epoch: Option<i64>,
}

/// What an import stream keeps across a departure and return of its remote.
pub struct StreamShared {
    host: String,
    name: String,
    local: Arc<LocalChannel>,
    state: Mutex<StreamState>,
    rep: Arc<Reporter>,
}

struct ImportStream {
    shared: Arc<StreamShared>,
    _sub: zenoh::pubsub::Subscriber<()>,
}

impl StreamShared {
    /// Check the header and write the message(s) of one sample into the
    /// local channel, in the order of their origin sequence numbers.
    fn on_message(&self, data: &[u8], att: Option<&[u8]>) {
        let mut s = lock(&self.state);
        let (epoch, table) = match wire::unpack_table(att, data.len()) {
            Ok(x) => x,
            Err(e) => {
                s.counters.dropped_error += 1;
                drop(s);
                self.rep.report(
                    &format!(
                        "{} from {}: message with a bad header dropped ({e})",
                        self.name, self.host
                    ),
                    Some("hdr"),
                );
                return;
            }
        };
        if Some(epoch) != s.epoch {
            // First message, or the origin channel was recreated (its
            // sequence numbers start again): no gap to count.
            s.last_seq = if s.epoch.is_none() { table[0].0 - 1 } else { 0 };
            s.epoch = Some(epoch);
        }
        let offset = -real_offset();
        let mut last = s.last_seq;
        let (mut fwd, mut nbytes, mut gaps, mut dups, mut clamped, mut big, mut errors) =
            (0u64, 0u64, 0, 0, 0, 0, 0);
        let mut t_first = 0i64;
        let mut put_error: Option<Error> = None;
        {
            // One lock for the whole sample: the exporter of this channel
            // waits at most that long to check a sequence number.
            let mut lc = lock(&self.local.state);
            let size = lc.data_size;
            let exported = self.local.exported;
            let mut got_seq = 0;
            let mut pos = 0usize;
            for &(seq, t_real, n) in &table {
                let (start, end) = (pos, pos + n as usize);
                pos = end;
                if seq <= last {
                    dups += 1;
                    continue;
                }
                if last != 0 && seq > last + 1 {
                    gaps += seq - last - 1;
                }
                last = seq;
                if n as u64 > size {
                    big += 1;
                    continue;
                }
                let Some(w) = lc.writer.as_mut() else {
                    errors += 1;
                    continue;
                };
                let t_mono = t_real + offset;
                // Zenoh's receive buffer straight into a reservation.
                let put = w
                    .loan_with(n as usize, Wait::For(PUT_TIMEOUT))
                    .and_then(|mut loan| {
                        loan.copy_from_slice(&data[start..end]);
                        loan.commit_at(n as usize, t_mono)
                    });
                match put {
                    Ok(info) => {
                        got_seq = info.seq;
                        if exported {
                            lc.own.insert(info.seq);
                        }
                        if info.time_ns != t_mono {
                            clamped += 1;
                        }
                        if fwd == 0 {
                            t_first = t_mono;
                        }
                        fwd += 1;
                        nbytes += n as u64;
                    }
                    Err(e) => {
                        errors += 1;
                        put_error = Some(e);
                    }
                }
            }
            if fwd > 0 && exported {
                prune(&mut lc, got_seq);
            }
        }
        let c = &mut s.counters;
        if fwd > 0 {
            c.put_age.add(nerve::clock::now_ns() - t_first);
        }
        c.forwarded += fwd;
        c.bytes += nbytes;
        c.gaps += gaps;
        c.duplicates += dups;
        c.clamped += clamped;
        c.dropped_error += errors;
        c.dropped_size += big;
        s.last_seq = last;
        drop(s);
        if let Some(e) = put_error {
            self.rep.report(
                &format!("{}: local put failed: {e}", self.name),
                Some("put"),
            );
        }
        if big > 0 {
            self.rep.report(
                &format!(
                    "{} from {}: message larger than the local ring ({} bytes): dropped",
                    self.name,
                    self.host,
                    self.local_size()
                ),
                Some("size"),
            );
        }
    }

    fn local_size(&self) -> u64 {
        lock(&self.local.state).data_size
    }
}

impl ImportStream {
    fn new(b: &Bridge, shared: Arc<StreamShared>) -> Result<ImportStream, String> {
        shared.local.imported.store(true, Ordering::Release); // before any put
        let s2 = shared.clone();
        let sub = b
            .session
            .declare_subscriber(wire::data_key(b.domain, &shared.host, &shared.name))
            .allowed_origin(Locality::Remote)
            .callback(move |sample| {
                let payload = sample.payload().to_bytes();
                let att = sample.attachment().map(|a| a.to_bytes());
                s2.on_message(&payload, att.as_deref());
            })
            .wait()
            .map_err(|e| e.to_string())?;
        Ok(ImportStream { shared, _sub: sub })
    }
}

// ---- the bridge ---------------------------------------------------------

/// What the command line says about the bridge (not the session).
pub struct BridgeOptions {
    pub domain: u64,
    pub ident: String,
    pub exports: Vec<String>,
    /// `(origin glob, name glob)`: `--import [ORIGIN/]GLOB`.
    pub imports: Vec<(Option<String>, String)>,
    pub priority: Priority,
    pub express: bool,
    pub budget: ImportBudget,
    /// RECLAIM: how long a channel made for a peer that left is kept.
    pub import_grace: Duration,
}

/// `"robot1/cam*"` -> (Some("robot1"), "cam*"); `"cam*"` -> (None, "cam*").
/// Channel names have no '/', so the first part of a glob that has one is
/// the origin (a glob of bridge ids).
pub fn split_import(glob: &str) -> Result<(Option<String>, String), String> {
    match glob.split_once('/') {
        None => Ok((None, glob.to_string())),
        Some((o, n)) if !o.is_empty() && !n.is_empty() && !n.contains('/') => {
            Ok((Some(o.to_string()), n.to_string()))
        }
        _ => Err(format!(
            "bad --import '{glob}': NAMEGLOB or ORIGINGLOB/NAMEGLOB"
        )),
    }
}

/// The prefix of ensure_local's answer for a description over the import
/// bounds, and how often such a channel is tried again.
const REFUSED: &str = "refused: ";
const REFUSED_RETRY: Duration = Duration::from_secs(2);

type Key = (String, String);

/// What the Zenoh callbacks tell the bridge's main thread.
enum Event {
    /// A remote channel's liveliness token came (true) or went.
    Live(bool, String, String),
    /// Another bridge with this bridge's id (its Zenoh id) came or went.
    Clash(bool, String),
}
/// Exports and imports channels over one Zenoh session.
pub struct Bridge {
    session: Session,
    domain: u64,
    ident: String,
    exports_g: Vec<String>,
    imports_g: Vec<(Option<String>, String)>,
    priority: Priority,
    express: bool,
    started_real: i64,
    rep: Arc<Reporter>,
    locals: HashMap<String, Arc<LocalChannel>>,
    exporters: BTreeMap<String, Exporter>,
    streams: BTreeMap<Key, ImportStream>,
    departed: BTreeMap<Key, Arc<StreamShared>>,
    remote: HashMap<Key, bool>,
    pending: HashMap<Key, Instant>,
    /// RECLAIM: (host, name) that left -> when its channel goes.
    gone: HashMap<Key, Instant>,
    import_grace: Duration,
    conflicts: BTreeMap<String, String>,
    budget: ImportBudget,
    /// (host, name) -> the geometry last refused for its size, so that a
    /// refusal is counted and reported once, not at every retry.
    refused: HashMap<Key, (u64, u64)>,
    zid: String,
    /// Other bridges claiming this bridge's id (their Zenoh ids).
    clashes: std::collections::BTreeSet<String>,
    events_tx: mpsc::Sender<Event>,
    events: mpsc::Receiver<Event>,
    live_sub: Option<zenoh::pubsub::Subscriber<()>>,
    node_sub: Option<zenoh::pubsub::Subscriber<()>>,
    node_token: Option<zenoh::liveliness::LivelinessToken>,
    next_scan: Instant,
    registry_state: Option<String>,
}

impl Bridge {
    pub fn new(session: Session, o: BridgeOptions) -> Bridge {
        let (tx, rx) = mpsc::channel();
        let started_real = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        let zid = session.zid().to_string();
        Bridge {
            session,
            domain: o.domain,
            ident: o.ident,
            exports_g: o.exports,
            imports_g: o.imports,
            priority: o.priority,
            express: o.express,
            started_real,
            rep: Arc::new(Reporter {
                seen: Mutex::new(HashSet::new()),
            }),
            locals: HashMap::new(),
            exporters: BTreeMap::new(),
            streams: BTreeMap::new(),
            departed: BTreeMap::new(),
            remote: HashMap::new(),
            pending: HashMap::new(),
            gone: HashMap::new(),
            import_grace: o.import_grace,
            conflicts: BTreeMap::new(),
            budget: o.budget,
            refused: HashMap::new(),
            zid,
            clashes: Default::default(),
            events_tx: tx,
            events: rx,
            live_sub: None,
            node_sub: None,
            node_token: None,
            next_scan: Instant::now(),
            registry_state: None,
        }
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    fn exports(&self, name: &str) -> bool {
        self.exports_g.iter().any(|g| wire::fnmatch(name, g))
    }
    /// Whether channel `name` exported by the bridge `host` is imported: a
    /// glob `NAMEGLOB` takes it from any origin, `ORIGINGLOB/NAMEGLOB` only
    /// from bridges whose id matches.
    fn imports(&self, host: &str, name: &str) -> bool {
        self.imports_g.iter().any(|(o, g)| {
            o.as_deref().is_none_or(|o| wire::fnmatch(host, o)) && wire::fnmatch(name, g)
        })
    }
    fn local_of(&self, name: &str) -> Arc<LocalChannel> {
        self.locals.get(name).cloned().expect("local() first")
    }

    fn local(&mut self, name: &str) -> Arc<LocalChannel> {
        if let Some(l) = self.locals.get(name) {
            return l.clone();
        }
        let l = Arc::new(LocalChannel {
            name: name.to_string(),
            state: Mutex::new(LocalState {
                own: HashSet::new(),
                writer: None,
                ino: None,
                data_size: 0,
                slots: 0,
                charged: false,
            }),
            imported: AtomicBool::new(false),
            exported: self.exports(name),
        });
        self.locals.insert(name.to_string(), l.clone());
        l
    }

    pub fn start(&mut self) -> Result<(), String> {
        crate::registry::read_all(true);
        // Announce this bridge and watch for another one with its id (both
        // ends see the other's token, so both report it).
        let (tx, ident, zid) = (self.events_tx.clone(), self.ident.clone(), self.zid.clone());
        let live = self.session.liveliness();
        let node_sub = live
            .declare_subscriber(wire::node_key(self.domain, &self.ident, "*"))
            .history(true)
            .callback(move |sample| {
                if let Some((_, _, host, other)) = wire::split_key(sample.key_expr().as_str()) {
                    if host == ident && other != zid {
                        let _ = tx.send(Event::Clash(
                            sample.kind() == SampleKind::Put,
                            other.to_string(),
                        ));
                    }
                }
            })
            .wait()
            .map_err(|e| e.to_string())?;
        self.node_sub = Some(node_sub);
        let token = live
            .declare_token(wire::node_key(self.domain, &self.ident, &self.zid))
            .wait()
            .map_err(|e| e.to_string())?;
        self.node_token = Some(token);
        if !self.imports_g.is_empty() {
            let tx = self.events_tx.clone();
            let domain = self.domain;
            let sub = self
                .session
                .liveliness()
                .declare_subscriber(format!("nerve/{domain}/live/*/*"))
                .history(true)
                .callback(move |sample| {
                    if let Some((d, _, host, name)) = wire::split_key(sample.key_expr().as_str()) {
                        if d == domain {
                            let up = sample.kind() == SampleKind::Put;
                            let _ = tx.send(Event::Live(up, host.to_string(), name.to_string()));
                        }
                    }
                })
                .wait()
                .map_err(|e| e.to_string())?;
            self.live_sub = Some(sub);
        }
        self.step(Duration::ZERO);
        Ok(())
    }

    /// Handle remote events for up to `wait`, then the periodic work due.
    pub fn step(&mut self, wait: Duration) {
        let end = Instant::now() + wait;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Live(up, host, name)) => self.remote_event(up, host, name),
                Ok(Event::Clash(up, zid)) => self.clash(up, zid),
                Err(_) => break,
            }
        }
        let now = Instant::now();
        let due: Vec<Key> = self
            .pending
            .iter()
            .filter(|(_, &t)| now >= t)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.attach(key);
        }
        let left: Vec<Key> = self
            .gone
            .iter()
            .filter(|(_, &t)| now >= t)
            .map(|(k, _)| k.clone())
            .collect();
        for key in left {
            self.reclaim(key);
        }
        if now >= self.next_scan {
            self.next_scan = now + Duration::from_millis(500);
            self.scan();
            self.write_registry();
        }
    }

    fn clash(&mut self, up: bool, zid: String) {
        if up && self.clashes.insert(zid.clone()) {
            self.rep.log(&format!(
                "ERROR: another bridge (Zenoh id {zid}) also calls itself '{}' on domain {}: each drops the \
                 other's channels as its own echo and importers cannot tell them apart; give each bridge \
                 its own --id",
                self.ident, self.domain
            ));
        } else if !up && self.clashes.remove(&zid) {
            self.rep.log(&format!(
                "the other bridge called '{}' (Zenoh id {zid}) left",
                self.ident
            ));
        }
    }

    pub fn close(&mut self) {
        self.live_sub = None;
        self.node_sub = None;
        self.node_token = None;
        self.exporters.clear();
        self.streams.clear();
        for lc in self.locals.values() {
            lock(&lc.state).writer = None;
        }
        crate::registry::remove(std::process::id());
    }

    // ---- export -------------------------------------------------------

    fn scan(&mut self) {
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
        if self.exports_g.is_empty() {
            return;
        }
        let names: std::collections::BTreeSet<String> = match nerve::list() {
            Ok(n) => n.into_iter().collect(),
            Err(e) => {
                self.rep
                    .report(&format!("cannot list /dev/shm: {e}"), Some("list"));
                return;
            }
        };
        let now = nerve::clock::now_ns();
        for name in &names {
            if !self.exports(name) {
                continue;
            }
            let Some(ino) = chan_ino(name) else { continue };
            if let Some(ex) = self.exporters.get(name) {
                let err = lock(&ex.shared.error).clone();
                if ex.ino != Some(ino) || err.is_some() {
                    if let Some(e) = err {
                        self.rep.log(&format!("{name}: export stopped: {e}"));
                    }
                    self.exporters.remove(name);
                }
            }
            if !self.exporters.contains_key(name) {
                self.local(name);
                match Exporter::new(self, name) {
                    Ok(ex) => {
                        self.exporters.insert(name.clone(), ex);
                    }
                    Err(e) => {
                        self.rep
                            .report(&format!("{name}: cannot export: {e}"), Some("export"));
                        continue;
                    }
                }
            }
            self.exporters[name].sample_rate(now);
        }
        self.exporters.retain(|n, _| names.contains(n));
    }

    // ---- import -------------------------------------------------------

    fn remote_event(&mut self, up: bool, host: String, name: String) {
        if host == self.ident || !self.imports(&host, &name) {
            return;
        }
        let key = (host, name);
        if up {
            if !self.remote.get(&key).copied().unwrap_or(false) {
                self.rep.log(&format!("{} exports {}", key.0, key.1));
            }
            self.gone.remove(&key);
            self.remote.insert(key.clone(), true);
            self.attach(key);
        } else {
            if self.remote.get(&key).copied().unwrap_or(false) {
                self.rep.log(&format!("{} left: {}", key.0, key.1));
                self.gone
                    .insert(key.clone(), Instant::now() + self.import_grace);
            }
            self.remote.insert(key.clone(), false);
            self.pending.remove(&key);
            if let Some(st) = self.streams.remove(&key) {
                self.departed.insert(key, st.shared.clone()); // its counters go on if it returns
            }
        }
    }

    /// RECLAIM. Budgets come back: a channel this bridge made from a
    /// peer's description (charged to --max-import-total) is removed once
    /// that peer has been gone for the grace period and no other peer
    /// exports the name, and its bytes return to the budget. A channel
    /// that existed before (made locally, or by another program) is never
    /// removed. Local readers of a removed channel keep their mapping; if
    /// the peer comes back, the channel is made again and they reopen it.
    fn reclaim(&mut self, key: Key) {
        self.gone.remove(&key);
        let name = &key.1;
        let back = self.remote.iter().any(|((_, n), &up)| up && n == name);
        let Some(lc) = self.locals.get(name).cloned() else {
            return;
        };
        let mut st = lock(&lc.state);
        if back || !st.charged || st.ino.is_none() || chan_ino(name) != st.ino {
            return; // in use again, not made here, or no longer the file made
        }
        st.writer = None;
        match nerve::unlink(name) {
            Ok(()) => {
                st.charged = false;
                st.ino = None;
                drop(st);
                let before = self.budget.charged();
                self.budget.release(name);
                self.rep.log(&format!(
                    "{name}: {} left {:.1} s ago; removed the channel made for it ({} returned to the import budget)",
                    key.0,
                    self.import_grace.as_secs_f64(),
                    crate::limits::fmt_size(before - self.budget.charged())
                ));
            }
            Err(e) => self.rep.report(
                &format!("{name}: cannot remove the channel made for {}: {e}", key.0),
                Some("reclaim"),
            ),
        }
    }

    fn query(&self, host: &str, name: &str) -> (Option<Description>, Option<String>) {
        let key = wire::meta_key(self.domain, host, name);
        let replies = match self
            .session
            .get(&key)
            .timeout(Duration::from_secs(2))
            .wait()
        {
            Ok(r) => r,
            Err(e) => {
                self.rep.report(
                    &format!("{name} from {host}: query {key}: {e}"),
                    Some("query"),
                );
                return (None, None);
            }
        };
        let (mut good, mut bad) = (None, None);
        while let Ok(reply) = replies.recv() {
            if let Ok(sample) = reply.result() {
                match Description::from_json(&sample.payload().to_bytes()) {
                    Ok(d) if good.is_none() => good = Some(d),
                    Ok(_) => {}
                    Err(e) => bad = bad.or(Some(e)),
                }
            }
        }
        (good, bad)
    }

    /// Learn the description of host's channel, make the local channel and
    /// subscribe. Retried every second while the remote is there.
    fn attach(&mut self, key: Key) {
        self.pending.remove(&key);
        if !self.remote.get(&key).copied().unwrap_or(false) {
            return;
        }
        let (host, name) = (&key.0, &key.1);
        let retry = Instant::now() + Duration::from_secs(1);
        let (desc, bad) = self.query(host, name);
        let Some(desc) = desc else {
            if let Some(bad) = bad {
                self.rep.report(
                    &format!("{name} from {host}: bad description ({bad}); retrying"),
                    Some("desc"),
                );
            }
            self.pending.insert(key, retry);
            return;
        };
        if &desc.name != name || &desc.host != host {
            self.rep.report(
                &format!(
                    "{name} from {host}: description names {}/{}",
                    desc.host, desc.name
                ),
                Some("desc"),
            );
            self.pending.insert(key, retry);
            return;
        }
        let lc = self.local(name);
        let geom = (desc.slots, desc.data_size);
        let count = self.refused.get(&key) != Some(&geom);
        let err = ensure_local(&lc, &desc, &mut self.budget, count);
        if let Some(err) = err.as_ref().filter(|e| e.starts_with(REFUSED)) {
            // Over the bounds: refused before anything was allocated.
            // Counted and reported once per geometry; retried now and then.
            if self.refused.get(&key) != Some(&geom) {
                self.refused.insert(key.clone(), geom);
                self.rep
                    .log(&format!("{name}: not imported from {host}: {err}"));
            }
            self.pending.insert(key, Instant::now() + REFUSED_RETRY);
            return;
        }
        self.refused.remove(&key);
        if let Some(err) = err {
            if self.conflicts.get(name) != Some(&err) {
                self.rep
                    .log(&format!("{name}: not imported from {host}: {err}"));
            }
            self.conflicts.insert(name.clone(), err);
            self.pending.insert(key, retry);
            return;
        }
        self.conflicts.remove(name);
        let old = self
            .streams
            .remove(&key)
            .map(|s| s.shared.clone())
            .or_else(|| self.departed.remove(&key));
        let shared = match old {
            // The remote came back: keep counting on.
            Some(old) => Arc::new(StreamShared {
                host: host.clone(),
                name: name.clone(),
                local: lc,
                state: Mutex::new(std::mem::replace(
                    &mut *lock(&old.state),
                    StreamState {
                        counters: ImportCounters::default(),
                        last_seq: 0,
                        epoch: None,
                    },
                )),
                rep: self.rep.clone(),
            }),
            None => Arc::new(StreamShared {
                host: host.clone(),
                name: name.clone(),
                local: lc,
                state: Mutex::new(StreamState {
                    counters: ImportCounters::default(),
                    last_seq: 0,
                    epoch: None,
                }),
                rep: self.rep.clone(),
            }),
        };
        match ImportStream::new(self, shared) {
            Ok(st) => {
                self.streams.insert(key.clone(), st);
                self.rep.log(&format!("importing {name} from {host}"));
            }
            Err(e) => {
                self.rep.report(
                    &format!("{name} from {host}: cannot subscribe: {e}"),
                    Some("sub"),
                );
                self.pending.insert(key, retry);
            }
        }
    }

    // ---- facts --------------------------------------------------------

    pub fn stats(&self) -> Value {
        let export: Map<String, Value> = self
            .exporters
            .iter()
            .map(|(n, ex)| (n.clone(), lock(&ex.shared.counters).as_json()))
            .collect();
        let mut import = Map::new();
        for (k, sh) in &self.departed {
            import.insert(
                format!("{}/{}", k.0, k.1),
                lock(&sh.state).counters.as_json(false),
            );
        }
        for (k, st) in &self.streams {
            import.insert(
                format!("{}/{}", k.0, k.1),
                lock(&st.shared.state).counters.as_json(true),
            );
        }
        json!({"id": self.ident, "domain": self.domain, "zid": self.zid, "id_clashes": self.clashes,
               "export": export, "import": import, "conflicts": self.conflicts,
               "refused_size": self.budget.refused, "import_bytes": self.budget.charged(),
               "data_path": "rust"})
    }

    fn write_registry(&mut self) {
        let exported: Vec<&String> = self.exporters.keys().collect();
        let mut imported: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
        for (h, n) in self.streams.keys() {
            imported.entry(n).or_default().push(h);
        }
        let state = json!([exported, imported]).to_string();
        if self.registry_state.as_ref() == Some(&state) {
            return;
        }
        let r = crate::registry::write(
            std::process::id(),
            &self.ident,
            self.domain,
            &exported,
            &imported,
        );
        if let Err(e) = r {
            self.rep.report(
                &format!("cannot write the registry for nerve top: {e}"),
                Some("registry"),
            );
        }
        self.registry_state = Some(state);
    }
}

/// Create the local channel with the remote's geometry and metadata, or
/// reuse a compatible one (same metadata, ring at least as large). Returns
/// why not.
fn ensure_local(
    lc: &LocalChannel,
    desc: &Description,
    budget: &mut ImportBudget,
    count: bool,
) -> Option<String> {
    let mut st = lock(&lc.state);
    if let Some(w) = st.writer.as_ref() {
        if st.ino.is_some() && chan_ino(&lc.name) == st.ino {
            return compatible(w, desc);
        }
        st.writer = None;
    }
    if st.charged {
        st.charged = false;
        budget.release(&lc.name);
    }
    let mut opts = Options::new().slots(desc.slots).data_size(desc.data_size);
    if let Some(t) = &desc.type_name {
        opts = opts.type_name(t);
    }
    if let Some(e) = &desc.encoding {
        opts = opts.encoding(e);
    }
    if let Some(s) = &desc.schema {
        opts = opts.schema(s);
    }
    let mut made = false;
    if chan_ino(&desc.name).is_none() {
        // Made from the peer's word: within the bounds or not at all,
        // checked before anything is allocated.
        let meta = desc.type_name.as_deref().map_or(0, str::len)
            + desc.encoding.as_deref().map_or(0, str::len)
            + desc.schema.as_deref().map_or(0, <[u8]>::len);
        if let Some(why) = budget.admit(&desc.name, desc.slots, desc.data_size, meta as u64, count)
        {
            return Some(format!("{REFUSED}{why}"));
        }
        match nerve::create(&desc.name, &opts) {
            Ok(()) => {
                made = true;
                st.charged = true;
            }
            Err(Error::Exist | Error::Mismatch) => budget.release(&desc.name), // made meanwhile
            Err(e) => {
                budget.release(&desc.name);
                return Some(format!("cannot create the local channel: {e}"));
            }
        }
    }
    // A local channel exists (or was just made): used if compatible.
    let w = match Channel::open(&desc.name, Access::Write) {
        Ok(w) => w,
        Err(e) => return Some(format!("local channel cannot be opened for writing: {e}")),
    };
    if !made {
        if let Some(why) = compatible(&w, desc) {
            return Some(why);
        }
    }
    let Ok(s) = w.stats() else {
        return Some("cannot read the local channel".into());
    };
    st.data_size = s.data_size;
    st.slots = s.slots;
    // The inode of the file the handle has open, or None if the channel was
    // replaced meanwhile (the next scan then imports it again).
    let ino = chan_ino(&lc.name);
    let same = nerve::stat_name(&lc.name)
        .map(|n| n.created_ns == s.created_ns)
        .unwrap_or(false);
    st.ino = if same && chan_ino(&lc.name) == ino {
        ino
    } else {
        None
    };
    st.writer = Some(w);
    None
}

fn compatible(w: &Channel, desc: &Description) -> Option<String> {
    let m = w.meta();
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let mine = (
        some(m.type_name),
        some(m.encoding),
        (!m.schema.is_empty()).then(|| m.schema.to_vec()),
    );
    let theirs = (
        desc.type_name.clone().filter(|s| !s.is_empty()),
        desc.encoding.clone().filter(|s| !s.is_empty()),
        desc.schema.clone().filter(|s| !s.is_empty()),
    );
    let q = |s: &Option<String>| s.as_ref().map_or("None".to_string(), |s| format!("'{s}'"));
    if mine != theirs {
        return Some(format!(
            "the local channel has other metadata (type {}, encoding {}) than the remote (type {}, encoding {})",
            q(&mine.0), q(&mine.1), q(&theirs.0), q(&theirs.1)
        ));
    }
    let size = w.stats().map(|s| s.data_size).unwrap_or(0);
    if size < desc.data_size {
        return Some(format!(
            "the local ring ({size} bytes) is smaller than the remote's ({} bytes)",
            desc.data_size
        ));
    }
    None
}
