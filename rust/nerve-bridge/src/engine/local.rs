//! What the exporter and the importers of one local channel share, and
//! the counters of both.
use nerve::bridge::OwnGuard;
use nerve::Channel;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

/// Samples whose ages the counters summarise.
const AGES_KEPT: usize = 1024;

#[derive(Default)]
pub(super) struct Ages(VecDeque<i64>);

impl Ages {
    pub(super) fn add(&mut self, ns: i64) {
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
pub(super) struct ExportCounters {
    pub(super) forwarded: u64,
    pub(super) samples: u64,
    pub(super) bytes: u64,
    pub(super) dropped_congestion: u64,
    pub(super) dropped_error: u64,
    pub(super) looped: u64,
    pub(super) send_age: Ages,
}

impl ExportCounters {
    pub(super) fn as_json(&self) -> Value {
        json!({"forwarded": self.forwarded, "samples": self.samples, "bytes": self.bytes,
               "dropped_congestion": self.dropped_congestion, "dropped_error": self.dropped_error,
               "looped": self.looped, "send_age_us": self.send_age.summary()})
    }
}

#[derive(Default)]
pub(super) struct ImportCounters {
    pub(super) forwarded: u64,
    pub(super) bytes: u64,
    pub(super) gaps: u64,
    pub(super) dropped_size: u64,
    pub(super) dropped_error: u64,
    pub(super) duplicates: u64,
    pub(super) clamped: u64,
    pub(super) put_age: Ages,
}

impl ImportCounters {
    pub(super) fn as_json(&self, connected: bool) -> Value {
        json!({"forwarded": self.forwarded, "bytes": self.bytes, "gaps": self.gaps,
               "dropped_size": self.dropped_size, "dropped_error": self.dropped_error,
               "duplicates": self.duplicates, "clamped": self.clamped,
               "put_age_us": self.put_age.summary(), "connected": connected})
    }
}

/// The local writer side of one channel name.
pub(super) struct LocalState {
    pub(super) writer: Option<Channel>,
    /// The creation time of the channel `own` holds numbers of (0: none).
    pub(super) own_created_ns: i64,
    pub(super) ino: Option<u64>,
    pub(super) data_size: u64,
    pub(super) slots: u64,
    /// Whether the bridge created the channel from a peer's description
    /// (then its file is charged to the import budget until it is gone).
    pub(super) charged: bool,
}

/// The bridge's shared state for one local channel name.
pub struct LocalChannel {
    pub(super) name: String,
    pub(super) state: Mutex<LocalState>,
    /// The sequence numbers the bridge itself put (the bridge kernel's
    /// guard): the importer brackets each put, the exporter asks it, no
    /// lock shared between them.
    pub(super) own: OwnGuard,
    /// Set (for good) before the first import into this channel: only then
    /// can an exported message be one of the bridge's own.
    pub(super) imported: AtomicBool,
    /// Whether this bridge exports the channel: only then does the
    /// importer remember the sequence numbers it put.
    pub(super) exported: bool,
}

impl LocalChannel {
    pub(super) fn is_own(&self, seq: u64) -> bool {
        self.own.is_own(seq)
    }
}
