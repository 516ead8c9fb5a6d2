package org.kylix.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * The README's "Elastic jobs" program, compiled as printed, run as its commands say (2 ranks
 * under kylixrun --elastic --job-file, 2 more from kylixrun --join) with this build's class
 * path instead of the packaged jar (which does not exist yet while Maven runs the tests).
 */
class ReadmeElasticTest {
  @Test
  void readmeElasticExample() throws Exception {
    String readme = Files.readString(Path.of("README.md"));
    Matcher sec = Pattern.compile("(?ms)^## Elastic jobs\\n(.*?)^## ").matcher(readme);
    assertTrue(sec.find(), "README.md has no Elastic jobs section");
    Matcher code = Pattern.compile("(?ms)^```java\\n(.*?)^```").matcher(sec.group(1));
    assertTrue(code.find(), "no java block");
    assumeTrue(ToolProvider.getSystemJavaCompiler() != null, "no javac in this JDK");
    Path dir = Files.createTempDirectory("kylix-readme-elastic");
    Files.writeString(dir.resolve("Elastic.java"), code.group(1));
    String cp = System.getProperty("java.class.path");
    assertEquals(0, ToolProvider.getSystemJavaCompiler().run(null, null, null, "-cp", cp, "-d",
        dir.toString(), dir.resolve("Elastic.java").toString()), "javac Elastic.java");

    Path jf = dir.resolve("job.json");
    CompletableFuture<String> job = CompletableFuture.supplyAsync(() -> run(dir,
        List.of("-n", "2", "--elastic", "--job-file", jf.toString(), "--tag-output")));
    Thread.sleep(4000); // as the README's sleep 4
    String joined = run(dir, List.of("--join", jf.toString(), "-n", "2", "--tag-output"));
    String out = job.get();
    assertTrue(Pattern.compile("(?m)^\\[0\\] step 60: 4 ranks, sum \\d+$").matcher(out).find(),
        "rank 0 did not end on 4 ranks:\n" + out + "\n--- joiners:\n" + joined);
  }

  /** Runs build/kylixrun flags -- java -cp <classes>:dir Elastic in dir; exit 0 or fails. */
  private static String run(Path dir, List<String> flags) {
    try {
      List<String> cmd = new ArrayList<>();
      cmd.add(KylixRun.buildDir().resolve("kylixrun").toString());
      cmd.addAll(flags);
      cmd.addAll(List.of("--job-timeout", "120", "--"));
      List<String> java = KylixRun.javaCommand("Elastic");
      int i = java.indexOf("-cp");
      java.set(i + 1, java.get(i + 1) + File.pathSeparator + dir);
      cmd.addAll(java);
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).directory(dir.toFile());
      pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
      KylixRun.Result r = KylixRun.collect("README Elastic " + flags.get(0), String.join(" ", flags), pb.start());
      assertEquals(0, r.code, r.dump());
      return r.output;
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }
}
