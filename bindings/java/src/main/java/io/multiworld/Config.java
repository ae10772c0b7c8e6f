package io.multiworld;

import io.multiworld.swig.Multiworld;
import io.multiworld.swig.mw_status_t;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * An immutable set of configuration keys for a {@link Context} (the C library's string keys and
 * values; see the README's table). Keys not set keep the library's defaults, e.g. {@code redis_url}
 * comes from the environment variable {@code MW_REDIS_URL}.
 *
 * <pre>{@code
 * Config config = Config.builder()
 *     .redisUrl("unix:///run/redis.sock")
 *     .heartbeatTimeout(Duration.ofMillis(500))
 *     .build();
 * }</pre>
 */
public final class Config {
  private static final Config DEFAULTS = new Config(new LinkedHashMap<>());

  private final Map<String, String> values;

  private Config(Map<String, String> values) {
    this.values = Collections.unmodifiableMap(values);
  }

  /** No keys set: the library's defaults. */
  public static Config defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder that starts from this config's keys. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.values.putAll(values);
    return b;
  }

  /** The keys set, in the order they were set. */
  public Map<String, String> values() {
    return values;
  }

  /** A value, or null when the key is not set here. */
  public String get(String key) {
    return values.get(key);
  }

  @Override
  public String toString() {
    return "Config" + values;
  }

  /** Builds a native mw_config_t; the caller frees it with mw_config_free. */
  long toNative() {
    NativeLibrary.load();
    long[] out = new long[1];
    int st = Multiworld.mw_config_new(out);
    if (st != mw_status_t.MW_OK) throw MultiWorldException.of(st, Multiworld.mw_last_error());
    long cfg = out[0];
    for (Map.Entry<String, String> e : values.entrySet()) {
      st = Multiworld.mw_config_set(cfg, e.getKey(), e.getValue());
      if (st != mw_status_t.MW_OK) {
        String detail = Multiworld.mw_last_error();
        Multiworld.mw_config_free(cfg);
        throw MultiWorldException.of(st, detail);
      }
    }
    return cfg;
  }

  /** Collects keys; {@link #build()} checks them with the library. */
  public static final class Builder {
    private final Map<String, String> values = new LinkedHashMap<>();

    private Builder() {}

    /** Any key, as the C API spells it. */
    public Builder set(String key, String value) {
      values.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /** {@code redis://[user:pass@]host:port[/db]} or {@code unix:///path/to.sock[?db=N]}. */
    public Builder redisUrl(String url) {
      return set("redis_url", url);
    }

    /** Prefix of every Redis key and channel, 1..64 chars of {@code [A-Za-z0-9._:-]}. */
    public Builder namespace(String namespace) {
      return set("namespace", namespace);
    }

    /** How often this process refreshes its heartbeat and checks its peers'. */
    public Builder heartbeatInterval(Duration interval) {
      return set("heartbeat_interval_ms", millis(interval));
    }

    /** A peer whose heartbeat has not moved this long breaks every world shared with it. */
    public Builder heartbeatTimeout(Duration timeout) {
      return set("heartbeat_timeout_ms", millis(timeout));
    }

    /** An operation running longer breaks its world; {@link Duration#ZERO} = no limit. */
    public Builder opTimeout(Duration timeout) {
      return set("op_timeout_ms", millis(timeout));
    }

    /** IP or host name the data transport listens on. */
    public Builder bindAddress(String address) {
      return set("bind_address", address);
    }

    /** {@code off}, {@code error}, {@code warn}, {@code info} or {@code debug} (to stderr). */
    public Builder logLevel(String level) {
      return set("log_level", level);
    }

    /** The limit of one Redis round trip. */
    public Builder storeTimeout(Duration timeout) {
      return set("store_timeout_ms", millis(timeout));
    }

    /**
     * The config. Every key and value is checked by the library here.
     *
     * @throws InvalidArgumentException for an unknown key or an unparsable value
     */
    public Config build() {
      Config config = new Config(new LinkedHashMap<>(values));
      Multiworld.mw_config_free(config.toNative());
      return config;
    }

    private static String millis(Duration d) {
      if (d.isNegative()) throw new IllegalArgumentException("negative duration " + d);
      return Long.toString(d.toMillis());
    }
  }
}
