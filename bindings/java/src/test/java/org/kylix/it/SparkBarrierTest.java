package org.kylix.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.kylix.examples.SparkBarrier;

/**
 * The Spark barrier-mode recipe without Spark or kylixrun: ranks from partition ids, peers from
 * an allGather of host:port, a secret shipped by the "driver".
 */
class SparkBarrierTest {
  @Test
  void tasksAsThreadsOfOneJvm() throws Exception {
    long t0 = System.nanoTime();
    assertEquals(0, SparkBarrier.runThreads(3), "failures among 3 thread tasks (see output)");
    System.out.printf("[kylix-java-test] %-28s %5.1f s%n", "spark sim: 3 threads",
        (System.nanoTime() - t0) / 1e9);
  }

  /**
   * Three JVMs started here (not by kylixrun), with no KYLIX_* variables and no
   * -Dkylix.library.path: the library comes from the copy bundled under linux-x86-64/ on the
   * class path, extracted by JNA.
   */
  @Test
  void tasksAsProcessesWithAFileAllGather(@TempDir Path dir) throws Exception {
    int n = 3;
    Files.writeString(dir.resolve("secret"), SparkBarrier.newSecret());
    List<Process> ps = new ArrayList<>();
    List<Path> logs = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      List<String> cmd = new ArrayList<>();
      cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      cmd.addAll(KylixRun.JVM_FLAGS);
      cmd.addAll(List.of("-cp", System.getProperty("java.class.path"),
          SparkBarrier.class.getName(), "process", Integer.toString(r), Integer.toString(n),
          dir.toString()));
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      pb.environment().keySet().removeIf(k -> k.startsWith("KYLIX_") || k.equals("LD_LIBRARY_PATH"));
      Path log = dir.resolve("task" + r + ".log");
      pb.redirectOutput(log.toFile());
      pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
      logs.add(log);
      ps.add(pb.start());
    }
    long t0 = System.nanoTime();
    StringBuilder all = new StringBuilder();
    int bad = 0;
    for (int r = 0; r < n; r++) {
      Process p = ps.get(r);
      if (!p.waitFor(KylixRun.HARD_DEADLINE_S, java.util.concurrent.TimeUnit.SECONDS)) {
        p.destroyForcibly();
        bad++;
      } else if (p.exitValue() != 0) {
        bad++;
      }
    }
    for (Path log : logs) {
      all.append(Files.readString(log));
    }
    System.out.printf("[kylix-java-test] %-28s %5.1f s%n", "spark sim: 3 processes",
        (System.nanoTime() - t0) / 1e9);
    assertEquals(0, bad, "tasks that failed or hung:\n" + all);
    assertEquals(n, all.toString().split("PASS process task", -1).length - 1, all.toString());
    String build = KylixRun.buildDir().toString();
    for (String line : all.toString().split("\n")) {
      if (line.contains("libkylix loaded from")) {
        assertFalse(line.contains(build), "want the bundled copy, not " + line);
      }
    }
  }
}
