package org.kylix.it;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs a worker class as a multi-process job: {@code kylixrun -n N --tag-output --job-timeout
 * 120 [flags] -- java -cp <this JVM's class path> <class> args}, bounded a second time here (a
 * hard deadline that stops the launcher and its ranks), and parses the workers' result lines.
 */
final class KylixRun {
  static final int JOB_TIMEOUT_S = 120;
  static final long HARD_DEADLINE_S = 150;
  private static final Pattern LINE =
      Pattern.compile("\\br(-?\\d+) (PASS|FAIL|INFO|DONE) (.*)$");

  /** JVM flags for the ranks: start-up is the cost, so favour it. */
  static final List<String> JVM_FLAGS = List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
      "-Xmx256m", "-XX:-UsePerfData", "-Xshare:auto");

  /**
   * The directory with libkylix.so and kylixrun: -Dkylix.build (the pom sets it from
   * $KYLIX_BUILD, or to the repository's build/), else $KYLIX_BUILD, else ../../build.
   */
  static Path buildDir() {
    String d = System.getProperty("kylix.build");
    if (d == null || d.isEmpty()) {
      d = System.getenv("KYLIX_BUILD");
    }
    if (d == null || d.isEmpty()) {
      d = "../../build";
    }
    Path p = Path.of(d).toAbsolutePath().normalize();
    for (String f : new String[] {"libkylix.so", "kylixrun"}) {
      if (!Files.exists(p.resolve(f))) {
        fail("KYLIX_BUILD=" + p + " has no " + f + ": run `make` in the repository first");
      }
    }
    return p;
  }

  /** The java command that runs mainClass with this JVM's class path and the built library. */
  static List<String> javaCommand(String mainClass, String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(JVM_FLAGS);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("-Dkylix.library.path=" + buildDir());
    cmd.add(mainClass);
    cmd.addAll(Arrays.asList(args));
    return cmd;
  }

  static final class Result {
    String cmd;
    int code;
    String output;
    double seconds;
    final Map<Integer, List<String[]>> lines = new TreeMap<>();

    List<String> find(int rank, String kind) {
      List<String> l = new ArrayList<>();
      for (String[] kv : lines.getOrDefault(rank, List.of())) {
        if (kv[0].equals(kind)) {
          l.add(kv[1]);
        }
      }
      return l;
    }

    /** Exit 0, no FAIL line, and DONE fails=0 from every rank. */
    void expectClean(int ranks) {
      List<Integer> all = new ArrayList<>();
      for (int r = 0; r < ranks; r++) {
        all.add(r);
      }
      expectClean(all);
    }

    /** Exit 0, no FAIL line, and DONE fails=0 from each of ranks (the others may have died). */
    void expectClean(List<Integer> ranks) {
      List<String> problems = new ArrayList<>();
      if (code != 0) {
        problems.add("exit code " + code + ", want 0");
      }
      for (Map.Entry<Integer, List<String[]>> e : lines.entrySet()) {
        for (String[] kv : e.getValue()) {
          if (kv[0].equals("FAIL")) {
            problems.add("r" + e.getKey() + ": FAIL " + kv[1]);
          }
        }
      }
      for (int r : ranks) {
        if (find(r, "DONE").stream().noneMatch(s -> s.startsWith("fails=0"))) {
          problems.add("rank " + r + " did not print DONE fails=0");
        }
      }
      if (!problems.isEmpty()) {
        fail(String.join("\n", problems) + "\n" + dump());
      }
    }

    int count(String kind) {
      int n = 0;
      for (List<String[]> l : lines.values()) {
        for (String[] kv : l) {
          n += kv[0].equals(kind) ? 1 : 0;
        }
      }
      return n;
    }

    String dump() {
      String o = output;
      if (o.length() > 20000) {
        o = o.substring(0, 10000) + "\n... [" + (o.length() - 20000) + " bytes cut] ...\n"
            + o.substring(o.length() - 10000);
      }
      return "command: " + cmd + "\nexit code " + code + " in " + String.format("%.1f", seconds)
          + " s\n--- output ---\n" + o + "--- end ---";
    }
  }

  /** Runs a job of n ranks of mainClass under kylixrun. */
  static Result run(String name, int n, List<String> flags, String mainClass, String... args)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(buildDir().resolve("kylixrun").toString());
    cmd.addAll(List.of("-n", Integer.toString(n), "--tag-output", "--job-timeout",
        Integer.toString(JOB_TIMEOUT_S)));
    cmd.addAll(flags);
    cmd.add("--");
    cmd.addAll(javaCommand(mainClass, args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.directory(new File(System.getProperty("java.io.tmpdir")));
    pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
    return collect(name, String.join(" ", flags) + " -n " + n + " " + mainClass + " "
        + String.join(" ", args), pb.start());
  }

  /** Waits for p (bounded by the hard deadline) and parses its output. */
  static Result collect(String name, String cmd, Process p) throws InterruptedException {
    long t0 = System.nanoTime();
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    Thread reader = new Thread(() -> {
      try (InputStream in = p.getInputStream()) {
        in.transferTo(buf);
      } catch (IOException e) {
        // the process went away
      }
    });
    reader.start();
    Result r = new Result();
    r.cmd = cmd;
    if (!p.waitFor(HARD_DEADLINE_S, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
      r.code = -1;
    } else {
      r.code = p.exitValue();
    }
    reader.join(10_000);
    r.seconds = (System.nanoTime() - t0) / 1e9;
    synchronized (buf) {
      r.output = buf.toString(StandardCharsets.UTF_8);
    }
    for (String line : r.output.split("\n")) {
      Matcher m = LINE.matcher(line);
      if (m.find()) {
        r.lines.computeIfAbsent(Integer.parseInt(m.group(1)), k -> new ArrayList<>())
            .add(new String[] {m.group(2), m.group(3)});
      }
    }
    System.out.printf("[kylix-java-test] %-28s exit %d in %5.1f s, %d PASS lines (%s)%n", name,
        r.code, r.seconds, r.count("PASS"), cmd);
    if (r.code == -1) {
      fail(name + ": still running after " + HARD_DEADLINE_S + " s; stopped it\n" + r.dump());
    }
    return r;
  }
}
