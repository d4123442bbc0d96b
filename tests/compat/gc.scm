;; SPDX-License-Identifier: MIT
;; Guile's threads and its conservative collector (Boehm's libgc) in the
;; compatibility suite: 4 threads build lists, keep some only from their
;; stacks and force collections; the collector stops each thread with a
;; signal whose handler must run on the thread's own stack for its scan.
;; Prints each thread's count, the same every run.
(use-modules (ice-9 threads))
(define (build n) (let loop ((i 0) (acc '())) (if (= i n) acc (loop (+ i 1) (cons (make-string 16 #\x) acc)))))
(define (work k)
  (let loop ((r 0) (keep '()) (sum 0))
    (if (= r 200)
        (+ sum (length keep))
        (let ((l (build 2000)))
          (when (= 0 (modulo r 50)) (gc))
          (loop (+ r 1) (if (= 0 (modulo r 10)) (cons l keep) keep) (+ sum (length l)))))))
(define threads (map (lambda (k) (call-with-new-thread (lambda () (work k)))) '(1 2 3 4)))
(display (map join-thread threads)) (newline)
