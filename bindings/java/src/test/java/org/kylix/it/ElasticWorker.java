package org.kylix.it;

import org.kylix.Comm;
import org.kylix.Kylix;
import org.kylix.Op;
import org.kylix.Plan;
import org.kylix.StateException;

/**
 * Elastic membership through the binding: MEMBERS ranks started by {@code kylixrun --elastic
 * --job-file F} wait in {@code resize(MEMBERS + JOINERS)} for the JOINERS processes that a second
 * {@code kylixrun --join F} starts (their {@code Kylix.init()} returns once admitted). Every rank
 * of the new comm checks members(), its rank and size, a bcast of the members' state to the
 * joiners, and an allreduce and a sparse reduce on the new comm. Args: MEMBERS JOINERS.
 */
public final class ElasticWorker {
  private ElasticWorker() {}

  public static void main(String[] args) throws Exception {
    int nMembers = Integer.parseInt(args[0]);
    int nJoin = Integer.parseInt(args[1]);
    boolean joining = System.getenv("KYLIX_JOIN") != null;
    Comm comm;
    Check chk;
    if (joining) {
      // The options string's join and secret (kylixrun --join set the same in the
      // environment): init returns once a resize admitted this process.
      comm = Kylix.init("join=" + System.getenv("KYLIX_JOIN") + ";secret="
          + System.getenv("KYLIX_SECRET"));
      chk = new Check(comm.rank(), 100);
      chk.expect(comm.rank() >= nMembers && comm.rank() < nMembers + nJoin,
          "joiner is rank " + comm.rank());
    } else {
      Comm first = Kylix.init();
      chk = new Check(first.rank(), 100);
      int[] own = new int[nMembers];
      for (int i = 0; i < nMembers; i++) {
        own[i] = i;
      }
      chk.equal(own, first.members(), "members() of init");
      String addr = first.joinAddress();
      chk.expect(addr.equals(System.getenv("KYLIX_RENDEZVOUS")),
          "joinAddress() " + addr + " is kylixrun's");
      comm = first.resize(nMembers + nJoin);
      chk.expect(comm.rank() == first.rank(), "a survivor keeps its rank " + first.rank());
      chk.expectThrow(StateException.class, "the resized comm is spent", first::barrier);
      first.close();
    }
    int size = nMembers + nJoin;
    chk.expect(comm.size() == size, "size " + comm.size() + " after the resize");
    int[] want = new int[size];
    for (int i = 0; i < size; i++) {
      want[i] = i < nMembers ? i : -1;
    }
    chk.equal(want, comm.members(), "members() after the resize");

    double[] state = new double[5];
    double[] expect = new double[5];
    for (int i = 0; i < 5; i++) {
      expect[i] = 1.5 * i;
      state[i] = comm.rank() == 0 ? expect[i] : 0;
    }
    comm.bcast(state, 0);
    chk.equal(expect, state, "the joiners got the state");
    long[] sum = {comm.rank() + 1};
    comm.allreduce(sum, Op.SUM);
    chk.expect(sum[0] == (long) size * (size + 1) / 2, "allreduce on the new comm: " + sum[0]);
    long[] in = new long[size];
    double[] wantIn = new double[size];
    for (int i = 0; i < size; i++) {
      in[i] = i;
      wantIn[i] = i;
    }
    try (Plan plan = comm.config(new long[] {comm.rank()}, in)) {
      double[] got = new double[size];
      plan.reduce(new double[] {comm.rank()}, got, Op.SUM);
      chk.equal(wantIn, got, "sparse reduce on the new comm");
    }
    comm.close();
    chk.done();
  }
}
