//! Where a buffer's memory is, and whether a world's backend moves it.
use crate::error::{Error, Result};
use crate::world::Backend;

/// Where a buffer's memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Host,
    /// CUDA device memory of this ordinal.
    Device(i32),
}

/// A buffer (`role` of operation `op`) must be in the memory that `world`'s
/// backend moves: host memory for Gloo and UCX, memory of the world's
/// CUDA `device` for NCCL. The error says which and why.
pub(crate) fn check(
    backend: Backend,
    device: i32,
    world: &str,
    op: &str,
    role: &str,
    place: Place,
) -> Result<()> {
    let why = match (backend, place) {
        (Backend::Nccl, Place::Host) => format!(
            "{} is host memory, but '{}' is an NCCL world, which moves device memory of CUDA \
             device {}; pass a DeviceSlice (the World::device_* operations)",
            role, world, device
        ),
        (Backend::Nccl, Place::Device(d)) if d != device => format!(
            "{} is on CUDA device {}, but NCCL world '{}' uses device {}",
            role, d, world, device
        ),
        (Backend::Gloo, Place::Device(d)) | (Backend::Ucx, Place::Device(d)) => format!(
            "{} is device memory (CUDA device {}), but '{}' is a {:?} world, which moves host \
             memory; device memory needs an NCCL world",
            role, d, world, backend
        ),
        _ => return Ok(()),
    };
    Err(Error::InvalidArgument(format!("{}: {}", op, why)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(r: Result<()>) -> String {
        match r {
            Err(Error::InvalidArgument(d)) => d,
            other => panic!("expected InvalidArgument, got {:?}", other),
        }
    }

    #[test]
    fn each_backend_takes_its_own_memory() {
        for b in [Backend::Gloo, Backend::Ucx] {
            check(b, 0, "w", "send", "buf", Place::Host).unwrap();
        }
        check(Backend::Nccl, 1, "w", "send", "buf", Place::Device(1)).unwrap();
    }

    #[test]
    fn the_error_names_the_buffer_the_world_and_the_memory_it_needs() {
        let d = refused(check(
            Backend::Nccl,
            0,
            "gpu",
            "allreduce",
            "send",
            Place::Host,
        ));
        assert!(d.starts_with("allreduce: send is host memory"), "{}", d);
        assert!(d.contains("'gpu' is an NCCL world"), "{}", d);
        assert!(d.contains("CUDA device 0"), "{}", d);
        let d = refused(check(
            Backend::Nccl,
            0,
            "gpu",
            "recv",
            "buf",
            Place::Device(2),
        ));
        assert_eq!(
            d,
            "recv: buf is on CUDA device 2, but NCCL world 'gpu' uses device 0"
        );
        let d = refused(check(
            Backend::Ucx,
            0,
            "cpu",
            "gather",
            "recv",
            Place::Device(0),
        ));
        assert!(d.contains("recv is device memory (CUDA device 0)"), "{}", d);
        assert!(d.contains("'cpu' is a Ucx world"), "{}", d);
    }
}
