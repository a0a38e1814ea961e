//! Reservations: ring space filled in place, then committed.
use crate::chan::{Channel, PutInfo};
use crate::error::{check, Error, Result};
use crate::Pod;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use nerve_sys as sys;

/// Ring space reserved by [`Channel::loan`], filled in place (from a
/// serializer, a device, a network buffer) and published by
/// [`Loan::commit`]. Dropping it without committing publishes nothing
/// (`nerve_chan_abort`).
///
/// While a loan lives it holds the channel's writer lock (other writers
/// wait) and borrows the channel mutably. The lock belongs to the thread
/// that reserved, so a `Loan` is neither `Send` nor `Sync`:
///
/// ```compile_fail,E0277
/// # let mut w = nerve::Channel::open("x", nerve::Access::Write).unwrap();
/// let loan = w.loan(8).unwrap();
/// std::thread::spawn(move || loan.commit(8)); // Loan is not Send
/// ```
///
/// It dereferences to the reserved bytes (`&mut [u8]`), which hold whatever
/// the ring held before:
///
/// ```no_run
/// # let mut w = nerve::Channel::open("x", nerve::Access::Write)?;
/// let mut loan = w.loan(1024)?;
/// let n = {
///     let buf: &mut [u8] = &mut loan;
///     buf[..5].copy_from_slice(b"hello");
///     5
/// };
/// let info = loan.commit(n)?;
/// # Ok::<(), nerve::Error>(())
/// ```
#[derive(Debug)]
pub struct Loan<'a> {
    raw: *mut sys::nerve_chan,
    ptr: *mut u8,
    len: usize,
    _chan: PhantomData<&'a mut Channel>,
    // The writer lock is the reserving thread's: !Send, !Sync.
    _thread: PhantomData<*mut ()>,
}

impl<'a> Loan<'a> {
    /// # Safety
    /// `ptr[0..len)` must be the open reservation of `chan`'s handle, taken
    /// by the calling thread.
    pub(crate) unsafe fn new(chan: &'a mut Channel, ptr: *mut u8, len: usize) -> Loan<'a> {
        Loan {
            raw: chan.raw(),
            ptr,
            len,
            _chan: PhantomData,
            _thread: PhantomData,
        }
    }

    /// The reserved length.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether zero bytes were reserved.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Publish the first `len` bytes (at most the reserved length) as one
    /// message and release the writer lock. [`Error::Inval`] when `len` is
    /// larger than the reservation (which is then aborted). Real-time safe.
    #[inline]
    pub fn commit(self, len: usize) -> Result<PutInfo> {
        self.finish(
            |raw, info| {
                // SAFETY: raw holds our reservation, made by this thread (Loan
                // is !Send); info a valid out-struct.
                unsafe { sys::nerve_chan_commit(raw, len, info) }
            },
            len,
        )
    }

    /// As [`Loan::commit`], with the commit time `time_ns`, clamped as
    /// [`Channel::put_at`] clamps it.
    pub fn commit_at(self, len: usize, time_ns: i64) -> Result<PutInfo> {
        self.finish(
            |raw, info| {
                // SAFETY: as commit().
                unsafe { sys::nerve_chan_commit_at(raw, len, time_ns, info) }
            },
            len,
        )
    }

    fn finish(
        self,
        f: impl FnOnce(*mut sys::nerve_chan, *mut sys::nerve_put_info) -> i32,
        len: usize,
    ) -> Result<PutInfo> {
        if len > self.len {
            return Err(Error::Inval); // Drop aborts.
        }
        let mut info = sys::nerve_put_info::default();
        let rc = f(self.raw, &mut info);
        check(rc)?; // On failure the reservation stays open: Drop aborts.
        core::mem::forget(self);
        Ok(info.into())
    }

    /// Write `value` at the start of the reservation and commit it as a
    /// message of `size_of::<T>()` bytes; [`Error::MsgSize`] when it does
    /// not fit (the reservation is then aborted).
    pub fn commit_pod<T: Pod>(mut self, value: &T) -> Result<PutInfo> {
        let bytes = bytemuck::bytes_of(value);
        if bytes.len() > self.len {
            return Err(Error::MsgSize);
        }
        self[..bytes.len()].copy_from_slice(bytes);
        self.commit(bytes.len())
    }

    /// Drop the reservation without publishing (what dropping does, with
    /// the C library's answer).
    pub fn abort(self) -> Result<()> {
        // SAFETY: raw holds our reservation, made by this thread.
        let rc = unsafe { sys::nerve_chan_abort(self.raw) };
        core::mem::forget(self);
        check(rc)
    }
}

impl Deref for Loan<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: ptr[0..len) is our reservation: mapped writable, and no
        // other writer touches it while we hold the writer lock (readers
        // only read).
        unsafe { core::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl DerefMut for Loan<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as deref(), and &mut self makes this the only reference.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        // SAFETY: raw holds our reservation, made by this thread; abort
        // publishes nothing and releases the writer lock.
        let _ = unsafe { sys::nerve_chan_abort(self.raw) };
    }
}
