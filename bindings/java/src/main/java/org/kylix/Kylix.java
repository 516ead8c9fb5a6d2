package org.kylix;

import com.sun.jna.CallbackThreadInitializer;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import java.util.ArrayList;
import java.util.List;

/**
 * Entry points of the Kylix bindings: join a job ({@link #init}), create user ops, plan degrees.
 *
 * <pre>{@code
 * try (Comm comm = Kylix.init("");                       // everything from kylixrun's env
 *      Plan plan = comm.config(outIdx, inIdx)) {          // configure once...
 *   for (int it = 0; it < 10; it++) {
 *     plan.reduce(outVals, inVals, Op.SUM);               // ...reduce many times
 *   }
 * }
 * }</pre>
 *
 * <p>The bindings have three layers: {@link KylixNative} is the C ABI one-to-one; {@link Comm},
 * {@link Plan} and {@link Request} own the handles and turn statuses into {@link
 * KylixException}s after checking lengths in Java; their typed overloads (arrays and NIO buffers
 * of float, double, int and long) are the idiomatic API.
 */
public final class Kylix {
  private Kylix() {}

  private static final List<UserOpCallback> OPS = new ArrayList<>(); // never freed: C keeps them

  static {
    int v = KylixNative.kylix_version();
    if (v / 10000 != KylixNative.KYLIX_VERSION / 10000 || v < KylixNative.KYLIX_VERSION) {
      throw new UnsatisfiedLinkError("libkylix " + versionString(v) + " at " + libraryPath()
          + " is older than or incompatible with these bindings ("
          + versionString(KylixNative.KYLIX_VERSION) + ")");
    }
  }

  /**
   * Joins a job ({@code kylix_init}). Collective over all ranks of the job.
   *
   * @param options {@code "key=value;key=value"}: rank, size, peers, rendezvous, degrees,
   *     replication, timeout_ms, liveness_ms, secret, compress, min_packet, threads, log. Every key is also
   *     read from the environment as {@code KYLIX_<KEY>}; the string wins. "" or null takes
   *     everything from the environment (as kylixrun, Slurm or mpirun set it).
   * @return the comm; close it when done
   * @throws ArgumentException a malformed or unknown option (the message names the key)
   * @throws NetworkException when a socket cannot be bound or a peer reached
   * @throws AuthException when a peer refuses the handshake (wrong secret)
   * @throws TimeoutException when peers do not all turn up within timeout_ms
   */
  public static Comm init(String options) {
    PointerByReference out = new PointerByReference();
    int st = KylixNative.kylix_init(options == null ? "" : options, out);
    if (st != 0) {
      throw KylixException.of(st, KylixNative.kylix_errmsg(null));
    }
    return new Comm(out.getValue());
  }

  /** {@link #init(String)} with everything from the environment. */
  public static Comm init() {
    return init("");
  }

  /** The library's version, major*10000 + minor*100 + patch. */
  public static int version() {
    return KylixNative.kylix_version();
  }

  /** The library's version as "major.minor.patch". */
  public static String versionString() {
    return versionString(version());
  }

  private static String versionString(int v) {
    return (v / 10000) + "." + (v / 100 % 100) + "." + (v % 100);
  }

  /** The file libkylix was loaded from. */
  public static String libraryPath() {
    return KylixNative.LIBRARY.getFile() == null
        ? KylixNative.LIBRARY.getName() : KylixNative.LIBRARY.getFile().getAbsolutePath();
  }

  /** A short description of a status value ({@code kylix_strerror}). */
  public static String strerror(int status) {
    return KylixNative.kylix_strerror(status);
  }

  /**
   * Registers a user-defined reduction ({@code kylix_op_create}). Local, any thread. Op ids are
   * handed out in order and collectives compare them across ranks: create the same ops in the
   * same order on every rank. Ops live until the process ends.
   *
   * @throws NoMemoryException no op ids left (at most 32768)
   */
  public static Op opCreate(UserOp fn) {
    if (fn == null) {
      throw new ArgumentException("Kylix.opCreate: fn is null", "fn");
    }
    UserOpCallback cb = new UserOpCallback(fn);
    // The library calls back on its own threads: attach them once, as daemons, and keep them
    // attached (attaching per call costs tens of microseconds).
    Native.setCallbackThreadInitializer(cb, new CallbackThreadInitializer(true, false,
        "kylix-userop"));
    synchronized (OPS) {
      IntByReference id = new IntByReference();
      int st = KylixNative.kylix_op_create(cb, null, id);
      if (st != 0) {
        throw KylixException.of(st, KylixNative.kylix_errmsg(null));
      }
      OPS.add(cb);
      return new Op(id.getValue(), "UserOp#" + id.getValue(), cb);
    }
  }

  /**
   * The butterfly degrees degrees=auto would choose ({@code kylix_plan_degrees}) for a sparse
   * vector of nFeatures features, of which a fraction density appears on each rank, over ranks
   * nodes, with power-law exponent alpha, for messages of at least minPacketBytes and
   * bytesPerValue bytes per value. Pure computation.
   *
   * @return the degree of each layer, outermost first; their product equals ranks
   */
  public static int[] planDegrees(long nFeatures, double density, int ranks, double alpha,
      long minPacketBytes, int bytesPerValue) {
    int cap = 64;
    while (true) {
      Memory m = new Memory(4L * cap);
      IntByReference layers = new IntByReference();
      int st = KylixNative.kylix_plan_degrees(nFeatures, density, ranks, alpha, minPacketBytes,
          bytesPerValue, m, cap, layers);
      if (st == 0) {
        return m.getIntArray(0, layers.getValue());
      }
      if (st == KylixNative.KYLIX_ERR_ARG && layers.getValue() > cap) {
        cap = layers.getValue();
        continue;
      }
      throw KylixException.of(st, KylixNative.kylix_errmsg(null));
    }
  }

  /** Prints the version and where the library was loaded from. */
  public static void main(String[] args) {
    System.out.println("libkylix " + versionString() + " from " + libraryPath());
  }
}
