//! Zero-copy views of messages in the ring.
use crate::chan::{Channel, GetInfo};
use crate::error::{check, Error, Result};
use crate::Pod;
use core::marker::PhantomData;
use nerve_sys as sys;

/// A zero-copy view of one message inside the channel's ring, from
/// [`Channel::view`].
///
/// The view borrows its [`Channel`] mutably, so the channel stays open (and
/// the bytes mapped) while the view lives, and the handle cannot read again
/// meanwhile. Writers in any process may still overwrite the message at any
/// time (a put never waits for readers): whatever is read through the view
/// counts only if [`View::check`] says `Ok` *afterwards*. [`View::read`],
/// [`View::to_vec`] and [`View::read_pod`] do that check for you and report
/// an overwrite as [`Error::Stale`].
///
/// ```no_run
/// # use nerve::{Channel, Access, Which, Wait};
/// # let mut r = Channel::open("imu", Access::Read)?;
/// let view = r.view(Which::Newest, Wait::Forever)?;
/// let sum: u64 = view.read(|bytes| bytes.iter().map(|&b| b as u64).sum())?;
/// # Ok::<(), nerve::Error>(())
/// ```
#[derive(Debug)]
pub struct View<'a> {
    raw: *const sys::nerve_chan,
    view: sys::nerve_view,
    _chan: PhantomData<&'a mut Channel>,
}

// SAFETY: the view's bytes lie in a mapping that stays valid while the
// borrowed Channel is open, whatever thread reads them; the only call made
// through a View, nerve_chan_view_check, is "Thread: any" and reads nothing
// of the handle that another call could change (the Channel is borrowed
// mutably, so no other call on it runs).
unsafe impl Send for View<'_> {}
// SAFETY: as Send; every method takes &self and reads only.
unsafe impl Sync for View<'_> {}

impl<'a> View<'a> {
    pub(crate) fn new(chan: &'a mut Channel, view: sys::nerve_view) -> View<'a> {
        View {
            raw: chan.raw(),
            view,
            _chan: PhantomData,
        }
    }

    /// What the message is: sequence number, missed count, time, size.
    #[inline]
    pub fn info(&self) -> GetInfo {
        self.view.info.into()
    }

    /// The message's size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.view.info.len as usize
    }

    /// Whether the message is empty (zero bytes).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The message's bytes in the ring, contiguous even across the wrap.
    ///
    /// They are shared memory that a writer of another process may be
    /// overwriting while you read them: nothing read here may be trusted
    /// (or acted on) before [`View::check`] returns `Ok` after the reading
    /// is done. Prefer [`View::read`].
    #[inline]
    pub fn data(&self) -> &[u8] {
        if self.view.info.len == 0 {
            return &[];
        }
        // SAFETY: the library handed out data[0..len) inside the ring's
        // mapping, which stays mapped while the borrowed channel is open;
        // a concurrent overwrite changes the values, not the validity of
        // the memory, and is detected by check().
        unsafe { core::slice::from_raw_parts(self.view.data.cast(), self.len()) }
    }

    /// `Ok` if no writer has begun to overwrite the message, else
    /// [`Error::Stale`]: discard whatever was read through the view.
    /// Real-time and signal safe.
    #[inline]
    pub fn check(&self) -> Result<()> {
        // SAFETY: raw is the open handle this view came from (borrowed by
        // 'a); view is the struct it filled (Thread: any).
        check(unsafe { sys::nerve_chan_view_check(self.raw, &self.view) })
    }

    /// Run `f` on the bytes, then check the view: `f`'s result, or
    /// [`Error::Stale`] if a writer overwrote the message meanwhile (then
    /// `f` may have seen torn bytes, and its result is dropped).
    #[inline]
    pub fn read<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let r = f(self.data());
        self.check()?;
        Ok(r)
    }

    /// A validated copy of the message.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        self.read(|b| b.to_vec())
    }

    /// A validated copy of the message as a plain-old-data value;
    /// [`Error::Decode`] when the message is not `size_of::<T>()` bytes.
    pub fn read_pod<T: Pod>(&self) -> Result<T> {
        if self.len() != core::mem::size_of::<T>() {
            return Err(Error::Decode);
        }
        self.read(|b| bytemuck::pod_read_unaligned(b))
    }
}
