//! Channels: options, the handle, reads, writes, waits.
use crate::error::{check, Error, Result};
use crate::{cstring, Loan, Pod, View};
use core::ffi::CStr;
use core::ptr::NonNull;
use nerve_sys as sys;
use std::ffi::CString;
use std::sync::Arc;
use std::time::Duration;

/// Options of [`crate::create`]: geometry, permission bits and metadata. A
/// field left unset takes the C library's default (1024 slots, 1 MiB of
/// data ring, mode `0o644`, no metadata).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    slots: u64,
    data_size: u64,
    mode: u32,
    exist_ok: bool,
    wake_always: bool,
    type_name: Option<String>,
    encoding: Option<String>,
    schema: Option<Vec<u8>>,
}

impl Options {
    /// All defaults.
    pub fn new() -> Options {
        Options::default()
    }
    /// Index ring entries: how many messages the channel keeps at most.
    pub fn slots(mut self, slots: u64) -> Options {
        self.slots = slots;
        self
    }
    /// Data ring bytes, rounded up to pages; also the largest message.
    pub fn data_size(mut self, bytes: u64) -> Options {
        self.data_size = bytes;
        self
    }
    /// Permission bits of the channel file (e.g. `0o660`).
    pub fn mode(mut self, mode: u32) -> Options {
        self.mode = mode;
        self
    }
    /// Reuse a channel that exists with the same geometry and metadata
    /// instead of failing with [`Error::Exist`] (`NERVE_C_EXIST_OK`).
    pub fn exist_ok(mut self, yes: bool) -> Options {
        self.exist_ok = yes;
        self
    }
    /// Wake waiting readers on every put, one futex call per put, so that
    /// readers who may not write the channel wait without polling
    /// (`NERVE_C_WAKE_ALWAYS`).
    pub fn wake_always(mut self, yes: bool) -> Options {
        self.wake_always = yes;
        self
    }
    /// The type name recorded in the metadata (e.g. `sensor_msgs/msg/Imu`).
    pub fn type_name(mut self, name: &str) -> Options {
        self.type_name = Some(name.to_owned());
        self
    }
    /// The encoding recorded in the metadata (`raw`, `cdr`, `ros1msg`,
    /// `json`, ...).
    pub fn encoding(mut self, encoding: &str) -> Options {
        self.encoding = Some(encoding.to_owned());
        self
    }
    /// The schema recorded in the metadata: any bytes but NUL.
    pub fn schema(mut self, schema: &[u8]) -> Options {
        self.schema = Some(schema.to_owned());
        self
    }

    pub(crate) fn with_raw<R>(
        &self,
        f: impl FnOnce(&sys::nerve_chan_opts) -> Result<R>,
    ) -> Result<R> {
        let opt_c = |s: &Option<String>| -> Result<Option<CString>> {
            s.as_deref().map(cstring).transpose()
        };
        let (ty, enc) = (opt_c(&self.type_name)?, opt_c(&self.encoding)?);
        let mut raw = sys::nerve_chan_opts {
            slots: self.slots,
            data_size: self.data_size,
            mode: self.mode,
            ..Default::default()
        };
        if self.exist_ok {
            raw.flags |= sys::NERVE_C_EXIST_OK;
        }
        if self.wake_always {
            raw.flags |= sys::NERVE_C_WAKE_ALWAYS;
        }
        raw.type_ = ty.as_ref().map_or(core::ptr::null(), |s| s.as_ptr());
        raw.encoding = enc.as_ref().map_or(core::ptr::null(), |s| s.as_ptr());
        if let Some(schema) = &self.schema {
            raw.schema = schema.as_ptr().cast();
            raw.schema_len = schema.len() as u64;
        }
        f(&raw)
    }
}

/// How [`Channel::open`] opens a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read-only: maps the channel read-only; needs read permission only.
    Read,
    /// Read and write: needs write permission.
    Write,
}

/// Which message a get or view takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The next unseen message after the handle's cursor, or the oldest
    /// still present if it was overwritten ([`GetInfo::missed`] counts the
    /// skipped ones). Moves the cursor.
    Next,
    /// The newest message, unless this handle already returned it
    /// ([`Error::Again`]). Moves the cursor.
    Newest,
    /// The newest message, even if this handle already returned it.
    NewestRepeat,
    /// The message with this sequence number (1-based). The cursor stays.
    Seq(u64),
    /// The newest message committed at or before this `CLOCK_MONOTONIC`
    /// time among those committed when the call began; never waits. The
    /// cursor stays.
    At(i64),
}

impl Which {
    fn flags_arg(self) -> (u32, i64) {
        match self {
            Which::Next => (sys::NERVE_GET_NEXT, 0),
            Which::Newest => (sys::NERVE_GET_NEWEST, 0),
            Which::NewestRepeat => (sys::NERVE_GET_NEWEST | sys::NERVE_F_REPEAT, 0),
            // The C call takes the sequence number as int64_t; numbers above
            // i64::MAX are never published, and come out negative, which
            // the library rejects with EINVAL rather than misreading.
            Which::Seq(s) => (sys::NERVE_GET_SEQ, s as i64),
            Which::At(t) => (sys::NERVE_GET_AT, t),
        }
    }
}

/// How long a call may wait: for a message (get, view, [`wait_any`]) or
/// for the writer lock (put, loan; a put never waits for readers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Do not wait: one try (a read returns [`Error::Again`] when nothing
    /// is there; a put returns [`Error::TimedOut`] if the lock is held).
    No,
    /// Wait at most this long ([`Error::TimedOut`] after it).
    For(Duration),
    /// Wait until this `CLOCK_MONOTONIC` time ([`crate::clock::now_ns`]).
    Until(i64),
    /// Wait without bound (until a message, or [`Canceller::cancel`]).
    Forever,
}

impl Wait {
    /// (timeout_ns, flags) of a C call that waits only with `wait_flag`.
    #[inline]
    fn raw(self, wait_flag: u32) -> (i64, u32) {
        match self {
            Wait::No => (0, 0),
            Wait::For(d) => (i64::try_from(d.as_nanos()).unwrap_or(i64::MAX), wait_flag),
            Wait::Until(t) => (t, wait_flag | sys::NERVE_F_ABSTIME),
            Wait::Forever => (sys::NERVE_FOREVER, wait_flag),
        }
    }
}

/// What a put did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PutInfo {
    /// The sequence number given to the message.
    pub seq: u64,
    /// Its commit time, `CLOCK_MONOTONIC` ns.
    pub time_ns: i64,
    /// Whether the writer lock was recovered from a writer that died
    /// holding it.
    pub recovered: bool,
}

impl From<sys::nerve_put_info> for PutInfo {
    fn from(i: sys::nerve_put_info) -> PutInfo {
        PutInfo {
            seq: i.seq,
            time_ns: i.time_ns,
            recovered: i.recovered != 0,
        }
    }
}

/// What a get or view delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetInfo {
    /// The sequence number of the message.
    pub seq: u64,
    /// [`Which::Next`] / [`Which::Newest`]: messages skipped since the
    /// cursor (overwritten before this reader came to them, or passed over
    /// for the newest).
    pub missed: u64,
    /// Its commit time, `CLOCK_MONOTONIC` ns.
    pub time_ns: i64,
    /// Its size in bytes.
    pub len: usize,
}

impl From<sys::nerve_get_info> for GetInfo {
    #[inline]
    fn from(i: sys::nerve_get_info) -> GetInfo {
        GetInfo {
            seq: i.seq,
            missed: i.missed,
            time_ns: i.time_ns,
            len: i.len as usize,
        }
    }
}

/// Channel facts, read without any lock ([`Channel::stats`],
/// [`crate::stat_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Index ring entries.
    pub slots: u64,
    /// Data ring bytes (the largest message).
    pub data_size: u64,
    /// Bytes of the channel file.
    pub file_size: u64,
    /// Newest sequence number (= messages published).
    pub head_seq: u64,
    /// Oldest sequence number still readable; `head_seq + 1` when none is.
    pub tail_seq: u64,
    /// Commit time of `head_seq`; 0 when none.
    pub newest_time_ns: i64,
    /// Payload bytes published since creation.
    pub bytes_total: u64,
    /// Readers announced as waiting (a hint).
    pub waiters: u64,
    /// Creation time, `CLOCK_REALTIME` ns.
    pub created_ns: i64,
    /// Layout version of the file.
    pub layout_version: u32,
    /// Permission bits of the file.
    pub mode: u32,
    /// Owner of the file.
    pub uid: u32,
    /// Group of the file.
    pub gid: u32,
    /// Library version (`NERVE_VERSION_NUMBER`) of the creator.
    pub creator_version: u32,
    /// Thread id of the writer lock's holder, as the writers' PID
    /// namespace numbers it; 0 when free.
    pub lock_owner_tid: u32,
    /// `NERVE_LOCK_OWNER_DIED`, `NERVE_LOCK_WAITERS` of the lock.
    pub lock_flags: u32,
}

impl From<sys::nerve_stats> for Stats {
    fn from(s: sys::nerve_stats) -> Stats {
        Stats {
            slots: s.slots,
            data_size: s.data_size,
            file_size: s.file_size,
            head_seq: s.head_seq,
            tail_seq: s.tail_seq,
            newest_time_ns: s.newest_time_ns,
            bytes_total: s.bytes_total,
            waiters: s.waiters,
            created_ns: s.created_ns,
            layout_version: s.layout_version,
            mode: s.mode,
            uid: s.uid,
            gid: s.gid,
            creator_version: s.creator_version,
            lock_owner_tid: s.lock_owner_tid,
            lock_flags: s.lock_flags,
        }
    }
}

/// Metadata recorded at creation, borrowed from the handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta<'a> {
    /// Type name; empty when not set.
    pub type_name: &'a str,
    /// Encoding; empty when not set.
    pub encoding: &'a str,
    /// Schema bytes; empty when not set.
    pub schema: &'a [u8],
}

/// The C handle, closed when the last of the [`Channel`] and its
/// [`Canceller`]s is dropped.
#[derive(Debug)]
struct Handle(NonNull<sys::nerve_chan>);

// SAFETY: the handle is not tied to a thread: nerve_chan_close may run on
// any thread provided no other call on the handle runs, which holds in
// Drop (the last reference is gone).
unsafe impl Send for Handle {}
// SAFETY: through a shared Handle (the Arc of Canceller) only calls whose
// contract says "Thread: any" are made: nerve_chan_cancel and
// nerve_chan_cancel_clear.
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // Returns NERVE_EBUSY only for a reservation of another thread; a
        // Loan borrows the Channel mutably and is !Send, so none is open
        // here. SAFETY: no other reference to the handle remains.
        let _ = unsafe { sys::nerve_chan_close(self.0.as_ptr()) };
    }
}

/// An open channel: one `nerve_chan` handle of the C library, closed on
/// drop (or when the last [`Canceller`] of it is dropped, if later).
///
/// A handle holds its own read cursor ([`Channel::cursor`]); open one
/// handle per reader. `Channel` is `Send` and `Sync`: calls the C contract
/// allows from one caller at a time take `&mut self`, and the rest, which
/// it allows from any thread, take `&self`.
#[derive(Debug)]
pub struct Channel {
    raw: NonNull<sys::nerve_chan>,
    handle: Arc<Handle>,
}

// SAFETY: a nerve_chan handle is not bound to the thread that opened it
// ("Thread: one caller per handle", not "the opening thread"); an open
// reservation, which is bound to its thread, is a Loan that borrows the
// Channel mutably, so the Channel cannot move while one is open.
unsafe impl Send for Channel {}
// SAFETY: every `&self` method calls only C functions whose contract says
// "Thread: any" (name, meta, stat, ring, cancel); the "one caller per
// handle" calls all take `&mut self`.
unsafe impl Sync for Channel {}

impl Channel {
    /// Open channel `name` for reading ([`Access::Read`]) or reading and
    /// writing ([`Access::Write`]). Never blocks on what is in `/dev/shm`.
    /// Errors: [`Error::NoEnt`], [`Error::Inval`], [`Error::NameTooLong`],
    /// [`Error::Access`], [`Error::NotChan`], [`Error::Version`],
    /// [`Error::Abi`], [`Error::Trunc`], [`Error::Corrupt`],
    /// [`Error::NoMem`], [`Error::MFile`], [`Error::NFile`], [`Error::XDev`]
    /// (writers must share a PID namespace), [`Error::Os`]. Not real-time
    /// safe.
    pub fn open(name: &str, access: Access) -> Result<Channel> {
        let cname = cstring(name)?;
        let flags = match access {
            Access::Read => sys::NERVE_O_READ,
            Access::Write => sys::NERVE_O_WRITE,
        };
        let mut raw = core::ptr::null_mut();
        // SAFETY: NUL-terminated name, raw a valid out-pointer (Thread: any).
        check(unsafe { sys::nerve_chan_open(cname.as_ptr(), flags, &mut raw) })
            .map_err(|e| e.on(name))?;
        let raw = NonNull::new(raw).ok_or(Error::NoMem)?;
        Ok(Channel {
            raw,
            handle: Arc::new(Handle(raw)),
        })
    }

    /// Create channel `name` with `opts` (see [`crate::create`]) and open
    /// it for writing.
    pub fn create(name: &str, opts: &Options) -> Result<Channel> {
        crate::create(name, opts)?;
        Channel::open(name, Access::Write)
    }

    pub(crate) fn raw(&self) -> *mut sys::nerve_chan {
        self.raw.as_ptr()
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        // SAFETY: the handle's name is a NUL-terminated string owned by the
        // handle until close; the borrow of self keeps it open. Names are
        // ASCII by the name rules (Thread: any).
        unsafe { CStr::from_ptr(sys::nerve_chan_name(self.raw())) }
            .to_str()
            .unwrap_or("")
    }

    /// The metadata recorded at creation.
    pub fn meta(&self) -> Meta<'_> {
        let mut m = sys::nerve_meta {
            type_: core::ptr::null(),
            encoding: core::ptr::null(),
            schema: core::ptr::null(),
            schema_len: 0,
            reserved: [0; 4],
        };
        // SAFETY: valid handle and out-struct (Thread: any); the strings
        // are owned by the handle until close, which the borrow of self
        // prevents; type and encoding are valid UTF-8 (a file holding
        // anything else does not open).
        unsafe {
            let _ = sys::nerve_chan_meta(self.raw(), &mut m);
            let s = |p: *const core::ffi::c_char| {
                if p.is_null() {
                    ""
                } else {
                    CStr::from_ptr(p).to_str().unwrap_or("")
                }
            };
            Meta {
                type_name: s(m.type_),
                encoding: s(m.encoding),
                schema: if m.schema.is_null() {
                    &[]
                } else {
                    core::slice::from_raw_parts(m.schema.cast(), m.schema_len as usize)
                },
            }
        }
    }

    /// Channel facts, read without any lock. Errors: [`Error::Corrupt`].
    pub fn stats(&self) -> Result<Stats> {
        let mut st = sys::nerve_stats::default();
        // SAFETY: valid handle and out-struct (Thread: any).
        check(unsafe { sys::nerve_chan_stat(self.raw(), &mut st) })?;
        Ok(Stats::from(st))
    }

    /// The data ring's mapping (twice the data size, mapped back to back),
    /// inside which every loan and view lies: for registering it once with
    /// a DMA engine (`cudaHostRegister`, an RDMA memory region). The
    /// pointer is valid while the channel is open; it is read-only for a
    /// read-only handle.
    pub fn ring(&self) -> (*mut u8, usize) {
        let (mut base, mut len) = (core::ptr::null_mut(), 0u64);
        // SAFETY: valid handle and out-pointers (Thread: any).
        let _ = unsafe { sys::nerve_chan_ring(self.raw(), &mut base, &mut len) };
        (base.cast(), len as usize)
    }

    // ---- writing ---------------------------------------------------------

    /// Append a copy of `data` as one message, waiting as long as it takes
    /// for the writer lock (readers never make a put wait). Errors:
    /// [`Error::ReadOnly`], [`Error::MsgSize`] (larger than the data ring),
    /// [`Error::DeadLock`], [`Error::Corrupt`], [`Error::NoSys`].
    /// Real-time safe: no allocation, one memcpy.
    #[inline]
    pub fn put(&mut self, data: &[u8]) -> Result<PutInfo> {
        self.put_with(data, Wait::Forever)
    }

    /// As [`Channel::put`], waiting for the writer lock as `wait` says
    /// ([`Error::TimedOut`] when not acquired).
    #[inline]
    pub fn put_with(&mut self, data: &[u8], wait: Wait) -> Result<PutInfo> {
        let (t, f) = wait.raw(0);
        let mut info = sys::nerve_put_info::default();
        // SAFETY: data[0..len) readable, info a valid out-struct, and &mut
        // self makes this the handle's only caller.
        check(unsafe {
            sys::nerve_chan_put(
                self.raw(),
                data.as_ptr().cast(),
                data.len(),
                t,
                &mut info,
                f,
            )
        })?;
        Ok(info.into())
    }

    /// As [`Channel::put`], with the commit time `time_ns` (e.g. the origin
    /// time of a message mirrored from another host), clamped so that the
    /// ring's times stay ordered: [`PutInfo::time_ns`] is the time stored.
    pub fn put_at(&mut self, data: &[u8], time_ns: i64) -> Result<PutInfo> {
        let mut info = sys::nerve_put_info::default();
        // SAFETY: as put().
        check(unsafe {
            sys::nerve_chan_put_at(
                self.raw(),
                data.as_ptr().cast(),
                data.len(),
                time_ns,
                sys::NERVE_FOREVER,
                &mut info,
                0,
            )
        })?;
        Ok(info.into())
    }

    /// Put one plain-old-data value as a message of `size_of::<T>()` bytes.
    #[inline]
    pub fn put_pod<T: Pod>(&mut self, value: &T) -> Result<PutInfo> {
        self.put(bytemuck::bytes_of(value))
    }

    /// Reserve `len` bytes of ring space to fill in place (64-byte aligned,
    /// contiguous even across the wrap), waiting as long as it takes for
    /// the writer lock, which the [`Loan`] holds until it is committed or
    /// dropped (a dropped loan publishes nothing). Errors as
    /// [`Channel::put`].
    #[inline]
    pub fn loan(&mut self, len: usize) -> Result<Loan<'_>> {
        self.loan_with(len, Wait::Forever)
    }

    /// As [`Channel::loan`], waiting for the writer lock as `wait` says.
    pub fn loan_with(&mut self, len: usize, wait: Wait) -> Result<Loan<'_>> {
        let (t, f) = wait.raw(0);
        let mut ptr = core::ptr::null_mut();
        // SAFETY: valid out-pointer; &mut self makes this the handle's only
        // caller. On success ptr[0..len) is ours until commit or abort.
        check(unsafe { sys::nerve_chan_reserve(self.raw(), len, t, &mut ptr, f) })?;
        // SAFETY: the reservation just succeeded with these bytes.
        Ok(unsafe { Loan::new(self, ptr.cast(), len) })
    }

    // ---- reading ---------------------------------------------------------

    /// Copy message `which` into `buf`, waiting for one as `wait` says.
    /// Returns its [`GetInfo`] (`info.len` bytes of `buf` hold it).
    /// Errors: [`Error::Again`] (nothing new, or the sequence number is not
    /// published yet), [`Error::TimedOut`], [`Error::Canceled`],
    /// [`Error::MsgSize`] (`buf` too small; the cursor does not move; see
    /// [`Channel::get_vec`]), [`Error::Overwritten`] (the sequence number
    /// or time asked for is gone), [`Error::Lapped`], [`Error::Corrupt`],
    /// [`Error::Inval`]. Real-time safe: no allocation, one memcpy.
    #[inline]
    pub fn get(&mut self, which: Which, buf: &mut [u8], wait: Wait) -> Result<GetInfo> {
        self.get_raw(which, buf, wait).map_err(|(e, _)| e)
    }

    #[inline]
    fn get_raw(
        &mut self,
        which: Which,
        buf: &mut [u8],
        wait: Wait,
    ) -> core::result::Result<GetInfo, (Error, u64)> {
        let (flags, arg) = which.flags_arg();
        let (t, wf) = wait.raw(sys::NERVE_F_WAIT);
        let mut info = sys::nerve_get_info::default();
        // SAFETY: buf[0..len) writable, info a valid out-struct, and &mut
        // self makes this the handle's only caller.
        let rc = unsafe {
            sys::nerve_chan_get(
                self.raw(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                arg,
                t,
                &mut info,
                flags | wf,
            )
        };
        if rc < 0 {
            return Err((Error::from_code(rc), info.len));
        }
        Ok(info.into())
    }

    /// Copy message `which` into `buf`, growing it to the message's size
    /// first when it is too small (the only allocation; reuse `buf` to make
    /// none), and truncating it to the message. Errors as [`Channel::get`]
    /// but never [`Error::MsgSize`].
    pub fn get_into(&mut self, which: Which, buf: &mut Vec<u8>, wait: Wait) -> Result<GetInfo> {
        let cap = buf.capacity().max(64);
        buf.resize(cap, 0);
        loop {
            match self.get_raw(which, buf, wait) {
                Ok(info) => {
                    buf.truncate(info.len);
                    return Ok(info);
                }
                // The cursor did not move; the message is still there
                // unless overwritten meanwhile, in which case the next try
                // reports what then holds.
                Err((Error::MsgSize, need)) => buf.resize(need as usize, 0),
                Err((e, _)) => {
                    buf.clear();
                    return Err(e);
                }
            }
        }
    }

    /// Message `which` as a new `Vec` (allocates; see [`Channel::get_into`]).
    pub fn get_vec(&mut self, which: Which, wait: Wait) -> Result<(Vec<u8>, GetInfo)> {
        let mut buf = Vec::new();
        let info = self.get_into(which, &mut buf, wait)?;
        Ok((buf, info))
    }

    /// Message `which` as a plain-old-data value. Errors as
    /// [`Channel::get`], and [`Error::Decode`] when the message is not
    /// `size_of::<T>()` bytes (the cursor then moved past it, as for any
    /// message delivered).
    #[inline]
    pub fn get_pod<T: Pod>(&mut self, which: Which, wait: Wait) -> Result<(T, GetInfo)> {
        let mut value = T::zeroed();
        match self.get_raw(which, bytemuck::bytes_of_mut(&mut value), wait) {
            Ok(info) if info.len == core::mem::size_of::<T>() => Ok((value, info)),
            Ok(_) => Err(Error::Decode),
            Err((Error::MsgSize, _)) => {
                // Larger than T: take it (moving the cursor like any read
                // that delivers) and report it as not decoding.
                self.get_vec(which, Wait::No)?;
                Err(Error::Decode)
            }
            Err((e, _)) => Err(e),
        }
    }

    /// A zero-copy [`View`] of message `which` in the ring, waiting for one
    /// as `wait` says. The view borrows the channel, which keeps the bytes
    /// mapped; a writer may still overwrite them, which [`View::check`]
    /// (and [`View::read`]) report as [`Error::Stale`]. Errors as
    /// [`Channel::get`] (never [`Error::MsgSize`]).
    #[inline]
    pub fn view(&mut self, which: Which, wait: Wait) -> Result<View<'_>> {
        let (flags, arg) = which.flags_arg();
        let (t, wf) = wait.raw(sys::NERVE_F_WAIT);
        let mut v = sys::nerve_view {
            data: core::ptr::null(),
            info: Default::default(),
        };
        // SAFETY: v a valid out-struct; &mut self makes this the handle's
        // only caller.
        check(unsafe { sys::nerve_chan_view(self.raw(), arg, t, &mut v, flags | wf) })?;
        Ok(View::new(self, v))
    }

    /// The cursor: the sequence number of the last message [`Which::Next`]
    /// or [`Which::Newest`] returned (0 before the first).
    pub fn cursor(&mut self) -> u64 {
        // SAFETY: &mut self makes this the handle's only caller.
        unsafe { sys::nerve_chan_cursor(self.raw()) }
    }

    /// Set the cursor, so that the next [`Which::Next`] returns message
    /// `seq + 1`.
    pub fn seek(&mut self, seq: u64) {
        // SAFETY: &mut self makes this the handle's only caller.
        unsafe { sys::nerve_chan_seek(self.raw(), seq) }
    }

    // ---- cancel ----------------------------------------------------------

    /// A [`Canceller`] of this handle's waits, for another thread (or a
    /// shutdown path) to end a blocked get, view or [`wait_any`].
    pub fn canceller(&self) -> Canceller {
        Canceller {
            handle: self.handle.clone(),
        }
    }
}

/// Ends the waits of one [`Channel`] handle from any thread:
/// [`Canceller::cancel`] makes every wait on the handle return
/// [`Error::Canceled`], now and later, until [`Canceller::clear`].
///
/// It keeps the C handle open (not the [`Channel`] usable) until it is
/// dropped too. `Clone`, `Send` and `Sync`.
#[derive(Debug, Clone)]
pub struct Canceller {
    handle: Arc<Handle>,
}

impl Canceller {
    /// Wake every wait on the handle with [`Error::Canceled`], now and in
    /// future, until [`Canceller::clear`]. One atomic store and one futex
    /// wake; real-time safe.
    pub fn cancel(&self) {
        // SAFETY: the handle is open while self holds the Arc; the contract
        // is "Thread: any".
        unsafe { sys::nerve_chan_cancel(self.handle.0.as_ptr()) }
    }

    /// Let waits on the handle wait again.
    pub fn clear(&self) {
        // SAFETY: as cancel().
        unsafe { sys::nerve_chan_cancel_clear(self.handle.0.as_ptr()) }
    }
}

/// Which channels of a [`wait_any`] call have a message after their
/// cursor: bit `i` for `chans[i]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready(pub u64);

impl Ready {
    /// Whether `chans[i]` is ready.
    pub fn contains(self, i: usize) -> bool {
        i < 64 && self.0 & (1u64 << i) != 0
    }
    /// The indexes of the ready channels, ascending.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        (0..64).filter(move |&i| self.contains(i))
    }
    /// How many are ready.
    pub fn count(self) -> usize {
        self.0.count_ones() as usize
    }
}

/// Wait until at least one of `chans` (at most [`crate::WAIT_MAX`]) has a
/// message after its cursor, as `wait` says. Reads nothing and moves no
/// cursor. Errors: [`Error::TimedOut`], [`Error::Canceled`] (one of the
/// handles was cancelled), [`Error::Inval`] (no channels, or too many).
/// Uses the kernel's multi-futex wait (Linux 5.16), else polls every
/// millisecond.
pub fn wait_any(chans: &mut [&mut Channel], wait: Wait) -> Result<Ready> {
    if chans.is_empty() || chans.len() > sys::NERVE_WAIT_MAX {
        return Err(Error::Inval);
    }
    let mut raws = [core::ptr::null_mut(); sys::NERVE_WAIT_MAX];
    for (r, c) in raws.iter_mut().zip(chans.iter()) {
        *r = c.raw();
    }
    let (t, f) = wait.raw(0);
    let mut ready = 0u64;
    // SAFETY: raws[0..n) are open handles borrowed mutably (the only caller
    // of each); ready a valid out-pointer.
    let rc = unsafe { sys::nerve_chan_wait_any(raws.as_ptr(), chans.len(), t, &mut ready, f) };
    check(rc)?;
    Ok(Ready(ready))
}
