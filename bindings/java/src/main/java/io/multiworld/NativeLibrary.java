package io.multiworld;

import java.io.File;

/**
 * Loads the JNI library, {@code libmultiworld_jni.so}, once per class loader.
 *
 * <p>Where it is looked for, in this order:
 * <ol>
 *   <li>the system property {@value #PATH_PROPERTY}: the library file itself, or a directory that
 *       holds it;</li>
 *   <li>{@code System.loadLibrary("multiworld_jni")}, i.e. the directories of
 *       {@code -Djava.library.path} (then the platform's defaults).</li>
 * </ol>
 * {@code libmultiworld_jni.so} finds {@code libmultiworld.so.0} through its run path: its own
 * directory ({@code $ORIGIN}) first, then the build tree it was linked in; an installed
 * {@code libmultiworld.so.0} on the system search path works too.
 */
final class NativeLibrary {
  static final String PATH_PROPERTY = "multiworld.jni.path";
  static final String NAME = "multiworld_jni";

  private static boolean loaded;

  private NativeLibrary() {}

  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty(PATH_PROPERTY);
    try {
      if (path != null && !path.isEmpty()) {
        File file = new File(path);
        if (file.isDirectory()) file = new File(file, System.mapLibraryName(NAME));
        System.load(file.getAbsolutePath());
      } else {
        System.loadLibrary(NAME);
      }
    } catch (UnsatisfiedLinkError e) {
      UnsatisfiedLinkError error = new UnsatisfiedLinkError(
          "cannot load the multiworld JNI library: " + e.getMessage()
              + " (run with -Djava.library.path=<directory of " + System.mapLibraryName(NAME)
              + "> or -D" + PATH_PROPERTY + "=<its path>)");
      error.initCause(e);
      throw error;
    }
    loaded = true;
  }
}
