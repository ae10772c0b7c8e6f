//! Events: world breaks, data path changes and Redis outages.
use std::os::raw::c_char;

use multiworld_sys as sys;

/// Something that happened to this process's worlds or to its Redis
/// connection, in the order it happened ([`Context::next_event`](crate::Context::next_event)).
///
/// ```no_run
/// # let ctx = multiworld::Context::from_env()?;
/// # let world = ctx.create_world("w", 0, 1, None)?;
/// use std::time::Duration;
/// if let Some(multiworld::Event::StoreDown { detail }) = ctx.next_event(Some(Duration::ZERO))? {
///     eprintln!("redis is down: {}", detail);
/// }
/// # Ok::<(), multiworld::Error>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `MW_EVENT_WORLD_BROKEN`: a world of this context broke.
    WorldBroken {
        /// The world's name.
        world: String,
        /// The member blamed, when known.
        peer_rank: Option<usize>,
        /// The library's explanation.
        detail: String,
    },
    /// `MW_EVENT_STORE_DOWN`: Redis became unreachable.
    StoreDown {
        /// The library's explanation.
        detail: String,
    },
    /// `MW_EVENT_STORE_UP`: Redis is reachable again.
    StoreUp {
        /// The library's explanation.
        detail: String,
    },
    /// `MW_EVENT_PATH_DOWN`: a data path to a member failed; the world
    /// lives on over its other paths.
    PathDown {
        /// The world's name.
        world: String,
        /// The member the path leads to, when known.
        peer_rank: Option<usize>,
        /// The library's explanation.
        detail: String,
    },
    /// `MW_EVENT_PATH_UP`: that path carries traffic again.
    PathUp {
        /// The world's name.
        world: String,
        /// The member the path leads to, when known.
        peer_rank: Option<usize>,
        /// The library's explanation.
        detail: String,
    },
    /// An event type this version of the crate does not know.
    Other {
        /// The raw `mw_event_type_t`.
        kind: u32,
        /// The world's name, if any.
        world: String,
        /// The library's explanation.
        detail: String,
    },
}

impl Event {
    pub(crate) fn from_raw(raw: &sys::mw_event_t) -> Event {
        let world = c_chars(&raw.world_name);
        let detail = c_chars(&raw.detail);
        let peer_rank = if raw.peer_rank >= 0 {
            Some(raw.peer_rank as usize)
        } else {
            None
        };
        match raw.type_ {
            sys::MW_EVENT_WORLD_BROKEN => Event::WorldBroken {
                world,
                peer_rank,
                detail,
            },
            sys::MW_EVENT_STORE_DOWN => Event::StoreDown { detail },
            sys::MW_EVENT_STORE_UP => Event::StoreUp { detail },
            sys::MW_EVENT_PATH_DOWN => Event::PathDown {
                world,
                peer_rank,
                detail,
            },
            sys::MW_EVENT_PATH_UP => Event::PathUp {
                world,
                peer_rank,
                detail,
            },
            kind => Event::Other {
                kind,
                world,
                detail,
            },
        }
    }
}

fn c_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
