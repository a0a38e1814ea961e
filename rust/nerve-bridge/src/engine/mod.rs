//! The export/import machinery (docs/bridge.md), in Rust on the `zenoh`
//! crate and the `nerve` crate:
//!
//! - `LocalChannel` (local.rs): what the exporter and the importers of one
//!   local channel share: the sequence numbers the bridge itself put (never
//!   exported again: no loops) in the bridge kernel's guard (`OwnGuard`,
//!   docs/bridge-kernel.md §3), which the importer brackets each put with and
//!   the exporter asks, so it can never miss one.
//! - `Exporter` (export.rs): one thread per exported channel. Sleeps in nerve's
//!   blocking wait, then takes every message already waiting through zero-copy
//!   views (one wake-up drains a burst into batches), copies each once,
//!   validated, into the buffer Zenoh sends from, and publishes with congestion
//!   control DROP; announces the channel with a liveliness token and a
//!   queryable answering its description.
//! - `ImportStream` (import.rs): one Zenoh subscriber per (origin host,
//!   channel): checks the header, counts gaps, and writes each message from
//!   Zenoh's receive buffer straight into a reservation of the local channel,
//!   committed with its origin time translated to this host's CLOCK_MONOTONIC.
//! - `Bridge` (here): the globs, the periodic scan of local channels (one
//!   directory listing and one stat(2) per channel every 0.5 s), the liveliness
//!   events of remote channels, counters and the registry file for `nerve top`.
mod export;
mod import;
mod local;

use crate::limits::ImportBudget;
use crate::wire;
use export::Exporter;
use import::{ImportStream, StreamShared};
use local::{LocalChannel, LocalState};
use nerve::bridge::OwnGuard;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use zenoh::qos::Priority;
use zenoh::sample::SampleKind;
use zenoh::{Session, Wait as _};

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
/// Both globs are checked by the bridge kernel (`nerve_glob_check`): bridge
/// ids are written in the characters of channel names (`wire::valid_host`).
pub fn split_import(glob: &str) -> Result<(Option<String>, String), String> {
    let (o, n) = match glob.split_once('/') {
        None => (None, glob.to_string()),
        Some((o, n)) if !o.is_empty() && !n.is_empty() && !n.contains('/') => {
            (Some(o.to_string()), n.to_string())
        }
        _ => {
            return Err(format!(
                "bad --import '{glob}': NAMEGLOB or ORIGINGLOB/NAMEGLOB"
            ))
        }
    };
    if let Some(o) = &o {
        check_glob("--import", o)?;
    }
    check_glob("--import", &n)?;
    Ok((o, n))
}

/// A channel glob the bridge kernel accepts (`nerve_glob_check`): one that
/// could never match a channel name is an error, not a silent no-op.
pub fn check_glob(flag: &str, glob: &str) -> Result<(), String> {
    nerve::bridge::glob_check(glob).map_err(|e| format!("bad {flag} '{glob}': {}", e.detail()))
}

type Key = (String, String);

/// What the Zenoh callbacks tell the bridge's main thread.
enum Event {
    /// A remote channel's liveliness token came (true) or went.
    Live(bool, String, String),
    /// Another bridge with this bridge's id (its Zenoh id) came or went.
    Clash(bool, String),
    /// A local channel matching an --export glob appeared or went (the
    /// bridge kernel's channel directory, watched by its own thread).
    Local(nerve::bridge::DirEvent),
    /// The channel directory cannot be read.
    LocalError(String),
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
    /// Local channels whose export failed: tried again at every scan.
    unexported: std::collections::BTreeSet<String>,
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
            unexported: Default::default(),
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
        self.exports_g
            .iter()
            .any(|g| nerve::bridge::glob_match(g, name) == Ok(true))
    }
    /// Whether channel `name` exported by the bridge `host` is imported: a
    /// glob `NAMEGLOB` takes it from any origin, `ORIGINGLOB/NAMEGLOB` only
    /// from bridges whose id matches.
    fn imports(&self, host: &str, name: &str) -> bool {
        self.imports_g.iter().any(|(o, g)| {
            o.as_deref()
                .is_none_or(|o| nerve::bridge::glob_match(o, host) == Ok(true))
                && nerve::bridge::glob_match(g, name) == Ok(true)
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
                writer: None,
                own_created_ns: 0,
                ino: None,
                data_size: 0,
                slots: 0,
                charged: false,
            }),
            // Rust aborts when out of memory anyway (as any allocation).
            own: OwnGuard::new().expect("out of memory"),
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
        if !self.exports_g.is_empty() {
            self.watch_local()?;
        }
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
                Ok(Event::Local(ev)) => self.local_event(ev),
                Ok(Event::LocalError(e)) => self
                    .rep
                    .report(&format!("cannot list /dev/shm: {e}"), Some("list")),
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

    // ---- facts --------------------------------------------------------

    pub fn stats(&self) -> Value {
        let export: Map<String, Value> = self
            .exporters
            .iter()
            .map(|(n, ex)| {
                let mut v = lock(&ex.shared.counters).as_json();
                // Own-import checks answered at the guard's bound (an
                // import stalled: an echo is possible).
                let late = self.locals.get(n).map_or(0, |l| l.own.stats().late);
                v["own_late"] = late.into();
                (n.clone(), v)
            })
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
               "refused_size": self.budget.refused(), "import_bytes": self.budget.charged(),
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

#[cfg(test)]
mod tests {
    use super::split_import;

    #[test]
    fn import_globs_split_and_checked_by_the_kernel() {
        assert_eq!(split_import("cam*").unwrap(), (None, "cam*".to_string()));
        let (o, n) = split_import("robot[0-9]/cam*").unwrap();
        assert_eq!((o.as_deref(), n.as_str()), (Some("robot[0-9]"), "cam*"));
        let m = |g: &str, s: &str| nerve::bridge::glob_match(g, s) == Ok(true);
        assert!(m("robot[0-9]", "robot3") && !m("robot[0-9]", "robotx"));
        assert!(m("robot-*", "robot-3fa9c2d1") && !m("robot-*", "arm-1"));
        for bad in [
            "rob ot/cam*",
            "robot[/cam*",
            "/cam*",
            "robot/",
            "a/b/c",
            "robot/ca m",
        ] {
            assert!(split_import(bad).is_err(), "{bad}");
        }
    }
}
