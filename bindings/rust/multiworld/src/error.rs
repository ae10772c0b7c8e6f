//! The error type of every fallible call.
use std::ffi::CStr;
use std::fmt;

use multiworld_sys as sys;

/// A specialised `Result` whose error is [`Error`].
///
/// ```
/// fn parse(x: &str) -> multiworld::Result<u32> {
///     x.parse().map_err(|_| multiworld::Error::InvalidArgument(format!("not a number: {}", x)))
/// }
/// assert!(parse("x").is_err());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a call into multiworld failed.
///
/// One variant per `mw_status_t` error code of the C API, each with the
/// library's message (`mw_last_error()` or the request's reason, read on the
/// thread that saw the failure). The enum is `#[non_exhaustive]`: match it
/// with a `_` arm, as the library may add codes.
///
/// ```
/// use multiworld::Error;
/// fn describe(e: &Error) -> String {
///     match e {
///         Error::WorldBroken { world, peer_rank: Some(p), .. } => {
///             format!("world {} lost rank {}", world, p)
///         }
///         Error::Timeout(_) => "still running".to_string(),
///         other => other.to_string(),
///     }
/// }
/// let e = Error::WorldBroken { world: "w".into(), peer_rank: Some(2), detail: "gone".into() };
/// assert_eq!(describe(&e), "world w lost rank 2");
/// assert_eq!(e.code(), -5);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// `MW_ERR_INVALID_ARGUMENT`: a bad argument, unknown configuration key,
    /// unparsable value, mismatched buffer length, or a receive whose size
    /// differs from the matching send (the world stays usable).
    InvalidArgument(String),
    /// `MW_ERR_NOT_FOUND`.
    NotFound(String),
    /// `MW_ERR_ALREADY_EXISTS`: e.g. a rank of a world claimed twice.
    AlreadyExists(String),
    /// `MW_ERR_TIMEOUT`: a world did not form in time, or
    /// [`Request::wait`](crate::Request::wait) gave up while the request
    /// keeps running.
    Timeout(String),
    /// `MW_ERR_WORLD_BROKEN`: a member of the world failed, hung or was cut
    /// off; the world is unusable and every pending operation on it fails.
    /// Other worlds are not affected.
    WorldBroken {
        /// The name of the broken world.
        world: String,
        /// The member blamed for the break, when the library named one.
        peer_rank: Option<usize>,
        /// The library's explanation.
        detail: String,
    },
    /// `MW_ERR_STORE`: Redis unreachable, authentication failure, bad data.
    Store(String),
    /// `MW_ERR_BACKEND`: a transport error not attributed to a peer.
    Backend(String),
    /// `MW_ERR_UNSUPPORTED`: e.g. the NCCL backend is not built in.
    Unsupported(String),
    /// `MW_ERR_CANCELLED`: the request's world was destroyed.
    Cancelled(String),
    /// `MW_ERR_INTERNAL`: a bug in the library.
    Internal(String),
    /// `MW_ERR_NO_MEMORY`.
    NoMemory(String),
    /// A status code this version of the crate does not know.
    Other {
        /// The raw `mw_status_t` value.
        code: i32,
        /// The library's explanation.
        detail: String,
    },
}

impl Error {
    /// The `mw_status_t` code of this error (always negative).
    ///
    /// ```
    /// assert_eq!(multiworld::Error::Cancelled(String::new()).code(), multiworld::sys::MW_ERR_CANCELLED);
    /// ```
    pub fn code(&self) -> i32 {
        match self {
            Error::InvalidArgument(_) => sys::MW_ERR_INVALID_ARGUMENT,
            Error::NotFound(_) => sys::MW_ERR_NOT_FOUND,
            Error::AlreadyExists(_) => sys::MW_ERR_ALREADY_EXISTS,
            Error::Timeout(_) => sys::MW_ERR_TIMEOUT,
            Error::WorldBroken { .. } => sys::MW_ERR_WORLD_BROKEN,
            Error::Store(_) => sys::MW_ERR_STORE,
            Error::Backend(_) => sys::MW_ERR_BACKEND,
            Error::Unsupported(_) => sys::MW_ERR_UNSUPPORTED,
            Error::Cancelled(_) => sys::MW_ERR_CANCELLED,
            Error::Internal(_) => sys::MW_ERR_INTERNAL,
            Error::NoMemory(_) => sys::MW_ERR_NO_MEMORY,
            Error::Other { code, .. } => *code,
        }
    }

    /// The library's message.
    ///
    /// ```
    /// let e = multiworld::Error::Timeout("no event within 5 ms".into());
    /// assert_eq!(e.detail(), "no event within 5 ms");
    /// assert_eq!(e.to_string(), "MW_ERR_TIMEOUT: no event within 5 ms");
    /// ```
    pub fn detail(&self) -> &str {
        match self {
            Error::InvalidArgument(d)
            | Error::NotFound(d)
            | Error::AlreadyExists(d)
            | Error::Timeout(d)
            | Error::Store(d)
            | Error::Backend(d)
            | Error::Unsupported(d)
            | Error::Cancelled(d)
            | Error::Internal(d)
            | Error::NoMemory(d) => d,
            Error::WorldBroken { detail, .. } | Error::Other { detail, .. } => detail,
        }
    }

    /// Builds the error for a failed `code`. `WorldBroken` gets `world` and
    /// `peer_rank` from the caller, who knows which world it was.
    pub(crate) fn from_code(
        code: sys::mw_status_t,
        detail: String,
        world: &str,
        peer_rank: Option<usize>,
    ) -> Error {
        // mw_last_error() starts with the status name; the variant says it.
        let prefix = format!("{}: ", crate::status_string(code));
        let detail = match detail.strip_prefix(&prefix) {
            Some(rest) => rest.to_string(),
            None => detail,
        };
        match code {
            sys::MW_ERR_INVALID_ARGUMENT => Error::InvalidArgument(detail),
            sys::MW_ERR_NOT_FOUND => Error::NotFound(detail),
            sys::MW_ERR_ALREADY_EXISTS => Error::AlreadyExists(detail),
            sys::MW_ERR_TIMEOUT => Error::Timeout(detail),
            sys::MW_ERR_WORLD_BROKEN => Error::WorldBroken {
                world: world.to_string(),
                peer_rank,
                detail,
            },
            sys::MW_ERR_STORE => Error::Store(detail),
            sys::MW_ERR_BACKEND => Error::Backend(detail),
            sys::MW_ERR_UNSUPPORTED => Error::Unsupported(detail),
            sys::MW_ERR_CANCELLED => Error::Cancelled(detail),
            sys::MW_ERR_INTERNAL => Error::Internal(detail),
            sys::MW_ERR_NO_MEMORY => Error::NoMemory(detail),
            code => Error::Other { code, detail },
        }
    }

    /// The error for a failed call that is not about a particular world,
    /// with `mw_last_error()` of this thread as its message.
    pub(crate) fn last(code: sys::mw_status_t) -> Error {
        Error::from_code(code, last_error(), "", None)
    }
}

impl fmt::Display for Error {
    /// `MW_ERR_<NAME>: <detail>`, plus the world and blamed rank of a
    /// `WorldBroken` error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}",
            crate::status_string(self.code()),
            self.detail()
        )?;
        if let Error::WorldBroken {
            world, peer_rank, ..
        } = self
        {
            write!(f, " [world '{}'", world)?;
            if let Some(p) = peer_rank {
                write!(f, ", peer rank {}", p)?;
            }
            f.write_str("]")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// `mw_last_error()` of the calling thread.
/// The library's explanation of a request's final `status`: empty for
/// success, else the calling thread's last error, which the call that
/// returned `status` just set.
pub(crate) fn final_detail(status: sys::mw_status_t) -> String {
    if status == sys::MW_OK {
        String::new()
    } else {
        last_error()
    }
}

pub(crate) fn last_error() -> String {
    // SAFETY: never NULL; a NUL-terminated string owned by this thread.
    unsafe { CStr::from_ptr(sys::mw_last_error()) }
        .to_string_lossy()
        .into_owned()
}
