//! The bridge kernel (`include/nerve/bridge.h`; the contract is
//! `docs/bridge-kernel.md`): names between channels and ROS topics, globs,
//! the channel directory and its changes, the import budget and the
//! own-sequence guard, from the C library, so the Rust bridge follows the
//! rules of every other engine.
use crate::{cstring, error, Options, Result};
use core::ffi::{c_char, CStr};
use nerve_sys as sys;
use std::os::fd::{AsRawFd, RawFd};

fn name_call(
    input: &str,
    domain: u32,
    f: unsafe extern "C" fn(*const c_char, u32, *mut c_char, usize) -> i32,
) -> Result<String> {
    let c = cstring(input)?;
    let mut out = [0 as c_char; sys::NERVE_TOPIC_MAX + 1];
    // SAFETY: NUL-terminated input, out[0..len) writable (Thread: any).
    error::check(unsafe { f(c.as_ptr(), domain, out.as_mut_ptr(), out.len()) })?;
    // SAFETY: on success the library wrote a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(out.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// The ROS topic of channel `name`: `robot.imu-raw` -> `/robot/imu_raw`;
/// with `domain` > 0 a leading `ros2-dDOMAIN.` (rmw_nerve's channels of
/// that domain) is dropped first. [`crate::Error::Inval`] for a name that is not
/// a channel name, [`crate::Error::NameTooLong`].
pub fn topic_of_channel(name: &str, domain: u32) -> Result<String> {
    name_call(name, domain, sys::nerve_topic_of_channel)
}

/// The channel of ROS topic `topic`: `/robot/imu` -> `robot.imu`
/// (`ros2-dDOMAIN.robot.imu` with `domain` > 0). [`crate::Error::Inval`] when the
/// result is not a channel name, [`crate::Error::NameTooLong`].
pub fn channel_of_topic(topic: &str, domain: u32) -> Result<String> {
    name_call(topic, domain, sys::nerve_channel_of_topic)
}

/// `Ok` if `glob` is a glob of channel names (name characters and `*`,
/// `?`, `[set]`, `[!set]`), else [`crate::Error::Inval`] / [`crate::Error::NameTooLong`]
/// with [`crate::Error::detail`] saying why.
pub fn glob_check(glob: &str) -> Result<()> {
    let g = cstring(glob)?;
    // SAFETY: NUL-terminated glob (Thread: any).
    error::check(unsafe { sys::nerve_glob_check(g.as_ptr()) })
}

/// Whether channel `name` matches `glob` (checked as [`glob_check`]).
pub fn glob_match(glob: &str, name: &str) -> Result<bool> {
    let (g, n) = (cstring(glob)?, cstring(name)?);
    // SAFETY: NUL-terminated strings (Thread: any).
    let rc = unsafe { sys::nerve_glob_match(g.as_ptr(), n.as_ptr()) };
    error::check(rc)?;
    Ok(rc == 1)
}

/// One change of the channel directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirEvent {
    /// The channel appeared (or was there when the watch began).
    Created(String),
    /// It went (or its file was replaced: then `Created` follows).
    Removed(String),
}

/// The channels of `/dev/shm` matching some globs, and their changes
/// (`nerve_dir`): inotify, or a scan every 500 ms where inotify is
/// unavailable. Poll [`ChannelDir::as_raw_fd`] for reading, then take
/// [`ChannelDir::next`] until `None`.
pub struct ChannelDir {
    d: *mut sys::nerve_dir,
}

// SAFETY: the watcher is plain memory and a descriptor, used by one thread
// at a time (`&mut self`); it may move between threads.
unsafe impl Send for ChannelDir {}

impl ChannelDir {
    /// Watch for channels matching one of `globs` (all channels if empty);
    /// `scan` asks for the periodic scan instead of inotify.
    /// [`crate::Error::Inval`] for a bad glob (the detail names it).
    pub fn open(globs: &[&str], scan: bool) -> Result<ChannelDir> {
        let owned = globs
            .iter()
            .map(|g| cstring(g))
            .collect::<Result<Vec<_>>>()?;
        let ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        let mut d = core::ptr::null_mut();
        let flags = if scan { sys::NERVE_DIR_SCAN } else { 0 };
        // SAFETY: ptrs[0..n) point at NUL-terminated strings alive for the
        // call; d is a valid out-pointer.
        error::check(unsafe { sys::nerve_dir_open(ptrs.as_ptr(), ptrs.len(), flags, &mut d) })?;
        Ok(ChannelDir { d })
    }

    /// Whether inotify wakes the watcher (else the periodic scan).
    pub fn inotify(&self) -> bool {
        // SAFETY: d is open until drop.
        unsafe { sys::nerve_dir_inotify(self.d) == 1 }
    }

    /// The next change, without waiting, or `None`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<DirEvent>> {
        // SAFETY: all-zero bytes are a valid nerve_dir_event.
        let mut ev: sys::nerve_dir_event = unsafe { core::mem::zeroed() };
        // SAFETY: d is open; one caller at a time (&mut self).
        let rc = unsafe { sys::nerve_dir_next(self.d, &mut ev) };
        if rc == sys::NERVE_EAGAIN {
            return Ok(None);
        }
        error::check(rc)?;
        // SAFETY: the library wrote a NUL-terminated name.
        let name = unsafe { CStr::from_ptr(ev.name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Ok(Some(if ev.kind == sys::NERVE_DIR_CREATED {
            DirEvent::Created(name)
        } else {
            DirEvent::Removed(name)
        }))
    }
}

impl AsRawFd for ChannelDir {
    fn as_raw_fd(&self) -> RawFd {
        // SAFETY: d is open until drop.
        unsafe { sys::nerve_dir_fd(self.d) }
    }
}

impl Drop for ChannelDir {
    fn drop(&mut self) {
        // SAFETY: d came from nerve_dir_open and is closed once.
        unsafe { sys::nerve_dir_close(self.d) };
    }
}

/// A budget's bounds and counters (`struct nerve_budget_stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetStats {
    /// The per-channel bound (`--max-channel-size`).
    pub max_channel: u64,
    /// The bound on all files together (`--max-import-total`).
    pub max_total: u64,
    /// File bytes charged now.
    pub used: u64,
    /// Channels charged now.
    pub channels: u64,
    /// Admissions refused (counted ones).
    pub refused: u64,
}

/// The import budget (`nerve_budget`): neither the data ring nor the index
/// of one channel over `max_channel`, and the files of all channels
/// admitted ([`crate::file_size`]) together not over `max_total`. Locks
/// inside: `Send` and `Sync`.
pub struct Budget {
    b: *mut sys::nerve_budget,
}

// SAFETY: every nerve_budget call takes the budget's own lock.
unsafe impl Send for Budget {}
// SAFETY: as above.
unsafe impl Sync for Budget {}

impl Budget {
    /// A budget; [`crate::Error::Inval`] for a bound of 0.
    pub fn new(max_channel: u64, max_total: u64) -> Result<Budget> {
        let mut b = core::ptr::null_mut();
        // SAFETY: b is a valid out-pointer.
        error::check(unsafe { sys::nerve_budget_open(max_channel, max_total, &mut b) })?;
        Ok(Budget { b })
    }

    /// Charge channel `name` of geometry and metadata `opts` (slots and
    /// data size set) before creating it; again: its charge is replaced.
    /// The file's bytes, or [`crate::Error::MsgSize`] (over `max_channel`),
    /// [`crate::Error::NoSpace`] (over `max_total`) — counted unless `!count` —
    /// with [`crate::Error::detail`] the one-line reason, or [`crate::Error::Inval`].
    pub fn admit(&self, name: &str, opts: &Options, count: bool) -> Result<u64> {
        let cname = cstring(name)?;
        let flags = if count {
            0
        } else {
            sys::NERVE_BUDGET_UNCOUNTED
        };
        let mut need = 0u64;
        opts.with_raw(|raw| {
            // SAFETY: raw and its strings live until with_raw returns; the
            // budget locks inside.
            error::check(unsafe {
                sys::nerve_budget_admit(self.b, cname.as_ptr(), raw, flags, &mut need)
            })
        })?;
        Ok(need)
    }

    /// Take back `name`'s charge; false if it had none.
    pub fn release(&self, name: &str) -> bool {
        let Ok(cname) = cstring(name) else {
            return false;
        };
        // SAFETY: NUL-terminated name; the budget locks inside.
        unsafe { sys::nerve_budget_release(self.b, cname.as_ptr()) == 0 }
    }

    /// The bounds and counters.
    pub fn stats(&self) -> BudgetStats {
        let mut st = sys::nerve_budget_stats::default();
        // SAFETY: st is a valid out-struct; b is open.
        let rc = unsafe { sys::nerve_budget_stat(self.b, &mut st) };
        debug_assert_eq!(rc, 0);
        BudgetStats {
            max_channel: st.max_channel,
            max_total: st.max_total,
            used: st.used,
            channels: st.channels,
            refused: st.refused,
        }
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        // SAFETY: b came from nerve_budget_open and is closed once.
        unsafe { sys::nerve_budget_close(self.b) };
    }
}

/// An own-sequence guard's counters (`struct nerve_own_stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnStats {
    /// Puts committed through the guard.
    pub committed: u64,
    /// Checks that waited for a put in flight.
    pub waited: u64,
    /// Checks answered at the bound (an echo is possible).
    pub late: u64,
}

/// The own-sequence guard of one channel (`nerve_own`): a bridge never
/// exports a message it imported itself, and never drops one another
/// writer put. The importer takes an [`OwnPut`] ([`OwnGuard::begin`])
/// before each put and commits it with the number the put got; the
/// exporter asks [`OwnGuard::is_own`] about every message it views. A
/// channel made again under the same name needs [`OwnGuard::reset`]. Lock-free
/// but for a lock inside a waiting check: `Send` and `Sync`.
pub struct OwnGuard {
    o: *mut sys::nerve_own,
}

// SAFETY: every nerve_own call but close is thread-safe (atomics, and a
// lock inside a waiting check); close runs only in Drop.
unsafe impl Send for OwnGuard {}
// SAFETY: as above.
unsafe impl Sync for OwnGuard {}

/// One put of the importer, in flight from [`OwnGuard::begin`] until
/// [`OwnPut::commit`]; dropped uncommitted (the put failed), it ends
/// without a record.
pub struct OwnPut<'a> {
    g: &'a OwnGuard,
    token: u32,
}

impl OwnGuard {
    /// A guard with nothing recorded; [`crate::Error::NoMem`] when out of
    /// memory.
    pub fn new() -> Result<OwnGuard> {
        let mut o = core::ptr::null_mut();
        // SAFETY: o is a valid out-pointer.
        error::check(unsafe { sys::nerve_own_open(&mut o) })?;
        Ok(OwnGuard { o })
    }

    /// Mark a put of this process in flight; call before the put starts.
    pub fn begin(&self) -> OwnPut<'_> {
        let mut token = 0u32;
        // SAFETY: o is open, token a valid out-pointer; only NULLs fail.
        let rc = unsafe { sys::nerve_own_begin(self.o, &mut token) };
        debug_assert_eq!(rc, 0);
        OwnPut { g: self, token }
    }

    /// Whether message `seq` of the channel was put through this guard.
    /// Waits (at most 100 ms, `NERVE_OWN_WAIT_NS`) while a put of this
    /// process is between its commit and [`OwnPut::commit`]; at the bound
    /// it answers false and counts [`OwnStats::late`].
    pub fn is_own(&self, seq: u64) -> bool {
        // SAFETY: o is open; nerve_own_check is thread-safe.
        unsafe { sys::nerve_own_check(self.o, seq) == 1 }
    }

    /// Forget every number recorded: the channel was made again under
    /// the same name (its numbers start again).
    pub fn reset(&self) {
        // SAFETY: o is open; nerve_own_reset is thread-safe.
        let rc = unsafe { sys::nerve_own_reset(self.o) };
        debug_assert_eq!(rc, 0);
    }

    /// The counters.
    pub fn stats(&self) -> OwnStats {
        let mut st = sys::nerve_own_stats::default();
        // SAFETY: st is a valid out-struct; o is open.
        let rc = unsafe { sys::nerve_own_stat(self.o, &mut st) };
        debug_assert_eq!(rc, 0);
        OwnStats {
            committed: st.committed,
            waited: st.waited,
            late: st.late,
        }
    }
}

impl OwnPut<'_> {
    /// The put committed sequence number `seq`: record it, end the put.
    pub fn commit(self, seq: u64) {
        let me = core::mem::ManuallyDrop::new(self);
        // SAFETY: the token came from nerve_own_begin on this open guard
        // and is ended once (Drop does not run).
        let rc = unsafe { sys::nerve_own_commit(me.g.o, me.token, seq) };
        debug_assert_eq!(rc, 0);
    }
}

impl Drop for OwnPut<'_> {
    fn drop(&mut self) {
        // SAFETY: as in commit; this put committed nothing.
        let rc = unsafe { sys::nerve_own_abort(self.g.o, self.token) };
        debug_assert_eq!(rc, 0);
    }
}

impl Drop for OwnGuard {
    fn drop(&mut self) {
        // SAFETY: o came from nerve_own_open and is closed once; an OwnPut
        // borrows the guard, so none is in flight.
        unsafe { sys::nerve_own_close(self.o) };
    }
}
