// SPDX-License-Identifier: MIT

// Go with cgo in the compatibility suite: goroutines on Go's own stacks,
// C threads started through cgo, a callback-free C call on every goroutine;
// then os.Exit(4), which ends the process with a raw exit_group: the table
// must be written all the same.
package main

/*
#include <pthread.h>
#include <stdint.h>

static void *c_worker(void *arg)
{
	uintptr_t n = (uintptr_t)arg, sum = 0;
	for (uintptr_t i = 0; i <= n; i++)
		sum += i;
	return (void *)sum;
}

static long c_threads(int n)
{
	pthread_t t[8];
	long total = 0;
	for (int i = 0; i < n && i < 8; i++)
		pthread_create(&t[i], NULL, c_worker, (void *)(uintptr_t)(1000 * (i + 1)));
	for (int i = 0; i < n && i < 8; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)(uintptr_t)r;
	}
	return total;
}

static long c_square(long x) { return x * x; }
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
)

func main() {
	var wg sync.WaitGroup
	results := make([]int64, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = int64(C.c_square(C.long(i + 1)))
		}(i)
	}
	wg.Wait()
	fmt.Println("squares:", results)
	fmt.Println("C threads:", int64(C.c_threads(4)))
	fmt.Fprintln(os.Stderr, "cgo: done")
	os.Exit(4)
}
