//! Device memory: refused by host worlds with a clear error (no GPU
//! needed), and moved by NCCL worlds with values checked (needs the `cuda`
//! feature, the NCCL backend and a GPU; skipped with the reason otherwise).
mod common;

use common::{context, skip, unique, worker_main, Body, FORM_TIMEOUT};
use multiworld::{scope, Backend, DeviceSlice, DeviceSliceMut, Error, ReduceOp, World};

fn body_for(test: &str) -> Body {
    match test {
        #[cfg(feature = "cuda")]
        "device_p2p" => gpu::p2p_body,
        other => panic!("unknown worker test {}", other),
    }
}

/// The entry point of worker processes; does nothing in a normal test run.
#[test]
fn worker_process() {
    worker_main(body_for);
}

fn assert_refused(e: Error, words: &[&str]) {
    match &e {
        Error::InvalidArgument(d) => {
            for w in words {
                assert!(d.contains(w), "{:?} does not say {:?}", d, w);
            }
        }
        other => panic!("expected InvalidArgument, got {:?}", other),
    }
}

#[test]
fn device_memory_on_a_host_world_is_refused() {
    let ctx = context();
    let w = ctx
        .create_world_with(&unique("hostonly"), 0, 1, Backend::Gloo, 0, FORM_TIMEOUT)
        .unwrap();
    // Addresses that are never dereferenced: the binding refuses them before
    // anything reaches the library.
    let (mut a, mut b) = ([0f32; 4], [0f32; 4]);
    // SAFETY: see above; the views are only checked, never used.
    let send = unsafe { DeviceSlice::from_raw_parts(a.as_mut_ptr(), 4, 0) };
    let recv = unsafe { DeviceSliceMut::from_raw_parts_mut(b.as_mut_ptr(), 4, 0) };
    assert_eq!((send.len(), send.byte_len(), send.device()), (4, 16, 0));
    let e = scope(|s| w.device_send(s, send, 0).map(|_| ())).unwrap_err();
    assert_refused(
        e,
        &[
            "send:",
            "device memory",
            "CUDA device 0",
            "Gloo",
            "NCCL world",
        ],
    );
    let e = scope(|s| w.device_allreduce(s, send, recv, ReduceOp::Sum).map(|_| ())).unwrap_err();
    assert_refused(e, &["allreduce:", "device memory"]);
    // Nothing was issued: the world is healthy and a host operation runs.
    let mut c = [1f32; 4];
    scope(|s| w.allreduce_in_place(s, &mut c, ReduceOp::Sum)?.wait(None)).unwrap();
    assert_eq!(c, [1.0; 4]);
}

/// The NCCL world this process can form alone, or why not.
fn nccl_world<'c>(ctx: &'c multiworld::Context, test: &str) -> Option<World<'c>> {
    if !multiworld::backend_available(Backend::Nccl) {
        skip(
            test,
            "mw_backend_available(MW_BACKEND_NCCL) is 0 (no NCCL plugin, CUDA driver or GPU here)",
        );
        return None;
    }
    Some(
        ctx.create_world_with(&unique(test), 0, 1, Backend::Nccl, 0, FORM_TIMEOUT)
            .unwrap(),
    )
}

#[test]
fn host_memory_on_an_nccl_world_is_refused() {
    let ctx = context();
    let w = match nccl_world(&ctx, "nccl_host_refused") {
        Some(w) => w,
        None => return,
    };
    let x = [1u8; 8];
    let e = scope(|s| w.send(s, &x, 0).map(|_| ())).unwrap_err();
    assert_refused(
        e,
        &[
            "send:",
            "host memory",
            "NCCL world",
            "device memory of CUDA device 0",
        ],
    );
    let mut y = [0u8; 8];
    let e = scope(|s| w.allreduce(s, &x, &mut y, ReduceOp::Sum).map(|_| ())).unwrap_err();
    assert_refused(e, &["allreduce:", "host memory"]);
}

#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use common::spmd;
    use multiworld::DeviceBuffer;

    #[test]
    fn cuda_without_a_device_fails_clearly() {
        match multiworld::cuda_device_count() {
            Ok(n) if n > 0 => {
                skip(
                    "cuda_without_a_device_fails_clearly",
                    &format!("{} CUDA devices here", n),
                );
            }
            found => {
                println!("cuda_device_count: {:?}", found);
                let e = DeviceBuffer::<f32>::alloc(16, 0).unwrap_err();
                assert!(
                    matches!(e, Error::Unsupported(_) | Error::Backend(_)),
                    "{:?}",
                    e
                );
                assert!(e.to_string().to_lowercase().contains("cuda"), "{}", e);
            }
        }
    }

    fn host<T: multiworld::Element>(b: &DeviceBuffer<T>) -> Vec<T> {
        b.to_vec().unwrap()
    }

    #[test]
    fn nccl_collectives_on_device_memory() {
        let ctx = context();
        let w = match nccl_world(&ctx, "nccl_collectives") {
            Some(w) => w,
            None => return,
        };
        assert_eq!((w.backend(), w.cuda_device()), (Backend::Nccl, 0));
        let x: Vec<f32> = (0..1024).map(|i| i as f32).collect();
        let dx = DeviceBuffer::from_host(&x, 0).unwrap();
        assert_eq!((dx.len(), dx.byte_len(), dx.device()), (1024, 4096, 0));

        // Completion means ready on the device: read straight after wait.
        let mut sum = DeviceBuffer::<f32>::zeroed(1024, 0).unwrap();
        scope(|s| {
            w.device_allreduce(s, &dx, &mut sum, ReduceOp::Sum)?
                .wait(None)
        })
        .unwrap();
        assert_eq!(host(&sum), x);

        let mut inplace = DeviceBuffer::from_host(&x, 0).unwrap();
        scope(|s| {
            w.device_allreduce_in_place(s, &mut inplace, ReduceOp::Max)?
                .wait(None)
        })
        .unwrap();
        assert_eq!(host(&inplace), x);

        let mut b = DeviceBuffer::from_host(&[3i64, 4, 5], 0).unwrap();
        scope(|s| w.device_broadcast(s, &mut b, 0)?.wait(None)).unwrap();
        assert_eq!(host(&b), [3, 4, 5]);

        let mut r = DeviceBuffer::<f32>::zeroed(1024, 0).unwrap();
        scope(|s| {
            w.device_reduce(s, &dx, Some(r.as_mut_slice()), ReduceOp::Sum, 0)?
                .wait(None)
        })
        .unwrap();
        assert_eq!(host(&r), x);

        let mut all = DeviceBuffer::<f32>::zeroed(1024, 0).unwrap();
        scope(|s| w.device_allgather(s, &dx, &mut all)?.wait(None)).unwrap();
        assert_eq!(host(&all), x);
        let mut g = DeviceBuffer::<f32>::zeroed(1024, 0).unwrap();
        scope(|s| {
            w.device_gather(s, &dx, Some(g.as_mut_slice()), 0)?
                .wait(None)
        })
        .unwrap();
        assert_eq!(host(&g), x);
        let mut sc = DeviceBuffer::<f32>::zeroed(1024, 0).unwrap();
        scope(|s| {
            w.device_scatter(s, Some(dx.as_slice()), &mut sc, 0)?
                .wait(None)
        })
        .unwrap();
        assert_eq!(host(&sc), x);
        let mut rs = DeviceBuffer::<f32>::zeroed(1024, 0).unwrap();
        scope(|s| {
            w.device_reduce_scatter(s, &dx, &mut rs, ReduceOp::Sum)?
                .wait(None)
        })
        .unwrap();
        assert_eq!(host(&rs), x);
        let mut a2a = DeviceBuffer::<f32>::zeroed(1024, 0).unwrap();
        scope(|s| w.device_alltoall(s, &dx, &mut a2a)?.wait(None)).unwrap();
        assert_eq!(host(&a2a), x);

        // A view of part of a buffer, and user data at issue time.
        let (front, _) = dx.as_slice().split_at(16);
        let mut part = DeviceBuffer::<f32>::zeroed(16, 0).unwrap();
        let ud = scope(|s| -> multiworld::Result<u64> {
            let req = w.device_allreduce(s.with_user_data(42), front, &mut part, ReduceOp::Sum)?;
            req.wait(None)?;
            Ok(req.user_data())
        })
        .unwrap();
        assert_eq!((ud, host(&part)), (42, x[..16].to_vec()));

        // Lengths are checked as on the host; another device is refused.
        let e = scope(|s| {
            w.device_allreduce(s, &dx, &mut part, ReduceOp::Sum)
                .map(|_| ())
        })
        .unwrap_err();
        assert_refused(e, &["allreduce:", "1024", "16"]);
        // SAFETY: refused before use, as in device_memory_on_a_host_world_is_refused.
        let elsewhere = unsafe { DeviceSlice::from_raw_parts(dx.as_ptr(), 1024, 1) };
        let e = scope(|s| w.device_send(s, elsewhere, 0).map(|_| ())).unwrap_err();
        assert_refused(e, &["send:", "CUDA device 1", "uses device 0"]);
    }

    /// Rank 0 sends device memory to rank 1, which checks it; then both
    /// allreduce the same values, which doubles them.
    pub fn p2p_body(w: &World<'_>) {
        let dev = w.cuda_device();
        let x: Vec<u32> = (0..4096).collect();
        if w.rank() == 0 {
            let d = DeviceBuffer::from_host(&x, dev).unwrap();
            scope(|s| w.device_send(s, &d, 1)?.wait(None)).unwrap();
        } else {
            let mut d = DeviceBuffer::<u32>::zeroed(x.len(), dev).unwrap();
            scope(|s| w.device_recv(s, &mut d, 0)?.wait(None)).unwrap();
            assert_eq!(d.to_vec().unwrap(), x);
        }
        let mut v = DeviceBuffer::from_host(&x, dev).unwrap();
        scope(|s| {
            w.device_allreduce_in_place(s, &mut v, ReduceOp::Sum)?
                .wait(None)
        })
        .unwrap();
        let twice: Vec<u32> = x.iter().map(|v| 2 * v).collect();
        assert_eq!(v.to_vec().unwrap(), twice);
        scope(|s| w.barrier(s)?.wait(None)).unwrap();
    }

    #[test]
    fn nccl_send_recv_device_memory_two_processes() {
        if !multiworld::backend_available(Backend::Nccl) {
            skip(
                "nccl_send_recv_device_memory_two_processes",
                "mw_backend_available(MW_BACKEND_NCCL) is 0",
            );
            return;
        }
        match multiworld::cuda_device_count() {
            Ok(n) if n >= 2 => spmd("device_p2p", 2, Backend::Nccl, body_for),
            Ok(1) => {
                // Both ranks on device 0 (see common::nccl_host_env).
                std::env::set_var(common::SHARE_GPU_ENV, "1");
                spmd("device_p2p", 2, Backend::Nccl, body_for)
            }
            found => skip(
                "nccl_send_recv_device_memory_two_processes",
                &format!("no CUDA device ({:?})", found),
            ),
        }
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn gpu_tests_need_the_cuda_feature() {
    skip(
        "the GPU tests of device.rs",
        "built without the `cuda` feature (cargo test --features multiworld/cuda)",
    );
}
