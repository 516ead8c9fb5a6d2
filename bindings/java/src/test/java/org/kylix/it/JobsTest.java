package org.kylix.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Real multi-process jobs under kylixrun over loopback TCP. JVM start-up times the number of
 * ranks is the cost on a small machine, so there are few jobs and each checks many things.
 */
class JobsTest {
  @Test
  void sparseAndDenseOn4RanksWith2x2Butterfly() throws Exception {
    KylixRun.run("sparse+dense -n 4 2x2", 4, List.of("--degrees", "2x2"),
        SparseWorker.class.getName(), "1").expectClean(4);
  }

  @Test
  void sparseAndDenseOn3RanksAutoDegrees() throws Exception {
    KylixRun.run("sparse+dense -n 3 auto", 3, List.of(), SparseWorker.class.getName(), "7")
        .expectClean(3);
  }

  @Test
  void errorsNonBlockingAndADeadPeerOn3Ranks() throws Exception {
    KylixRun.run("errors+nonblocking -n 3", 3, List.of("--timeout", "20"),
        ErrorWorker.class.getName()).expectClean(3);
  }

  @Test
  void logisticRegressionLossDecreases() throws Exception {
    KylixRun.Result r = KylixRun.run("LogReg example -n 2", 2, List.of(),
        "org.kylix.examples.LogReg", "--epochs", "4");
    if (r.code != 0) {
      r.expectClean(0);
    }
    Pattern p = Pattern.compile("^\\[0\\] epoch (\\d+) .*loss ([0-9.]+)", Pattern.MULTILINE);
    Matcher m = p.matcher(r.output);
    List<Double> loss = new ArrayList<>();
    while (m.find()) {
      loss.add(Double.parseDouble(m.group(2)));
    }
    assertTrue(loss.size() == 5, "want the loss before training and after 4 epochs\n" + r.dump());
    for (int i = 1; i < loss.size(); i++) {
      assertTrue(loss.get(i) < loss.get(i - 1), "loss went up: " + loss + "\n" + r.dump());
    }
    assertTrue(loss.get(4) < 0.9 * loss.get(0), "loss fell by less than 10%: " + loss);
  }
}
