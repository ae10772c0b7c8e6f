//! The configuration builder.
use std::ffi::CString;
use std::ptr;
use std::time::Duration;

use multiworld_sys as sys;

use crate::context::Context;
use crate::error::{Error, Result};

/// How much the library logs to stderr (`log_level`).
///
/// ```
/// use multiworld::{Config, LogLevel};
/// let cfg = Config::new().log_level(LogLevel::Debug);
/// assert_eq!(cfg.get("log_level"), Some("debug"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogLevel {
    /// Nothing.
    Off,
    /// Errors only.
    Error,
    /// Errors and warnings (the library's default).
    Warn,
    /// Also world formation and breaks.
    Info,
    /// Everything.
    Debug,
}

impl LogLevel {
    fn as_str(self) -> &'static str {
        match self {
            LogLevel::Off => "off",
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
        }
    }
}

/// Settings for a [`Context`], built up by value and applied by
/// [`Config::connect`].
///
/// Keys and values are the C API's strings (`mw_config_set`); the typed
/// methods are shorthands. Nothing is checked until [`connect`](Config::connect),
/// which fails with [`Error::InvalidArgument`] naming an unknown key or an
/// unparsable value. Keys left unset take the library's defaults; in
/// particular `redis_url` defaults to the `MW_REDIS_URL` environment variable
/// and `bind_address` to `MW_BIND_ADDRESS`.
///
/// ```no_run
/// use std::time::Duration;
/// use multiworld::{Config, LogLevel};
///
/// let ctx = Config::new()
///     .redis_url("unix:///tmp/redis.sock")
///     .namespace("demo")
///     .heartbeat_timeout(Duration::from_millis(500))
///     .log_level(LogLevel::Info)
///     .connect()?;
/// # Ok::<(), multiworld::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    settings: Vec<(String, String)>,
}

fn millis(d: Duration) -> String {
    // Round up, so a non-zero duration never becomes "0" (no limit).
    (d.as_nanos().saturating_add(999_999) / 1_000_000).to_string()
}

impl Config {
    /// An empty configuration: every key at the library's default.
    ///
    /// ```
    /// assert_eq!(multiworld::Config::new(), multiworld::Config::default());
    /// ```
    pub fn new() -> Config {
        Config::default()
    }

    /// Sets `key` to `value`, replacing an earlier value of the same key.
    ///
    /// ```
    /// let cfg = multiworld::Config::new().set("op_timeout_ms", "100").set("op_timeout_ms", "200");
    /// assert_eq!(cfg.get("op_timeout_ms"), Some("200"));
    /// ```
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Config {
        let key = key.into();
        let value = value.into();
        match self.settings.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.settings.push((key, value)),
        }
        self
    }

    /// The value set for `key`, if any.
    ///
    /// ```
    /// let cfg = multiworld::Config::new().namespace("a");
    /// assert_eq!(cfg.get("namespace"), Some("a"));
    /// assert_eq!(cfg.get("redis_url"), None);
    /// ```
    pub fn get(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `redis_url`: `redis://[user:pass@]host:port[/db]` or
    /// `unix:///path/to.sock[?db=N]`.
    ///
    /// ```
    /// let cfg = multiworld::Config::new().redis_url("redis://10.0.0.5:6379/2");
    /// assert_eq!(cfg.get("redis_url"), Some("redis://10.0.0.5:6379/2"));
    /// ```
    pub fn redis_url(self, url: &str) -> Config {
        self.set("redis_url", url)
    }

    /// `namespace`: the prefix of every Redis key (1..64 chars of
    /// `[A-Za-z0-9._:-]`).
    ///
    /// ```
    /// let cfg = multiworld::Config::new().namespace("serving.v2");
    /// assert_eq!(cfg.get("namespace"), Some("serving.v2"));
    /// ```
    pub fn namespace(self, namespace: &str) -> Config {
        self.set("namespace", namespace)
    }

    /// `heartbeat_interval_ms`: how often this process refreshes its
    /// heartbeat and checks its peers'.
    ///
    /// ```
    /// use std::time::Duration;
    /// let cfg = multiworld::Config::new().heartbeat_interval(Duration::from_millis(50));
    /// assert_eq!(cfg.get("heartbeat_interval_ms"), Some("50"));
    /// ```
    pub fn heartbeat_interval(self, interval: Duration) -> Config {
        self.set("heartbeat_interval_ms", millis(interval))
    }

    /// `heartbeat_timeout_ms`: a peer whose heartbeat has not moved this long
    /// breaks every world it shares with this process.
    ///
    /// ```
    /// use std::time::Duration;
    /// let cfg = multiworld::Config::new().heartbeat_timeout(Duration::from_secs(2));
    /// assert_eq!(cfg.get("heartbeat_timeout_ms"), Some("2000"));
    /// ```
    pub fn heartbeat_timeout(self, timeout: Duration) -> Config {
        self.set("heartbeat_timeout_ms", millis(timeout))
    }

    /// `op_timeout_ms`: an operation running longer breaks its world; `None`
    /// means no limit (the default).
    ///
    /// ```
    /// use std::time::Duration;
    /// let cfg = multiworld::Config::new().op_timeout(Some(Duration::from_micros(1500)));
    /// assert_eq!(cfg.get("op_timeout_ms"), Some("2")); // rounded up
    /// assert_eq!(cfg.op_timeout(None).get("op_timeout_ms"), Some("0"));
    /// ```
    pub fn op_timeout(self, timeout: Option<Duration>) -> Config {
        let value = timeout.map_or_else(|| "0".to_string(), millis);
        self.set("op_timeout_ms", value)
    }

    /// `bind_address`: the IP or host name the data transport listens on.
    ///
    /// ```
    /// let cfg = multiworld::Config::new().bind_address("127.0.0.1");
    /// assert_eq!(cfg.get("bind_address"), Some("127.0.0.1"));
    /// ```
    pub fn bind_address(self, address: &str) -> Config {
        self.set("bind_address", address)
    }

    /// `log_level`.
    ///
    /// ```
    /// let cfg = multiworld::Config::new().log_level(multiworld::LogLevel::Off);
    /// assert_eq!(cfg.get("log_level"), Some("off"));
    /// ```
    pub fn log_level(self, level: LogLevel) -> Config {
        self.set("log_level", level.as_str())
    }

    /// `store_timeout_ms`: the limit of one Redis round trip.
    ///
    /// ```
    /// use std::time::Duration;
    /// let cfg = multiworld::Config::new().store_timeout(Duration::from_millis(500));
    /// assert_eq!(cfg.get("store_timeout_ms"), Some("500"));
    /// ```
    pub fn store_timeout(self, timeout: Duration) -> Config {
        self.set("store_timeout_ms", millis(timeout))
    }

    /// Connects: creates a [`Context`] with these settings
    /// (`mw_config_new`, `mw_config_set` for each key, `mw_context_new`).
    ///
    /// Fails with [`Error::InvalidArgument`] for a bad key or value and with
    /// [`Error::Store`] when Redis cannot be reached.
    ///
    /// ```no_run
    /// let ctx = multiworld::Config::new().namespace("jobs").connect()?;
    /// # Ok::<(), multiworld::Error>(())
    /// ```
    pub fn connect(&self) -> Result<Context> {
        Context::new(self)
    }

    /// Builds the C configuration object; the caller frees it.
    pub(crate) fn to_raw(&self) -> Result<RawConfig> {
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer.
        let status = unsafe { sys::mw_config_new(&mut raw) };
        if status != sys::MW_OK {
            return Err(Error::last(status));
        }
        let cfg = RawConfig(raw);
        for (key, value) in &self.settings {
            let k = cstring(key, "configuration key")?;
            let v = cstring(value, "configuration value")?;
            // SAFETY: `cfg.0` is a live config owned by this thread.
            let status = unsafe { sys::mw_config_set(cfg.0, k.as_ptr(), v.as_ptr()) };
            if status != sys::MW_OK {
                return Err(Error::last(status));
            }
        }
        Ok(cfg)
    }
}

/// An `mw_config_t` freed on drop.
pub(crate) struct RawConfig(pub(crate) *mut sys::mw_config_t);

impl Drop for RawConfig {
    fn drop(&mut self) {
        // SAFETY: created by mw_config_new, freed once.
        unsafe { sys::mw_config_free(self.0) }
    }
}

pub(crate) fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s)
        .map_err(|_| Error::InvalidArgument(format!("{} {:?} contains a NUL byte", what, s)))
}
