package org.kylix;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.Optional;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * Tells {@code make test} which test runs: with TESTSUM_PROGRESS set, appends "start NAME" as each
 * test starts and "done OUTCOME SECONDS NAME" as it ends, the protocol of
 * tests/testsum/progress.go (Maven's own output reaches make test only in blocks). Registered for
 * every test class by src/test/resources/META-INF/services and junit-platform.properties; without
 * TESTSUM_PROGRESS it does nothing.
 */
public final class ProgressExtension implements BeforeEachCallback, TestWatcher {
  private static final String FILE = System.getenv("TESTSUM_PROGRESS");
  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(ProgressExtension.class);

  private static String name(ExtensionContext c) {
    return c.getRequiredTestClass().getSimpleName() + "." + c.getRequiredTestMethod().getName()
        + (c.getDisplayName().startsWith("[") ? c.getDisplayName() : "");
  }

  private static synchronized void emit(String kind, String text) {
    if (FILE == null || FILE.isEmpty()) {
      return;
    }
    String line = String.format(Locale.ROOT, "%s %.3f %s%n", kind, System.currentTimeMillis() / 1e3, text);
    try {
      Files.writeString(Path.of(FILE), line, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    } catch (IOException e) {
      // Progress lines are a courtesy: a test never fails for them.
    }
  }

  @Override
  public void beforeEach(ExtensionContext c) {
    c.getStore(NS).put("start", System.nanoTime());
    emit("start", name(c));
  }

  private static void done(ExtensionContext c, String outcome) {
    Long t0 = c.getStore(NS).get("start", Long.class);
    double secs = t0 == null ? 0 : (System.nanoTime() - t0) / 1e9;
    emit("done", String.format(Locale.ROOT, "%s %.1f %s", outcome, secs, name(c)));
  }

  @Override
  public void testSuccessful(ExtensionContext c) {
    done(c, "passed");
  }

  @Override
  public void testFailed(ExtensionContext c, Throwable cause) {
    done(c, "failed");
  }

  @Override
  public void testAborted(ExtensionContext c, Throwable cause) {
    done(c, "skipped");
  }

  @Override
  public void testDisabled(ExtensionContext c, Optional<String> reason) {
    done(c, "skipped");
  }
}
