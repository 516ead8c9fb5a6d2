package org.kylix;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Comm.span (kylix_mark) on one-rank comms with the timeline on and off. */
class SpanTest {
  private static final Pattern USER =
      Pattern.compile("\\{\"name\":\"([^\"]+)\",\"ph\":\"(X|i)\",\"pid\":0,\"tid\":2,\"ts\":([0-9.]+)(?:,\"dur\":([0-9.]+))?");

  /** name, ph, ts, dur of the user-lane events of a rank file. */
  private static List<String[]> userEvents(Path file) throws IOException {
    List<String[]> out = new ArrayList<>();
    for (String line : Files.readAllLines(file)) {
      Matcher m = USER.matcher(line);
      if (m.find()) {
        out.add(new String[] {m.group(1), m.group(2), m.group(3), m.group(4)});
      }
    }
    return out;
  }

  @Test
  void spansLandNestedInTheFile(@TempDir Path dir) throws IOException {
    Path tl = dir.resolve("tl");
    try (Comm c = Kylix.init("rank=0;size=1;timeline=" + tl)) {
      try (var epoch = c.span("epoch")) {
        try (var s = c.span("forward")) {
          c.barrier();
        }
        assertThrows(IllegalStateException.class, () -> {
          try (var s = c.span("backward")) {
            throw new IllegalStateException("the span still ends");
          }
        });
      }
      c.mark("checkpoint");
    }
    List<String[]> evs = userEvents(tl.resolve("rank-0.json"));
    assertEquals(4, evs.size(), () -> "events: " + evs.size());
    String[] epoch = null;
    for (String[] e : evs) {
      if (e[0].equals("epoch")) {
        epoch = e;
      }
    }
    assertTrue(epoch != null && epoch[1].equals("X"));
    double t0 = Double.parseDouble(epoch[2]), t1 = t0 + Double.parseDouble(epoch[3]);
    for (String[] e : evs) {
      if (e[0].equals("forward") || e[0].equals("backward")) {
        double s = Double.parseDouble(e[2]), end = s + Double.parseDouble(e[3]);
        assertTrue(t0 <= s && end <= t1 + 0.002, e[0] + " outside epoch");
      }
      if (e[0].equals("checkpoint")) {
        assertEquals("i", e[1]);
      }
    }
  }

  @Test
  void misuseIsReported(@TempDir Path dir) {
    try (Comm c = Kylix.init("rank=0;size=1;timeline=" + dir)) {
      assertThrows(StateException.class, () -> c.mark("x", KylixNative.KYLIX_MARK_END));
      Span outer = c.span("outer");
      Span inner = c.span("inner");
      assertThrows(StateException.class, outer::close);
      inner.close();
      Span again = c.span("outer2");
      again.close();
      again.close(); // once
      assertThrows(ArgumentException.class, () -> c.span(""));
      assertThrows(ArgumentException.class, () -> c.span(null));
    }
  }

  @Test
  void offRecordsNothing(@TempDir Path dir) throws IOException {
    try (Comm c = Kylix.init("rank=0;size=1")) {
      try (var s = c.span("forward")) {
        c.barrier();
      }
      c.mark("never begun", KylixNative.KYLIX_MARK_END); // off: not checked
    }
    try (var files = Files.list(dir)) {
      assertFalse(files.findAny().isPresent());
    }
  }
}
