"""Measuring: the run function behind ``python -m logbench run STUDY``. Designs (blocks, switchback), the runner and
its benches, noise controls and settle conditions, resume, the timer and contention probes, server versions. Uses
servers/, workloads/, counting/ and base/."""
