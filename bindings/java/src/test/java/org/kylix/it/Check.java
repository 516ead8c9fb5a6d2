package org.kylix.it;

import java.util.Arrays;
import java.util.Objects;

/**
 * The output protocol of the worker programs, as in tests/harness_test.go: one line per result,
 * {@code r<rank> PASS|FAIL|INFO <text>}, then {@code r<rank> DONE fails=<n>}. The JUnit side
 * asserts the exit code and these lines. A watchdog ends a stuck worker.
 */
final class Check {
  final int rank;
  int fails;
  int passes;

  Check(int rank, int watchdogSeconds) {
    this.rank = rank;
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(watchdogSeconds * 1000L);
      } catch (InterruptedException e) {
        return;
      }
      System.out.println("r" + rank + " FAIL watchdog: still running after " + watchdogSeconds
          + " s");
      System.out.flush();
      Runtime.getRuntime().halt(3);
    }, "watchdog");
    t.setDaemon(true);
    t.start();
  }

  void pass(String what) {
    passes++;
    System.out.println("r" + rank + " PASS " + what);
  }

  void fail(String what) {
    fails++;
    System.out.println("r" + rank + " FAIL " + what);
  }

  void info(String what) {
    System.out.println("r" + rank + " INFO " + what);
  }

  boolean expect(boolean ok, String what) {
    if (ok) {
      pass(what);
    } else {
      fail(what);
    }
    return ok;
  }

  void equal(Object want, Object got, String what) {
    boolean ok = Objects.deepEquals(want, got);
    if (ok) {
      pass(what);
    } else {
      fail(what + ": want " + str(want) + ", got " + str(got));
    }
  }

  static String str(Object o) {
    if (o instanceof double[]) {
      return clip(Arrays.toString((double[]) o));
    }
    if (o instanceof float[]) {
      return clip(Arrays.toString((float[]) o));
    }
    if (o instanceof long[]) {
      return clip(Arrays.toString((long[]) o));
    }
    if (o instanceof int[]) {
      return clip(Arrays.toString((int[]) o));
    }
    return String.valueOf(o);
  }

  private static String clip(String s) {
    return s.length() > 300 ? s.substring(0, 300) + "...]" : s;
  }

  /** Runs a step; an unexpected exception is a failure, not a crash. */
  void step(String what, ThrowingRunnable r) {
    try {
      r.run();
    } catch (Throwable t) {
      fail(what + ": unexpected " + t);
      t.printStackTrace(System.out);
    }
  }

  /** Expects r to throw an exception of class want whose message contains every word. */
  <T extends Throwable> T expectThrow(Class<T> want, String what, ThrowingRunnable r,
      String... words) {
    try {
      r.run();
      fail(what + ": no exception, want " + want.getSimpleName());
      return null;
    } catch (Throwable t) {
      if (!want.isInstance(t)) {
        fail(what + ": got " + t + ", want " + want.getSimpleName());
        return null;
      }
      String m = String.valueOf(t.getMessage());
      for (String w : words) {
        if (!m.contains(w)) {
          fail(what + ": message \"" + m + "\" lacks \"" + w + "\"");
          return null;
        }
      }
      pass(what + " -> " + t.getClass().getSimpleName() + ": " + clip(m));
      return want.cast(t);
    }
  }

  /** Prints DONE and exits: 0 when nothing failed. */
  void done() {
    System.out.println("r" + rank + " DONE fails=" + fails + " passes=" + passes);
    System.out.flush();
    System.exit(fails == 0 ? 0 : 1);
  }

  interface ThrowingRunnable {
    void run() throws Exception;
  }
}
