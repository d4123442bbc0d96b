;; SPDX-License-Identifier: MIT
;; Guile 3.0 in the compatibility suite: the Boehm collector stops and
;; scans the threads (with its own signals) while four of them allocate
;; lists and vectors, forty short ones start and end, and the main thread
;; collects too.
(use-modules (ice-9 threads))
(define (churn id rounds)
  (let loop ((round 0) (kept '()) (sum 0))
    (if (= round rounds)
        (+ sum (length kept))
        (let* ((v (make-vector 200 id))
               (l (map (lambda (i) (* i id)) (iota 200))))
          (loop (+ round 1)
                (if (= 0 (modulo round 10)) (cons v kept) kept)
                (+ sum (apply + l) (vector-ref v 0)))))))
(define threads (map (lambda (id) (call-with-new-thread (lambda () (churn id 300)))) (iota 4 1)))
(define short
  (let loop ((i 0) (sum 0))
    (if (= i 40)
        sum
        (begin (gc) (loop (+ i 1) (+ sum (join-thread (call-with-new-thread (lambda () (churn i 20))))))))))
(define results (map join-thread threads))
(display (list 'results results 'short short)) (newline)
(display (list 'par-map (apply + (par-map (lambda (n) (apply + (iota n))) (iota 100 1000))))) (newline)
(exit 3)
