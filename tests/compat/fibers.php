<?php
// SPDX-License-Identifier: MIT
// PHP's Fibers in the compatibility suite (their stacks are PHP's own
// mappings, switched by its own assembly):
//   php fibers.php fibers    100 fibers that suspend and resume, nested
//                            fibers, an exception thrown out of a fiber
//   php fibers.php overflow  recursion through array_map (each level
//                            re-enters the VM on the C stack) inside a
//                            fiber, with no end: PHP 8.2 has no check of
//                            its own, so the fiber's guard page ends it
//                            by SIGSEGV
function nested(int $depth): int
{
    if ($depth === 0)
        return Fiber::suspend(1) + 1;
    $f = new Fiber(fn () => nested($depth - 1));
    $v = $f->start();
    while (!$f->isTerminated())
        $v = $f->resume(Fiber::suspend($v + 1));
    return $f->getReturn() + 1;
}

function deep(int $n): array
{
    return array_map('deep', [$n + 1]);
}

function walk(int $n): int
{
    return $n === 0 ? 0 : array_sum(array_map('walk', [$n - 1])) + 1;
}

if (($argv[1] ?? '') === 'fibers') {
    $fibers = [];
    for ($i = 0; $i < 100; $i++) {
        $fibers[$i] = new Fiber(function (int $id): int {
            $sum = 0;
            for ($k = 0; $k < 50; $k++)
                $sum += Fiber::suspend($id * $k);
            return $sum;
        });
    }
    $total = 0;
    foreach ($fibers as $i => $f)
        $total += $f->start($i);
    for ($round = 1; ; $round++) {
        $live = 0;
        foreach ($fibers as $f) {
            if ($f->isTerminated())
                continue;
            $total += $f->resume($round) ?? 0;
            $live++;
        }
        if (!$live)
            break;
    }
    foreach ($fibers as $f)
        $total += $f->getReturn();
    echo "rounds $round total $total\n";
    $outer = new Fiber(fn () => nested(20));
    $v = $outer->start();
    while (!$outer->isTerminated())
        $v = $outer->resume($v);
    echo "nested ", $outer->getReturn(), "\n";
    $f = new Fiber(function () { Fiber::suspend(walk(2000)); throw new RuntimeException("from a fiber"); });
    echo "walk ", $f->start(), "\n";
    try {
        $f->resume();
    } catch (RuntimeException $e) {
        echo "caught: ", $e->getMessage(), "\n";
    }
    exit(3);
}
if (($argv[1] ?? '') === 'overflow') {
    $f = new Fiber(function () { echo "deep\n"; deep(0); });
    echo "start\n";
    $f->start();
    echo "not reached\n";
}
