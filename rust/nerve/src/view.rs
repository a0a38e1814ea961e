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
/// [`View::copy_to`], [`View::to_vec`] and [`View::read_pod`] do that
/// check for you and report an overwrite as [`Error::Stale`].
///
/// **Why no `&[u8]`.** A shared reference promises Rust that the bytes do
/// not change while it lives, and the compiler may optimise on that promise
/// (read a byte twice and assume one value); a writer of another process
/// can break it at any moment, so such a reference over the ring would be
/// undefined behaviour even if the result were later discarded. The view
/// therefore never forms a reference to the ring: [`View::read`] hands its
/// closure [`Bytes`], whose accessors read through raw pointers into the
/// caller's own memory (zero-copy: only what the closure asks for is read),
/// and the copies are validated afterwards, as the C library's
/// `nerve_chan_get` validates its `memcpy`. This is the seqlock reader's
/// shape (crossbeam's `AtomicCell`, iceoryx2's samples hand out no
/// reference to memory a writer may change either).
///
/// ```no_run
/// # use nerve::{Channel, Access, Which, Wait};
/// # let mut r = Channel::open("imu", Access::Read)?;
/// let view = r.view(Which::Newest, Wait::Forever)?;
/// let sum: u64 = view.read(|bytes| bytes.iter().map(|b| b as u64).sum())?;
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

    /// Where the message's bytes start in the ring (contiguous even across
    /// the wrap, [`View::len`] of them). Getting the pointer is safe; reading
    /// through it is `unsafe` and sound only with raw-pointer reads (never a
    /// `&[u8]` or `&T` over it: see the type's documentation), while this
    /// view lives, within `len()` bytes; and what was read counts only if
    /// [`View::check`] returns `Ok` afterwards. Prefer [`View::read`].
    #[inline]
    pub fn as_ptr(&self) -> *const u8 {
        self.view.data.cast()
    }

    /// The message's bytes, for [`View::read`]'s closure.
    #[inline]
    fn bytes(&self) -> Bytes<'_> {
        Bytes {
            ptr: self.as_ptr(),
            len: self.len(),
            _view: PhantomData,
        }
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

    /// Run `f` on the message's [`Bytes`] in place, then check the view:
    /// `f`'s result, or [`Error::Stale`] if a writer overwrote the message
    /// meanwhile (then `f` may have seen torn bytes, and its result is
    /// dropped).
    #[inline]
    pub fn read<R>(&self, f: impl FnOnce(Bytes<'_>) -> R) -> Result<R> {
        let r = f(self.bytes());
        self.check()?;
        Ok(r)
    }

    /// A validated copy of the message into the front of `buf`: its length,
    /// [`Error::MsgSize`] if `buf` is shorter than the message (nothing
    /// read), or [`Error::Stale`] (then `buf`'s front holds torn bytes).
    pub fn copy_to(&self, buf: &mut [u8]) -> Result<usize> {
        let out = buf.get_mut(..self.len()).ok_or(Error::MsgSize)?;
        self.read(|b| b.copy_to(0, out))?;
        Ok(out.len())
    }

    /// A validated copy of the message appended to `v`; on
    /// [`Error::Stale`] `v` is as it was.
    pub fn append_to(&self, v: &mut Vec<u8>) -> Result<()> {
        let at = v.len();
        v.resize(at + self.len(), 0);
        self.copy_to(&mut v[at..])
            .map(|_| ())
            .inspect_err(|_| v.truncate(at))
    }

    /// A validated copy of the message.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        self.append_to(&mut v)?;
        Ok(v)
    }

    /// A validated copy of the message as a plain-old-data value;
    /// [`Error::Decode`] when the message is not `size_of::<T>()` bytes.
    pub fn read_pod<T: Pod>(&self) -> Result<T> {
        if self.len() != core::mem::size_of::<T>() {
            return Err(Error::Decode);
        }
        self.read(|b| b.read_pod_at(0))?.ok_or(Error::Decode)
    }
}

/// The bytes of a message in the ring, handed to [`View::read`]'s closure.
/// Every accessor reads through a raw pointer into the caller's own
/// memory and never lends a reference to the ring (see [`View`] for why);
/// what it returns may be torn by a concurrent writer, which the view's
/// check after the closure detects.
#[derive(Clone, Copy, Debug)]
pub struct Bytes<'v> {
    ptr: *const u8,
    len: usize,
    _view: PhantomData<&'v ()>,
}

impl Bytes<'_> {
    /// The message's size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the message is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Byte `i`, or `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u8> {
        // SAFETY: i < len, inside the mapping the view keeps; a volatile
        // read makes no promise that the byte stays put.
        (i < self.len).then(|| unsafe { self.ptr.add(i).read_volatile() })
    }

    /// Every byte in order, each read once.
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..self.len).filter_map(|i| self.get(i))
    }

    /// Copy `out.len()` bytes from `offset` into `out`; `None` (nothing
    /// copied) if they run past the end.
    #[inline]
    pub fn copy_to(&self, offset: usize, out: &mut [u8]) -> Option<()> {
        let end = offset.checked_add(out.len())?;
        if end > self.len {
            return None;
        }
        // SAFETY: [offset, end) lies inside the message, inside the
        // mapping the view keeps; out is the caller's own memory, which
        // the ring cannot overlap. A raw copy forms no reference to the
        // ring; a torn copy is detected by the view's check.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr(), out.len())
        };
        Some(())
    }

    /// A copy of the whole message.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0; self.len];
        let copied = self.copy_to(0, &mut v);
        debug_assert!(copied.is_some());
        v
    }

    /// A plain-old-data value copied from `offset` (unaligned), or `None`
    /// past the end.
    pub fn read_pod_at<T: Pod>(&self, offset: usize) -> Option<T> {
        let mut v = T::zeroed();
        self.copy_to(offset, bytemuck::bytes_of_mut(&mut v))?;
        Some(v)
    }
}
