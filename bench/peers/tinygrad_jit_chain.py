#!/usr/bin/env python3
"""Peer for bench_jit_overhead: tinygrad TinyJit replaying a chain of N tiny kernels on its CPU device.
Prints the median microseconds per kernel (one number) on stdout."""
import os, statistics, sys, time

os.environ.setdefault("DEV", "CPU")
from tinygrad import Tensor, TinyJit  # noqa: E402

n, reps = int(sys.argv[1]), int(sys.argv[2])

@TinyJit
def chain(x: Tensor) -> Tensor:
  for _ in range(n): x = (x * 1.0001 + 1.0).contiguous()
  return x.realize()

x = Tensor.rand(16).realize()
for _ in range(3): chain(x)
runs = []
for _ in range(5):
  t0 = time.perf_counter()
  for _ in range(reps): chain(x)
  chain(x).tolist()
  runs.append((time.perf_counter() - t0) * 1e6 / ((reps + 1) * n))
print(f"{statistics.median(runs):.3f}")
