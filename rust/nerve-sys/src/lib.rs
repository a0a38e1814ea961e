//! Raw declarations of the nerve C API: `include/nerve/chan.h`, `errors.h`,
//! `clock.h` and `version.h` of the nerve repository, by hand, one for one.
//!
//! This crate only declares; the safe API is the `nerve` crate. Every item
//! keeps its C name, and the contract of each function (what it returns,
//! which thread may call it, whether it blocks, whether it is real-time and
//! signal safe) is the comment beside its declaration in the C header,
//! which stays the reference.
//!
//! The declarations are checked against the headers by this crate's test
//! `tests/abi.rs` (run by `make test-rust`): it compiles a C program that
//! includes `<nerve/nerve.h>` and asserts the size and every field offset of
//! each struct below, every constant, and every function's signature (each
//! `extern` declaration of this file is rewritten into a C prototype, which
//! the C compiler rejects when it conflicts with the header's), and it
//! fails when the listed headers declare a function that is missing here.
//!
//! `include/nerve/rt.h` (memory locking, scheduling, periodic tasks) is not
//! declared by this crate.
#![no_std]
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_uint, c_void};

// ---- chan.h: constants -------------------------------------------------

/// `NERVE_LAYOUT_VERSION`: the version of the bytes in a channel file.
pub const NERVE_LAYOUT_VERSION: u32 = 2;
/// `NERVE_NAME_MAX`: longest channel name, in bytes.
pub const NERVE_NAME_MAX: usize = 200;
/// `NERVE_PATH_MAX`: a buffer this large holds every `nerve_chan_path`.
pub const NERVE_PATH_MAX: usize = 64 + NERVE_NAME_MAX;
/// `NERVE_PATH_BELL`: `nerve_chan_path` of the channel's bell.
pub const NERVE_PATH_BELL: u32 = 0x1;
/// `NERVE_LOCK_OWNER_DIED`: `nerve_stats.lock_flags`, the holder died.
pub const NERVE_LOCK_OWNER_DIED: u32 = 0x1;
/// `NERVE_LOCK_WAITERS`: `nerve_stats.lock_flags`, writers are waiting.
pub const NERVE_LOCK_WAITERS: u32 = 0x2;
/// `NERVE_TYPE_MAX`: longest type name in the metadata, in bytes.
pub const NERVE_TYPE_MAX: usize = 255;
/// `NERVE_ENCODING_MAX`: longest encoding in the metadata, in bytes.
pub const NERVE_ENCODING_MAX: usize = 63;
/// `NERVE_SCHEMA_MAX`: largest schema text, in bytes.
pub const NERVE_SCHEMA_MAX: usize = 1 << 20;
/// `NERVE_WAIT_MAX`: most channels one `nerve_chan_wait_any` call waits on.
pub const NERVE_WAIT_MAX: usize = 64;
/// `NERVE_FOREVER`: the timeout that never expires.
pub const NERVE_FOREVER: i64 = i64::MIN;

/// `NERVE_O_READ`: open read-only.
pub const NERVE_O_READ: u32 = 0x0;
/// `NERVE_O_WRITE`: open for reading and writing.
pub const NERVE_O_WRITE: u32 = 0x1;
/// `NERVE_O_LAZY`: do not pre-fault the mapping (pages fault in when first touched).
pub const NERVE_O_LAZY: u32 = 0x2;
/// `NERVE_C_EXIST_OK`: reuse an existing channel of equal geometry.
pub const NERVE_C_EXIST_OK: u32 = 0x1;
/// `NERVE_C_WAKE_ALWAYS`: wake waiting readers on every put.
pub const NERVE_C_WAKE_ALWAYS: u32 = 0x2;
/// `NERVE_C_REMOVE_UNUSED`: remove the channel once no process has it open.
pub const NERVE_C_REMOVE_UNUSED: u32 = 0x4;
/// `NERVE_STAT_SUPERSEDED`: `nerve_stats.state_flags`, a writer grew the
/// channel and its name names the successor.
pub const NERVE_STAT_SUPERSEDED: u32 = 0x1;
/// `NERVE_GET_NEXT`: the next unseen message after the cursor.
pub const NERVE_GET_NEXT: u32 = 0x0;
/// `NERVE_GET_NEWEST`: the newest message.
pub const NERVE_GET_NEWEST: u32 = 0x1;
/// `NERVE_GET_SEQ`: the message whose sequence number is `arg`.
pub const NERVE_GET_SEQ: u32 = 0x2;
/// `NERVE_GET_AT`: the newest message committed at or before time `arg`.
pub const NERVE_GET_AT: u32 = 0x3;
/// `NERVE_GET_MASK`: the bits of flags that choose the message.
pub const NERVE_GET_MASK: u32 = 0x3;
/// `NERVE_F_WAIT`: wait up to the timeout for a message.
pub const NERVE_F_WAIT: u32 = 0x10;
/// `NERVE_F_ABSTIME`: the timeout is an absolute CLOCK_MONOTONIC time.
pub const NERVE_F_ABSTIME: u32 = 0x20;
/// `NERVE_F_REPEAT`: NEWEST returns the newest even if already returned.
pub const NERVE_F_REPEAT: u32 = 0x40;
/// `NERVE_REPAIR_FORCE`: reset the writer lock even if its owner lives.
pub const NERVE_REPAIR_FORCE: u32 = 0x1;

// ---- chan.h: types -----------------------------------------------------

/// `nerve_chan`: an open channel (opaque; only ever behind a pointer).
#[repr(C)]
pub struct nerve_chan {
    _opaque: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `struct nerve_chan_opts`: options of `nerve_chan_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nerve_chan_opts {
    pub size: u32,
    pub flags: u32,
    pub slots: u64,
    pub data_size: u64,
    pub mode: u32,
    pub reserved0: u32,
    pub type_: *const c_char,
    pub encoding: *const c_char,
    pub schema: *const c_char,
    pub schema_len: u64,
}

impl Default for nerve_chan_opts {
    /// `NERVE_CHAN_OPTS_INIT`: `size` set, every other field zero.
    fn default() -> Self {
        nerve_chan_opts {
            size: core::mem::size_of::<nerve_chan_opts>() as u32,
            flags: 0,
            slots: 0,
            data_size: 0,
            mode: 0,
            reserved0: 0,
            type_: core::ptr::null(),
            encoding: core::ptr::null(),
            schema: core::ptr::null(),
            schema_len: 0,
        }
    }
}

/// `struct nerve_put_info`: what a put did.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nerve_put_info {
    pub seq: u64,
    pub time_ns: i64,
    pub recovered: u32,
    pub reserved0: u32,
    pub reserved: [u64; 2],
}

/// `struct nerve_get_info`: what a get or view delivered.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nerve_get_info {
    pub seq: u64,
    pub missed: u64,
    pub time_ns: i64,
    pub len: u64,
    pub reserved: [u64; 2],
}

/// `struct nerve_view`: a zero-copy view of a message inside the ring.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nerve_view {
    pub data: *const c_void,
    pub info: nerve_get_info,
}

/// `struct nerve_stats`: channel facts for tools.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct nerve_stats {
    pub slots: u64,
    pub data_size: u64,
    pub file_size: u64,
    pub head_seq: u64,
    pub tail_seq: u64,
    pub newest_time_ns: i64,
    pub bytes_total: u64,
    pub waiters: u64,
    pub created_ns: i64,
    pub layout_version: u32,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub creator_version: u32,
    pub lock_owner_tid: u32,
    pub lock_flags: u32,
    pub create_flags: u32,
    pub state_flags: u32,
    pub reserved0: u32,
    pub reserved: [u64; 6],
}

/// `struct nerve_meta`: metadata recorded at creation.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nerve_meta {
    pub type_: *const c_char,
    pub encoding: *const c_char,
    pub schema: *const c_char,
    pub schema_len: u64,
    pub reserved: [u64; 4],
}

// ---- bridge.h: the bridge kernel (docs/bridge-kernel.md) -------------------

/// `NERVE_TOPIC_MAX`: longest topic `nerve_topic_of_channel` writes.
pub const NERVE_TOPIC_MAX: usize = NERVE_NAME_MAX + 1;
/// `NERVE_GLOB_MAX`: longest glob, in bytes.
pub const NERVE_GLOB_MAX: usize = 255;
/// `NERVE_DIR_SCAN`: `nerve_dir_open` looks periodically, not by inotify.
pub const NERVE_DIR_SCAN: u32 = 0x1;
/// `NERVE_DIR_SCAN_MS`: the period of that scan.
pub const NERVE_DIR_SCAN_MS: u32 = 500;
/// `NERVE_DIR_CREATED`: a channel appeared (or was there at open).
pub const NERVE_DIR_CREATED: u32 = 1;
/// `NERVE_DIR_REMOVED`: a channel went (or its file was replaced).
pub const NERVE_DIR_REMOVED: u32 = 2;
/// `NERVE_BUDGET_UNCOUNTED`: a refusal of `nerve_budget_admit` not counted.
pub const NERVE_BUDGET_UNCOUNTED: u32 = 0x1;

/// `NERVE_OWN_N`: own sequence numbers a `nerve_own` remembers.
pub const NERVE_OWN_N: u32 = 4096;
/// `NERVE_OWN_WAIT_NS`: the longest `nerve_own_check` waits.
pub const NERVE_OWN_WAIT_NS: i64 = 100_000_000;

/// `nerve_dir`: a watch on the channel directory (opaque).
#[repr(C)]
pub struct nerve_dir {
    _opaque: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `nerve_budget`: an import budget (opaque; locks inside).
#[repr(C)]
pub struct nerve_budget {
    _opaque: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `nerve_own`: the own-sequence guard of one channel (opaque; lock-free
/// but for a lock inside a waiting check).
#[repr(C)]
pub struct nerve_own {
    _opaque: [u8; 0],
    _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `struct nerve_dir_event`: one change of the channel directory.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nerve_dir_event {
    pub kind: u32,
    pub reserved: u32,
    pub name: [c_char; NERVE_NAME_MAX + 1],
}

/// `struct nerve_budget_stats`: a budget's bounds and counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct nerve_budget_stats {
    pub max_channel: u64,
    pub max_total: u64,
    pub used: u64,
    pub channels: u64,
    pub refused: u64,
    pub reserved: [u64; 3],
}

/// `struct nerve_own_stats`: an own-sequence guard's counters.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct nerve_own_stats {
    pub committed: u64,
    pub waited: u64,
    pub late: u64,
    pub reserved: [u64; 5],
}

/// The callback of `nerve_chan_list`.
pub type nerve_list_fn =
    Option<unsafe extern "C" fn(name: *const c_char, arg: *mut c_void) -> c_int>;

// ---- errors.h ----------------------------------------------------------

/// `NERVE_OK`: success.
pub const NERVE_OK: c_int = 0;
/// `NERVE_EPERM` (-EPERM).
pub const NERVE_EPERM: c_int = -1;
/// `NERVE_ENOENT` (-ENOENT).
pub const NERVE_ENOENT: c_int = -2;
/// `NERVE_EINTR` (-EINTR).
pub const NERVE_EINTR: c_int = -4;
/// `NERVE_EBADF` (-EBADF).
pub const NERVE_EBADF: c_int = -9;
/// `NERVE_EAGAIN` (-EAGAIN).
pub const NERVE_EAGAIN: c_int = -11;
/// `NERVE_ENOMEM` (-ENOMEM).
pub const NERVE_ENOMEM: c_int = -12;
/// `NERVE_EACCES` (-EACCES).
pub const NERVE_EACCES: c_int = -13;
/// `NERVE_EBUSY` (-EBUSY).
pub const NERVE_EBUSY: c_int = -16;
/// `NERVE_EEXIST` (-EEXIST).
pub const NERVE_EEXIST: c_int = -17;
/// `NERVE_EINVAL` (-EINVAL).
pub const NERVE_EINVAL: c_int = -22;
/// `NERVE_ENOSPC` (-ENOSPC).
pub const NERVE_ENOSPC: c_int = -28;
/// `NERVE_EROFS` (-EROFS).
pub const NERVE_EROFS: c_int = -30;
/// `NERVE_ENAMETOOLONG` (-ENAMETOOLONG).
pub const NERVE_ENAMETOOLONG: c_int = -36;
/// `NERVE_ENOSYS` (-ENOSYS).
pub const NERVE_ENOSYS: c_int = -38;
/// `NERVE_EMSGSIZE` (-EMSGSIZE).
pub const NERVE_EMSGSIZE: c_int = -90;
/// `NERVE_ETIMEDOUT` (-ETIMEDOUT).
pub const NERVE_ETIMEDOUT: c_int = -110;
/// `NERVE_ESTALE` (-ESTALE).
pub const NERVE_ESTALE: c_int = -116;
/// `NERVE_ECANCELED` (-ECANCELED).
pub const NERVE_ECANCELED: c_int = -125;
/// `NERVE_EMFILE` (-EMFILE).
pub const NERVE_EMFILE: c_int = -24;
/// `NERVE_ENFILE` (-ENFILE).
pub const NERVE_ENFILE: c_int = -23;
/// `NERVE_EDEADLK` (-EDEADLK).
pub const NERVE_EDEADLK: c_int = -35;
/// `NERVE_EXDEV` (-EXDEV).
pub const NERVE_EXDEV: c_int = -18;
/// `NERVE_ECORRUPT`: the channel file is corrupt.
pub const NERVE_ECORRUPT: c_int = -1000;
/// `NERVE_EVERSION`: unsupported layout version.
pub const NERVE_EVERSION: c_int = -1001;
/// `NERVE_ENOTCHAN`: the file is not a nerve channel.
pub const NERVE_ENOTCHAN: c_int = -1002;
/// `NERVE_ETRUNC`: the channel file is truncated.
pub const NERVE_ETRUNC: c_int = -1003;
/// `NERVE_EMISMATCH`: exists with a different geometry or type.
pub const NERVE_EMISMATCH: c_int = -1004;
/// `NERVE_EOVERWRITTEN`: the message was overwritten.
pub const NERVE_EOVERWRITTEN: c_int = -1005;
/// `NERVE_ELAPPED`: writers overwrote the message on every attempt.
pub const NERVE_ELAPPED: c_int = -1006;
/// `NERVE_EABI`: made by an incompatible platform or ABI.
pub const NERVE_EABI: c_int = -1007;
/// `NERVE_EDECODE`: the message does not decode as the expected type.
pub const NERVE_EDECODE: c_int = -1008;
/// `NERVE_ESUPERSEDED`: the channel was superseded by a larger one.
pub const NERVE_ESUPERSEDED: c_int = -1009;

// ---- version.h ---------------------------------------------------------

/// `NERVE_VERSION_MAJOR` of the headers these declarations follow.
pub const NERVE_VERSION_MAJOR: u32 = 0;
/// `NERVE_VERSION_MINOR`.
pub const NERVE_VERSION_MINOR: u32 = 1;
/// `NERVE_VERSION_PATCH`.
pub const NERVE_VERSION_PATCH: u32 = 0;
/// `NERVE_VERSION_NUMBER`: major * 10000 + minor * 100 + patch.
pub const NERVE_VERSION_NUMBER: u32 =
    NERVE_VERSION_MAJOR * 10000 + NERVE_VERSION_MINOR * 100 + NERVE_VERSION_PATCH;
/// `NERVE_ABI_VERSION`: the binary interface's version (the SONAME's).
pub const NERVE_ABI_VERSION: u32 = 1;

// ---- functions ---------------------------------------------------------
// One declaration per line group, `pub fn NAME(ARG: TYPE, ...) -> RET;`:
// tests/abi.rs parses this block to rewrite it into C prototypes.

extern "C" {
    pub fn nerve_strerror(err: c_int) -> *const c_char;
    pub fn nerve_err_name(err: c_int) -> *const c_char;
    pub fn nerve_err_detail(err: c_int) -> *const c_char;

    pub fn nerve_clock_now_ns() -> i64;
    pub fn nerve_clock_to_realtime_ns(mono_ns: i64) -> i64;
    pub fn nerve_size_parse(text: *const c_char, out: *mut u64) -> c_int;

    pub fn nerve_version(text: *mut *const c_char) -> c_int;

    pub fn nerve_chan_create(name: *const c_char, opts: *const nerve_chan_opts) -> c_int;
    pub fn nerve_chan_unlink(name: *const c_char) -> c_int;
    pub fn nerve_chan_chmod(name: *const c_char, mode: u32) -> c_int;
    pub fn nerve_chan_open(name: *const c_char, flags: u32, out: *mut *mut nerve_chan) -> c_int;
    pub fn nerve_chan_close(c: *mut nerve_chan) -> c_int;
    pub fn nerve_chan_name(c: *const nerve_chan) -> *const c_char;
    pub fn nerve_chan_meta(c: *const nerve_chan, meta: *mut nerve_meta) -> c_int;

    pub fn nerve_chan_put(
        c: *mut nerve_chan,
        buf: *const c_void,
        len: usize,
        timeout_ns: i64,
        info: *mut nerve_put_info,
        flags: u32,
    ) -> c_int;
    pub fn nerve_chan_reserve(
        c: *mut nerve_chan,
        len: usize,
        timeout_ns: i64,
        ptr: *mut *mut c_void,
        flags: u32,
    ) -> c_int;
    pub fn nerve_chan_commit(c: *mut nerve_chan, len: usize, info: *mut nerve_put_info) -> c_int;
    pub fn nerve_chan_abort(c: *mut nerve_chan) -> c_int;
    pub fn nerve_chan_put_at(
        c: *mut nerve_chan,
        buf: *const c_void,
        len: usize,
        time_ns: i64,
        timeout_ns: i64,
        info: *mut nerve_put_info,
        flags: u32,
    ) -> c_int;
    pub fn nerve_chan_commit_at(
        c: *mut nerve_chan,
        len: usize,
        time_ns: i64,
        info: *mut nerve_put_info,
    ) -> c_int;
    pub fn nerve_chan_ring(c: *const nerve_chan, base: *mut *mut c_void, len: *mut u64) -> c_int;

    pub fn nerve_chan_get(
        c: *mut nerve_chan,
        buf: *mut c_void,
        len: usize,
        arg: i64,
        timeout_ns: i64,
        info: *mut nerve_get_info,
        flags: u32,
    ) -> c_int;
    pub fn nerve_chan_view(
        c: *mut nerve_chan,
        arg: i64,
        timeout_ns: i64,
        view: *mut nerve_view,
        flags: u32,
    ) -> c_int;
    pub fn nerve_chan_view_check(c: *const nerve_chan, view: *const nerve_view) -> c_int;
    pub fn nerve_chan_view_write(c: *const nerve_chan, view: *const nerve_view, fd: c_int)
        -> c_int;
    pub fn nerve_chan_cursor(c: *const nerve_chan) -> u64;
    pub fn nerve_chan_seek(c: *mut nerve_chan, seq: u64);
    pub fn nerve_chan_cancel(c: *mut nerve_chan);
    pub fn nerve_chan_cancel_clear(c: *mut nerve_chan);
    pub fn nerve_chan_wait_any(
        chans: *const *mut nerve_chan,
        n: usize,
        timeout_ns: i64,
        ready: *mut u64,
        flags: u32,
    ) -> c_int;

    pub fn nerve_chan_stat(c: *const nerve_chan, st: *mut nerve_stats) -> c_int;
    pub fn nerve_chan_stat_name(name: *const c_char, st: *mut nerve_stats) -> c_int;
    pub fn nerve_chan_check(name: *const c_char, msg: *mut c_char, len: usize) -> c_int;
    pub fn nerve_chan_repair(
        name: *const c_char,
        flags: u32,
        msg: *mut c_char,
        len: usize,
    ) -> c_int;
    pub fn nerve_chan_list(fn_: nerve_list_fn, arg: *mut c_void) -> c_int;
    pub fn nerve_chan_name_check(name: *const c_char) -> c_int;
    pub fn nerve_chan_path(name: *const c_char, flags: u32, buf: *mut c_char, len: usize) -> c_int;
    pub fn nerve_chan_file_size(opts: *const nerve_chan_opts, size: *mut u64) -> c_int;

    pub fn nerve_chan_grow(c: *mut *mut nerve_chan, data_size: u64, slots: u64) -> c_int;
    pub fn nerve_chan_follow(c: *mut *mut nerve_chan) -> c_int;
    pub fn nerve_chan_renamed(c: *const nerve_chan) -> c_int;
    pub fn nerve_chan_remove_unused(name: *const c_char) -> c_int;
    pub fn nerve_chan_sweep_unused(prefix: *const c_char, removed: *mut c_uint) -> c_int;
    pub fn nerve_chan_seq_range(c: *const nerve_chan, tail: *mut u64, head: *mut u64) -> c_int;

    pub fn nerve_topic_of_channel(
        name: *const c_char,
        domain: u32,
        buf: *mut c_char,
        len: usize,
    ) -> c_int;
    pub fn nerve_channel_of_topic(
        topic: *const c_char,
        domain: u32,
        buf: *mut c_char,
        len: usize,
    ) -> c_int;
    pub fn nerve_glob_check(glob: *const c_char) -> c_int;
    pub fn nerve_glob_match(glob: *const c_char, name: *const c_char) -> c_int;
    pub fn nerve_dir_open(
        globs: *const *const c_char,
        n: usize,
        flags: u32,
        out: *mut *mut nerve_dir,
    ) -> c_int;
    pub fn nerve_dir_fd(d: *const nerve_dir) -> c_int;
    pub fn nerve_dir_inotify(d: *const nerve_dir) -> c_int;
    pub fn nerve_dir_next(d: *mut nerve_dir, ev: *mut nerve_dir_event) -> c_int;
    pub fn nerve_dir_close(d: *mut nerve_dir) -> c_int;
    pub fn nerve_budget_open(
        max_channel: u64,
        max_total: u64,
        out: *mut *mut nerve_budget,
    ) -> c_int;
    pub fn nerve_budget_admit(
        b: *mut nerve_budget,
        name: *const c_char,
        opts: *const nerve_chan_opts,
        flags: u32,
        need: *mut u64,
    ) -> c_int;
    pub fn nerve_budget_release(b: *mut nerve_budget, name: *const c_char) -> c_int;
    pub fn nerve_budget_stat(b: *mut nerve_budget, st: *mut nerve_budget_stats) -> c_int;
    pub fn nerve_budget_close(b: *mut nerve_budget) -> c_int;
    pub fn nerve_own_open(out: *mut *mut nerve_own) -> c_int;
    pub fn nerve_own_begin(o: *mut nerve_own, token: *mut u32) -> c_int;
    pub fn nerve_own_commit(o: *mut nerve_own, token: u32, seq: u64) -> c_int;
    pub fn nerve_own_abort(o: *mut nerve_own, token: u32) -> c_int;
    pub fn nerve_own_check(o: *mut nerve_own, seq: u64) -> c_int;
    pub fn nerve_own_stat(o: *const nerve_own, st: *mut nerve_own_stats) -> c_int;
    pub fn nerve_own_reset(o: *mut nerve_own) -> c_int;
    pub fn nerve_own_close(o: *mut nerve_own) -> c_int;
}
