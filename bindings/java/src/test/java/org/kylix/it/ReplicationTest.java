package org.kylix.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Replication through the JNA binding (include/kylix.h, replication; "Kylix: A Sparse Allreduce
 * for Commodity Clusters", §V): 4 ranks as 2 nodes x 2 replicas under {@code kylixrun
 * --replication 2} lose one replica of each node to SIGKILL in the middle of a call (rank 3 in a
 * reduce, rank 0 in a configReduce) and go on; the survivors check every result against a brute
 * force over the node data (ReplicatedWorker). kylixrun exits 0 even when a replica exits
 * non-zero, so every survivor's DONE line is what proves success.
 */
class ReplicationTest {
  static final int ITERS = 4;

  @Test
  void killedReplicasAreRoutedAround() throws Exception {
    Path endDir = Files.createTempDirectory("kylix-replicated-");
    try {
      KylixRun.Result r = KylixRun.run("replicated -n 4 s=2, 2 killed", 4,
          List.of("--replication", "2"), ReplicatedWorker.class.getName(), endDir.toString(),
          Integer.toString(ITERS), "3:reduce:1", "0:cfgred:2");
      r.expectClean(List.of(1, 2));
      for (int rank : new int[] {1, 2}) {
        for (int it = 0; it < ITERS; it++) {
          for (String call : new String[] {"reduce", "allreduce", "config_reduce"}) {
            String want = call + " of iteration " + it;
            assertTrue(r.find(rank, "PASS").contains(want),
                "rank " + rank + ": no PASS " + want + "\n" + r.dump());
          }
        }
      }
      for (int victim : new int[] {0, 3}) {
        assertTrue(r.find(victim, "INFO").stream().anyMatch(t -> t.startsWith("victim: dies")),
            "rank " + victim + " never armed its SIGKILL\n" + r.dump());
        assertTrue(r.find(victim, "DONE").isEmpty(),
            "rank " + victim + " was meant to die but finished\n" + r.dump());
        assertTrue(r.output.contains("kylixrun: rank " + victim + " ")
            && r.output.contains("the job goes on"),
            "kylixrun did not report rank " + victim + " dead and go on\n" + r.dump());
      }
    } finally {
      try (Stream<Path> files = Files.list(endDir)) {
        for (Path f : (Iterable<Path>) files::iterator) {
          Files.delete(f);
        }
      }
      Files.delete(endDir);
    }
  }
}
