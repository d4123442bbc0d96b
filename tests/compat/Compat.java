// SPDX-License-Identifier: MIT
// The JVM in the compatibility suite.  "soe": eight threads (four with a
// stack size of their own) and the main thread each recurse until
// StackOverflowError, catch it and go on working; "npe": a
// NullPointerException caught (its helpful message printed) and one uncaught
// in a thread (its stack trace on stderr).  The output is the same on every
// run: counts, never depths.  "depth" (by hand, with -Xint for whole
// numbers that repeat): the depth at StackOverflowError of the main thread
// and of a thread that asks for 512 KiB, to compare plain, run and trace.
// Exits 3.
import java.util.ArrayList;
import java.util.List;

public class Compat {
    static int depth;

    static int recurse(int n) {
        depth = n;
        return recurse(n + 1) + 1;
    }

    static String soe(String who) {
        try {
            recurse(0);
            return who + ": no StackOverflowError";
        } catch (StackOverflowError e) {
            long sum = 0;
            for (int i = 0; i < 100000; i++)
                sum += i;
            return who + ": caught StackOverflowError, then summed " + sum;
        }
    }

    static void soeThreads() throws InterruptedException {
        final String[] results = new String[8];
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            final int k = i;
            Runnable r = () -> results[k] = soe("thread " + k);
            Thread t = k % 2 == 0 ? new Thread(r, "soe-" + k) : new Thread(null, r, "soe-" + k, 256 * 1024);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads)
            t.join();
        for (String s : results)
            System.out.println(s);
        System.out.println(soe("main"));
    }

    static void npe() throws InterruptedException {
        String s = args0 == null ? null : "x";
        try {
            System.out.println(s.length());
        } catch (NullPointerException e) {
            System.out.println("caught: " + e.getMessage());
        }
        Thread t = new Thread(() -> {
            Object o = null;
            System.out.println(o.hashCode());
        }, "npe-thread");
        t.start();
        t.join();
    }

    static String[] args0;

    static void depths() throws InterruptedException {
        final int[] d = new int[1];
        soe("main");
        System.out.println("main: depth " + depth);
        Thread t = new Thread(null, () -> { soe("512K"); d[0] = depth; }, "depth", 512 * 1024);
        t.start();
        t.join();
        System.out.println("512K thread: depth " + d[0]);
    }

    public static void main(String[] args) throws InterruptedException {
        for (String a : args) {
            if (a.equals("soe"))
                soeThreads();
            else if (a.equals("npe"))
                npe();
            else if (a.equals("depth"))
                depths();
        }
        System.exit(3);
    }
}
