//! Import: one Zenoh subscriber per remote channel, and how the bridge
//! learns of remote channels, makes their local channels and reclaims them.
use super::local::{ImportCounters, LocalChannel, LocalState};
use super::{chan_ino, lock, real_offset, Bridge, Key, Reporter};
use crate::limits::ImportBudget;
use crate::wire::{self, Description};
use nerve::{Access, Channel, Error, Options, Wait};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zenoh::sample::Locality;
use zenoh::Wait as _;

/// How long an importer waits for the local writer lock.
const PUT_TIMEOUT: Duration = Duration::from_millis(50);

/// The prefix of ensure_local's answer for a description over the import
/// bounds, and how often such a channel is tried again.
const REFUSED: &str = "refused: ";
const REFUSED_RETRY: Duration = Duration::from_secs(2);

pub(super) struct StreamState {
    pub(super) counters: ImportCounters,
    last_seq: u64,
    epoch: Option<i64>,
}

/// What an import stream keeps across a departure and return of its remote.
pub struct StreamShared {
    host: String,
    name: String,
    pub(super) local: Arc<LocalChannel>,
    pub(super) state: Mutex<StreamState>,
    rep: Arc<Reporter>,
}

pub(super) struct ImportStream {
    pub(super) shared: Arc<StreamShared>,
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
            // One lock for the whole sample (the writer and its sizes).
            let mut lc = lock(&self.local.state);
            let size = lc.data_size;
            let exported = self.local.exported;
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
                // In flight for the exporter's guard from before the put.
                let own = exported.then(|| self.local.own.begin());
                // Zenoh's receive buffer straight into a reservation.
                let put = w
                    .loan_with(n as usize, Wait::For(PUT_TIMEOUT))
                    .and_then(|mut loan| {
                        loan.copy_from_slice(&data[start..end]);
                        loan.commit_at(n as usize, t_mono)
                    });
                match put {
                    Ok(info) => {
                        if let Some(own) = own {
                            own.commit(info.seq);
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

impl Bridge {
    pub(super) fn remote_event(&mut self, up: bool, host: String, name: String) {
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
    pub(super) fn reclaim(&mut self, key: Key) {
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
    pub(super) fn attach(&mut self, key: Key) {
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
    adopt(lc, &mut st, w)
}

/// Make `w` the writer of `lc` (the caller holds its state lock): its
/// sizes, its file's inode, and a reset own-sequence guard if it is
/// another channel than the one the guard holds numbers of.
fn adopt(lc: &LocalChannel, st: &mut LocalState, w: Channel) -> Option<String> {
    let Ok(s) = w.stats() else {
        return Some("cannot read the local channel".into());
    };
    st.data_size = s.data_size;
    st.slots = s.slots;
    if st.own_created_ns != s.created_ns {
        // Another channel under the name: its numbers start again.
        lc.own.reset();
        st.own_created_ns = s.created_ns;
    }
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
