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
        /// Which path, between which addresses, and what was outstanding.
        path: DataPath,
        /// The library's explanation, for people.
        detail: String,
    },
    /// `MW_EVENT_PATH_UP`: that path carries traffic again.
    PathUp {
        /// The world's name.
        world: String,
        /// The member the path leads to, when known.
        peer_rank: Option<usize>,
        /// Which path, between which addresses, and what was outstanding.
        path: DataPath,
        /// The library's explanation, for people.
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

/// What a path event says of the data path to its peer (the path fields of
/// `mw_event_info_t`).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataPath {
    /// The path's place in the context's `data_addresses`, from 0.
    pub index: usize,
    /// This member's address of the path.
    pub local_address: String,
    /// The peer's address of the path.
    pub remote_address: String,
    /// Messages this member held for the peer, sent and not yet
    /// acknowledged, when the path changed.
    pub outstanding_messages: u64,
    /// Their payload bytes.
    pub outstanding_bytes: u64,
}

impl DataPath {
    fn from_raw(raw: &sys::mw_event_info_t) -> DataPath {
        DataPath {
            index: raw.path_index.max(0) as usize,
            local_address: c_chars(&raw.local_address),
            remote_address: c_chars(&raw.remote_address),
            outstanding_messages: raw.outstanding_messages,
            outstanding_bytes: raw.outstanding_bytes,
        }
    }
}

impl Event {
    pub(crate) fn from_raw(raw: &sys::mw_event_info_t) -> Event {
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
                path: DataPath::from_raw(raw),
                detail,
            },
            sys::MW_EVENT_PATH_UP => Event::PathUp {
                world,
                peer_rank,
                path: DataPath::from_raw(raw),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chars<const N: usize>(s: &str) -> [c_char; N] {
        let mut out = [0 as c_char; N];
        for (o, b) in out.iter_mut().zip(s.bytes()) {
            *o = b as c_char;
        }
        out
    }

    #[test]
    fn path_events_carry_their_path_as_fields() {
        // SAFETY: plain data; all-zero is a valid value.
        let mut raw: sys::mw_event_info_t = unsafe { std::mem::zeroed() };
        raw.size = std::mem::size_of::<sys::mw_event_info_t>();
        raw.type_ = sys::MW_EVENT_PATH_DOWN;
        raw.world_name = chars("w");
        raw.peer_rank = 1;
        raw.path_index = 1;
        raw.local_address = chars("10.71.2.1");
        raw.remote_address = chars("10.71.2.2");
        raw.outstanding_messages = 4;
        raw.outstanding_bytes = 262144;
        match Event::from_raw(&raw) {
            Event::PathDown {
                world,
                peer_rank,
                path,
                ..
            } => {
                assert_eq!((world.as_str(), peer_rank), ("w", Some(1)));
                assert_eq!(
                    path,
                    DataPath {
                        index: 1,
                        local_address: "10.71.2.1".into(),
                        remote_address: "10.71.2.2".into(),
                        outstanding_messages: 4,
                        outstanding_bytes: 262144,
                    }
                );
            }
            other => panic!("{:?}", other),
        }
    }
}
