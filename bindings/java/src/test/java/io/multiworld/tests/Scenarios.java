package io.multiworld.tests;

import static io.multiworld.tests.Workers.get;

import io.multiworld.Buffers;
import io.multiworld.DataType;
import io.multiworld.ReduceOp;
import io.multiworld.World;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;

/**
 * Every collective, played by every member of a world (the test process and its workers run the
 * same code), each checking its own results. Works for any world size.
 */
final class Scenarios {
  private Scenarios() {}

  static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }

  static void checkEquals(long expected, long actual, String what) {
    if (expected != actual) throw new AssertionError(what + ": expected " + expected + ", got " + actual);
  }

  static void checkEquals(double expected, double actual, String what) {
    if (expected != actual) {  // -0.0 equals 0.0
      throw new AssertionError(what + ": expected " + expected + ", got " + actual);
    }
  }

  /** A signed test value of rank r at index i. */
  static long value(int r, int i) {
    return ((r * 7L + i * 3L) % 11) - 5;
  }

  static void collectives(World w) throws Exception {
    final int rank = w.rank();
    final int n = w.size();
    final int count = 5;

    // broadcast (direct, int64) from the last rank
    int root = n - 1;
    ByteBuffer bc = Buffers.allocate(count, DataType.INT64);
    LongBuffer bcl = bc.asLongBuffer();
    if (rank == root) for (int i = 0; i < count; ++i) bcl.put(i, 1000 + i);
    get(w.broadcast(bc, count, DataType.INT64, root));
    for (int i = 0; i < count; ++i) checkEquals(1000 + i, bcl.get(i), "broadcast[" + i + "]");

    // allreduce: every op on int32, and on float64
    for (ReduceOp op : ReduceOp.values()) {
      ByteBuffer s = Buffers.allocate(count, DataType.INT32);
      ByteBuffer d = Buffers.allocate(count, DataType.INT32);
      for (int i = 0; i < count; ++i) s.asIntBuffer().put(i, (int) value(rank, i));
      get(w.allreduce(s, d, count, DataType.INT32, op));
      for (int i = 0; i < count; ++i) {
        checkEquals(expected(op, n, i, true), d.asIntBuffer().get(i), "allreduce int32 " + op + "[" + i + "]");
      }
      ByteBuffer sd = Buffers.allocate(count, DataType.FLOAT64);
      DoubleBuffer sdd = sd.asDoubleBuffer();
      for (int i = 0; i < count; ++i) sdd.put(i, value(rank, i) * 0.5);
      get(w.allreduce(sdd, sdd, count, DataType.FLOAT64, op));  // in place, typed direct view
      for (int i = 0; i < count; ++i) {
        double want = op == ReduceOp.AVG ? sumValues(n, i) * 0.5 / n
            : op == ReduceOp.PROD ? prodValues(n, i) * Math.pow(0.5, n) : expected(op, n, i, false) * 0.5;
        checkEquals(want, sdd.get(i), "allreduce float64 in place " + op + "[" + i + "]");
      }
    }

    // allreduce on heap arrays (copied), float32 and int64
    float[] hf = new float[count];
    for (int i = 0; i < count; ++i) hf[i] = rank + i;
    float[] hfOut = new float[count];
    get(w.allreduce(hf, hfOut, ReduceOp.SUM));
    for (int i = 0; i < count; ++i) checkEquals(n * i + n * (n - 1) / 2.0, hfOut[i], "allreduce float[][" + i + "]");
    long[] hl = new long[] {rank + 1, 2};
    get(w.allreduce(hl, hl, ReduceOp.PROD));
    long fact = 1;
    for (int r = 1; r <= n; ++r) fact *= r;
    checkEquals(fact, hl[0], "allreduce long[] in place");
    checkEquals(1L << n, hl[1], "allreduce long[] in place [1]");

    // uint8 sum wraps modulo 256; float16 and bfloat16 sums of small integers are exact
    ByteBuffer u8 = Buffers.allocate(2, DataType.UINT8);
    u8.put(0, (byte) 200).put(1, (byte) rank);
    get(w.allreduce(u8, u8, 2, DataType.UINT8, ReduceOp.SUM));
    checkEquals((200L * n) % 256, u8.get(0) & 0xff, "allreduce uint8 wraps");
    ShortBuffer h16 = Buffers.allocate(1, DataType.FLOAT16).asShortBuffer();
    h16.put(0, halfOf(rank + 1));
    get(w.allreduce(h16, h16, 1, DataType.FLOAT16, ReduceOp.SUM));
    checkEquals(halfOf(n * (n + 1) / 2), h16.get(0), "allreduce float16");
    short[] bf = new short[] {(short) (Float.floatToIntBits(rank + 1) >>> 16)};
    ShortBuffer bfb = ShortBuffer.wrap(bf);  // a heap buffer: copied
    get(w.allreduce(bfb, bfb, 1, DataType.BFLOAT16, ReduceOp.MAX));
    checkEquals(n, Float.intBitsToFloat((bf[0] & 0xffff) << 16), "allreduce bfloat16 max");

    // reduce to rank 0 (recv may be null elsewhere)
    FloatBuffer rs = Buffers.allocate(count, DataType.FLOAT32).asFloatBuffer();
    for (int i = 0; i < count; ++i) rs.put(i, rank * 10 + i);
    FloatBuffer rd = rank == 0 ? Buffers.allocate(count, DataType.FLOAT32).asFloatBuffer() : null;
    get(w.reduce(rs, rd, count, DataType.FLOAT32, ReduceOp.MAX, 0));
    if (rank == 0) for (int i = 0; i < count; ++i) checkEquals((n - 1) * 10 + i, rd.get(i), "reduce max[" + i + "]");

    // allgather, separate buffers and in place
    IntBuffer ag = Buffers.allocate(count, DataType.INT32).asIntBuffer();
    for (int i = 0; i < count; ++i) ag.put(i, rank * 100 + i);
    IntBuffer agOut = Buffers.allocate((long) n * count, DataType.INT32).asIntBuffer();
    get(w.allgather(ag, agOut, count, DataType.INT32));
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < count; ++i) checkEquals(j * 100 + i, agOut.get(j * count + i), "allgather[" + j + "][" + i + "]");
    }
    IntBuffer agIn = Buffers.allocate((long) n * count, DataType.INT32).asIntBuffer();
    for (int i = 0; i < count; ++i) agIn.put(rank * count + i, rank * 100 + i);
    get(w.allgather(agIn, agIn, count, DataType.INT32));
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < count; ++i) checkEquals(j * 100 + i, agIn.get(j * count + i), "allgather in place[" + j + "][" + i + "]");
    }

    // gather to the middle rank, heap buffers
    int groot = n / 2;
    int[] gs = new int[count];
    for (int i = 0; i < count; ++i) gs[i] = rank * 1000 + i;
    int[] gd = new int[n * count];
    get(w.gather(IntBuffer.wrap(gs), rank == groot ? IntBuffer.wrap(gd) : null, count, DataType.INT32, groot));
    if (rank == groot) {
      for (int j = 0; j < n; ++j) {
        for (int i = 0; i < count; ++i) checkEquals(j * 1000 + i, gd[j * count + i], "gather[" + j + "][" + i + "]");
      }
    }

    // scatter from rank 0, into a direct buffer at a non-zero position
    DoubleBuffer ss = rank == 0 ? Buffers.allocate((long) n * count, DataType.FLOAT64).asDoubleBuffer() : null;
    if (rank == 0) for (int k = 0; k < n * count; ++k) ss.put(k, k * 1.5);
    DoubleBuffer sr = Buffers.allocate(count + 2, DataType.FLOAT64).asDoubleBuffer();
    sr.position(2);
    get(w.scatter(ss, sr, count, DataType.FLOAT64, 0));
    check(sr.position() == 2, "scatter left the position alone");
    check(sr.get(0) == 0 && sr.get(1) == 0, "scatter did not write before the position");
    for (int i = 0; i < count; ++i) checkEquals((rank * count + i) * 1.5, sr.get(2 + i), "scatter[" + i + "]");

    // reduce_scatter: block `rank` of the sum
    LongBuffer rss = Buffers.allocate((long) n * count, DataType.INT64).asLongBuffer();
    for (int k = 0; k < n * count; ++k) rss.put(k, value(rank, k));
    LongBuffer rsd = Buffers.allocate(count, DataType.INT64).asLongBuffer();
    get(w.reduceScatter(rss, rsd, count, DataType.INT64, ReduceOp.SUM));
    for (int i = 0; i < count; ++i) checkEquals(sumValues(n, rank * count + i), rsd.get(i), "reduce_scatter[" + i + "]");

    // alltoall: block j goes to rank j
    IntBuffer as = Buffers.allocate((long) n * count, DataType.INT32).asIntBuffer();
    for (int j = 0; j < n; ++j) for (int i = 0; i < count; ++i) as.put(j * count + i, rank * 10000 + j * 100 + i);
    IntBuffer ad = Buffers.allocate((long) n * count, DataType.INT32).asIntBuffer();
    get(w.alltoall(as, ad, count, DataType.INT32));
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < count; ++i) checkEquals(j * 10000 + rank * 100 + i, ad.get(j * count + i), "alltoall[" + j + "][" + i + "]");
    }

    // broadcast of a heap array, a zero-count allreduce, and a barrier to finish
    int[] hb = rank == 0 ? new int[] {4, 5, 6} : new int[3];
    get(w.broadcast(hb, 0));
    check(Arrays.equals(hb, new int[] {4, 5, 6}), "broadcast int[] " + Arrays.toString(hb));
    get(w.allreduce((Buffer) null, null, 0, DataType.FLOAT32, ReduceOp.SUM));
    get(w.barrier());
  }

  static long sumValues(int n, int i) {
    long s = 0;
    for (int r = 0; r < n; ++r) s += value(r, i);
    return s;
  }

  static long prodValues(int n, int i) {
    long p = 1;
    for (int r = 0; r < n; ++r) p *= value(r, i);
    return p;
  }

  /** The reduction of value(r, i) over all ranks (AVG truncates toward zero when integral). */
  static long expected(ReduceOp op, int n, int i, boolean integral) {
    switch (op) {
      case SUM:
        return sumValues(n, i);
      case PROD:
        return prodValues(n, i);
      case MIN: {
        long m = Long.MAX_VALUE;
        for (int r = 0; r < n; ++r) m = Math.min(m, value(r, i));
        return m;
      }
      case MAX: {
        long m = Long.MIN_VALUE;
        for (int r = 0; r < n; ++r) m = Math.max(m, value(r, i));
        return m;
      }
      default:
        if (!integral) throw new IllegalArgumentException();
        return sumValues(n, i) / n;  // Java's / truncates toward zero, like C's
    }
  }

  /** IEEE binary16 of a small non-negative integer (exact up to 2048). */
  static short halfOf(int v) {
    if (v == 0) return 0;
    int e = 31 - Integer.numberOfLeadingZeros(v);
    int mantissa = (v << (10 - e)) & 0x3ff;
    return (short) (((e + 15) << 10) | mantissa);
  }
}
