//! Errors: one variant per `NERVE_E*` code of `include/nerve/errors.h`.
use core::cell::RefCell;
use core::ffi::{c_int, CStr};
use core::fmt;
use nerve_sys as sys;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

macro_rules! errors {
    ($($(#[$doc:meta])* $variant:ident = $code:ident,)*) => {
        /// A failed nerve call: one variant per `NERVE_E*` code of the C
        /// library (the C header's comment of each call says which it
        /// returns), plus [`Error::Os`] for a system error that nerve gives
        /// no meaning of its own. [`Error::code`] gives the C code back.
        /// Its `Debug` (what `?` in `main` prints) carries the library's
        /// detail: `NoEnt (ENOENT): robot.imu: no such channel`.
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Error {
            $($(#[$doc])* $variant,)*
            /// Another system error, `-errno` (e.g. `-EIO`): the C library
            /// passes errnos it gives no meaning of its own through.
            Os(i32),
        }

        impl Error {
            /// Every variant but [`Error::Os`], in the C table's order.
            pub const ALL: &'static [Error] = &[$(Error::$variant,)*];

            /// The C code, e.g. `NERVE_EAGAIN` (negative).
            pub fn code(self) -> i32 {
                match self {
                    $(Error::$variant => sys::$code,)*
                    Error::Os(c) => c,
                }
            }

            /// The variant's name (`"NoEnt"`), as `derive(Debug)` would
            /// print it.
            fn variant(self) -> &'static str {
                match self {
                    $(Error::$variant => stringify!($variant),)*
                    Error::Os(_) => "Os",
                }
            }

            /// The variant of a negative C code.
            pub fn from_code(code: i32) -> Error {
                match code {
                    $(sys::$code => Error::$variant,)*
                    c => Error::Os(c),
                }
            }
        }
    };
}

errors! {
    /// `NERVE_EPERM`: operation not permitted (e.g. another thread holds
    /// this handle's reservation).
    Perm = NERVE_EPERM,
    /// `NERVE_ENOENT`: no such channel.
    NoEnt = NERVE_ENOENT,
    /// `NERVE_EINTR`: interrupted by a signal.
    Intr = NERVE_EINTR,
    /// `NERVE_EBADF`: bad handle.
    BadF = NERVE_EBADF,
    /// `NERVE_EAGAIN`: no new message (or the asked-for one is not there yet).
    Again = NERVE_EAGAIN,
    /// `NERVE_ENOMEM`: out of memory.
    NoMem = NERVE_ENOMEM,
    /// `NERVE_EACCES`: permission denied.
    Access = NERVE_EACCES,
    /// `NERVE_EBUSY`: a reservation is open on the handle.
    Busy = NERVE_EBUSY,
    /// `NERVE_EEXIST`: the channel (or another file) exists under the name.
    Exist = NERVE_EEXIST,
    /// `NERVE_EINVAL`: invalid argument (also: a name or metadata string
    /// holding a NUL byte, which C cannot take).
    Inval = NERVE_EINVAL,
    /// `NERVE_ENOSPC`: no space left to create the channel.
    NoSpace = NERVE_ENOSPC,
    /// `NERVE_EROFS`: the channel was opened read-only.
    ReadOnly = NERVE_EROFS,
    /// `NERVE_ENAMETOOLONG`: channel name too long.
    NameTooLong = NERVE_ENAMETOOLONG,
    /// `NERVE_ENOSYS`: not supported by this kernel.
    NoSys = NERVE_ENOSYS,
    /// `NERVE_EMSGSIZE`: the message does not fit the buffer or the ring.
    MsgSize = NERVE_EMSGSIZE,
    /// `NERVE_ETIMEDOUT`: the wait's timeout passed.
    TimedOut = NERVE_ETIMEDOUT,
    /// `NERVE_ESTALE`: a writer overwrote the message of a view.
    Stale = NERVE_ESTALE,
    /// `NERVE_ECANCELED`: the wait was cancelled ([`crate::Canceller`]).
    Canceled = NERVE_ECANCELED,
    /// `NERVE_EMFILE`: too many open files in this process.
    MFile = NERVE_EMFILE,
    /// `NERVE_ENFILE`: too many open files in the system.
    NFile = NERVE_ENFILE,
    /// `NERVE_EDEADLK`: this thread already holds the channel's writer lock
    /// (a reservation on another handle of the same channel).
    DeadLock = NERVE_EDEADLK,
    /// `NERVE_EXDEV`: the channel's writers run in another PID namespace.
    XDev = NERVE_EXDEV,
    /// `NERVE_ECORRUPT`: the channel file is corrupt.
    Corrupt = NERVE_ECORRUPT,
    /// `NERVE_EVERSION`: the channel file has an unsupported layout version.
    Version = NERVE_EVERSION,
    /// `NERVE_ENOTCHAN`: the file is not a nerve channel.
    NotChan = NERVE_ENOTCHAN,
    /// `NERVE_ETRUNC`: the channel file is truncated.
    Trunc = NERVE_ETRUNC,
    /// `NERVE_EMISMATCH`: the channel exists with another geometry or type.
    Mismatch = NERVE_EMISMATCH,
    /// `NERVE_EOVERWRITTEN`: the message asked for was overwritten.
    Overwritten = NERVE_EOVERWRITTEN,
    /// `NERVE_ELAPPED`: writers overwrote the message on every attempt.
    Lapped = NERVE_ELAPPED,
    /// `NERVE_EABI`: the channel was made by an incompatible platform or ABI.
    Abi = NERVE_EABI,
    /// `NERVE_EDECODE`: the message does not decode as the expected type
    /// (in Rust: its size is not the size of the plain-old-data type).
    Decode = NERVE_EDECODE,
    /// `NERVE_ESUPERSEDED`: a writer grew the channel; its name now names a
    /// larger successor (follow it by name).
    Superseded = NERVE_ESUPERSEDED,
}

impl Error {
    /// The code's name without the prefix, e.g. `"EAGAIN"` (the C
    /// library's `nerve_err_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: nerve_err_name returns a static NUL-terminated string for
        // any int (Thread: any).
        unsafe { static_str(sys::nerve_err_name(self.code())) }
    }

    /// A one-line English message (the C library's `nerve_strerror`).
    pub fn message(self) -> &'static str {
        // SAFETY: as name(): a static string for any int.
        unsafe { static_str(sys::nerve_strerror(self.code())) }
    }

    /// The library's detail of this thread's last failure with this code
    /// (`nerve_err_detail`): the rule a name broke, a file's mode and owner,
    /// both types of a mismatch, the sizes of a message that does not fit;
    /// [`Error::message`] where none was recorded. The detail belongs to the
    /// thread: ask on the thread that got the error, before its next nerve
    /// call (every binding and `nerve` verb shows the same text).
    pub fn detail(self) -> String {
        // SAFETY: nerve_err_detail returns a NUL-terminated string, valid
        // until this thread's next nerve call; it is copied here at once.
        unsafe { CStr::from_ptr(sys::nerve_err_detail(self.code())) }
            .to_string_lossy()
            .into_owned()
    }

    /// The errno this error stands for, where it is one (`NERVE_EAGAIN` is
    /// `-EAGAIN`); `None` for nerve's own codes (`Corrupt` ...).
    pub fn raw_os_error(self) -> Option<i32> {
        let c = self.code();
        (c > -1000).then_some(-c)
    }
}

/// # Safety
/// `p` must be a static NUL-terminated string.
unsafe fn static_str(p: *const core::ffi::c_char) -> &'static str {
    // SAFETY: the caller passes a static NUL-terminated string; the C
    // tables hold ASCII, and strerror's text is UTF-8 in the C locale.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .unwrap_or("unknown error")
}

thread_local! {
    /// The channel name a setup call of this thread failed on (open,
    /// create, unlink, ...), with its code and the library's detail then.
    /// Setup calls only: recording allocates, and the hot path's errors
    /// (`Again`, `TimedOut`, ...) never record.
    static SUBJECT: RefCell<Option<(i32, String, String)>> = const { RefCell::new(None) };
}

impl Error {
    /// This error of a setup call on channel `name`: remembered (for this
    /// thread) so that `Debug` can name the channel.
    pub(crate) fn on(self, name: &str) -> Error {
        let detail = self.detail();
        SUBJECT.with(|s| *s.borrow_mut() = Some((self.code(), name.to_owned(), detail)));
        self
    }
}

impl fmt::Debug for Error {
    /// `NoEnt (ENOENT): robot.imu: no such channel`: the variant, the C
    /// code's name, the channel (when a setup call failed on one) and the
    /// library's detail of this thread's last failure with this code, so
    /// that `fn main() -> Result<(), nerve::Error>` says what went wrong.
    /// The channel is named while that detail is still the library's
    /// latest for the code (a later failure with it replaces both).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Os(c) => write!(f, "Os({c})")?,
            _ => f.write_str(self.variant())?,
        }
        let detail = self.detail();
        let name = SUBJECT.with(|s| match &*s.borrow() {
            Some((code, name, then)) if *code == self.code() && *then == detail => {
                Some(name.clone())
            }
            _ => None,
        });
        match name {
            Some(name) => write!(f, " ({}): {name}: {detail}", self.name()),
            None => write!(f, " ({}): {detail}", self.name()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message(), self.name())
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    /// An errno-backed error keeps its errno (`ErrorKind` follows it); the
    /// others become `ErrorKind::Other` carrying the [`Error`].
    fn from(e: Error) -> std::io::Error {
        match e.raw_os_error() {
            Some(errno) => std::io::Error::from_raw_os_error(errno),
            None => std::io::Error::other(e),
        }
    }
}

/// 0 → `Ok(())`, a negative code → its `Err`.
#[inline]
pub(crate) fn check(rc: c_int) -> Result<()> {
    if rc >= 0 {
        Ok(())
    } else {
        Err(Error::from_code(rc))
    }
}
