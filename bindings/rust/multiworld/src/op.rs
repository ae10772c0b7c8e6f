//! One description of every operation, whatever memory its buffers are in,
//! checked against the world (lengths, memory kind) and issued through
//! `mw_submit` with its user data, so nothing outside the buffers is ever
//! handed to the library.
use std::mem;
use std::os::raw::c_void;
use std::ptr;

use multiworld_sys as sys;

use crate::context::to_int;
use crate::element::Dtype;
use crate::error::{last_error, Error, Result};
use crate::place::{self, Place};
use crate::request::Request;
use crate::scope::Issue;
use crate::world::{ReduceOp, World};

/// A buffer with its lifetime erased: the public operations borrow the
/// real buffer for the scope before they build one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Buf {
    addr: usize,
    /// In elements of the operation's dtype.
    len: usize,
    place: Place,
}

impl Buf {
    pub(crate) fn host<T>(s: &[T]) -> Buf {
        Buf {
            addr: s.as_ptr() as usize,
            len: s.len(),
            place: Place::Host,
        }
    }

    /// A buffer the library writes: its address comes from the exclusive
    /// borrow.
    pub(crate) fn host_mut<T>(s: &mut [T]) -> Buf {
        Buf {
            addr: s.as_mut_ptr() as usize,
            len: s.len(),
            place: Place::Host,
        }
    }

    pub(crate) fn device(addr: usize, len: usize, device: i32) -> Buf {
        Buf {
            addr,
            len,
            place: Place::Device(device),
        }
    }

    fn ptr(&self) -> *mut c_void {
        self.addr as *mut c_void
    }

    /// The address of element `index` (`index <= len`); plain arithmetic,
    /// as device memory cannot be touched from here.
    fn at(&self, index: usize, dtype: Dtype) -> *mut c_void {
        debug_assert!(index <= self.len);
        (self.addr + index * dtype.size()) as *mut c_void
    }
}

/// An operation and its buffers. The `InPlace` forms take one buffer that
/// holds `size` blocks; the other in-place forms pass one buffer twice.
pub(crate) enum Spec {
    Send {
        buf: Buf,
        dst: usize,
    },
    Recv {
        buf: Buf,
        src: usize,
    },
    Broadcast {
        buf: Buf,
        root: usize,
    },
    Allreduce {
        send: Buf,
        recv: Buf,
        op: ReduceOp,
    },
    Reduce {
        send: Buf,
        recv: Option<Buf>,
        op: ReduceOp,
        root: usize,
    },
    Allgather {
        send: Buf,
        recv: Buf,
    },
    AllgatherInPlace {
        buf: Buf,
    },
    Gather {
        send: Buf,
        recv: Option<Buf>,
        root: usize,
    },
    GatherInPlace {
        buf: Buf,
        root: usize,
    },
    Scatter {
        send: Option<Buf>,
        recv: Buf,
        root: usize,
    },
    ScatterInPlace {
        buf: Buf,
        root: usize,
    },
    ReduceScatter {
        send: Buf,
        recv: Buf,
        op: ReduceOp,
    },
    ReduceScatterInPlace {
        buf: Buf,
        op: ReduceOp,
    },
    Alltoall {
        send: Buf,
        recv: Buf,
    },
    Barrier,
}

impl Spec {
    fn name(&self) -> &'static str {
        match self {
            Spec::Send { .. } => "send",
            Spec::Recv { .. } => "recv",
            Spec::Broadcast { .. } => "broadcast",
            Spec::Allreduce { .. } => "allreduce",
            Spec::Reduce { .. } => "reduce",
            Spec::Allgather { .. } | Spec::AllgatherInPlace { .. } => "allgather",
            Spec::Gather { .. } | Spec::GatherInPlace { .. } => "gather",
            Spec::Scatter { .. } | Spec::ScatterInPlace { .. } => "scatter",
            Spec::ReduceScatter { .. } | Spec::ReduceScatterInPlace { .. } => "reduce_scatter",
            Spec::Alltoall { .. } => "alltoall",
            Spec::Barrier => "barrier",
        }
    }

    /// Every buffer given, by the name the operation's documentation uses.
    fn buffers(&self) -> Vec<(&'static str, Buf)> {
        let mut out = Vec::new();
        let mut add = |role: &'static str, b: Option<Buf>| {
            if let Some(b) = b {
                out.push((role, b));
            }
        };
        match *self {
            Spec::Send { buf, .. }
            | Spec::Recv { buf, .. }
            | Spec::Broadcast { buf, .. }
            | Spec::AllgatherInPlace { buf }
            | Spec::GatherInPlace { buf, .. }
            | Spec::ScatterInPlace { buf, .. }
            | Spec::ReduceScatterInPlace { buf, .. } => add("buf", Some(buf)),
            Spec::Allreduce { send, recv, .. }
            | Spec::Allgather { send, recv }
            | Spec::ReduceScatter { send, recv, .. }
            | Spec::Alltoall { send, recv } => {
                add("send", Some(send));
                add("recv", Some(recv));
            }
            Spec::Reduce { send, recv, .. } | Spec::Gather { send, recv, .. } => {
                add("send", Some(send));
                add("recv", recv);
            }
            Spec::Scatter { send, recv, .. } => {
                add("send", send);
                add("recv", Some(recv));
            }
            Spec::Barrier => {}
        }
        out
    }
}

/// `mw_op_t` without its size and user data.
struct Lowered {
    kind: sys::mw_op_kind_t,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    op: ReduceOp,
    peer: usize,
}

fn lowered(
    kind: sys::mw_op_kind_t,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
) -> Lowered {
    Lowered {
        kind,
        send,
        recv,
        count,
        op: ReduceOp::Sum,
        peer: 0,
    }
}

fn invalid(op: &str, why: String) -> Error {
    Error::InvalidArgument(format!("{}: {}", op, why))
}

fn check(cond: bool, op: &str, why: impl FnOnce() -> String) -> Result<()> {
    if cond {
        Ok(())
    } else {
        Err(invalid(op, why()))
    }
}

impl<'ctx> World<'ctx> {
    /// Checks `spec` and issues it (`mw_submit`) in `issue`'s scope.
    pub(crate) fn submit<'a>(
        &'a self,
        issue: Issue<'a, '_>,
        dtype: Dtype,
        spec: Spec,
    ) -> Result<Request<'a>> {
        let name = spec.name();
        for (role, buf) in spec.buffers() {
            place::check(
                self.backend(),
                self.cuda_device(),
                self.name(),
                name,
                role,
                buf.place,
            )?;
        }
        let l = self.lower(dtype, &spec)?;
        let op = sys::mw_op_t {
            size: mem::size_of::<sys::mw_op_t>(),
            kind: l.kind,
            sendbuf: l.send,
            recvbuf: l.recv,
            count: l.count,
            dtype: dtype.to_raw(),
            op: l.op.to_raw(),
            peer: to_int(l.peer, "peer rank")?,
            user_data: issue.user_data(),
        };
        let mut raw = ptr::null_mut();
        // SAFETY: a live world; `op` describes buffers the caller borrowed
        // for the scope, of the lengths checked in `lower`.
        let status = unsafe { sys::mw_submit(self.as_raw(), &op, &mut raw) };
        let shared = self.context().shared();
        if status != sys::MW_OK {
            return Err(shared.error(status, last_error(), self.name(), self.as_raw() as usize));
        }
        Ok(Request::new(
            raw,
            shared,
            issue.scope(),
            self.name_arc(),
            self.as_raw() as usize,
        ))
    }

    /// Checks lengths against the world's size and computes what
    /// `mw_submit` takes. Buffers a rank does not use are passed as NULL.
    fn lower(&self, dtype: Dtype, spec: &Spec) -> Result<Lowered> {
        let (rank, size) = (self.rank(), self.size());
        let name = spec.name();
        let blocks = |len: usize, what: &str| -> Result<usize> {
            let size = size.max(1);
            check(len % size == 0, name, || {
                format!(
                    "{} holds {} elements, not a multiple of the world size {}",
                    what, len, size
                )
            })?;
            Ok(len / size)
        };
        let on_root = |b: Option<Buf>, role: &str, want: usize| -> Result<Buf> {
            let b = b.ok_or_else(|| invalid(name, format!("the root needs a {} buffer", role)))?;
            check(b.len == want, name, || {
                format!("root's {} holds {} elements, not {}", role, b.len, want)
            })?;
            Ok(b)
        };
        let null = ptr::null_mut::<c_void>();
        Ok(match *spec {
            Spec::Send { buf, dst } => Lowered {
                peer: dst,
                ..lowered(sys::MW_OP_SEND, buf.ptr(), null, buf.len)
            },
            Spec::Recv { buf, src } => Lowered {
                peer: src,
                ..lowered(sys::MW_OP_RECV, null, buf.ptr(), buf.len)
            },
            Spec::Broadcast { buf, root } => Lowered {
                peer: root,
                ..lowered(sys::MW_OP_BROADCAST, null, buf.ptr(), buf.len)
            },
            Spec::Allreduce { send, recv, op } => {
                check(send.len == recv.len, name, || {
                    format!("send holds {} elements but recv {}", send.len, recv.len)
                })?;
                Lowered {
                    op,
                    ..lowered(sys::MW_OP_ALLREDUCE, send.ptr(), recv.ptr(), send.len)
                }
            }
            Spec::Reduce {
                send,
                recv,
                op,
                root,
            } => {
                let recv = if root == rank {
                    on_root(recv, "recv", send.len)?.ptr()
                } else {
                    null
                };
                Lowered {
                    op,
                    peer: root,
                    ..lowered(sys::MW_OP_REDUCE, send.ptr(), recv, send.len)
                }
            }
            Spec::Allgather { send, recv } => {
                check(recv.len == send.len * size, name, || {
                    format!(
                        "recv holds {} elements, not world size {} x send's {}",
                        recv.len, size, send.len
                    )
                })?;
                lowered(sys::MW_OP_ALLGATHER, send.ptr(), recv.ptr(), send.len)
            }
            Spec::AllgatherInPlace { buf } => {
                let n = blocks(buf.len, "buf")?;
                lowered(sys::MW_OP_ALLGATHER, buf.ptr(), buf.ptr(), n)
            }
            Spec::Gather { send, recv, root } => {
                let recv = if root == rank {
                    on_root(recv, "recv", send.len * size)?.ptr()
                } else {
                    null
                };
                Lowered {
                    peer: root,
                    ..lowered(sys::MW_OP_GATHER, send.ptr(), recv, send.len)
                }
            }
            Spec::GatherInPlace { buf, root } => {
                let n = blocks(buf.len, "buf")?;
                // Elsewhere than on the root the library ignores recvbuf:
                // send this rank's block.
                let (send, recv) = if root == rank {
                    (buf.ptr(), buf.ptr())
                } else {
                    (buf.at(rank * n, dtype), null)
                };
                Lowered {
                    peer: root,
                    ..lowered(sys::MW_OP_GATHER, send, recv, n)
                }
            }
            Spec::Scatter { send, recv, root } => {
                let send = if root == rank {
                    on_root(send, "send", recv.len * size)?.ptr()
                } else {
                    null
                };
                Lowered {
                    peer: root,
                    ..lowered(sys::MW_OP_SCATTER, send, recv.ptr(), recv.len)
                }
            }
            Spec::ScatterInPlace { buf, root } => {
                let n = blocks(buf.len, "buf")?;
                let (send, recv) = if root == rank {
                    (buf.ptr(), buf.ptr())
                } else {
                    (null, buf.at(rank * n, dtype))
                };
                Lowered {
                    peer: root,
                    ..lowered(sys::MW_OP_SCATTER, send, recv, n)
                }
            }
            Spec::ReduceScatter { send, recv, op } => {
                check(send.len == recv.len * size, name, || {
                    format!(
                        "send holds {} elements, not world size {} x recv's {}",
                        send.len, size, recv.len
                    )
                })?;
                Lowered {
                    op,
                    ..lowered(sys::MW_OP_REDUCE_SCATTER, send.ptr(), recv.ptr(), recv.len)
                }
            }
            Spec::ReduceScatterInPlace { buf, op } => {
                let n = blocks(buf.len, "buf")?;
                Lowered {
                    op,
                    ..lowered(sys::MW_OP_REDUCE_SCATTER, buf.ptr(), buf.ptr(), n)
                }
            }
            Spec::Alltoall { send, recv } => {
                check(send.len == recv.len, name, || {
                    format!("send holds {} elements but recv {}", send.len, recv.len)
                })?;
                let n = blocks(send.len, "send")?;
                lowered(sys::MW_OP_ALLTOALL, send.ptr(), recv.ptr(), n)
            }
            Spec::Barrier => lowered(sys::MW_OP_BARRIER, null, null, 0),
        })
    }
}
