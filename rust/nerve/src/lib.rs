//! nerve: real-time inter-process communication through named channels in
//! POSIX shared memory, from Rust.
//!
//! A channel is a ring of messages in one file in `/dev/shm`. Any number of
//! writers append messages (a put never waits for a reader: when the ring is
//! full the oldest messages are overwritten); any number of readers each keep
//! their own cursor and read without taking a lock, then check that no writer
//! overwrote what they read. This crate is a thin, safe layer over the C
//! library (`include/nerve/chan.h` is the contract; `nerve-sys` declares it):
//!
//! - [`create`], [`Channel::open`], [`unlink`]: channels with [`Options`]
//!   (geometry, permission bits, metadata: type, encoding, schema);
//! - [`Channel::put`], [`Channel::put_pod`] (any [`bytemuck::Pod`] type),
//!   [`Channel::loan`]: a [`Loan`] of ring space filled in place, published by
//!   [`Loan::commit`] and aborted when dropped;
//! - [`Channel::get`], [`Channel::get_pod`], [`Channel::get_vec`]: the next
//!   unseen, the newest, a given sequence number or the message at a time
//!   ([`Which`]), with the number missed in [`GetInfo`], polling or waiting
//!   ([`Wait`]);
//! - [`Channel::view`]: a zero-copy [`View`] whose borrow of the channel keeps
//!   it open, and whose [`View::check`] reports an overwrite as
//!   [`Error::Stale`];
//! - [`Canceller`]: ends a blocked wait from another thread; [`wait_any`]
//!   waits on up to 64 channels at once;
//! - [`bridge`]: what every bridge engine shares (names between channels and
//!   ROS topics, globs, the channel directory's changes, the import budget).
//!
//! ```no_run
//! use nerve::{Channel, Options, Access, Which, Wait};
//! use std::time::Duration;
//!
//! nerve::create("imu", &Options::new().slots(256).type_name("demo/Imu"))?;
//! let mut w = Channel::open("imu", Access::Write)?;
//! let mut r = Channel::open("imu", Access::Read)?;
//! w.put(b"hello")?;
//! let mut buf = [0u8; 64];
//! let info = r.get(Which::Next, &mut buf, Wait::For(Duration::from_millis(10)))?;
//! assert_eq!(&buf[..info.len], b"hello");
//! nerve::unlink("imu")?;
//! # Ok::<(), nerve::Error>(())
//! ```
//!
//! Threads: a [`Channel`] is `Send` and `Sync`. The calls the C contract
//! allows one caller per handle at a time (put, get, view, loan, seek, wait)
//! take `&mut self`; those it allows from any thread (name, metadata, stats)
//! take `&self`. A [`Loan`] holds the channel's writer lock, which belongs to
//! the thread that took it, so a `Loan` is neither `Send` nor `Sync`.
#![warn(missing_docs)]

pub mod bridge;
mod chan;
mod error;
mod loan;
mod view;

pub use bytemuck::{self, Pod};
pub use chan::{
    wait_any, Access, Canceller, Channel, GetInfo, Meta, Options, PutInfo, Ready, Stats, Wait,
    Which,
};
pub use error::{Error, Result};
pub use loan::Loan;
pub use view::{Bytes, View};

use core::ffi::{c_char, c_int, c_void, CStr};
use nerve_sys as sys;
use std::ffi::CString;

/// Longest channel name, in bytes (`NERVE_NAME_MAX`).
pub const NAME_MAX: usize = sys::NERVE_NAME_MAX;
/// Most channels one [`wait_any`] call waits on (`NERVE_WAIT_MAX`).
pub const WAIT_MAX: usize = sys::NERVE_WAIT_MAX;
/// The channel file layout version this crate's library writes.
pub const LAYOUT_VERSION: u32 = sys::NERVE_LAYOUT_VERSION;

pub(crate) fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::Inval)
}

/// Create channel `name` with `opts`. The file appears fully initialised or
/// not at all. Errors: [`Error::Inval`] (bad name, options or metadata),
/// [`Error::NameTooLong`], [`Error::Exist`] (the name is taken, and
/// [`Options::exist_ok`] not set), [`Error::Mismatch`] (exists with other
/// geometry or metadata), [`Error::NotChan`], [`Error::Access`],
/// [`Error::NoSpace`], [`Error::NoMem`], [`Error::MFile`], [`Error::NFile`].
/// Not real-time safe (allocates, system calls).
pub fn create(name: &str, opts: &Options) -> Result<()> {
    let cname = cstring(name)?;
    opts.with_raw(|raw| {
        // SAFETY: name is NUL-terminated; raw and the strings it points to
        // live until with_raw returns (Thread: any).
        error::check(unsafe { sys::nerve_chan_create(cname.as_ptr(), raw) })
    })
    .map_err(|e| e.on(name))
}

/// Remove channel `name` (its file, then its bell). Open handles keep
/// working until closed. Errors: [`Error::NoEnt`], [`Error::Inval`],
/// [`Error::NameTooLong`], [`Error::Access`], [`Error::NotChan`].
pub fn unlink(name: &str) -> Result<()> {
    let cname = cstring(name)?;
    // SAFETY: NUL-terminated name (Thread: any).
    error::check(unsafe { sys::nerve_chan_unlink(cname.as_ptr()) }).map_err(|e| e.on(name))
}

/// Change the permission bits of channel `name` (and its bell) to `mode`
/// (at most `0o777`). Errors: [`Error::NoEnt`], [`Error::Inval`],
/// [`Error::Access`] (not the owner), [`Error::NotChan`].
pub fn chmod(name: &str, mode: u32) -> Result<()> {
    let cname = cstring(name)?;
    // SAFETY: NUL-terminated name (Thread: any).
    error::check(unsafe { sys::nerve_chan_chmod(cname.as_ptr(), mode) }).map_err(|e| e.on(name))
}

/// Whether `name` is a valid channel name: `Ok`, [`Error::Inval`] or
/// [`Error::NameTooLong`]. Names use `[A-Za-z0-9_.-]` and do not start
/// with `.`.
pub fn name_check(name: &str) -> Result<()> {
    let name = cstring(name)?;
    // SAFETY: NUL-terminated name (Thread: any, RT safe).
    error::check(unsafe { sys::nerve_chan_name_check(name.as_ptr()) })
}

/// The file of channel `name` (`/dev/shm/nerve.NAME`), from the library
/// (`nerve_chan_path`): the one place the location is spelled. Nothing is
/// opened. [`Error::Inval`] or [`Error::NameTooLong`] for a bad name.
pub fn path(name: &str) -> Result<String> {
    let name = cstring(name)?;
    let mut buf = vec![0u8; sys::NERVE_PATH_MAX];
    // SAFETY: NUL-terminated name, buf of buf.len() bytes (Thread: any).
    error::check(unsafe {
        sys::nerve_chan_path(name.as_ptr(), 0, buf.as_mut_ptr().cast(), buf.len())
    })?;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    buf.truncate(end);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The bytes of the file [`create`] would make with `opts`: header,
/// metadata, index and data ring, each rounded up to the host's page size
/// (`nerve_chan_file_size`), which is what the channel commits in
/// /dev/shm. [`Error::Inval`] for options `create` refuses.
pub fn file_size(opts: &Options) -> Result<u64> {
    let mut out = 0u64;
    opts.with_raw(|raw| {
        // SAFETY: raw and its strings live until with_raw returns; out is a
        // valid u64 (Thread: any).
        error::check(unsafe { sys::nerve_chan_file_size(raw, &mut out) })
    })?;
    Ok(out)
}

/// A byte count in nerve's one size grammar (`nerve_size_parse`, the
/// grammar of every nerve tool): digits, an optional K, M, G or T (powers
/// of 1024), an optional `i` after it and an optional `B`, letters in
/// either case (`"64K"`, `"8MiB"`, `"1gb"`). No blanks, sign or fraction.
/// [`Error::Inval`] otherwise, with [`Error::detail`] saying why.
pub fn parse_size(text: &str) -> Result<u64> {
    let ctext = cstring(text)?;
    let mut out = 0u64;
    // SAFETY: NUL-terminated text, out a valid u64 (Thread: any, RT safe).
    error::check(unsafe { sys::nerve_size_parse(ctext.as_ptr(), &mut out) })?;
    Ok(out)
}

/// Facts of channel `name` (opened read-only, mapped header and index only,
/// closed). Errors as [`Channel::open`].
pub fn stat_name(name: &str) -> Result<Stats> {
    let cname = cstring(name)?;
    let mut st = sys::nerve_stats::default();
    // SAFETY: NUL-terminated name, st a valid out-struct (Thread: any).
    error::check(unsafe { sys::nerve_chan_stat_name(cname.as_ptr(), &mut st) })
        .map_err(|e| e.on(name))?;
    Ok(Stats::from(st))
}

fn msg_call(f: impl FnOnce(*mut c_char, usize) -> c_int) -> (c_int, String) {
    let mut msg = vec![0u8; 1024];
    let rc = f(msg.as_mut_ptr().cast(), msg.len());
    let text = CStr::from_bytes_until_nul(&msg)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    (rc, text)
}

/// Verify every invariant of channel `name` that can be checked without the
/// writer lock. Returns the C library's explanation (`"ok; writer lock:
/// ..."`) with `Ok`, or with the error ([`Error::Corrupt`], or an open
/// error) and the explanation naming the field and why.
pub fn check(name: &str) -> (Result<()>, String) {
    let Ok(cname) = cstring(name) else {
        return (Err(Error::Inval), String::new());
    };
    let (rc, text) = msg_call(|m, l| {
        // SAFETY: NUL-terminated name, m[0..l) writable (Thread: any).
        unsafe { sys::nerve_chan_check(cname.as_ptr(), m, l) }
    });
    (error::check(rc), text)
}

/// Reset the writer lock of channel `name` when the thread it names cannot
/// be alive (with `force`: whatever it names; only when no writer is inside
/// a put). Returns whether it reset the lock, or [`Error::Busy`] (the owner
/// is alive) or an open error, with the C library's account of what it
/// found and did.
pub fn repair(name: &str, force: bool) -> (Result<bool>, String) {
    let Ok(cname) = cstring(name) else {
        return (Err(Error::Inval), String::new());
    };
    let flags = if force { sys::NERVE_REPAIR_FORCE } else { 0 };
    let (rc, text) = msg_call(|m, l| {
        // SAFETY: NUL-terminated name, m[0..l) writable (Thread: any).
        unsafe { sys::nerve_chan_repair(cname.as_ptr(), flags, m, l) }
    });
    (error::check(rc).map(|()| rc == 1), text)
}

/// The names in `/dev/shm` that a channel could have, without opening
/// anything (an entry that is not a channel is listed too; opening it gives
/// its error), in no particular order.
pub fn list() -> Result<Vec<String>> {
    unsafe extern "C" fn push(name: *const c_char, arg: *mut c_void) -> c_int {
        // SAFETY: arg is the &mut Vec<String> passed below, and name a
        // NUL-terminated string valid during the call.
        let names = unsafe { &mut *arg.cast::<Vec<String>>() };
        names.push(
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned(),
        );
        0
    }
    let mut names: Vec<String> = Vec::new();
    // SAFETY: push matches nerve_list_fn and is called only during this
    // call, with the pointer to `names` we pass (Thread: any).
    error::check(unsafe {
        sys::nerve_chan_list(Some(push), (&mut names as *mut Vec<String>).cast())
    })?;
    Ok(names)
}

/// The version of the C library this program runs with: its number
/// (major * 10000 + minor * 100 + patch) and its `"MAJOR.MINOR.PATCH"` text.
pub fn version() -> (u32, &'static str) {
    let mut text: *const c_char = core::ptr::null();
    // SAFETY: nerve_version stores a static string in *text (Thread: any).
    let n = unsafe { sys::nerve_version(&mut text) };
    // SAFETY: text is a static NUL-terminated ASCII string.
    let s = unsafe { CStr::from_ptr(text) }.to_str().unwrap_or("");
    (n as u32, s)
}

/// Clocks: every time nerve stores or takes is `CLOCK_MONOTONIC`
/// nanoseconds in an `i64`, the same clock in every process of the host.
pub mod clock {
    use nerve_sys as sys;

    /// `CLOCK_MONOTONIC` now, in nanoseconds (the clock of message times
    /// and of [`crate::Wait::Until`]). Real-time safe (vDSO).
    pub fn now_ns() -> i64 {
        // SAFETY: no arguments (Thread: any, RT and signal safe).
        unsafe { sys::nerve_clock_now_ns() }
    }

    /// A `CLOCK_MONOTONIC` time as `CLOCK_REALTIME` nanoseconds, by the
    /// clocks' current offset (for display).
    pub fn to_realtime_ns(mono_ns: i64) -> i64 {
        // SAFETY: no pointers (Thread: any).
        unsafe { sys::nerve_clock_to_realtime_ns(mono_ns) }
    }
}
