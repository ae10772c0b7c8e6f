//! The settings one world is created with (`mw_world_params_t`).
use std::time::Duration;

use multiworld_sys as sys;

use crate::context::timeout_ms;
use crate::world::Backend;

/// How long an operation of a world may run before it breaks the world
/// (`op_timeout_ms` of `mw_world_params_t`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpTimeout {
    /// The context's `op_timeout_ms`.
    #[default]
    Context,
    /// No limit for this world, whatever the context says.
    Unlimited,
    /// This world's own limit (rounded up to a millisecond).
    Limit(Duration),
}

/// The members' agreement on a world and the settings it takes for itself,
/// for [`Context::create_world_from`](crate::Context::create_world_from).
/// Settings left alone keep the context's values.
///
/// ```no_run
/// use std::time::Duration;
/// use multiworld::{OpTimeout, WorldParams};
/// let ctx = multiworld::Context::from_env()?;
/// let params = WorldParams::new("pair", 0, 2)
///     .timeout(Some(Duration::from_secs(10)))
///     .op_timeout(OpTimeout::Limit(Duration::from_secs(5)))
///     .path_failover(false);
/// let world = ctx.create_world_from(&params)?;
/// # Ok::<(), multiworld::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldParams {
    pub(crate) name: String,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) backend: Backend,
    pub(crate) device: i32,
    pub(crate) timeout: Option<Duration>,
    op_timeout: OpTimeout,
    path_failover: Option<bool>,
}

impl WorldParams {
    /// World `name` of `size` members, this process at `rank`, on the
    /// preferred host backend, waiting for the members without limit.
    pub fn new(name: &str, rank: usize, size: usize) -> WorldParams {
        WorldParams {
            name: name.to_owned(),
            rank,
            size,
            backend: Backend::preferred_host(),
            device: 0,
            timeout: None,
            op_timeout: OpTimeout::Context,
            path_failover: None,
        }
    }

    /// The backend.
    pub fn backend(mut self, backend: Backend) -> WorldParams {
        self.backend = backend;
        self
    }

    /// The CUDA device ordinal of an NCCL world (ignored by host backends).
    pub fn device(mut self, device: i32) -> WorldParams {
        self.device = device;
        self
    }

    /// How long creation waits for the members (`None`: forever).
    pub fn timeout(mut self, timeout: Option<Duration>) -> WorldParams {
        self.timeout = timeout;
        self
    }

    /// This world's operation time limit.
    pub fn op_timeout(mut self, op_timeout: OpTimeout) -> WorldParams {
        self.op_timeout = op_timeout;
        self
    }

    /// Path failover on or off for this world. On needs the context's
    /// `path_failover` on and a UCX or NCCL world; one member's off puts
    /// the whole world on one path.
    pub fn path_failover(mut self, on: bool) -> WorldParams {
        self.path_failover = Some(on);
        self
    }

    /// The C struct, as `MW_WORLD_PARAMS_INIT` and the setters fill it;
    /// `name` and the ints checked by the caller.
    pub(crate) fn to_raw(
        &self,
        name: *const std::os::raw::c_char,
        rank: i32,
        size: i32,
    ) -> sys::mw_world_params_t {
        let op_timeout_ms = match self.op_timeout {
            OpTimeout::Context => 0,
            OpTimeout::Unlimited => -1,
            OpTimeout::Limit(d) => timeout_ms(Some(d)).max(1),
        };
        let path_failover = match self.path_failover {
            None => sys::MW_PATH_FAILOVER_DEFAULT,
            Some(true) => sys::MW_PATH_FAILOVER_ON,
            Some(false) => sys::MW_PATH_FAILOVER_OFF,
        };
        sys::mw_world_params_t {
            size: std::mem::size_of::<sys::mw_world_params_t>(),
            magic: sys::MW_WORLD_PARAMS_MAGIC,
            version: sys::MW_VERSION_CODE,
            name,
            rank,
            world_size: size,
            backend: self.backend.to_raw(),
            device: self.device,
            timeout_ms: timeout_ms(self.timeout),
            op_timeout_ms,
            path_failover,
            same_host_path: sys::MW_SAME_HOST_PATH_DEFAULT,
        }
    }
}
