// SPDX-License-Identifier: MIT
// The JVM's own suspensions in the compatibility suite: four threads
// allocate while the main thread asks for a collection a hundred times
// (each a safepoint that stops them all), and the threads' stacks are
// walked (Thread.getAllStackTraces) at safepoints too.
import java.util.ArrayList;
import java.util.List;

public class Gc {
    static long churn(int id) {
        long sum = 0;
        List<int[]> kept = new ArrayList<>();
        for (int round = 0; round < 20000; round++) {
            int[] a = new int[64 + (round % 64)];
            a[0] = id;
            sum += a.length + a[0];
            if (round % 100 == 0)
                kept.add(a);
        }
        return sum + kept.size();
    }

    public static void main(String[] args) throws Exception {
        long[] results = new long[4];
        Thread[] threads = new Thread[results.length];
        for (int i = 0; i < threads.length; i++) {
            final int id = i;
            threads[i] = new Thread(() -> {
                long s = 0;
                for (int k = 0; k < 20; k++)
                    s += churn(id);
                results[id] = s;
            }, "churn-" + i);
            threads[i].start();
        }
        int stacks = 0;
        for (int i = 0; i < 100; i++) {
            System.gc();
            if (i % 10 == 0)
                stacks += Thread.getAllStackTraces().isEmpty() ? 0 : 1;
        }
        for (Thread t : threads)
            t.join();
        for (int i = 0; i < results.length; i++)
            System.out.println("churn-" + i + ": " + results[i]);
        System.out.println("stack walks: " + stacks);
        System.exit(3);
    }
}
