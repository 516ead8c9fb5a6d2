package org.kylix;

import com.sun.jna.NativeLibrary;
import java.io.File;
import java.net.URISyntaxException;
import java.security.CodeSource;

/**
 * Finds libkylix.so, in this order:
 *
 * <ol>
 *   <li>the system property {@code kylix.library.path}: a directory holding libkylix.so, or the
 *       file itself (an error if it is not there: an explicit choice is never second-guessed);
 *   <li>the directory of the jar these classes were loaded from;
 *   <li>JNA's own search for "kylix": {@code jna.library.path}, the system library path and
 *       {@code LD_LIBRARY_PATH}, then the copy bundled in the jar under {@code linux-x86-64/},
 *       which JNA extracts to a temporary file.
 * </ol>
 */
final class NativeLoader {
  static final String PROPERTY = "kylix.library.path";
  static final String FILE_NAME = "libkylix.so";

  private NativeLoader() {}

  static NativeLibrary load() {
    String explicit = System.getProperty(PROPERTY);
    if (explicit != null && !explicit.isEmpty()) {
      File f = new File(explicit);
      if (f.isDirectory()) {
        f = new File(f, FILE_NAME);
      }
      if (!f.isFile()) {
        throw new UnsatisfiedLinkError(
            "-D" + PROPERTY + "=" + explicit + ": no " + FILE_NAME + " there (give the directory"
                + " that holds it, or the file)");
      }
      return NativeLibrary.getInstance(f.getAbsolutePath());
    }
    File nextToJar = nextToJar();
    if (nextToJar != null) {
      return NativeLibrary.getInstance(nextToJar.getAbsolutePath());
    }
    try {
      return NativeLibrary.getInstance("kylix");
    } catch (UnsatisfiedLinkError e) {
      UnsatisfiedLinkError u = new UnsatisfiedLinkError(
          "cannot find " + FILE_NAME + ": set -D" + PROPERTY + "=<dir of libkylix.so>, put it next"
              + " to the kylix jar, on jna.library.path or LD_LIBRARY_PATH, or use a jar built"
              + " after `make` (which bundles it). JNA said: " + e.getMessage());
      u.initCause(e);
      throw u;
    }
  }

  /** libkylix.so in the directory of the jar holding this class, or null. */
  private static File nextToJar() {
    try {
      CodeSource cs = NativeLoader.class.getProtectionDomain().getCodeSource();
      if (cs == null || cs.getLocation() == null) {
        return null;
      }
      File loc = new File(cs.getLocation().toURI());
      if (!loc.isFile()) { // a classes directory, not a jar
        return null;
      }
      File f = new File(loc.getParentFile(), FILE_NAME);
      return f.isFile() ? f : null;
    } catch (URISyntaxException | SecurityException | IllegalArgumentException e) {
      return null;
    }
  }
}
