//! Helpers of the integration tests: channels under the test prefix
//! `nt-<pid>-` (tests/shm_clean.sh finds leftovers of dead test processes),
//! removed when the guard drops, and a watchdog bounding every test.
#![allow(dead_code)]
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A channel created for one test and unlinked on drop.
pub struct TestChan {
    pub name: String,
}

impl TestChan {
    pub fn new(tag: &str, opts: &nerve::Options) -> TestChan {
        let name = format!(
            "nt-{}-rs-{}-{}",
            std::process::id(),
            tag,
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        nerve::create(&name, opts).unwrap_or_else(|e| panic!("create {name}: {e}"));
        TestChan { name }
    }

    /// A name under the test prefix that no channel has (yet).
    pub fn fresh_name(tag: &str) -> String {
        format!(
            "nt-{}-rs-{}-{}",
            std::process::id(),
            tag,
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }
}

impl Drop for TestChan {
    fn drop(&mut self) {
        let _ = nerve::unlink(&self.name);
    }
}

/// Abort the whole test process if the test has not finished within
/// `limit` (a hung wait must fail, not stall `make test`). Dropping the
/// returned guard disarms it.
pub struct Watchdog(std::sync::mpsc::Sender<()>);

pub fn watchdog(limit: Duration) -> Watchdog {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
            eprintln!("watchdog: test still running after {limit:?}; aborting");
            std::process::abort();
        }
    });
    Watchdog(tx)
}

/// The `nerve` command of the CMake build: `NERVE_CLI`, or
/// `../../build/tools/nerve` from this crate.
pub fn nerve_cli() -> Option<std::path::PathBuf> {
    let p = match std::env::var_os("NERVE_CLI") {
        Some(p) => std::path::PathBuf::from(p),
        None => {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build/tools/nerve")
        }
    };
    p.is_file().then_some(p)
}
