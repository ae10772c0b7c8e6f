package io.multiworld;

import io.multiworld.swig.Multiworld;

/**
 * Library-wide queries. Any use of this package loads the JNI library first (see
 * {@link #loadNativeLibrary()}).
 */
public final class MultiWorld {
  private MultiWorld() {}

  /**
   * Loads {@code libmultiworld_jni.so} if not loaded yet: from the file or directory named by the
   * system property {@code multiworld.jni.path}, else by {@code System.loadLibrary("multiworld_jni")}
   * (the directories of {@code -Djava.library.path}).
   *
   * @throws UnsatisfiedLinkError when it cannot be found or linked
   */
  public static void loadNativeLibrary() {
    NativeLibrary.load();
  }

  /** The library's version, e.g. {@code "0.1.0"}. */
  public static String version() {
    NativeLibrary.load();
    return Multiworld.mw_version_string();
  }

  /** {major, minor, patch} of the loaded library. */
  public static int[] versionNumbers() {
    NativeLibrary.load();
    int[] major = new int[1], minor = new int[1], patch = new int[1];
    Multiworld.mw_version(major, minor, patch);
    return new int[] {major[0], minor[0], patch[0]};
  }

  /** The library's name for a status. */
  public static String statusString(Status status) {
    NativeLibrary.load();
    return Multiworld.mw_status_string(status.code());
  }

  /** Whether a backend is compiled in and usable on this machine. */
  public static boolean backendAvailable(Backend backend) {
    NativeLibrary.load();
    return Multiworld.mw_backend_available(backend.code()) != 0;
  }
}
