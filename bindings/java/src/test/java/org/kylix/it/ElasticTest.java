package org.kylix.it;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A resize with real joiners: a job under {@code kylixrun --elastic --job-file F} and a second
 * {@code kylixrun --join F} started while it runs, as from another shell (ElasticWorker).
 */
class ElasticTest {
  @Test
  void resizeAdmitsJoinersFromKylixrunJoin() throws Exception {
    assumeTrue(hasResize(), "the library has no kylix_resize (elastic membership not built in)");
    int members = 2;
    int joiners = 1;
    Path dir = Files.createTempDirectory("kylix-elastic");
    Path jf = dir.resolve("job.json");
    String worker = ElasticWorker.class.getName();
    String[] args = {Integer.toString(members), Integer.toString(joiners)};
    CompletableFuture<KylixRun.Result> job = CompletableFuture.supplyAsync(() -> {
      try {
        return KylixRun.run("elastic job -n 2", members,
            List.of("--elastic", "--job-file", jf.toString(), "--timeout", "60"), worker, args);
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    });
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!Files.exists(jf) && System.nanoTime() < deadline && !job.isDone()) {
      Thread.sleep(50);
    }
    assertTrue(Files.exists(jf), "no job file " + jf);
    KylixRun.Result jr = KylixRun.run("kylixrun --join -n 1", joiners,
        List.of("--join", jf.toString()), worker, args);
    KylixRun.Result r = job.get();
    jr.expectClean(List.of(2));
    r.expectClean(members);
    assertFalse(Files.exists(jf), "the job file outlived the job");
    Files.deleteIfExists(dir);
  }

  /** Asked of the built library directly: KylixNative cannot even load without the symbol. */
  private static boolean hasResize() {
    try {
      com.sun.jna.NativeLibrary.getInstance(KylixRun.buildDir().resolve("libkylix.so").toString())
          .getFunction("kylix_resize");
      return true;
    } catch (UnsatisfiedLinkError e) {
      return false;
    }
  }
}
