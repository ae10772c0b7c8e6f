package io.multiworld.tests;

import io.multiworld.Backend;
import io.multiworld.MultiWorld;
import org.junit.internal.TextListener;
import org.junit.runner.JUnitCore;
import org.junit.runner.Result;
import org.junit.runner.notification.Failure;
import org.junit.runner.notification.RunListener;

/**
 * The ctest entry point: {@code Run CLASS...} runs JUnit test classes on the backend named by
 * {@code -Dmultiworld.test.backend} and exits 0 when they passed, 1 when one failed, and 77
 * (ctest's SKIP_RETURN_CODE) when there was nothing to run here: the backend is not available, or
 * every test was skipped by an assumption (no GPU). Each skip prints its reason.
 */
public final class Run {
  static final int SKIPPED = 77;

  private Run() {}

  public static void main(String[] args) throws ClassNotFoundException {
    Backend backend = Workers.backend();
    if (!MultiWorld.backendAvailable(backend)) {
      System.out.println("SKIPPED: the " + backend + " backend is not available here (mw_backend_available("
          + "MW_BACKEND_" + backend + ") == 0)");
      System.exit(SKIPPED);
    }
    Class<?>[] classes = new Class<?>[args.length];
    for (int i = 0; i < args.length; ++i) classes[i] = Class.forName(args[i]);
    JUnitCore junit = new JUnitCore();
    junit.addListener(new TextListener(System.out));
    junit.addListener(new RunListener() {
      @Override
      public void testAssumptionFailure(Failure failure) {
        System.out.println("SKIPPED: " + failure.getDescription().getDisplayName() + ": " + failure.getMessage());
      }
    });
    System.out.println("backend: " + backend);
    Result result = junit.run(classes);
    if (!result.wasSuccessful()) System.exit(1);
    boolean allSkipped = result.getRunCount() > 0 && result.getAssumptionFailureCount() == result.getRunCount();
    System.exit(allSkipped ? SKIPPED : 0);
  }
}
