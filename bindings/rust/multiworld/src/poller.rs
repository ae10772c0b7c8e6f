//! The context's poller thread: sleeps on `mw_context_fd` until the
//! library queues a completion or an event, then drains both queues
//! ([`Shared::drain`]). It costs no CPU while idle and adds no delay: there
//! is no timed loop. Dropping the context stops it through a socket pair,
//! because `mw_context_wake` wakes blocked `mw_poll` calls, not the fd.
use std::io::{self, Write};
use std::os::raw::{c_int, c_short, c_ulong};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use multiworld_sys as sys;

use crate::error::{Error, Result};
use crate::shared::Shared;

#[repr(C)]
struct PollFd {
    fd: c_int,
    events: c_short,
    revents: c_short,
}

const POLLIN: c_short = 0x001;

extern "C" {
    // poll(2) from the C library that std links; std itself has no poll.
    fn poll(fds: *mut PollFd, nfds: c_ulong, timeout: c_int) -> c_int;
}

pub(crate) struct Poller {
    thread: JoinHandle<()>,
    stop: UnixStream,
}

impl Poller {
    /// Starts the thread for the context behind `shared`.
    pub(crate) fn start(shared: Arc<Shared>) -> Result<Poller> {
        let mut fd: c_int = -1;
        // SAFETY: a live context (the thread is stopped before it is freed);
        // a valid out-pointer.
        let status = unsafe { sys::mw_context_fd(shared.ctx(), &mut fd) };
        if status != sys::MW_OK {
            return Err(Error::last(status));
        }
        let (stop, stopped) = UnixStream::pair()
            .map_err(|e| Error::Internal(format!("socket pair for the poller thread: {}", e)))?;
        let thread = thread::Builder::new()
            .name("mw-rs-poller".to_string())
            .spawn(move || run(&shared, fd, &stopped))
            .map_err(|e| Error::Internal(format!("cannot start the poller thread: {}", e)))?;
        Ok(Poller { thread, stop })
    }

    /// Stops the thread and waits for it.
    pub(crate) fn stop(mut self) {
        // One byte makes the other end readable for good; a full buffer
        // (impossible with one writer of one byte) would mean it already is.
        let _ = self.stop.write_all(&[1]);
        let _ = self.thread.join();
    }
}

fn run(shared: &Shared, context_fd: RawFd, stopped: &UnixStream) {
    let mut fds = [
        PollFd {
            fd: context_fd,
            events: POLLIN,
            revents: 0,
        },
        PollFd {
            fd: stopped.as_raw_fd(),
            events: POLLIN,
            revents: 0,
        },
    ];
    loop {
        for f in &mut fds {
            f.revents = 0;
        }
        // SAFETY: `fds` holds two initialised entries; -1 = no timeout.
        let n = unsafe { poll(fds.as_mut_ptr(), fds.len() as c_ulong, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return; // no other error is possible with two valid fds
        }
        if fds[1].revents != 0 {
            return;
        }
        if fds[0].revents != 0 {
            shared.drain();
        }
    }
}
